package scenarios

import (
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/faultline/faultline/reference/classify"
)

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
