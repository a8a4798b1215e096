package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// WriteJSON writes r as by r.Encode: the stored form Read reads back.
// A nil r is ErrNilResult.
func WriteJSON(w io.Writer, r *Result) error {
	if r == nil {
		return fmt.Errorf("write JSON report: %w", ErrNilResult)
	}
	return Redact(r).Encode(w)
}

// ErrNewerVersion is matched (errors.Is) by the error Read returns for a
// report whose reportVersion is above ReportVersion: it was written by a
// newer faultline, whose fields this one may misread, so it is refused
// rather than half-understood.
var ErrNewerVersion = errors.New("report from a newer faultline")

// NewerVersionError is a report written by a newer faultline. It matches
// ErrNewerVersion.
type NewerVersionError struct {
	// Version is the report's reportVersion; Supported the highest this
	// faultline reads (ReportVersion).
	Version, Supported int
}

// Error returns e.g. "report from a newer faultline: reportVersion 2, this
// faultline reads up to 1; upgrade faultline to read it".
func (e *NewerVersionError) Error() string {
	return fmt.Sprintf("%v: reportVersion %d, this faultline reads up to %d; upgrade faultline to read it",
		ErrNewerVersion, e.Version, e.Supported)
}

// Is matches ErrNewerVersion.
func (e *NewerVersionError) Is(target error) bool { return target == ErrNewerVersion }

// ReadError is a stored report Read cannot take: not JSON, cut short, not
// a report at all, or a value of the wrong type, with where in the file.
type ReadError struct {
	// Offset is the byte offset of the problem from the file's start;
	// Line and Col (1-based, Col in characters) the same place for people.
	Offset    int64
	Line, Col int
	// Msg says what is wrong, naming the field when there is one.
	Msg string
	// Err is the decoder's own error, if any.
	Err error
}

// Error returns "line L, column C: msg".
func (e *ReadError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Col, e.Msg)
}

// Unwrap returns the decoder's error.
func (e *ReadError) Unwrap() error { return e.Err }

// Read decodes a stored report, strictly: a file that is not JSON, is cut
// short, is some other JSON document, or has a value of the wrong type is a
// *ReadError saying what and where; a report from a newer faultline
// (reportVersion above ReportVersion) is a *NewerVersionError. Keys the
// model does not have are ignored: a newer faultline may add fields
// without bumping reportVersion.
func Read(r io.Reader) (*Result, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	start := skipSpace(data, 0)
	if start == len(data) {
		return nil, readErr(data, start, "the file is empty: a report is a JSON object", nil)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return nil, syntaxErr(data, se)
		case errors.As(err, &te):
			return nil, readErr(data, start, notAReport(data[start]), err)
		}
		return nil, readErr(data, start, err.Error(), err)
	}
	if data[start] != '{' {
		return nil, readErr(data, start, notAReport(data[start]), nil)
	}
	if missing := missingKeys(top, "reportVersion", "scenario"); len(missing) > 0 {
		return nil, readErr(data, start, "not a faultline report: "+foreign(top, missing), nil)
	}
	var version int
	if err := json.Unmarshal(top["reportVersion"], &version); err != nil {
		at := valueAt(data, "reportVersion")
		return nil, readErr(data, at, "reportVersion: "+typeMsg(data, at, reflect.TypeFor[int]()), err)
	}
	switch {
	case version > ReportVersion:
		return nil, &NewerVersionError{Version: version, Supported: ReportVersion}
	case version < 1:
		return nil, readErr(data, valueAt(data, "reportVersion"), fmt.Sprintf("reportVersion %d: no faultline writes it (the first is 1)", version), nil)
	}
	if missing := missingKeys(top, "verdict", "ledger"); len(missing) > 0 {
		// A report without its verdict or its ledger cannot be rendered or
		// compared: reading zeros for it would state a run that never was.
		return nil, readErr(data, start, "an incomplete faultline report: no "+strings.Join(missing, " and no ")+
			" (every report has them: was it cut or edited?)", nil)
	}
	res := new(Result)
	if err := json.Unmarshal(data, res); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			at := typeErrStart(data, te)
			return nil, readErr(data, at, pathAt(data, at)+": "+typeMsg(data, at, te.Type), err)
		}
		return nil, readErr(data, start, err.Error(), err)
	}
	if err := checkVerdicts(data, res); err != nil {
		return nil, err
	}
	if err := checkDurations(data, res); err != nil {
		return nil, err
	}
	return res, nil
}

