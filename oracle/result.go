package oracle

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
)

// The result's verdict, assembled the same way for every run the ledger
// judges: the simulator's, a drill's judged again from its history.

// InvariantResults says what became of each invariant the ledger checks:
// violated, held to the end, not observable (the run lacks what it reads:
// obs), or skipped — turned off (pageWithin < 0; a policy with no maximum
// of attempts), or checked only until the run stopped (stopped says
// where; "" for a run that reached its end).
func InvariantResults(led *Ledger, obs Observed, pageWithin time.Duration, stopped string) []reports.InvariantResult {
	names := Invariants()
	out := make([]reports.InvariantResult, 0, len(names))
	for _, name := range names {
		ir := reports.InvariantResult{Name: name, Verdict: reports.Passed, Violations: led.ViolationCount(name)}
		why, lacking := obs.Lacks(InvariantReads(name, ViaLedger))
		switch {
		case lacking:
			// What the ledger saw of it is not the whole: no verdict.
			ir.Verdict, ir.Note, ir.Violations = reports.NotObservable, "not observable in this drill: "+why, 0
		case ir.Violations > 0:
			ir.Verdict = reports.Failed
		case name == InvCriticalPaged && pageWithin < 0:
			ir.Verdict, ir.Note = reports.Skipped, "turned off (invariants.pageWithin: off)"
		case name == InvAttempts && led.MaxAttempts() <= 0:
			ir.Verdict, ir.Note = reports.Skipped, "turned off: the retry policy sets no maximum of attempts"
		case stopped != "":
			ir.Verdict, ir.Note = reports.Skipped, "not checked to the end: "+stopped
		}
		out = append(out, ir)
	}
	return out
}

// ObservedViolations are res's violations of the invariants it could
// observe: a violation of one it could not (a drill's event stream
// trimmed) is the ledger's view of part of the run, not a verdict.
func ObservedViolations(res *reports.Result) []reports.Violation {
	unseen := map[string]bool{}
	for _, ir := range res.Invariants {
		if ir.Verdict == reports.NotObservable {
			unseen[ir.Name] = true
		}
	}
	if len(unseen) == 0 {
		return res.Violations
	}
	out := res.Violations[:0:0]
	for _, v := range res.Violations {
		if !unseen[v.Invariant] {
			out = append(out, v)
		}
	}
	return out
}

// Conclude finishes res: it evaluates sc's expectations against o, adds
// what the faults' hits and the misses of the faults aimed at a state say
// (FaultChecks, WhenChecks), and gives the verdict — skipped expectations
// and no verdict of its own for a run that stopped early (stopped says
// where), else failed on any violation or any failed expectation, passed
// otherwise.
func Conclude(res *reports.Result, sc *scenarios.Scenario, o *Observation, misses []Miss, stopped string) {
	for _, e := range sc.Expect {
		res.Expectations = append(res.Expectations, Evaluate(e, o))
	}
	FaultChecks(res, stopped)
	WhenChecks(res, sc, misses, stopped)
	if stopped != "" {
		// Judged on part of a run, an expectation would mean nothing.
		for i := range res.Expectations {
			e := &res.Expectations[i]
			e.Actual, e.Verdict = "not evaluated: "+stopped, reports.Skipped
		}
		return
	}
	res.Verdict = reports.Passed
	if len(res.Violations) > 0 {
		res.Verdict = reports.Failed
	}
	for _, e := range res.Expectations {
		if e.Verdict != reports.Passed && e.Verdict != reports.NotObservable {
			res.Verdict = reports.Failed
		}
	}
}

// WhenChecks adds to res what the misses of the faults aimed at a state
// say. A fault that requires hits fails when it never hit, or when one of
// its windows struck none of the workers it waited for, and its
// expectation names every miss; any other miss is a warning. Neither is
// ever a silent pass: a fault that did not find its state did not test
// what it was written for.
func WhenChecks(res *reports.Result, sc *scenarios.Scenario, misses []Miss, stopped string) {
	for _, f := range sc.Faults {
		if f.Schedule.When == nil || f.Target.Kind != faults.Worker {
			continue
		}
		var texts []string
		whole := false
		count := map[[2]int64]int{}
		for _, m := range misses {
			if m.Fault != f.Name {
				continue
			}
			texts = append(texts, m.String())
			k := [2]int64{m.FromMs, m.UntilMs}
			count[k]++
			whole = whole || count[k] >= m.Targeted
		}
		name := "fault " + f.Name + " hits at least once (requireHits)"
		i := slices.IndexFunc(res.Expectations, func(e reports.Expectation) bool { return e.Name == name })
		switch {
		case f.RequireHits && i >= 0:
			e := &res.Expectations[i]
			e.Expected = fmt.Sprintf("≥ 1 hit, and every window finding a targeted worker %s", f.Schedule.When)
			if len(texts) > 0 {
				e.Actual += "; " + strings.Join(texts, "; ")
			}
			if whole {
				e.Verdict = reports.Failed
			}
		case stopped == "":
			for _, t := range texts {
				res.Warnings = append(res.Warnings, fmt.Sprintf("fault %s (%s on %s) %s, so it did not strike it there (requireHits: true makes a window that strikes no worker a failure)",
					f.Name, f.Model.Name(), f.Target, t))
			}
		}
	}
}
