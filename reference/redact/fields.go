package redact

import (
	"encoding"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
)

// Fields returns a deep copy of m, safe to send out of the process:
//
//   - the value of a sensitive key (see Config.Keys) becomes the mask, or
//     "Bearer [REDACTED]" for an Authorization value with a known scheme;
//     nil and "" are kept, since they hide nothing and an empty secret is
//     often the bug being reported;
//   - every other string goes through String;
//   - a number that is a card number (13 to 19 digits passing the Luhn
//     check, such as a JSON-decoded 4242424242424242) becomes the card mask;
//   - map[string]any, []any, []string, map[string]string,
//     map[string][]string, http.Header and url.Values are copied, keeping
//     their types (and nil staying nil), and redacted recursively;
//   - any other value is rendered as JSON-like data would be: an error by
//     its message, a value with MarshalText or String by that text (then
//     String), other maps, slices, arrays and structs (exported fields, by
//     name) as map[string]any or []any, redacted recursively.
//
// Values nested more than MaxDepth levels deep become the mask. Fields never
// mutates m and never panics; it returns nil for a nil m.
func (r *Redactor) Fields(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	return r.object(m, 0)
}

func (r *Redactor) object(m map[string]any, depth int) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = r.field(k, v, depth+1)
	}
	return out
}

// field redacts the value v of key k.
func (r *Redactor) field(k string, v any, depth int) any {
	if r.sensitive(k) {
		return r.secret(k, v)
	}
	return r.any(v, depth)
}

// secret masks the value of a sensitive key.
func (r *Redactor) secret(k string, v any) any {
	switch v := v.(type) {
	case nil:
		return nil
	case string:
		if v == "" {
			return ""
		}
		if kindOf(k) == authKey {
			return r.maskAuth(v)
		}
	}
	return r.mask
}

// any redacts one value at the given nesting depth.
func (r *Redactor) any(v any, depth int) any {
	if depth > MaxDepth {
		return r.mask
	}
	switch v := v.(type) {
	case nil, bool:
		return v
	case string:
		return r.String(v)
	case int:
		return r.number(strconv.FormatInt(int64(v), 10), v)
	case int64:
		return r.number(strconv.FormatInt(v, 10), v)
	case uint:
		return r.number(strconv.FormatUint(uint64(v), 10), v)
	case uint64:
		return r.number(strconv.FormatUint(v, 10), v)
	case float64:
		return r.float(v)
	case float32:
		return r.float(float64(v))
	case int8, int16, int32, uint8, uint16, uint32:
		return v // too small to be a card number
	case json.Number:
		return r.number(string(v), v)
	case map[string]any:
		if v == nil {
			return v
		}
		return r.object(v, depth)
	case []any:
		if v == nil {
			return v
		}
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = r.any(e, depth+1)
		}
		return out
	case []string:
		if v == nil {
			return v
		}
		out := make([]string, len(v))
		for i, e := range v {
			out[i] = r.String(e)
		}
		return out
	case map[string]string:
		if v == nil {
			return v
		}
		out := make(map[string]string, len(v))
		for k, e := range v {
			if r.sensitive(k) {
				out[k], _ = r.secret(k, e).(string)
			} else {
				out[k] = r.String(e)
			}
		}
		return out
	case map[string][]string:
		return r.multi(v)
	case http.Header:
		return r.Header(v)
	case url.Values:
		return url.Values(r.multi(v))
	case []map[string]any:
		if v == nil {
			return v
		}
		out := make([]map[string]any, len(v))
		for i, e := range v {
			if e != nil {
				out[i] = r.object(e, depth+1)
			}
		}
		return out
	case []byte:
		return r.String(string(v))
	}
	return r.structural(v, depth)
}

// multi redacts a map of string lists, keeping its length per key.
func (r *Redactor) multi(m map[string][]string) map[string][]string {
	if m == nil {
		return nil
	}
	out := make(map[string][]string, len(m))
	for k, vs := range m {
		if vs == nil {
			out[k] = nil
			continue
		}
		c := make([]string, len(vs))
		for i, e := range vs {
			if r.sensitive(k) {
				c[i], _ = r.secret(k, e).(string)
			} else {
				c[i] = r.String(e)
			}
		}
		out[k] = c
	}
	return out
}

// number returns the card mask if digits, the decimal form of v, is a card
// number, and v otherwise.
func (r *Redactor) number(digits string, v any) any {
	if cardDigits(digits) {
		return CardMask(digits[len(digits)-4:])
	}
	return v
}

