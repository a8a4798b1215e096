package oracle

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/faultline/faultline/layout"
	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reports"
)

// HistoryVersion is the version of the History format this package writes
// and reads (the file's "historyVersion"). It keeps the word History: the
// package is to hold more than the history format.
const HistoryVersion = 2

// History is everything a live drill observed, in the order it was
// observed: the oracle's whole input. The judge (Judge)
// computes the verdict from it alone, so a saved drill can be judged again
// (`faultline report check`), and a new invariant applied to an old drill. Times are scenario offsets
// in milliseconds (the drill's scaled clock), as in the reports.
type History struct {
	Version int `json:"historyVersion"`
	// Scenario is the scenario's name; Source where it was loaded from (a
	// file path, or "builtin:NAME"), SourceSHA256 a digest of its bytes.
	Scenario     string `json:"scenario"`
	Source       string `json:"source"`
	SourceSHA256 string `json:"sourceSha256,omitempty"`
	Seed         uint64 `json:"seed"`
	// Simulated says the simulator wrote the history (faultline run
	// --history): a run on virtual time, TimeScale 0.
	Simulated bool `json:"simulated,omitempty"`
	// Reproduce is the command line that runs the drill again, as the
	// drill printed it (its report's reproduce); "" in a simulated run's
	// history and in an older drill's.
	Reproduce string `json:"reproduce,omitempty"`
	// Namespace is the store namespace the drill ran in.
	Namespace string `json:"namespace,omitempty"`
	// TimeScale is scenario seconds per wall second; StartedAt the wall
	// instant the scenario started; DurationMs the scenario's length.
	TimeScale float64   `json:"timeScale"`
	StartedAt time.Time `json:"startedAt"`
	// ScenarioStart is the scenario's offset 0 on the clock the drill ran
	// it on: the scenario's start, or, for a drill of a scenario that pins
	// none, the wall clock's when the drill began (zero in an older
	// history: the scenario's). The judge runs the scenario from it.
	ScenarioStart time.Time `json:"scenarioStart,omitzero"`
	DurationMs    int64     `json:"durationMs"`
	// EndedMs is the offset the drill stopped observing at; Interrupted
	// says why it stopped early ("" when it reached its end).
	EndedMs int64 `json:"endedMs"`
	// FrozenMs is when the drill froze the workers for its last look at
	// the store: an attempt that ended later (a worker finishing as it
	// was stopped) has no move in the history and is not judged.
	FrozenMs    int64  `json:"frozenMs,omitempty"`
	Interrupted string `json:"interrupted,omitempty"`
	// Aborted says the drill's abortIf guard stopped every fault, and
	// why; the drill ran on to its end.
	Aborted string `json:"aborted,omitempty"`
	// Workers are the worker process names (w1..wN).
	Workers []string `json:"workers"`
	// Jobs are the jobs the drill's producer enqueued.
	Jobs []Job `json:"jobs"`
	// Events are the store's disposition events, in the stream's order.
	// EventsLost says the stream was trimmed before the drill read part
	// of it: conservation is then not observable.
	Events     []Event `json:"events"`
	EventsLost bool    `json:"eventsLost,omitempty"`
	// Snapshots are the store's counts, each read atomically with the
	// position in the event stream it corresponds to.
	Snapshots []Snapshot `json:"snapshots"`
	// Attempts are the workers' reports of their attempts' outcomes.
	Attempts []Attempt `json:"attempts"`
	// Calls is the fault gateways' call log.
	Calls []Call `json:"calls"`
	// Deliveries are the notifications the alerter's sinks delivered (or
	// tried to).
	Deliveries []Delivery `json:"deliveries"`
	// Overflows are the workers' stores' reports of a full DLQ.
	Overflows []Overflow `json:"overflows,omitempty"`
	// Breakers are the workers' breaker transitions.
	Breakers []BreakerTransition `json:"breakers"`
	// Processes are the supervisor's events: started, killed, stalled,
	// resumed, exited.
	Processes []ProcessEvent `json:"processes"`
	// Faults are the faults as they really happened: their windows and
	// hits.
	Faults []reports.Fault `json:"faults"`
	// Misses are the windows of the worker faults aimed at a state
	// (schedule.when) in which a targeted worker never reached it.
	Misses []Miss `json:"misses,omitempty"`
	// Steps are the operator steps the drill carried out.
	Steps []reports.Step `json:"steps"`
	// DLQ is the DLQ's entries at the end, encoded (dlq.Encode).
	DLQ []json.RawMessage `json:"dlq"`
	// Alerter is the drill's alerter's own counts at its last look (the
	// alerter runs once, in the drill process, and hears every worker's
	// failures): the alerts raised are judged from it. Nil in a history
	// of an older faultline: the alerts raised are then not observable.
	Alerter *AlerterCounts `json:"alerter,omitempty"`
	// Planned is how many jobs the scenario's workload makes (the
	// producer creates every one, late rather than never); Slip how far
	// the drill's parts fell behind its scaled clock (nil: not measured,
	// a history of an older faultline).
	Planned int   `json:"planned,omitempty"`
	Slip    *Slip `json:"slip,omitempty"`
	// SettleMs is the bound of the settle after the scenario's end (the
	// drill lets the system finish what it holds before its last look);
	// SettledMs when nothing was pending any more (-1: the bound came
	// first). Both scenario offsets past the end; 0 in an older history.
	SettleMs  int64 `json:"settleMs,omitempty"`
	SettledMs int64 `json:"settledMs,omitempty"`
	// Notes are what the drill says about itself: rounding, what it could
	// not observe.
	Notes []string `json:"notes,omitempty"`
	// External is what a black-box drill observed of the team's system;
	// nil for a drill of the reference worker. A black-box history has no
	// events, snapshots, attempts or breakers: it is judged from the call
	// log, the deliveries and the DLQ reads.
	External *ExternalRun `json:"external,omitempty"`
}

