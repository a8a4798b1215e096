package oracle

import (
	"fmt"
	"slices"
	"time"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/retry"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
)

// Evaluate judges expectation e against observation o: the expectation
// types are data (package scenarios), and each has its evaluation here, the
// same for every run that gives an Observation — the simulator's, a drill's
// judged again from its history, a black-box drill's.
//
// An expectation that reads evidence the run lacks (ExpectationReads,
// Observed) is not observable, with why: never evaluated on what is not
// there, never passed.
func Evaluate(e scenarios.Expectation, o *Observation) reports.Expectation {
	if why, lacking := o.Observed.Lacks(ExpectationReads(e, o.Ledger == nil)); lacking {
		expected := "-"
		switch c := e.(type) {
		case scenarios.Count:
			expected = fmt.Sprintf("%s %d", c.Op, c.N)
		case *scenarios.Count:
			expected = fmt.Sprintf("%s %d", c.Op, c.N)
		}
		return reports.Expectation{Name: e.Name(), Expected: expected, Actual: "not observable: " + why, Verdict: reports.NotObservable}
	}
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
	return reports.Expectation{Name: fmt.Sprintf("%T", e), Expected: "-", Actual: "not an expectation the oracle knows", Verdict: reports.Failed}
}

// Probe is the ledger at one instant an expectation asked for (a
// scenarios Probes instant): its counts and the breakers' states.
type Probe struct {
	At                                      time.Duration
	Queued, InFlight, Scheduled, Fallback   int64
	DeadLettered, Succeeded, Removed, Total int64
	// Breakers are the breakers' states by name.
	Breakers map[string]string
}

// FiringKey names the firing deliveries of one alert fingerprint, at one
// severity, to one receiver (Observation.Firing counts them).
type FiringKey struct {
	Receiver, Fingerprint string
	Severity              classify.Severity
}

// Observation is what a run found, for expectations to judge: the result
// (ledger totals, alerts, breakers) and the facts the result does not list
// in full. A driver fills in what it observed; what it leaves empty reads
// as nothing happened, except where Observed says it could not be seen.
type Observation struct {
	// Result is the run's result as far as it is filled in: its ledger
	// totals, alerts and breaker transitions.
	Result *reports.Result
	// Ledger is the run's ledger; nil for a black-box drill's, whose
	// counts are read from Result alone.
	Ledger *Ledger
	// Probes are the snapshots taken at the instants expectations asked
	// for (scenarios' Probes).
	Probes map[time.Duration]*Probe
	// FirstCritical is when the first critical failure happened (if
	// HasCritical); FirstCriticalPage when the first high-severity alert
	// for a critical failure's fingerprint reached a receiver at or after
	// it (if HasCriticalPage).
	FirstCritical, FirstCriticalPage time.Duration
	HasCritical, HasCriticalPage     bool
	// Firing counts the firing deliveries.
	Firing map[FiringKey]int64
	// Calls are when each dependency was called, by name, when an
	// expectation asked the run to keep them (a RetryRate of calls).
	Calls map[string][]time.Duration
	// TaskDependencies are the dependency of each workload task, by the
	// task's index.
	TaskDependencies []string
	// Entry returns a job's DLQ entry at the end of the run, if it has
	// one; nil when the run cannot read entries.
	Entry func(id string) (dlq.Entry, bool)
	// Budget is the retry budget the scenario configures (nil: none, or
	// a black box's own) and Processes the fleet's processes: a failed
	// busiest window names the budget that let the retries through.
	Budget    *retry.BudgetConfig
	Processes int
	// Observed is what evidence the run has, and why it lacks the rest
	// (the zero value: everything, the simulator's): an expectation that
	// reads what the run lacks is reported not observable — never 0,
	// never passed.
	Observed Observed
}

// Fate returns where job id ended, if the run kept it: every explicit job,
// and every generated job an expectation names (scenarios' Jobs).
func (o *Observation) Fate(id string) (Fate, bool) {
	if o.Ledger == nil {
		return Fate{}, false
	}
	return o.Ledger.Fate(id)
}

// Probe returns the ledger at offset at, if an expectation asked for
// that instant.
func (o *Observation) Probe(at time.Duration) (*Probe, bool) {
	s := o.Probes[at]
	return s, s != nil
}

// Pages counts the firing deliveries of alerts with fingerprint fp ("" =
// any) and at least severity min, to receiver ("" = any).
func (o *Observation) Pages(receiver, fp string, min classify.Severity) int64 {
	var n int64
	for k, c := range o.Firing {
		if (receiver == "" || k.Receiver == receiver) && (fp == "" || k.Fingerprint == fp) && k.Severity >= min {
			n += c
		}
	}
	return n
}

// entry returns job id's DLQ entry, if the run can read it and it has one.
func (o *Observation) entry(id string) (dlq.Entry, bool) {
	if o.Entry == nil {
		return dlq.Entry{}, false
	}
	return o.Entry(id)
}

// Attempts returns when each attempt of job id began (its leases), oldest
// first, if the run kept the job.
func (o *Observation) Attempts(id string) ([]time.Duration, bool) {
	if o.Ledger == nil {
		return nil, false
	}
	return o.Ledger.Attempts(id)
}

// RetriesDue returns when the scheduled retries of dependency dep's jobs
// came due, in order (the jobs' dependency is their task's).
func (o *Observation) RetriesDue(dep string) []time.Duration {
	if o.Ledger == nil {
		return nil
	}
	var out []time.Duration
	for i, d := range o.TaskDependencies {
		if d == dep {
			out = append(out, o.Ledger.RetriesDue(i)...)
		}
	}
	slices.Sort(out)
	return out
}

// DependencyCalls returns when dependency dep was called (each attempt's
// call as it began, in order), if an expectation asked the run to keep
// them; nil otherwise.
func (o *Observation) DependencyCalls(dep string) []time.Duration { return o.Calls[dep] }

func verdict(ok bool) reports.Verdict {
	if ok {
		return reports.Passed
	}
	return reports.Failed
}
