package scenarios

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/faultline/faultline/internal/didyoumean"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/reference/classify"
)

// ErrInvalid is matched (errors.Is) by every *LoadError: the file, or a
// file it includes, is not a valid scenario. A command maps it to "invalid
// input".
var ErrInvalid = errors.New("invalid scenario")

// Diagnostic is one problem at a position in a file.
type Diagnostic struct {
	// File is the file's path as the loader was given it (or as an include
	// resolved it): relative paths stay relative.
	File string
	// Line and Col are 1-based; 0 when the problem is the file as a whole
	// (it cannot be read).
	Line, Col int
	// Message says what is wrong and what was expected, e.g. `unknown key
	// "retires"; did you mean "retry"?`. Problems with a value start with
	// the value's path, e.g. "workers.count: expected a whole number, got
	// \"ten\"".
	Message string
}

// String returns "file:line:col: message" ("file: message" without a
// position).
func (d Diagnostic) String() string {
	if d.Line <= 0 {
		if d.File == "" {
			return d.Message
		}
		return d.File + ": " + d.Message
	}
	return fmt.Sprintf("%s:%d:%d: %s", d.File, d.Line, d.Col, d.Message)
}

// LoadError lists every problem of a load, in file then position order:
// the loader does not stop at the first.
type LoadError struct {
	Diagnostics []Diagnostic
}

// Error returns one diagnostic per line.
func (e *LoadError) Error() string {
	lines := make([]string, len(e.Diagnostics))
	for i, d := range e.Diagnostics {
		lines[i] = d.String()
	}
	return strings.Join(lines, "\n")
}

// Is reports whether target is ErrInvalid.
func (e *LoadError) Is(target error) bool { return target == ErrInvalid }

// Loaded is a scenario file after includes and conversion.
type Loaded struct {
	// Path is the file's path as given: relative paths stay relative, so
	// that reports hold no absolute paths.
	Path string
	// Document is the effective document: the included fragments merged in
	// (a fragment's values first, the scenario's own values win; lists
	// concatenated, fragments first), Include emptied, a fragment's
	// rulesFile rewritten relative to this file.
	Document *Document
	// Scenario is Convert(Document), defaults not yet applied.
	Scenario Scenario
	// Hash is "sha256:<hex>" of Marshal(Document): two files with the same
	// effective document have the same hash.
	Hash string

	// index places the effective document's values (WithExternal reports
	// its problems at them); files and lim are how it was loaded.
	index map[string]place
	files files
	lim   Limits
}

// Load reads a scenario file from the operating system's file system,
// follows its includes (relative to the including file) and converts it.
// Every problem, in every file, is in the *LoadError returned.
func Load(path string) (*Loaded, error) { return load(osFiles{}, path, Limits{}) }

// LoadFS is Load on fsys: includes and the rules file are resolved relative
// to the including file inside fsys (and may not leave it).
func LoadFS(fsys fs.FS, path string) (*Loaded, error) { return load(fsFiles{fsys}, path, Limits{}) }

// Parse decodes one document strictly, following no includes: unknown keys,
// values of the wrong type, bad durations and rates, a wrong apiVersion or
// kind are errors. Every problem is reported (a *LoadError, positions in
// name), not only the first; Parse never panics.
func Parse(name string, data []byte) (*Document, error) {
	p := parseDocument(name, data, DefaultMaxDepth)
	if len(p.diags) > 0 {
		return nil, &LoadError{Diagnostics: sortDiagnostics(p.diags, nil)}
	}
	return p.doc, nil
}

// Marshal writes a document as YAML: keys in the types' order, empty values
// left out (a pointer that is set, e.g. `retry: {}`, is kept), durations as
// "1m30s", rates as "100/s", parameters' keys sorted. Parse(Marshal(d))
// gives d back.
func Marshal(d *Document) ([]byte, error) {
	if d == nil {
		return nil, errors.New("marshal scenario: nil document")
	}
	out, err := yaml.MarshalWithOptions(yamlValue(reflect.ValueOf(d).Elem()), yaml.Indent(2), yaml.IndentSequence(true))
	if err != nil {
		return nil, fmt.Errorf("marshal scenario %q: %w", d.Metadata.Name, err)
	}
	return out, nil
}

// Limits that keep hostile input from exhausting the loader.
const (
	// maxValues bounds the values one document decodes to, aliases
	// counted each time they are used ("billion laughs").
	maxValues = 100_000
)

// ---- files ----

// files is where the loader reads: the OS or an fs.FS.
type files interface {
	// read reads a file of at most max bytes; with regularOnly, a path
	// that is not a regular file (a pipe, a device, a directory) is refused
	// before it is opened, so that an include cannot block the loader.
	read(name string, max int64, regularOnly bool) ([]byte, error)
	// resolve returns the path of ref, a path written in file from.
	resolve(from, ref string) (string, error)
	// rebase rewrites ref, written in a fragment that a file includes as
	// inc, relative to the including file.
	rebase(inc, ref string) string
	// identity returns the name under which a file is one file, for
	// cycles and fragments included twice.
	identity(name string) string
	// within says why name, which ref wrote, is not in root's folder or a
	// folder below it (nil when it is): where a scenario's includes are
	// read from unless Limits.AllowIncludeOutside.
	within(root, name, ref string) error
	// program resolves a command's program written in file from (see
	// programs.program).
	program(from, ref string) (string, error)
	// folder resolves a command's working directory written in file from
	// (see programs.folder).
	folder(from, ref string) (string, error)
}

type osFiles struct{}

func (osFiles) read(name string, max int64, regularOnly bool) ([]byte, error) {
	if regularOnly {
		if err := regular(os.Stat(name)); err != nil {
			return nil, err
		}
	}
	return readOSFile(name, max)
}

func (osFiles) resolve(from, ref string) (string, error) {
	if strings.TrimSpace(ref) == "" {
		return "", errors.New("expected a file name")
	}
	r := filepath.FromSlash(ref)
	if filepath.IsAbs(r) {
		return filepath.Clean(r), nil
	}
	return filepath.Join(filepath.Dir(from), r), nil
}

func (osFiles) rebase(inc, ref string) string {
	r := filepath.FromSlash(ref)
	if filepath.IsAbs(r) {
		return ref
	}
	return filepath.ToSlash(filepath.Join(filepath.Dir(filepath.FromSlash(inc)), r))
}

func (osFiles) identity(name string) string {
	if abs, err := filepath.Abs(name); err == nil {
		return abs
	}
	return filepath.Clean(name)
}

// within checks name's path, then the file it is once links are
// followed: a link in the scenario's folder leads no further than a path.
func (osFiles) within(root, name, ref string) error {
	dir, err := filepath.Abs(filepath.Dir(root))
	if err != nil {
		return fmt.Errorf("%q: %w", ref, err)
	}
	target, err := filepath.Abs(name)
	if err != nil {
		return fmt.Errorf("%q: %w", ref, err)
	}
	if !under(dir, target) {
		return fmt.Errorf("%q is outside %s", ref, confined)
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil // no folder to read from: reading says why
	}
	realTarget, err := filepath.EvalSymlinks(target)
	if err != nil {
		return nil // nothing there: reading says so
	}
	if !under(realDir, realTarget) {
		return fmt.Errorf("%q is a link to a file outside %s", ref, confined)
	}
	return nil
}

// confined says where a scenario's includes are read from, and how to
// allow more.
const confined = "the scenario's folder: a scenario includes files from its own folder and the folders below it (--allow-include-outside allows any)"

