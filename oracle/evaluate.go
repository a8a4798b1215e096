package oracle

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/retry"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
)

// evalCount judges Count: it counts.
func evalCount(c scenarios.Count, o *Observation) reports.Expectation {
	led := o.Result.Ledger
	var n int64
	byTask := func(f func(reports.TaskTotals) int64) (n int64) {
		for _, t := range led.ByTask {
			if t.Task == c.Task {
				n = f(t)
			}
		}
		return n
	}
	switch c.Metric {
	case scenarios.Created:
		n = led.Created
		if c.Task != "" {
			n = byTask(func(t reports.TaskTotals) int64 { return t.Created })
		}
	case scenarios.Succeeded:
		n = led.Succeeded
		if c.Task != "" {
			n = byTask(func(t reports.TaskTotals) int64 { return t.Succeeded })
		}
	case scenarios.DeadLettered:
		if c.Task == "" && c.Severity == classify.SeverityNone && c.Class == 0 {
			n = led.DeadLettered
			break
		}
		if o.Ledger == nil { // a black-box drill's: by task, from the result
			for _, t := range led.ByTask {
				if t.Task == c.Task {
					n = t.DeadLettered
				}
			}
			break
		}
		n = o.Ledger.InDLQ(c.Task, c.Severity, c.Class)
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
	e := reports.Expectation{Name: f.Name(), Expected: f.Want()}
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
		entry, found := o.entry(f.JobID)
		switch {
		case !found:
			e.Actual += ", no DLQ entry"
			ok = false
		default:
			have := make([]classify.Class, len(entry.History))
			for i, h := range entry.History {
				have[i] = h.Verdict.Class
			}
			e.Actual += ", its DLQ entry's failure history " + scenarios.ClassList(have)
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

// evalPageWithin judges PageWithin: it compares the first page with the first critical failure.
func evalPageWithin(p scenarios.PageWithin, o *Observation) reports.Expectation {
	e := reports.Expectation{Name: p.Name(), Expected: "≤ " + p.Within.String()}
	if !o.HasCritical {
		e.Actual, e.Verdict = "no critical failure happened", reports.Failed
		return e
	}
	switch {
	case !o.HasCriticalPage:
		e.Actual, e.Verdict = "no page for a critical failure", reports.Failed
	default:
		gap := o.FirstCriticalPage - o.FirstCritical
		e.Actual, e.Verdict = gap.String(), verdict(gap <= p.Within)
	}
	return e
}

// evalDrainedBy judges DrainedBy: it reads the snapshot at At.
func evalDrainedBy(d scenarios.DrainedBy, o *Observation) reports.Expectation {
	e := reports.Expectation{Name: d.Name(), Expected: "0 entries"}
	if d.Queue == scenarios.QueueFallback {
		e.Expected = "0 jobs"
	}
	s, ok := o.Probe(d.At)
	if !ok {
		e.Actual, e.Verdict = "the run ended before "+scenarios.FormatOffset(d.At), reports.Failed
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
	return reports.Expectation{Name: b.Name(), Expected: fmt.Sprintf("≥ %d", b.AtLeast), Actual: fmt.Sprint(n), Verdict: verdict(n >= b.AtLeast)}
}

// evalBreakerClosedBy judges BreakerClosedBy: it reads the breaker's state at At.
func evalBreakerClosedBy(b scenarios.BreakerClosedBy, o *Observation) reports.Expectation {
	e := reports.Expectation{Name: b.Name(), Expected: "closed"}
	s, ok := o.Probe(b.At)
	if !ok {
		e.Actual, e.Verdict = "the run ended before "+scenarios.FormatOffset(b.At), reports.Failed
		return e
	}
	st, ok := s.Breakers[b.Breaker]
	if !ok {
		st = "no such breaker"
	}
	e.Actual, e.Verdict = st, verdict(st == "closed")
	return e
}

// evalBreakerTransitions judges BreakerTransitions: it counts the
// transitions of each worker process's own breaker and reads the busiest
// (hysteresis bounds each breaker, and N processes have N of them; the
// simulator's one breaker is one process's).
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
	return reports.Expectation{Name: b.Name(), Expected: fmt.Sprintf("%s %d", op, want), Actual: actual, Verdict: verdict(op.Holds(int64(n), int64(want)))}
}

// evalConfusion judges Confusion: it reads the matrix.
func evalConfusion(c scenarios.Confusion, o *Observation) reports.Expectation {
	e := reports.Expectation{Name: c.Name(), Expected: fmt.Sprintf("%s %d", c.Op, c.N)}
	if o.Ledger == nil { // Evaluate has said so, unless a driver's Observed is wrong
		e.Actual, e.Verdict = "not observable: the run kept no ledger", reports.NotObservable
		return e
	}
	n := o.Ledger.ConfusionCount(c.True, c.Said, c.Route)
	e.Actual, e.Verdict = fmt.Sprint(n), verdict(c.Op.Holds(n, c.N))
	return e
}

// evalJobAttempts judges JobAttempts: it reads the job's attempt times.
func evalJobAttempts(a scenarios.JobAttempts, o *Observation) reports.Expectation {
	e := reports.Expectation{Name: a.Name(), Expected: a.Want()}
	times, ok := o.Attempts(a.JobID)
	if !ok {
		e.Actual, e.Verdict = "never created", reports.Failed
		return e
	}
	at := make([]string, len(times))
	for i, t := range times {
		at[i] = scenarios.FormatOffset(t)
	}
	e.Actual = fmt.Sprintf("%d attempts", len(times))
	if len(times) > 0 {
		e.Actual += " (at " + strings.Join(at, ", ") + ")"
	}
	pass := !a.CheckCount || a.Op.Holds(int64(len(times)), a.N)
	if a.MinGap > 0 && len(times) < 2 {
		// A gap is a claim about retries: with no retry there is none to
		// read, and that is not a pass.
		pass = false
		e.Actual += ": no retry, so no gap between attempts to check (attemptGapsAtLeast needs at least 2 attempts)"
	}
	if a.MinGap > 0 {
		for i := 1; i < len(times); i++ {
			if gap := times[i] - times[i-1]; gap < a.MinGap {
				pass = false
				e.Actual += fmt.Sprintf(": attempt %d began %s after attempt %d, less than the %s expected (the backoff or the dependency's Retry-After hint may be shorter than that, or the retry did not wait one out)",
					i+1, gap, i, a.MinGap)
				break
			}
		}
	}
	e.Verdict = verdict(pass)
	return e
}

// evalRetryRate judges RetryRate: it finds the busiest window.
func evalRetryRate(r scenarios.RetryRate, o *Observation) reports.Expectation {
	all := o.RetriesDue
	if r.Calls {
		all = o.DependencyCalls
	}
	e := reports.Expectation{Name: r.Name(), Expected: fmt.Sprintf("%s %d per %s", r.Op, r.N, r.Window)}
	times := rateWindow(r, all(r.Dependency))
	var most int64
	var at time.Duration
	for i, j := 0, 0; j < len(times); j++ {
		for times[j]-times[i] >= r.Window {
			i++
		}
		if n := int64(j - i + 1); n > most {
			most, at = n, times[i]
		}
	}
	e.Actual = fmt.Sprintf("%d", most)
	if most > 0 {
		seen := "due"
		if r.Calls {
			seen = "made"
		}
		if r.Until == 0 {
			seen += " from " + scenarios.FormatOffset(r.From) + " on"
		} else {
			seen += " " + r.Span()
		}
		e.Actual += fmt.Sprintf(" (the %s from %s; %d %s)", r.Window, scenarios.FormatOffset(at), len(times), seen)
	}
	e.Verdict = verdict(r.Op.Holds(most, r.N))
	switch {
	case e.Verdict != reports.Failed || r.Op == scenarios.AtLeast:
	case r.Calls:
		e.Actual += ": the calls stampeded back instead of ramping up behind the breaker and the dependency's retry budget"
	default:
		e.Actual += ": the retries came back together instead of spread out by backoff jitter and " + budgetText(o)
	}
	return e
}

// budgetText names the retry budget that let a busiest window's retries
// through.
func budgetText(o *Observation) string {
	b := o.Budget
	switch {
	case b == nil:
		return "the dependency's retry budget"
	case b.Scope == retry.ScopeProcess && o.Processes > 1:
		return fmt.Sprintf("the dependency's retry budget, which is one per process (scope: process): %d processes, each letting %d retries through at once and one every %s, are %d budgets — the fleet's one budget (scope: fleet) bounds them all",
			o.Processes, b.Burst, b.Refill, o.Processes)
	}
	return fmt.Sprintf("the dependency's retry budget (%d at once, one every %s)", b.Burst, b.Refill)
}

// rateWindow is the part of times, sorted, that r reads: from r.From on,
// before r.Until when it is set.
func rateWindow(r scenarios.RetryRate, times []time.Duration) []time.Duration {
	i, _ := slices.BinarySearch(times, r.From)
	j := len(times)
	if r.Until > 0 {
		j, _ = slices.BinarySearch(times, r.Until)
	}
	return times[i:max(i, j)]
}

// FaultChecks adds to res what its faults' hits say: an expectation for
// each fault that requires hits, a warning for any other that never hit
// (none when the run stopped early: its later faults had no chance). The
// simulator and the black-box judge both call it.
func FaultChecks(res *reports.Result, stopped string) {
	for _, f := range res.Faults {
		switch {
		case f.RequireHits:
			res.Expectations = append(res.Expectations, reports.Expectation{Name: "fault " + f.Name + " hits at least once (requireHits)",
				Expected: "≥ 1 hit", Actual: fmt.Sprintf("%d %s", f.Hits, plural(f.Hits, "hit", "hits")), Verdict: verdict(f.Hits > 0)})
		case f.Hits == 0 && stopped == "":
			res.Warnings = append(res.Warnings, fmt.Sprintf("fault %s (%s on %s) never hit: no call reached its target while it was on, so the run did not test it (requireHits: true makes this a failure)",
				f.Name, f.Model, f.Target))
		}
	}
}

// plural is one for n == 1, else many.
func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
