package degrade

import (
	"context"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/faultline/faultline/reference/internal/mutant"
)

// SharedState is a breaker's state as its fleet shares it.
type SharedState struct {
	// Gen is the state's generation: 0 for none yet, one more at each swap.
	Gen uint64
	// State is the fleet's state.
	State State
	// Until: for Open, when the spell ends; for HalfOpen, when the
	// prober's claim lapses.
	Until time.Time
	// Level is the hysteresis level of the spell.
	Level int
	// Holder is the process probing (HalfOpen).
	Holder string
}

// BreakerStore keeps the states a fleet's breakers share: the Redis
// store's (redisstore.Store), or a MemoryBreakerStore for a fleet in one
// process (the simulator's).
type BreakerStore interface {
	// LoadBreaker returns breaker name's shared state; Gen 0 if none.
	LoadBreaker(ctx context.Context, name string) (SharedState, error)
	// SwapBreaker sets name's shared state to next if its generation is
	// still gen (0: none yet), atomically, and reports whether it did; if
	// not, it returns the current state. A swap restarts the fleet's run
	// of consecutive failures (AddWindow): a new state, a new run.
	SwapBreaker(ctx context.Context, name string, gen uint64, next SharedState) (SharedState, bool, error)
	// AddWindow adds a process's calls since its last sync to breaker
	// name's fleet-wide counts, atomically: its buckets to the rolling
	// window of buckets add.Width wide (bucket k is [k·Width,
	// (k+1)·Width) in Unix nanoseconds), forgetting the buckets before
	// add.Oldest; its failures and its last success to the fleet's run of
	// consecutive failures, the counted failures after the latest success
	// any process added (to the millisecond: a failure in the success's
	// millisecond is before it). It returns the window's sums over the
	// buckets from add.Oldest, and the run.
	AddWindow(ctx context.Context, name string, add WindowAdd) (WindowSums, error)
}

// WindowAdd is what a process adds to its fleet's counts at a sync.
type WindowAdd struct {
	// Width is the buckets' width; Oldest the oldest bucket the window
	// keeps (and sums).
	Width  time.Duration
	Oldest int64
	// Buckets are the calls and failures to add, by bucket.
	Buckets []WindowBucket
	// Failures are the times of the process's counted failures since its
	// last sync, in order, and LastSuccess the time of its last success
	// since then (zero: none).
	Failures    []time.Time
	LastSuccess time.Time
}

// MaxRun is the longest run of consecutive failures a BreakerStore keeps:
// a longer one is counted as MaxRun (ConsecutiveFailures beyond it never
// trip a fleet).
const MaxRun = 10_000

// WindowBucket is one bucket's calls (successes and counted failures) and
// counted failures, as a process adds them to its fleet's window.
type WindowBucket struct {
	Index           int64
	Calls, Failures int64
}

// WindowSums are a fleet's counts after an add: the calls and counted
// failures in its window, and its run of consecutive counted failures.
type WindowSums struct {
	Calls, Failures, Run int64
}

// BreakerOption configures a Breaker beyond its config.
type BreakerOption func(*Breaker)

// WithFleet shares the breaker's edges with the fleet's other processes
// through store, the process named member (unique in the fleet). timeout
// bounds each store call in wall time (0: unbounded, for a store in
// memory).
func WithFleet(store BreakerStore, member string, timeout time.Duration) BreakerOption {
	return func(b *Breaker) {
		if store != nil && !mutant.On("degrade/fleet-unshared") {
			b.fleet = &fleetLink{store: store, member: member, timeout: timeout}
		}
	}
}

// Reasons of the transitions a fleet's breaker adopts from the others.
const (
	// ReasonFleetOpened: another process of the fleet tripped.
	ReasonFleetOpened = "fleet-opened"
	// ReasonFleetProbing: another process of the fleet is probing; this
	// one waits, open, for its verdict.
	ReasonFleetProbing = "fleet-probing"
	// ReasonFleetClosed: the fleet's prober closed.
	ReasonFleetClosed = "fleet-closed"
	// ReasonFleetConsecutiveFailures: ConsecutiveFailures counted failures
	// in a row across the fleet (a success in any process ends a run).
	ReasonFleetConsecutiveFailures = "fleet-consecutive-failures"
	// ReasonFleetFailureRate: the failure rate over the fleet's rolling
	// window (every process's calls) reached FailureRatePercent with at
	// least MinThroughput calls.
	ReasonFleetFailureRate = "fleet-failure-rate"
)

