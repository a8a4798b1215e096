package scenarios

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

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
