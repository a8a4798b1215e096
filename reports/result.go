// Package reports holds the report model of a scenario run — the one value
// every format (JSON now; text, JUnit XML, Markdown and HTML with the
// reports issue) is written from — and its JSON encoding.
//
// The model carries no wall-clock time and no absolute path: every instant
// is a virtual offset from the scenario's start, in integer milliseconds
// (fields ending in Ms), so the same scenario and seed give the same bytes
// on any machine, in any time zone, with any GOMAXPROCS.
package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// ReportVersion is the version of the model's JSON form. It grows when a
// field changes meaning or disappears; new fields do not bump it.
const ReportVersion = 1

// Verdict is a run's or an expectation's outcome.
type Verdict string

// The verdicts.
const (
	// Passed: every expectation held and no invariant was violated.
	Passed Verdict = "passed"
	// Failed: an expectation did not hold or an invariant was violated.
	Failed Verdict = "failed"
	// Errored: the run could not be carried out (a component failed to
	// start, the context was canceled).
	Errored Verdict = "errored"
)

// String returns "passed", "failed" or "errored".
func (v Verdict) String() string { return string(v) }

// Result is one run of one scenario with one seed.
type Result struct {
	ReportVersion int `json:"reportVersion"`
	// ToolVersion is the faultline version that ran: left out of golden
	// files and of report diff.
	ToolVersion string `json:"toolVersion,omitempty"`
	Scenario    string `json:"scenario"`
	Description string `json:"description,omitempty"`
	// ScenarioFile is the file as the user named it (never made absolute),
	// or "builtin:NAME"; ScenarioHash is "sha256:…" of the effective
	// scenario document.
	ScenarioFile string `json:"scenarioFile,omitempty"`
	ScenarioHash string `json:"scenarioHash,omitempty"`
	Seed         uint64 `json:"seed"`
	// Verdict is Failed when any expectation failed or any invariant was
	// violated, Errored when Error is set.
	Verdict Verdict `json:"verdict"`
	// Error says why an errored run stopped.
	Error string `json:"error,omitempty"`
	// DurationMs is the virtual length of the scenario; EndedAtMs the
	// offset the run reached (earlier when a violation stopped it).
	DurationMs int64 `json:"durationMs"`
	EndedAtMs  int64 `json:"endedAtMs"`
	// Reproduce is the command line that runs this scenario and seed again.
	Reproduce    string        `json:"reproduce,omitempty"`
	Expectations []Expectation `json:"expectations"`
	Violations   []Violation   `json:"violations"`
	Ledger       Ledger        `json:"ledger"`
	// Fates are where the explicit jobs, and the jobs an expectation
	// names, ended, by job ID.
	Fates     []JobFate    `json:"fates"`
	DLQ       DLQ          `json:"dlq"`
	Alerts    Alerts       `json:"alerts"`
	Breakers  []Transition `json:"breakers"`
	Confusion []Confusion  `json:"confusion"`
	Faults    []Fault      `json:"faults"`
	Steps     []Step       `json:"steps"`
	Series    Series       `json:"series"`
	Engine    Engine       `json:"engine"`
	// Config is the effective scenario that ran (includes merged, defaults
	// filled in), with secrets masked by the redactor.
	Config map[string]any `json:"config,omitempty"`
}

// Expectation is one expectation's outcome.
type Expectation struct {
	// Name states the expectation as a sentence, e.g. "dead-lettered with
	// severity high = 1".
	Name     string  `json:"name"`
	Expected string  `json:"expected"`
	Actual   string  `json:"actual"`
	Verdict  Verdict `json:"verdict"`
}

// Violation is a broken invariant: the run stopped there.
type Violation struct {
	// Invariant names the rule, e.g. "no-retry-of-permanent-or-critical".
	Invariant string `json:"invariant"`
	// Message says what happened, as a sentence.
	Message string `json:"message"`
	JobID   string `json:"jobId,omitempty"`
	AtMs    int64  `json:"atMs"`
	Seed    uint64 `json:"seed"`
	// Trail is the job's recent history, oldest first, one line a move.
	Trail []string `json:"trail,omitempty"`
}

