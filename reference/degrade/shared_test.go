package degrade_test

import (
	"context"
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/reference/degrade"
	"github.com/faultline/faultline/reference/degrade/degradetest"
)

var _ = Describe("MemoryBreakerStore", func() {
	degradetest.ExerciseBreakerStore(func() degrade.BreakerStore { return degrade.NewMemoryBreakerStore() })
})

// downStore is a BreakerStore that cannot be reached.
type downStore struct{}

func (downStore) LoadBreaker(context.Context, string) (degrade.SharedState, error) {
	return degrade.SharedState{}, errors.New("connection refused")
}

func (downStore) SwapBreaker(context.Context, string, uint64, degrade.SharedState) (degrade.SharedState, bool, error) {
	return degrade.SharedState{}, false, errors.New("connection refused")
}

var _ = Describe("a breaker its fleet shares (WithFleet)", func() {
	var (
		clk   *clock.Virtual
		store *degrade.MemoryBreakerStore
	)
	cfg := degrade.BreakerConfig{Name: "gateway", ConsecutiveFailures: 2, OpenDuration: 10 * time.Second, HalfOpenProbes: 1,
		SuccessesToClose: 1, ProbeTimeout: 5 * time.Second, RampUp: degrade.NoRampUp, SyncInterval: 250 * time.Millisecond}
	down := classify.Classification{Class: classify.Transient, Severity: classify.Medium, Source: classify.Dependency}
	BeforeEach(func() {
		clk = clock.NewVirtual(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
		store = degrade.NewMemoryBreakerStore()
	})
	member := func(name string, s degrade.BreakerStore) (*degrade.Breaker, *[]degrade.Transition) {
		GinkgoHelper()
		b, err := degrade.NewBreaker(cfg, clk, degrade.WithFleet(s, name, 0))
		Expect(err).NotTo(HaveOccurred())
		var ts []degrade.Transition
		b.OnStateChange(func(t degrade.Transition) { ts = append(ts, t) })
		return b, &ts
	}
	fail := func(b *degrade.Breaker, n int) {
		GinkgoHelper()
		for range n {
			p, err := b.Allow()
			Expect(err).NotTo(HaveOccurred())
			b.Record(p, degrade.Failure(down))
		}
	}

	It("opens the fleet when one process trips: the others adopt the spell at their next sync", func() {
		a, _ := member("w1", store)
		b, bt := member("w2", store)
		p, err := b.Allow() // synced now: nothing shared yet
		Expect(err).NotTo(HaveOccurred())
		b.Record(p, degrade.Success())
		fail(a, 2)
		Expect(a.State()).To(Equal(degrade.Open))
		_, err = b.Allow()
		Expect(err).NotTo(HaveOccurred(), "b syncs at most every 250ms")
		clk.Advance(250 * time.Millisecond)
		_, err = b.Allow()
		Expect(err).To(MatchError(degrade.ErrOpen))
		Expect(b.OpenUntil()).To(Equal(a.OpenUntil()), "the same spell")
		Expect((*bt)[len(*bt)-1].Reason).To(Equal(degrade.ReasonFleetOpened))
	})

	It("lets one process of eight probe when the spell ends; its close closes the fleet", func() {
		var fleet []*degrade.Breaker
		for _, n := range []string{"w1", "w2", "w3", "w4", "w5", "w6", "w7", "w8"} {
			b, _ := member(n, store)
			fleet = append(fleet, b)
		}
		fail(fleet[0], 2)
		clk.Advance(250 * time.Millisecond)
		for _, b := range fleet[1:] {
			_, err := b.Allow()
			Expect(err).To(MatchError(degrade.ErrOpen))
		}
		clk.Advance(10 * time.Second) // every open timer fires: one claim wins
		var probers []*degrade.Breaker
		for _, b := range fleet {
			if b.State() == degrade.HalfOpen {
				probers = append(probers, b)
			}
		}
		Expect(probers).To(HaveLen(1), "one prober for the fleet, not eight")
		p, err := probers[0].Allow()
		Expect(err).NotTo(HaveOccurred())
		probers[0].Record(p, degrade.Success())
		Expect(probers[0].State()).To(Equal(degrade.Closed))
		clk.Advance(250 * time.Millisecond)
		for _, b := range fleet {
			_, err := b.Allow()
			Expect(err).NotTo(HaveOccurred())
			Expect(b.State()).To(Equal(degrade.Closed))
		}
	})

	It("re-opens the fleet at a raised level when the probe fails", func() {
		a, _ := member("w1", store)
		b, _ := member("w2", store)
		fail(a, 2)
		clk.Advance(10 * time.Second)
		prober, waiter := a, b
		if b.State() == degrade.HalfOpen {
			prober, waiter = b, a
		}
		Expect(prober.State()).To(Equal(degrade.HalfOpen))
		fail(prober, 1)
		Expect(prober.State()).To(Equal(degrade.Open))
		Expect(prober.Stats().Level).To(Equal(1))
		clk.Advance(250 * time.Millisecond)
		_, err := waiter.Allow()
		Expect(err).To(MatchError(degrade.ErrOpen))
		Expect(waiter.OpenUntil()).To(Equal(prober.OpenUntil()))
		Expect(waiter.Stats().Level).To(Equal(1))
	})

	It("does not let a prober that died hold the fleet open: its claim lapses and another probes", func() {
		a, _ := member("w1", store)
		fail(a, 2)
		st, err := store.LoadBreaker(context.Background(), "gateway")
		Expect(err).NotTo(HaveOccurred())
		// A process that claimed the half-open state and then died.
		_, ok, err := store.SwapBreaker(context.Background(), "gateway", st.Gen,
			degrade.SharedState{Gen: st.Gen + 1, State: degrade.HalfOpen, Until: st.Until.Add(5 * time.Second), Holder: "w9"})
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeTrue())
		clk.Advance(10 * time.Second)
		Expect(a.State()).To(Equal(degrade.Open), "waiting for w9's verdict")
		clk.Advance(5 * time.Second)
		Expect(a.State()).To(Equal(degrade.HalfOpen), "w9's claim lapsed")
	})

	It("works alone while the store cannot be reached, and counts it", func() {
		a, _ := member("w1", downStore{})
		fail(a, 2)
		Expect(a.State()).To(Equal(degrade.Open))
		clk.Advance(10 * time.Second)
		Expect(a.State()).To(Equal(degrade.HalfOpen))
		Expect(a.Stats().FleetErrors).To(BeNumerically(">", 0))
	})
})

