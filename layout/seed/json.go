package seed

import (
	"bytes"
	"encoding/json"
	"errors"
)

// topLevel is what a scan of an entry's top-level JSON object found: the
// byte spans of the values of "job" and "status" (the last of each, the one
// Python's json.loads keeps), and where the object's closing brace is.
type topLevel struct {
	job, status [2]int // [start, end); start < 0: absent
	// statusMember is where the "status" member begins: just after the
	// value (or the '{') before it, so [statusMember, status[1]) is its
	// separator, key and value.
	statusMember int
	closing      int // offset of the closing '}'
	fields       int
}

// errNotObject says an entry is not one JSON object.
var errNotObject = errors.New("not a JSON object")

// scanTop reads raw's top-level object without re-encoding anything.
func scanTop(raw []byte) (topLevel, error) {
	t := topLevel{job: [2]int{-1, -1}, status: [2]int{-1, -1}}
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return t, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return t, errNotObject
	}
	for dec.More() {
		member := int(dec.InputOffset())
		k, err := dec.Token()
		if err != nil {
			return t, err
		}
		key, _ := k.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return t, err
		}
		end := int(dec.InputOffset())
		span := [2]int{end - len(v), end}
		switch key {
		case "job":
			t.job = span
		case "status":
			t.status, t.statusMember = span, member
		}
		t.fields++
	}
	if _, err := dec.Token(); err != nil { // '}'
		return t, err
	}
	t.closing = int(dec.InputOffset()) - 1
	if len(bytes.TrimSpace(raw[t.closing+1:])) > 0 {
		return t, errors.New("text after the object")
	}
	return t, nil
}

// withStatus returns raw with its top-level "status" set to the JSON
// string status, the way the tutorial's json.dumps({**entry, 'status':
// status}) writes it: the value replaced in place, or, when the entry has
// none, `, "status": "…"` added last. Bytes Python wrote come back exactly
// as Python would write them.
func withStatus(raw []byte, t topLevel, status string) []byte {
	v, _ := json.Marshal(status)
	var out []byte
	if t.status[0] >= 0 {
		out = append(out, raw[:t.status[0]]...)
		out = append(out, v...)
		return append(out, raw[t.status[1]:]...)
	}
	out = append(out, raw[:t.closing]...)
	if t.fields > 0 {
		out = append(out, ", "...)
	}
	out = append(out, `"status": `...)
	out = append(out, v...)
	return append(out, raw[t.closing:]...)
}

// withoutStatus returns raw without its top-level "status" member (raw
// itself when it has none, or is not an object): what an entry was before
// the tutorial marked it, whether the mark replaced a status or added one.
// The result is for identifying an entry, not always JSON.
func withoutStatus(raw []byte) []byte {
	t, err := scanTop(raw)
	if err != nil || t.status[0] < 0 {
		return raw
	}
	out := append([]byte(nil), raw[:t.statusMember]...)
	return append(out, raw[t.status[1]:]...)
}
