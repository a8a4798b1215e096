package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// ---- decoding ----

// Limits that keep hostile input from exhausting the loader.
const (
	// maxValues bounds the values one document decodes to, aliases
	// counted each time they are used ("billion laughs").
	maxValues = 100_000
)

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