// Ledger is where every created job ended up, and what happened on the way.
type Ledger struct {
	// Created = Queued + InFlight + Scheduled + Fallback + DeadLettered +
	// Succeeded + Removed, always.
	Created      int64 `json:"created"`
	Queued       int64 `json:"queued"`
	InFlight     int64 `json:"inFlight"`
	Scheduled    int64 `json:"scheduled"`
	Fallback     int64 `json:"fallback"`
	DeadLettered int64 `json:"deadLettered"`
	Succeeded    int64 `json:"succeeded"`
	// Removed counts jobs whose DLQ entry was evicted from a full DLQ or
	// purged: reported, never silent.
	Removed int64 `json:"removed"`
	// Lost counts the jobs created that the store does not account for at
	// the end (its queue counts and DLQ entries, with the succeeded and
	// removed): 0 unless a job vanished without an event.
	Lost int64 `json:"lost"`
	// Moves counts what happened on the way.
	Attempts      int64 `json:"attempts"`
	Retries       int64 `json:"retries"`
	DeadLetters   int64 `json:"deadLetters"`
	Requeues      int64 `json:"requeues"`
	Diversions    int64 `json:"diversions"`
	Drained       int64 `json:"drained"`
	Released      int64 `json:"released"`
	LeaseExpiries int64 `json:"leaseExpiries"`
	Evicted       int64 `json:"evicted"`
	Purged        int64 `json:"purged"`
	// Fenced counts completions refused because their lease was lost (a
	// stalled or crashed worker's late answer).
	Fenced int64 `json:"fenced"`
	// Held counts dead letters the DLQ store could not take at once, kept
	// by the worker and written when it came back; HeldMaxMs the longest
	// such wait.
	Held      int64 `json:"held"`
	HeldMaxMs int64 `json:"heldMaxMs"`
	// Refused counts dead letters a full DLQ refused (reject policy): the
	// job stayed leased and came back.
	Refused int64 `json:"refused"`
	// BudgetDelayed counts the retries the retry budget pushed later than
	// their backoff; BudgetExceeded those that ran over the budget after
	// waiting the longest it allows (the reference policy only).
	BudgetDelayed  int64 `json:"budgetDelayed"`
	BudgetExceeded int64 `json:"budgetExceeded"`
	// Charges counts the calls that charged a payment.
	Charges int64 `json:"charges"`
	// ByTask splits the final states by task, in task order.
	ByTask []TaskTotals `json:"byTask"`
	// DeadLetteredBy counts the dead letters (every move into the DLQ) by
	// severity, task and class, sorted.
	DeadLetteredBy []DeadLetterCount `json:"deadLetteredBy"`
}

// TaskTotals are one task's jobs by where they ended.
type TaskTotals struct {
	Task         string `json:"task"`
	Created      int64  `json:"created"`
	Succeeded    int64  `json:"succeeded"`
	DeadLettered int64  `json:"deadLettered"`
	// Pending are queued, in flight or scheduled; Fallback in the batch
	// queue.
	Pending  int64 `json:"pending"`
	Fallback int64 `json:"fallback"`
	Removed  int64 `json:"removed"`
}

// DeadLetterCount counts moves into the DLQ for one (task, severity, class).
type DeadLetterCount struct {
	Task     string `json:"task"`
	Severity string `json:"severity"`
	Class    string `json:"class"`
	Count    int64  `json:"count"`
}

// JobFate is where one job ended and how it got there.
type JobFate struct {
	JobID string `json:"jobId"`
	Task  string `json:"task"`
	// State is its disposition at the end ("succeeded", "dead-lettered",
	// ...); LastMove the reason of its last move ("drained", "requeued").
	State    string `json:"state"`
	LastMove string `json:"lastMove"`
	// Severity and Class are its latest failure's verdict, if it failed.
	Severity         string `json:"severity,omitempty"`
	Class            string `json:"class,omitempty"`
	Requeued         int    `json:"requeued"`
	Charged          int    `json:"charged"`
	EverDeadLettered bool   `json:"everDeadLettered"`
}

// DLQ is the dead letter queue at the end of the run.
type DLQ struct {
	Total      int            `json:"total"`
	ByStatus   map[string]int `json:"byStatus"`
	BySeverity map[string]int `json:"bySeverity"`
	Corrupt    int            `json:"corrupt"`
	// Entries are the first entries by job ID, at most a cap; Truncated
	// says there were more.
	Entries   []DLQEntry `json:"entries"`
	Truncated bool       `json:"truncated"`
}

// DLQEntry is one entry of the DLQ at the end.
type DLQEntry struct {
	JobID    string `json:"jobId"`
	Task     string `json:"task"`
	Status   string `json:"status"`
	Class    string `json:"class"`
	Severity string `json:"severity"`
	Rule     string `json:"rule,omitempty"`
	Attempts int    `json:"attempts"`
	Reason   string `json:"reason"`
	Error    string `json:"error"`
	// FirstFailedAtMs and LastFailedAtMs are virtual offsets.
	FirstFailedAtMs int64 `json:"firstFailedAtMs"`
	LastFailedAtMs  int64 `json:"lastFailedAtMs"`
}

