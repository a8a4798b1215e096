package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// ReportVersion is the version of the model's JSON form. It grows when a
// field changes meaning or disappears; new fields do not bump it.
//
// Version 2: a run no longer stops at its first violation — Violations
// lists every one (at most MaxListedViolations per invariant, Invariants
// giving the totals) and expectations are judged on the whole run; an
// interrupted run (Ctrl-C, a limit) has a verdict of its own and its
// expectations are skipped, not judged; Invariants says which invariants
// ran. Read still reads version 1.
//
// Version 3: an expectation or invariant may be not-observable
// (NotObservable): a black-box drill could not judge it from outside the
// system, and says why; Live.External describes that system. A reader of
// version 2 would refuse the new verdict. Read still reads versions 1 and
// 2.
const ReportVersion = 3

// MaxListedViolations is how many violations of one invariant a result
// lists; InvariantResult.Violations counts them all.
const MaxListedViolations = 100

// MaxDurationMs is the longest run a report can describe: what a
// time.Duration holds (about 292 years). Read refuses a report claiming a
// longer one.
const MaxDurationMs = int64(1<<63-1) / 1e6

// Verdict is a run's or an expectation's outcome.
type Verdict string

// The verdicts.
const (
	// Passed: every expectation held and no invariant was violated.
	Passed Verdict = "passed"
	// Failed: an expectation did not hold or an invariant was violated.
	Failed Verdict = "failed"
	// Errored: the run could not be carried out (a component or the store
	// failed).
	Errored Verdict = "errored"
	// Interrupted: the run was stopped before its end (Ctrl-C, a canceled
	// context, a limit such as the jobs in flight): its expectations were
	// not evaluated, and it is not a pass. Since reportVersion 2.
	Interrupted Verdict = "interrupted"
	// Inconclusive: a drill whose harness could not keep pace with its
	// time scale (Error says what slipped and by how much, Live.Slip the
	// measurements): its expectations were evaluated and are shown, but
	// the run is neither passed nor failed, and never a pass. A run's
	// verdict only. Since reportVersion 3.
	Inconclusive Verdict = "inconclusive"
	// Skipped is an expectation or invariant that was not judged: the run
	// was interrupted or errored, or the invariant is turned off. Never a
	// run's verdict. Since reportVersion 2.
	Skipped Verdict = "skipped"
	// NotObservable is an expectation or invariant that a black-box drill
	// cannot judge from outside the system (what the system does inside
	// it, e.g. its moves between its own queues): listed with why, never
	// passed. Never a run's verdict. Since reportVersion 3.
	NotObservable Verdict = "not-observable"
)

// String returns "passed", "failed", "errored", "interrupted",
// "inconclusive", "skipped" or "not-observable".
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
	// violated, Errored when the run could not be carried out, Interrupted
	// when it was stopped before its end, Inconclusive when a drill's
	// harness could not keep pace with its time scale (Error says why in
	// all three).
	Verdict Verdict `json:"verdict"`
	// Error says why an errored or interrupted run stopped, or what
	// slipped in an inconclusive drill and by how much.
	Error string `json:"error,omitempty"`
	// DurationMs is the virtual length of the scenario; EndedAtMs the
	// offset the run reached (earlier when it was interrupted or errored;
	// in a version-1 report, also when a violation stopped it).
	DurationMs int64 `json:"durationMs"`
	EndedAtMs  int64 `json:"endedAtMs"`
	// Reproduce is the command line that runs this scenario and seed again.
	Reproduce    string        `json:"reproduce,omitempty"`
	Expectations []Expectation `json:"expectations"`
	// Violations are the invariant violations in the order they happened,
	// at most MaxListedViolations of each invariant (Invariants counts them
	// all). A version-1 report lists the first one only.
	Violations []Violation `json:"violations"`
	// Invariants says, per invariant, whether it was checked and held,
	// was violated (how often), or was skipped (turned off, or the run did
	// not reach its end). Absent from version-1 reports: see
	// InvariantResults.
	Invariants []InvariantResult `json:"invariants,omitempty"`
	// Warnings are things a reader should know that do not fail the run,
	// e.g. a fault that never hit.
	Warnings []string `json:"warnings,omitempty"`
	Ledger   Ledger   `json:"ledger"`
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
	// Live describes a drill (a run on the wall clock of real processes);
	// absent for a run of the simulator.
	Live *Live `json:"live,omitempty"`
}

// Live is what a drill adds to its report: how it ran, and what it
// observed that the simulator has no figure for.
type Live struct {
	// The time scale: scenario seconds per wall second.
	TimeScale float64 `json:"timeScale"`
	// The wall-clock instant the scenario started (RFC 3339, UTC).
	StartedAt string `json:"startedAt"`
	// The number of worker processes (w1..wN).
	Workers int `json:"workers"`
	// The worker processes' events by kind: started, killed, stalled,
	// resumed, exited, restarted, terminated.
	Processes map[string]int `json:"processes"`
	// The observed latencies of the dependencies' calls, in wall
	// milliseconds, one row per dependency.
	Latencies []Latency `json:"latencies"`
	// Why the drill's abortIf guard stopped every fault, if it did.
	Aborted string `json:"aborted,omitempty"`
	// External describes the system of a black-box drill; absent when the
	// drill ran the reference worker.
	External *External `json:"external,omitempty"`
	// Slip is how far the drill's harness fell behind its time scale;
	// absent when the drill did not measure it.
	Slip *Slip `json:"slip,omitempty"`
}

