package sim

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/worker"
	"github.com/faultline/faultline/reports"
)

// Expectation is one thing that must hold at the end of a run. It evaluates
// to expected / actual / verdict. A team may write its own from the
// Observation's facts.
type Expectation interface {
	Evaluate(o *Observation) reports.Expectation
}

// Snapshot is the ledger at one instant.
type Snapshot struct {
	At                                      time.Duration
	Queued, InFlight, Scheduled, Fallback   int64
	DeadLettered, Succeeded, Removed, Total int64
	// Breakers are the breakers' states by name.
	Breakers map[string]string
}

// Fate is where one job ended.
type Fate struct {
	State disposition.State
	// LastMove is the reason of its last move (e.g. "dead-lettered",
	// "drained", "requeued").
	LastMove disposition.Reason
	// Severity and Class are its latest failure's verdict, if it failed.
	Severity classify.Severity
	Class    classify.Class
	// Requeued counts its requeues from the DLQ; Charged the charges of its
	// payment.
	Requeued, Charged int
	EverDeadLettered  bool
}

// Observation is what a run found, for expectations to judge: the result
// (ledger totals, alerts, breakers, confusion matrix) and the facts the
// result does not list in full.
type Observation struct {
	Result *reports.Result
	w      *world
}

// notObserved says why metric m was neither recorded nor observed by the
// run being judged ("" when it was): a drill's history without its
// alerter's own counts cannot give the alerts raised, and a drill's
// retry budgets live in each worker process, uncounted. Such a count is
// reported not observable — never 0, never passed.
func (o *Observation) notObserved(m Metric) string {
	if o.w == nil || o.w.judge == nil {
		return ""
	}
	switch m {
	case Alerts:
		if o.w.judge.h.Alerter == nil {
			return "the drill's history does not record its alerter's own counts (a history from an older faultline)"
		}
	case BudgetDelayed, BudgetExceeded:
		return "a drill's retry budgets live in each worker process, which does not report them"
	}
	return ""
}

// Fate returns where job id ended, if the run kept it: every explicit job,
// and every generated job an expectation names (see Jobs).
func (o *Observation) Fate(id string) (Fate, bool) {
	r := o.w.led.jobs[id]
	if r == nil {
		return Fate{}, false
	}
	st := r.state
	if st == removed { // purged or evicted from the DLQ: out of the system
		st = disposition.None
	}
	return Fate{State: st, LastMove: r.lastMove, Severity: r.severity, Class: r.class,
		Requeued: int(r.requeued), Charged: int(r.charged), EverDeadLettered: r.everDLQ}, true
}

// Snapshot returns the ledger at offset at, if an expectation asked for
// that instant (see Probes).
func (o *Observation) Snapshot(at time.Duration) (*Snapshot, bool) {
	s := o.w.probes[at]
	return s, s != nil
}

// FirstCritical returns when the first critical failure happened.
func (o *Observation) FirstCritical() (time.Duration, bool) { return o.w.firstCrit, o.w.hasCrit }

// FirstCriticalPage returns when the first high-severity alert for a
// critical failure's fingerprint reached a receiver, at or after the first
// critical failure.
func (o *Observation) FirstCriticalPage() (time.Duration, bool) { return o.w.firstPage, o.w.hasPage }

// Pages counts the firing deliveries of alerts with fingerprint fp ("" =
// any) and at least severity min, to receiver ("" = any).
func (o *Observation) Pages(receiver, fp string, min classify.Severity) int64 {
	var n int64
	for k, c := range o.w.firing {
		if (receiver == "" || k.receiver == receiver) && (fp == "" || k.fingerprint == fp) && k.severity >= min {
			n += c
		}
	}
	return n
}

func (w *world) snapshot() *Snapshot {
	l := w.led
	s := &Snapshot{At: w.now(), Queued: l.counts[disposition.Queued], InFlight: l.counts[disposition.InFlight],
		Scheduled: l.counts[disposition.Scheduled], Fallback: l.counts[disposition.Fallback],
		DeadLettered: l.counts[disposition.DeadLettered], Succeeded: l.counts[disposition.Succeeded],
		Removed: l.counts[removed], Total: l.created, Breakers: map[string]string{}}
	for _, br := range w.breakers {
		s.Breakers[br.name] = br.b.State().String()
	}
	return s
}

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

