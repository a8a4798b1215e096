package reports

import (
	"reflect"

	"github.com/faultline/faultline/reference/redact"
)

// Redact returns a copy of r in which every string that can carry a secret
// has passed the default redactor (reference/redact): the scenario's
// description, the DLQ entries' errors and reasons, violation messages and
// trails, expectation texts, alert summaries, step details, fault names and
// targets, the reproduce command, map keys, and the effective configuration
// (sensitive keys masked whole, as redact.Redactor.Fields does). Every
// writer of this package (WriteJSON, WriteHTML, WriteJUnit, WriteMarkdown,
// WriteText) calls it first, so no format leaves the process with a bearer
// token, a webhook URL, a password or a card number in it.
//
// Redact walks the model by reflection, so a field added to Result later is
// covered without a change here. Integers, and fields that are identifiers
// computed by faultline (the scenario hash, the tool version, verdicts), are
// kept as they are. r itself is never changed: a Result is stored data (the
// shrinker compares it), and only what is written is masked. Redact is
// idempotent and deterministic; a nil r gives nil.
func Redact(r *Result) *Result {
	if r == nil {
		return nil
	}
	rd := redact.Default()
	out := redactValue(rd, reflect.ValueOf(*r), "").Interface().(Result)
	return &out
}

// keepFields are the Result fields whose strings are not free text: they are
// computed by faultline and masking a coincidental match (a hash that starts
// with a Luhn-valid run of digits) would only corrupt them.
var keepFields = map[string]bool{
	"ScenarioHash": true,
	"ToolVersion":  true,
}

var (
	stringType = reflect.TypeFor[string]()
	configType = reflect.TypeFor[map[string]any]()
)

// redactValue returns a redacted copy of v. Values that hold no string are
// returned as they are (shared, never changed).
func redactValue(rd *redact.Redactor, v reflect.Value, field string) reflect.Value {
	if !holdsString(v.Type()) || keepFields[field] {
		return v
	}
	switch v.Kind() {
	case reflect.String:
		s := v.String()
		if m := rd.String(s); m != s {
			n := reflect.New(v.Type()).Elem()
			n.SetString(m)
			return n
		}
		return v
	case reflect.Struct:
		n := reflect.New(v.Type()).Elem()
		n.Set(v)
		t := v.Type()
		for i := range t.NumField() {
			if !t.Field(i).IsExported() {
				continue
			}
			n.Field(i).Set(redactValue(rd, v.Field(i), t.Field(i).Name))
		}
		return n
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		n := reflect.New(v.Type().Elem())
		n.Elem().Set(redactValue(rd, v.Elem(), field))
		return n
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		n := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			n.Index(i).Set(redactValue(rd, v.Index(i), field))
		}
		return n
	case reflect.Array:
		n := reflect.New(v.Type()).Elem()
		for i := range v.Len() {
			n.Index(i).Set(redactValue(rd, v.Index(i), field))
		}
		return n
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		if v.Type() == configType {
			return reflect.ValueOf(rd.Fields(v.Interface().(map[string]any)))
		}
		n := reflect.MakeMapWithSize(v.Type(), v.Len())
		iter := v.MapRange()
		for iter.Next() {
			k := redactValue(rd, iter.Key(), field)
			val := redactValue(rd, iter.Value(), field)
			// Two keys masked alike (two receivers whose names hid a
			// token) are summed when they count, since neither may be
			// shown apart.
			if old := n.MapIndex(k); old.IsValid() {
				val = mergeCounts(old, val)
			}
			n.SetMapIndex(k, val)
		}
		return n
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		inner := redactValue(rd, v.Elem(), field)
		n := reflect.New(v.Type()).Elem()
		n.Set(inner)
		return n
	}
	return v
}

// mergeCounts adds two integer counts; anything else keeps the later value.
func mergeCounts(a, b reflect.Value) reflect.Value {
	switch a.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n := reflect.New(a.Type()).Elem()
		n.SetInt(a.Int() + b.Int())
		return n
	}
	return b
}

// holdsString reports whether a value of type t can contain a string.
func holdsString(t reflect.Type) bool {
	return holds(t, map[reflect.Type]bool{})
}

func holds(t reflect.Type, seen map[reflect.Type]bool) bool {
	if t.Kind() == reflect.String || t == stringType {
		return true
	}
	if seen[t] {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return holds(t.Elem(), seen)
	case reflect.Map:
		return holds(t.Key(), seen) || holds(t.Elem(), seen)
	case reflect.Interface:
		return true
	case reflect.Struct:
		for i := range t.NumField() {
			if t.Field(i).IsExported() && holds(t.Field(i).Type, seen) {
				return true
			}
		}
	}
	return false
}
