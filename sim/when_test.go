package sim_test

import (
	"bytes"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
)

var _ = Describe("A worker fault aimed at a state (schedule.when, issue 24)", func() {
	const sec = time.Second
	var sc scenarios.Scenario

	// fault returns a's fault report.
	fault := func(res *reports.Result, name string) reports.Fault {
		GinkgoHelper()
		for _, f := range res.Faults {
			if f.Name == name {
				return f
			}
		}
		Fail("no fault " + name)
		return reports.Fault{}
	}
	expectation := func(res *reports.Result, name string) reports.Expectation {
		GinkgoHelper()
		for _, e := range res.Expectations {
			if e.Name == name {
				return e
			}
		}
		Fail("no expectation " + name)
		return reports.Expectation{}
	}
	stall := func(target string, from, until time.Duration) faults.Fault {
		return faults.Fault{Name: "gc-pause", Target: faults.Target{Kind: faults.Worker, Name: target}, RequireHits: true,
			Model:    faults.WorkerStall{For: 2 * sec},
			Schedule: faults.Schedule{From: from, Until: until, When: &faults.When{State: faults.MidCall, Dependency: "ledger"}}}
	}

	BeforeEach(func() {
		// One job calling the ledger (3s in flight) at 10s, another at 40s.
		sc = scenarios.Scenario{
			Name: "when", Seed: 3, Duration: time.Minute,
			Workload: scenarios.WorkloadSpec{
				Tasks: []scenarios.TaskSpec{{Name: "sync", Dependency: "ledger", Service: 3 * sec}},
				Jobs:  []scenarios.PlannedJobSpec{{At: 10 * sec, ID: "first", Task: "sync"}, {At: 40 * sec, ID: "second", Task: "sync"}},
			},
			Workers:      scenarios.WorkersSpec{Count: 1, LeaseTTL: 30 * sec},
			Dependencies: []scenarios.DependencySpec{{Name: "ledger"}},
		}
	})

	It("strikes once the worker is mid-call, not at the window's start", func() {
		sc.Faults = []faults.Fault{stall("w1", 5*sec, 30*sec)}
		res := run(sc)
		Expect(res.Verdict).To(Equal(reports.Passed), "%v", failedExpectations(res))
		f := fault(res, "gc-pause")
		Expect(f.Hits).To(BeEquivalentTo(1))
		Expect(f.FirstHitMs).To(BeEquivalentTo(10_000), "the job's call began at 10s")
		Expect(res.Warnings).To(BeEmpty())

		By("without when, the same window strikes at its start, between jobs")
		sc.Faults[0].Schedule.When = nil
		f = fault(run(sc), "gc-pause")
		Expect(f.FirstHitMs).To(BeEquivalentTo(5_000))
	})

	It("strikes at the window's start a worker already mid-call, and each worker once per window", func() {
		sc.Workload.Jobs = []scenarios.PlannedJobSpec{{At: 0, ID: "first", Task: "sync"}, {At: 1 * sec, ID: "second", Task: "sync"}}
		sc.Faults = []faults.Fault{stall("w1", 2*sec, 20*sec)}
		res := run(sc)
		f := fault(res, "gc-pause")
		Expect(f.Hits).To(BeEquivalentTo(1), "the second job's call, later in the window, is not struck again")
		Expect(f.FirstHitMs).To(BeEquivalentTo(2_000))
	})

	It("leaves a window that never found the state without a hit, and fails requireHits naming the worker and the window", func() {
		sc.Faults = []faults.Fault{stall("w1", 20*sec, 30*sec)}
		res := run(sc)
		Expect(fault(res, "gc-pause").Hits).To(BeZero())
		e := expectation(res, "fault gc-pause hits at least once (requireHits)")
		Expect(e.Verdict).To(Equal(reports.Failed))
		Expect(e.Actual).To(Equal("0 hits; never found worker w1 mid-call at ledger in [20s, 30s)"))
		Expect(res.Verdict).To(Equal(reports.Failed))

		By("without requireHits, a warning says so")
		sc.Faults[0].RequireHits = false
		res = run(sc)
		Expect(res.Warnings).To(ContainElement(
			"fault gc-pause (worker-stall on worker/w1) never found worker w1 mid-call at ledger in [20s, 30s), so it did not strike it there (requireHits: true makes a window that strikes no worker a failure)"))
	})

	It("on every worker, strikes the one mid-call and names the others; a window striking none fails", func() {
		sc.Workers.Count = 2
		sc.Faults = []faults.Fault{stall("", 5*sec, 0)}
		sc.Faults[0].Schedule.Every = &faults.Periodic{Period: 30 * sec, Duty: 25.0 / 30}
		res := run(sc)
		Expect(fault(res, "gc-pause").Hits).To(BeEquivalentTo(2), "one worker in each window: the first job's, the second job's")
		e := expectation(res, "fault gc-pause hits at least once (requireHits)")
		Expect(e.Verdict).To(Equal(reports.Passed))
		Expect(e.Actual).To(MatchRegexp(`^2 hits; never found worker w\d mid-call at ledger in \[5s, 25s\); never found worker w\d mid-call at ledger in \[30s, 55s\)$`))

		sc.Workload.Jobs = sc.Workload.Jobs[:1]
		res = run(sc)
		e = expectation(res, "fault gc-pause hits at least once (requireHits)")
		Expect(e.Verdict).To(Equal(reports.Failed), "the second window struck no worker")
		Expect(e.Actual).To(ContainSubstring("never found worker w1 mid-call at ledger in [30s, 55s); never found worker w2 mid-call at ledger in [30s, 55s)"))
	})

	It("is byte-deterministic: the same seed gives the same report", func() {
		sc.Workers.Count = 2
		sc.Faults = []faults.Fault{stall("", 5*sec, 30*sec)}
		var a, b bytes.Buffer
		Expect(reports.WriteJSON(&a, run(sc))).To(Succeed())
		Expect(reports.WriteJSON(&b, run(sc))).To(Succeed())
		Expect(a.String()).To(Equal(b.String()))
	})

	It("refuses a dependency that is neither listed nor a task's, suggesting the closest", func() {
		sc.Faults = []faults.Fault{stall("w1", 5*sec, 30*sec)}
		sc.Faults[0].Schedule.When.Dependency = "ledgr"
		err := sc.WithDefaults().Validate()
		Expect(err).To(MatchError(ContainSubstring(`"ledgr" is not a dependency (the dependencies are ledger), so no worker is ever mid-call at it and the fault never strikes; did you mean "ledger"?`)))
	})

	It("keeps worker-crash's freeze mid-charge: struck at 1m20s, its late answer fenced", func() {
		res := run(builtin("worker-crash"))
		Expect(res.Verdict).To(Equal(reports.Passed), "%v", failedExpectations(res))
		Expect(res.Ledger.Fenced).To(BeEquivalentTo(1))
		f := fault(res, "gc-pause")
		Expect(f.Hits).To(BeEquivalentTo(1))
		Expect(f.FirstHitMs).To(BeEquivalentTo(80_000))
		Expect(f.Windows).To(Equal([][2]int64{{80_000, 90_000}}))
	})
})
