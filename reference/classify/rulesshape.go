package classify

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"

	"github.com/faultline/faultline/internal/didyoumean"
)

// A rule file's shape is checked on the YAML tree before anything is
// decoded, so that every key of the wrong kind — a list where a mapping
// belongs, "maybe" where true or false does — is reported in one pass, in
// plain words, with its position, instead of the first decoding error in
// the YAML library's words (Go type names and all).

// valueKind is what a key of a rule file holds.
type valueKind int

const (
	textValue     valueKind = iota // a string (a number is read as one)
	boolValue                      // true or false
	namesValue                     // a list of strings
	statusesValue                  // a list of statuses: numbers or strings
	verdictValue                   // a mapping: class, severity, source
	matchValue                     // a mapping of criteria
	rulesValue                     // a list of rules
	ruleValue                      // one rule
)

var (
	topShape     = map[string]valueKind{"defaults": boolValue, "fallback": verdictValue, "rules": rulesValue}
	verdictShape = map[string]valueKind{"class": textValue, "severity": textValue, "source": textValue}
	ruleShape    = map[string]valueKind{"name": textValue, "dependency": textValue, "task": textValue, "match": matchValue,
		"class": textValue, "severity": textValue, "source": textValue}
	matchShape = map[string]valueKind{"is": namesValue, "kind": namesValue, "declineCode": namesValue, "status": statusesValue,
		"timeout": boolValue, "temporary": boolValue, "retryAfter": boolValue, "any": boolValue, "shuttingDown": boolValue,
		"message": textValue}
)

// shapeChecker walks a rule file's tree and records every value of the
// wrong kind and every unknown key.
type shapeChecker struct {
	file string
	errs []error
	// badRules are the indexes of the rules whose shape is wrong: only
	// the others are decoded and checked further.
	badRules map[int]bool
	// badTop are the top-level keys whose shape is wrong.
	badTop map[string]bool
	// covered are the fields ("rules[2].name") already reported, as a
	// value of the wrong shape or as a misspelt key: "missing name" would
	// say the same thing again.
	covered map[string]bool
}

func newShapeChecker(file string) *shapeChecker {
	return &shapeChecker{file: file, badRules: map[int]bool{}, badTop: map[string]bool{}, covered: map[string]bool{}}
}

func (c *shapeChecker) fail(n ast.Node, field, msg, hint string) {
	e := &RuleError{File: c.file, Field: field, Msg: msg, Hint: hint, Line: 1, Col: 1}
	if tok := n.GetToken(); tok != nil && tok.Position != nil {
		e.Line, e.Col = tok.Position.Line, tok.Position.Column
	}
	c.errs = append(c.errs, e)
}

// check checks the document's body; it reports whether its shape is right.
func (c *shapeChecker) check(body ast.Node) bool {
	if body == nil {
		return true
	}
	pairs, ok := mappingPairs(body)
	if !ok {
		c.fail(body, "", "expected a mapping with the keys defaults, fallback and rules, got "+describe(body), "")
		return false
	}
	good := true
	for _, kv := range pairs {
		key := keyOf(kv)
		kind, known := topShape[key]
		if !known {
			c.unknown(kv, "", key)
			good = false
			continue
		}
		if kind == rulesValue {
			if !c.rules(kv.Value) {
				good = false
			}
			continue
		}
		if !c.value(kv.Value, key, kind) {
			c.badTop[key] = true
			good = false
		}
	}
	return good
}

// rules checks the list of rules, rule by rule.
func (c *shapeChecker) rules(n ast.Node) bool {
	n = unwrap(n)
	if _, null := n.(*ast.NullNode); null {
		return true
	}
	seq, ok := n.(*ast.SequenceNode)
	if !ok {
		c.fail(n, "rules", "expected a list of rules (each item starting with \"- name:\"), got "+describe(n), "")
		c.badTop["rules"] = true
		return false
	}
	good := true
	for i, item := range seq.Values {
		if !c.value(item, fmt.Sprintf("rules[%d]", i), ruleValue) {
			c.badRules[i] = true
			good = false
		}
	}
	return good
}

