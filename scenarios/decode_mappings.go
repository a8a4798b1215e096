package scenarios

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/faultline/faultline/internal/didyoumean"

	"github.com/goccy/go-yaml/ast"
)

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
