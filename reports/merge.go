package reports

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// SummaryVersion is the version of a sharded sweep's summary.json (the
// object form SummaryWriter writes): it grows when a field changes
// meaning or disappears; new fields do not bump it. A sweep run without
// --shard still writes the plain array of rows it always wrote.
const SummaryVersion = 1

// ErrNotShardSummary is returned, wrapped, by NewSummaryReader for a
// summary.json that is not the object form of a sharded sweep (the plain
// array an unsharded sweep writes, or another JSON document).
var ErrNotShardSummary = errors.New("not the summary of a sharded run (faultline run --shard I/N writes one)")

// Shard is which part of a sweep a run made: the Index-th (1-based) of
// Count.
type Shard struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// String returns "I/N".
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// SummaryHeader is what a sharded summary.json says of the whole run
// before its rows: which shard it is (or how many were merged), and what
// identifies the run, so that shards of different runs are never merged.
type SummaryHeader struct {
	// SummaryVersion is SummaryVersion.
	SummaryVersion int `json:"summaryVersion"`
	// ToolVersion is the faultline version that ran.
	ToolVersion string `json:"toolVersion,omitempty"`
	// Shard is the part of the run this summary covers; absent from a
	// merged summary.
	Shard *Shard `json:"shard,omitempty"`
	// MergedShards is how many shards a merged summary was made from.
	MergedShards int `json:"mergedShards,omitempty"`
	// ScenarioSetHash is "sha256:…" of the scenarios' content hashes (each
	// effective scenario document), in the order they run.
	ScenarioSetHash string `json:"scenarioSetHash"`
	// Scenarios is how many scenarios the run has.
	Scenarios int `json:"scenarios"`
	// SeedSpec says which seeds each scenario runs with ("seeds 1..1000",
	// "seed 7" or "scenario seeds"); SeedSpecHash is "sha256:…" of it.
	SeedSpec     string `json:"seedSpec"`
	SeedSpecHash string `json:"seedSpecHash"`
	// TotalRuns is the number of (scenario, seed) pairs of the whole run,
	// every shard's together.
	TotalRuns uint64 `json:"totalRuns"`
}

// SummaryRun is one run in a sharded summary.json: what the summary, the
// Markdown table and the merge need of it, so that a passing run's result
// need not be kept.
type SummaryRun struct {
	// Index is the run's place among the whole run's (scenario, seed)
	// pairs, scenarios first: pair Index goes to shard Index mod Count + 1.
	Index    uint64  `json:"index"`
	Scenario string  `json:"scenario"`
	Seed     uint64  `json:"seed"`
	Verdict  Verdict `json:"verdict"`
	// Failure is the failing run's signature.
	Failure string `json:"failure,omitempty"`
	// Jobs, Lost, DLQ and Pages are the Markdown table's columns.
	Jobs  int64 `json:"jobs"`
	Lost  int64 `json:"lost"`
	DLQ   int   `json:"dlq"`
	Pages int64 `json:"pages"`
	// Warnings are the run's warnings (a fault that never hit).
	Warnings []string `json:"warnings,omitempty"`
	// Report is the failing run's JSON report, beside summary.json.
	Report string `json:"report,omitempty"`
}

// SummaryRunOf is r's row, at index; the caller masks what it prints.
func SummaryRunOf(r *Result, index uint64) SummaryRun {
	return SummaryRun{Index: index, Scenario: r.Scenario, Seed: r.Seed, Verdict: r.Verdict,
		Jobs: r.Ledger.Created, Lost: r.Ledger.Lost, DLQ: r.DLQ.Total, Pages: r.Alerts.Pages, Warnings: r.Warnings}
}

// Result is what of a run the row keeps, as a Result: enough for
// MarkdownWriter's row and warnings of a passing run.
func (s SummaryRun) Result() *Result {
	return &Result{ReportVersion: ReportVersion, Scenario: s.Scenario, Seed: s.Seed, Verdict: s.Verdict,
		Ledger: Ledger{Created: s.Jobs, Lost: s.Lost}, DLQ: DLQ{Total: s.DLQ}, Alerts: Alerts{Pages: s.Pages}, Warnings: s.Warnings}
}

// SummaryCounts are a summary's totals, after its rows.
type SummaryCounts struct {
	Runs        uint64 `json:"runs"`
	Passed      uint64 `json:"passed"`
	Failed      uint64 `json:"failed"`
	Errored     uint64 `json:"errored"`
	Interrupted uint64 `json:"interrupted"`
	// Inconclusive counts the drills whose harness fell behind their time
	// scale: neither passed nor failed.
	Inconclusive uint64 `json:"inconclusive,omitempty"`
	// NotRun counts the pairs of the summary's share that have no row: the
	// run was stopped (Ctrl-C) first, or they could not start.
	NotRun uint64 `json:"notRun"`
}

