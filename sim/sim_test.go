package sim_test

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
	"github.com/faultline/faultline/sim"
)

func run(sc scenarios.Scenario, opts ...sim.Option) *reports.Result {
	GinkgoHelper()
	res, err := sim.Run(context.Background(), sc, opts...)
	Expect(err).NotTo(HaveOccurred())
	return res
}

func failedExpectations(res *reports.Result) []string {
	var out []string
	for _, e := range res.Expectations {
		if e.Verdict != reports.Passed {
			out = append(out, e.Name+": expected "+e.Expected+", got "+e.Actual)
		}
	}
	return out
}

func steady(n int) scenarios.Scenario {
	return scenarios.Scenario{
		Name: "steady", Seed: 7, Duration: time.Duration(n) * 10 * time.Millisecond,
		Workload: scenarios.WorkloadSpec{
			Tasks:    []scenarios.TaskSpec{{Name: "work", Service: 5 * time.Millisecond}},
			Arrivals: scenarios.ArrivalsSpec{Kind: scenarios.Constant, Rate: 100},
		},
	}
}

var _ = Describe("Run", func() {
	It("runs the payment challenge: every expectation holds and every job is accounted for", func() {
		res := run(payments())
		Expect(res.Violations).To(BeEmpty())
		Expect(failedExpectations(res)).To(BeEmpty())
		Expect(res.Verdict).To(Equal(reports.Passed))
		l := res.Ledger
		Expect(l.Created).To(BeNumerically(">", 5000))
		Expect(l.Queued + l.InFlight + l.Scheduled + l.Fallback + l.DeadLettered + l.Succeeded + l.Removed).To(Equal(l.Created))
		Expect(l.Retries).To(BeNumerically(">", 0))
		Expect(l.Diversions).To(BeNumerically(">", 0))
		Expect(l.Drained).To(Equal(l.Diversions))
		Expect(res.Alerts.Pages).To(BeNumerically(">=", 1))
		Expect(res.Steps).To(HaveLen(1))
		Expect(res.Steps[0].Detail).To(ContainSubstring("requeued"))
	})

	It("gives byte-identical JSON for the same seed and a different one for another", func() {
		a, err := run(payments()).JSON()
		Expect(err).NotTo(HaveOccurred())
		b, err := run(payments()).JSON()
		Expect(err).NotTo(HaveOccurred())
		Expect(string(a)).To(Equal(string(b)))
		c, err := run(payments(), sim.WithSeed(2)).JSON()
		Expect(err).NotTo(HaveOccurred())
		Expect(string(c)).NotTo(Equal(string(a)))
	})

	It("succeeds every job when nothing fails", func() {
		res := run(steady(1000))
		Expect(res.Verdict).To(Equal(reports.Passed))
		Expect(res.Ledger.Created).To(BeEquivalentTo(1000))
		Expect(res.Ledger.Succeeded).To(BeEquivalentTo(1000))
		Expect(res.Ledger.Attempts).To(BeEquivalentTo(1000))
	})

	It("holds dead letters through a DLQ store outage and writes them when it returns", func() {
		sc := steady(2000)
		sc.Workload.Tasks[0].Dependency = "inventory"
		sc.Faults = []faults.Fault{
			{Name: "bad-data", Target: faults.Target{Kind: faults.Dependency, Name: "inventory"}, Model: faults.HTTPStatus{Code: 422},
				Schedule: faults.Schedule{Probability: 0.1}},
			{Name: "dlq-down", Target: faults.Target{Kind: faults.DLQStore}, Model: faults.StoreOutage{},
				Schedule: faults.Schedule{From: 5 * time.Second, Until: 8 * time.Second}},
		}
		sc.Expect = []scenarios.Expectation{scenarios.Count{Metric: scenarios.Held, Op: scenarios.AtLeast, N: 1}, scenarios.Count{Metric: scenarios.Lost, Op: scenarios.Exactly, N: 0}}
		res := run(sc)
		Expect(res.Violations).To(BeEmpty())
		Expect(failedExpectations(res)).To(BeEmpty())
		Expect(res.Ledger.HeldMaxMs).To(BeNumerically("<=", 3100))
		Expect(res.Ledger.DeadLettered).To(Equal(res.Ledger.DeadLetters))
		Expect(int64(res.DLQ.Total)).To(Equal(res.Ledger.DeadLettered))
	})

	It("brings back the jobs of a crashed worker when their leases expire", func() {
		sc := steady(3000)
		sc.Workers = scenarios.WorkersSpec{Count: 2, LeaseTTL: 2 * time.Second}
		sc.Workload.Tasks[0].Service = 15 * time.Millisecond
		sc.Faults = []faults.Fault{{Name: "crash", Target: faults.Target{Kind: faults.Worker, Name: "w1"},
			Model: faults.WorkerCrash{RestartAfter: time.Second}, Schedule: faults.Schedule{From: 10*time.Second + 3*time.Millisecond, Until: 11 * time.Second}}}
		res := run(sc)
		Expect(res.Violations).To(BeEmpty())
		Expect(res.Ledger.LeaseExpiries).To(BeEquivalentTo(1))
		Expect(res.Ledger.Succeeded).To(Equal(res.Ledger.Created - res.Ledger.Queued - res.Ledger.InFlight))
	})

	It("fences off the late completion of a stalled worker", func() {
		sc := steady(3000)
		sc.Workers = scenarios.WorkersSpec{Count: 2, LeaseTTL: time.Second}
		sc.Workload.Tasks[0].Service = 15 * time.Millisecond
		sc.Faults = []faults.Fault{{Name: "gc-pause", Target: faults.Target{Kind: faults.Worker, Name: "w1"},
			Model: faults.WorkerStall{For: 3 * time.Second}, Schedule: faults.Schedule{From: 10*time.Second + 3*time.Millisecond, Until: 11 * time.Second}}}
		res := run(sc)
		Expect(res.Violations).To(BeEmpty())
		Expect(res.Ledger.Fenced).To(BeEquivalentTo(1))
		Expect(res.Ledger.LeaseExpiries).To(BeEquivalentTo(1))
	})

	It("redelivers alerts a sink refused during its outage", func() {
		sc := payments()
		sc.Faults = append(sc.Faults, faults.Fault{Name: "pager-down", Target: faults.Target{Kind: faults.AlertSink, Name: "on-call"},
			Model: faults.SinkOutage{Code: 503}, Schedule: faults.Schedule{From: 2*time.Minute + 50*time.Second, Until: 3*time.Minute + 40*time.Second}})
		sc.Expect = []scenarios.Expectation{scenarios.Count{Metric: scenarios.Pages, Receiver: "on-call", Op: scenarios.AtLeast, N: 1}}
		res := run(sc)
		Expect(res.Violations).To(BeEmpty())
		Expect(failedExpectations(res)).To(BeEmpty())
		Expect(res.Alerts.Rejected).To(BeNumerically(">", 0))
	})

	It("reports a double charge when the gateway ignores idempotency keys", func() {
		sc := payments()
		sc.Dependencies[0].IgnoresIdempotencyKeys = true
		sc.Faults[0].Model = faults.GatewayTimeout{After: 5 * time.Second, ChargedProbability: 1}
		res := run(sc)
		Expect(res.Verdict).To(Equal(reports.Failed))
		Expect(res.EndedAtMs).To(Equal(res.DurationMs), "the run goes on after a violation")
		// Every doubly charged job is named, once.
		jobs := map[string]bool{}
		for _, v := range res.Violations {
			Expect(v.Invariant).To(Equal(oracle.InvNoDoubleCharge))
			Expect(jobs).NotTo(HaveKey(v.JobID))
			jobs[v.JobID] = true
		}
		Expect(len(jobs)).To(BeNumerically(">", 1))
		Expect(res.Invariants).To(ContainElement(reports.InvariantResult{Name: oracle.InvNoDoubleCharge, Verdict: reports.Failed, Violations: int64(len(jobs))}))
		v := res.Violations[0]
		Expect(v.Invariant).To(Equal(oracle.InvNoDoubleCharge))
		Expect(v.Message).To(ContainSubstring("ignored idempotency key"))
		Expect(v.JobID).NotTo(BeEmpty())
		Expect(strings.Join(v.Trail, "\n")).To(ContainSubstring("charged the payment (charge 2)"))
		Expect(v.Seed).To(BeEquivalentTo(1))
	})

	It("keeps the fate of named jobs", func() {
		res := run(payments())
		Expect(res.Expectations).To(ContainElement(HaveField("Name", ContainSubstring("pay-declined"))))
		_ = disposition.DeadLettered
		_ = classify.Low
	})

	It("refuses an invalid scenario with the field", func() {
		_, err := sim.Run(context.Background(), scenarios.Scenario{Name: "x", Duration: time.Second})
		Expect(err).To(MatchError(scenarios.ErrInvalidScenario))
		Expect(err.Error()).To(ContainSubstring("Workload.Tasks"))
	})
})
