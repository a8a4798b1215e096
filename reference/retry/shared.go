package retry

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Booker keeps a retry budget shared by a fleet of processes: every policy
// of the fleet books its retries through one Booker (on Redis, the store's
// atomic script; in one process, a MemoryBudget), so at most Burst retries
// of a dependency run in any slot across the fleet. Slots are numbered from
// the Unix epoch: slot k is [k·W, (k+1)·W) in Unix nanoseconds, W the
// budget's slot width, the same for every process whatever its start.
type Booker interface {
	// Book books one retry in the budget named by key: in the first slot
	// in [first, last] holding fewer than burst bookings, which it
	// returns; ok is false, and nothing is booked, when every slot in
	// [first, last] is full. The policy asks with floor ≤ first ≤ last,
	// last − first < MaxScan and every slot number below 2^53 (so a
	// script's doubles hold it exactly). The slots before floor have ended
	// and may be forgotten. An error means the budget could not be reached: the
	// policy then lets the retry run as due (it fails open; see
	// Stats.BudgetUnavailable).
	Book(ctx context.Context, key BudgetKey, floor, first, last int64, burst int) (slot int64, ok bool, err error)
}

// BudgetKey names one shared budget: a dependency's, at a slot width.
// Policies configured with different widths never share slots.
type BudgetKey struct {
	Dependency string
	Width      time.Duration
}

// ErrNoBooker is returned by New for a fleet-scoped budget without a
// Booker to keep it.
var ErrNoBooker = errors.New("a fleet-scoped retry budget needs a Booker (WithBooker)")

// Option configures a Policy beyond its Config.
type Option func(*Policy)

// WithBooker makes b keep the policy's budget when its scope is
// ScopeFleet. A process-scoped policy ignores it.
func WithBooker(b Booker) Option { return func(p *Policy) { p.booker = b } }

// MaxScan is the most slots a fleet-scoped booking spans: a retry whose
// MaxWait spans more slots finds room only within the first MaxScan, and
// otherwise runs over the budget. At the default slot width of one second
// it is over an hour of slots.
const MaxScan = 1 << 12

// MemoryBudget is a Booker in memory, for a fleet in one process (the
// simulator's), with the semantics of the Redis store's: a calendar of
// booked slots per key, the ended ones forgotten. It is safe for
// concurrent use.
type MemoryBudget struct {
	mu   sync.Mutex
	cals map[BudgetKey]*calendar
	// sweepAt is the number of calendars at which the next new one first
	// drops the idle ones.
	sweepAt int
}

// NewMemoryBudget returns an empty shared budget.
func NewMemoryBudget() *MemoryBudget {
	return &MemoryBudget{cals: map[BudgetKey]*calendar{}, sweepAt: minSweep}
}

// Book implements Booker. It never fails.
func (m *MemoryBudget) Book(_ context.Context, key BudgetKey, floor, first, last int64, burst int) (int64, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.cals[key]
	if c == nil {
		if len(m.cals) >= m.sweepAt {
			for k, c := range m.cals {
				if c.idle(floor) {
					delete(m.cals, k)
				}
			}
			m.sweepAt = max(minSweep, 2*len(m.cals))
		}
		c = new(calendar)
		m.cals[key] = c
	}
	c.prune(floor)
	k, ok := c.book(first, last, burst)
	return k, ok, nil
}
