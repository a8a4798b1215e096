package sim_test

import (
	"bytes"
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/degrade"
	"github.com/faultline/faultline/reference/retry"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
	"github.com/faultline/faultline/sim"
)

// A fleet (workers.processes): each worker process has its own retry
// budget and its own breakers, as a drill's processes do, over one store.
var _ = Describe("A fleet of worker processes (workers.processes)", func() {
	runWith := func(name string, processes int, change func(*scenarios.Scenario)) *reports.Result {
		GinkgoHelper()
		l, err := scenarios.LoadBuiltin(name)
		Expect(err).NotTo(HaveOccurred())
		sc := l.Scenario
		sc.Workers.Processes = processes
		change(&sc)
		sc = sc.WithDefaults()
		Expect(sc.Validate()).To(Succeed())
		res, err := sim.Run(context.Background(), sc)
		Expect(err).NotTo(HaveOccurred())
		return res
	}
	run := func(name string, processes int, scope ...retry.Scope) *reports.Result {
		GinkgoHelper()
		return runWith(name, processes, func(sc *scenarios.Scenario) {
			for _, s := range scope {
				sc.System.Retry.Budget.Scope = s
			}
		})
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

	It("holds a fleet's busiest second of retries to one budget, and names the per-process budgets that let 8 bursts through (fleet-retry-budget)", func() {
		const busiest = "retries of ledger's jobs due per 1s from +0s ≤ 8"
		fleet := run("fleet-retry-budget", 8)
		Expect(fleet.Verdict).To(Equal(reports.Passed))
		perProcess := run("fleet-retry-budget", 8, retry.ScopeProcess)
		Expect(perProcess.Verdict).To(Equal(reports.Failed))
		e := expectation(perProcess, busiest)
		Expect(e.Verdict).To(Equal(reports.Failed))
		Expect(e.Actual).To(ContainSubstring("the dependency's retry budget, which is one per process (scope: process): 8 processes, each letting 4 retries through at once and one every 500ms, are 8 budgets — the fleet's one budget (scope: fleet) bounds them all"))
		Expect(perProcess.Ledger.Lost).To(BeZero())
	})

	It("shares a fleet's breakers (scope: fleet), where breakers of each process's own let the storm outlast them (gateway-timeout-storm)", func() {
		// Sixteen slots over eight processes: each process's own breaker
		// sees an eighth of the timeouts and too few calls to judge a
		// failure rate; the fleet's sees them all.
		own := runWith("gateway-timeout-storm", 8, func(sc *scenarios.Scenario) {
			for i := range sc.System.Breakers {
				sc.System.Breakers[i].Fleet = false
			}
		})
		Expect(own.Verdict).To(Equal(reports.Failed))
		Expect(expectation(own, "breaker payment-gateway is closed by +5m0s").Verdict).To(Equal(reports.Failed))
		shared := run("gateway-timeout-storm", 8)
		Expect(shared.Verdict).To(Equal(reports.Passed))
		workers := map[string]bool{}
		reasons := map[string]bool{}
		for _, t := range shared.Breakers {
			workers[t.Worker] = true
			reasons[t.Reason] = true
		}
		Expect(workers).To(HaveLen(8), "each process's breaker, named by process")
		for w := range workers {
			Expect(w).To(MatchRegexp(`^w[1-8]$`))
		}
		Expect(reasons).To(HaveKey(degrade.ReasonFleetOpened), "the fleet opened as one")
		one := run("gateway-timeout-storm", 1)
		Expect(one.Verdict).To(Equal(reports.Passed))
		for _, t := range one.Breakers {
			Expect(t.Worker).To(BeEmpty(), "a one-process fleet names no process")
		}
	})

	It("strikes a process with a worker fault: every slot it runs (worker/w3 in a fleet of 2 over 4 slots is process w1: slots w1 and w3)", func() {
		l, err := scenarios.LoadBuiltin("worker-crash")
		Expect(err).NotTo(HaveOccurred())
		sc := l.Scenario
		sc.Workers.Processes = 2
		sc.Faults = []faults.Fault{{Name: "crash-w3", Target: faults.Target{Kind: faults.Worker, Name: "w3"},
			Model: faults.WorkerCrash{RestartAfter: 15 * time.Second}, Schedule: faults.Schedule{From: time.Minute, Until: time.Minute + time.Second}}}
		sc.Expect = nil
		var buf bytes.Buffer
		res, err := sim.Run(context.Background(), sc, sim.WithHistory(&buf, "spec"))
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Ledger.Lost).To(BeZero())
		h, err := oracle.Read(&buf)
		Expect(err).NotTo(HaveOccurred())
		began := map[string]int{}
		for _, a := range h.Attempts {
			if a.AtMs >= 61_000 && a.AtMs < 75_000 {
				began[a.Worker]++
			}
		}
		Expect(began).NotTo(HaveKey("w1"), "down with its process")
		Expect(began).NotTo(HaveKey("w3"), "down with its process")
		Expect(began).To(HaveKey("w2"))
		Expect(began).To(HaveKey("w4"))
		for _, f := range res.Faults {
			if f.Name == "crash-w3" {
				Expect(f.Hits).To(BeEquivalentTo(1), "one process struck")
			}
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
