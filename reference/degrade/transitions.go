package degrade

import (
	"time"

	"github.com/faultline/faultline/reference/internal/mutant"
)

// tripLocked opens the breaker from Closed or HalfOpen, adjusting the
// hysteresis level first: a re-trip from HalfOpen, or a trip soon after the
// last close, raises it; a trip after n whole stable periods closed lowers it
// by n (decay is computed here, lazily, so that it needs no timer).
func (b *Breaker) tripLocked(now time.Time, reason string) {
	switch b.state {
	case HalfOpen:
		b.raiseLevel()
	case Closed:
		if b.hasClosed {
			since := now.Sub(b.closedAt)
			if since < b.cfg.StablePeriod {
				b.raiseLevel()
			} else if periods := int64(since / b.cfg.StablePeriod); periods >= int64(b.level) {
				b.level = 0
			} else {
				b.level -= int(periods)
			}
		}
	}
	b.openFor = openDuration(b.cfg.OpenDuration, b.cfg.MaxOpenDuration, b.cfg.BackoffFactor, b.level)
	b.openUntil = now.Add(b.openFor)
	b.setStateLocked(now, Open, reason)
	gen := b.gen
	b.openTimer = b.clk.AfterFunc(b.openFor, func() { b.openElapsed(gen) })
	if b.fleet != nil {
		b.publishLocked(now)
	}
}

func (b *Breaker) raiseLevel() {
	if b.level < b.maxLevel && !mutant.On("degrade/no-hysteresis") {
		b.level++
	}
}

// toHalfOpenLocked moves an open breaker to HalfOpen.
func (b *Breaker) toHalfOpenLocked(now time.Time) {
	b.probeSuccesses = 0
	b.setStateLocked(now, HalfOpen, ReasonOpenElapsed)
}

// closeLocked closes a half-open breaker (or, adopting its fleet's close,
// an open one) with a fresh window and, unless it is turned off, starts
// ramp-up.
func (b *Breaker) closeLocked(now time.Time, reason string) {
	b.closedAt = now
	b.hasClosed = true
	b.consecutive = 0
	clear(b.buckets)
	b.ramping = b.cfg.RampUp > 0 && b.cfg.RampStartPercent < 100
	b.rampCredit = 0
	b.setStateLocked(now, Closed, reason)
}

// setStateLocked leaves the current state (stopping its timers), enters to,
// starts a new generation and queues the transition for the listeners.
func (b *Breaker) setStateLocked(now time.Time, to State, reason string) {
	from := b.state
	if b.fleet != nil {
		b.fleet.probing = false
	}
	switch from {
	case Open:
		if b.openTimer != nil {
			b.openTimer.Stop()
			b.openTimer = nil
		}
	case HalfOpen:
		for i := range b.probes {
			b.probes[i].timer.Stop()
			b.probes[i] = probe{}
		}
		b.probes = b.probes[:0]
	case Closed:
		b.ramping = false
	}
	b.state = to
	b.gen++
	t := Transition{Breaker: b.cfg.Name, From: from, To: to, At: now, Reason: reason, Level: b.level}
	switch to {
	case Open:
		b.stats.ToOpen++
		t.OpenFor = b.openFor
	case HalfOpen:
		b.stats.ToHalfOpen++
	case Closed:
		b.stats.ToClosed++
	}
	b.pending = append(b.pending, t)
}

// releaseProbeLocked frees the slot of probe id and stops its timeout. It
// reports false if no such probe is outstanding.
func (b *Breaker) releaseProbeLocked(id uint64) bool {
	for i := range b.probes {
		if b.probes[i].id == id {
			b.probes[i].timer.Stop()
			last := len(b.probes) - 1
			b.probes[i] = b.probes[last]
			b.probes[last] = probe{}
			b.probes = b.probes[:last]
			return true
		}
	}
	return false
}

// openElapsed is the open timer's callback: the edge that reads the clock
// for a transition no caller asked for.
func (b *Breaker) openElapsed(gen uint64) {
	now := b.clk.Now()
	b.mu.Lock()
	now = b.seenLocked(now)
	if b.gen == gen && b.state == Open {
		b.openTimer = nil
		switch {
		case b.fleet != nil && now.Before(b.openUntil):
			// A fleet's breaker waiting for another's probes: a sync.
			b.fleet.nextSync = time.Time{}
			b.syncLocked(now)
			if b.state == Open && b.openTimer == nil {
				b.armLocked(now, b.cfg.SyncInterval)
			}
		case b.fleet == nil || b.claimLocked(now):
			b.toHalfOpenLocked(now)
		}
	}
	b.unlockAndDeliver()
}

// probeExpired is a probe timeout's callback: the probe's slot is released
// and the probe counts as a failure, which re-opens the breaker.
func (b *Breaker) probeExpired(gen, id uint64) {
	now := b.clk.Now()
	b.mu.Lock()
	now = b.seenLocked(now)
	if b.gen == gen && b.state == HalfOpen && b.releaseProbeLocked(id) {
		b.stats.ProbeTimeouts++
		b.stats.CountedFailures++
		b.tripLocked(now, ReasonProbeTimeout)
	}
	b.unlockAndDeliver()
}

// unlockAndDeliver releases b.mu, then delivers the queued transitions unless
// another call is already delivering them (it will deliver these too, in
// order). The caller holds b.mu.
func (b *Breaker) unlockAndDeliver() {
	if b.delivering || b.pendingHead == len(b.pending) {
		b.mu.Unlock()
		return
	}
	b.delivering = true
	for b.pendingHead < len(b.pending) {
		t := b.pending[b.pendingHead]
		b.pending[b.pendingHead] = Transition{}
		b.pendingHead++
		listeners := b.listeners
		b.mu.Unlock()
		b.notify(listeners, t)
		b.mu.Lock()
	}
	b.pending = b.pending[:0]
	b.pendingHead = 0
	b.delivering = false
	b.mu.Unlock()
}

// notify calls the listeners with t, lock not held. If a listener panics, the
// delivery flag is cleared so that the next call delivers what is left, and
// the panic goes on up.
func (b *Breaker) notify(listeners []func(Transition), t Transition) {
	done := false
	defer func() {
		if !done {
			b.mu.Lock()
			b.delivering = false
			b.mu.Unlock()
		}
	}()
	for _, f := range listeners {
		f(t)
	}
	done = true
}

// openDuration returns min(max, base*factor^level) without overflow.
func openDuration(base, max time.Duration, factor, level int) time.Duration {
	d := base
	f := time.Duration(factor)
	for i := 0; i < level && d < max && factor > 1; i++ {
		if d > max/f {
			return max
		}
		d *= f
	}
	if d > max {
		d = max
	}
	return d
}

// levelCap returns the lowest level whose open duration is max: raising the
// level further would change nothing but how long it takes to decay.
func levelCap(base, max time.Duration, factor int) int {
	level := 0
	for factor > 1 && openDuration(base, max, factor, level) < max {
		level++
	}
	return level
}
