package reports_test

import (
	"os"

	"github.com/faultline/faultline/reports"
)

// A run whose breaker never opened: the text report says what failed and
// how to run it again.
func ExampleWriteText() {
	r := &reports.Result{
		ReportVersion: reports.ReportVersion, Scenario: "graceful-degradation", Seed: 3, Verdict: reports.Failed,
		DurationMs: 300_000, EndedAtMs: 300_000,
		Expectations: []reports.Expectation{
			{Name: "lost = 0", Expected: "= 0", Actual: "0", Verdict: reports.Passed},
			{Name: "breaker primary opened at least 1 times", Expected: "≥ 1", Actual: "0", Verdict: reports.Failed},
		},
		Ledger: reports.Ledger{Created: 600, Succeeded: 580, DeadLettered: 20},
	}
	_ = reports.WriteText(os.Stdout, r, reports.TextOptions{})
	// Output:
	// FAIL  graceful-degradation  seed 3
	//   600 jobs: 580 succeeded, 20 dead-lettered, 0 pending, 0 in fallback, 0 lost; 0 notifications, 0 pages; 1 of 2 expectations failed
	//
	//   ✗ breaker primary opened at least 1 times
	//       expected ≥ 1, got 0
	//
	//   reproduce: faultline run graceful-degradation --seed 3
}

// Two runs of one scenario with two versions of a handler: the second
// loses jobs, a regression.
func ExampleDiff() {
	old := &reports.Result{Scenario: "worker-crash", Seed: 1, Verdict: reports.Passed, DurationMs: 60_000, EndedAtMs: 60_000,
		Expectations: []reports.Expectation{{Name: "lost = 0", Expected: "= 0", Actual: "0", Verdict: reports.Passed}},
		Ledger:       reports.Ledger{Created: 100, Succeeded: 100}}
	new := &reports.Result{Scenario: "worker-crash", Seed: 1, Verdict: reports.Failed, DurationMs: 60_000, EndedAtMs: 60_000,
		Expectations: []reports.Expectation{{Name: "lost = 0", Expected: "= 0", Actual: "2", Verdict: reports.Failed}},
		Ledger:       reports.Ledger{Created: 100, Succeeded: 98, Lost: 2}}
	d := reports.Diff(old, new)
	_ = reports.WriteDiff(os.Stdout, d)
	// Output:
	// report diff: worker-crash
	// ✗ verdict      verdict: passed → failed
	// ✗ expectation  lost = 0: passed (actual 0) → failed (actual 2)
	//   disposition  succeeded: 100 → 98
	// ✗ disposition  lost: 0 → 2
	// regression: 3 of 4 changes (marked ✗)
}
