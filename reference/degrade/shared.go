package degrade

import (
	"context"
	"sync"
	"time"
)

// A breaker a fleet shares.
//
// Each worker process of a fleet has its own Breaker: the calls it makes,
// its rolling window and its probes are its own. Alone, each would see a
// share of the dependency's failures, trip later than one breaker would,
// and probe on its own, so a fleet of N spends N times the probes (jobs'
// attempts) on a dependency that is still down. A Breaker made with
// WithFleet shares its state's edges through a BreakerStore (the fleet's
// Redis; a MemoryBreakerStore in one process):
//
//   - a trip in any process opens the fleet: the others adopt the open
//     spell (its end and hysteresis level) at their next sync;
//   - when the spell ends, one process claims the half-open state (a swap
//     in the store: one winner) and probes; the others stay open, waiting
//     for its verdict, until its claim lapses (ProbeTimeout plus one sync
//     interval, after which another may claim: a prober that died does
//     not hold the fleet open);
//   - the prober's close closes the fleet (each process then ramps up its
//     own share), its re-trip re-opens it, at the raised level.
//
// A process syncs when it is asked for a call (Allow) and the last sync is
// SyncInterval old, and at every edge of its own (a trip, a claim, a
// close): it learns of a trip elsewhere at most SyncInterval late (the
// trade-off: a round trip to the store per SyncInterval per process, not
// per call, against that many more calls to a dependency that is down).
// Every shared state carries a generation; a swap whose generation moved
// on fails and returns the newer state, which the process adopts (a trip
// of its own against a fleet that just closed is published again: the
// failure is news). Times are the processes' clocks: a clock skewed by s
// opens or ends a spell s early or late in that process.
//
// While the store cannot be reached the breaker works alone, as an
// unshared one (it fails to local), and counts the failures in
// Stats.FleetErrors.
//
// gobreaker v2's DistributedCircuitBreaker shares a whole breaker's counts
// and state through a store, read and written around every request; it
// reads time.Now, which the simulator forbids, and a store round trip per
// call is the price. This design shares the edges only.

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
	// not, it returns the current state.
	SwapBreaker(ctx context.Context, name string, gen uint64, next SharedState) (SharedState, bool, error)
}

// BreakerOption configures a Breaker beyond its config.
type BreakerOption func(*Breaker)

// WithFleet shares the breaker's edges with the fleet's other processes
// through store, the process named member (unique in the fleet). timeout
// bounds each store call in wall time (0: unbounded, for a store in
// memory).
func WithFleet(store BreakerStore, member string, timeout time.Duration) BreakerOption {
	return func(b *Breaker) {
		if store != nil {
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
	if now.Before(f.nextSync) {
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
		b.waitLocked(now, rec.Until, ReasonFleetOpened)
	case HalfOpen:
		if rec.Holder == f.member {
			// Its own claim, from before a restart: it probes.
			if b.state == Open {
				b.toHalfOpenLocked(now)
			}
			return
		}
		b.level = rec.Level
		b.waitLocked(now, rec.Until, ReasonFleetProbing)
	case Closed:
		if b.state != Closed {
			b.closeLocked(now, ReasonFleetClosed)
		}
	}
}

// waitLocked keeps the breaker open until until (at least now): opening it
// if it is not, with reason, or moving the end of its spell.
func (b *Breaker) waitLocked(now, until time.Time, reason string) {
	if until.Before(now) {
		until = now
	}
	b.openUntil = until
	b.openFor = until.Sub(now)
	if b.state != Open {
		b.setStateLocked(now, Open, reason)
	} else if b.openTimer != nil {
		b.openTimer.Stop()
	}
	gen := b.gen
	b.openTimer = b.clk.AfterFunc(b.openFor, func() { b.openElapsed(gen) })
}

// claimLocked asks the fleet for the half-open state as an open spell
// ends: true if this process may probe (it won the swap, or the store
// cannot be reached and it works alone); false if another process's state
// is newer, which it has adopted. The caller holds b.mu.
func (b *Breaker) claimLocked(now time.Time) bool {
	f := b.fleet
	for range 3 {
		next := SharedState{Gen: f.seen + 1, State: HalfOpen, Until: now.Add(b.cfg.ProbeTimeout + b.cfg.SyncInterval), Level: b.level, Holder: f.member}
		ctx, cancel := f.ctx()
		cur, ok, err := f.store.SwapBreaker(ctx, b.cfg.Name, f.seen, next)
		cancel()
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
		ctx, cancel := f.ctx()
		cur, ok, err := f.store.SwapBreaker(ctx, b.cfg.Name, f.seen, next)
		cancel()
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
}

// NewMemoryBreakerStore returns an empty store.
func NewMemoryBreakerStore() *MemoryBreakerStore {
	return &MemoryBreakerStore{m: map[string]SharedState{}}
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
	return next, true, nil
}
