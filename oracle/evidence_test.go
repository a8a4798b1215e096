package oracle_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
)

var _ = Describe("The evidence checks read", func() {
	It("is declared for every invariant the ledger checks, and the black-box judge's own", func() {
		for _, name := range append(oracle.Invariants(), oracle.InvNoSecretLeaves) {
			Expect(oracle.InvariantReads(name, oracle.ViaLedger)).NotTo(BeZero(), name)
			Expect(oracle.InvariantReads(name, oracle.FromOutside)).NotTo(BeZero(), name)
		}
		for _, name := range []string{oracle.InvNotBoth, oracle.InvDLQNeverShrinks, oracle.InvDLQSeverity} {
			Expect(oracle.HasOutsideCheck(name)).To(BeTrue(), name)
		}
	})

	It("is declared for every kind of expectation", func() {
		for _, e := range []scenarios.Expectation{scenarios.Count{Metric: scenarios.Lost}, scenarios.JobFate{}, scenarios.PageWithin{}, scenarios.DrainedBy{},
			scenarios.BreakerOpened{}, scenarios.BreakerClosedBy{}, scenarios.BreakerTransitions{}, scenarios.Confusion{}, scenarios.JobAttempts{},
			scenarios.RetryRate{}, scenarios.RetryRate{Calls: true}, &scenarios.JobFate{}} {
			Expect(oracle.ExpectationReads(e, oracle.ViaLedger)).NotTo(BeZero(), "%T", e)
		}
	})
})

var _ = Describe("What a history observed", func() {
	It("is everything for the simulator", func() {
		_, lacking := oracle.Simulated().Lacks(oracle.EvStream | oracle.EvBudgets | oracle.EvTexts | oracle.EvDLQReads)
		Expect(lacking).To(BeFalse())
	})

	It("lacks, for a drill of the reference, the retry budgets (kept in each worker process), and the alerter's counts only in an older history", func() {
		h := &oracle.History{Alerter: &oracle.AlerterCounts{}}
		o := h.Observed()
		Expect(o.Has(oracle.EvStream | oracle.EvAttempts | oracle.EvCalls | oracle.EvDeliveries | oracle.EvBreakers | oracle.EvAlerter | oracle.EvDLQ)).To(BeTrue())
		why, lacking := o.Lacks(oracle.EvBudgets)
		Expect(lacking).To(BeTrue())
		Expect(why).To(Equal("it reads the retry budgets' counts: a drill's retry budgets live in each worker process, which does not report them"))

		h.Alerter = nil
		_, lacking = h.Observed().Lacks(oracle.EvAlerter)
		Expect(lacking).To(BeTrue())
		h.EventsLost = true
		why, _ = h.Observed().Lacks(oracle.InvariantReads(oracle.InvConservation, oracle.ViaLedger))
		Expect(why).To(ContainSubstring("trimmed"))
	})

	It("lacks, for a black box, what happens inside the system, and names every kind a check misses with each reason once", func() {
		h := &oracle.History{External: &oracle.ExternalRun{Alerts: true}}
		o := h.Observed()
		Expect(o.Has(oracle.EvJobs | oracle.EvCalls | oracle.EvDeliveries | oracle.EvDLQ | oracle.EvDLQReads)).To(BeTrue())
		why, lacking := o.Lacks(oracle.InvariantReads(oracle.InvOutcomeIsMove, oracle.FromOutside))
		Expect(lacking).To(BeTrue())
		Expect(why).To(HavePrefix("it reads the store's disposition events and each attempt's verdict (class, severity, action) as its worker decided it: the system's moves"))
		Expect(why).To(ContainSubstring("; an attempt's verdict"))

		_, lacking = o.Lacks(oracle.InvariantReads(oracle.InvCriticalPaged, oracle.FromOutside))
		Expect(lacking).To(BeFalse(), "a black box given the receivers is judged on its pages")
		h.External.Alerts = false
		why, lacking = h.Observed().Lacks(oracle.InvariantReads(oracle.InvCriticalPaged, oracle.FromOutside))
		Expect(lacking).To(BeTrue())
		Expect(why).To(ContainSubstring("system.external.noAlerts"))
		why, lacking = h.Observed().Lacks(oracle.InvariantReads(oracle.InvDLQSeverity, oracle.FromOutside))
		Expect(lacking).To(BeTrue())
		Expect(why).To(ContainSubstring("no entry of the DLQ carries a severity"))
	})
})

var _ = Describe("An expectation judged on a run that lacks what it reads", func() {
	It("is not observable, with why, never passed — and judged as usual where the run has it", func() {
		res := &reports.Result{Ledger: reports.Ledger{Created: 3}, Alerts: reports.Alerts{ByReceiver: map[string]int64{}}}
		outside := &oracle.Observation{Result: res, Observed: (&oracle.History{External: &oracle.ExternalRun{Alerts: true}}).Observed()}
		sev := scenarios.Count{Metric: scenarios.DeadLettered, Severity: classify.High, Op: scenarios.Exactly, N: 0}
		e := oracle.Evaluate(sev, outside)
		Expect(e).To(And(HaveField("Verdict", reports.NotObservable), HaveField("Expected", "= 0"), HaveField("Actual", HavePrefix("not observable: it reads"))))
		Expect(oracle.Evaluate(scenarios.BreakerOpened{Breaker: "gw", AtLeast: 1}, outside)).To(And(HaveField("Verdict", reports.NotObservable),
			HaveField("Name", "breaker gw opened at least 1 times"), HaveField("Actual", ContainSubstring("circuit breakers"))))
		Expect(oracle.Evaluate(scenarios.Count{Metric: scenarios.Created, Op: scenarios.Exactly, N: 3}, outside).Verdict).To(Equal(reports.Passed))

		// The calls a black box's gateways logged are read for a rate of calls.
		outside.Calls = map[string][]time.Duration{"crm": {0, 100 * time.Millisecond, 200 * time.Millisecond, 5 * time.Second}}
		rate := oracle.Evaluate(scenarios.RetryRate{Dependency: "crm", Calls: true, Window: time.Second, Op: scenarios.AtMost, N: 2}, outside)
		Expect(rate).To(And(HaveField("Verdict", reports.Failed), HaveField("Actual", HavePrefix("3 (the 1s from +0s"))))
	})

	It("counts created and succeeded by task when a task is given, inside and out (the filter is never ignored)", func() {
		res := &reports.Result{Ledger: reports.Ledger{Created: 5, Succeeded: 4, ByTask: []reports.TaskTotals{
			{Task: "charge", Created: 3, Succeeded: 2}, {Task: "email", Created: 2, Succeeded: 2}}}, Alerts: reports.Alerts{ByReceiver: map[string]int64{}}}
		for _, o := range []*oracle.Observation{{Result: res}, {Result: res, Observed: (&oracle.History{External: &oracle.ExternalRun{Alerts: true}}).Observed()}} {
			Expect(oracle.Evaluate(scenarios.Count{Metric: scenarios.Succeeded, Task: "charge", Op: scenarios.Exactly, N: 2}, o)).To(
				And(HaveField("Verdict", reports.Passed), HaveField("Actual", "2")))
			Expect(oracle.Evaluate(scenarios.Count{Metric: scenarios.Created, Task: "email", Op: scenarios.Exactly, N: 2}, o).Verdict).To(Equal(reports.Passed))
			Expect(oracle.Evaluate(scenarios.Count{Metric: scenarios.Created, Op: scenarios.Exactly, N: 5}, o).Verdict).To(Equal(reports.Passed))
		}
	})
})