// Alerts are what the alert sinks received.
type Alerts struct {
	// Notifications counts the notifications the sinks accepted; Pages
	// the pages in them, one per firing critical (high-severity) alert
	// per receiver that accepted it (alert.IsPage; the pages expectation
	// counts the same); Rejected the sends a sink refused (redelivered
	// later by the alerter's outbox).
	Notifications int64 `json:"notifications"`
	Pages         int64 `json:"pages"`
	Rejected      int64 `json:"rejected"`
	// The alerter's own counts, when it reports them (the reference one
	// does): alerts raised, occurrences deduplicated into a firing alert,
	// warnings inhibited by an open breaker, redeliveries scheduled,
	// repeats sent, alerts resolved.
	Raised       int64 `json:"raised"`
	Deduplicated int64 `json:"deduplicated"`
	Inhibited    int64 `json:"inhibited"`
	Redelivered  int64 `json:"redelivered"`
	Repeats      int64 `json:"repeats"`
	Resolved     int64 `json:"resolved"`
	// ByReceiver counts accepted notifications per receiver.
	ByReceiver map[string]int64 `json:"byReceiver"`
	// PagesByFingerprint counts the pages of each alert fingerprint
	// (every receiver); they sum to Pages.
	PagesByFingerprint map[string]int64 `json:"pagesByFingerprint"`
	// Deliveries lists the first accepted alerts (one line per alert in a
	// notification), at most a cap; Truncated says there were more.
	Deliveries []Delivery `json:"deliveries"`
	Truncated  bool       `json:"truncated"`
}

// Delivery is one alert in one accepted notification.
type Delivery struct {
	AtMs        int64  `json:"atMs"`
	Receiver    string `json:"receiver"`
	Fingerprint string `json:"fingerprint"`
	Name        string `json:"name"`
	Severity    string `json:"severity"`
	Status      string `json:"status"`
	Count       int    `json:"count"`
	Summary     string `json:"summary"`
	// Attempt is the delivery attempt that got through (above 1 when the
	// sink refused earlier ones).
	Attempt int `json:"attempt"`
}

// IsPage reports whether the delivery is a page: a firing alert of high
// severity, as alert.IsPage defines a page. Alerts.Pages counts them; every
// format marks them with this one test.
func (d Delivery) IsPage() bool { return d.Status == "firing" && d.Severity == "high" }

// Transition is one circuit-breaker state change.
type Transition struct {
	AtMs    int64  `json:"atMs"`
	Breaker string `json:"breaker"`
	From    string `json:"from"`
	To      string `json:"to"`
	Reason  string `json:"reason"`
}

// Confusion is one row of the classifier confusion matrix: the failures
// whose injected (true) class is True, by what the classifier said and by
// the route the job took.
type Confusion struct {
	True   string           `json:"true"`
	Total  int64            `json:"total"`
	Said   map[string]int64 `json:"said"`
	Routes map[string]int64 `json:"routes"`
}

// Fault is one injected fault: where, what, when, and how often it hit.
type Fault struct {
	Name       string `json:"name"`
	Target     string `json:"target"`
	Model      string `json:"model"`
	Class      string `json:"class,omitempty"`
	Hits       int64  `json:"hits"`
	FirstHitMs int64  `json:"firstHitMs"`
	LastHitMs  int64  `json:"lastHitMs"`
	// Windows are the [from, until) offsets its schedule was on, at most a
	// cap; Truncated says there were more.
	Windows   [][2]int64 `json:"windows"`
	Truncated bool       `json:"truncated"`
}

// Step is one operator step as it was carried out.
type Step struct {
	AtMs   int64  `json:"atMs"`
	Kind   string `json:"kind"`
	Detail string `json:"detail,omitempty"`
	// Error says why the step failed (a DLQ store outage, say).
	Error string `json:"error,omitempty"`
}

// Series are the run's time series, sampled every IntervalMs of virtual
// time: column i of every slice is the sample at AtMs[i].
type Series struct {
	IntervalMs int64   `json:"intervalMs"`
	AtMs       []int64 `json:"atMs"`
	Queued     []int64 `json:"queued"`
	InFlight   []int64 `json:"inFlight"`
	Scheduled  []int64 `json:"scheduled"`
	Fallback   []int64 `json:"fallback"`
	// DLQBySeverity is the DLQ's depth (entries failed, quarantined or
	// deleted) per severity.
	DLQBySeverity map[string][]int64 `json:"dlqBySeverity"`
	// Breakers is each breaker's state per sample ("closed", "open",
	// "half-open").
	Breakers map[string][]string `json:"breakers"`
}

// Engine describes the work the simulator did: deterministic counts only,
// never wall-clock figures.
type Engine struct {
	Events   int64 `json:"events"`
	Jobs     int64 `json:"jobs"`
	MaxQueue int64 `json:"maxQueue"`
}

// Encode writes r as indented JSON: fields in the model's order, map keys
// sorted, a newline at the end.
func (r *Result) Encode(w io.Writer) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// JSON returns r encoded as by Encode.
func (r *Result) JSON() ([]byte, error) {
	var buf bytes.Buffer
	err := r.Encode(&buf)
	return buf.Bytes(), err
}

// Failed reports whether the run failed or errored.
func (r *Result) Failed() bool { return r.Verdict != Passed }
