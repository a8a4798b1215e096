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
)

// drainCall is one DrainBatch call the fake drainer saw.
type drainCall struct {
	At    time.Duration // since t0
	Max   int
	Moved int
	More  bool
	Err   bool
}

// fakeDrainer is a batch queue of queued jobs. Each DrainBatch moves up to
// max of them, unless failures says to fail this call.
type fakeDrainer struct {
	clk         *clock.Virtual
	queued      int
	failures    int
	calls       []drainCall
	hadDeadline bool
	// during, if set, runs inside the next DrainBatch call.
	during func()
}

var errStoreDown = errors.New("batch store down")

func (d *fakeDrainer) DrainBatch(ctx context.Context, max int) (int, bool, error) {
	_, d.hadDeadline = ctx.Deadline()
	if f := d.during; f != nil {
		d.during = nil
		f()
	}
	c := drainCall{At: d.clk.Now().Sub(t0), Max: max}
	if d.failures > 0 {
		d.failures--
		c.Err = true
		d.calls = append(d.calls, c)
		// Says "no more", so that the retry cannot be relying on it.
		return 0, false, errStoreDown
	}
	c.Moved = min(max, d.queued)
	d.queued -= c.Moved
	c.More = d.queued > 0
	d.calls = append(d.calls, c)
	return c.Moved, c.More, nil
}

var _ degrade.Drainer = (*fakeDrainer)(nil)