// fleetLink is a breaker's link to its fleet's shared state.
type fleetLink struct {
	store   BreakerStore
	member  string
	timeout time.Duration
	// seen is the generation of the last shared state adopted or
	// published; nextSync when Allow next loads the state.
	seen     uint64
	nextSync time.Time
	// probing says the breaker is open waiting for another process's
	// probes (fleet-probing), not in a spell of its own: LaneOpen.
	probing bool
	// pending are the calls and counted failures recorded in Closed since
	// the last sync, by fleet bucket, for the fleet's window; failures
	// their times, and success the time of the last success.
	pending  []WindowBucket
	failures []time.Time
	success  time.Time
	// hot says the fleet's run of failures was not empty at the last
	// sync: trouble has begun somewhere, and every call asks the fleet
	// first (a trip elsewhere reaches this process before its next call,
	// not a SyncInterval later).
	hot bool
}

// note adds a call (and a counted failure, if failed) at now to the
// buckets the next sync adds to the fleet's window.
func (f *fleetLink) note(now time.Time, width time.Duration, failed bool) {
	idx := now.UnixNano() / int64(width)
	if n := len(f.pending); n == 0 || f.pending[n-1].Index != idx {
		f.pending = append(f.pending, WindowBucket{Index: idx})
	}
	wb := &f.pending[len(f.pending)-1]
	wb.Calls++
	if failed {
		wb.Failures++
		f.failures = append(f.failures, now)
	} else {
		f.success = now
	}
}

// clear forgets what the last sync did not add.
func (f *fleetLink) clear() {
	f.pending, f.failures, f.success = f.pending[:0], f.failures[:0], time.Time{}
}

// LaneOpen reports whether a worker process may lease the jobs of the
// breaker's dependency (worker.Lanes): when the breaker is not open, or is
// a fleet's breaker open only while another process probes. Such a
// process leases and diverts the backlog to the batch queue, as the jobs
// beyond the probe slots of one process are, instead of leaving it in the
// queue for the first process to close: the batch queue drains behind
// the ramp-up once the fleet closes, where a backlog in the queue would
// not wait for it.
func (b *Breaker) LaneOpen() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state != Open || b.fleet != nil && b.fleet.probing
}

// ctx returns a context for one store call.
func (f *fleetLink) ctx() (context.Context, context.CancelFunc) {
	if f.timeout <= 0 {
		return context.Background(), func() {}
	}
	return context.WithTimeout(context.Background(), f.timeout)
}

// syncLocked loads the fleet's state and adopts it, when the last sync is
// SyncInterval old. The caller holds b.mu.
func (b *Breaker) syncLocked(now time.Time) {
	f := b.fleet
	if now.Before(f.nextSync) && !f.hot {
		return
	}
	f.nextSync = now.Add(b.cfg.SyncInterval)
	ctx, cancel := f.ctx()
	rec, err := f.store.LoadBreaker(ctx, b.cfg.Name)
	cancel()
	if err != nil {
		b.stats.FleetErrors++
		return
	}
	b.adoptLocked(now, rec)
	if b.state != Closed {
		f.clear()
		f.hot = false
		return
	}
	// The fleet's counts: this process's calls since the last sync added
	// to the fleet's window and run, and both judged as each process
	// judges its own. The window starts no earlier than this process's
	// last close, as its own does.
	width := b.bucketWidth
	oldest := now.UnixNano()/int64(width) - int64(b.cfg.Buckets) + 1
	if b.hasClosed {
		oldest = max(oldest, b.closedAt.UnixNano()/int64(width))
	}
	ctx, cancel = f.ctx()
	sums, err := f.store.AddWindow(ctx, b.cfg.Name, WindowAdd{Width: width, Oldest: oldest, Buckets: f.pending,
		Failures: f.failures, LastSuccess: f.success})
	cancel()
	f.clear()
	if err != nil {
		b.stats.FleetErrors++
		return
	}
	f.hot = sums.Run > 0
	if mutant.On("degrade/never-trips") {
		return
	}
	switch {
	case sums.Run >= int64(b.cfg.ConsecutiveFailures):
		b.tripLocked(now, ReasonFleetConsecutiveFailures)
	case sums.Calls >= int64(b.cfg.MinThroughput) && sums.Failures*100 >= int64(b.cfg.FailureRatePercent)*sums.Calls:
		b.tripLocked(now, ReasonFleetFailureRate)
	}
}