// under reports whether path is dir or below it (both absolute, clean).
func under(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

func (osFiles) program(from, ref string) (string, error) {
	if isBareName(ref) {
		return ref, lookPath(ref)
	}
	r := filepath.FromSlash(ref)
	if !filepath.IsAbs(r) {
		abs, err := filepath.Abs(filepath.Join(filepath.Dir(from), r))
		if err != nil {
			return ref, fmt.Errorf("%q: %w", ref, err)
		}
		r = abs
	}
	r = filepath.Clean(r)
	if strings.Contains(ref, "{") {
		return r, nil
	}
	st, err := os.Stat(r)
	return r, runnable(ref, st, err, true)
}

func (osFiles) folder(from, ref string) (string, error) {
	r := filepath.FromSlash(ref)
	if !filepath.IsAbs(r) {
		abs, err := filepath.Abs(filepath.Join(filepath.Dir(from), r))
		if err != nil {
			return ref, fmt.Errorf("%q: %w", ref, err)
		}
		r = abs
	}
	r = filepath.Clean(r)
	if strings.Contains(ref, "{") {
		return r, nil
	}
	st, err := os.Stat(r)
	return r, isFolder(ref, st, err)
}

type fsFiles struct{ fsys fs.FS }

func (f fsFiles) read(name string, max int64, regularOnly bool) ([]byte, error) {
	n := path.Clean(name)
	if !fs.ValidPath(n) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if regularOnly {
		if err := regular(fs.Stat(f.fsys, n)); err != nil {
			return nil, err
		}
	}
	return readFSFile(f.fsys, n, max)
}

func (fsFiles) resolve(from, ref string) (string, error) {
	switch {
	case strings.TrimSpace(ref) == "":
		return "", errors.New("expected a file name")
	case path.IsAbs(ref):
		return "", fmt.Errorf("%q is an absolute path; write it relative to this file", ref)
	}
	p := path.Join(path.Dir(path.Clean(from)), ref)
	if !fs.ValidPath(p) {
		return "", fmt.Errorf("%q leads outside the scenarios' directory", ref)
	}
	return p, nil
}

func (fsFiles) rebase(inc, ref string) string {
	if path.IsAbs(ref) {
		return ref
	}
	return path.Join(path.Dir(inc), ref)
}

func (fsFiles) identity(name string) string { return path.Clean(name) }

// within: resolve keeps every file inside fsys, which bounds the includes.
func (fsFiles) within(root, name, ref string) error { return nil }

// program resolves a program on the OS (a bare name, an absolute path) or
// in fsys (a relative path, which stays relative to fsys).
func (f fsFiles) program(from, ref string) (string, error) {
	switch {
	case isBareName(ref):
		return ref, lookPath(ref)
	case path.IsAbs(ref):
		if strings.Contains(ref, "{") {
			return ref, nil
		}
		st, err := os.Stat(ref)
		return ref, runnable(ref, st, err, true)
	}
	p := path.Join(path.Dir(path.Clean(from)), ref)
	if !fs.ValidPath(p) {
		return ref, fmt.Errorf("%q leads outside the scenarios' directory", ref)
	}
	if strings.Contains(ref, "{") {
		return p, nil
	}
	st, err := fs.Stat(f.fsys, p)
	return p, runnable(ref, st, err, false)
}

// folder resolves a folder in fsys ("" stays "": fsys has no folder on
// the OS to give) or, when absolute, on the OS.
func (f fsFiles) folder(from, ref string) (string, error) {
	var st fs.FileInfo
	var err error
	p := ref
	switch {
	case ref == "":
		return "", nil
	case path.IsAbs(ref):
		if !strings.Contains(ref, "{") {
			st, err = os.Stat(ref)
		}
	default:
		p = path.Join(path.Dir(path.Clean(from)), ref)
		if !fs.ValidPath(p) {
			return ref, fmt.Errorf("%q leads outside the scenarios' directory", ref)
		}
		if !strings.Contains(ref, "{") {
			st, err = fs.Stat(f.fsys, p)
		}
	}
	if st == nil && err == nil {
		return p, nil // a placeholder: known at the drill
	}
	return p, isFolder(ref, st, err)
}

// isBareName reports whether a command's program is a name to look up on
// PATH (no slash) rather than a path.
func isBareName(ref string) bool {
	return !strings.ContainsRune(ref, '/') && !strings.ContainsRune(ref, filepath.Separator)
}

// lookPath checks that a bare program name is on PATH (a name holding a
// placeholder is known only at the drill).
func lookPath(name string) error {
	if strings.Contains(name, "{") {
		return nil
	}
	if _, err := exec.LookPath(name); err != nil {
		return fmt.Errorf("%q is not on PATH; expected a program on PATH or a path to one (a relative path with a slash is relative to this file's folder)", name)
	}
	return nil
}

// runnable says why the file a program's path ref names (st, or err from
// its Stat) cannot be run; checkMode checks its executable bits.
func runnable(ref string, st fs.FileInfo, err error, checkMode bool) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%q: no such file; expected a program (a relative path is relative to this file's folder)", ref)
	case err != nil:
		return fmt.Errorf("%q: %s", ref, readFailure(err))
	case st.IsDir():
		return fmt.Errorf("%q is a folder; expected a program", ref)
	case checkMode && st.Mode()&0o111 == 0:
		return fmt.Errorf("%q is not executable; make it so (chmod +x) or run it with its interpreter (path: python3, args: [%s])", ref, ref)
	}
	return nil
}

// isFolder says why what a command's dir ref names (st, or err from its
// Stat) is not a folder.
func isFolder(ref string, st fs.FileInfo, err error) error {
	shown := ref
	if shown == "" {
		shown = "." // the scenario's folder
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%q: no such folder; expected the command's working directory (relative to this file's folder)", shown)
	case err != nil:
		return fmt.Errorf("%q: %s", shown, readFailure(err))
	case !st.IsDir():
		return fmt.Errorf("%q is not a folder; expected the command's working directory", shown)
	}
	return nil
}

// loaderPrograms resolves the programs of the scenario root in l's files.
type loaderPrograms struct {
	files files
	root  string
}

func (p loaderPrograms) program(ref string) (string, error) { return p.files.program(p.root, ref) }
func (p loaderPrograms) folder(ref string) (string, error)  { return p.files.folder(p.root, ref) }

// readFailure says why a file could not be read, without the path the
// caller names anyway.
// errNotRegular: an included fragment or a rule file that is not a regular
// file; reading a named pipe or a terminal would block the loader.
var errNotRegular = errors.New("not a regular file (a pipe, a device or a directory): fragments and rule files are read only from regular files")

// regular turns a Stat's answer into errNotRegular for anything but a
// regular file.
func regular(st fs.FileInfo, err error) error {
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return errNotRegular
	}
	return nil
}