// Slip is how far a drill's harness fell behind its time scale, per part.
type Slip struct {
	// ToleranceMs is the slip (wall-clock ms) the drill's scale allows.
	ToleranceMs float64 `json:"toleranceMs"`
	// Parts is each measured part: "producer", "timers", "gateway", "worker start", ...
	Parts []SlipPart `json:"parts"`
}

// SlipPart is one part's measured slip.
type SlipPart struct {
	// What names the part, e.g. "producer" or "worker start".
	What string `json:"what"`
	// Samples is how many times the part's slip was measured.
	Samples int64 `json:"samples"`
	// P99Ms is the 99th percentile of the part's slip, in wall-clock
	// milliseconds.
	P99Ms float64 `json:"p99Ms"`
	// MaxMs is the part's largest slip, in wall-clock milliseconds.
	MaxMs float64 `json:"maxMs"`
	// Over counts the samples past the tolerance.
	Over int64 `json:"over"`
}

// External is the system a black-box drill judged from outside.
type External struct {
	// Command is the command line of one copy ("" when Running).
	Command string `json:"command,omitempty"`
	// Copies is how many copies the drill started.
	Copies int `json:"copies"`
	// Running says the system was found running: the drill started
	// nothing and could not crash or stall it.
	Running bool `json:"running,omitempty"`
	// Inject and DLQ describe the adapters, e.g. "seed preset: LPUSH
	// ns:default" and "redis lists ns:dead_letter, ns:dlq:high".
	Inject string `json:"inject"`
	DLQ    string `json:"dlq"`
	// DrainMs is how long the drill waited after the scenario's end for
	// the jobs to settle; SettledAtMs when the last one did (−1: some
	// never did).
	DrainMs     int64 `json:"drainMs"`
	SettledAtMs int64 `json:"settledAtMs"`
	// DLQReads counts the reads of the DLQ; DLQReadErrors those that
	// failed.
	DLQReads      int `json:"dlqReads"`
	DLQReadErrors int `json:"dlqReadErrors,omitempty"`
	// Lost are the jobs neither succeeded nor in the DLQ nor queued at the
	// end, at most MaxListedViolations; Trimmed the jobs whose entries left
	// the DLQ by no declared mechanism (at most MaxListedViolations too),
	// TrimmedCount how many they were in all.
	Lost         []string `json:"lost,omitempty"`
	Trimmed      []string `json:"trimmed,omitempty"`
	TrimmedCount int64    `json:"trimmedCount,omitempty"`
	// PageWait is the drain's wait for a page still owed once every job
	// had settled (nil: none was owed).
	PageWait *PageWait `json:"pageWait,omitempty"`
	// Ready says how the drill knew the system was ready for its first
	// job, and when ("" for the blind startup wait).
	Ready string `json:"ready,omitempty"`
}

// PageWait is a drain's wait for the page of a critical failure: the
// incident's first critical answer, its deadline, when the wait began and
// ended, and when the page came (-1: not while the drill watched).
type PageWait struct {
	Dependency string `json:"dependency"`
	IncidentMs int64  `json:"incidentMs"`
	DeadlineMs int64  `json:"deadlineMs"`
	FromMs     int64  `json:"fromMs"`
	UntilMs    int64  `json:"untilMs"`
	PagedMs    int64  `json:"pagedMs"`
}