// adoptLocked makes the fleet's state rec, if newer than the last one seen,
// this breaker's. The caller holds b.mu.
func (b *Breaker) adoptLocked(now time.Time, rec SharedState) {
	f := b.fleet
	if rec.Gen <= f.seen {
		return
	}
	f.seen = rec.Gen
	switch rec.State {
	case Open:
		b.level = rec.Level
		b.waitLocked(now, rec.Until, ReasonFleetOpened, 0)
	case HalfOpen:
		if rec.Holder == f.member {
			// Its own claim, from before a restart: it probes.
			if b.state == Open {
				b.toHalfOpenLocked(now)
			}
			return
		}
		b.level = rec.Level
		// It learns the prober's verdict at its next sync, and syncs
		// every SyncInterval while it waits (openElapsed).
		b.waitLocked(now, rec.Until, ReasonFleetProbing, b.cfg.SyncInterval)
		f.probing = true
	case Closed:
		if b.state != Closed {
			b.closeLocked(now, ReasonFleetClosed)
		}
	}
}

// waitLocked keeps the breaker open until until (at least now): opening it
// if it is not, with reason, or moving the end of its spell; its open
// timer fires at the end, or every (if positive and sooner) to sync.
func (b *Breaker) waitLocked(now, until time.Time, reason string, every time.Duration) {
	if until.Before(now) {
		until = now
	}
	b.openUntil = until
	b.openFor = until.Sub(now)
	if b.state != Open {
		b.setStateLocked(now, Open, reason)
	}
	b.armLocked(now, every)
}

// armLocked (re)arms an open breaker's timer: at the end of its spell, or
// after every if that is positive and sooner. The caller holds b.mu.
func (b *Breaker) armLocked(now time.Time, every time.Duration) {
	if b.openTimer != nil {
		b.openTimer.Stop()
	}
	d := b.openUntil.Sub(now)
	if every > 0 {
		d = min(d, every)
	}
	gen := b.gen
	b.openTimer = b.clk.AfterFunc(max(d, 0), func() { b.openElapsed(gen) })
}

// claimLocked asks the fleet for the half-open state as an open spell
// ends: true if this process may probe (it won the swap, or the store
// cannot be reached and it works alone); false if another process's state
// is newer, which it has adopted. The caller holds b.mu.
func (b *Breaker) claimLocked(now time.Time) bool {
	f := b.fleet
	for range 3 {
		next := SharedState{Gen: f.seen + 1, State: HalfOpen, Until: now.Add(b.cfg.ProbeTimeout + b.cfg.SyncInterval), Level: b.level, Holder: f.member}
		cur, ok, err := b.swapLocked(next)
		switch {
		case err != nil:
			b.stats.FleetErrors++
			return true
		case ok:
			f.seen = next.Gen
			return true
		case cur.Gen < f.seen, cur.State != Closed && !cur.Until.After(now):
			// The store lost the state (it was emptied), or the newer
			// state is a spell that has ended or a claim that has lapsed:
			// claim over it.
			f.seen = cur.Gen
			continue
		}
		b.adoptLocked(now, cur)
		return b.state == HalfOpen
	}
	return true // the fleet keeps moving under the claim: probe alone
}

