package scenarios

import (
	"fmt"
	"strings"
	"time"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/worker"
)

// Expectation is one thing that must hold at the end of a run: one of the
// expectation types Count, JobFate, PageWithin, DrainedBy, BreakerOpened,
// BreakerClosedBy, BreakerTransitions, Confusion, JobAttempts and
// RetryRate, as a value or a pointer. They are data: the set is closed (its
// one method is unexported), and the simulator's judge evaluates each
// against a run's observation to expected / actual / verdict.
type Expectation interface {
	// Name is the expectation's line in a report, fixed by the
	// expectation alone (see names.go).
	Name() string
	// expectation marks the expectation types.
	expectation()
}

func (Count) expectation()              {}
func (JobFate) expectation()            {}
func (PageWithin) expectation()         {}
func (DrainedBy) expectation()          {}
func (BreakerOpened) expectation()      {}
func (BreakerClosedBy) expectation()    {}
func (BreakerTransitions) expectation() {}
func (Confusion) expectation()          {}
func (JobAttempts) expectation()        {}
func (RetryRate) expectation()          {}

// Op compares an actual count with an expected one.
type Op uint8

// The comparisons.
const (
	// Exactly: actual = N.
	Exactly Op = iota
	// AtLeast: actual ≥ N.
	AtLeast
	// AtMost: actual ≤ N.
	AtMost
)

// String returns "=", "≥" or "≤".
func (op Op) String() string {
	switch op {
	case AtLeast:
		return "≥"
	case AtMost:
		return "≤"
	}
	return "="
}

// Holds reports whether actual compares with n as op says.
func (op Op) Holds(actual, n int64) bool {
	switch op {
	case AtLeast:
		return actual >= n
	case AtMost:
		return actual <= n
	}
	return actual == n
}

// Metric is what a Count counts.
type Metric string

// The metrics.
const (
	// Created: jobs created.
	Created Metric = "created"
	// Succeeded: jobs that succeeded.
	Succeeded Metric = "succeeded"
	// DeadLettered: jobs in the DLQ at the end (failed, quarantined or
	// deleted entries), of Task, Severity and Class when given (the job's
	// latest failure).
	DeadLettered Metric = "dead-lettered"
	// DeadLetters: moves into the DLQ during the run (a job dead-lettered,
	// requeued and dead-lettered again counts twice), of Task, Severity
	// and Class when given.
	DeadLetters Metric = "dead-letters"
	// Requeued: requeues from the DLQ.
	Requeued Metric = "requeued"
	// Retried: retries scheduled.
	Retried Metric = "retried"
	// InFallback: jobs in the fallback queue at the end.
	InFallback Metric = "in-fallback"
	// Diverted: diversions to the fallback queue.
	Diverted Metric = "diverted"
	// Pending: jobs queued, in flight, scheduled or in the fallback queue
	// at the end: not yet done.
	Pending Metric = "pending"
	// Pages: pages as alert.IsPage defines them — one per firing
	// critical (high-severity) alert per receiver that accepted it — the
	// count every report shows (with Receiver and Fingerprint filters;
	// with Severity, firing alerts of at least that severity, warnings
	// included).
	Pages Metric = "pages"
	// Notifications: notifications receivers accepted.
	Notifications Metric = "notifications"
	// Lost: jobs created that the store does not account for at the end
	// (queued, in flight, scheduled, in fallback, in the DLQ) and that did
	// not succeed or leave the DLQ with an event.
	Lost Metric = "lost"
	// Fenced: late completions refused.
	Fenced Metric = "fenced"
	// Held: dead letters held (the DLQ store away, or the DLQ full under
	// reject) and written later.
	Held Metric = "held"
	// Evicted: DLQ entries evicted by overflow.
	Evicted Metric = "evicted"
	// Charges: payment charges.
	Charges Metric = "charges"
	// Refused: jobs whose dead letters a full DLQ refused (reject policy),
	// each counted once; they are held, never run again.
	Refused Metric = "refused"
	// LeaseExpiries: jobs recovered from an expired lease.
	LeaseExpiries Metric = "lease-expiries"
	// AlertsRefused: sends an alert sink refused (redelivered later).
	AlertsRefused Metric = "alerts-refused"
	// BudgetDelayed: retries the retry budget delayed.
	BudgetDelayed Metric = "budget-delayed"
	// BudgetExceeded: retries that ran over the budget.
	BudgetExceeded Metric = "budget-exceeded"
	// AlertsRaised: alerts raised (a new fingerprint firing, or one firing again
	// after it resolved), whether or not they page anyone: a storm of
	// failures with one fingerprint is one alert.
	AlertsRaised Metric = "alerts"
)

