package degrade_test

import (
	"context"
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

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
// max of them to the main queue, unless failures says to fail this call.
type fakeDrainer struct {
	clk    *clock.Virtual
	queued int
	// main is the main queue: the jobs moved back and not yet taken by a
	// worker (the specs that play the workers take them).
	main        int
	failures    int
	calls       []drainCall
	hadDeadline bool
	// during, if set, runs inside the next DrainBatch call, before it moves
	// anything; afterMove, if set, inside the next call that moves jobs,
	// after it has moved them and before it returns.
	during, afterMove func()
	// active counts the calls running now, maxActive the most ever at once.
	active, maxActive int
}

var errStoreDown = errors.New("batch store down")

func (d *fakeDrainer) DrainBatch(ctx context.Context, now time.Time, n int) (int, bool, error) {
	if !now.Equal(d.clk.Now()) {
		panic("DrainBatch's now is not the fallback clock's")
	}
	d.active++
	d.maxActive = max(d.maxActive, d.active)
	defer func() { d.active-- }()
	_, d.hadDeadline = ctx.Deadline()
	if f := d.during; f != nil {
		d.during = nil
		f()
	}
	c := drainCall{At: d.clk.Now().Sub(t0), Max: n}
	if d.failures > 0 {
		d.failures--
		c.Err = true
		d.calls = append(d.calls, c)
		// Says "no more", so that the retry cannot be relying on it.
		return 0, false, errStoreDown
	}
	c.Moved = min(n, d.queued)
	d.queued -= c.Moved
	d.main += c.Moved
	c.More = d.queued > 0
	d.calls = append(d.calls, c)
	if f := d.afterMove; f != nil && c.Moved > 0 {
		d.afterMove = nil
		f()
	}
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
		b.Record(r.Permit, degrade.Failure(unauthorized))
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
		fail(b2, 1, unauthorized)
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
		b.Record(r.Permit, degrade.Failure(unauthorized))
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

	Describe("when the breaker goes half-open, supplying its probes from the batch queue", func() {
		// done counts the jobs that the workers completed on the primary.
		var done int

		BeforeEach(func() { done = 0 })

		// work plays the workers: it takes every job in the main queue and
		// routes it. A job Route lets through calls the primary, with the
		// outcome ok gives; a job Route diverts, or whose call fails, goes back
		// to the batch queue (a failed job's retry is diverted while the
		// breaker is open).
		work := func(ok func() bool) {
			GinkgoHelper()
			for drainer.main > 0 {
				drainer.main--
				r := fb.Route()
				switch {
				case !r.Primary:
					drainer.queued++
				case ok():
					b.Record(r.Permit, degrade.Success())
					done++
				default:
					b.Record(r.Permit, degrade.Failure(netTimeout))
					drainer.queued++
				}
			}
		}

		// runWorkers runs the clock one instant at a time up to end, letting
		// the workers take the main queue after each instant, and checks after
		// every instant that none of the total jobs is lost and that no two
		// drain calls have overlapped.
		runWorkers := func(end time.Time, total int, ok func() bool) {
			GinkgoHelper()
			check := func() {
				GinkgoHelper()
				at := clk.Now().Sub(t0)
				Expect(drainer.queued+drainer.main+done).To(Equal(total), "jobs lost or made up at %v", at)
				Expect(drainer.maxActive).To(BeNumerically("<=", 1), "drain calls overlapped by %v", at)
			}
			work(ok)
			check()
			for {
				next, pending := clk.Next()
				if !pending || next.After(end) {
					break
				}
				clk.RunUntil(next)
				work(ok)
				check()
			}
			clk.RunUntil(end)
		}
		always := func() bool { return true }

		It("strands nothing: with no new traffic, the backlog's first jobs are the probes, close the breaker, and the rest drains", func() {
			trip() // at t0: open for 5s
			divert(1000, degrade.ErrOpen)
			// No new traffic from here on: the only jobs routed are the ones
			// drained back, as the workers take them from the main queue.
			runWorkers(t0.Add(24*time.Hour), 1000, always)

			Expect(b.State()).To(Equal(degrade.Closed))
			Expect(drainer.queued).To(BeZero(), "batch queue emptied")
			Expect(drainer.main).To(BeZero())
			Expect(done).To(Equal(1000))
			Expect(clk.Pending()).To(BeZero(), "no timers left")
			Expect(drainer.calls).To(HaveLen(13))
			Expect(drainer.calls[:5]).To(Equal([]drainCall{
				// Half-open at 5s, with one probe slot and three successes
				// to close: one probe job at a time, each once the last has
				// been routed and its slot is free.
				{At: 6 * time.Second, Max: 1, Moved: 1, More: true},
				{At: 7 * time.Second, Max: 1, Moved: 1, More: true},
				{At: 8 * time.Second, Max: 1, Moved: 1, More: true},
				// The third probe closed the breaker at 8s: the backlog, in
				// batches.
				{At: 9 * time.Second, Max: 100, Moved: 100, More: true},
				{At: 10 * time.Second, Max: 100, Moved: 100, More: true},
			}))
			Expect(drainer.calls[12]).To(Equal(drainCall{At: 18 * time.Second, Max: 100, Moved: 97}))
			s := fb.Stats()
			Expect(s.ProbeBatches).To(Equal(uint64(3)))
			Expect(s.ProbeDrained).To(Equal(uint64(3)))
			Expect(s.Batches).To(Equal(uint64(13)))
			Expect(s.Drained).To(Equal(uint64(1000)))
			Expect(s.Draining).To(BeFalse())
			Expect(s.Probing).To(BeFalse())
		})

		It("does the same with the default ramp-up, which the backlog still waits for", func() {
			b = newBreaker(degrade.BreakerConfig{}, clk)
			var err error
			fb, err = degrade.NewFallback(b, drainer, degrade.FallbackConfig{}, clk)
			Expect(err).NotTo(HaveOccurred())
			trip()
			divert(1000, degrade.ErrOpen)
			runWorkers(t0.Add(24*time.Hour), 1000, always)

			Expect(b.State()).To(Equal(degrade.Closed))
			Expect(drainer.queued).To(BeZero())
			Expect(done).To(Equal(1000))
			Expect(clk.Pending()).To(BeZero())
			Expect(drainer.calls[:4]).To(Equal([]drainCall{
				{At: 6 * time.Second, Max: 1, Moved: 1, More: true},
				{At: 7 * time.Second, Max: 1, Moved: 1, More: true},
				{At: 8 * time.Second, Max: 1, Moved: 1, More: true},
				// Closed at 8s; the ramp-up ends at 38s.
				{At: 38 * time.Second, Max: 100, Moved: 100, More: true},
			}))
			Expect(fb.Stats().RampWaits).To(Equal(uint64(1)))
		})

		It("when the probe jobs fail, lets the breaker re-open and supplies probes again after the next open period", func() {
			rec := &recorder{}
			b.OnStateChange(rec.listen)
			trip() // at t0: open for 5s
			divert(10, degrade.ErrOpen)
			failing := 2
			runWorkers(t0.Add(time.Hour), 10, func() bool {
				if failing > 0 {
					failing--
					return false
				}
				return true
			})

			Expect(drainer.calls).To(Equal([]drainCall{
				// Half-open at 5s; the probe fails: open for 10s (level 1).
				{At: 6 * time.Second, Max: 1, Moved: 1, More: true},
				// Half-open at 16s; the probe fails: open for 20s (level 2).
				{At: 17 * time.Second, Max: 1, Moved: 1, More: true},
				// Half-open at 37s; three probes succeed.
				{At: 38 * time.Second, Max: 1, Moved: 1, More: true},
				{At: 39 * time.Second, Max: 1, Moved: 1, More: true},
				{At: 40 * time.Second, Max: 1, Moved: 1, More: true},
				// Closed at 40s: the seven left.
				{At: 41 * time.Second, Max: 100, Moved: 7},
			}))
			Expect(rec.path()).To(Equal([]degrade.State{
				degrade.Open, degrade.HalfOpen, degrade.Open, degrade.HalfOpen, degrade.Open, degrade.HalfOpen, degrade.Closed,
			}))
			Expect(rec.got[2].Reason).To(Equal(degrade.ReasonProbeFailed))
			Expect(rec.got[4].Reason).To(Equal(degrade.ReasonProbeFailed))
			Expect(rec.got[4].At).To(Equal(t0.Add(17 * time.Second)))
			Expect(drainer.queued).To(BeZero())
			Expect(done).To(Equal(10))
			s := fb.Stats()
			Expect(s.ProbeDrained).To(Equal(uint64(5)))
			Expect(s.Drained).To(Equal(uint64(12))) // the two failed jobs went back and came out again
		})

		It("retries a failed probe drain at the next interval while the breaker stays half-open", func() {
			trip()
			divert(5, degrade.ErrOpen)
			drainer.failures = 2
			runWorkers(t0.Add(time.Minute), 5, always)
			Expect(drainer.calls).To(Equal([]drainCall{
				{At: 6 * time.Second, Max: 1, Err: true},
				{At: 7 * time.Second, Max: 1, Err: true},
				{At: 8 * time.Second, Max: 1, Moved: 1, More: true},
				{At: 9 * time.Second, Max: 1, Moved: 1, More: true},
				{At: 10 * time.Second, Max: 1, Moved: 1, More: true},
				{At: 11 * time.Second, Max: 100, Moved: 2},
			}))
			s := fb.Stats()
			Expect(s.DrainErrors).To(Equal(uint64(2)))
			Expect(s.ProbeBatches).To(Equal(uint64(3)))
			Expect(s.Batches).To(Equal(uint64(4)))
		})

		It("stops retrying a failed probe drain when the breaker leaves half-open", func() {
			trip()
			divert(5, degrade.ErrOpen)
			drainer.failures = 1000
			clk.RunUntil(b.OpenUntil()) // half-open at 5s
			r := fb.Route()             // a live call takes the probe slot...
			Expect(r.Permit.IsProbe()).To(BeTrue())
			clk.Advance(10 * time.Second) // ...and times out at 15s: open for 10s
			Expect(b.State()).To(Equal(degrade.Open))
			// At 6s the slot was taken: no call. From 15s the breaker is open.
			Expect(drainer.calls).To(BeEmpty())
			clk.Advance(10*time.Second + 500*time.Millisecond) // half-open at 25s, a failing call at 26s
			b.Record(r.Permit, degrade.Success())              // stale
			clk.RunUntil(t0.Add(26 * time.Second))
			Expect(drainer.calls).To(Equal([]drainCall{{At: 26 * time.Second, Max: 1, Err: true}}))
		})

		It("never overlaps drain calls: a backlog drain waits for a probe drain the breaker closed during", func() {
			trip()
			divert(300, degrade.ErrOpen)
			drainer.during = func() {
				// At 6s, during the probe drain, live calls probe and close
				// the breaker; the call then takes five seconds.
				Expect(fb.Stats().Probing).To(BeTrue())
				for range 3 {
					r := fb.Route()
					Expect(r.Permit.IsProbe()).To(BeTrue())
					b.Record(r.Permit, degrade.Success())
				}
				Expect(b.State()).To(Equal(degrade.Closed))
				Expect(fb.Stats().Draining).To(BeTrue())
				clk.Advance(5 * time.Second)
			}
			runWorkers(t0.Add(time.Minute), 300, always)
			Expect(drainer.calls).To(Equal([]drainCall{
				{At: 11 * time.Second, Max: 1, Moved: 1, More: true}, // began at 6s
				{At: 12 * time.Second, Max: 100, Moved: 100, More: true},
				{At: 13 * time.Second, Max: 100, Moved: 100, More: true},
				{At: 14 * time.Second, Max: 100, Moved: 99},
			}))
			Expect(drainer.maxActive).To(Equal(1))
		})

		It("never overlaps drain calls: probing waits for a backlog drain the breaker tripped during", func() {
			trip()
			divert(300, degrade.ErrOpen)
			recover() // closes at 5s; the first batch is due at 6s
			drainer.during = func() {
				trip()                        // at 6s: open for 10s (level 1)
				clk.Advance(10 * time.Second) // half-open at 16s, the call still running
				Expect(b.State()).To(Equal(degrade.HalfOpen))
				Expect(fb.Stats().Probing).To(BeTrue())
			}
			runWorkers(t0.Add(time.Minute), 300, always)
			Expect(drainer.calls).To(Equal([]drainCall{
				// Began at 6s. Its jobs, routed one by one at 16s, are the
				// probes: the first three close the breaker, the rest pass.
				// The probe drain that was due at 17s is no longer needed.
				{At: 16 * time.Second, Max: 100, Moved: 100, More: true},
				{At: 17 * time.Second, Max: 100, Moved: 100, More: true},
				{At: 18 * time.Second, Max: 100, Moved: 100},
			}))
			Expect(drainer.maxActive).To(Equal(1))
			Expect(fb.Stats().ProbeBatches).To(BeZero())
		})

		It("never overlaps drain calls: probing waits for a failing backlog drain the breaker tripped during, then supplies", func() {
			trip()
			divert(300, degrade.ErrOpen)
			recover() // closes at 5s; the first batch is due at 6s
			drainer.during = func() {
				trip()                        // at 6s: open for 10s (level 1)
				clk.Advance(10 * time.Second) // half-open at 16s, the call still running
				Expect(fb.Stats().Probing).To(BeTrue())
				drainer.failures = 1 // and then it fails
			}
			runWorkers(t0.Add(time.Minute), 300, always)
			Expect(drainer.calls).To(Equal([]drainCall{
				{At: 16 * time.Second, Max: 100, Err: true}, // began at 6s
				{At: 17 * time.Second, Max: 1, Moved: 1, More: true},
				{At: 18 * time.Second, Max: 1, Moved: 1, More: true},
				{At: 19 * time.Second, Max: 1, Moved: 1, More: true}, // closes
				{At: 20 * time.Second, Max: 100, Moved: 100, More: true},
				{At: 21 * time.Second, Max: 100, Moved: 100, More: true},
				{At: 22 * time.Second, Max: 100, Moved: 97},
			}))
			Expect(drainer.maxActive).To(Equal(1))
		})

		It("keeps supplying when the probe jobs are routed before the drain call returns", func() {
			trip()
			divert(20, degrade.ErrOpen)
			drainer.afterMove = func() { work(always) } // a worker quicker than the store's reply
			runWorkers(t0.Add(time.Minute), 20, always)
			Expect(b.State()).To(Equal(degrade.Closed))
			Expect(drainer.queued).To(BeZero())
			Expect(drainer.calls[:4]).To(Equal([]drainCall{
				{At: 6 * time.Second, Max: 1, Moved: 1, More: true},
				{At: 7 * time.Second, Max: 1, Moved: 1, More: true},
				{At: 8 * time.Second, Max: 1, Moved: 1, More: true},
				{At: 9 * time.Second, Max: 100, Moved: 17},
			}))
		})

		It("drains no further probe until the workers have routed the last one", func() {
			trip()
			divert(50, degrade.ErrOpen)
			clk.Advance(time.Hour) // the workers are down: nobody takes the main queue
			Expect(drainer.calls).To(Equal([]drainCall{{At: 6 * time.Second, Max: 1, Moved: 1, More: true}}))
			Expect(b.State()).To(Equal(degrade.HalfOpen))
			Expect(fb.Stats().Probing).To(BeTrue())
			Expect(clk.Pending()).To(BeZero(), "nothing polls while waiting for the workers")

			back := clk.Now().Sub(t0) // the workers come back
			runWorkers(clk.Now().Add(time.Minute), 50, always)
			Expect(b.State()).To(Equal(degrade.Closed))
			Expect(drainer.queued).To(BeZero())
			Expect(drainer.calls[1:]).To(Equal([]drainCall{
				{At: back + time.Second, Max: 1, Moved: 1, More: true},
				{At: back + 2*time.Second, Max: 1, Moved: 1, More: true},
				{At: back + 3*time.Second, Max: 100, Moved: 47},
			}))
		})

		It("supplies only the free probe slots", func() {
			b = newBreaker(degrade.BreakerConfig{RampUp: degrade.NoRampUp, HalfOpenProbes: 3}, clk)
			var err error
			fb, err = degrade.NewFallback(b, drainer, degrade.FallbackConfig{}, clk)
			Expect(err).NotTo(HaveOccurred())
			trip()
			divert(30, degrade.ErrOpen)
			clk.RunUntil(b.OpenUntil())
			live := fb.Route() // a live call takes one of the three slots at 5s
			Expect(live.Permit.IsProbe()).To(BeTrue())
			runWorkers(t0.Add(6*time.Second), 30, always)
			Expect(drainer.calls).To(Equal([]drainCall{{At: 6 * time.Second, Max: 2, Moved: 2, More: true}}))
			Expect(b.State()).To(Equal(degrade.HalfOpen)) // two successes of three
			b.Record(live.Permit, degrade.Success())
			Expect(b.State()).To(Equal(degrade.Closed))
			runWorkers(t0.Add(time.Minute), 30, always)
			Expect(drainer.queued).To(BeZero())
		})

		It("waits for a taken probe slot to be free, and lets the breaker decide when the batch queue is empty", func() {
			trip()
			drainer.queued = 1
			clk.RunUntil(b.OpenUntil())
			live := fb.Route() // a live call takes the only slot at 5s
			clk.Advance(2500 * time.Millisecond)
			Expect(drainer.calls).To(BeEmpty(), "no drain while the slot is taken")
			b.Record(live.Permit, degrade.Success())
			clk.Advance(time.Second) // the 8s look finds the slot free
			Expect(drainer.calls).To(Equal([]drainCall{{At: 8 * time.Second, Max: 1, Moved: 1}}))
			Expect(fb.Stats().Probing).To(BeFalse(), "nothing left to supply")
			drainer.main = 0
			clk.Advance(time.Hour)
			Expect(drainer.calls).To(HaveLen(1))
			Expect(clk.Pending()).To(BeZero())
		})

		It("makes one probe drain per half-open spell when the batch queue is empty", func() {
			trip()
			clk.Advance(time.Hour)
			Expect(drainer.calls).To(Equal([]drainCall{{At: 6 * time.Second, Max: 1}}))
			Expect(b.State()).To(Equal(degrade.HalfOpen))
			s := fb.Stats()
			Expect(s.Probing).To(BeFalse())
			Expect(s.ProbeBatches).To(Equal(uint64(1)))
			Expect(s.ProbeDrained).To(BeZero())
			Expect(clk.Pending()).To(BeZero())
		})
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
