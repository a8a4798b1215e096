package reports

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// Invariant is a rule the simulator checks after every step of every run;
// a violation stops the run.
type Invariant struct {
	// Name is what a Violation's Invariant says (sim.Inv*).
	Name string
	// Rule states the invariant as a sentence.
	Rule string
}

// invariants are the simulator's invariants, in the order sim declares
// them (the reports package cannot import sim; a spec checks the two
// lists agree).
var invariants = []Invariant{
	{"conservation", "every job created is accounted for — queued, in flight, scheduled, in the batch queue, dead-lettered, succeeded or removed — and the store's own counts and DLQ agree"},
	{"legal-move", "every move of a job is one its lifecycle allows"},
	{"no-move-after-success", "a job that succeeded never moves again"},
	{"one-dlq-entry-per-job", "a job has at most one DLQ entry"},
	{"no-retry-of-permanent-or-critical", "a failure whose injected class is permanent or critical is never retried"},
	{"attempts-within-policy", "no job is attempted more often than the retry policy allows"},
	{"no-double-charge", "no payment is charged twice"},
	{"critical-failure-paged", "every critical failure reaches a person as a high-severity alert within the page deadline"},
	{"one-page-per-repeat-interval", "a receiver gets at most one page per alert fingerprint per repeat interval"},
	{"breaker-transitions-legal", "every circuit-breaker transition is one the breaker's state machine allows"},
}

// Invariants returns the invariants the simulator checks, in its order:
// the JUnit report lists each as a test case of every run. The slice is
// the caller's.
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
// invariant is a <failure> with expected vs actual, the job's trail and the
// reproduce command; an errored run is an <error> (its invariants,
// unchecked, are skipped). Every time is 0, so the bytes depend only on the
// runs.
func WriteJUnit(w io.Writer, rs []*Result) error {
	doc := junitSuites{Name: "faultline", Time: "0"}
	for i, r := range rs {
		if r == nil {
			return fmt.Errorf("write JUnit XML: run %d: %w", i, ErrNilResult)
		}
		s := junitSuiteOf(Redact(r))
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Errors += s.Errors
		doc.Skipped += s.Skipped
		doc.Suites = append(doc.Suites, s)
	}
	bw := bufio.NewWriter(w)
	_, _ = bw.WriteString(xml.Header)
	enc := xml.NewEncoder(bw)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("write JUnit XML: %w", err)
	}
	_ = bw.WriteByte('\n')
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
	if r.Verdict == Errored {
		add(junitCase{Name: "run", Error: &junitProblem{
			Message: firstLine(r.Error),
			Type:    "errored",
			Text:    r.Error + "\n\nreproduce: " + repro + "\n",
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
		}
		add(c)
	}
	for _, inv := range invariants {
		c := junitCase{Name: "invariant: " + inv.Name}
		v, violated := violationOf(r, inv.Name)
		switch {
		case violated:
			c.Failure = &junitProblem{Message: v.Message, Type: "invariant " + inv.Name, Text: violationText(v, inv.Rule, repro)}
		case r.Verdict == Errored:
			c.Skipped = &junitSkipped{Message: "not checked to the end: the run errored"}
		}
		add(c)
	}
	// A violation of an invariant this faultline does not know still fails.
	for _, v := range r.Violations {
		if !knownInvariant(v.Invariant) {
			add(junitCase{Name: "invariant: " + v.Invariant, Failure: &junitProblem{
				Message: v.Message, Type: "invariant " + v.Invariant, Text: violationText(v, "", repro),
			}})
		}
	}
	s.SystemOut = &junitText{xmlSafe(summaryLine(r) + "\nreproduce: " + repro + "\n")}
	for i := range s.Cases {
		for _, p := range []*junitProblem{s.Cases[i].Failure, s.Cases[i].Error} {
			if p != nil {
				p.Text = xmlSafe(p.Text)
			}
		}
	}
	return s
}

// violationText is a violation's failure text: expected vs actual, where,
// the trail and the reproduce command.
func violationText(v Violation, rule, repro string) string {
	var b strings.Builder
	if rule != "" {
		fmt.Fprintf(&b, "expected: %s\n", rule)
	}
	fmt.Fprintf(&b, "actual:   %s\n", v.Message)
	fmt.Fprintf(&b, "at %s%s, seed %d\n", fmtOffset(v.AtMs), jobSuffix(v.JobID), v.Seed)
	if len(v.Trail) > 0 {
		b.WriteString("\ntrail:\n")
		for _, t := range v.Trail {
			fmt.Fprintf(&b, "  %s\n", t)
		}
	}
	fmt.Fprintf(&b, "\nreproduce: %s\n", repro)
	return b.String()
}

// violationOf returns r's violation of the named invariant.
func violationOf(r *Result, name string) (Violation, bool) {
	for _, v := range r.Violations {
		if v.Invariant == name {
			return v, true
		}
	}
	return Violation{}, false
}

func knownInvariant(name string) bool {
	for _, inv := range invariants {
		if inv.Name == name {
			return true
		}
	}
	return false
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

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
