package oracle

import (
	"time"

	"github.com/faultline/faultline/reference/degrade"
	"github.com/faultline/faultline/reports"
)

// Breakers is the checker of a run's circuit breakers:
// breaker-transitions-legal (each process's breaker moves closed → open →
// half-open → open or closed, from the state it was in; a breaker its
// fleet shares may also close from open, when it adopts the fleet's close:
// reason fleet-closed), the transitions
// for the result, and each breaker's state across the processes (open if
// any is, closed if all are, else half-open). The simulator's one process
// is worker ""; a drill's are named. The engine feeds it as its breakers
// move, the ledger's judge from a history: one checker.
type Breakers struct {
	led   *Ledger
	procs map[string]map[string]degrade.State // by breaker, then worker
	trans []reports.Transition
}

// NewBreakers returns the checker of a run's breakers (none yet: Track
// names each), whose violations led records.
func NewBreakers(led *Ledger) *Breakers {
	return &Breakers{led: led, procs: map[string]map[string]degrade.State{}}
}

// Track adds breaker name to the run's; its processes' breakers start
// closed unless Begin says otherwise.
func (b *Breakers) Track(name string) {
	if b.procs[name] == nil {
		b.procs[name] = map[string]degrade.State{}
	}
}

// Begin sets the state worker's breaker name starts in (a team's breaker
// may start in another than closed), tracking the breaker.
func (b *Breakers) Begin(name, worker string, st degrade.State) {
	b.Track(name)
	b.procs[name][worker] = st
}

// Transition notes that breaker name of worker moved from → to (states as
// degrade.State names) for reason at offset at, and checks the move: it
// must leave the state the breaker was in (closed, for one never seen)
// and be a legal one. It reports false for a breaker the run does not
// have (nothing is noted).
func (b *Breakers) Transition(at time.Duration, worker, name, from, to, reason string) bool {
	procs := b.procs[name]
	if procs == nil {
		return false
	}
	f, t := ParseBreakerState(from), ParseBreakerState(to)
	b.trans = append(b.trans, reports.Transition{AtMs: at.Milliseconds(), Breaker: name, From: from, To: to, Reason: reason, Worker: worker})
	was, seen := procs[worker]
	if !seen {
		was = degrade.Closed
	}
	if was != f || !LegalBreaker(f, t) && !(f == degrade.Open && t == degrade.Closed && reason == degrade.ReasonFleetClosed) {
		if worker == "" {
			b.led.Fail(InvBreakerLegal, nil, "breaker %s moved %s → %s (%s), but it was %s", name, f, t, reason, was)
		} else {
			b.led.Fail(InvBreakerLegal, nil, "breaker %s of worker %s moved %s → %s (%s) at %s, but it was %s", name, worker, f, t, reason, fmtOffset(at), was)
		}
	}
	procs[worker] = t
	return true
}

// Restart notes that worker's process (re)started: its breakers start
// closed.
func (b *Breakers) Restart(worker string) {
	for _, procs := range b.procs {
		if _, ok := procs[worker]; ok {
			procs[worker] = degrade.Closed
		}
	}
}

// State is breaker name's state across the processes: open if any
// process's is open, closed if all are closed, else half-open.
func (b *Breakers) State(name string) degrade.State {
	st := degrade.Closed
	for _, s := range b.procs[name] {
		switch {
		case s == degrade.Open:
			st = degrade.Open
		case s == degrade.HalfOpen && st == degrade.Closed:
			st = degrade.HalfOpen
		}
	}
	return st
}

// Transitions are the transitions noted, in order (nil: none).
func (b *Breakers) Transitions() []reports.Transition { return b.trans }

// LegalBreaker says a breaker may move from → to.
func LegalBreaker(from, to degrade.State) bool {
	switch from {
	case degrade.Closed:
		return to == degrade.Open
	case degrade.Open:
		return to == degrade.HalfOpen
	case degrade.HalfOpen:
		return to == degrade.Open || to == degrade.Closed
	}
	return false
}

// ParseBreakerState is the state named s (0 for none).
func ParseBreakerState(s string) degrade.State {
	for _, st := range []degrade.State{degrade.Closed, degrade.Open, degrade.HalfOpen} {
		if st.String() == s {
			return st
		}
	}
	return 0
}