// Latency is the distribution of one kind of call's wall-clock time.
type Latency struct {
	// What was called, e.g. "dependency payment-gateway".
	What string `json:"what"`
	// How many calls were timed.
	Calls int64 `json:"calls"`
	// The median, in milliseconds.
	P50Ms float64 `json:"p50Ms"`
	// The 95th percentile, in milliseconds.
	P95Ms float64 `json:"p95Ms"`
	// The 99th percentile, in milliseconds.
	P99Ms float64 `json:"p99Ms"`
	// The longest, in milliseconds.
	MaxMs float64 `json:"maxMs"`
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

// InvariantResult is what became of one invariant in a run.
type InvariantResult struct {
	// Name is the invariant's (a Violation's Invariant).
	Name string `json:"name"`
	// Verdict is Passed (checked to the end, never violated), Failed
	// (violated), Skipped (turned off, or checked only until the run was
	// interrupted or errored: Note says which) or NotObservable (a
	// black-box drill cannot judge it from outside: Note says why).
	Verdict Verdict `json:"verdict"`
	// Violations counts every violation, listed or not.
	Violations int64 `json:"violations"`
	// Note says why a skipped invariant was not checked, or why a
	// not-observable one cannot be.
	Note string `json:"note,omitempty"`
}

// Violation is a broken invariant, where and when it broke.
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

// Unaccounted is how many created jobs the ledger's end states do not
// hold: Created minus the jobs succeeded, in the DLQ, removed from it,
// queued, in flight, scheduled, in the fallback queue and held. 0 in every
// run whose store and ledger agree.
func (l Ledger) Unaccounted() int64 {
	return l.Created - (l.Succeeded + l.DeadLettered + l.Removed + l.Queued + l.InFlight + l.Scheduled + l.Fallback + l.HeldAtEnd)
}

// Ledger is where every created job ended up, and what happened on the way.
type Ledger struct {
	// Created = Queued + InFlight + Scheduled + Fallback + HeldAtEnd +
	// DeadLettered + Succeeded + Removed, always.
	Created   int64 `json:"created"`
	Queued    int64 `json:"queued"`
	InFlight  int64 `json:"inFlight"`
	Scheduled int64 `json:"scheduled"`
	Fallback  int64 `json:"fallback"`
	// HeldAtEnd counts jobs whose dead letters were decided but still wait
	// in the held set for room in the DLQ (their handlers do not run
	// again).
	HeldAtEnd    int64 `json:"heldAtEnd"`
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
	// Held counts dead letters the DLQ could not take at once (its store
	// was away, or it was full under the reject policy), held — parked in
	// the store's held set, or kept by the worker — and written to the DLQ
	// later; HeldMaxMs the longest such wait, from the failure to the
	// write. Kept counts the dead letters the held set had no room for,
	// kept by the worker with their leases alive.
	Held      int64 `json:"held"`
	HeldMaxMs int64 `json:"heldMaxMs"`
	Kept      int64 `json:"kept"`
	// Refused counts the jobs whose dead letters a full DLQ refused
	// (reject policy), each once; RefusedTimes how many refusals there
	// were in all. A refused dead letter is held, never run again.
	Refused      int64 `json:"refused"`
	RefusedTimes int64 `json:"refusedTimes"`
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
	// Pending are queued, in flight, scheduled or held (a decided dead
	// letter waiting for room in the DLQ); Fallback in the batch queue.
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
	// The worker process whose breaker moved, in a drill (each process
	// has its own breakers); empty in the simulator.
	Worker string `json:"worker,omitempty"`
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
	Name   string `json:"name"`
	Target string `json:"target"`
	Model  string `json:"model"`
	Class  string `json:"class,omitempty"`
	Hits   int64  `json:"hits"`
	// RequireHits says the scenario requires the fault to hit: with zero
	// hits the run fails (otherwise zero hits is a warning).
	RequireHits bool  `json:"requireHits,omitempty"`
	FirstHitMs  int64 `json:"firstHitMs"`
	LastHitMs   int64 `json:"lastHitMs"`
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
	// Held is the held set's size (dead letters decided, waiting for room
	// in the DLQ) per sample; absent when a run never held one.
	Held []int64 `json:"held,omitempty"`
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
	// Processes is the fleet the simulator ran (workers.processes), when
	// more than one: each its own retry budget, breakers and fallbacks.
	Processes int `json:"processes,omitempty"`
	// Slots is the worker slots the fleet ran, with Processes.
	Slots int `json:"slots,omitempty"`
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

// Failed reports whether the run did not pass: failed, errored,
// interrupted or inconclusive. An inconclusive run is not a failure of the
// system (its verdict is not Failed) but it is never a pass either: a
// caller that tells the two apart checks Verdict == Inconclusive first.
func (r *Result) Failed() bool { return r.Verdict != Passed }

// InvariantResults returns what became of each invariant: r.Invariants,
// or, for a version-1 report (which does not record it), what version 1
// meant: every invariant the simulator knows (none only a black-box drill
// judges), failed when violated,
// skipped when the run errored, else passed; plus any unknown invariant
// that was violated.
func (r *Result) InvariantResults() []InvariantResult {
	if r.Invariants != nil {
		return r.Invariants
	}
	count := map[string]int64{}
	for _, v := range r.Violations {
		count[v.Invariant]++
	}
	out := make([]InvariantResult, 0, len(invariants))
	for _, inv := range invariants {
		if inv.BlackBox {
			continue
		}
		ir := InvariantResult{Name: inv.Name, Verdict: Passed, Violations: count[inv.Name]}
		switch {
		case ir.Violations > 0:
			ir.Verdict = Failed
		case r.Verdict == Errored || r.Verdict == Interrupted:
			ir.Verdict, ir.Note = Skipped, "not checked to the end: the run "+string(r.Verdict)
		}
		out = append(out, ir)
		delete(count, inv.Name)
	}
	for _, v := range r.Violations {
		if n, ok := count[v.Invariant]; ok {
			out = append(out, InvariantResult{Name: v.Invariant, Verdict: Failed, Violations: n})
			delete(count, v.Invariant)
		}
	}
	return out
}
