package drill_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/drill"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/reference/store/redisstore/redistest"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
)

var _ = Describe("a drill's pace: its tolerance, the scale it picks, its fleet", func() {
	sc := func() scenarios.Scenario {
		s := load("builtin:worker-crash").Scenario.WithDefaults()
		return s
	}

	It("tolerates one of the scenario's shortest intervals at its scale, on the wall clock", func() {
		s := sc() // the default retry base delay, 1s, is its shortest
		Expect(drill.Intervals(&s)).To(ContainElement(drill.Interval{Name: "system.retry.baseDelay", D: time.Second}))
		Expect(drill.Tolerance(&s, 20)).To(Equal(time.Second / 20))
		Expect(drill.Tolerance(&s, 40)).To(BeNumerically("<", drill.Tolerance(&s, 20)))
	})

	It("counts a dependency fault's window among the intervals: jobs due in it must be made in it", func() {
		s := load("builtin:retry-wave-jitter").Scenario.WithDefaults()
		Expect(drill.Intervals(&s)).To(ContainElement(drill.Interval{Name: "fault index-blip's window", D: 2500 * time.Millisecond}))
		Expect(drill.Tolerance(&s, 10)).To(Equal(250 * time.Millisecond))
	})

	It("picks, for --time-scale auto, the fastest scale whose tolerance is four times the machine's slip, slower on a slower machine", func() {
		s := sc()
		fast, why := drill.AutoScale(&s, drill.Pace{Tick: 100 * time.Microsecond, RoundTrip: 300 * time.Microsecond})
		slow, _ := drill.AutoScale(&s, drill.Pace{Tick: 20 * time.Millisecond, RoundTrip: 5 * time.Millisecond})
		Expect(fast).To(Equal(float64(drill.MaxAutoScale)))
		Expect(why).To(ContainSubstring("leaves a tolerance of"))
		Expect(slow).To(BeNumerically("<", fast))
		Expect(drill.Tolerance(&s, slow)).To(BeNumerically(">=", 4*20*time.Millisecond))
		crawl, _ := drill.AutoScale(&s, drill.Pace{Tick: 5 * time.Second})
		Expect(crawl).To(Equal(1.0), "never under 1")
		busy, why := drill.AutoScale(&s, drill.Pace{Tick: 100 * time.Microsecond, RoundTrip: 300 * time.Microsecond, Load: 2.5})
		Expect(busy).To(Equal(float64(drill.MaxAutoScale) / 2))
		Expect(why).To(ContainSubstring("the machine is busy (2.5 runnable per core), so the scale is 2.0 times slower"))
	})

	It("slows an auto scale until the drill can create and first try a burst of jobs inside the fault window they are due in", func() {
		p := drill.Pace{Tick: 300 * time.Microsecond, RoundTrip: 350 * time.Microsecond, Enqueue: 40 * time.Microsecond}
		s := load("builtin:dlq-past-ten-thousand").Scenario.WithDefaults()
		k, why := drill.AutoScale(&s, p)
		Expect(k).To(Equal(10.0), why)
		Expect(why).To(ContainSubstring("after fault bad-deploy's window closed at +2m0s"))
		slower, _ := drill.AutoScale(&s, drill.Pace{Tick: p.Tick, RoundTrip: 2 * p.RoundTrip, Enqueue: p.Enqueue})
		Expect(slower).To(BeNumerically("<", k), "a slower store, a slower scale")
		// A steady stream, each job tried long before the next is due,
		// binds nothing; nor does a pace without the burst measured.
		g := load("builtin:graceful-degradation").Scenario.WithDefaults()
		steady, why := drill.AutoScale(&g, p)
		Expect(steady).To(Equal(float64(drill.MaxAutoScale)), why)
		unmeasured, _ := drill.AutoScale(&s, drill.Pace{Tick: p.Tick, RoundTrip: p.RoundTrip})
		Expect(unmeasured).To(Equal(float64(drill.MaxAutoScale)))
	})

	It("drills the scenario's fleet, or the one --workers and --concurrency give", func() {
		s := load("builtin:requeue-reset-attempts").Scenario.WithDefaults()
		Expect([]int{s.Workers.Processes, s.Workers.Count}).To(Equal([]int{8, 250}), "the default fleet: min(count, 8)")
		fleet := func(processes, concurrency int) []int {
			f := s
			drill.Fleet(&f, processes, concurrency)
			return []int{f.Workers.Processes, f.Workers.Count}
		}
		Expect(fleet(0, 0)).To(Equal([]int{8, 250}))
		Expect(fleet(2, 0)).To(Equal([]int{2, 250}), "--workers: processes over the scenario's slots")
		Expect(fleet(2, 3)).To(Equal([]int{2, 6}), "--workers with --concurrency: the slots too")
		Expect(fleet(0, 4)).To(Equal([]int{8, 32}), "--concurrency: slots per process")
		w := sc().WithDefaults()
		drill.Fleet(&w, 0, 0)
		Expect([]int{w.Workers.Processes, w.Workers.Count}).To(Equal([]int{4, 4}))
		drill.Fleet(&w, 6, 0)
		Expect([]int{w.Workers.Processes, w.Workers.Count}).To(Equal([]int{6, 6}), "at least a slot per process")
	})

	It("refuses a scale other than 1 for a black box that does not take {timeScale}, and takes one that does", func() {
		s := load("../examples/python-fixed/drill.yaml").Scenario.WithDefaults()
		err := drill.CheckExternalScale(&s, 10)
		Expect(err).To(MatchError(ContainSubstring("does not declare that it follows the drill's time scale")))
		Expect(drill.CheckExternalScale(&s, 1)).To(Succeed())
		s.System.External.Command.Args = append(s.System.External.Command.Args, "--scale={timeScale}")
		Expect(drill.CheckExternalScale(&s, 10)).To(Succeed())
	})

	It("keeps a black box that follows the scale at or under its maxTimeScale, auto or told", func() {
		s := load("../examples/bullmq/drill-fixed.yaml").Scenario.WithDefaults()
		Expect(s.System.External.FollowsScale()).To(BeTrue())
		Expect(s.System.External.MaxTimeScale).To(Equal(4.0))
		k, why := drill.AutoScale(&s, drill.Pace{Tick: 100 * time.Microsecond, RoundTrip: 300 * time.Microsecond})
		Expect(k).To(Equal(4.0), why)
		Expect(why).To(ContainSubstring("keeps its timing up to 4 (system.external.maxTimeScale)"))
		Expect(drill.CheckExternalScale(&s, 4)).To(Succeed())
		Expect(drill.CheckExternalScale(&s, 5)).To(MatchError(ContainSubstring("keeps its timing up to time scale 4 (system.external.maxTimeScale)")))
	})
})