// ExternalRun is what a black-box drill observed of a system it did not
// write: the run's side of scenarios.ExternalSpec, which says how to run
// and reach that system (formerly sim.HExternal).
type ExternalRun struct {
	// File is the file the drill was given system.external from
	// (`--external`), "" when the scenario holds it.
	File string `json:"file,omitempty"`
	// Command is the command line of one copy ("" when Running); Copies
	// how many ran.
	Command string `json:"command,omitempty"`
	Copies  int    `json:"copies"`
	Running bool   `json:"running,omitempty"`
	// Inject and DLQ describe the adapters.
	Inject string `json:"inject"`
	DLQ    string `json:"dlq"`
	// Alerts says the system was given the receivers' URLs.
	Alerts bool `json:"alerts"`
	// DLQShrinks are the mechanisms the scenario declared for entries
	// leaving the DLQ.
	DLQShrinks []string `json:"dlqShrinks,omitempty"`
	// Policy is the retry policy the scenario declared for the system
	// (nil: none).
	Policy *Policy `json:"policy,omitempty"`
	// Ready says how the drill knew the system was ready for its first
	// job, and when ("" for the blind startup wait).
	Ready string `json:"ready,omitempty"`
	// NotPaging are the receivers the scenario declared not paging.
	NotPaging []string `json:"notPaging,omitempty"`
	// PageWait is the drain's wait for a page still owed once every job
	// had settled (nil: none was owed).
	PageWait *reports.PageWait `json:"pageWait,omitempty"`
	// DrainMs is how long the drill waited after the scenario's end;
	// SettledMs when every job was settled (-1: some never were).
	DrainMs   int64 `json:"drainMs"`
	SettledMs int64 `json:"settledMs"`
	// Reads are the DLQ's reads: the first lists every entry as added, the
	// next only what changed. An entry is known by its job ID ("" for a
	// corrupt one, then by Corrupt and its source).
	Reads []DLQRead `json:"reads"`
	// ReadCount is how many times the DLQ was read (Reads holds only the
	// reads that saw a change, and the first).
	ReadCount int `json:"readCount,omitempty"`
	// ReadErrors are the reads that failed, with why.
	ReadErrors []AdapterFailure `json:"readErrors,omitempty"`
	// Entries are the DLQ's entries at the end, as read (corrupt ones
	// included).
	Entries []layout.Entry `json:"entries"`
	// Queued are the job IDs in the system's queue at the end;
	// QueueObservable says the inject adapter could read it.
	Queued          []string `json:"queued,omitempty"`
	QueueObservable bool     `json:"queueObservable"`
	// InjectErrors are the jobs the adapter failed to inject, with why:
	// they were never the system's.
	InjectErrors []AdapterFailure `json:"injectErrors,omitempty"`
}

