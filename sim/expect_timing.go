package sim

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reports"
)

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

func (a JobAttempts) jobs() []string { return []string{a.JobID} }

// Attempts returns when each attempt of job id began (its leases), oldest
// first, if the run kept the job: every explicit job, and every generated
// job an expectation names.
func (o *Observation) Attempts(id string) ([]time.Duration, bool) {
	if o.w == nil {
		return nil, false
	}
	if _, ok := o.w.led.jobs[id]; !ok {
		return nil, false
	}
	return o.w.led.ow.leases[id], true
}

// Evaluate reads the job's attempt times.
func (a JobAttempts) Evaluate(o *Observation) reports.Expectation {
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
	pass := !a.CheckCount || a.Op.holds(int64(len(times)), a.N)
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

func (r RetryRate) wantsDue() bool { return true }

// RetriesDue returns when the scheduled retries of dependency dep's jobs
// came due, in order (the jobs' dependency is their task's).
func (o *Observation) RetriesDue(dep string) []time.Duration {
	if o.w == nil {
		return nil
	}
	var out []time.Duration
	for i, t := range o.w.tasks {
		if t.Dependency == dep && i < len(o.w.led.ow.due) {
			out = append(out, o.w.led.ow.due[i]...)
		}
	}
	slices.Sort(out)
	return out
}

// Evaluate finds the busiest window.
func (r RetryRate) Evaluate(o *Observation) reports.Expectation {
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
	times := r.window(all(r.Dependency))
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
	e.Verdict = verdict(r.Op.holds(most, r.N))
	switch {
	case e.Verdict != reports.Failed || r.Op == AtLeast:
	case r.Calls:
		e.Actual += ": the calls stampeded back instead of ramping up behind the breaker and the dependency's retry budget"
	default:
		e.Actual += ": the retries came back together instead of spread out by backoff jitter and the dependency's retry budget"
	}
	return e
}

func (r RetryRate) window(times []time.Duration) []time.Duration {
	i, _ := slices.BinarySearch(times, r.From)
	j := len(times)
	if r.Until > 0 {
		j, _ = slices.BinarySearch(times, r.Until)
	}
	return times[i:max(i, j)]
}

// noteAttempt keeps the attempt times of watched jobs and the due times
// of retries an expectation reads.
func (l *ledger) noteTiming(r *rec, e disposition.Event, at time.Duration) {
	switch e.Reason {
	case disposition.Leased:
		if r.watched {
			if l.ow.leases == nil {
				l.ow.leases = make(map[string][]time.Duration)
			}
			l.ow.leases[r.id] = append(l.ow.leases[r.id], at)
		}
	case disposition.Due:
		if l.ow.wantDue {
			for int(r.task) >= len(l.ow.due) {
				l.ow.due = append(l.ow.due, nil)
			}
			l.ow.due[r.task] = append(l.ow.due[r.task], at)
		}
	}
}
