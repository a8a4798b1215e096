package degrade_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/reference/degrade"
)

// flapRun is the result of driving a breaker against a flapping dependency.
type flapRun struct {
	transitions []degrade.Transition
	admitted    int
	failed      int
}

// openDurations returns the OpenFor of every trip, in order.
func (r flapRun) openDurations() []time.Duration {
	var d []time.Duration
	for _, t := range r.transitions {
		if t.To == degrade.Open {
			d = append(d, t.OpenFor)
		}
	}
	return d
}

// runFlapping drives a breaker configured by cfg against a dependency that is
// up for the first second of every two (period 2s, 50% duty) for ten minutes
// of virtual time, with one call every 50ms. A call fails (transient) when the
// dependency is down at that instant.
func runFlapping(cfg degrade.BreakerConfig) flapRun {
	GinkgoHelper()
	return runFlappingWith(cfg, 2*time.Second, time.Second)
}

// runFlappingWith is runFlapping with the dependency up for the first upFor
// of every period.
func runFlappingWith(cfg degrade.BreakerConfig, period, upFor time.Duration) flapRun {
	GinkgoHelper()
	clk := clock.NewVirtual(t0)
	b := newBreaker(cfg, clk)
	rec := &recorder{}
	b.OnStateChange(rec.listen)
	var run flapRun
	const (
		every = 50 * time.Millisecond
		total = 10 * time.Minute
	)
	for i := 1; i <= int(total/every); i++ {
		clk.RunUntil(t0.Add(time.Duration(i) * every))
		p, err := b.Allow()
		if err != nil {
			continue
		}
		run.admitted++
		if clk.Now().Sub(t0)%period < upFor {
			b.Record(p, degrade.Success())
		} else {
			run.failed++
			b.Record(p, degrade.Failure(netTimeout))
		}
	}
	run.transitions = rec.got
	return run
}

// naiveConfig is the breaker with its hysteresis effectively off: no
// backoff, no ramp-up, and every closed spell counted as stable.
var naiveConfig = degrade.BreakerConfig{
	Name:          "flappy",
	BackoffFactor: 1,
	RampUp:        degrade.NoRampUp,
	StablePeriod:  time.Nanosecond,
}

// checkChain asserts that transitions form one legal chain from Closed.
func checkChain(ts []degrade.Transition) {
	GinkgoHelper()
	from := degrade.Closed
	for i, t := range ts {
		Expect(t.From).To(Equal(from), "transition %d", i)
		Expect(legal(t.From, t.To)).To(BeTrue(), "transition %d", i)
		from = t.To
	}
}

// checkNeverShrinks asserts that successive open durations never shrink and
// end at the cap.
func checkNeverShrinks(r flapRun) {
	GinkgoHelper()
	d := r.openDurations()
	Expect(len(d)).To(BeNumerically(">=", 2))
	for i := 1; i < len(d); i++ {
		Expect(d[i]).To(BeNumerically(">=", d[i-1]), "open spell %d shrank: %v", i, d)
	}
	Expect(d[len(d)-1]).To(Equal(degrade.DefaultMaxOpenDuration), "open durations %v", d)
}

// maxFlapTransitions bounds the transitions of a default breaker in ten
// minutes of flapping: while the dependency keeps failing soon after every
// recovery, the open duration doubles from 5s to the 5m cap, so ten minutes
// hold at most seven open spells (5+10+20+40+80+160 = 315s, then 300s), and
// each open spell brings at most two more transitions (to half-open, and to
// closed).
const maxFlapTransitions = 7 * 3

var _ = Describe("A breaker guarding a flapping dependency", func() {
	Context("up 1s, down 1s, for ten minutes", func() {
		var hysteresis, naive flapRun

		BeforeEach(func() {
			hysteresis = runFlapping(degrade.BreakerConfig{Name: "flappy"})
			naive = runFlapping(naiveConfig)
			GinkgoWriter.Printf("dependency changes: 600; transitions with hysteresis: %d, naive: %d\n",
				len(hysteresis.transitions), len(naive.transitions))
			GinkgoWriter.Printf("open durations with hysteresis: %v\n", hysteresis.openDurations())
		})

		It("does not flap at the dependency's rate", func() {
			checkChain(hysteresis.transitions)
			checkChain(naive.transitions)
			Expect(len(hysteresis.transitions)).To(BeNumerically("<=", maxFlapTransitions))
			// The naive breaker follows the dependency: open 5s, probe, close
			// or re-open, over and over.
			Expect(len(naive.transitions)).To(BeNumerically(">=", 10*len(hysteresis.transitions)))
			Expect(len(naive.transitions)).To(BeNumerically(">=", 200))
		})

		It("keeps the open durations growing to the cap", func() {
			checkNeverShrinks(hysteresis)
			for _, n := range naive.openDurations() {
				Expect(n).To(Equal(degrade.DefaultOpenDuration))
			}
		})

		It("sends far fewer failing calls to the dependency", func() {
			Expect(hysteresis.failed * 10).To(BeNumerically("<", naive.failed))
		})
	})

	// With a 2s period every open duration after the first is a whole number
	// of periods, so every later probe lands in a down phase. A 2.3s period
	// lets probes succeed: the breaker closes between trips, ramps up, trips
	// again soon after, and each such trip must raise the level too.
	Context("up 1.15s, down 1.15s, so that some probes succeed", func() {
		var hysteresis, naive flapRun

		BeforeEach(func() {
			hysteresis = runFlappingWith(degrade.BreakerConfig{Name: "flappy"}, 2300*time.Millisecond, 1150*time.Millisecond)
			naive = runFlappingWith(naiveConfig, 2300*time.Millisecond, 1150*time.Millisecond)
			GinkgoWriter.Printf("transitions with hysteresis: %d, naive: %d\n", len(hysteresis.transitions), len(naive.transitions))
		})

		It("closes between trips, yet never flaps and never shortens the open duration", func() {
			checkChain(hysteresis.transitions)
			closes := 0
			for _, t := range hysteresis.transitions {
				if t.To == degrade.Closed {
					closes++
				}
			}
			Expect(closes).To(BeNumerically(">=", 3))
			checkNeverShrinks(hysteresis)
			Expect(len(hysteresis.transitions)).To(BeNumerically("<=", maxFlapTransitions))
			Expect(len(naive.transitions)).To(BeNumerically(">=", 10*len(hysteresis.transitions)))
		})
	})
})