// checkDurations refuses a run length no run can have: negative, or
// beyond MaxDurationMs (what a time.Duration holds), which would wrap
// around in every offset a writer prints.
func checkDurations(data []byte, res *Result) error {
	for _, f := range []struct {
		path string
		ms   int64
	}{{"durationMs", res.DurationMs}, {"endedAtMs", res.EndedAtMs}} {
		if f.ms < 0 || f.ms > MaxDurationMs {
			return readErr(data, valueAt(data, f.path), fmt.Sprintf("%s: %d ms is not a run length faultline can have (0 to about 292 years, what a duration holds)",
				f.path, f.ms), nil)
		}
	}
	return nil
}

// checkVerdicts refuses a verdict the report's version does not have: a
// run is passed, failed, errored, (version 2) interrupted or (version 3)
// inconclusive; an expectation or invariant passed, failed, errored,
// (version 2) skipped or (version 3) not-observable. Not-observable is
// never a run's verdict, inconclusive never an expectation's.
func checkVerdicts(data []byte, res *Result) error {
	run, item := []Verdict{Passed, Failed, Errored}, []Verdict{Passed, Failed, Errored}
	if res.ReportVersion >= 2 {
		run, item = append(run, Interrupted), append(item, Skipped)
	}
	if res.ReportVersion >= 3 {
		run, item = append(run, Inconclusive), append(item, NotObservable)
	}
	bad := func(path string, v Verdict, known []Verdict) error {
		names := make([]string, len(known))
		for i, k := range known {
			names[i] = string(k)
		}
		return readErr(data, valueAt(data, path), fmt.Sprintf("%s: %q is not a verdict of a version-%d report (%s or %s)",
			path, string(v), res.ReportVersion, strings.Join(names[:len(names)-1], ", "), names[len(names)-1]), nil)
	}
	if !slices.Contains(run, res.Verdict) {
		return bad("verdict", res.Verdict, run)
	}
	for i, e := range res.Expectations {
		if !slices.Contains(item, e.Verdict) {
			return bad(fmt.Sprintf("expectations[%d].verdict", i), e.Verdict, item)
		}
	}
	for i, inv := range res.Invariants {
		if !slices.Contains(item, inv.Verdict) {
			return bad(fmt.Sprintf("invariants[%d].verdict", i), inv.Verdict, item)
		}
	}
	return nil
}

// notAReport says that a JSON document starting with c is not an object.
func notAReport(c byte) string {
	return "not a faultline report: the file holds " + jsonKind(c) + "; a report is a JSON object with reportVersion and scenario"
}

// missingKeys returns which of keys m lacks.
func missingKeys(m map[string]json.RawMessage, keys ...string) []string {
	var out []string
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}

// foreign says why a JSON object is not a report, naming a few of its keys.
func foreign(top map[string]json.RawMessage, missing []string) string {
	msg := "no " + strings.Join(missing, " and no ")
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, strconv.Quote(k))
	}
	slices.Sort(keys)
	switch {
	case len(keys) == 0:
		return msg + " (an empty object)"
	case len(keys) > 6:
		keys = append(keys[:6], "…")
	}
	return msg + " (its keys: " + strings.Join(keys, ", ") + ")"
}

// syntaxErr places a JSON syntax error: the end of a cut-short file, or the
// offending character.
func syntaxErr(data []byte, se *json.SyntaxError) *ReadError {
	if se.Offset >= int64(len(data)) && strings.Contains(se.Error(), "end of JSON input") {
		return readErr(data, len(data), fmt.Sprintf("the file ends in the middle of the report, after %d bytes: it is truncated", len(data)), se)
	}
	at := max(int(se.Offset)-1, 0)
	return readErr(data, at, "not valid JSON: "+se.Error(), se)
}

