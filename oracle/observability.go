package oracle

import (
	"bytes"
	"fmt"

	"github.com/faultline/faultline/layout"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/scenarios"
)

// outsideConditions are the kinds of evidence a black-box drill has only
// when the scenario gives it the means, and what gives it.
var outsideConditions = []struct {
	ev   Evidence
	what string
}{
	{EvDeliveries, "the system is given the receivers' URLs (no `noAlerts`)"},
	{EvSeverity, "the DLQ's entries carry a severity (`dlq.fields.severity`)"},
	{EvPolicy, "the retry policy is declared (`system.external.policy`)"},
}

// outsideObserved is what a black-box drill observes at best: the
// receivers given, a severity on the entries, a policy declared.
func outsideObserved() Observed {
	h := &History{External: &ExternalRun{Alerts: true}}
	h.External.Entries = append(h.External.Entries, layout.Entry{Severity: "high"})
	return h.Observed()
}

// BlackBoxObservability is the scenario format reference's section on
// what a black-box drill can judge of each invariant and expectation,
// made from the checks' own declarations of what they read
// (InvariantReads, ExpectationReads): the one truth of it. The scenario
// format's generator appends it to scenarios.Reference().
func BlackBoxObservability() []byte {
	var b bytes.Buffer
	obs := outsideObserved()
	when := func(reads Evidence) string {
		if why, lacking := obs.Lacks(reads); lacking {
			return "not observable — " + why
		}
		var conds []string
		for _, c := range outsideConditions {
			if reads&c.ev != 0 {
				conds = append(conds, c.what)
			}
		}
		if len(conds) == 0 {
			return "judged"
		}
		s := "judged when " + conds[0]
		for _, c := range conds[1:] {
			s += " and " + c
		}
		return s
	}
	b.WriteString("\n## What a black-box drill can judge\n\n")
	b.WriteString("A black-box drill (`system.external`) sees the jobs it injected, the dependencies' call log, the notifications the receivers were sent and the DLQ as its layout reads it — not the system's own queues, verdicts, breakers or budgets. Each check declares what it reads; one that reads what the drill cannot see is reported *not observable*, with why, never passed. Generated from the oracle's declarations (`oracle.InvariantReads`, `oracle.ExpectationReads`).\n\n")
	b.WriteString("| invariant | in a black-box drill | reads |\n|---|---|---|\n")
	for _, name := range blackInvariants(true) {
		reads := InvariantReads(name, FromOutside)
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", name, when(reads), reads)
	}
	b.WriteString("\n| expectation | in a black-box drill | reads |\n|---|---|---|\n")
	row := func(what string, e scenarios.Expectation) {
		reads := ExpectationReads(e, FromOutside)
		fmt.Fprintf(&b, "| %s | %s | %s |\n", what, when(reads), reads)
	}
	for _, m := range scenarios.Metrics {
		row(fmt.Sprintf("`count: %s`", m), scenarios.Count{Metric: m})
	}
	row("`count: dead-lettered` with `class` or `severity`", scenarios.Count{Metric: scenarios.DeadLettered, Class: classify.Transient})
	row("`count: pages` with `receiver`", scenarios.Count{Metric: scenarios.Pages, Receiver: "on-call"})
	row("`count: created`, `succeeded` or `dead-lettered` with `task`", scenarios.Count{Metric: scenarios.Succeeded, Task: "charge"})
	row("`count` of another metric with `task`", scenarios.Count{Metric: scenarios.DeadLetters, Task: "charge"})
	row("`count: calls` (with `dependency`, `from`, `window`)", scenarios.RetryRate{Calls: true})
	row("`count: retried` (with `dependency`, `from`, `window`)", scenarios.RetryRate{})
	row("`job` (with `state`, `route`, `history`)", scenarios.JobFate{})
	row("`job` (with `attempts`, `atLeast`, `atMost`, `attemptGapsAtLeast`)", scenarios.JobAttempts{})
	row("`pageWithin`", scenarios.PageWithin{})
	row("`drainedBy`", scenarios.DrainedBy{})
	row("`breakerOpened`, `breakerClosedBy`, `breakerTransitions`", scenarios.BreakerOpened{})
	row("`confusion`", scenarios.Confusion{})
	return b.Bytes()
}
