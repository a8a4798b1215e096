package scenarios

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// WithExternal returns l drilled as a black box: its system.external
// replaced (not merged) by the one the file at path gives, and the
// effective scenario checked again as the loader checks one, so that a
// part a black-box drill cannot do (a step, a store fault, a task without
// a dependency, a key that configures the reference worker) is refused,
// naming the part and why. `faultline drill SCENARIO --external FILE` uses
// it.
//
// The file is a Fragment (apiVersion faultline/v1, kind: Fragment) that
// holds system.external and nothing else (metadata aside), or a bare
// mapping of system.external's keys (command, inject, dlq, …). The
// relative paths of its commands are relative to the file's folder, and
// checked as the loader checks them (a program there and executable, a
// bare name on PATH, a folder that is one).
//
// Every problem is in the *LoadError returned, at its file:line:col: in
// the file at path for the black box's own keys, in l's files for the
// rest (when l came from Load, LoadFS or LoadBuiltin).
//
// The Loaded returned is new (l is not changed) and keeps l's Path. Its
// Document holds the file's system.external, its relative command paths
// rebased on l's file's folder as an included fragment's are (on the
// working directory when l was not loaded from the operating system's
// files, e.g. a built-in); Scenario is the conversion of that document,
// and Hash its hash, so that reports name the scenario actually drilled.
func WithExternal(l *Loaded, path string) (*Loaded, error) {
	if l == nil || l.Document == nil {
		return nil, errors.New("external system: no scenario to drill")
	}
	lim := l.lim.WithDefaults()
	frag, diags := readExternal(path, lim)
	if len(diags) > 0 {
		return nil, &LoadError{Diagnostics: sortDiagnostics(diags, nil)}
	}
	ext := frag.doc.System.External

	// Converted as written in path, its commands resolved from path's
	// folder; the rest of the document names no file but the rules file,
	// which a black box refuses anyway.
	doc := *l.Document
	doc.System.External = ext
	eff := &parsed{doc: &doc, index: externalIndex(l, frag)}
	ld := &loader{files: osFiles{}, rank: externalRank(path, l.Path, eff.index), lim: lim}
	sc, problems := convert(&doc, nil, loaderPrograms{osFiles{}, path}, lim.Run)
	ld.problems(eff, sc, problems)
	if len(ld.diags) > 0 {
		return nil, ld.err()
	}

	rebaseCommands(ext, func(ref string) string { return rebaseExternal(l, path, ref) })
	out, err := Marshal(&doc)
	if err != nil {
		return nil, fmt.Errorf("external system %s: %w", path, err)
	}
	sum := sha256.Sum256(out)
	return &Loaded{Path: l.Path, Document: &doc, Scenario: sc, Hash: "sha256:" + hex.EncodeToString(sum[:]),
		index: eff.index, files: l.files, lim: l.lim}, nil
}

// readExternal reads the file of a black-box system: a Fragment holding
// only system.external, or a bare mapping of its keys.
func readExternal(path string, lim Limits) (*parsed, []Diagnostic) {
	data, err := osFiles{}.read(path, lim.MaxFileSize, false)
	if err != nil {
		return nil, []Diagnostic{{File: path, Message: "cannot read the file: " + readFailure(err)}}
	}
	if body := bareExternal(data, lim.MaxDepth); body != nil {
		return decodeExternal(path, body, lim.MaxDepth)
	}
	p := parseDocument(path, data, lim.MaxDepth)
	if p.doc == nil || len(p.diags) > 0 {
		return nil, p.diags
	}
	if diags := onlyExternal(path, p); len(diags) > 0 {
		return nil, diags
	}
	return p, nil
}