// A Redis stopped and restarted under a drill (persisted: appendfsync
// always) must not make jobs vanish from the workload or the verdict: the
// producer creates every job (trying again while Redis is down), and a job
// any part saw is in the ledger.
var _ = Describe("a drill whose Redis restarts mid-drill", func() {
	It("creates the scenario's whole workload and judges every job it saw", func(ctx SpecContext) {
		redistest.Real() // skips, or fails under FAULTLINE_REQUIRE_REDIS=1, without redis-server
		r := &durableRedis{port: freePort(), dir: GinkgoT().TempDir()}
		r.start()
		DeferCleanup(r.kill)
		url := "redis://" + r.addr() + "/0"
		l := load("builtin:dlq-basics")
		opts := options(url, "builtin:dlq-basics")
		restarted := make(chan struct{})
		opts.Progress = func(p drill.Progress) {
			// Once the first burst is in and a few seconds of scenario time
			// have run: SHUTDOWN (its AOF synced), one second down, back.
			if p.Elapsed < 20*time.Second || restarted == nil {
				return
			}
			ch := restarted
			restarted = nil
			go func() {
				defer GinkgoRecover()
				defer close(ch)
				c := redisstore.NewClient(url)
				_ = c.Shutdown(context.Background()).Err()
				_ = c.Close()
				_ = r.cmd.Wait()
				time.Sleep(time.Second)
				r.start()
			}()
		}
		done := restarted
		res, h, err := drill.Run(ctx, l, opts)
		Expect(err).NotTo(HaveOccurred())
		Eventually(done).WithTimeout(30*time.Second).Should(BeClosed(), "Redis was restarted mid-drill")
		Expect(h.Planned).To(Equal(302))
		made := 0
		for _, j := range h.Jobs {
			if j.Outcome == "ok" || j.Outcome == "unknown" {
				made++
			}
		}
		Expect(made).To(Equal(h.Planned), "every planned job was created: %s", summary(res))
		Expect(res.Ledger.Created).To(BeEquivalentTo(302), summary(res))
		Expect(res.Warnings).NotTo(ContainElement(ContainSubstring("missing evidence")), summary(res))
		Expect(res.Violations).To(BeEmpty(), summary(res))
		// The restart is a fault the scenario does not declare (an
		// attempt cut mid-call may come back by its lease), so its
		// expectations may read otherwise: what is asserted is that the
		// drill judged the whole workload, and every invariant held.
		Expect(res.Verdict).NotTo(Equal(reports.Interrupted), summary(res))
	})
})

var _ = Describe("a worker fault whose timer woke late", func() {
	It("is asked of the injector at the moment it woke while its window is open, at the window's last millisecond once it closed, and says it was late", func() {
		ask, late := drill.StrikeAsk(2500*time.Millisecond, 2*time.Second, 3*time.Second)
		Expect(ask).To(Equal(2500 * time.Millisecond))
		Expect(late).To(BeFalse())
		ask, late = drill.StrikeAsk(3200*time.Millisecond, 2*time.Second, 3*time.Second)
		Expect(ask).To(Equal(2999 * time.Millisecond))
		Expect(late).To(BeTrue())
		ask, late = drill.StrikeAsk(2*time.Second, 2*time.Second, 2*time.Second)
		Expect(ask).To(Equal(2*time.Second), "an empty window is asked as it was")
		Expect(late).To(BeFalse())
	})
})