func (r *Redactor) float(f float64) any {
	if f >= 1e12 && f < 1e19 && f == math.Trunc(f) {
		return r.number(strconv.FormatFloat(f, 'f', -1, 64), f)
	}
	return f
}

var (
	errorType    = reflect.TypeFor[error]()
	textType     = reflect.TypeFor[encoding.TextMarshaler]()
	stringerType = reflect.TypeFor[fmt.Stringer]()
)

// structural redacts a value of a type Fields does not list, the way it would
// look as JSON-like data.
func (r *Redactor) structural(v any, depth int) any {
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface {
		if rv.IsNil() {
			return nil
		}
		if t := rv.Type(); t.Implements(errorType) || t.Implements(textType) || t.Implements(stringerType) {
			break
		}
		rv = rv.Elem()
	}
	if text, ok := r.methodText(rv); ok {
		return r.String(text)
	}
	switch rv.Kind() {
	case reflect.Bool:
		return rv.Bool()
	case reflect.String:
		return r.String(rv.String())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return r.any(rv.Int(), depth)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return r.any(rv.Uint(), depth)
	case reflect.Float32, reflect.Float64:
		return r.float(rv.Float())
	case reflect.Map:
		out := make(map[string]any, rv.Len())
		it := rv.MapRange()
		for it.Next() {
			k := it.Key()
			var ks string
			if k.Kind() == reflect.String {
				ks = k.String()
			} else {
				ks = fmt.Sprint(k.Interface())
			}
			out[ks] = r.field(ks, it.Value().Interface(), depth+1)
		}
		return out
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return nil
		}
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = r.any(rv.Index(i).Interface(), depth+1)
		}
		return out
	case reflect.Struct:
		t := rv.Type()
		out := make(map[string]any, t.NumField())
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() || !rv.Field(i).CanInterface() {
				continue
			}
			out[f.Name] = r.field(f.Name, rv.Field(i).Interface(), depth+1)
		}
		return out
	}
	// Channels, functions, complex numbers, unsafe pointers: nothing a
	// payload should carry, and nothing worth printing.
	return r.mask
}

// methodText returns the text of a value that describes itself: Error,
// MarshalText or String, in that order. A method that panics yields the
// mask.
func (r *Redactor) methodText(rv reflect.Value) (text string, ok bool) {
	if !rv.IsValid() || !rv.CanInterface() {
		return "", false
	}
	if (rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface) && rv.IsNil() {
		return "", false
	}
	defer func() {
		if recover() != nil {
			text, ok = r.mask, true
		}
	}()
	switch v := rv.Interface().(type) {
	case error:
		return v.Error(), true
	case encoding.TextMarshaler:
		b, err := v.MarshalText()
		if err != nil {
			return r.mask, true
		}
		return string(b), true
	case fmt.Stringer:
		return v.String(), true
	}
	return "", false
}

// alwaysSecretHeaders are masked by Header whatever Config.Keys says.
var alwaysSecretHeaders = map[string]bool{
	"Authorization":       true,
	"Proxy-Authorization": true,
	"Cookie":              true,
	"Set-Cookie":          true,
	"X-Api-Key":           true,
}

// Header returns a copy of h with the values of Authorization,
// Proxy-Authorization, Cookie, Set-Cookie, X-Api-Key and of every header
// whose name is a sensitive key masked, and every other value passed
// through String. An Authorization value keeps a known scheme: "Bearer
// [REDACTED]". It never mutates h; it returns nil for a nil h.
func (r *Redactor) Header(h http.Header) http.Header {
	if h == nil {
		return nil
	}
	out := make(http.Header, len(h))
	for k, vs := range h {
		if vs == nil {
			out[k] = nil
			continue
		}
		secret := alwaysSecretHeaders[http.CanonicalHeaderKey(k)] || r.sensitive(k)
		c := make([]string, len(vs))
		for i, v := range vs {
			if secret {
				c[i], _ = r.secret(k, v).(string)
			} else {
				c[i] = r.String(v)
			}
		}
		out[k] = c
	}
	return out
}

// Value masks a decoded JSON value (what encoding/json gives an any): an
// object through Fields (a sensitive key's value masked whole), a list
// element by element, a string through String; numbers, booleans and null
// as they are. The DLQ tools show a payload through it.
func (r *Redactor) Value(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return r.Fields(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = r.Value(e)
		}
		return out
	case string:
		return r.String(x)
	}
	return v
}
