package sim_test

import (
	"context"
	"errors"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
	"github.com/faultline/faultline/sim"
)

// one is a scenario of explicit jobs only, on the given workers.
func one(workers int, ttl time.Duration, d time.Duration, jobs ...scenarios.PlannedJobSpec) scenarios.Scenario {
	return scenarios.Scenario{
		Name: "explicit", Seed: 3, Duration: d,
		Workload: scenarios.WorkloadSpec{
			Tasks: []scenarios.TaskSpec{{Name: "work", Dependency: "api", Service: time.Second}},
			Jobs:  jobs,
		},
		Workers: scenarios.WorkersSpec{Count: workers, LeaseTTL: ttl},
	}
}

func fate(res *reports.Result, id string) reports.JobFate {
	GinkgoHelper()
	for _, f := range res.Fates {
		if f.JobID == id {
			return f
		}
	}
	Fail("no fate for " + id)
	return reports.JobFate{}
}

var _ = Describe("Edge cases of the engine", func() {
	It("spreads a service time by a jitter near the longest duration without overflowing", func() {
		// 2562047h is the longest whole-hour time.Duration: twice it does
		// not fit in an int64.
		sc := one(1, 30*time.Second, time.Minute, scenarios.PlannedJobSpec{At: 0, ID: "slow", Task: "work"})
		sc.Workload.Tasks[0].ServiceJitter = 2562047 * time.Hour
		var res *reports.Result
		Expect(func() { res = run(sc) }).NotTo(Panic())
		Expect(res.Ledger.Created).To(BeEquivalentTo(1))
	})

	It("fences a stalled worker's late failure without touching the job's record", func() {
		sc := one(2, 2*time.Second, time.Minute, scenarios.PlannedJobSpec{At: 0, ID: "auth-1", Task: "work"})
		sc.Faults = []faults.Fault{
			{Name: "revoked", Target: faults.Target{Kind: faults.Dependency, Name: "api"}, Model: faults.AuthFailure{}, Schedule: faults.Schedule{FirstCalls: 1}},
			{Name: "gc-pause", Target: faults.Target{Kind: faults.Worker}, Model: faults.WorkerStall{For: 10 * time.Second}, Schedule: faults.During(500*time.Millisecond, time.Second)},
		}
		// Stall only the worker holding the job: the other picks it up when
		// its lease expires.
		sc.Faults[1].Target.Name = "w2"
		res := run(sc)
		Expect(res.Violations).To(BeEmpty())
		Expect(res.Ledger.Fenced).To(BeEquivalentTo(1))
		f := fate(res, "auth-1")
		Expect(f.State).To(Equal("succeeded"))
		Expect(f.Severity).To(BeEmpty(), "the fenced attempt's verdict never became the job's")
	})

	It("keeps a held dead letter's lease alive from the start, so the job is not run again", func() {
		sc := one(1, 2*time.Second, time.Minute, scenarios.PlannedJobSpec{At: 0, ID: "declined-1", Task: "work"})
		sc.Workload.Tasks[0].Service = 1900 * time.Millisecond
		sc.Faults = []faults.Fault{
			{Name: "declined", Target: faults.Target{Kind: faults.Dependency, Name: "api"}, Model: faults.CardDeclined{}, Schedule: faults.Schedule{FirstCalls: 1}},
			{Name: "dlq-down", Target: faults.Target{Kind: faults.DLQStore}, Model: faults.StoreOutage{}, Schedule: faults.During(0, 20*time.Second)},
		}
		res := run(sc)
		Expect(res.Violations).To(BeEmpty())
		Expect(res.Ledger.Held).To(BeEquivalentTo(1))
		Expect(res.Ledger.Fenced).To(BeZero())
		Expect(res.Ledger.LeaseExpiries).To(BeZero())
		Expect(res.Ledger.Attempts).To(BeEquivalentTo(1))
		Expect(fate(res, "declined-1").State).To(Equal("dead-lettered"))
	})

	It("heartbeats an attempt longer than its lease, so a slow charge is not charged twice", func() {
		sc := one(2, 30*time.Second, 3*time.Minute, scenarios.PlannedJobSpec{At: 0, ID: "slow-pay", Task: "work"})
		sc.Dependencies = []scenarios.DependencySpec{{Name: "api", Payment: true}}
		sc.Faults = []faults.Fault{{Name: "slow", Target: faults.Target{Kind: faults.Dependency, Name: "api"},
			Model: faults.Latency{Distribution: faults.LatencyConstant, Mean: 50 * time.Second}, Schedule: faults.Schedule{FirstCalls: 1}}}
		res := run(sc)
		Expect(res.Violations).To(BeEmpty())
		Expect(res.Ledger.LeaseExpiries).To(BeZero())
		Expect(res.Ledger.Charges).To(BeEquivalentTo(1))
		Expect(fate(res, "slow-pay").State).To(Equal("succeeded"))
	})

	It("fires a worker fault only at its own windows", func() {
		sc := one(2, 5*time.Second, time.Minute)
		sc.Faults = []faults.Fault{
			{Name: "crash-w1", Target: faults.Target{Kind: faults.Worker, Name: "w1"}, Model: faults.WorkerCrash{RestartAfter: time.Second}, Schedule: faults.Schedule{From: 10 * time.Second}},
			{Name: "stall-all", Target: faults.Target{Kind: faults.Worker}, Model: faults.WorkerStall{For: time.Second}, Schedule: faults.Schedule{From: 30 * time.Second}},
		}
		res := run(sc)
		Expect(res.Faults[0].Hits).To(BeEquivalentTo(1))
		Expect(res.Faults[1].Hits).To(BeEquivalentTo(2))
	})

	It("keeps a worker crashed twice down until its later restart", func() {
		sc := one(1, 5*time.Second, 24*time.Second, scenarios.PlannedJobSpec{At: 21 * time.Second, ID: "late", Task: "work"})
		sc.Faults = []faults.Fault{
			{Name: "crash-1", Target: faults.Target{Kind: faults.Worker}, Model: faults.WorkerCrash{RestartAfter: 10 * time.Second}, Schedule: faults.During(10*time.Second, 11*time.Second)},
			{Name: "crash-2", Target: faults.Target{Kind: faults.Worker}, Model: faults.WorkerCrash{RestartAfter: 10 * time.Second}, Schedule: faults.During(15*time.Second, 16*time.Second)},
		}
		res := run(sc)
		Expect(fate(res, "late").State).To(Equal("queued"), "w1 is down until 25s")
	})

	It("gives a stalled idle worker no job", func() {
		sc := one(1, 5*time.Second, 15*time.Second, scenarios.PlannedJobSpec{At: 12 * time.Second, ID: "waiting", Task: "work"})
		sc.Faults = []faults.Fault{{Name: "stall", Target: faults.Target{Kind: faults.Worker}, Model: faults.WorkerStall{For: 10 * time.Second}, Schedule: faults.During(10*time.Second, 11*time.Second)}}
		res := run(sc)
		Expect(fate(res, "waiting").State).To(Equal("queued"))
		Expect(res.Ledger.Attempts).To(BeZero())
	})

	It("deletes the dead entries a filter matches, skipping requeued ones", func() {
		// a, b, c fail once (422) and are dead-lettered; the operator
		// requeues them at 10s (they succeed); d fails at 15s; the delete at
		// 20s finds three requeued entries and one failed.
		sc := one(2, 5*time.Second, 2*time.Minute,
			scenarios.PlannedJobSpec{At: 0, ID: "a", Task: "work"}, scenarios.PlannedJobSpec{At: 0, ID: "b", Task: "work"},
			scenarios.PlannedJobSpec{At: 0, ID: "c", Task: "work"}, scenarios.PlannedJobSpec{At: 15 * time.Second, ID: "d", Task: "work"})
		sc.Faults = []faults.Fault{{Name: "bad", Target: faults.Target{Kind: faults.Dependency, Name: "api"}, Model: faults.HTTPStatus{Code: 422}, Schedule: faults.Schedule{FirstCalls: 3}},
			{Name: "bad-again", Target: faults.Target{Kind: faults.Dependency, Name: "api"}, Model: faults.HTTPStatus{Code: 422}, Schedule: faults.Schedule{From: 15 * time.Second, FirstCalls: 1}}}
		sc.Steps = []scenarios.StepSpec{
			{At: 10 * time.Second, Kind: scenarios.Requeue, Budget: dlq.ResetAttempts},
			{At: 20 * time.Second, Kind: scenarios.Delete},
		}
		res := run(sc)
		Expect(res.Violations).To(BeEmpty())
		Expect(res.Steps).To(HaveLen(2))
		Expect(res.Steps[0].Detail).To(Equal("matched 3, requeued 3, skipped 0"))
		Expect(res.Steps[1].Error).To(BeEmpty())
		Expect(res.Steps[1].Detail).To(Equal("deleted 1"))
		Expect(fate(res, "a").State).To(Equal("succeeded"))
		Expect(fate(res, "d").State).To(Equal("dead-lettered"))
		Expect(res.DLQ.ByStatus).To(HaveKeyWithValue("deleted", 1))
	})

	It("refuses a fault the engine would inject without effect", func() {
		sc := one(1, 5*time.Second, time.Minute)
		sc.Faults = []faults.Fault{{Name: "redis-down", Target: faults.Target{Kind: faults.Store}, Model: faults.StoreOutage{}, Schedule: faults.During(0, time.Second)}}
		_, err := sim.Run(context.Background(), sc)
		Expect(err).To(MatchError(scenarios.ErrNotSimulated))
		Expect(err.Error()).To(ContainSubstring(`fault "redis-down"`))
	})

	DescribeTable("refuses at validation a job no store would take, instead of failing the run on its enqueue",
		func(change func(*scenarios.Scenario), field string) {
			sc := one(1, 5*time.Second, time.Minute, scenarios.PlannedJobSpec{At: time.Second, ID: "a", Task: "work"})
			change(&sc)
			_, err := sim.Run(context.Background(), sc)
			Expect(err).To(MatchError(scenarios.ErrInvalidScenario))
			var se *scenarios.ScenarioError
			Expect(errors.As(err, &se)).To(BeTrue())
			Expect(se.Field).To(Equal(field))
		},
		Entry("an explicit ID over 256 bytes", func(sc *scenarios.Scenario) { sc.Workload.Jobs[0].ID = strings.Repeat("x", 300) }, "Workload.Jobs[0].ID"),
		Entry("an explicit ID with a control character", func(sc *scenarios.Scenario) { sc.Workload.Jobs[0].ID = "a\x7fb" }, "Workload.Jobs[0].ID"),
		Entry("a task whose generated IDs (TASK-N) pass 256 bytes", func(sc *scenarios.Scenario) {
			sc.Workload.Tasks[0].Name = strings.Repeat("t", 300)
			sc.Workload.Jobs[0] = scenarios.PlannedJobSpec{At: time.Second, Task: sc.Workload.Tasks[0].Name}
		}, "Workload.Tasks[0].Name"),
		Entry("a task name with a control character", func(sc *scenarios.Scenario) {
			sc.Workload.Tasks[0].Name = "a\tb"
			sc.Workload.Jobs[0].Task = "a\tb"
		}, "Workload.Tasks[0].Name"),
		Entry("a queue name with a control character", func(sc *scenarios.Scenario) { sc.Workload.Tasks[0].Queue = "q\n" }, "Workload.Tasks[0].Queue"),
		Entry("a task payload over 1 MiB", func(sc *scenarios.Scenario) { sc.Workload.Tasks[0].Payload = strings.Repeat("p", 1<<20+1) }, "Workload.Tasks[0].Payload"),
		Entry("a task payload over 1 MiB once {n} is replaced", func(sc *scenarios.Scenario) {
			sc.Workload.Tasks[0].Payload = strings.Repeat("{n}", 1<<20/3+1)
		}, "Workload.Tasks[0].Payload"),
		Entry("a job payload over 1 MiB", func(sc *scenarios.Scenario) { sc.Workload.Jobs[0].Payload = strings.Repeat("p", 1<<20+1) }, "Workload.Jobs[0].Payload"),
	)

	It("refuses arrivals that stop before they start, instead of a run with no job that passes", func() {
		sc := one(1, 5*time.Second, 10*time.Minute)
		sc.Workload.Arrivals = scenarios.ArrivalsSpec{Kind: scenarios.Poisson, Rate: 5, From: 5 * time.Minute, Until: time.Minute}
		_, err := sim.Run(context.Background(), sc)
		var se *scenarios.ScenarioError
		Expect(errors.As(err, &se)).To(BeTrue(), "got %v", err)
		Expect(se.Field).To(Equal("Workload.Arrivals.Until"))
	})

	It("refuses an explicit job ID of the generated form", func() {
		sc := one(1, 5*time.Second, time.Minute, scenarios.PlannedJobSpec{ID: "work-5", Task: "work"})
		_, err := sim.Run(context.Background(), sc)
		Expect(err).To(MatchError(scenarios.ErrInvalidScenario))
		Expect(err.Error()).To(ContainSubstring("TASK-N"))
	})

	It("counts dead letters and what is in the DLQ at the end apart", func() {
		sc := one(2, 5*time.Second, 2*time.Minute, scenarios.PlannedJobSpec{At: 0, ID: "a", Task: "work"})
		sc.Faults = []faults.Fault{{Name: "bad", Target: faults.Target{Kind: faults.Dependency, Name: "api"}, Model: faults.HTTPStatus{Code: 422}, Schedule: faults.Schedule{FirstCalls: 1}}}
		sc.Steps = []scenarios.StepSpec{{At: 10 * time.Second, Kind: scenarios.Requeue}}
		sc.Expect = []scenarios.Expectation{
			scenarios.Count{Metric: scenarios.DeadLetters, Task: "work", Op: scenarios.Exactly, N: 1},
			scenarios.Count{Metric: scenarios.DeadLettered, Task: "work", Op: scenarios.Exactly, N: 0},
			scenarios.Count{Metric: scenarios.Lost, Op: scenarios.Exactly, N: 0},
			scenarios.JobFate{JobID: "a", State: disposition.Succeeded},
		}
		res := run(sc)
		Expect(failedExpectations(res)).To(BeEmpty())
	})
})
