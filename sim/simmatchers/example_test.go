package simmatchers_test

import (
	"fmt"

	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/sim/simmatchers"
)

// A run whose classifier called an auth failure transient: Pass fails with
// the violated rule, the job and its trail.
func ExamplePass() {
	res := &reports.Result{
		Scenario: "payment-challenge", Seed: 1, Verdict: reports.Failed,
		Violations: []reports.Violation{{
			Invariant: oracle.InvNoRetryOfFinal, AtMs: 180_050, JobID: "pay-auth",
			Message: `job pay-auth: a critical failure (fault revoked-key) was scheduled for a retry: the classifier said transient by rule "auth-status"`,
			Trail:   []string{`+3m0.05s  attempt failed: injected critical (fault revoked-key); classifier said transient by rule "auth-status" → retry`},
		}},
	}
	m := simmatchers.Pass()
	if ok, _ := m.Match(res); !ok {
		fmt.Println(m.FailureMessage(res))
	}
	// Output:
	// Expected scenario "payment-challenge" (seed 1) to pass, but its verdict is failed:
	//   invariant no-retry-of-permanent-or-critical violated at +3m0.05s by job pay-auth: job pay-auth: a critical failure (fault revoked-key) was scheduled for a retry: the classifier said transient by rule "auth-status"
	//       +3m0.05s  attempt failed: injected critical (fault revoked-key); classifier said transient by rule "auth-status" → retry
}

// A breaker without hysteresis on a flapping dependency.
func ExampleHaveBreakerTransitionsAtMost() {
	res := &reports.Result{Scenario: "flapping-inventory", Seed: 3, Breakers: []reports.Transition{
		{AtMs: 10_020, Breaker: "inventory", From: "closed", To: "open", Reason: "consecutive-failures"},
		{AtMs: 12_020, Breaker: "inventory", From: "open", To: "half-open", Reason: "open-elapsed"},
		{AtMs: 12_031, Breaker: "inventory", From: "half-open", To: "open", Reason: "probe-failed"},
	}}
	m := simmatchers.HaveBreakerTransitionsAtMost("inventory", 2)
	if ok, _ := m.Match(res); !ok {
		fmt.Println(m.FailureMessage(res))
	}
	// Output:
	// Expected breaker inventory of scenario "flapping-inventory" (seed 3) to change state at most 2 times, but it changed 3 times:
	//   +10.02s closed → open (consecutive-failures)
	//   +12.02s open → half-open (open-elapsed)
	//   +12.031s half-open → open (probe-failed)
}