// Verdict is the verdict of the runs counted, as one set: Failed when any
// failed; else Errored when any errored; else Interrupted when any was
// interrupted or not made; else Inconclusive when any was inconclusive;
// else Passed when every run passed (an empty set included), Errored if
// a row's verdict is one this faultline does not know. A set with an inconclusive run is
// never a pass, and a failure elsewhere in it wins.
func (c SummaryCounts) Verdict() Verdict {
	switch {
	case c.Failed > 0:
		return Failed
	case c.Errored > 0:
		return Errored
	case c.Interrupted > 0 || c.NotRun > 0:
		return Interrupted
	case c.Inconclusive > 0:
		return Inconclusive
	case c.Passed < c.Runs:
		return Errored // a verdict this faultline does not know: never a pass
	}
	return Passed
}

// add counts one row.
func (c *SummaryCounts) add(v Verdict) {
	c.Runs++
	switch v {
	case Passed:
		c.Passed++
	case Failed:
		c.Failed++
	case Errored:
		c.Errored++
	case Interrupted:
		c.Interrupted++
	case Inconclusive:
		c.Inconclusive++
	}
}

// SummaryWriter streams a sharded summary.json: the header, then each row
// as it comes, then the counts; it keeps nothing of a row.
type SummaryWriter struct {
	w      *bufio.Writer
	counts SummaryCounts
	share  uint64
	err    error
}

// NewSummaryWriter writes h to w and opens the rows; share is how many
// rows the summary should hold (the shard's pairs), for SummaryCounts.NotRun.
func NewSummaryWriter(w io.Writer, h SummaryHeader, share uint64) *SummaryWriter {
	sw := &SummaryWriter{w: bufio.NewWriter(w), share: share}
	h.SummaryVersion = SummaryVersion
	b, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		sw.err = fmt.Errorf("write summary: %w", err)
		return sw
	}
	// b is "{\n  …\n}": the rows go before its closing brace.
	_, _ = sw.w.Write(b[:len(b)-2])
	_, _ = sw.w.WriteString(",\n  \"runs\": [")
	return sw
}

// Add writes one row.
func (sw *SummaryWriter) Add(row SummaryRun) error {
	if sw.err != nil {
		return sw.err
	}
	b, err := json.MarshalIndent(row, "    ", "  ")
	if err != nil {
		sw.err = fmt.Errorf("write summary: %w", err)
		return sw.err
	}
	if sw.counts.Runs > 0 {
		_ = sw.w.WriteByte(',')
	}
	_, _ = sw.w.WriteString("\n    ")
	_, _ = sw.w.Write(b)
	sw.counts.add(row.Verdict)
	return nil
}

// Counts are the totals of the rows written so far.
func (sw *SummaryWriter) Counts() SummaryCounts {
	c := sw.counts
	c.NotRun = sw.share - min(sw.share, c.Runs)
	return c
}

// Finish closes the rows and writes the counts.
func (sw *SummaryWriter) Finish() error {
	if sw.err != nil {
		return sw.err
	}
	b, err := json.MarshalIndent(sw.Counts(), "  ", "  ")
	if err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	if sw.counts.Runs > 0 {
		_, _ = sw.w.WriteString("\n  ")
	}
	_, _ = fmt.Fprintf(sw.w, "],\n  \"counts\": %s\n}\n", b)
	if err := sw.w.Flush(); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	return nil
}

// SummaryReader reads a sharded summary.json one row at a time.
type SummaryReader struct {
	dec    *json.Decoder
	head   *headTee
	header SummaryHeader
	counts SummaryCounts
	done   bool
	rows   int
}

// SummaryError is a summary.json that cannot be read: where (its line and
// column, when known), which field, and what is wrong with it. The reader
// does not know the file's name: its caller sets File.
type SummaryError struct {
	// File is the summary's path, when the caller set it.
	File string
	// Line and Col locate the bad value (1-based); 0 when not known.
	Line, Col int
	// Field is the bad field's path: "totalRuns", "runs[3].seed".
	Field string
	// Msg says what is wrong and what was expected.
	Msg string
	// Err is the decoder's error.
	Err error
}

// Error reads "FILE:LINE:COL: FIELD: MSG", with what is known.
func (e *SummaryError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d:%d", e.Line, e.Col)
		}
		b.WriteString(": ")
	} else if e.Line > 0 {
		fmt.Fprintf(&b, "line %d, col %d: ", e.Line, e.Col)
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns the decoder's error.
func (e *SummaryError) Unwrap() error { return e.Err }

// headTee keeps the bytes read while on: the summary's header, so that an
// error in it can be given a line and a column. It is turned off at the
// first row, so that memory stays flat in the number of rows.
type headTee struct {
	r   io.Reader
	buf []byte
	on  bool
}

func (t *headTee) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if t.on {
		t.buf = append(t.buf, p[:n]...)
	}
	return n, err
}