// DLQRead is one read of a black-box system's DLQ: what changed since
// the previous read, and the total after it (active entries only).
type DLQRead struct {
	AtMs    int64     `json:"atMs"`
	Added   []DLQItem `json:"added,omitempty"`
	Removed []DLQItem `json:"removed,omitempty"`
	Total   int       `json:"total"`
}

// DLQItem is one DLQ entry as a read saw it.
type DLQItem struct {
	JobID    string `json:"job,omitempty"`
	Severity string `json:"severity,omitempty"`
	Class    string `json:"class,omitempty"`
	Corrupt  string `json:"corrupt,omitempty"`
	Source   string `json:"source,omitempty"`
}

// AdapterFailure is a failed read of the DLQ or injection of a job: an
// adapter's failure as the history records it (not a Go error; formerly
// sim.HReadError).
type AdapterFailure struct {
	AtMs  int64  `json:"atMs"`
	JobID string `json:"job,omitempty"`
	Error string `json:"error"`
}

// Job is one job the producer enqueued. Outcome is "ok", or "unknown" for
// an enqueue whose answer never came (its Enqueued event, if any, says it
// happened).
type Job struct {
	AtMs int64 `json:"atMs"`
	// LagMs is how long after its scenario instant the job was created
	// (a producer behind its clock creates late, never skips).
	LagMs   int64  `json:"lagMs,omitempty"`
	ID      string `json:"id"`
	Task    string `json:"task"`
	Key     string `json:"key,omitempty"`
	Outcome string `json:"outcome"`
}

// AlerterCounts is an alerter's counts (alert.Stats) as a drill recorded
// them (formerly sim.HAlerter; not an alerter itself).
type AlerterCounts struct {
	Raised       int64 `json:"raised"`
	Deduplicated int64 `json:"deduplicated"`
	Inhibited    int64 `json:"inhibited"`
	Retried      int64 `json:"retried"`
	Repeats      int64 `json:"repeats"`
	Resolved     int64 `json:"resolved"`
}

// AlerterOf is st as a history records it.
func AlerterOf(st alert.Stats) *AlerterCounts {
	return &AlerterCounts{Raised: int64(st.Raised), Deduplicated: int64(st.Deduplicated), Inhibited: int64(st.Inhibited),
		Retried: int64(st.Retried), Repeats: int64(st.Repeats), Resolved: int64(st.Resolved)}
}

// Slip is how far a drill's parts fell behind its scaled clock, on the
// wall clock, against the tolerance its scale allows.
type Slip struct {
	ToleranceMs float64    `json:"toleranceMs"`
	Parts       []SlipPart `json:"parts"`
	// AutoScale says how --time-scale auto chose the scale ("" for a
	// scale given).
	AutoScale string `json:"autoScale,omitempty"`
	// Machine names a setting of the machine known to make a drill fall
	// behind beside busy neighbours ("" when none was found); a drill
	// that fell behind says it with its slip.
	Machine string `json:"machine,omitempty"`
}

// SlipPart is one part's slip: "producer" (how late each batch of due
// jobs began to be created), "store" (how long the drill's Redis took to
// answer a probe sent every 20ms on a connection of its own: what a
// worker's heartbeat meets), "timers" (how
// late the drill's own timer woke), "gateway" (the fault gateways' own time to answer a call no
// fault touched).
type SlipPart struct {
	What    string  `json:"what"`
	Samples int64   `json:"samples"`
	P99Ms   float64 `json:"p99Ms"`
	MaxMs   float64 `json:"maxMs"`
	Over    int64   `json:"over"`
}

// Past names the parts whose p99 slip is past the tolerance, with their
// figures ("" when none is).
func (s *Slip) Past() string { return s.PastBut("") }

