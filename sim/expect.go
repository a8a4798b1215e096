package sim

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
)

// evaluate judges expectation e against observation o: the expectation
// types are data, and each has its evaluation here.
func evaluate(e scenarios.Expectation, o *Observation) reports.Expectation {
	switch x := e.(type) {
	case scenarios.Count:
		return evalCount(x, o)
	case *scenarios.Count:
		return evalCount(*x, o)
	case scenarios.JobFate:
		return evalJobFate(x, o)
	case *scenarios.JobFate:
		return evalJobFate(*x, o)
	case scenarios.PageWithin:
		return evalPageWithin(x, o)
	case *scenarios.PageWithin:
		return evalPageWithin(*x, o)
	case scenarios.DrainedBy:
		return evalDrainedBy(x, o)
	case *scenarios.DrainedBy:
		return evalDrainedBy(*x, o)
	case scenarios.BreakerOpened:
		return evalBreakerOpened(x, o)
	case *scenarios.BreakerOpened:
		return evalBreakerOpened(*x, o)
	case scenarios.BreakerClosedBy:
		return evalBreakerClosedBy(x, o)
	case *scenarios.BreakerClosedBy:
		return evalBreakerClosedBy(*x, o)
	case scenarios.BreakerTransitions:
		return evalBreakerTransitions(x, o)
	case *scenarios.BreakerTransitions:
		return evalBreakerTransitions(*x, o)
	case scenarios.Confusion:
		return evalConfusion(x, o)
	case *scenarios.Confusion:
		return evalConfusion(*x, o)
	case scenarios.JobAttempts:
		return evalJobAttempts(x, o)
	case *scenarios.JobAttempts:
		return evalJobAttempts(*x, o)
	case scenarios.RetryRate:
		return evalRetryRate(x, o)
	case *scenarios.RetryRate:
		return evalRetryRate(*x, o)
	}
	return reports.Expectation{Name: fmt.Sprintf("%T", e), Expected: "-", Actual: "not an expectation the simulator knows", Verdict: reports.Failed}
}

// Snapshot is the ledger at one instant.
type Snapshot struct {
	At                                      time.Duration
	Queued, InFlight, Scheduled, Fallback   int64
	DeadLettered, Succeeded, Removed, Total int64
	// Breakers are the breakers' states by name.
	Breakers map[string]string
}

// Fate is where one job ended (package oracle's: see oracle.Fate).
type Fate = oracle.Fate

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
func (o *Observation) notObserved(m scenarios.Metric) string {
	if o.w == nil || o.w.judge == nil {
		return ""
	}
	switch m {
	case scenarios.AlertsRaised:
		if o.w.judge.h.Alerter == nil {
			return "the drill's history does not record its alerter's own counts (a history from an older faultline)"
		}
	case scenarios.BudgetDelayed, scenarios.BudgetExceeded:
		return "a drill's retry budgets live in each worker process, which does not report them"
	}
	return ""
}

// Fate returns where job id ended, if the run kept it: every explicit job,
// and every generated job an expectation names (see Jobs).
func (o *Observation) Fate(id string) (Fate, bool) { return o.w.led.Fate(id) }

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
	s := &Snapshot{At: w.now(), Queued: l.Count(disposition.Queued), InFlight: l.Count(disposition.InFlight),
		Scheduled: l.Count(disposition.Scheduled), Fallback: l.Count(disposition.Fallback),
		DeadLettered: l.Count(disposition.DeadLettered), Succeeded: l.Count(disposition.Succeeded),
		Removed: l.Count(oracle.Removed), Total: l.Created(), Breakers: map[string]string{}}
	for _, br := range w.breakers {
		s.Breakers[br.name] = br.b.State().String()
	}
	return s
}

func verdict(ok bool) reports.Verdict {
	if ok {
		return reports.Passed
	}
	return reports.Failed
}

// evalCount judges Count: it counts.
func evalCount(c scenarios.Count, o *Observation) reports.Expectation {
	if why := o.notObserved(c.Metric); why != "" {
		return reports.Expectation{Name: c.Name(), Expected: fmt.Sprintf("%s %d", c.Op, c.N), Actual: "not observable: " + why, Verdict: reports.NotObservable}
	}
	led := o.Result.Ledger
	var n int64
	switch c.Metric {
	case scenarios.Created:
		n = led.Created
	case scenarios.Succeeded:
		n = led.Succeeded
	case scenarios.DeadLettered:
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
		n = o.w.led.InDLQ(c.Task, c.Severity, c.Class)
	case scenarios.DeadLetters:
		for _, d := range led.DeadLetteredBy {
			if (c.Task == "" || d.Task == c.Task) && (c.Severity == classify.SeverityNone || d.Severity == c.Severity.String()) &&
				(c.Class == 0 || d.Class == c.Class.String()) {
				n += d.Count
			}
		}
	case scenarios.Requeued:
		n = led.Requeues
	case scenarios.Retried:
		n = led.Retries
	case scenarios.InFallback:
		n = led.Fallback
	case scenarios.Diverted:
		n = led.Diversions
	case scenarios.Pending:
		n = led.Queued + led.InFlight + led.Scheduled + led.Fallback
	case scenarios.Pages:
		if c.Receiver == "" && c.Fingerprint == "" && c.Severity == classify.SeverityNone {
			n = o.Result.Alerts.Pages // the run's own count, as every report shows it
			break
		}
		sev := c.Severity
		if sev == classify.SeverityNone {
			sev = classify.High
		}
		n = o.Pages(c.Receiver, c.Fingerprint, sev)
	case scenarios.Notifications:
		if c.Receiver != "" {
			n = o.Result.Alerts.ByReceiver[c.Receiver]
		} else {
			n = o.Result.Alerts.Notifications
		}
	case scenarios.Lost:
		n = led.Lost
	case scenarios.Fenced:
		n = led.Fenced
	case scenarios.Held:
		n = led.Held
	case scenarios.Evicted:
		n = led.Evicted
	case scenarios.Charges:
		n = led.Charges
	case scenarios.Refused:
		n = led.Refused
	case scenarios.LeaseExpiries:
		n = led.LeaseExpiries
	case scenarios.AlertsRefused:
		n = o.Result.Alerts.Rejected
	case scenarios.BudgetDelayed:
		n = led.BudgetDelayed
	case scenarios.BudgetExceeded:
		n = led.BudgetExceeded
	case scenarios.AlertsRaised:
		n = o.Result.Alerts.Raised
	default:
		return reports.Expectation{Name: c.Name(), Expected: fmt.Sprintf("%s %d", c.Op, c.N), Actual: "unknown metric " + string(c.Metric), Verdict: reports.Failed}
	}
	return reports.Expectation{Name: c.Name(), Expected: fmt.Sprintf("%s %d", c.Op, c.N), Actual: fmt.Sprint(n), Verdict: verdict(c.Op.Holds(n, c.N))}
}