// readErr builds a ReadError at byte offset at of data.
func readErr(data []byte, at int, msg string, err error) *ReadError {
	at = min(max(at, 0), len(data))
	line, col := 1, 1
	lineStart := 0
	if i := bytes.LastIndexByte(data[:at], '\n'); i >= 0 {
		line = bytes.Count(data[:at], []byte{'\n'}) + 1
		lineStart = i + 1
	}
	col = utf8.RuneCount(data[lineStart:at]) + 1
	return &ReadError{Offset: int64(at), Line: line, Col: col, Msg: msg, Err: err}
}

// typeErrStart finds where the value a type error is about starts: the
// decoder reports the offset after a scalar, and after the opening
// bracket of an object or array.
func typeErrStart(data []byte, te *json.UnmarshalTypeError) int {
	end := int(min(te.Offset, int64(len(data))))
	if te.Value == "object" || te.Value == "array" {
		return max(end-1, 0)
	}
	i := end - 1
	if i >= 0 && data[i] == '"' {
		for i--; i >= 0; i-- {
			if data[i] == '"' && !escaped(data, i) {
				return i
			}
		}
		return 0
	}
	for i >= 0 && strings.IndexByte("0123456789+-.eEtrufalsn", data[i]) >= 0 {
		i--
	}
	return i + 1
}

// escaped reports whether the quote at i is escaped by an odd number of
// backslashes.
func escaped(data []byte, i int) bool {
	n := 0
	for j := i - 1; j >= 0 && data[j] == '\\'; j-- {
		n++
	}
	return n%2 == 1
}

// typeMsg says what the value at offset at is, and what the model wants.
func typeMsg(data []byte, at int, want reflect.Type) string {
	got := "nothing"
	if at < len(data) {
		got = jsonKind(data[at])
		if got == "a number" {
			end := at
			for end < len(data) && strings.IndexByte("0123456789+-.eE", data[end]) >= 0 {
				end++
			}
			got = "the number " + string(data[at:end])
		}
	}
	return fmt.Sprintf("%s where a report has %s", got, wantKind(want))
}

// jsonKind names the kind of JSON value starting with c.
func jsonKind(c byte) string {
	switch {
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == '"':
		return "a string"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	}
	return "a number"
}

// wantKind names the JSON kind of a Go type of the model.
func wantKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int64:
		return "an integer"
	case reflect.Uint64:
		return "a non-negative integer"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice:
		return "an array"
	case reflect.Array:
		return fmt.Sprintf("an array of %d", t.Len())
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a " + t.String()
}

// skipSpace returns the offset of the first byte at or after i that is not
// JSON whitespace or, between tokens, a colon or comma.
func skipSpace(data []byte, i int) int {
	for i < len(data) && strings.IndexByte(" \t\r\n:,", data[i]) >= 0 {
		i++
	}
	return i
}

// walk calls visit with the path ("ledger.byTask[1].created") and start
// offset of every value of a valid JSON document, in order, until visit
// returns false.
func walk(data []byte, visit func(path string, start int) bool) {
	type frame struct {
		object bool
		path   string
		index  int
		key    string
		// wantKey: in an object, the next string is a key.
		wantKey bool
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var stack []frame
	prev := 0
	for {
		start := skipSpace(data, prev)
		tok, err := dec.Token()
		if err != nil {
			return
		}
		prev = int(dec.InputOffset())
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			continue
		}
		path := ""
		if n := len(stack); n > 0 {
			top := &stack[n-1]
			if top.object && top.wantKey {
				top.key, top.wantKey = tok.(string), false
				continue
			}
			if top.object {
				path = joinPath(top.path, top.key)
				top.wantKey = true
			} else {
				path = fmt.Sprintf("%s[%d]", top.path, top.index)
				top.index++
			}
		}
		if !visit(path, start) {
			return
		}
		if d, ok := tok.(json.Delim); ok {
			stack = append(stack, frame{object: d == '{', path: path, wantKey: d == '{'})
		}
	}
}

func joinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// pathAt returns the path of the value starting at offset at.
func pathAt(data []byte, at int) string {
	out := "the report"
	walk(data, func(path string, start int) bool {
		if start == at {
			if path != "" {
				out = path
			}
			return false
		}
		return start < at
	})
	return out
}

// valueAt returns the offset where the value at path starts, or 0.
func valueAt(data []byte, path string) int {
	at := 0
	walk(data, func(p string, start int) bool {
		if p == path {
			at = start
			return false
		}
		return true
	})
	return at
}