func (downStore) AddWindow(context.Context, string, degrade.WindowAdd) (degrade.WindowSums, error) {
	return degrade.WindowSums{}, errors.New("connection refused")
}

var _ = Describe("a fleet's breakers, judging the fleet's failure rate", func() {
	It("trip on the failures of every process together, which no process's own window holds enough calls to judge", func() {
		clk := clock.NewVirtual(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
		store := degrade.NewMemoryBreakerStore()
		cfg := degrade.BreakerConfig{Name: "gateway", ConsecutiveFailures: 100, FailureRatePercent: 50, MinThroughput: 20,
			Window: 10 * time.Second, Buckets: 10, SyncInterval: 250 * time.Millisecond}
		down := classify.Classification{Class: classify.Transient, Severity: classify.Medium, Source: classify.Dependency}
		var fleet []*degrade.Breaker
		for _, n := range []string{"w1", "w2", "w3", "w4"} {
			b, err := degrade.NewBreaker(cfg, clk, degrade.WithFleet(store, n, 0))
			Expect(err).NotTo(HaveOccurred())
			fleet = append(fleet, b)
		}
		var reasons []string
		for _, b := range fleet {
			b.OnStateChange(func(t degrade.Transition) { reasons = append(reasons, t.Reason) })
		}
		calls := 0
		for round := 0; round < 10 && calls < 100; round++ {
			clk.Advance(300 * time.Millisecond)
			for _, b := range fleet {
				p, err := b.Allow()
				if err != nil {
					continue
				}
				calls++
				b.Record(p, degrade.Failure(down))
			}
		}
		// A failure is news: each reaches the fleet's window as it is
		// recorded, and the 20th trips the fleet, 5 in each process.
		Expect(calls).To(Equal(20))
		Expect(reasons).NotTo(BeEmpty())
		Expect(reasons[0]).To(Equal(degrade.ReasonFleetFailureRate))
		clk.Advance(300 * time.Millisecond)
		for _, b := range fleet {
			_, err := b.Allow()
			Expect(err).To(MatchError(degrade.ErrOpen))
		}
	})
})
