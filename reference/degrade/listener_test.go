package degrade_test

import (
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/reference/degrade"
)

var _ = Describe("State-change listeners", func() {
	var clk *clock.Virtual

	BeforeEach(func() {
		clk = clock.NewVirtual(t0)
	})

	It("may call the breaker without deadlocking, and see transitions in order", func(ctx SpecContext) {
		b := newBreaker(degrade.BreakerConfig{SuccessesToClose: 1}, clk)
		type seen struct {
			t     degrade.Transition
			state degrade.State
			err   error
		}
		var got []seen
		b.OnStateChange(func(t degrade.Transition) {
			_, err := b.Allow()
			got = append(got, seen{t: t, state: b.State(), err: err})
			_ = b.Stats()
			_ = b.OpenUntil()
		})
		fail(b, 1, unauthorized)
		untilHalfOpen(b, clk)

		Expect(got).To(HaveLen(2))
		Expect(got[0].t.To).To(Equal(degrade.Open))
		Expect(got[0].state).To(Equal(degrade.Open))
		Expect(got[0].err).To(MatchError(degrade.ErrOpen))
		// The listener's own Allow took the only probe slot.
		Expect(got[1].t.To).To(Equal(degrade.HalfOpen))
		Expect(got[1].err).NotTo(HaveOccurred())
		Expect(b.OutstandingProbes()).To(Equal(1))
	}, SpecTimeout(10*time.Second))

	It("delivers a transition a listener causes after the one it is handling", func(ctx SpecContext) {
		b := newBreaker(degrade.BreakerConfig{SuccessesToClose: 1, RampUp: degrade.NoRampUp}, clk)
		var first, second []degrade.Transition
		// On half-open the first listener makes a probe call that succeeds,
		// which closes the breaker inside the delivery of "half-open".
		b.OnStateChange(func(t degrade.Transition) {
			first = append(first, t)
			if t.To == degrade.HalfOpen {
				p, err := b.Allow()
				Expect(err).NotTo(HaveOccurred())
				b.Record(p, degrade.Success())
				// Already closed, but "closed" is not delivered until every
				// listener has had "half-open".
				Expect(b.State()).To(Equal(degrade.Closed))
				Expect(first[len(first)-1].To).To(Equal(degrade.HalfOpen))
			}
		})
		b.OnStateChange(func(t degrade.Transition) { second = append(second, t) })

		fail(b, 1, unauthorized)
		clk.Advance(5 * time.Second) // the transition comes from the timer callback

		want := []degrade.State{degrade.Open, degrade.HalfOpen, degrade.Closed}
		for _, got := range [][]degrade.Transition{first, second} {
			Expect(got).To(HaveLen(3))
			for i, t := range got {
				Expect(t.To).To(Equal(want[i]))
			}
			Expect(got[1].At).To(Equal(t0.Add(5 * time.Second)))
		}
	}, SpecTimeout(10*time.Second))

	It("runs listeners of timer-driven transitions in order", func(ctx SpecContext) {
		b := newBreaker(degrade.BreakerConfig{HalfOpenProbes: 1}, clk)
		rec := &recorder{}
		b.OnStateChange(rec.listen)
		// Trip; go half-open on the timer; a probe times out on its timer
		// (re-open, 10s); half-open again on the timer.
		fail(b, 1, unauthorized)
		clk.Advance(5 * time.Second)
		_, err := b.Allow()
		Expect(err).NotTo(HaveOccurred())
		clk.Advance(20 * time.Second)
		Expect(rec.path()).To(Equal([]degrade.State{degrade.Open, degrade.HalfOpen, degrade.Open, degrade.HalfOpen}))
		Expect(rec.got[2].Reason).To(Equal(degrade.ReasonProbeTimeout))
		Expect(rec.got[2].At).To(Equal(t0.Add(15 * time.Second)))
		Expect(rec.got[3].At).To(Equal(t0.Add(25 * time.Second)))
	}, SpecTimeout(10*time.Second))

	It("delivers what is left after a listener panics", func(ctx SpecContext) {
		b := newBreaker(degrade.BreakerConfig{}, clk)
		rec := &recorder{}
		panicked := false
		b.OnStateChange(func(t degrade.Transition) {
			if !panicked {
				panicked = true
				panic("listener bug")
			}
		})
		b.OnStateChange(rec.listen)
		Expect(func() { fail(b, 1, unauthorized) }).To(PanicWith("listener bug"))
		Expect(rec.got).To(BeEmpty())
		clk.Advance(5 * time.Second)
		Expect(rec.path()).To(Equal([]degrade.State{degrade.HalfOpen}))
	}, SpecTimeout(10*time.Second))

	It("keeps transitions in one legal order under concurrent callers", func(ctx SpecContext) {
		b := newBreaker(degrade.BreakerConfig{
			HalfOpenProbes: 3, SuccessesToClose: 2, OpenDuration: 50 * time.Millisecond,
			RampUp: degrade.NoRampUp,
		}, clk)
		var mu sync.Mutex
		var got []degrade.Transition
		b.OnStateChange(func(t degrade.Transition) {
			_ = b.State()
			mu.Lock()
			got = append(got, t)
			mu.Unlock()
		})
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				for i := range 2000 {
					p, err := b.Allow()
					if err != nil {
						continue
					}
					o := degrade.Success()
					if (i+w)%3 != 0 { // two in three fail
						o = degrade.Failure(netTimeout)
					}
					b.Record(p, o)
				}
			})
		}
		wg.Go(func() {
			for range 2000 {
				clk.Advance(10 * time.Millisecond)
			}
		})
		wg.Wait()

		mu.Lock()
		defer mu.Unlock()
		Expect(got).NotTo(BeEmpty())
		for i, t := range got {
			from := degrade.Closed
			if i > 0 {
				from = got[i-1].To
				Expect(t.At).NotTo(BeTemporally("<", got[i-1].At))
			}
			Expect(t.From).To(Equal(from), "transition %d", i)
			Expect(legal(t.From, t.To)).To(BeTrue())
		}
		s := b.Stats()
		Expect(s.ToOpen + s.ToHalfOpen + s.ToClosed).To(Equal(uint64(len(got))))
	}, SpecTimeout(30*time.Second))
})
