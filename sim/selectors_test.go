package sim_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/reference/degrade"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
)

var _ = Describe("Faults aimed at a task or an attempt, and the calls per window (issue 15)", func() {
	faultNamed := func(sc *scenarios.Scenario, name string) *faults.Fault {
		GinkgoHelper()
		for i := range sc.Faults {
			if sc.Faults[i].Name == name {
				return &sc.Faults[i]
			}
		}
		Fail("no fault " + name)
		return nil
	}

	It("times out a job's first attempt only: its retry succeeds under its key, charged once", func() {
		sc := builtin("payment-challenge")
		got := judged(sc,
			scenarios.JobFate{JobID: "pay-first-timeout", State: disposition.Succeeded},
			scenarios.JobAttempts{JobID: "pay-first-timeout", CheckCount: true, Op: scenarios.Exactly, N: 2})
		Expect(got[0].Verdict).To(Equal(reports.Passed), got[0].Actual)
		Expect(got[1].Verdict).To(Equal(reports.Passed), got[1].Actual)

		// The same fault without its attempts selector strikes every
		// attempt: the job burns its budget and is dead-lettered.
		faultNamed(&sc, "first-attempt-timeout").Schedule.Attempts = nil
		got = judged(sc,
			scenarios.JobFate{JobID: "pay-first-timeout", State: disposition.Succeeded},
			scenarios.JobAttempts{JobID: "pay-first-timeout", CheckCount: true, Op: scenarios.Exactly, N: 2})
		Expect(got[0].Verdict).To(Equal(reports.Failed))
		Expect(got[1].Verdict).To(Equal(reports.Failed))
	})

	It("hits only the calls of the tasks it names", func() {
		sc := builtin("payment-challenge")
		sc.Faults = append(sc.Faults, faults.Fault{Name: "receipts-down", Target: faults.Target{Kind: faults.Dependency, Name: "smtp"},
			Model: faults.Outage{}, Schedule: faults.Schedule{Tasks: []string{"send-receipt"}, From: 5 * time.Minute, Until: 5*time.Minute + time.Second}})
		res := run(sc)
		var hits int64
		for _, f := range res.Faults {
			if f.Name == "receipts-down" {
				hits = f.Hits
			}
		}
		Expect(hits).To(BeNumerically(">", 0))

		sc.Faults[len(sc.Faults)-1].Schedule.Tasks = []string{"charge"}
		Expect(sc.Validate()).To(MatchError(ContainSubstring(`task "charge" calls "payment-gateway", not "smtp", so the fault never fires for it`)))
		sc.Faults[len(sc.Faults)-1].Schedule.Tasks = []string{"send-reciept"}
		Expect(sc.Validate()).To(MatchError(ContainSubstring(`"send-reciept" is not a task of the workload (the tasks are charge, send-receipt), so the fault never fires for it; did you mean "send-receipt"?`)))
	})

	It("reads the calls per window during a breaker's ramp-up, and a breaker without one stampedes", func() {
		sc := builtin("graceful-degradation")
		ramp := scenarios.RetryRate{Dependency: "primary", From: 2 * time.Minute, Until: 160 * time.Second, Window: time.Second, Op: scenarios.AtMost, N: 20, Calls: true}
		got := judged(sc, ramp)
		Expect(got[0].Verdict).To(Equal(reports.Passed), got[0].Actual)
		Expect(got[0].Name).To(Equal("calls to primary per 1s from +2m0s until +2m40s ≤ 20"))
		Expect(got[0].Actual).To(MatchRegexp(`^\d+ \(the 1s from \+\S+; \d+ made from \+2m0s until \+2m40s\)$`))

		sc.System.Breakers[0].Config.RampUp = degrade.NoRampUp
		got = judged(sc, ramp)
		Expect(got[0].Verdict).To(Equal(reports.Failed))
		Expect(got[0].Actual).To(HaveSuffix(": the calls stampeded back instead of ramping up behind the breaker and the dependency's retry budget"))
	})
})