// Metrics lists every metric, in a stable order.
var Metrics = []Metric{Created, Succeeded, DeadLettered, DeadLetters, Requeued, Retried, InFallback, Diverted, Pending,
	Pages, Notifications, Lost, Fenced, Held, Evicted, Charges, Refused, LeaseExpiries, AlertsRefused, BudgetDelayed, BudgetExceeded, AlertsRaised}

// Filters returns the Count filters metric m takes: "task", "severity",
// "class" (dead-lettered, dead-letters), "receiver", "fingerprint",
// "severity" (pages), "receiver" (notifications); none for the others.
func (m Metric) Filters() []string {
	switch m {
	case DeadLettered, DeadLetters:
		return []string{"task", "severity", "class"}
	case Pages:
		return []string{"receiver", "fingerprint", "severity"}
	case Notifications:
		return []string{"receiver"}
	}
	return nil
}

// Count expects a count: "dead-lettered with severity high = 1".
type Count struct {
	Metric Metric
	// Filters, for DeadLettered (Task, Severity, Class) and Pages
	// (Receiver, Fingerprint, Severity).
	Task, Receiver, Fingerprint string
	Severity                    classify.Severity
	Class                       classify.Class
	Op                          Op
	N                           int64
}

// Name is the count's name in a report, e.g. "dead-lettered with severity
// high = 1".
func (c Count) Name() string {
	var b strings.Builder
	b.WriteString(string(c.Metric))
	var f []string
	if c.Task != "" {
		f = append(f, "task "+c.Task)
	}
	if c.Severity != classify.SeverityNone {
		f = append(f, "severity "+c.Severity.String())
	}
	if c.Class != 0 {
		f = append(f, "class "+c.Class.String())
	}
	if c.Receiver != "" {
		f = append(f, "receiver "+c.Receiver)
	}
	if c.Fingerprint != "" {
		f = append(f, "fingerprint "+c.Fingerprint)
	}
	if len(f) > 0 {
		b.WriteString(" with " + strings.Join(f, ", "))
	}
	fmt.Fprintf(&b, " %s %d", c.Op, c.N)
	return b.String()
}

// JobFate expects job JobID to end in State (and, when set, with its last
// move Route and its latest failure's Severity). With History, its DLQ
// entry must hold exactly these failures, by class, oldest first — the
// promise that an entry keeps every failure of its job, a death after a
// requeue extending it — and Severity reads the entry's verdict too.
type JobFate struct {
	JobID    string
	State    disposition.State
	Route    disposition.Reason
	Severity classify.Severity
	History  []classify.Class
}

// Jobs are the jobs the expectation reads, which a run keeps whether their
// IDs are explicit or generated.
func (f JobFate) Jobs() []string { return []string{f.JobID} }

// PageWithin expects a high-severity alert to reach a receiver within
// Within of the first critical failure (and that there was one).
type PageWithin struct{ Within time.Duration }

// DrainedBy expects the DLQ to hold no entry (failed, quarantined or
// deleted) at offset At; with Queue "fallback", the fallback (batch) queue
// to hold no job instead.
type DrainedBy struct {
	At time.Duration
	// Queue is "" (or "dlq") for the DLQ, "fallback" for the fallback
	// queue.
	Queue string
}