// evalJobFate judges JobFate: it looks the job up, and its DLQ entry when History is set.
func evalJobFate(f scenarios.JobFate, o *Observation) reports.Expectation {
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

// evalPageWithin judges PageWithin: it compares the first page with the first critical failure.
func evalPageWithin(p scenarios.PageWithin, o *Observation) reports.Expectation {
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

// evalDrainedBy judges DrainedBy: it reads the snapshot at At.
func evalDrainedBy(d scenarios.DrainedBy, o *Observation) reports.Expectation {
	e := reports.Expectation{Name: "the DLQ is drained by " + fmtOffset(d.At), Expected: "0 entries"}
	if d.Queue == scenarios.QueueFallback {
		e = reports.Expectation{Name: "the fallback queue is drained by " + fmtOffset(d.At), Expected: "0 jobs"}
	}
	s, ok := o.Snapshot(d.At)
	if !ok {
		e.Actual, e.Verdict = "the run ended before "+fmtOffset(d.At), reports.Failed
		return e
	}
	if d.Queue == scenarios.QueueFallback {
		e.Actual, e.Verdict = fmt.Sprintf("%d jobs", s.Fallback), verdict(s.Fallback == 0)
		if s.Fallback > 0 {
			e.Actual += ": the fallback queue did not drain back once the breaker closed"
		}
		return e
	}
	e.Actual, e.Verdict = fmt.Sprintf("%d entries", s.DeadLettered), verdict(s.DeadLettered == 0)
	return e
}

// evalBreakerOpened judges BreakerOpened: it counts the transitions to open.
func evalBreakerOpened(b scenarios.BreakerOpened, o *Observation) reports.Expectation {
	n := 0
	for _, t := range o.Result.Breakers {
		if t.Breaker == b.Breaker && t.To == "open" {
			n++
		}
	}
	return reports.Expectation{Name: fmt.Sprintf("breaker %s opened at least %d times", b.Breaker, b.AtLeast),
		Expected: fmt.Sprintf("≥ %d", b.AtLeast), Actual: fmt.Sprint(n), Verdict: verdict(n >= b.AtLeast)}
}

// evalBreakerClosedBy judges BreakerClosedBy: it reads the breaker's state at At.
func evalBreakerClosedBy(b scenarios.BreakerClosedBy, o *Observation) reports.Expectation {
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

// evalBreakerTransitions judges BreakerTransitions: it counts the transitions: of the one breaker in the simulator;
// in a drill, of each worker process's own breaker, reading the busiest
// (hysteresis bounds each breaker, and N processes have N of them).
func evalBreakerTransitions(b scenarios.BreakerTransitions, o *Observation) reports.Expectation {
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
	op, want := b.Comparison()
	words := map[scenarios.Op]string{scenarios.Exactly: "exactly", scenarios.AtLeast: "at least", scenarios.AtMost: "at most"}[op]
	return reports.Expectation{Name: fmt.Sprintf("breaker %s changes state %s %d times", b.Breaker, words, want),
		Expected: fmt.Sprintf("%s %d", op, want), Actual: actual, Verdict: verdict(op.Holds(int64(n), int64(want)))}
}

// evalConfusion judges Confusion: it reads the matrix.
func evalConfusion(c scenarios.Confusion, o *Observation) reports.Expectation {
	name := c.True.String() + " failures"
	if c.Said != 0 {
		name += " classified " + c.Said.String()
	}
	if c.Route != 0 {
		name += " routed to " + c.Route.String()
	}
	name += fmt.Sprintf(" %s %d", c.Op, c.N)
	n := o.w.led.ConfusionCount(c.True, c.Said, c.Route)
	return reports.Expectation{Name: name, Expected: fmt.Sprintf("%s %d", c.Op, c.N), Actual: fmt.Sprint(n), Verdict: verdict(c.Op.Holds(n, c.N))}
}