// position is the line and column of the value that starts after offset
// off (past the ':' after a key, and blanks); 0, 0 when not known.
func (t *headTee) position(off int64) (int, int) {
	if off < 0 || off > int64(len(t.buf)) {
		return 0, 0
	}
	i := int(off)
	for i < len(t.buf) && strings.IndexByte(" \t\r\n:", t.buf[i]) >= 0 {
		i++
	}
	line := 1 + bytes.Count(t.buf[:i], []byte("\n"))
	col := i - (bytes.LastIndexByte(t.buf[:i], '\n') + 1) + 1
	return line, col
}

// summaryError turns a decoder's error about field (whose value follows
// offset off, -1 when not known) into a *SummaryError saying what is
// wrong: a file that ends too early is truncated; a value of the wrong
// type names what was expected.
func (sr *SummaryReader) summaryError(field string, off int64, err error) error {
	se := &SummaryError{Field: field, Err: err}
	var (
		ute *json.UnmarshalTypeError
		syn *json.SyntaxError
	)
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		se.Msg = "the file is truncated: it ends before the summary does (was it copied whole, and did its run finish?)"
		off = -1
	case errors.As(err, &ute):
		if ute.Field != "" {
			if field == "" {
				se.Field = ute.Field
			} else if !strings.HasSuffix(field, ute.Field) {
				se.Field = field + "." + ute.Field
			}
		}
		se.Msg = fmt.Sprintf("expected %s, got a %s", summaryWant(ute.Type), ute.Value)
	case errors.As(err, &syn):
		se.Msg = "not valid JSON: " + syn.Error()
	default:
		se.Msg = err.Error()
	}
	if off >= 0 && sr.head != nil && sr.head.on {
		se.Line, se.Col = sr.head.position(off)
	}
	return se
}

// summaryWant says in words what JSON value a Go type of the summary
// takes.
func summaryWant(t reflect.Type) string {
	if t == nil {
		return "another value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return wantKind(t)
}

// NewSummaryReader reads the header of the summary r holds, up to its
// first row. A summary that is not a sharded one is ErrNotShardSummary.
func NewSummaryReader(r io.Reader) (*SummaryReader, error) {
	head := &headTee{r: r, on: true}
	sr := &SummaryReader{dec: json.NewDecoder(bufio.NewReader(head)), head: head}
	tok, err := sr.dec.Token()
	if err != nil {
		return nil, fmt.Errorf("read summary: %w", sr.summaryError("", 0, err))
	}
	if tok != json.Delim('{') {
		return nil, fmt.Errorf("read summary: %w", ErrNotShardSummary)
	}
	fields := map[string]json.RawMessage{}
	offsets := map[string]int64{}
	for {
		key, err := sr.key()
		if err != nil {
			return nil, err
		}
		if key == "" {
			return nil, fmt.Errorf("read summary: no runs: %w", ErrNotShardSummary)
		}
		if key == "runs" {
			break
		}
		offsets[key] = sr.dec.InputOffset()
		var v json.RawMessage
		if err := sr.dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("read summary: %w", sr.summaryError(key, offsets[key], err))
		}
		fields[key] = v
	}
	if _, ok := fields["summaryVersion"]; !ok {
		return nil, fmt.Errorf("read summary: %w", ErrNotShardSummary)
	}
	// Field by field, so that a bad one is named with its place.
	hv := reflect.ValueOf(&sr.header).Elem()
	for i := range hv.NumField() {
		name, _, _ := strings.Cut(hv.Type().Field(i).Tag.Get("json"), ",")
		raw, ok := fields[name]
		if !ok {
			continue
		}
		if err := json.Unmarshal(raw, hv.Field(i).Addr().Interface()); err != nil {
			if ute := (*json.UnmarshalTypeError)(nil); errors.As(err, &ute) && ute.Field == "" {
				ute.Field = name
			}
			return nil, fmt.Errorf("read summary: %w", sr.summaryError(name, offsets[name], err))
		}
	}
	if sr.header.SummaryVersion > SummaryVersion {
		return nil, fmt.Errorf("read summary: summaryVersion %d is newer than this faultline's (%d): %w",
			sr.header.SummaryVersion, SummaryVersion, ErrNewerVersion)
	}
	if tok, err := sr.dec.Token(); err != nil || tok != json.Delim('[') {
		if err != nil {
			return nil, fmt.Errorf("read summary: %w", sr.summaryError("runs", -1, err))
		}
		return nil, fmt.Errorf("read summary: runs: expected an array: %w", ErrNotShardSummary)
	}
	head.on, head.buf = false, nil
	return sr, nil
}