// swapLocked swaps the fleet's state for next if it is still the one this
// breaker saw last. The caller holds b.mu.
func (b *Breaker) swapLocked(next SharedState) (SharedState, bool, error) {
	f := b.fleet
	ctx, cancel := f.ctx()
	defer cancel()
	return f.store.SwapBreaker(ctx, b.cfg.Name, f.seen, next)
}

// publishLocked tells the fleet of an edge of this breaker's own: a trip
// or a close. A trip against a newer closed state is published over it
// (the failure is news); any other newer state is adopted. The caller
// holds b.mu.
func (b *Breaker) publishLocked(now time.Time) {
	f := b.fleet
	for range 2 {
		next := SharedState{Gen: f.seen + 1, State: b.state, Level: b.level}
		if b.state == Open {
			next.Until = b.openUntil
		}
		cur, ok, err := b.swapLocked(next)
		switch {
		case err != nil:
			b.stats.FleetErrors++
			return
		case ok:
			f.seen = next.Gen
			return
		case b.state == Open && cur.State == Closed:
			f.seen = cur.Gen
			continue
		}
		b.adoptLocked(now, cur)
		return
	}
}

// MemoryBreakerStore is a BreakerStore in memory, for a fleet in one
// process: the simulator's, whose processes share it as a drill's share
// Redis. It is safe for concurrent use.
type MemoryBreakerStore struct {
	mu sync.Mutex
	m  map[string]SharedState
	// w are the fleet windows, by breaker and bucket width: bucket → its
	// calls and failures; run each breaker's run of failures.
	w   map[windowKey]map[int64][2]int64
	run map[string]*memRun
}

// memRun is a fleet's run of consecutive failures in memory: the latest
// success's time (ms), and the times (ms) of the failures after it.
type memRun struct {
	success  int64
	failures []int64
}

type windowKey struct {
	name  string
	width time.Duration
}

// NewMemoryBreakerStore returns an empty store.
func NewMemoryBreakerStore() *MemoryBreakerStore {
	return &MemoryBreakerStore{m: map[string]SharedState{}, w: map[windowKey]map[int64][2]int64{}, run: map[string]*memRun{}}
}

// AddWindow implements BreakerStore.
func (s *MemoryBreakerStore) AddWindow(_ context.Context, name string, add WindowAdd) (WindowSums, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := windowKey{name, add.Width}
	win := s.w[k]
	if win == nil {
		win = map[int64][2]int64{}
		s.w[k] = win
	}
	for _, a := range add.Buckets {
		if a.Index >= add.Oldest {
			c := win[a.Index]
			win[a.Index] = [2]int64{c[0] + a.Calls, c[1] + a.Failures}
		}
	}
	var sums WindowSums
	for idx, c := range win {
		if idx < add.Oldest {
			delete(win, idx)
			continue
		}
		sums.Calls += c[0]
		sums.Failures += c[1]
	}
	r := s.run[name]
	if r == nil {
		r = &memRun{success: math.MinInt64}
		s.run[name] = r
	}
	if !add.LastSuccess.IsZero() {
		r.success = max(r.success, add.LastSuccess.UnixMilli())
	}
	for _, t := range add.Failures {
		r.failures = append(r.failures, t.UnixMilli())
	}
	r.failures = slices.DeleteFunc(r.failures, func(ms int64) bool { return ms <= r.success })
	if n := len(r.failures); n > MaxRun {
		r.failures = r.failures[:copy(r.failures, r.failures[n-MaxRun:])]
	}
	sums.Run = int64(len(r.failures))
	return sums, nil
}

// LoadBreaker implements BreakerStore.
func (s *MemoryBreakerStore) LoadBreaker(_ context.Context, name string) (SharedState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[name], nil
}

// SwapBreaker implements BreakerStore.
func (s *MemoryBreakerStore) SwapBreaker(_ context.Context, name string, gen uint64, next SharedState) (SharedState, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.m[name]
	if cur.Gen != gen {
		return cur, false, nil
	}
	s.m[name] = next
	delete(s.run, name)
	return next, true, nil
}