func readFailure(err error) string {
	if msg, ok := tooLarge(err); ok {
		return msg
	}
	if errors.Is(err, fs.ErrNotExist) {
		return "no such file"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// ---- loading ----

// place is where a value of a document was written.
type place struct {
	file      string
	line, col int
	// keyLine and keyCol are the position of the value's key, when it has
	// one: where a reader looks for a problem with a missing part of it.
	keyLine, keyCol int
	// bad marks a value the decoder reported: the conversion's problems
	// with it, or under it, are not reported again.
	bad bool
}

// parsed is a document with the place of each of its values, by path
// ("faults[2].params.after"; "" is the document).
type parsed struct {
	doc   *Document
	index map[string]place
	diags []Diagnostic
}

type loader struct {
	files files
	diags []Diagnostic
	// rank orders the files as they were read, for sorting diagnostics.
	rank map[string]int
	// merged holds the fragments already merged: a fragment included
	// twice (a diamond) is merged once.
	merged map[string]bool
	lim    Limits
	// root is the scenario's file, whose folder bounds its includes.
	root string
}

func load(fsys files, name string, lim Limits) (*Loaded, error) {
	l := &loader{files: fsys, rank: map[string]int{}, merged: map[string]bool{fsys.identity(name): true}, lim: lim.WithDefaults(), root: name}
	eff := l.file(name, []string{name}, nil)
	if eff == nil {
		return nil, l.err()
	}
	if eff.index["apiVersion"].bad {
		return nil, l.err() // another format, or none: its keys mean nothing here
	}
	if eff.doc.Kind == KindFragment {
		l.addAt(eff.index["kind"], "kind: this file is a Fragment, which cannot be run on its own; include it from a Scenario (kind: Scenario)")
		return nil, l.err()
	}
	sc, problems := convert(eff.doc, l.rules(name), loaderPrograms{l.files, name}, l.lim.Run)
	l.problems(eff, sc, problems)
	if len(l.diags) > 0 {
		return nil, l.err()
	}
	out, err := Marshal(eff.doc)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", name, err)
	}
	sum := sha256.Sum256(out)
	return &Loaded{Path: name, Document: eff.doc, Scenario: sc, Hash: "sha256:" + hex.EncodeToString(sum[:]), index: eff.index, files: fsys, lim: l.lim}, nil
}

func (l *loader) err() error {
	return &LoadError{Diagnostics: sortDiagnostics(l.diags, l.rank)}
}

func (l *loader) addAt(at place, msg string) {
	l.diags = append(l.diags, Diagnostic{File: at.file, Line: at.line, Col: at.col, Message: msg})
}

// file loads one file and, depth first, the fragments it includes, and
// returns its effective document; nil when it cannot be read or parsed.
// via is the include entry that named it (nil for the scenario itself);
// stack the chain of includes that led to it, itself last.
func (l *loader) file(name string, stack []string, via *includeEntry) *parsed {
	if _, ok := l.rank[name]; !ok {
		l.rank[name] = len(l.rank)
	}
	// The scenario itself may be a pipe (faultline validate /dev/stdin);
	// what it includes is read only from regular files.
	data, err := l.files.read(name, l.lim.MaxFileSize, via != nil)
	if err != nil {
		if via == nil {
			l.diags = append(l.diags, Diagnostic{File: name, Message: "cannot read the file: " + readFailure(err)})
		} else if errors.Is(err, fs.ErrNotExist) {
			l.addAt(via.at, fmt.Sprintf("%s: fragment %s not found", via.entry, name))
		} else {
			l.addAt(via.at, fmt.Sprintf("%s: cannot read fragment %s: %s", via.entry, name, readFailure(err)))
		}
		return nil
	}
	p := parseDocument(name, data, l.lim.MaxDepth)
	if via != nil && !isScenarioFile(p, data) {
		// Any file may be named (with --allow-include-outside): what a
		// file that is not a scenario holds is never repeated.
		pl := p.index["apiVersion"]
		if pl.line <= 0 {
			pl = p.index[""]
		}
		l.addAt(via.at, fmt.Sprintf("%s: %s is not a scenario fragment: at its line %d, column %d, expected apiVersion: %s, then kind: %s (what it holds is not shown)",
			via.entry, name, max(pl.line, 1), max(pl.col, 1), APIVersion, KindFragment))
		return nil
	}
	l.diags = append(l.diags, p.diags...)
	if p.doc == nil {
		return nil
	}
	eff := &parsed{doc: &Document{}, index: map[string]place{}}
	for i, inc := range p.doc.Include {
		entry := fmt.Sprintf("include[%d]", i)
		at := p.index[entry]
		child, err := l.files.resolve(name, inc)
		if err != nil {
			l.addAt(at, entry+": "+err.Error())
			continue
		}
		if !l.lim.AllowIncludeOutside {
			if err := l.files.within(l.root, child, inc); err != nil {
				l.addAt(at, entry+": "+err.Error())
				continue
			}
		}
		id := l.files.identity(child)
		if j := slices.IndexFunc(stack, func(s string) bool { return l.files.identity(s) == id }); j >= 0 {
			cycle := append(slices.Clone(stack[j:]), child)
			l.addAt(at, entry+": include cycle: "+strings.Join(cycle, " → "))
			continue
		}
		if l.merged[id] {
			continue
		}
		l.merged[id] = true
		frag := l.file(child, append(slices.Clone(stack), child), &includeEntry{entry, at})
		if frag == nil {
			continue
		}
		if frag.doc.Kind != KindFragment {
			if frag.doc.Kind == KindScenario {
				l.addAt(at, fmt.Sprintf("%s: %s is a Scenario; only a Fragment (kind: Fragment) may be included", entry, child))
			}
			continue
		}
		if rf := frag.doc.System.RulesFile; rf != "" {
			frag.doc.System.RulesFile = l.files.rebase(inc, rf)
		}
		if ext := frag.doc.System.External; ext != nil {
			rebaseCommands(ext, func(ref string) string { return l.files.rebase(inc, ref) })
		}
		mergeDocument(eff, frag, true)
	}
	mergeDocument(eff, p, false)
	eff.index[""] = p.index[""]
	return eff
}

// rebaseCommands rewrites the paths a fragment's black-box system writes
// (a program's path with a slash, a working directory) relative to the
// including file, through rebase; a command without a directory gets the
// fragment's folder, so that its arguments stay relative to the file
// that wrote them.
func rebaseCommands(e *External, rebase func(ref string) string) {
	for _, cmd := range []*Command{e.Command, e.Inject.Command, e.DLQ.Command} {
		if cmd == nil {
			continue
		}
		if !isBareName(cmd.Path) && !strings.HasPrefix(cmd.Path, "{") {
			cmd.Path = rebase(cmd.Path)
		}
		switch {
		case strings.HasPrefix(cmd.Dir, "{"):
		case cmd.Dir != "":
			cmd.Dir = rebase(cmd.Dir)
		case rebase(".") != ".":
			cmd.Dir = rebase(".")
		}
	}
}

// scenarioHeader matches the line that starts a scenario file, for a file
// that does not parse.
var scenarioHeader = regexp.MustCompile(`(?m)^apiVersion:[ \t]*["']?` + regexp.QuoteMeta(APIVersion) + `["']?[ \t]*(#.*)?\r?$`)

// isScenarioFile reports whether a file, parsed as p from data, is a
// scenario file (a Scenario or a Fragment, well formed or not): its
// apiVersion is this format's, or, when it does not parse, a line says so.
// The problems of any other file are not shown: they would quote it.
func isScenarioFile(p *parsed, data []byte) bool {
	if p.doc != nil {
		pl, ok := p.index["apiVersion"]
		return ok && !pl.bad
	}
	return scenarioHeader.Match(data)
}

// includeEntry is an include entry: its path and place.
type includeEntry struct {
	entry string
	at    place
}

// rules loads the rules file a scenario names, relative to the scenario;
// its problems are reported in that file.
func (l *loader) rules(root string) func(string) ([]classify.Rule, error) {
	return func(ref string) ([]classify.Rule, error) {
		name, err := l.files.resolve(root, ref)
		if err != nil {
			return nil, err
		}
		if _, ok := l.rank[name]; !ok {
			l.rank[name] = len(l.rank)
		}
		data, err := l.files.read(name, l.lim.MaxFileSize, true)
		if err != nil {
			return nil, fmt.Errorf("cannot read the rule file %s: %s", name, readFailure(err))
		}
		if !isRuleFile(data) {
			// Any file may be named: what a file that is not a rule file
			// holds is never repeated.
			return nil, fmt.Errorf("%s is not a rule file: expected a mapping with the keys defaults, fallback and rules (what it holds is not shown)", name)
		}
		rs, err := classify.ParseRules(name, data, nil)
		if err != nil {
			n := l.ruleDiagnostics(name, err)
			return nil, fmt.Errorf("%s is not a valid rule file (%s, reported in it)", name, plural(n, "problem"))
		}
		return rs.Rules, nil
	}
}

// ruleKeys are a rule file's keys (reference/classify); ruleKeyLine
// matches one at the start of a line, for a file that does not parse.
var (
	ruleKeys    = []string{"defaults", "fallback", "rules"}
	ruleKeyLine = regexp.MustCompile(`(?m)^["']?(defaults|fallback|rules)["']?[ \t]*:`)
)

// isRuleFile reports whether data is a rule file, well formed or not: an
// empty document, or a mapping with at least one of a rule file's keys
// (or, when it does not parse, a line starting with one). The problems of
// any other file are not shown: they would quote it.
func isRuleFile(data []byte) bool {
	if _, _, deep, big := scanText(data, DefaultMaxDepth, scanNodes); deep || big {
		return ruleKeyLine.Match(data)
	}
	f, err := parseYAML(data)
	if err != nil || f == nil || len(f.Docs) != 1 {
		return ruleKeyLine.Match(data)
	}
	body := f.Docs[0].Body
	if body == nil {
		return true
	}
	if m, ok := body.(*ast.TagNode); ok {
		body = m.Value
	}
	var values []*ast.MappingValueNode
	switch m := body.(type) {
	case *ast.MappingNode:
		values = m.Values
	case *ast.MappingValueNode:
		values = []*ast.MappingValueNode{m}
	case *ast.NullNode:
		return true
	}
	for _, mv := range values {
		if mv == nil || mv.Key == nil {
			continue
		}
		if k, ok := keyName(mv.Key); ok && slices.Contains(ruleKeys, k) {
			return true
		}
	}
	return false
}

// ruleDiagnostics reports a rule file's errors at their positions and
// returns how many there were.
func (l *loader) ruleDiagnostics(name string, err error) int {
	errs := flatten(err)
	for _, e := range errs {
		d := Diagnostic{File: name, Message: e.Error()}
		var re *classify.RuleError
		if errors.As(e, &re) {
			d.Line, d.Col = re.Line, re.Col
			d.Message = re.Msg
			if re.Field != "" {
				d.Message = re.Field + ": " + d.Message
			}
			if re.Hint != "" {
				d.Message += "; " + re.Hint
			}
		}
		l.diags = append(l.diags, d)
	}
	return len(errs)
}

// problems reports the conversion's problems at the positions of their
// paths, leaving out those about values the decoder already reported.
func (l *loader) problems(eff *parsed, sc Scenario, problems []Problem) {
	decodeFailed := len(l.diags) > 0
	for i := 0; i < len(problems); i++ {
		pr := problems[i]
		if pr.Path == "" && decodeFailed {
			continue // about the document as a whole, which has holes in it
		}
		if split := faultProblems(pr, sc); split != nil {
			problems = append(problems, split...) // reported in turn below
			continue
		}
		if eff.reported(pr.Path) || (pr.Path == "abortIf" && eff.reportedWithin(pr.Path)) {
			continue // a guard left without a bound by a bad or misspelt key is that key's problem
		}
		if root := expectRoot(pr.Path); root != "" && eff.reportedWithin(root) && !eff.written(pr.Path, root) {
			continue // an expectation missing a key because a bad or misspelt one was dropped: that key's problem
		}
		if root := whenRoot(pr.Path); root != "" && eff.reportedWithin(root) && !eff.written(pr.Path, root) {
			continue // a schedule.when missing a key because a misspelt one was dropped: that key's problem
		}
		pl := eff.placeOf(pr.Path)
		if eff.unknownParam(pr.Path) && pl.keyLine > 0 {
			pl.line, pl.col = pl.keyLine, pl.keyCol // the name is wrong, not the value
		}
		l.addAt(pl, pr.Error())
	}
}

// faultProblems splits the problem Convert reports for a whole fault
// ("faults[2]": its Validate failed) into one per field of the fault, at
// that field's path ("faults[2].params.code"); nil when there is nothing to
// split.
func faultProblems(pr Problem, sc Scenario) []Problem {
	num, ok := strings.CutPrefix(pr.Path, "faults[")
	if !ok || !strings.HasSuffix(num, "]") {
		return nil
	}
	i, err := strconv.Atoi(strings.TrimSuffix(num, "]"))
	if err != nil || i < 0 || i >= len(sc.Faults) {
		return nil
	}
	var out []Problem
	for _, e := range flatten(sc.Faults[i].Validate()) {
		var fe *faults.FieldError
		if !errors.As(e, &fe) || fe.Field == "" {
			return nil
		}
		field := fe.Field
		switch {
		case field == "target.kind" || field == "target.name":
			field = "target"
		case strings.HasPrefix(field, "model."):
			field = "params." + strings.TrimPrefix(field, "model.")
		}
		bare := *fe
		bare.Fault, bare.Field = "", ""
		out = append(out, Problem{Path: pr.Path + "." + field, Message: bare.Error()})
	}
	return out
}

// flatten lists the errors joined in err.
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

// unknownParam reports whether path is a fault's parameter
// ("faults[2].params.afterr") that its model does not have.
func (p *parsed) unknownParam(at string) bool {
	rest, ok := strings.CutPrefix(at, "faults[")
	if !ok {
		return false
	}
	num, rest, _ := strings.Cut(rest, "]")
	name, ok := strings.CutPrefix(rest, ".params.")
	i, err := strconv.Atoi(num)
	if !ok || err != nil || i < 0 || i >= len(p.doc.Faults) || strings.ContainsAny(name, ".[") {
		return false
	}
	m, err := faults.New(p.doc.Faults[i].Model)
	if err != nil {
		return false
	}
	for _, e := range faults.Catalogue() {
		if e.Name == m.Name() {
			return !slices.ContainsFunc(e.Params, func(pa faults.Param) bool { return pa.Name == name })
		}
	}
	return false
}

// simPath turns a simulator field ("Workload.Tasks[0].Name") into the
// document's path ("workload.tasks[0].name").
func simPath(field string) string {
	switch field {
	case "Name", "Description", "Tags":
		return "metadata." + lowerFirst(field)
	case "System.Rules":
		return "system.rulesFile"
	}
	var parts []string
	for _, p := range strings.Split(field, ".") {
		prev := ""
		if len(parts) > 0 {
			prev = parts[len(parts)-1]
		}
		p = lowerFirst(p)
		switch {
		case strings.HasPrefix(prev, "steps[") && p == "kind":
			p = "action"
		case strings.HasPrefix(prev, "breakers[") && p == "config":
			continue // a breaker's keys are its config's
		case strings.HasPrefix(prev, "breakers[") && p == "name":
			p = "dependency"
		case strings.HasPrefix(prev, "receivers[") && p == "name":
			continue // a receiver is its name
		case strings.HasPrefix(prev, "expect[") && p == "jobID":
			p = "job"
		case prev == "window" && len(parts) > 1 && parts[len(parts)-2] == "autoRetry":
			parts[len(parts)-1] = "window" + strings.ToUpper(p[:1]) + p[1:]
			continue
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ".")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// reported reports whether the decoder reported the value at path or one
// that holds it.
func (p *parsed) reported(at string) bool {
	for q := at; ; q = parentPath(q) {
		if pl, ok := p.index[q]; ok && pl.bad {
			return true
		}
		if q == "" {
			return false
		}
	}
}

// expectRoot returns the expectation ("expect[3]") that path is, or is
// in; "" when it is in none.
func expectRoot(at string) string {
	rest, ok := strings.CutPrefix(at, "expect[")
	num, _, found := strings.Cut(rest, "]")
	if !ok || !found || !isIndex(num) {
		return ""
	}
	return "expect[" + num + "]"
}

// whenRoot returns the schedule.when ("faults[2].schedule.when") that path
// is a key of; "" when it is none's.
func whenRoot(at string) string {
	rest, ok := strings.CutPrefix(at, "faults[")
	num, key, found := strings.Cut(rest, "]")
	if !ok || !found || !isIndex(num) || !strings.HasPrefix(key, ".schedule.when.") {
		return ""
	}
	return "faults[" + num + "].schedule.when"
}

func isIndex(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil && s != "" && s[0] != '-'
}

// written reports whether the value at path was written in the document
// (a key of the expectation at root, not the expectation as a whole).
func (p *parsed) written(at, root string) bool {
	_, ok := p.index[at]
	return ok && at != root
}

// reportedWithin reports whether the decoder reported a value or an
// unknown key inside the value at path.
func (p *parsed) reportedWithin(at string) bool {
	for q, pl := range p.index {
		if pl.bad && len(q) > len(at) && strings.HasPrefix(q, at) && (q[len(at)] == '.' || q[len(at)] == '[') {
			return true
		}
	}
	return false
}

// placeOf returns where the value at path was written or, when it was not
// (a missing key), the key of the nearest value that holds it.
func (p *parsed) placeOf(at string) place {
	if pl, ok := p.index[at]; ok {
		return pl
	}
	for q := parentPath(at); q != ""; q = parentPath(q) {
		if pl, ok := p.index[q]; ok {
			if pl.keyLine > 0 {
				pl.line, pl.col = pl.keyLine, pl.keyCol
			}
			return pl
		}
	}
	return p.index[""]
}

func parentPath(p string) string {
	i := strings.LastIndexAny(p, ".[")
	if i < 0 {
		return ""
	}
	return p[:i]
}

// sortDiagnostics orders diagnostics by file (in rank order, else by name),
// then position, dropping duplicates.
func sortDiagnostics(ds []Diagnostic, rank map[string]int) []Diagnostic {
	out := slices.Clone(ds)
	slices.SortStableFunc(out, func(a, b Diagnostic) int {
		if a.File != b.File {
			ra, oka := rank[a.File]
			rb, okb := rank[b.File]
			if oka && okb {
				return ra - rb
			}
			return strings.Compare(a.File, b.File)
		}
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Col - b.Col
	})
	return slices.Compact(out)
}

// ---- merging ----

// mergeDocument merges src into dst: src's non-empty values win, lists are
// appended. A fragment's apiVersion, kind and metadata describe the
// fragment and are not merged. The places of src's values move with them.
func mergeDocument(dst, src *parsed, fragment bool) {
	m := merger{dst: dst.index, src: src.index}
	dv, sv := reflect.ValueOf(dst.doc).Elem(), reflect.ValueOf(src.doc).Elem()
	for _, f := range formatFields(documentType) {
		switch f.key {
		case "include":
			continue
		case "apiVersion", "kind", "metadata":
			if fragment {
				continue
			}
		}
		m.merge(dv.Field(f.index), sv.Field(f.index), f.key, f.key)
	}
	// The unknown keys the decoder reported (no field carries them),
	// outside lists, whose items merging renumbers.
	for k, pl := range src.index {
		if _, ok := dst.index[k]; pl.bad && !ok && !strings.Contains(k, "[") {
			dst.index[k] = pl
		}
	}
}

type merger struct{ dst, src map[string]place }

func (m merger) merge(dst, src reflect.Value, dp, sp string) {
	m.keep(dp, sp)
	switch t := src.Type(); {
	case t.Kind() == reflect.Struct:
		m.note(dp, sp)
		for _, f := range formatFields(t) {
			m.merge(dst.Field(f.index), src.Field(f.index), dp+"."+f.key, sp+"."+f.key)
		}
	case t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct:
		if src.IsNil() {
			return
		}
		if dst.IsNil() {
			dst.Set(reflect.New(t.Elem()))
		}
		m.merge(dst.Elem(), src.Elem(), dp, sp)
	case t.Kind() == reflect.Slice:
		if src.Len() == 0 {
			return
		}
		n := dst.Len()
		dst.Set(reflect.AppendSlice(dst, src))
		m.note(dp, sp)
		m.moveItems(dp, sp, n)
	case t.Kind() == reflect.Map:
		if src.Len() == 0 {
			return
		}
		if dst.IsNil() {
			dst.Set(reflect.MakeMap(t))
		}
		m.note(dp, sp)
		iter := src.MapRange()
		for iter.Next() {
			dst.SetMapIndex(iter.Key(), iter.Value())
		}
		m.moveUnder(dp+".", sp+".")
	default:
		if src.IsZero() {
			return
		}
		dst.Set(src)
		m.note(dp, sp)
	}
}

// note copies the place of the value at sp: the value now comes from there.
func (m merger) note(dp, sp string) {
	if pl, ok := m.src[sp]; ok {
		m.dst[dp] = pl
	}
}

// keep copies the place of a value at sp that does not (or not yet) win:
// when it was reported, so that its problems stay reported, or when
// nothing else was written there (an explicit zero).
func (m merger) keep(dp, sp string) {
	pl, ok := m.src[sp]
	if !ok {
		return
	}
	if old, had := m.dst[dp]; !had || (pl.bad && !old.bad) {
		m.dst[dp] = pl
	}
}

// moveItems copies the places of the items of the list at sp, appended at
// offset n of the list at dp.
func (m merger) moveItems(dp, sp string, n int) {
	prefix := sp + "["
	for k, pl := range m.src {
		rest, ok := strings.CutPrefix(k, prefix)
		if !ok {
			continue
		}
		num, tail, ok := strings.Cut(rest, "]")
		i, err := strconv.Atoi(num)
		if !ok || err != nil {
			continue
		}
		m.dst[dp+"["+strconv.Itoa(n+i)+"]"+tail] = pl
	}
}

// moveUnder copies the places of every path starting with sp.
func (m merger) moveUnder(dp, sp string) {
	for k, pl := range m.src {
		if rest, ok := strings.CutPrefix(k, sp); ok {
			m.dst[dp+rest] = pl
		}
	}
}

// ---- decoding ----

// parseDocument parses and decodes one document, gathering every problem.
// doc is nil when the file is not YAML, not one document, or past a limit
// of its values (then the rest was not decoded).
func parseDocument(name string, data []byte, maxDepth int) *parsed {
	p := &parsed{index: map[string]place{"": {file: name, line: 1, col: 1}}}
	// YAML allows a byte order mark, and editors on Windows write one;
	// the parser would read it as part of the first key.
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	// The parser's memory grows with the nesting far faster than with the
	// size: measure the nesting first, without it.
	if line, col, deep, big := scanText(data, maxDepth, scanNodes); deep || big {
		msg := fmt.Sprintf("values are nested more than %d deep; lift the limit with --max-depth", maxDepth)
		if big {
			msg = fmt.Sprintf("the document is too large: more than %d values", maxValues)
		}
		p.diags = append(p.diags, Diagnostic{File: name, Line: line, Col: col, Message: msg})
		return p
	}
	file, err := parseYAML(data)
	if err != nil {
		p.diags = append(p.diags, syntaxDiagnostic(name, data, err))
		return p
	}
	var bodies []ast.Node
	for _, doc := range file.Docs {
		if doc != nil && doc.Body != nil {
			bodies = append(bodies, doc.Body)
		}
	}
	switch len(bodies) {
	case 0:
		p.diags = append(p.diags, Diagnostic{File: name, Line: 1, Col: 1,
			Message: "the file is empty; expected a document starting with apiVersion: " + APIVersion + " and kind: " + KindScenario})
		return p
	case 1:
	default:
		line, col := nodePos(bodies[1])
		p.diags = append(p.diags, Diagnostic{File: name, Line: line, Col: col,
			Message: fmt.Sprintf("expected one document, found %d (separated by ---)", len(bodies))})
		return p
	}
	d := &decoder{file: name, index: p.index, budget: maxValues, maxDepth: maxDepth, anchors: map[string][]*ast.AnchorNode{}, active: map[*ast.AnchorNode]bool{}}
	d.collectAnchors(bodies[0], 0)
	d.at("", nil, bodies[0])
	var doc Document
	d.decode(bodies[0], reflect.ValueOf(&doc).Elem(), "", 0)
	d.checkHeader(&doc)
	p.doc, p.diags = &doc, d.diags
	if d.tooBig || d.tooDeep {
		// The values past a limit were not decoded: checking the
		// document would report each of them as missing.
		p.doc = nil
	}
	return p
}

// parseYAML parses the YAML; the parser is third-party code, and whatever
// it does with hostile input, a user sees an error, not a crash.
func parseYAML(data []byte) (f *ast.File, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, fmt.Errorf("the YAML parser failed on this input: %v", r)
		}
	}()
	return parser.ParseBytes(data, 0)
}

// syntaxDiagnostic places the parser's error.
func syntaxDiagnostic(name string, data []byte, err error) Diagnostic {
	d := Diagnostic{File: name, Line: 1, Col: 1, Message: "bad YAML: " + err.Error()}
	var ye yaml.Error
	if !errors.As(err, &ye) {
		return d
	}
	d.Message = "bad YAML: " + strings.ReplaceAll(ye.GetMessage(), "\t", `\t`)
	tk := ye.GetToken()
	if tk == nil || tk.Position == nil {
		return d
	}
	d.Line, d.Col = tk.Position.Line, tk.Position.Column
	// A key indented deeper than the keys before it reads as the
	// continuation of the value above, until its colon: point at that
	// key's line, where the indentation is wrong.
	if next := tk.Next; strings.Contains(tk.Origin, "\n") && next != nil && next.Type == token.MappingValueType &&
		next.Position != nil && next.Position.Line > tk.Position.Line {
		d.Line, d.Col = next.Position.Line, firstNonBlank(data, next.Position.Line)
		d.Message += "; check this line's indentation"
	}
	return d
}

func firstNonBlank(data []byte, line int) int {
	lines := bytes.Split(data, []byte("\n"))
	if line < 1 || line > len(lines) {
		return 1
	}
	return len(lines[line-1]) - len(bytes.TrimLeft(lines[line-1], " \t")) + 1
}

type decoder struct {
	file  string
	index map[string]place
	diags []Diagnostic
	// anchors are the document's anchors by name, in document order.
	anchors map[string][]*ast.AnchorNode
	// active are the anchors being decoded: an alias to one would never end.
	active          map[*ast.AnchorNode]bool
	budget          int
	maxDepth        int
	tooBig, tooDeep bool
}

func (d *decoder) report(n ast.Node, msg string) {
	line, col := nodePos(n)
	d.diags = append(d.diags, Diagnostic{File: d.file, Line: line, Col: col, Message: msg})
}

// fail reports a value that cannot be used, at the value, and marks its
// path reported.
func (d *decoder) fail(n ast.Node, at, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if at != "" {
		msg = at + ": " + msg
	}
	d.report(n, msg)
	pl, ok := d.index[at]
	if !ok {
		pl = place{file: d.file}
		pl.line, pl.col = nodePos(n)
	}
	pl.bad = true
	d.index[at] = pl
}

// at records where the value at path was written.
func (d *decoder) at(at string, key, value ast.Node) {
	pl := place{file: d.file}
	if key != nil {
		pl.keyLine, pl.keyCol = nodePos(key)
	}
	switch {
	case value != nil && !(isImplicitNull(value) && key != nil):
		pl.line, pl.col = nodePos(value)
	case key != nil:
		pl.line, pl.col = pl.keyLine, pl.keyCol
	default:
		pl.line, pl.col = 1, 1
	}
	d.index[at] = pl
}

// spend counts one value against the limits.
func (d *decoder) spend(n ast.Node, depth int) bool {
	d.budget--
	if d.budget < 0 {
		if !d.tooBig {
			d.tooBig = true
			d.report(n, fmt.Sprintf("the document is too large: more than %d values (an alias counts its values each time it is used)", maxValues))
		}
		return false
	}
	if depth > d.maxDepth {
		if !d.tooDeep {
			d.tooDeep = true
			d.report(n, fmt.Sprintf("values are nested more than %d deep; lift the limit with --max-depth", d.maxDepth))
		}
		return false
	}
	return true
}

func (d *decoder) collectAnchors(n ast.Node, depth int) {
	if n == nil || depth > 4*d.maxDepth {
		return
	}
	switch m := n.(type) {
	case *ast.MappingNode:
		for _, v := range m.Values {
			if v != nil {
				d.collectAnchors(v.Key, depth+1)
				d.collectAnchors(v.Value, depth+1)
			}
		}
	case *ast.MappingValueNode:
		d.collectAnchors(m.Key, depth+1)
		d.collectAnchors(m.Value, depth+1)
	case *ast.MappingKeyNode:
		d.collectAnchors(m.Value, depth+1)
	case *ast.SequenceNode:
		for _, v := range m.Values {
			d.collectAnchors(v, depth+1)
		}
	case *ast.TagNode:
		d.collectAnchors(m.Value, depth+1)
	case *ast.AnchorNode:
		if name, ok := scalarText(m.Name); ok {
			d.anchors[name] = append(d.anchors[name], m)
		}
		d.collectAnchors(m.Value, depth+1)
	}
}

// alias returns the anchor an alias refers to: the last one of its name
// before it.
func (d *decoder) alias(m *ast.AliasNode, at string) *ast.AnchorNode {
	name, _ := scalarText(m.Value)
	var found *ast.AnchorNode
	for _, a := range d.anchors[name] {
		if offset(a) < offset(m) {
			found = a
		}
	}
	switch {
	case found == nil:
		d.fail(m, at, "unknown alias *%s", name)
		return nil
	case d.active[found]:
		d.fail(m, at, "alias *%s refers to a value that contains it", name)
		return nil
	}
	return found
}

// within runs f with anchor a being decoded.
func (d *decoder) within(a *ast.AnchorNode, f func()) {
	d.active[a] = true
	f()
	delete(d.active, a)
}

// decode decodes the node n into v, the value at path.
func (d *decoder) decode(n ast.Node, v reflect.Value, at string, depth int) {
	if n == nil || !d.spend(n, depth) {
		return
	}
	switch m := n.(type) {
	case *ast.AnchorNode:
		d.within(m, func() { d.decode(m.Value, v, at, depth+1) })
	case *ast.AliasNode:
		if a := d.alias(m, at); a != nil {
			d.within(a, func() { d.decode(a.Value, v, at, depth+1) })
		}
	case *ast.TagNode:
		d.decode(untag(m), v, at, depth+1)
	default:
		d.value(n, v, at, depth)
	}
}

// untag drops a tag, except that !!str makes its scalar a string.
func untag(m *ast.TagNode) ast.Node {
	if m.Start != nil && (m.Start.Value == "!!str" || m.Start.Value == "!<tag:yaml.org,2002:str>") {
		if s, ok := scalarText(m.Value); ok {
			return &ast.StringNode{BaseNode: &ast.BaseNode{}, Token: m.Value.GetToken(), Value: s}
		}
	}
	return m.Value
}

// value decodes a node that is not an anchor, alias or tag into v.
func (d *decoder) value(n ast.Node, v reflect.Value, at string, depth int) {
	t := v.Type()
	if _, null := n.(*ast.NullNode); null {
		return // the zero value: as if the key were not there
	}
	switch t {
	case docDurationType:
		d.duration(n, v, at)
		return
	case docRateType:
		text, ok := scalarText(n)
		if !ok {
			d.fail(n, at, "expected a rate like 100/s, 6000/m or 2/h, got %s", describe(n))
			return
		}
		r, err := ParseRate(text)
		if err != nil {
			d.fail(n, at, "%v", err)
			return
		}
		v.SetFloat(float64(r))
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		e := reflect.New(t.Elem())
		before := len(d.diags)
		d.value(n, e.Elem(), at, depth)
		if t.Elem().Kind() == reflect.Struct || len(d.diags) == before {
			v.Set(e)
		}
	case reflect.Struct:
		d.structure(n, v, at, depth)
	case reflect.Slice:
		d.list(n, v, at, depth)
	case reflect.Map:
		d.mapping(n, v, at, depth, false)
	case reflect.Interface:
		d.anyValue(n, v, at, depth)
	case reflect.String:
		s, ok := scalarText(n)
		if !ok {
			d.fail(n, at, "expected a string, got %s", describe(n))
			return
		}
		v.SetString(s)
	case reflect.Bool:
		b, ok := n.(*ast.BoolNode)
		if !ok {
			d.fail(n, at, "expected true or false, got %s", describe(n))
			return
		}
		v.SetBool(b.Value)
	case reflect.Int, reflect.Int64, reflect.Uint64:
		d.whole(n, v, at)
	case reflect.Float64:
		switch m := n.(type) {
		case *ast.IntegerNode:
			v.SetFloat(integerFloat(m))
		case *ast.FloatNode:
			v.SetFloat(m.Value)
		case *ast.StringNode:
			f, ok := plainFloat(m)
			if !ok {
				d.fail(n, at, "expected a number, got %s", describe(n))
				return
			}
			v.SetFloat(f)
		default:
			d.fail(n, at, "expected a number, got %s", describe(n))
		}
	default:
		panic("scenarios: no decoding for a " + t.String()) // a new kind of field: teach the decoder
	}
}

func integerFloat(m *ast.IntegerNode) float64 {
	switch x := m.Value.(type) {
	case int64:
		return float64(x)
	case uint64:
		return float64(x)
	}
	return 0
}

var (
	plainInteger = regexp.MustCompile(`^[-+]?[0-9]+$`)
	// yamlFloat is YAML 1.2's float, some of which ("1e+21") the parser
	// leaves strings.
	yamlFloat = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)
)