// onlyExternal refuses what a Fragment given to --external holds beside
// system.external: the scenario gives the rest.
func onlyExternal(path string, p *parsed) []Diagnostic {
	var diags []Diagnostic
	add := func(at place, msg string) {
		diags = append(diags, Diagnostic{File: path, Line: at.line, Col: at.col, Message: msg})
	}
	atKey := func(at place) place { // a key not wanted here: at the key
		if at.keyLine > 0 {
			at.line, at.col = at.keyLine, at.keyCol
		}
		return at
	}
	if p.doc.Kind != KindFragment {
		add(p.index["kind"], fmt.Sprintf("kind: expected %s: an external system's file is a Fragment holding only system.external (or a bare mapping of its keys: command, inject, dlq, …), not a %s", KindFragment, p.doc.Kind))
		return diags
	}
	var keys []string
	for k := range p.index {
		if k == "" || strings.Contains(k, "[") {
			continue
		}
		top, rest, nested := strings.Cut(k, ".")
		switch {
		case !nested && !slices.Contains([]string{"apiVersion", "kind", "metadata", "system"}, top):
			keys = append(keys, k)
		case nested && top == "system" && !strings.Contains(rest, ".") && rest != "external":
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		add(atKey(p.index[k]), k+": an external system's file gives system.external and nothing else (the scenario gives the rest): remove it")
	}
	if p.doc.System.External == nil {
		at, ok := p.index["system"]
		if !ok {
			at = p.index[""]
		}
		add(atKey(at), "expected system.external: the black-box system to drill (command or running, inject, dlq)")
	}
	return diags
}

// bareExternal returns the body of a document that is a bare mapping of
// system.external's keys (no apiVersion, kind or system key), nil for
// anything else (which parseDocument reads, and reports on).
func bareExternal(data []byte, maxDepth int) ast.Node {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	if _, _, deep, big := scanText(data, maxDepth, scanNodes); deep || big {
		return nil
	}
	file, err := parseYAML(data)
	if err != nil {
		return nil
	}
	var bodies []ast.Node
	for _, doc := range file.Docs {
		if doc != nil && doc.Body != nil {
			bodies = append(bodies, doc.Body)
		}
	}
	if len(bodies) != 1 {
		return nil
	}
	var values []*ast.MappingValueNode
	switch m := bodies[0].(type) {
	case *ast.MappingNode:
		values = m.Values
	case *ast.MappingValueNode:
		values = []*ast.MappingValueNode{m}
	default:
		return nil
	}
	for _, mv := range values {
		if mv == nil || mv.Key == nil {
			continue
		}
		if k, ok := keyName(mv.Key); ok && (k == "apiVersion" || k == "kind" || k == "system") {
			return nil
		}
	}
	return bodies[0]
}

// decodeExternal decodes a bare mapping of system.external's keys, its
// values placed at their paths under system.external.
func decodeExternal(path string, body ast.Node, maxDepth int) (*parsed, []Diagnostic) {
	p := &parsed{index: map[string]place{"": {file: path, line: 1, col: 1}}}
	d := &decoder{file: path, index: p.index, budget: maxValues, maxDepth: maxDepth, anchors: map[string][]*ast.AnchorNode{}, active: map[*ast.AnchorNode]bool{}}
	d.collectAnchors(body, 0)
	d.at("system.external", nil, body)
	var e External
	d.decode(body, reflect.ValueOf(&e).Elem(), "system.external", 0)
	if len(d.diags) > 0 {
		return nil, d.diags
	}
	p.doc = &Document{APIVersion: APIVersion, Kind: KindFragment, System: System{External: &e}}
	return p, nil
}

// externalIndex places the values of l's document with frag's
// system.external in place of l's own.
func externalIndex(l *Loaded, frag *parsed) map[string]place {
	idx := map[string]place{}
	for k, pl := range l.index {
		if !underPath(k, "system.external") {
			idx[k] = pl
		}
	}
	if _, ok := idx[""]; !ok {
		idx[""] = place{file: l.Path} // no positions: the file as a whole
	}
	for k, pl := range frag.index {
		if underPath(k, "system.external") {
			idx[k] = pl
		}
	}
	return idx
}

// underPath reports whether path k is p or a value inside it.
func underPath(k, p string) bool {
	rest, ok := strings.CutPrefix(k, p)
	return ok && (rest == "" || rest[0] == '.' || rest[0] == '[')
}

// externalRank orders diagnostics: the external system's file first, the
// scenario's, then the fragments it included, by name.
func externalRank(path, scenario string, idx map[string]place) map[string]int {
	rank := map[string]int{path: 0}
	if _, ok := rank[scenario]; !ok {
		rank[scenario] = 1
	}
	var others []string
	for _, pl := range idx {
		if _, ok := rank[pl.file]; !ok && !slices.Contains(others, pl.file) {
			others = append(others, pl.file)
		}
	}
	slices.Sort(others)
	for _, f := range others {
		rank[f] = len(rank)
	}
	return rank
}

// rebaseExternal rewrites ref, a relative path written in the external
// system's file at path, relative to l's file's folder (as an included
// fragment's paths are) or, when l was not loaded from the operating
// system's files, relative to the working directory.
func rebaseExternal(l *Loaded, path, ref string) string {
	r := filepath.FromSlash(ref)
	if filepath.IsAbs(r) {
		return ref
	}
	target := filepath.Join(filepath.Dir(path), r)
	if _, ok := l.files.(osFiles); ok {
		base, err1 := filepath.Abs(filepath.Dir(l.Path))
		abs, err2 := filepath.Abs(target)
		if err1 == nil && err2 == nil {
			if rel, err := filepath.Rel(base, abs); err == nil {
				return filepath.ToSlash(rel)
			}
		}
	}
	return filepath.ToSlash(target)
}
