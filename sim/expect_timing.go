package sim

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
)

// Attempts returns when each attempt of job id began (its leases), oldest
// first, if the run kept the job: every explicit job, and every generated
// job an expectation names.
func (o *Observation) Attempts(id string) ([]time.Duration, bool) {
	if o.w == nil {
		return nil, false
	}
	return o.w.led.Attempts(id)
}

// evalJobAttempts judges JobAttempts: it reads the job's attempt times.
func evalJobAttempts(a scenarios.JobAttempts, o *Observation) reports.Expectation {
	var want []string
	if a.CheckCount {
		want = append(want, fmt.Sprintf("%s %d attempts", a.Op, a.N))
	}
	if a.MinGap > 0 {
		want = append(want, fmt.Sprintf("attempts at least %s apart", a.MinGap))
	}
	e := reports.Expectation{Name: "job " + a.JobID + ": " + strings.Join(want, ", "), Expected: strings.Join(want, ", ")}
	times, ok := o.Attempts(a.JobID)
	if !ok {
		e.Actual, e.Verdict = "never created", reports.Failed
		return e
	}
	at := make([]string, len(times))
	for i, t := range times {
		at[i] = fmtOffset(t)
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

// RetriesDue returns when the scheduled retries of dependency dep's jobs
// came due, in order (the jobs' dependency is their task's).
func (o *Observation) RetriesDue(dep string) []time.Duration {
	if o.w == nil {
		return nil
	}
	var out []time.Duration
	for i, t := range o.w.tasks {
		if t.Dependency == dep {
			out = append(out, o.w.led.RetriesDue(i)...)
		}
	}
	slices.Sort(out)
	return out
}

// evalRetryRate judges RetryRate: it finds the busiest window.
func evalRetryRate(r scenarios.RetryRate, o *Observation) reports.Expectation {
	what, all := fmt.Sprintf("retries of %s's jobs due", r.Dependency), o.RetriesDue
	if r.Calls {
		what, all = "calls to "+r.Dependency, o.DependencyCalls
	}
	span := "from " + fmtOffset(r.From)
	if r.Until > 0 {
		span += " until " + fmtOffset(r.Until)
	}
	name := fmt.Sprintf("%s per %s %s %s %d", what, r.Window, span, r.Op, r.N)
	e := reports.Expectation{Name: name, Expected: fmt.Sprintf("%s %d per %s", r.Op, r.N, r.Window)}
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
			seen += " from " + fmtOffset(r.From) + " on"
		} else {
			seen += " " + span
		}
		e.Actual += fmt.Sprintf(" (the %s from %s; %d %s)", r.Window, fmtOffset(at), len(times), seen)
	}
	e.Verdict = verdict(r.Op.Holds(most, r.N))
	switch {
	case e.Verdict != reports.Failed || r.Op == scenarios.AtLeast:
	case r.Calls:
		e.Actual += ": the calls stampeded back instead of ramping up behind the breaker and the dependency's retry budget"
	default:
		e.Actual += ": the retries came back together instead of spread out by backoff jitter and the dependency's retry budget"
	}
	return e
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