// plainFloat reads an unquoted scalar the parser left a string that YAML
// reads as a float ("1e+21").
func plainFloat(m *ast.StringNode) (float64, bool) {
	if m.Token == nil || m.Token.Type != token.StringType || plainInteger.MatchString(m.Value) || !yamlFloat.MatchString(m.Value) {
		return 0, false
	}
	f, err := strconv.ParseFloat(m.Value, 64)
	return f, err == nil
}

// whole decodes a whole number into an int or uint64 field.
func (d *decoder) whole(n ast.Node, v reflect.Value, at string) {
	var neg bool
	var mag uint64
	switch m := n.(type) {
	case *ast.IntegerNode:
		switch x := m.Value.(type) {
		case int64:
			neg, mag = x < 0, uint64(x)
			if neg {
				mag = uint64(-(x + 1)) + 1
			}
		case uint64:
			mag = x
		default:
			d.fail(n, at, "expected a whole number, got %s", describe(n))
			return
		}
	case *ast.FloatNode:
		if m.Value != math.Trunc(m.Value) || math.Abs(m.Value) > 1<<53 {
			d.fail(n, at, "expected a whole number, got %s", describe(n))
			return
		}
		neg, mag = m.Value < 0, uint64(math.Abs(m.Value))
	case *ast.StringNode:
		if m.Token != nil && m.Token.Type == token.StringType && plainInteger.MatchString(m.Value) {
			d.fail(n, at, "expected a smaller whole number, got %s", m.Value) // past 64 bits: the parser left it a string
			return
		}
		// 1e9: a float YAML reads and the parser leaves a string.
		if f, ok := plainFloat(m); ok && f == math.Trunc(f) && math.Abs(f) <= 1<<53 {
			neg, mag = f < 0, uint64(math.Abs(f))
			break
		}
		d.fail(n, at, "expected a whole number, got %s", describe(n))
		return
	default:
		d.fail(n, at, "expected a whole number, got %s", describe(n))
		return
	}
	if v.Kind() == reflect.Uint64 {
		if neg && mag != 0 {
			d.fail(n, at, "expected a whole number of at least 0, got %s", describe(n))
			return
		}
		v.SetUint(mag)
		return
	}
	limit := uint64(math.MaxInt64)
	if neg {
		limit++
	}
	if mag > limit {
		d.fail(n, at, "expected a smaller whole number, got %s", describe(n))
		return
	}
	x := int64(mag)
	if neg {
		x = -int64(mag-1) - 1
	}
	if v.OverflowInt(x) {
		d.fail(n, at, "expected a smaller whole number, got %s", describe(n))
		return
	}
	v.SetInt(x)
}

