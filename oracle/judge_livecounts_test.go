package oracle_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
)

// Counts a drill records outside the store's stream — its alerter's own
// counts, the sends a receiver refused — are judged from the history; a
// count the history neither records nor observes is not observable, never
// 0 and never passed.
var _ = Describe("The live judge's counts of what the drill's alerter did (oracle.Judge)", func() {
	scenario := func(expect ...scenarios.Expectation) scenarios.Scenario {
		return scenarios.Scenario{
			Name: "live-counts", Seed: 1, Duration: time.Minute,
			Workload: scenarios.WorkloadSpec{Tasks: []scenarios.TaskSpec{{Name: "export"}}},
			Workers:  scenarios.WorkersSpec{Count: 1, LeaseTTL: 30 * time.Second},
			Expect:   expect,
		}
	}
	history := func() *oracle.History {
		return &oracle.History{Version: oracle.HistoryVersion, Scenario: "live-counts", Seed: 1, TimeScale: 1, DurationMs: 60_000, EndedMs: 60_000,
			Workers: []string{"w1"}, Snapshots: []oracle.Snapshot{{AtMs: 59_000}}}
	}
	judge := func(sc scenarios.Scenario, h *oracle.History) *reports.Result {
		res, err := oracle.Judge(context.Background(), sc, h)
		Expect(err).NotTo(HaveOccurred())
		return res
	}
	alerts := scenarios.Count{Metric: scenarios.AlertsRaised, Op: scenarios.Exactly, N: 1}

	It("judges the alerts raised from the alerter's counts the history recorded", func() {
		h := history()
		h.Alerter = &oracle.AlerterCounts{Raised: 1, Deduplicated: 241}
		r := judge(scenario(alerts), h)
		Expect(r.Expectations).To(ConsistOf(And(HaveField("Actual", "1"), HaveField("Verdict", reports.Passed))))
		Expect(r.Alerts.Raised).To(BeEquivalentTo(1))
		Expect(r.Alerts.Deduplicated).To(BeEquivalentTo(241))
		Expect(r.Verdict).To(Equal(reports.Passed))
	})

	It("says the alerts raised are not observable in a history without the alerter's counts, and does not pass or fail the drill on it", func() {
		r := judge(scenario(alerts), history())
		Expect(r.Expectations).To(ConsistOf(And(HaveField("Verdict", reports.NotObservable), HaveField("Actual", ContainSubstring("not observable")))))
		Expect(r.Verdict).To(Equal(reports.Passed))
	})

	It("says every check that reads the store's stream is not observable when the drill's stream was trimmed, and fails nothing on the part it read", func() {
		h := history()
		h.Alerter = &oracle.AlerterCounts{}
		// A job the producer made whose events the trimmed stream lost:
		// the ledger alone would call it lost.
		h.Jobs = []oracle.Job{{AtMs: 1_000, ID: "export-1", Task: "export", Outcome: "ok"}}
		h.EventsLost = true
		r := judge(scenario(scenarios.Count{Metric: scenarios.Lost, Op: scenarios.Exactly, N: 0}), h)
		for _, ir := range r.Invariants {
			if ir.Name == oracle.InvConservation || ir.Name == oracle.InvLegalMove {
				Expect(ir).To(And(HaveField("Verdict", reports.NotObservable), HaveField("Note", ContainSubstring("trimmed"))), ir.Name)
			}
		}
		Expect(r.Violations).To(BeEmpty())
		Expect(r.Expectations).To(ConsistOf(HaveField("Verdict", reports.NotObservable)))
		Expect(r.Verdict).NotTo(Equal(reports.Failed))
		Expect(r.Verdict).NotTo(Equal(reports.Passed), "a drill that saw part of its jobs does not pass")

		h.EventsLost = false // the same drill, its stream whole: the job is lost
		r = judge(scenario(scenarios.Count{Metric: scenarios.Lost, Op: scenarios.Exactly, N: 0}), h)
		Expect(r.Violations).To(ContainElement(HaveField("Invariant", oracle.InvConservation)))
		Expect(r.Verdict).To(Equal(reports.Failed))
	})

	It("counts a send the receiver refused as alerts-refused, as the simulator's sink does", func() {
		h := history()
		h.Alerter = &oracle.AlerterCounts{}
		h.Deliveries = []oracle.Delivery{{AtMs: 1_000, Receiver: "team", Attempt: 1, Accepted: false, Error: "401"}}
		r := judge(scenario(scenarios.Count{Metric: scenarios.AlertsRefused, Op: scenarios.AtLeast, N: 1}), h)
		Expect(r.Expectations).To(ConsistOf(And(HaveField("Actual", "1"), HaveField("Verdict", reports.Passed))))
	})

	It("says a retry budget's counts are not observable in a drill (each worker process keeps its own)", func() {
		h := history()
		h.Alerter = &oracle.AlerterCounts{}
		r := judge(scenario(scenarios.Count{Metric: scenarios.BudgetDelayed, Op: scenarios.Exactly, N: 0}), h)
		Expect(r.Expectations).To(ConsistOf(HaveField("Verdict", reports.NotObservable)))
	})
})