var _ = Describe("Fallback", func() {
	var (
		clk     *clock.Virtual
		b       *degrade.Breaker
		drainer *fakeDrainer
		fb      *degrade.Fallback
	)

	BeforeEach(func() {
		clk = clock.NewVirtual(t0)
		// Ramp-up is off so that a routed job after the close reaches the
		// primary; "counts diversions during ramp-up" turns it on.
		b = newBreaker(degrade.BreakerConfig{RampUp: degrade.NoRampUp}, clk)
		drainer = &fakeDrainer{clk: clk}
		var err error
		fb, err = degrade.NewFallback(b, drainer, degrade.FallbackConfig{}, clk)
		Expect(err).NotTo(HaveOccurred())
	})

	// divert routes n jobs, expecting each to be diverted to the batch
	// queue, and queues them there.
	divert := func(n int, reason error) {
		GinkgoHelper()
		for range n {
			r := fb.Route()
			Expect(r.Primary).To(BeFalse())
			Expect(r.Reason).To(MatchError(reason))
			drainer.queued++
		}
	}

	// trip opens the breaker with a critical failure of a routed job.
	trip := func() {
		GinkgoHelper()
		r := fb.Route()
		Expect(r.Primary).To(BeTrue())
		b.Record(r.Permit, degrade.Failure(classify.Critical))
		Expect(b.State()).To(Equal(degrade.Open))
	}

	// recover lets the breaker go half-open and closes it with three
	// successful probes routed through the fallback.
	recover := func() {
		GinkgoHelper()
		clk.RunUntil(b.OpenUntil())
		for range 3 {
			r := fb.Route()
			Expect(r.Primary).To(BeTrue())
			Expect(r.Permit.IsProbe()).To(BeTrue())
			b.Record(r.Permit, degrade.Success())
		}
		Expect(b.State()).To(Equal(degrade.Closed))
	}

	It("routes to the primary while closed", func() {
		r := fb.Route()
		Expect(r.Primary).To(BeTrue())
		Expect(r.Reason).NotTo(HaveOccurred())
		Expect(fb.Stats().Primary).To(Equal(uint64(1)))
		clk.Advance(time.Hour)
		Expect(drainer.calls).To(BeEmpty())
	})

	It("diverts while open and drains in batches every DrainInterval after the close, until empty", func() {
		trip()
		divert(250, degrade.ErrOpen)
		Expect(fb.Stats()).To(Equal(degrade.FallbackStats{Primary: 1, Diverted: 250, DivertedOpen: 250}))

		recover() // at t0+5s
		Expect(fb.Stats().Draining).To(BeTrue())
		clk.Advance(time.Minute)
		Expect(drainer.calls).To(Equal([]drainCall{
			{At: 6 * time.Second, Max: 100, Moved: 100, More: true},
			{At: 7 * time.Second, Max: 100, Moved: 100, More: true},
			{At: 8 * time.Second, Max: 100, Moved: 50, More: false},
		}))
		Expect(drainer.hadDeadline).To(BeTrue())
		s := fb.Stats()
		Expect(s.Drained).To(Equal(uint64(250)))
		Expect(s.Batches).To(Equal(uint64(3)))
		Expect(s.Draining).To(BeFalse())
	})

	It("honours BatchSize and DrainInterval", func() {
		fb2Clock := clock.NewVirtual(t0)
		b2 := newBreaker(degrade.BreakerConfig{RampUp: degrade.NoRampUp}, fb2Clock)
		d2 := &fakeDrainer{clk: fb2Clock, queued: 25}
		_, err := degrade.NewFallback(b2, d2, degrade.FallbackConfig{BatchSize: 10, DrainInterval: 250 * time.Millisecond}, fb2Clock)
		Expect(err).NotTo(HaveOccurred())
		fail(b2, 1, classify.Critical)
		fb2Clock.RunUntil(b2.OpenUntil())
		probeSucceed(b2, 3)
		fb2Clock.Advance(time.Minute)
		Expect(d2.calls).To(Equal([]drainCall{
			{At: 5250 * time.Millisecond, Max: 10, Moved: 10, More: true},
			{At: 5500 * time.Millisecond, Max: 10, Moved: 10, More: true},
			{At: 5750 * time.Millisecond, Max: 10, Moved: 5},
		}))
	})

	It("pauses draining when the breaker trips again and resumes when it closes", func() {
		trip()
		divert(450, degrade.ErrOpen)
		recover() // closes at t0+5s
		clk.Advance(2500 * time.Millisecond)
		Expect(drainer.calls).To(HaveLen(2)) // at 6s and 7s

		// Trip 7.5s after t0, 2.5s after closing: level 1, open for 10s.
		r := fb.Route()
		Expect(r.Primary).To(BeTrue())
		b.Record(r.Permit, degrade.Failure(classify.Critical))
		Expect(fb.Stats().Draining).To(BeFalse())
		Expect(b.OpenUntil()).To(Equal(t0.Add(17500 * time.Millisecond)))
		divert(10, degrade.ErrOpen)

		clk.RunUntil(b.OpenUntil()) // half-open; no drains while open
		Expect(drainer.calls).To(HaveLen(2))
		_ = fb.Route()                   // a probe; the next job is diverted
		divert(1, degrade.ErrProbeLimit) // with a full probe slot
		Expect(fb.Stats().DivertedProbeLimit).To(Equal(uint64(1)))
		clk.Advance(10 * time.Second) // the probe times out: open again, 20s
		Expect(b.State()).To(Equal(degrade.Open))
		recover() // closes at 27.5s + 20s = 47.5s
		clk.Advance(time.Minute)

		Expect(drainer.calls).To(Equal([]drainCall{
			{At: 6 * time.Second, Max: 100, Moved: 100, More: true},
			{At: 7 * time.Second, Max: 100, Moved: 100, More: true},
			{At: 48500 * time.Millisecond, Max: 100, Moved: 100, More: true},
			{At: 49500 * time.Millisecond, Max: 100, Moved: 100, More: true},
			{At: 50500 * time.Millisecond, Max: 100, Moved: 61, More: false},
		}))
		Expect(fb.Stats().Drained).To(Equal(uint64(461)))
	})

	It("never overlaps drain calls when the breaker trips and recovers during one", func() {
		trip()
		divert(300, degrade.ErrOpen)
		recover() // closes at 5s; the first drain is at 6s
		drainer.during = func() {
			trip() // at 6s: open for 10s (level 1)
			Expect(fb.Stats().Draining).To(BeFalse())
			recover() // closes at 16s, while the 6s call is still running
			Expect(fb.Stats().Draining).To(BeTrue())
		}
		clk.Advance(time.Minute)
		// The call that began at 6s ends at 16s; the new closed spell does not
		// start a second loop beside it, but goes on one interval later.
		Expect(drainer.calls).To(Equal([]drainCall{
			{At: 16 * time.Second, Max: 100, Moved: 100, More: true},
			{At: 17 * time.Second, Max: 100, Moved: 100, More: true},
			{At: 18 * time.Second, Max: 100, Moved: 100, More: false},
		}))
	})

	It("counts a drain error and retries at the next interval", func() {
		trip()
		divert(150, degrade.ErrOpen)
		drainer.failures = 2
		recover()
		clk.Advance(time.Minute)
		Expect(drainer.calls).To(Equal([]drainCall{
			{At: 6 * time.Second, Max: 100, Err: true},
			{At: 7 * time.Second, Max: 100, Err: true},
			{At: 8 * time.Second, Max: 100, Moved: 100, More: true},
			{At: 9 * time.Second, Max: 100, Moved: 50},
		}))
		s := fb.Stats()
		Expect(s.DrainErrors).To(Equal(uint64(2)))
		Expect(s.Batches).To(Equal(uint64(2)))
		Expect(s.Drained).To(Equal(uint64(150)))
	})

	It("counts diversions during ramp-up", func() {
		b = newBreaker(degrade.BreakerConfig{}, clk)
		var err error
		fb, err = degrade.NewFallback(b, drainer, degrade.FallbackConfig{}, clk)
		Expect(err).NotTo(HaveOccurred())
		trip()
		recover()
		for range 20 {
			if r := fb.Route(); r.Primary {
				b.Record(r.Permit, degrade.Success())
			}
		}
		s := fb.Stats()
		Expect(s.DivertedRampUp).To(Equal(uint64(18))) // 10% at the instant of closing
		Expect(s.Diverted).To(Equal(s.DivertedRampUp))
	})

	It("waits for the breaker's ramp-up to end before draining into it", func() {
		b = newBreaker(degrade.BreakerConfig{RampUp: 30 * time.Second}, clk)
		var err error
		fb, err = degrade.NewFallback(b, drainer, degrade.FallbackConfig{}, clk)
		Expect(err).NotTo(HaveOccurred())
		trip()
		divert(250, degrade.ErrOpen)
		recover()
		closedAt := clk.Now().Sub(t0)
		Expect(b.RampEnd()).To(Equal(clk.Now().Add(30 * time.Second)))

		clk.Advance(29 * time.Second)
		Expect(drainer.calls).To(BeEmpty(), "nothing drained while the breaker ramps up")
		Expect(fb.Stats().RampWaits).To(Equal(uint64(1)))
		clk.Advance(time.Second)
		Expect(b.RampEnd()).To(BeZero())
		clk.Advance(2 * time.Second)
		Expect(drainer.calls).To(Equal([]drainCall{
			{At: closedAt + 30*time.Second, Max: 100, Moved: 100, More: true},
			{At: closedAt + 31*time.Second, Max: 100, Moved: 100, More: true},
			{At: closedAt + 32*time.Second, Max: 100, Moved: 50, More: false},
		}))
	})

	It("drains a batch queue left from an earlier run on StartDraining", func() {
		drainer.queued = 120
		fb.StartDraining()
		fb.StartDraining() // already running: no second loop
		clk.Advance(time.Minute)
		Expect(drainer.calls).To(Equal([]drainCall{
			{At: time.Second, Max: 100, Moved: 100, More: true},
			{At: 2 * time.Second, Max: 100, Moved: 20},
		}))
	})

	It("rejects a missing breaker, drainer or clock and a bad config", func() {
		_, err := degrade.NewFallback(nil, drainer, degrade.FallbackConfig{}, clk)
		Expect(err).To(MatchError(degrade.ErrInvalidConfig))
		_, err = degrade.NewFallback(b, nil, degrade.FallbackConfig{}, clk)
		Expect(err).To(MatchError(degrade.ErrInvalidConfig))
		_, err = degrade.NewFallback(b, drainer, degrade.FallbackConfig{}, nil)
		Expect(err).To(MatchError(degrade.ErrInvalidConfig))
		_, err = degrade.NewFallback(b, drainer, degrade.FallbackConfig{DrainTimeout: -time.Second}, clk)
		var ce *degrade.ConfigError
		Expect(errors.As(err, &ce)).To(BeTrue())
		Expect(ce.Field).To(Equal("DrainTimeout"))
	})
})