func (d *decoder) duration(n ast.Node, v reflect.Value, at string) {
	if m, ok := n.(*ast.IntegerNode); ok && integerFloat(m) == 0 {
		v.SetInt(0)
		return
	}
	switch n.(type) {
	case *ast.IntegerNode, *ast.FloatNode:
		d.fail(n, at, "expected a duration like 30s, 2m or 250ms, got %s (a number needs a unit)", describe(n))
		return
	}
	text, ok := scalarText(n)
	if !ok {
		d.fail(n, at, "expected a duration like 30s, 2m or 250ms, got %s", describe(n))
		return
	}
	dur, err := ParseDuration(text)
	if err != nil {
		d.fail(n, at, "%v", err)
		return
	}
	v.SetInt(int64(dur))
}

// entry is one key and value of a mapping.
type entry struct{ key, value ast.Node }

// entries lists a mapping's keys and values, the merge keys' (<<) first,
// a mapping's own keys winning over merged ones.
func (d *decoder) entries(n ast.Node, at string, depth int) ([]entry, bool) {
	var values []*ast.MappingValueNode
	switch m := n.(type) {
	case *ast.MappingNode:
		values = m.Values
	case *ast.MappingValueNode:
		values = []*ast.MappingValueNode{m}
	default:
		return nil, false
	}
	var own, merged []entry
	ownKeys := map[string]bool{}
	for _, mv := range values {
		if mv == nil || mv.Key == nil {
			continue
		}
		if mv.Key.IsMergeKey() {
			merged = append(merged, d.mergeSources(mv.Value, at, depth+1)...)
			continue
		}
		own = append(own, entry{mv.Key, mv.Value})
		if k, ok := keyName(mv.Key); ok {
			ownKeys[k] = true
		}
	}
	var out []entry
	seen := map[string]bool{}
	for _, e := range merged {
		k, _ := keyName(e.key)
		if ownKeys[k] || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, e)
	}
	return append(out, own...), true
}