// key reads an object key, or "" at the object's end.
func (sr *SummaryReader) key() (string, error) {
	tok, err := sr.dec.Token()
	if err != nil {
		return "", fmt.Errorf("read summary: %w", sr.summaryError("", -1, err))
	}
	if tok == json.Delim('}') {
		return "", nil
	}
	k, ok := tok.(string)
	if !ok {
		return "", fmt.Errorf("read summary: unexpected %v", tok)
	}
	return k, nil
}

// Header is the summary's header.
func (sr *SummaryReader) Header() SummaryHeader { return sr.header }

// Next reads the next row; at the end it returns false, and the counts
// that follow the rows are read.
func (sr *SummaryReader) Next() (SummaryRun, bool, error) {
	if sr.done {
		return SummaryRun{}, false, nil
	}
	if sr.dec.More() {
		var row SummaryRun
		if err := sr.dec.Decode(&row); err != nil {
			return SummaryRun{}, false, fmt.Errorf("read summary: %w", sr.summaryError(fmt.Sprintf("runs[%d]", sr.rows), -1, err))
		}
		sr.rows++
		return row, true, nil
	}
	sr.done = true
	if _, err := sr.dec.Token(); err != nil { // ']'
		return SummaryRun{}, false, fmt.Errorf("read summary: %w", sr.summaryError("runs", -1, err))
	}
	for {
		key, err := sr.key()
		if err != nil {
			return SummaryRun{}, false, err
		}
		switch key {
		case "":
			return SummaryRun{}, false, nil
		case "counts":
			err = sr.dec.Decode(&sr.counts)
		default:
			var skip json.RawMessage
			err = sr.dec.Decode(&skip)
		}
		if err != nil {
			return SummaryRun{}, false, fmt.Errorf("read summary: %w", sr.summaryError(key, -1, err))
		}
	}
}

// Counts are the counts the summary states, once Next returned false.
func (sr *SummaryReader) Counts() SummaryCounts { return sr.counts }

// JUnitSuiteReader reads the <testsuite> elements of a JUnit XML document
// that WriteJUnit or JUnitWriter wrote, one at a time, to be added to
// another document with CopyNext: how shards' JUnit files are merged
// without holding them.
type JUnitSuiteReader struct {
	dec *xml.Decoder
}

// NewJUnitSuiteReader reads the document r holds.
func NewJUnitSuiteReader(r io.Reader) *JUnitSuiteReader {
	return &JUnitSuiteReader{dec: xml.NewDecoder(bufio.NewReader(r))}
}

// ErrNoSuite is returned, wrapped, by CopyNext when the document has no
// more <testsuite>.
var ErrNoSuite = errors.New("no more test suites")

// CopyNext reads the next <testsuite> and adds it to w as it was: the
// bytes are those JUnitWriter.Add wrote for the run. It returns the
// suite's scenario and seed properties, to check it is the run expected.
func (jr *JUnitSuiteReader) CopyNext(w *JUnitWriter) (scenario, seed string, err error) {
	for {
		tok, err := jr.dec.Token()
		if errors.Is(err, io.EOF) {
			return "", "", fmt.Errorf("read JUnit XML: %w", ErrNoSuite)
		}
		if err != nil {
			return "", "", fmt.Errorf("read JUnit XML: %w", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok || se.Name.Local != "testsuite" {
			continue
		}
		var s junitSuite
		if err := jr.dec.DecodeElement(&s, &se); err != nil {
			return "", "", fmt.Errorf("read JUnit XML: %w", err)
		}
		for _, p := range s.Properties {
			switch p.Name {
			case "scenario":
				scenario = p.Value
			case "seed":
				seed = p.Value
			}
		}
		return scenario, seed, w.addSuite(s)
	}
}

// addSuite writes a suite as Add does.
func (j *JUnitWriter) addSuite(s junitSuite) error {
	if j.err != nil {
		return j.err
	}
	j.n++
	j.doc.Tests += s.Tests
	j.doc.Failures += s.Failures
	j.doc.Errors += s.Errors
	j.doc.Skipped += s.Skipped
	_ = j.buf.WriteByte('\n')
	enc := xml.NewEncoder(j.buf)
	enc.Indent("  ", "  ")
	if err := enc.EncodeElement(s, xml.StartElement{Name: xml.Name{Local: "testsuite"}}); err != nil {
		j.err = fmt.Errorf("write JUnit XML: %w", err)
	}
	return j.err
}