// PastBut is Past without the part named except.
func (s *Slip) PastBut(except string) string {
	if s == nil {
		return ""
	}
	var out []string
	for _, p := range s.Parts {
		if p.P99Ms > s.ToleranceMs && p.What != except {
			out = append(out, fmt.Sprintf("%s p99 %.1fms (max %.1fms, %d of %d samples over)", p.What, p.P99Ms, p.MaxMs, p.Over, p.Samples))
		}
	}
	if len(out) == 0 {
		return ""
	}
	why := fmt.Sprintf("the drill fell behind its time scale: %s, against a tolerance of %.1fms", strings.Join(out, "; "), s.ToleranceMs)
	if s.Machine != "" {
		why += " (" + s.Machine + ")"
	}
	return why
}

// Report is s as a report shows it (nil for nil; formerly sim.SlipReport).
func (s *Slip) Report() *reports.Slip {
	if s == nil {
		return nil
	}
	r := &reports.Slip{ToleranceMs: s.ToleranceMs, Parts: []reports.SlipPart{}}
	for _, p := range s.Parts {
		r.Parts = append(r.Parts, reports.SlipPart(p))
	}
	return r
}

// Event is one disposition event read from the store's stream.
type Event struct {
	ID       string `json:"id"`
	AtMs     int64  `json:"atMs"`
	JobID    string `json:"job"`
	Task     string `json:"task"`
	From     string `json:"from"`
	To       string `json:"to"`
	Reason   string `json:"reason"`
	Attempts int    `json:"attempts"`
}

// Snapshot is the store's counts at one instant, read atomically with the
// number of events of the stream that precede it (AfterEvents).
type Snapshot struct {
	AtMs        int64        `json:"atMs"`
	AfterEvents int          `json:"afterEvents"`
	Counts      queue.Counts `json:"counts"`
	Stats       dlq.Stats    `json:"stats"`
}

// Attempt is a worker's report of one attempt, at the instant it began
// (AtMs): the fault the gateway
// said it injected and its true class, the classifier's verdict, the
// action, and what became of the move: applied, fenced (the lease was
// lost), kept (the worker keeps the dead letter in memory), kept-fenced,
// or failed (the store failed; the job comes back when its lease expires).
type Attempt struct {
	AtMs        int64  `json:"atMs"`
	Worker      string `json:"worker"`
	JobID       string `json:"job"`
	Fault       string `json:"fault,omitempty"`
	Truth       string `json:"truth,omitempty"`
	Class       string `json:"class,omitempty"`
	Severity    string `json:"severity,omitempty"`
	Rule        string `json:"rule,omitempty"`
	Action      string `json:"action"`
	Err         string `json:"err,omitempty"`
	Fingerprint string `json:"fingerprint,omitempty"`
	Result      string `json:"result"`
	// EndMs is when the attempt ended (its outcome decided).
	EndMs int64 `json:"endMs"`
}

// Call is one call a fault gateway answered.
type Call struct {
	AtMs       int64  `json:"atMs"`
	Dependency string `json:"dependency"`
	JobID      string `json:"job"`
	Key        string `json:"key,omitempty"`
	Fault      string `json:"fault,omitempty"`
	Class      string `json:"class,omitempty"`
	Status     int    `json:"status"`
	Outcome    string `json:"outcome"`
	TookEffect bool   `json:"tookEffect"`
	// Charge is, on a payment dependency, the number of this call's charge
	// of its payment (its idempotency key, or its job without one): 2 is a
	// double charge; 0 when it charged nothing.
	Charge int `json:"charge,omitempty"`
	// TookMs is the wall time from the call's arrival to its outcome.
	TookMs float64 `json:"tookMs"`
	// RetryAfterMs is the Retry-After the answer carried, in scenario
	// milliseconds (0: none).
	RetryAfterMs int64 `json:"retryAfterMs,omitempty"`
}

// Delivery is one notification the alerter sent to a receiver, and
// whether the receiver accepted it.
type Delivery struct {
	AtMs     int64     `json:"atMs"`
	Receiver string    `json:"receiver"`
	Attempt  int       `json:"attempt"`
	Accepted bool      `json:"accepted"`
	Error    string    `json:"error,omitempty"`
	Alerts   []Alert   `json:"alerts"`
	Sent     time.Time `json:"sent"`
}