// QueueFallback is DrainedBy's Queue for the fallback (batch) queue.
const QueueFallback = "fallback"

// Probes are the instants whose snapshot the expectation reads, which a run
// takes.
func (d DrainedBy) Probes() []time.Duration { return []time.Duration{d.At} }

// BreakerOpened expects breaker Breaker to open at least AtLeast times.
type BreakerOpened struct {
	Breaker string
	AtLeast int
}

// BreakerClosedBy expects breaker Breaker to be closed at offset At.
type BreakerClosedBy struct {
	Breaker string
	At      time.Duration
}

// Probes are the instants whose snapshot the expectation reads, which a run
// takes.
func (b BreakerClosedBy) Probes() []time.Duration { return []time.Duration{b.At} }

// BreakerTransitions expects breaker Breaker's changes of state to
// compare with Op and N: at most (hysteresis keeps a flapping dependency
// from flapping the breaker), at least (it opened and closed again) or
// exactly. AtMost, when Op and N are zero, is the older form of
// {Op: AtMost, N: AtMost}.
type BreakerTransitions struct {
	Breaker string
	Op      Op
	N       int
	AtMost  int
}

// Comparison returns the comparison, the older AtMost form read.
func (b BreakerTransitions) Comparison() (Op, int) {
	if b.Op == Exactly && b.N == 0 && b.AtMost > 0 {
		return AtMost, b.AtMost
	}
	return b.Op, b.N
}

// Confusion gates the classifier confusion matrix: of the failures whose
// injected class is True, those the classifier called Said (0 = any) and
// whose job took Route (0 = any): e.g. {True: Critical, Route: Retry, Op:
// Exactly, N: 0} is "0 auth failures retried".
type Confusion struct {
	True  classify.Class
	Said  classify.Class
	Route worker.Action
	Op    Op
	N     int64
}

// JobAttempts expects job JobID's attempts: how many began (each lease of
// the job is one, a crashed or fenced attempt included), compared with Op
// and N when CheckCount is set, and, when MinGap is set, that each began
// at least MinGap after the one before it (a retry waits out its backoff
// and a dependency's Retry-After hint).
type JobAttempts struct {
	JobID      string
	CheckCount bool
	Op         Op
	N          int64
	MinGap     time.Duration
}

// Jobs are the jobs the expectation reads, which a run keeps (and whose
// attempt times it records).
func (a JobAttempts) Jobs() []string { return []string{a.JobID} }

// RetryRate expects the retries of dependency Dependency's jobs that come
// due (a scheduled retry moved back to its queue) in any window of Window
// from offset From on to compare with Op and N: the busiest window is
// read, so "at most 12 per second after the recovery" holds a retry
// budget, and a synchronized wave (backoff without jitter) breaks it.
//
// With Calls set it reads the calls made to the dependency instead (every
// attempt that called it, first attempts, retries and drained fallback
// jobs alike): "at most 40 calls per second after the breaker closed"
// holds the breaker's ramp-up and the retry budget together.
//
// Until, when set, reads only the retries or calls before it: "at most 15
// calls per second in the 30s after the breaker closed" reads its ramp-up
// alone, before the fallback's backlog drains.
type RetryRate struct {
	Dependency string
	From       time.Duration
	Until      time.Duration
	Window     time.Duration
	Op         Op
	N          int64
	Calls      bool
}

// ReadsCalls reports whether an expectation of sc reads when each
// dependency was called (a RetryRate of calls): a run then keeps the
// calls' times, the simulator and a drill's judge alike.
func (sc *Scenario) ReadsCalls() bool {
	for _, e := range sc.Expect {
		switch x := e.(type) {
		case RetryRate:
			if x.Calls {
				return true
			}
		case *RetryRate:
			if x != nil && x.Calls {
				return true
			}
		}
	}
	return false
}

// WantsDue reports that the expectation reads when retries come due, which
// a run then records.
func (r RetryRate) WantsDue() bool { return true }
