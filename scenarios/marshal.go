package scenarios

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
)

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