// mergeSources returns the entries a merge key (<<) brings: those of a
// mapping, an alias of one, or a list of them (the first winning).
func (d *decoder) mergeSources(n ast.Node, at string, depth int) []entry {
	if n == nil || !d.spend(n, depth) {
		return nil
	}
	switch m := n.(type) {
	case *ast.AliasNode:
		var out []entry
		if a := d.alias(m, at); a != nil {
			d.within(a, func() { out = d.mergeSources(a.Value, at, depth+1) })
		}
		return out
	case *ast.AnchorNode:
		var out []entry
		d.within(m, func() { out = d.mergeSources(m.Value, at, depth+1) })
		return out
	case *ast.TagNode:
		return d.mergeSources(m.Value, at, depth+1)
	case *ast.SequenceNode:
		var out []entry
		for _, v := range m.Values {
			out = append(out, d.mergeSources(v, at, depth+1)...)
		}
		return out
	}
	es, ok := d.entries(n, at, depth+1)
	if !ok {
		d.report(n, "<<: expected a mapping or an alias of one to merge, got "+describe(n))
	}
	return es
}

// structure decodes a mapping into a document struct, reporting unknown
// keys with a suggestion among the keys valid there.
func (d *decoder) structure(n ast.Node, v reflect.Value, at string, depth int) {
	es, ok := d.entries(n, at, depth)
	if !ok {
		d.fail(n, at, "expected a mapping (key: value), got %s", describe(n))
		return
	}
	fields := formatFields(v.Type())
	for _, e := range es {
		key, ok := keyName(e.key)
		if !ok {
			d.report(e.key, "expected a key name, got "+describe(e.key))
			continue
		}
		i := slices.IndexFunc(fields, func(f formatField) bool { return f.key == key })
		if i < 0 {
			d.report(e.key, unknownKey(key, formatKeys(v.Type())))
			if at != "" {
				// Marked reported, so that a problem of the mapping it
				// leaves incomplete can be known for a consequence.
				pl := place{file: d.file, bad: true}
				pl.line, pl.col = nodePos(e.key)
				d.index[at+"."+key] = pl
			}
			continue
		}
		p := key
		if at != "" {
			p = at + "." + key
		}
		d.at(p, e.key, e.value)
		d.decode(e.value, v.Field(fields[i].index), p, depth+1)
	}
}