func (op Op) holds(actual, n int64) bool {
	switch op {
	case AtLeast:
		return actual >= n
	case AtMost:
		return actual <= n
	}
	return actual == n
}

func verdict(ok bool) reports.Verdict {
	if ok {
		return reports.Passed
	}
	return reports.Failed
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
	// Alerts: alerts raised (a new fingerprint firing, or one firing again
	// after it resolved), whether or not they page anyone: a storm of
	// failures with one fingerprint is one alert.
	Alerts Metric = "alerts"
)

// Metrics lists every metric, in a stable order.
var Metrics = []Metric{Created, Succeeded, DeadLettered, DeadLetters, Requeued, Retried, InFallback, Diverted, Pending,
	Pages, Notifications, Lost, Fenced, Held, Evicted, Charges, Refused, LeaseExpiries, AlertsRefused, BudgetDelayed, BudgetExceeded, Alerts}

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

func (c Count) name() string {
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

// Evaluate counts.
func (c Count) Evaluate(o *Observation) reports.Expectation {
	if why := o.notObserved(c.Metric); why != "" {
		return reports.Expectation{Name: c.name(), Expected: fmt.Sprintf("%s %d", c.Op, c.N), Actual: "not observable: " + why, Verdict: reports.NotObservable}
	}
	led := o.Result.Ledger
	var n int64
	switch c.Metric {
	case Created:
		n = led.Created
	case Succeeded:
		n = led.Succeeded
	case DeadLettered:
		if c.Task == "" && c.Severity == classify.SeverityNone && c.Class == 0 {
			n = led.DeadLettered
			break
		}
		if o.w == nil { // a black-box drill's: by task, from the result
			for _, t := range led.ByTask {
				if t.Task == c.Task {
					n = t.DeadLettered
				}
			}
			break
		}
		n = o.w.led.inDLQ(c.Task, c.Severity, c.Class)
	case DeadLetters:
		for _, d := range led.DeadLetteredBy {
			if (c.Task == "" || d.Task == c.Task) && (c.Severity == classify.SeverityNone || d.Severity == c.Severity.String()) &&
				(c.Class == 0 || d.Class == c.Class.String()) {
				n += d.Count
			}
		}
	case Requeued:
		n = led.Requeues
	case Retried:
		n = led.Retries
	case InFallback:
		n = led.Fallback
	case Diverted:
		n = led.Diversions
	case Pending:
		n = led.Queued + led.InFlight + led.Scheduled + led.Fallback
	case Pages:
		if c.Receiver == "" && c.Fingerprint == "" && c.Severity == classify.SeverityNone {
			n = o.Result.Alerts.Pages // the run's own count, as every report shows it
			break
		}
		sev := c.Severity
		if sev == classify.SeverityNone {
			sev = classify.High
		}
		n = o.Pages(c.Receiver, c.Fingerprint, sev)
	case Notifications:
		if c.Receiver != "" {
			n = o.Result.Alerts.ByReceiver[c.Receiver]
		} else {
			n = o.Result.Alerts.Notifications
		}
	case Lost:
		n = led.Lost
	case Fenced:
		n = led.Fenced
	case Held:
		n = led.Held
	case Evicted:
		n = led.Evicted
	case Charges:
		n = led.Charges
	case Refused:
		n = led.Refused
	case LeaseExpiries:
		n = led.LeaseExpiries
	case AlertsRefused:
		n = o.Result.Alerts.Rejected
	case BudgetDelayed:
		n = led.BudgetDelayed
	case BudgetExceeded:
		n = led.BudgetExceeded
	case Alerts:
		n = o.Result.Alerts.Raised
	default:
		return reports.Expectation{Name: c.name(), Expected: fmt.Sprintf("%s %d", c.Op, c.N), Actual: "unknown metric " + string(c.Metric), Verdict: reports.Failed}
	}
	return reports.Expectation{Name: c.name(), Expected: fmt.Sprintf("%s %d", c.Op, c.N), Actual: fmt.Sprint(n), Verdict: verdict(c.Op.holds(n, c.N))}
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

func (f JobFate) jobs() []string { return []string{f.JobID} }

// Evaluate looks the job up, and its DLQ entry when History is set.
func (f JobFate) Evaluate(o *Observation) reports.Expectation {
	want := f.State.String()
	if f.Route != "" {
		want += " (" + string(f.Route) + ")"
	}
	if f.Severity != classify.SeverityNone {
		want += " with severity " + f.Severity.String()
	}
	if len(f.History) > 0 {
		want += ", its DLQ entry's failure history " + classList(f.History)
	}
	e := reports.Expectation{Name: "job " + f.JobID + " ends " + want, Expected: want}
	got, ok := o.Fate(f.JobID)
	if !ok {
		e.Actual, e.Verdict = "never created", reports.Failed
		return e
	}
	e.Actual = got.State.String() + " (" + string(got.LastMove) + ")"
	if got.Severity != classify.SeverityNone {
		e.Actual += " with severity " + got.Severity.String()
	}
	ok = got.State == f.State && (f.Route == "" || got.LastMove == f.Route) &&
		(f.Severity == classify.SeverityNone || got.Severity == f.Severity)
	if len(f.History) > 0 {
		entry, found := o.Entry(f.JobID)
		switch {
		case !found:
			e.Actual += ", no DLQ entry"
			ok = false
		default:
			have := make([]classify.Class, len(entry.History))
			for i, h := range entry.History {
				have[i] = h.Verdict.Class
			}
			e.Actual += ", its DLQ entry's failure history " + classList(have)
			if f.Severity != classify.SeverityNone && entry.Verdict.Severity != f.Severity {
				e.Actual += " with entry severity " + entry.Verdict.Severity.String()
				ok = false
			}
			if !slices.Equal(have, f.History) {
				ok = false
				e.Actual += fmt.Sprintf(": job %s's entry breaks the rule that a DLQ entry keeps every failure of its job, oldest first, a death after a requeue extending it (it holds %d, %d expected)",
					f.JobID, len(have), len(f.History))
			}
		}
	}
	e.Verdict = verdict(ok)
	return e
}

// classList writes classes as "[transient, transient, permanent]".
func classList(cs []classify.Class) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = c.String()
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// Entry returns job id's DLQ entry at the end of the run, if it has one:
// read from the store, or, for a drill, from the entries it read last.
func (o *Observation) Entry(id string) (dlq.Entry, bool) {
	if o.w == nil {
		return dlq.Entry{}, false
	}
	if o.w.judge != nil {
		for _, e := range o.w.judge.dlq {
			if e.Job.ID == id {
				return e, true
			}
		}
		return dlq.Entry{}, false
	}
	e, err := o.w.backend.Get(o.w.ctx, id)
	if err != nil {
		return dlq.Entry{}, false
	}
	return e, true
}

// PageWithin expects a high-severity alert to reach a receiver within
// Within of the first critical failure (and that there was one).
type PageWithin struct{ Within time.Duration }

// Evaluate compares the first page with the first critical failure.
func (p PageWithin) Evaluate(o *Observation) reports.Expectation {
	e := reports.Expectation{Name: fmt.Sprintf("a page within %s of the first critical failure", p.Within), Expected: "≤ " + p.Within.String()}
	crit, ok := o.FirstCritical()
	if !ok {
		e.Actual, e.Verdict = "no critical failure happened", reports.Failed
		return e
	}
	page, ok := o.FirstCriticalPage()
	switch {
	case !ok:
		e.Actual, e.Verdict = "no page for a critical failure", reports.Failed
	default:
		e.Actual, e.Verdict = (page - crit).String(), verdict(page-crit <= p.Within)
	}
	return e
}

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

func (d DrainedBy) probes() []time.Duration { return []time.Duration{d.At} }

// Evaluate reads the snapshot at At.
func (d DrainedBy) Evaluate(o *Observation) reports.Expectation {
	e := reports.Expectation{Name: "the DLQ is drained by " + fmtOffset(d.At), Expected: "0 entries"}
	if d.Queue == QueueFallback {
		e = reports.Expectation{Name: "the fallback queue is drained by " + fmtOffset(d.At), Expected: "0 jobs"}
	}
	s, ok := o.Snapshot(d.At)
	if !ok {
		e.Actual, e.Verdict = "the run ended before "+fmtOffset(d.At), reports.Failed
		return e
	}
	if d.Queue == QueueFallback {
		e.Actual, e.Verdict = fmt.Sprintf("%d jobs", s.Fallback), verdict(s.Fallback == 0)
		if s.Fallback > 0 {
			e.Actual += ": the fallback queue did not drain back once the breaker closed"
		}
		return e
	}
	e.Actual, e.Verdict = fmt.Sprintf("%d entries", s.DeadLettered), verdict(s.DeadLettered == 0)
	return e
}

// BreakerOpened expects breaker Breaker to open at least AtLeast times.
type BreakerOpened struct {
	Breaker string
	AtLeast int
}

// Evaluate counts the transitions to open.
func (b BreakerOpened) Evaluate(o *Observation) reports.Expectation {
	n := 0
	for _, t := range o.Result.Breakers {
		if t.Breaker == b.Breaker && t.To == "open" {
			n++
		}
	}
	return reports.Expectation{Name: fmt.Sprintf("breaker %s opened at least %d times", b.Breaker, b.AtLeast),
		Expected: fmt.Sprintf("≥ %d", b.AtLeast), Actual: fmt.Sprint(n), Verdict: verdict(n >= b.AtLeast)}
}

// BreakerClosedBy expects breaker Breaker to be closed at offset At.
type BreakerClosedBy struct {
	Breaker string
	At      time.Duration
}

func (b BreakerClosedBy) probes() []time.Duration { return []time.Duration{b.At} }

// Evaluate reads the breaker's state at At.
func (b BreakerClosedBy) Evaluate(o *Observation) reports.Expectation {
	e := reports.Expectation{Name: fmt.Sprintf("breaker %s is closed by %s", b.Breaker, fmtOffset(b.At)), Expected: "closed"}
	s, ok := o.Snapshot(b.At)
	if !ok {
		e.Actual, e.Verdict = "the run ended before "+fmtOffset(b.At), reports.Failed
		return e
	}
	st, ok := s.Breakers[b.Breaker]
	if !ok {
		st = "no such breaker"
	}
	e.Actual, e.Verdict = st, verdict(st == "closed")
	return e
}

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

// cmp returns the comparison, the older AtMost form read.
func (b BreakerTransitions) cmp() (Op, int) {
	if b.Op == Exactly && b.N == 0 && b.AtMost > 0 {
		return AtMost, b.AtMost
	}
	return b.Op, b.N
}

// Evaluate counts the transitions: of the one breaker in the simulator;
// in a drill, of each worker process's own breaker, reading the busiest
// (hysteresis bounds each breaker, and N processes have N of them).
func (b BreakerTransitions) Evaluate(o *Observation) reports.Expectation {
	per := map[string]int{}
	for _, t := range o.Result.Breakers {
		if t.Breaker == b.Breaker {
			per[t.Worker]++
		}
	}
	n, busiest := 0, ""
	for w, k := range per {
		if k > n || k == n && w < busiest {
			n, busiest = k, w
		}
	}
	actual := fmt.Sprint(n)
	if busiest != "" {
		actual += " (worker " + busiest + ", the busiest)"
	}
	op, want := b.cmp()
	words := map[Op]string{Exactly: "exactly", AtLeast: "at least", AtMost: "at most"}[op]
	return reports.Expectation{Name: fmt.Sprintf("breaker %s changes state %s %d times", b.Breaker, words, want),
		Expected: fmt.Sprintf("%s %d", op, want), Actual: actual, Verdict: verdict(op.holds(int64(n), int64(want)))}
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

// Evaluate reads the matrix.
func (c Confusion) Evaluate(o *Observation) reports.Expectation {
	name := c.True.String() + " failures"
	if c.Said != 0 {
		name += " classified " + c.Said.String()
	}
	if c.Route != 0 {
		name += " routed to " + c.Route.String()
	}
	name += fmt.Sprintf(" %s %d", c.Op, c.N)
	n := o.w.led.confusionCount(c.True, c.Said, c.Route)
	return reports.Expectation{Name: name, Expected: fmt.Sprintf("%s %d", c.Op, c.N), Actual: fmt.Sprint(n), Verdict: verdict(c.Op.holds(n, c.N))}
}
