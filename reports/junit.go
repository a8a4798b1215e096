package reports

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// Invariant is a rule the simulator checks after every step of every run,
// or a black-box drill judges from its history; every violation is
// recorded and the run goes on to its end.
type Invariant struct {
	// Name is what a Violation's Invariant says (sim.Inv*).
	Name string
	// Rule states the invariant as a sentence.
	Rule string
	// BlackBox says only a black-box drill judges it (from outside the
	// system: the calls, the alerts, the DLQ's reads): the simulator does
	// not, and a version-1 report never did.
	BlackBox bool
	// Optional says the simulator lists it only for a scenario that asks
	// for it: no-planted-secret-leaves, for one that plants secrets
	// (invariants.secrets).
	Optional bool
}

// invariants are the simulator's invariants, in the order sim declares
// them, then those only a black-box drill judges (the reports package
// cannot import sim; a spec checks the two lists agree).
var invariants = []Invariant{
	{Name: "conservation", Rule: "every job created is accounted for — queued, in flight, scheduled, in the batch queue, held, dead-lettered, succeeded or removed — and the store's own counts and DLQ agree"},
	{Name: "legal-move", Rule: "every move of a job is one its lifecycle allows"},
	{Name: "no-move-after-success", Rule: "a job that succeeded never moves again"},
	{Name: "one-dlq-entry-per-job", Rule: "a job has at most one DLQ entry"},
	{Name: "no-retry-of-permanent-or-critical", Rule: "a failure whose injected class is permanent or critical is never retried"},
	{Name: "attempts-within-policy", Rule: "no job is attempted more often than the retry policy allows"},
	{Name: "no-double-charge", Rule: "no payment is charged twice"},
	{Name: "critical-failure-paged", Rule: "every critical failure reaches a person as a high-severity alert within the page deadline"},
	{Name: "one-page-per-repeat-interval", Rule: "a receiver gets at most one page per alert fingerprint per repeat interval"},
	{Name: "breaker-transitions-legal", Rule: "every circuit-breaker transition is one the breaker's state machine allows"},
	{Name: "no-rerun-after-dead-letter", Rule: "once a job's dead letter is decided, its handler never runs again (a lease that expired included) until the job is requeued from the DLQ"},
	{Name: "attempt-outcome-is-the-move", Rule: "every attempt's outcome is the move the store made: a success is acked unless fenced off because its lease was recovered, a dead letter is written or held (never acked), a completion the store takes moves the job, and a lost lease's late answer is fenced off"},
	{Name: "no-lease-left-expired", Rule: "no job stays in flight under a lease that expired more than a lease TTL ago: an expired lease is recovered and its job runs again"},
	{Name: "no-planted-secret-leaves", Rule: "no text the scenario plants as a secret (invariants.secrets) leaves the process in a delivered notification or a report field, and the DLQ keeps the payload of a job created with one", Optional: true},
	{Name: "not-both-succeeded-and-dead-lettered", Rule: "no job both succeeded and sits in the DLQ", BlackBox: true},
	{Name: "dlq-never-shrinks", Rule: "an entry leaves the DLQ only by a mechanism the scenario declares (system.external.dlqShrinks)", BlackBox: true},
	{Name: "dlq-entry-severity", Rule: "where the DLQ's layout carries a severity, a critical failure's entry says high (or critical)", BlackBox: true},
	{Name: "dlq-entry-complete", Rule: "every dead letter carries its job, its error, its attempt count and when it failed", BlackBox: true},
	{Name: "transient-retried", Rule: "with a declared retry policy (system.external.policy), a job whose failures were transient is dead-lettered only after its declared attempts", BlackBox: true},
}

// Invariants returns the invariants the simulator checks, in its order,
// then those only a black-box drill judges (BlackBox): the JUnit report
// lists each a run has as a test case. The slice is the caller's.
func Invariants() []Invariant { return append([]Invariant(nil), invariants...) }