// value checks that n is of kind k; field names it in messages.
func (c *shapeChecker) value(n ast.Node, field string, k valueKind) bool {
	n = unwrap(n)
	if _, null := n.(*ast.NullNode); null {
		return true // an empty value: what is missing is said later
	}
	switch k {
	case textValue:
		if isScalar(n) {
			return true
		}
		c.fail(n, field, "expected a single value, got "+describe(n), "")
	case boolValue:
		if _, ok := n.(*ast.BoolNode); ok {
			return true
		}
		c.fail(n, field, "expected true or false, got "+describe(n), "")
	case namesValue, statusesValue:
		seq, ok := n.(*ast.SequenceNode)
		if !ok {
			hint := "write a list, e.g. [a, b], even for one"
			if k == statusesValue {
				hint = "write a list, e.g. [503, 500-599, 5xx], even for one"
			}
			c.fail(n, field, "expected a list, got "+describe(n), hint)
			return false
		}
		good := true
		for i, item := range seq.Values {
			if item = unwrap(item); !isScalar(item) {
				c.fail(item, fmt.Sprintf("%s[%d]", field, i), "expected a single value, got "+describe(item), "")
				good = false
			}
		}
		return good
	case verdictValue, matchValue, ruleValue:
		shape, what := verdictShape, "a mapping with class, severity and source"
		switch k {
		case matchValue:
			shape, what = matchShape, "a mapping of criteria (is, kind, status, timeout, temporary, declineCode, retryAfter, message, any, shuttingDown)"
		case ruleValue:
			shape, what = ruleShape, "a rule: a mapping with name, match, class, severity and source"
		}
		pairs, ok := mappingPairs(n)
		if !ok {
			c.fail(n, field, "expected "+what+", got "+describe(n), "")
			return false
		}
		good := true
		for _, kv := range pairs {
			key := keyOf(kv)
			kind, known := shape[key]
			if !known {
				if s := c.unknown(kv, field, key); s != "" {
					c.covered[field+"."+s] = true
				}
				good = false
				continue
			}
			if !c.value(kv.Value, field+"."+key, kind) {
				c.covered[field+"."+key] = true
				good = false
			}
		}
		return good
	}
	return false
}

// unknown reports an unknown key of the mapping at parent ("" for the
// top level), with its path ("rules[2].bogus") and a suggestion, and
// returns the suggestion.
func (c *shapeChecker) unknown(kv *ast.MappingValueNode, parent, key string) string {
	hint := ""
	s := didyoumean.Closest(key, ruleFileKeys)
	if s != "" {
		hint = fmt.Sprintf("did you mean %q?", s)
	}
	field := key
	if parent != "" {
		field = parent + "." + key
	}
	c.fail(kv.Key, field, fmt.Sprintf("unknown key %q", key), hint)
	return s
}

// redundant reports whether err says a field is missing that the shape
// check reported already.
func (c *shapeChecker) redundant(err error) bool {
	var re *RuleError
	if !errors.As(err, &re) {
		return false
	}
	what, missing := strings.CutPrefix(re.Msg, "missing ")
	return missing && c.covered[re.Field+"."+what]
}

// mappingPairs returns the key/value pairs of a mapping node (a one-key
// mapping is a lone MappingValueNode in the tree).
func mappingPairs(n ast.Node) ([]*ast.MappingValueNode, bool) {
	switch m := unwrap(n).(type) {
	case *ast.MappingNode:
		return m.Values, true
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{m}, true
	}
	return nil, false
}

// keyOf is a pair's key as written, without quotes.
func keyOf(kv *ast.MappingValueNode) string {
	if tok := kv.Key.GetToken(); tok != nil {
		return tok.Value
	}
	return kv.Key.String()
}

// unwrap looks through anchors and tags to the value they mark.
func unwrap(n ast.Node) ast.Node {
	for {
		switch x := n.(type) {
		case *ast.AnchorNode:
			n = x.Value
		case *ast.TagNode:
			n = x.Value
		default:
			return n
		}
	}
}

func isScalar(n ast.Node) bool {
	switch n.(type) {
	case *ast.StringNode, *ast.LiteralNode, *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode,
		*ast.InfinityNode, *ast.NanNode, *ast.AliasNode:
		return true
	}
	return false
}

// describe names what a node holds, for "expected X, got Y".
func describe(n ast.Node) string {
	switch x := unwrap(n).(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.NullNode:
		return "nothing"
	case *ast.BoolNode:
		return strconv.FormatBool(x.Value)
	case *ast.IntegerNode, *ast.FloatNode:
		return "the number " + x.GetToken().Value
	case *ast.StringNode:
		return strconv.Quote(x.Value)
	case *ast.LiteralNode:
		return "a block of text"
	case *ast.AliasNode:
		return "an alias"
	}
	return "a value of another kind"
}

