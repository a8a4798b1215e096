package drill

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/drill/gateway"
	"github.com/faultline/faultline/drill/supervisor"
	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/scenarios"
)

var _ = Describe("A drill's worker fault aimed at a state (schedule.when, issue 24)", func() {
	const dep = "ledger"
	var (
		d  *drill
		gw *gateway.Gateway
		c  *gateway.Client
		f  faults.Fault
	)
	BeforeEach(func() {
		f = faults.Fault{Name: "gc-pause", Target: faults.Target{Kind: faults.Worker, Name: "w2"}, RequireHits: true,
			Model:    faults.WorkerStall{For: 5 * time.Second},
			Schedule: faults.Schedule{Until: time.Minute, When: &faults.When{State: faults.MidCall, Dependency: dep}}}
		in, err := faults.NewInjector(1, []faults.Fault{f})
		Expect(err).NotTo(HaveOccurred())
		// The scenario runs 100 times faster than the wall clock: its
		// minute-long window is 600ms.
		clk, err := clock.NewScaled(time.Unix(0, 0), time.Now(), 100, nil)
		Expect(err).NotTo(HaveOccurred())
		sup, err := supervisor.New(nil, supervisor.Options{})
		if err != nil {
			Skip("the supervisor needs Linux: " + err.Error())
		}
		locked := gateway.NewLocked(in)
		gw, err = gateway.New(gateway.Config{Name: dep, Faults: locked, Now: clk.Elapsed, Scale: 100})
		Expect(err).NotTo(HaveOccurred())
		Expect(gw.Start()).To(Succeed())
		DeferCleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			Expect(gw.Close(ctx)).To(Succeed())
		})
		c = gateway.NewClient(gw.URL(), 5*time.Second)
		DeferCleanup(c.CloseIdleConnections)
		d = &drill{clk: clk, locked: locked, gws: []*gateway.Gateway{gw}, sup: sup,
			log: slog.New(slog.NewTextHandler(io.Discard, nil)), h: oracle.History{Workers: []string{"w1", "w2"}},
			faultHits: map[string]int64{}, faultWins: map[string][][2]int64{}}
	})

	wait := func(from, until time.Duration) *sync.WaitGroup {
		// The window's 600ms of wall time count from here, not from the
		// set-up, which a loaded machine (CI beside a loop of drills) can
		// stretch past them.
		d.clk.Restart(time.Now())
		var wg sync.WaitGroup
		d.whenFault(context.Background(), &wg, 0, f, from, until)
		return &wg
	}

	It("records a miss and a note, and no hit, when the worker never called in its window", func() {
		wg := wait(0, time.Minute)
		_, err := c.CallFor(context.Background(), gateway.Caller{Job: "j1", Worker: "w1"}) // another worker
		Expect(err).NotTo(HaveOccurred())
		wg.Wait()
		Expect(d.faultHits).NotTo(HaveKey("gc-pause"))
		Expect(d.h.Misses).To(Equal([]oracle.Miss{{Fault: "gc-pause", Worker: "w2", State: "mid-call", Dependency: dep, FromMs: 0, UntilMs: 60_000, Targeted: 1}}))
		Expect(d.h.Notes).To(ConsistOf("fault gc-pause never found worker w2 mid-call at ledger in [0s, 1m0s): it did not strike it there"))
	})

	It("strikes the worker as its call arrives, before the answer: no miss", func() {
		wg := wait(0, time.Minute)
		_, err := c.CallFor(context.Background(), gateway.Caller{Job: "j1", Worker: "w2"})
		Expect(err).NotTo(HaveOccurred())
		wg.Wait()
		// The supervisor started no process here, so the stall itself
		// fails (logged, no hit); what matters is that the state was found.
		Expect(d.h.Misses).To(BeEmpty())
		Expect(d.h.Notes).To(BeEmpty())
	})
})

var _ = Describe("Live and schedule.when", func() {
	It("refuses a worker fault aimed at a state in a black-box drill, with the reason, and takes it for the reference", func() {
		f := faults.Fault{Name: "gc-pause", Target: faults.Target{Kind: faults.Worker, Name: "w2"}, Model: faults.WorkerStall{For: time.Second},
			Schedule: faults.Schedule{Until: time.Minute, When: &faults.When{State: faults.MidCall, Dependency: "ledger"}}}
		sc := &scenarios.Scenario{Name: "s", Faults: []faults.Fault{f}}
		Expect(Live(sc)).To(Succeed())
		sc.System.External = &scenarios.ExternalSpec{}
		err := Live(sc)
		Expect(err).To(MatchError(ErrRefused))
		Expect(err.Error()).To(Equal("scenario s: faults[0] (gc-pause): schedule.when waits for a worker to be mid-call at ledger, which the drill learns from the gateway only when the worker names itself (X-Faultline-Worker): a black box need not, so its freeze or crash could never be aimed; give the fault from/until instead"))
	})
})