// The JUnit XML document: the elements and attributes that Jenkins (junit
// plugin), GitLab (unit test reports) and GitHub's test-report actions
// read. Times are always 0: a report carries no wall-clock time.
type (
	junitSuites struct {
		XMLName  xml.Name     `xml:"testsuites"`
		Name     string       `xml:"name,attr"`
		Tests    int          `xml:"tests,attr"`
		Failures int          `xml:"failures,attr"`
		Errors   int          `xml:"errors,attr"`
		Skipped  int          `xml:"skipped,attr"`
		Time     string       `xml:"time,attr"`
		Suites   []junitSuite `xml:"testsuite"`
	}
	junitSuite struct {
		Name       string          `xml:"name,attr"`
		Tests      int             `xml:"tests,attr"`
		Failures   int             `xml:"failures,attr"`
		Errors     int             `xml:"errors,attr"`
		Skipped    int             `xml:"skipped,attr"`
		Time       string          `xml:"time,attr"`
		Properties []junitProperty `xml:"properties>property,omitempty"`
		Cases      []junitCase     `xml:"testcase"`
		SystemOut  *junitText      `xml:"system-out,omitempty"`
	}
	junitProperty struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	}
	junitCase struct {
		Name      string        `xml:"name,attr"`
		ClassName string        `xml:"classname,attr"`
		Time      string        `xml:"time,attr"`
		Failure   *junitProblem `xml:"failure,omitempty"`
		Error     *junitProblem `xml:"error,omitempty"`
		Skipped   *junitSkipped `xml:"skipped,omitempty"`
	}
	junitProblem struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",cdata"`
	}
	// junitText is text kept readable in the file: CDATA, newlines as is.
	junitText struct {
		Text string `xml:",cdata"`
	}
	junitSkipped struct {
		Message string `xml:"message,attr"`
	}
)

// WriteJUnit writes rs as one JUnit XML document: a <testsuite> per run,
// named "scenario (seed N)", with a <testcase> per expectation and one per
// invariant the simulator checks. A failed expectation or a violated
// invariant is a <failure> with expected vs actual, the jobs' trails and
// the reproduce command; an errored or interrupted run is an <error>
// (type "errored" or "interrupted"), its expectations and the invariants
// it did not check to the end <skipped>; an inconclusive drill (its
// harness fell behind its time scale) is an <error> of type
// "inconclusive" on its "run" test case, with what slipped, never
// <skipped>, and its expectations and invariants as they were judged;
// an invariant turned off is
// <skipped> too, never passed, and so is an expectation or invariant a
// black-box drill could not observe (message "not observable: why"). Every time is 0, so the bytes depend only on
// the runs. For many runs, JUnitWriter writes the same bytes one run at a
// time.
func WriteJUnit(w io.Writer, rs []*Result) error {
	var spool bytes.Buffer
	jw := NewJUnitWriter(&spool)
	for _, r := range rs {
		if err := jw.Add(r); err != nil {
			return err
		}
	}
	return jw.Finish(w)
}

// JUnitWriter writes a JUnit XML document one run at a time, so that a
// sweep of many seeds need not keep its results: Add encodes a run's
// <testsuite> into the spool at once; Finish writes the document — whose
// first element carries the totals — with the spooled suites in it. With
// a temporary file as the spool, memory stays flat in the number of runs.
// The bytes are WriteJUnit's.
type JUnitWriter struct {
	spool io.ReadWriter
	buf   *bufio.Writer
	doc   junitSuites
	n     int
	err   error
}

// NewJUnitWriter returns a writer spooling its suites to spool (a
// *bytes.Buffer, or a temporary *os.File: Finish seeks it back to its
// start when it can).
func NewJUnitWriter(spool io.ReadWriter) *JUnitWriter {
	return &JUnitWriter{spool: spool, buf: bufio.NewWriter(spool), doc: junitSuites{Name: "faultline", Time: "0"}}
}

// Add writes r's test suite to the spool.
func (j *JUnitWriter) Add(r *Result) error {
	if j.err != nil {
		return j.err
	}
	if r == nil {
		return fmt.Errorf("write JUnit XML: run %d: %w", j.n, ErrNilResult)
	}
	j.n++
	s := junitSuiteOf(Redact(r))
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

// Finish writes the whole document to w.
func (j *JUnitWriter) Finish(w io.Writer) error {
	if j.err != nil {
		return j.err
	}
	if err := j.buf.Flush(); err != nil {
		return fmt.Errorf("write JUnit XML: %w", err)
	}
	if sk, ok := j.spool.(io.Seeker); ok {
		if _, err := sk.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("write JUnit XML: %w", err)
		}
	}
	var head bytes.Buffer
	if err := xml.NewEncoder(&head).Encode(j.doc); err != nil {
		return fmt.Errorf("write JUnit XML: %w", err)
	}
	// head is "<testsuites …></testsuites>": the suites go in between.
	start, end, _ := strings.Cut(head.String(), "></")
	bw := bufio.NewWriter(w)
	_, _ = bw.WriteString(xml.Header + start + ">")
	if j.n > 0 {
		if _, err := io.Copy(bw, j.spool); err != nil {
			return fmt.Errorf("write JUnit XML: %w", err)
		}
		_ = bw.WriteByte('\n')
	}
	_, _ = bw.WriteString("</" + end + "\n")
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write JUnit XML: %w", err)
	}
	return nil
}

// junitSuiteOf is one run's test suite.
func junitSuiteOf(r *Result) junitSuite {
	name := runName(r)
	repro := reproduceCommand(r)
	s := junitSuite{Name: name, Time: "0"}
	for _, p := range []junitProperty{
		{"scenario", r.Scenario},
		{"seed", fmt.Sprint(r.Seed)},
		{"verdict", string(r.Verdict)},
		{"scenarioFile", r.ScenarioFile},
		{"scenarioHash", r.ScenarioHash},
		{"reproduce", repro},
	} {
		if p.Value != "" {
			s.Properties = append(s.Properties, p)
		}
	}
	add := func(c junitCase) {
		c.ClassName, c.Time = name, "0"
		s.Tests++
		switch {
		case c.Failure != nil:
			s.Failures++
		case c.Error != nil:
			s.Errors++
		case c.Skipped != nil:
			s.Skipped++
		}
		s.Cases = append(s.Cases, c)
	}
	switch r.Verdict {
	case Errored, Interrupted:
		add(junitCase{Name: "run", Error: &junitProblem{
			Message: string(r.Verdict) + ": " + firstLine(r.Error),
			Type:    string(r.Verdict),
			Text:    r.Error + "\n\nreproduce: " + repro + "\n",
		}})
	case Inconclusive:
		text := r.Error + "\n\n" + inconclusiveNote(r) + "\n"
		if r.Live != nil && r.Live.Slip != nil {
			text += "\n" + slipText(r.Live.Slip)
		}
		add(junitCase{Name: "run", Error: &junitProblem{
			Message: string(r.Verdict) + ": " + firstLine(r.Error),
			Type:    string(r.Verdict),
			Text:    text + "\nreproduce: " + repro + "\n",
		}})
	}
	for _, e := range r.Expectations {
		c := junitCase{Name: "expect: " + e.Name}
		p := &junitProblem{
			Message: fmt.Sprintf("expected %s, got %s", e.Expected, e.Actual),
			Type:    "expectation",
			Text:    fmt.Sprintf("expected: %s\nactual:   %s\n\nreproduce: %s\n", e.Expected, e.Actual, repro),
		}
		switch e.Verdict {
		case Failed:
			c.Failure = p
		case Errored:
			c.Error = p
		case Skipped:
			c.Skipped = &junitSkipped{Message: e.Actual}
		case NotObservable:
			c.Skipped = &junitSkipped{Message: notObservableMessage(e.Actual)}
		}
		add(c)
	}
	for _, inv := range r.InvariantResults() {
		c := junitCase{Name: "invariant: " + inv.Name}
		switch inv.Verdict {
		case Failed:
			vs := violationsOf(r, inv.Name)
			msg := fmt.Sprintf("violated %d times", inv.Violations)
			if len(vs) > 0 {
				msg = vs[0].Message
				if inv.Violations > 1 {
					msg += fmt.Sprintf(" (and %d more %s)", inv.Violations-1, plural(int(inv.Violations-1), "violation", "violations"))
				}
			}
			c.Failure = &junitProblem{Message: msg, Type: "invariant " + inv.Name, Text: violationsText(vs, inv.Violations, invariantRule(inv.Name), repro)}
		case Skipped, Errored:
			c.Skipped = &junitSkipped{Message: inv.Note}
		case NotObservable:
			c.Skipped = &junitSkipped{Message: notObservableMessage(inv.Note)}
		}
		add(c)
	}
	out := summaryLine(r) + "\n"
	for _, w := range r.Warnings {
		out += "warning: " + w + "\n"
	}
	if r.Live != nil && r.Live.External != nil {
		out += "system under test (black box):\n"
		for _, f := range externalFacts(r.Live.External, r.Ledger.Lost) {
			out += "  " + f.Label + ": " + f.Text + "\n"
		}
	}
	if r.Live != nil && r.Live.Slip != nil {
		out += slipText(r.Live.Slip)
	}
	s.SystemOut = &junitText{xmlSafe(out + "reproduce: " + repro + "\n")}
	for i := range s.Cases {
		for _, p := range []*junitProblem{s.Cases[i].Failure, s.Cases[i].Error} {
			if p != nil {
				p.Text = xmlSafe(p.Text)
			}
		}
	}
	return s
}

// slipText is a drill's harness slip as plain lines, for the JUnit
// <error> of an inconclusive run.
func slipText(s *Slip) string {
	var b strings.Builder
	fmt.Fprintf(&b, "harness slip (wall; tolerance %s):\n", fmtMs(s.ToleranceMs))
	for _, p := range s.Parts {
		fmt.Fprintf(&b, "  %s: %d %s, p99 %s, max %s, %d over\n", p.What, p.Samples, plural(int(p.Samples), "sample", "samples"),
			fmtMs(p.P99Ms), fmtMs(p.MaxMs), p.Over)
	}
	return b.String()
}

// junitViolationCap is how many violations of one invariant a <failure>
// shows with their trails; the rest get a line each.
const junitViolationCap = 10

// violationsText is an invariant's failure text: the rule, its listed
// violations (where, which job, the first ones with their trails), how
// many there were in all, and the reproduce command.
func violationsText(vs []Violation, total int64, rule, repro string) string {
	var b strings.Builder
	if rule != "" {
		fmt.Fprintf(&b, "expected: %s\n", rule)
	}
	for i, v := range vs {
		if i >= junitViolationCap {
			fmt.Fprintf(&b, "actual:   %s (at %s%s)\n", v.Message, fmtOffset(v.AtMs), jobSuffix(v.JobID))
			continue
		}
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "actual:   %s\n", v.Message)
		fmt.Fprintf(&b, "at %s%s, seed %d\n", fmtOffset(v.AtMs), jobSuffix(v.JobID), v.Seed)
		if len(v.Trail) > 0 {
			b.WriteString("\ntrail:\n")
			for _, t := range v.Trail {
				fmt.Fprintf(&b, "  %s\n", t)
			}
		}
	}
	if n := total - int64(len(vs)); n > 0 {
		fmt.Fprintf(&b, "\n… and %d more, not listed (%d in all)\n", n, total)
	}
	fmt.Fprintf(&b, "\nreproduce: %s\n", repro)
	return b.String()
}

// violationOf returns r's first violation of the named invariant.
func violationOf(r *Result, name string) (Violation, bool) {
	for _, v := range r.Violations {
		if v.Invariant == name {
			return v, true
		}
	}
	return Violation{}, false
}

// violationsOf returns r's listed violations of the named invariant.
func violationsOf(r *Result, name string) []Violation {
	var out []Violation
	for _, v := range r.Violations {
		if v.Invariant == name {
			out = append(out, v)
		}
	}
	return out
}

// xmlSafe replaces the characters XML 1.0 does not allow (most control
// characters, which an error message may carry) with U+FFFD: CDATA is not
// escaped. Attributes need no help: the encoder replaces them there.
func xmlSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r',
			r >= 0x20 && r <= 0xD7FF,
			r >= 0xE000 && r <= 0xFFFD,
			r >= 0x10000 && r <= 0x10FFFF:
			return r
		}
		return '\uFFFD'
	}, s)
}

// notObservableMessage is the <skipped> message of a not-observable
// expectation or invariant: "not observable: why" (why as is when it
// says so itself).
func notObservableMessage(why string) string {
	if strings.HasPrefix(why, "not observable") {
		return why
	}
	return "not observable: " + why
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