// Alert is one alert of a notification.
type Alert struct {
	Fingerprint string `json:"fingerprint"`
	Name        string `json:"name"`
	Severity    string `json:"severity"`
	Status      string `json:"status"`
	Count       int    `json:"count"`
	Summary     string `json:"summary"`
}

// Overflow is a store's report of a full DLQ: under reject, the job
// whose dead letter it refused (parked in the held set when Held); under
// evict-oldest, the entries it evicted.
type Overflow struct {
	AtMs     int64    `json:"atMs"`
	Worker   string   `json:"worker"`
	JobID    string   `json:"job"`
	Policy   string   `json:"policy"`
	Capacity int      `json:"capacity"`
	Evicted  []string `json:"evicted,omitempty"`
	Held     bool     `json:"held,omitempty"`
}

// BreakerTransition is one transition of a worker process's breaker
// (formerly sim.HBreaker).
type BreakerTransition struct {
	AtMs    int64  `json:"atMs"`
	Worker  string `json:"worker"`
	Breaker string `json:"breaker"`
	From    string `json:"from"`
	To      string `json:"to"`
	Reason  string `json:"reason"`
}

// ProcessEvent is one supervisor event of a worker process: started,
// killed, stalled, resumed, exited (formerly sim.HProcess).
type ProcessEvent struct {
	AtMs   int64  `json:"atMs"`
	Worker string `json:"worker"`
	Kind   string `json:"kind"`
	PID    int    `json:"pid,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// ErrHistory is matched by every error Read returns for a file that
// is not a history it can read.
var ErrHistory = errors.New("not a drill history")

// Read reads a history Write wrote, and refuses, with an error matching
// ErrHistory, what is not one this package can read (formerly
// sim.ReadHistory).
func Read(r io.Reader) (*History, error) {
	hp, err := decode(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrHistory, err)
	}
	h := *hp
	if h.Version != HistoryVersion && h.Version != 1 {
		return nil, fmt.Errorf("%w: historyVersion %d; this faultline reads versions 1 and %d", ErrHistory, h.Version, HistoryVersion)
	}
	const maxMs = int64(1<<63-1) / int64(time.Millisecond)
	switch {
	case h.Simulated && h.TimeScale != 0:
		return nil, fmt.Errorf("%w: timeScale %v: a simulated run has none (it runs on virtual time)", ErrHistory, h.TimeScale)
	case !h.Simulated && (!(h.TimeScale >= 1) || h.TimeScale > 1000):
		return nil, fmt.Errorf("%w: timeScale %v: a drill's scale is from 1 to 1000", ErrHistory, h.TimeScale)
	case h.DurationMs <= 0 || h.DurationMs > maxMs:
		return nil, fmt.Errorf("%w: durationMs %d: not a duration a scenario can have", ErrHistory, h.DurationMs)
	case h.EndedMs < 0 || h.EndedMs > h.DurationMs:
		return nil, fmt.Errorf("%w: endedMs %d: outside the drill (0 to durationMs %d)", ErrHistory, h.EndedMs, h.DurationMs)
	case len(h.Workers) == 0:
		return nil, fmt.Errorf("%w: no workers: a drill has at least one", ErrHistory)
	case len(h.Snapshots) == 0 && h.Interrupted == "" && h.External == nil:
		return nil, fmt.Errorf("%w: no snapshot of the store, and not interrupted: nothing to judge its moves against", ErrHistory)
	case h.Scenario == "":
		return nil, fmt.Errorf("%w: no scenario named", ErrHistory)
	}
	return &h, nil
}

// EventOf converts a disposition event to its history form, its time as
// an offset from start.
func EventOf(id string, e disposition.Event, start time.Time) Event {
	return Event{ID: id, AtMs: e.At.Sub(start).Milliseconds(), JobID: e.JobID, Task: e.Task, From: e.From.String(),
		To: e.To.String(), Reason: string(e.Reason), Attempts: e.Attempts}
}
