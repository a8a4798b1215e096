package scenarios

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"strings"
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