// unknownKey says that key is not valid where it is, suggesting the
// closest valid key or, when none is close, listing them.
func unknownKey(key string, valid []string) string {
	msg := fmt.Sprintf("unknown key %q", key)
	if s := didyoumean.Closest(key, valid); s != "" {
		return msg + fmt.Sprintf("; did you mean %q?", s)
	}
	return msg + "; expected one of " + strings.Join(valid, ", ")
}

func (d *decoder) list(n ast.Node, v reflect.Value, at string, depth int) {
	seq, ok := n.(*ast.SequenceNode)
	if !ok {
		d.fail(n, at, "expected a list, got %s", describe(n))
		return
	}
	if len(seq.Values) == 0 {
		return
	}
	out := reflect.MakeSlice(v.Type(), len(seq.Values), len(seq.Values))
	for i, item := range seq.Values {
		p := at + "[" + strconv.Itoa(i) + "]"
		d.at(p, nil, item)
		d.decode(item, out.Index(i), p, depth+1)
	}
	v.Set(out)
}

// mapping decodes a mapping into a map (of strings, or of parameter
// values); an empty one leaves a field nil unless keepEmpty.
func (d *decoder) mapping(n ast.Node, v reflect.Value, at string, depth int, keepEmpty bool) {
	es, ok := d.entries(n, at, depth)
	if !ok {
		d.fail(n, at, "expected a mapping (name: value), got %s", describe(n))
		return
	}
	if len(es) == 0 && !keepEmpty {
		return
	}
	t := v.Type()
	if v.Kind() == reflect.Interface {
		t = reflect.TypeFor[map[string]any]()
	}
	out := reflect.MakeMapWithSize(t, len(es))
	for _, e := range es {
		key, ok := keyName(e.key)
		if !ok {
			d.report(e.key, "expected a name, got "+describe(e.key))
			continue
		}
		p := at + "." + key
		d.at(p, e.key, e.value)
		ev := reflect.New(t.Elem()).Elem()
		d.decode(e.value, ev, p, depth+1)
		out.SetMapIndex(reflect.ValueOf(key).Convert(t.Key()), ev)
	}
	v.Set(out)
}