// sortedErrors joins errs ordered by position, so that a file's problems
// read from top to bottom.
func sortedErrors(errs []error) error {
	pos := func(e error) (int, int) {
		var re *RuleError
		if errors.As(e, &re) {
			return re.Line, re.Col
		}
		return 0, 0
	}
	slices.SortStableFunc(errs, func(a, b error) int {
		la, ca := pos(a)
		lb, cb := pos(b)
		return cmp.Or(cmp.Compare(la, lb), cmp.Compare(ca, cb))
	})
	return errors.Join(errs...)
}

// plainYAMLMessage rewords a decoding message of the YAML library that
// names Go types ("cannot unmarshal []interface {} into Go struct field
// rulesFile.Rules of type string"): a user never wrote Go.
func plainYAMLMessage(msg string) string {
	if strings.Contains(msg, "Go struct field") || strings.Contains(msg, "interface {}") || strings.Contains(msg, "unmarshal") {
		return "a value of the wrong kind for this key"
	}
	return msg
}

// decodeWellShaped decodes the parts of a file whose shape is right (after
// check found some that are not), and returns the indexes in the file of
// the rules it decoded.
func (c *shapeChecker) decodeWellShaped(body ast.Node) (rulesFile, []int) {
	var raw rulesFile
	var index []int
	pairs, _ := mappingPairs(body)
	decode := func(n ast.Node, v any) bool {
		if err := yaml.NodeToValue(n, v, yaml.DisallowUnknownField()); err != nil {
			c.errs = append(c.errs, yamlError(c.file, err))
			return false
		}
		return true
	}
	for _, kv := range pairs {
		key := keyOf(kv)
		if c.badTop[key] {
			continue
		}
		switch key {
		case "defaults":
			var b *bool
			if decode(kv.Value, &b) {
				raw.Defaults = b
			}
		case "fallback":
			var v *verdictYAML
			if decode(kv.Value, &v) {
				raw.Fallback = v
			}
		case "rules":
			seq, ok := unwrap(kv.Value).(*ast.SequenceNode)
			if !ok {
				continue
			}
			for i, item := range seq.Values {
				var r ruleYAML
				switch {
				case !c.badRules[i]:
					if !decode(item, &r) {
						continue
					}
				default:
					var ok bool
					if r, ok = c.decodeRule(item); !ok {
						continue
					}
				}
				raw.Rules = append(raw.Rules, r)
				index = append(index, i)
			}
		}
	}
	return raw, index
}

// decodeRule decodes the keys of a rule whose shape is partly wrong that
// have the right shape, so that what is wrong with them is reported too.
// ok is false if the item is not a mapping at all.
func (c *shapeChecker) decodeRule(item ast.Node) (r ruleYAML, ok bool) {
	pairs, ok := mappingPairs(item)
	if !ok {
		return r, false
	}
	quiet := newShapeChecker(c.file) // checks a key again, reporting nothing
	fits := func(n ast.Node, k valueKind) bool { return quiet.value(n, "", k) }
	into := func(n ast.Node, v any) {
		if err := yaml.NodeToValue(n, v); err != nil {
			c.errs = append(c.errs, yamlError(c.file, err))
		}
	}
	fields := map[string]any{"name": &r.Name, "dependency": &r.Dependency, "task": &r.Task,
		"class": &r.Class, "severity": &r.Severity, "source": &r.Source}
	criteria := map[string]any{"is": &r.Match.Is, "kind": &r.Match.Kind, "declineCode": &r.Match.DeclineCode,
		"status": &r.Match.Status, "timeout": &r.Match.Timeout, "temporary": &r.Match.Temporary,
		"retryAfter": &r.Match.RetryAfter, "any": &r.Match.Any, "shuttingDown": &r.Match.ShuttingDown, "message": &r.Match.Message}
	matchSeen := false
	for _, kv := range pairs {
		key := keyOf(kv)
		if key == "match" {
			matchSeen = true
			mp, isMap := mappingPairs(kv.Value)
			if !isMap {
				continue
			}
			for _, m := range mp {
				if dst, known := criteria[keyOf(m)]; known && fits(m.Value, matchShape[keyOf(m)]) {
					into(m.Value, dst)
				}
			}
			continue
		}
		if dst, known := fields[key]; known && fits(kv.Value, ruleShape[key]) {
			into(kv.Value, dst)
		}
	}
	if matchSeen && r.Match.empty() && !r.Match.Any {
		// The match was there but none of it could be read: its problems
		// are reported already; "a rule needs a match" would be noise.
		r.Match.Any = true
	}
	return r, true
}
