package sim_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/retry"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
	"github.com/faultline/faultline/sim"
)

// A fleet (workers.processes): each worker process has its own retry
// budget and its own breakers, as a drill's processes do, over one store.
var _ = Describe("A fleet of worker processes (workers.processes)", func() {
	run := func(name string, processes int, scope ...retry.Scope) *reports.Result {
		GinkgoHelper()
		l, err := scenarios.LoadBuiltin(name)
		Expect(err).NotTo(HaveOccurred())
		sc := l.Scenario
		sc.Workers.Processes = processes
		for _, s := range scope {
			sc.System.Retry.Budget.Scope = s
		}
		sc = sc.WithDefaults()
		Expect(sc.Validate()).To(Succeed())
		res, err := sim.Run(context.Background(), sc)
		Expect(err).NotTo(HaveOccurred())
		return res
	}
	expectation := func(r *reports.Result, name string) reports.Expectation {
		GinkgoHelper()
		for _, e := range r.Expectations {
			if e.Name == name {
				return e
			}
		}
		Fail("no expectation " + name)
		return reports.Expectation{}
	}

	It("bounds the fleet by one retry budget, where eight per-process budgets let a storm burn its attempts (retry-storm-on-recovery)", func() {
		one := run("retry-storm-on-recovery", 1)
		Expect(one.Verdict).To(Equal(reports.Passed))
		perProcess := run("retry-storm-on-recovery", 8, retry.ScopeProcess)
		Expect(perProcess.Verdict).To(Equal(reports.Failed))
		Expect(expectation(perProcess, "dead-letters with class transient = 0").Verdict).To(Equal(reports.Failed))
		Expect(perProcess.Ledger.Lost).To(BeZero())
		fleet := run("retry-storm-on-recovery", 8)
		Expect(fleet.Verdict).To(Equal(reports.Passed), "the fleet's budget (the default scope)")
	})

	It("gives each process its own breakers, named by process in the transitions, and the storm outlasts them (gateway-timeout-storm)", func() {
		r := run("gateway-timeout-storm", 8)
		workers := map[string]bool{}
		for _, t := range r.Breakers {
			workers[t.Worker] = true
		}
		// Sixteen slots over eight processes: each breaker sees an eighth of
		// the timeouts, and only the process that saw enough of them
		// opened its own.
		Expect(workers).NotTo(BeEmpty())
		Expect(workers).NotTo(HaveKey(""))
		for w := range workers {
			Expect(w).To(MatchRegexp(`^p[1-8]$`))
		}
		Expect(r.Verdict).To(Equal(reports.Failed))
		Expect(expectation(r, "breaker payment-gateway is closed by +5m0s").Verdict).To(Equal(reports.Failed))
		one := run("gateway-timeout-storm", 1)
		Expect(one.Verdict).To(Equal(reports.Passed))
		for _, t := range one.Breakers {
			Expect(t.Worker).To(BeEmpty(), "a one-process fleet names no process")
		}
	})

	It("refuses more processes than worker slots, and fewer than one", func() {
		l, err := scenarios.LoadBuiltin("retry-storm-on-recovery")
		Expect(err).NotTo(HaveOccurred())
		sc := l.Scenario.WithDefaults()
		sc.Workers.Processes = sc.Workers.Count + 1
		Expect(sc.Validate()).To(MatchError(ContainSubstring("9 processes for 8 worker slots: a process runs at least one slot (at most 8)")))
		sc.Workers.Processes = -1
		Expect(sc.Validate()).To(MatchError(ContainSubstring("must be at least 1")))
	})
})