// anyValue decodes a parameter's value: a string, a whole number (int64,
// or uint64 past its range), a float64, a bool, a list or a mapping.
func (d *decoder) anyValue(n ast.Node, v reflect.Value, at string, depth int) {
	switch m := n.(type) {
	case *ast.StringNode:
		if f, ok := plainFloat(m); ok {
			v.Set(reflect.ValueOf(f))
			return
		}
		v.Set(reflect.ValueOf(m.Value))
	case *ast.LiteralNode:
		s, _ := scalarText(m)
		v.Set(reflect.ValueOf(s))
	case *ast.IntegerNode:
		switch x := m.Value.(type) {
		case int64:
			v.Set(reflect.ValueOf(x))
		case uint64:
			if x <= math.MaxInt64 {
				v.Set(reflect.ValueOf(int64(x)))
			} else {
				v.Set(reflect.ValueOf(x))
			}
		}
	case *ast.FloatNode:
		v.Set(reflect.ValueOf(m.Value))
	case *ast.InfinityNode:
		f := math.Inf(1)
		if tk := m.GetToken(); tk != nil && strings.HasPrefix(tk.Value, "-") {
			f = math.Inf(-1)
		}
		v.Set(reflect.ValueOf(f))
	case *ast.NanNode:
		v.Set(reflect.ValueOf(math.NaN()))
	case *ast.BoolNode:
		v.Set(reflect.ValueOf(m.Value))
	case *ast.SequenceNode:
		items := make([]any, len(m.Values))
		for i, item := range m.Values {
			p := at + "[" + strconv.Itoa(i) + "]"
			d.at(p, nil, item)
			d.decode(item, reflect.ValueOf(&items[i]).Elem(), p, depth+1)
		}
		v.Set(reflect.ValueOf(items))
	case *ast.MappingNode, *ast.MappingValueNode:
		d.mapping(n, v, at, depth, true)
	default:
		d.fail(n, at, "expected a value, got %s", describe(n))
	}
}

// checkHeader checks apiVersion and kind.
func (d *decoder) checkHeader(doc *Document) {
	if pl, ok := d.index["apiVersion"]; !ok {
		d.missing("apiVersion", "missing apiVersion; expected apiVersion: "+APIVersion)
	} else if !pl.bad && doc.APIVersion != APIVersion {
		d.failAt("apiVersion", fmt.Sprintf("expected %s, got %q", APIVersion, doc.APIVersion))
	}
	kinds := []string{KindScenario, KindFragment}
	if pl, ok := d.index["kind"]; !ok {
		d.missing("kind", "missing kind; expected kind: Scenario or kind: Fragment")
	} else if !pl.bad && !slices.Contains(kinds, doc.Kind) {
		msg := fmt.Sprintf("expected Scenario or Fragment, got %q", doc.Kind)
		if s := didyoumean.Closest(doc.Kind, kinds); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		}
		d.failAt("kind", msg)
	}
}

// missing reports a missing key at the document's start.
func (d *decoder) missing(key, msg string) {
	pl := d.index[""]
	d.diags = append(d.diags, Diagnostic{File: d.file, Line: pl.line, Col: pl.col, Message: msg})
	pl.bad = true
	d.index[key] = pl
}

// failAt reports a problem with the value at path.
func (d *decoder) failAt(at, msg string) {
	pl := d.index[at]
	d.diags = append(d.diags, Diagnostic{File: d.file, Line: pl.line, Col: pl.col, Message: at + ": " + msg})
	pl.bad = true
	d.index[at] = pl
}

// keyName returns a mapping key's name.
func keyName(k ast.Node) (string, bool) {
	if m, ok := k.(*ast.MappingKeyNode); ok {
		k = m.Value
	}
	if m, ok := k.(*ast.NullNode); ok && m != nil {
		if m.Token != nil && m.Token.Value != "" {
			return m.Token.Value, true
		}
		return "null", true
	}
	return scalarText(k)
}

// scalarText returns a scalar's text: a string's value, a number's or a
// boolean's as written.
func scalarText(n ast.Node) (string, bool) {
	switch m := n.(type) {
	case *ast.StringNode:
		return m.Value, true
	case *ast.LiteralNode:
		if m.Value == nil {
			return "", true
		}
		return m.Value.Value, true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		if tk := n.GetToken(); tk != nil {
			return tk.Value, true
		}
	}
	return "", false
}

func isImplicitNull(n ast.Node) bool {
	m, ok := n.(*ast.NullNode)
	return ok && m.Token != nil && m.Token.Type == token.ImplicitNullType
}

// describe names a value in a message: a string quoted, a number as
// written, "a list", "a mapping".
func describe(n ast.Node) string {
	switch m := n.(type) {
	case nil:
		return "nothing"
	case *ast.StringNode, *ast.LiteralNode:
		s, _ := scalarText(n)
		if utf8.RuneCountInString(s) > 60 {
			s = string([]rune(s)[:60]) + "…"
		}
		return strconv.Quote(s)
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.NullNode:
		return "null"
	case *ast.AnchorNode:
		return describe(m.Value)
	case *ast.TagNode:
		return describe(m.Value)
	case *ast.AliasNode:
		return "an alias"
	}
	if tk := n.GetToken(); tk != nil {
		return tk.Value
	}
	return "a value"
}

// nodePos returns where a node starts: a block mapping at its first key.
func nodePos(n ast.Node) (int, int) {
	switch m := n.(type) {
	case nil:
		return 1, 1
	case *ast.MappingNode:
		if !m.IsFlowStyle && len(m.Values) > 0 && m.Values[0] != nil && m.Values[0].Key != nil {
			return nodePos(m.Values[0].Key)
		}
	case *ast.MappingValueNode:
		if m.Key != nil {
			return nodePos(m.Key)
		}
	}
	if tk := n.GetToken(); tk != nil && tk.Position != nil && tk.Position.Line > 0 {
		return tk.Position.Line, max(tk.Position.Column, 1)
	}
	return 1, 1
}

func offset(n ast.Node) int {
	if tk := n.GetToken(); tk != nil && tk.Position != nil {
		return tk.Position.Offset
	}
	return 0
}

// ---- marshalling ----

var timeDurationType = reflect.TypeFor[time.Duration]()

// yamlValue converts a document's value to what Marshal writes: structs to
// ordered mappings without their empty keys, maps to mappings with sorted
// keys, durations and rates to their text.
func yamlValue(v reflect.Value) any {
	switch v.Type() {
	case docDurationType:
		return Duration(v.Int()).String()
	case timeDurationType:
		return time.Duration(v.Int()).String()
	case docRateType:
		return Rate(v.Float()).String()
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return yamlValue(v.Elem())
	case reflect.Struct:
		out := yaml.MapSlice{}
		for _, f := range formatFields(v.Type()) {
			fv := v.Field(f.index)
			if isEmpty(fv) {
				continue
			}
			out = append(out, yaml.MapItem{Key: f.key, Value: yamlValue(fv)})
		}
		return out
	case reflect.Slice, reflect.Array:
		out := make([]any, v.Len())
		for i := range out {
			out[i] = yamlValue(v.Index(i))
		}
		return out
	case reflect.Map:
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int {
			return strings.Compare(fmt.Sprint(a.Interface()), fmt.Sprint(b.Interface()))
		})
		out := yaml.MapSlice{}
		for _, k := range keys {
			out = append(out, yaml.MapItem{Key: fmt.Sprint(k.Interface()), Value: yamlValue(v.MapIndex(k))})
		}
		return out
	case reflect.String:
		return yamlString(v.String())
	case reflect.Bool:
		return v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return v.Uint()
	case reflect.Float32, reflect.Float64:
		return v.Float()
	}
	return v.Interface()
}

// quotedString is a string Marshal writes double-quoted: the YAML library
// writes some strings plain that read back as something else (".inf", a
// leading tab).
type quotedString string

// MarshalYAML writes the string double-quoted, with Go's escapes, which
// are YAML's too.
func (q quotedString) MarshalYAML() ([]byte, error) { return []byte(strconv.Quote(string(q))), nil }

// plainSafe matches the strings Marshal writes plain: no YAML indicator
// where it would matter, no colon or hash at all, one line. The YAML
// library writes some strings plain that read back as something else ("?
// A", ".inf", a leading tab), so everything else is quoted.
var plainSafe = regexp.MustCompile(`^[\p{L}\p{N}_/(][\p{L}\p{N} _./()+=@,'!?;*&%$<>~^-]*$`)

// yamlString returns s, or s to be written double-quoted when it is not
// plainly safe.
func yamlString(s string) any {
	if !plainSafe.MatchString(s) || strings.HasSuffix(s, " ") || yamlFloat.MatchString(s) {
		return quotedString(s)
	}
	return s
}

// isEmpty reports whether Marshal leaves a field out.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		return v.IsNil()
	case reflect.Slice, reflect.Map:
		return v.Len() == 0
	case reflect.Struct:
		for _, f := range formatFields(v.Type()) {
			if !isEmpty(v.Field(f.index)) {
				return false
			}
		}
		return true
	}
	return v.IsZero()
}
