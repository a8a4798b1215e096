package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/faultline/faultline/reference/clock"
)

// DefaultRole is the leadership the control duties are held under.
const DefaultRole = "control"

// DefaultTTL is a leader's lease when ElectorConfig.TTL is zero: a dead
// leader's duties wait at most this long for a successor.
const DefaultTTL = 10 * time.Second

// Lease is a leadership as the store holds it.
type Lease struct {
	// Holder names the leading process ("" none: never claimed, or
	// resigned).
	Holder string `json:"holder"`
	// Term numbers the leaderships of a role: it grows by one each time
	// the lease passes to a holder other than its last (a resignation
	// included), never on a renewal.
	Term uint64 `json:"term"`
	// Until is when the lease runs out unless renewed.
	Until time.Time `json:"until"`
}

// Held reports whether the lease has a holder at now.
func (l Lease) Held(now time.Time) bool { return l.Holder != "" && now.Before(l.Until) }

// LeaderStore keeps a fleet's leases, one per role: MemoryLeader, and the
// Redis store (redisstore.Store). Times are the callers' clocks'.
type LeaderStore interface {
	// ClaimLeader applies Claim to role's lease atomically and returns
	// the lease after it (holder's, or the current holder's).
	ClaimLeader(ctx context.Context, role, holder string, now time.Time, ttl time.Duration) (Lease, error)
	// ResignLeader ends holder's lease of role (keeping its term); a
	// lease another holds is left alone.
	ResignLeader(ctx context.Context, role, holder string) error
	// Leader returns role's lease (the zero Lease: never claimed).
	Leader(ctx context.Context, role string) (Lease, error)
}

// Claim is the one rule of a claim, which every LeaderStore applies
// atomically: holder takes or renews the lease cur when it is free, has
// run out at now, or is holder's own, until now+ttl; otherwise cur stands.
func Claim(cur Lease, holder string, now time.Time, ttl time.Duration) Lease {
	if cur.Holder != "" && cur.Holder != holder && now.Before(cur.Until) {
		return cur
	}
	next := Lease{Holder: holder, Term: cur.Term, Until: now.Add(ttl)}
	if cur.Holder != holder {
		next.Term++
	}
	return next
}

// ErrNotLeader is returned by a store asked to act under a term that is no
// longer the role's (Log.AckAlerts).
var ErrNotLeader = errors.New("not the leader")

// MemoryLeader is a LeaderStore in memory, for the processes of one
// program (the specs; a fleet in one process). It is safe for concurrent
// use.
type MemoryLeader struct {
	mu     sync.Mutex
	leases map[string]Lease
}

// NewMemoryLeader returns an empty MemoryLeader.
func NewMemoryLeader() *MemoryLeader { return &MemoryLeader{leases: map[string]Lease{}} }

// ClaimLeader implements LeaderStore.
func (m *MemoryLeader) ClaimLeader(_ context.Context, role, holder string, now time.Time, ttl time.Duration) (Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := Claim(m.leases[role], holder, now, ttl)
	m.leases[role] = l
	return l, nil
}

// ResignLeader implements LeaderStore.
func (m *MemoryLeader) ResignLeader(_ context.Context, role, holder string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l := m.leases[role]; l.Holder == holder {
		m.leases[role] = Lease{Term: l.Term}
	}
	return nil
}

// Leader implements LeaderStore.
func (m *MemoryLeader) Leader(_ context.Context, role string) (Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.leases[role], nil
}

// termFence is what MemoryLog needs of a MemoryLeader to fence an
// acknowledgement.
func (m *MemoryLeader) leads(role, holder string, term uint64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.leases[role]
	return l.Holder == holder && l.Term == term
}

// ElectorConfig configures an Elector.
type ElectorConfig struct {
	// Store and Clock are required; Holder names this process, unique in
	// the fleet (required).
	Store  LeaderStore
	Clock  clock.Clock
	Holder string
	// Role is the leadership claimed (default DefaultRole).
	Role string
	// TTL is the lease (default DefaultTTL); Tick must run well within it
	// (Control ticks every TTL/3).
	TTL time.Duration
	// Logger gets store errors (default slog.Default()).
	Logger *slog.Logger
}

// Elector is one process's side of a role's leadership: Tick claims or
// renews, Leading says whether this process leads now. It is safe for
// concurrent use.
type Elector struct {
	cfg ElectorConfig

	mu    sync.Mutex
	lease Lease
	// errs counts the claims that failed.
	errs int
}

// NewElector returns an Elector for cfg (defaults applied).
func NewElector(cfg ElectorConfig) (*Elector, error) {
	if cfg.Role == "" {
		cfg.Role = DefaultRole
	}
	if cfg.TTL == 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	switch {
	case cfg.Store == nil || cfg.Clock == nil:
		return nil, errors.New("fleet: an elector needs a store and a clock")
	case cfg.Holder == "":
		return nil, errors.New("fleet: an elector needs its process's name (Holder)")
	case cfg.TTL < 0:
		return nil, fmt.Errorf("fleet: lease TTL %s: must be positive", cfg.TTL)
	}
	return &Elector{cfg: cfg}, nil
}

// Tick claims the role, or renews this process's lease, and returns the
// lease the store holds after it. On a store error the lease this process
// last saw stands (a leader leads on until it runs out by its clock).
func (e *Elector) Tick(ctx context.Context) (Lease, error) {
	l, err := e.cfg.Store.ClaimLeader(ctx, e.cfg.Role, e.cfg.Holder, e.cfg.Clock.Now(), e.cfg.TTL)
	e.mu.Lock()
	if err != nil {
		e.errs++
		l = e.lease
		e.mu.Unlock()
		return l, fmt.Errorf("fleet: claim %s: %w", e.cfg.Role, err)
	}
	e.lease = l
	e.mu.Unlock()
	return l, nil
}

// Leading reports whether this process leads now — its last claim won and
// its lease has not run out by its clock — and under which term.
func (e *Elector) Leading() (term uint64, ok bool) {
	e.mu.Lock()
	l := e.lease
	e.mu.Unlock()
	return l.Term, l.Holder == e.cfg.Holder && l.Held(e.cfg.Clock.Now())
}

// Lost ends this process's leadership of term at once: the store refused
// an act under it (ErrNotLeader), so another process holds the role. The
// next Tick claims again.
func (e *Elector) Lost(term uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.lease.Holder == e.cfg.Holder && e.lease.Term == term {
		e.lease = Lease{Term: term}
	}
}

// Lease returns the lease this process last saw.
func (e *Elector) Lease() Lease {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lease
}

// Holder returns this process's name.
func (e *Elector) Holder() string { return e.cfg.Holder }

// Role returns the role claimed.
func (e *Elector) Role() string { return e.cfg.Role }

// Resign gives the lease up, if this process holds it, so the next claim
// by another process leads at once.
func (e *Elector) Resign(ctx context.Context) error {
	e.mu.Lock()
	e.lease = Lease{Term: e.lease.Term}
	e.mu.Unlock()
	if err := e.cfg.Store.ResignLeader(ctx, e.cfg.Role, e.cfg.Holder); err != nil {
		return fmt.Errorf("fleet: resign %s: %w", e.cfg.Role, err)
	}
	return nil
}

// Status is what an operator is shown of a fleet's control: the leader's
// lease and the records waiting in the relay log.
type Status struct {
	Lease Lease `json:"lease"`
	// Backlog counts the relayed records no leader has read yet.
	Backlog int64 `json:"backlog"`
}

// StatusReader is a store that tells a fleet's control status (the Redis
// store): `faultline dlq stats`, the UI's dashboard and its /metrics read
// it.
type StatusReader interface {
	ControlStatus(ctx context.Context, role string) (Status, error)
}

// Describe says who leads at now, or since when nobody does, for an
// operator (`faultline dlq stats`, the UI's dashboard).
func (s Status) Describe(now time.Time) string {
	l := s.Lease
	var who string
	switch {
	case l.Held(now):
		who = fmt.Sprintf("%s (term %d; its lease runs to %s, renewed while it lives)", l.Holder, l.Term, l.Until.UTC().Format(time.RFC3339))
	case l.Term == 0:
		who = "none: no standalone worker (faultline worker --scenario) has claimed it"
	case l.Holder == "":
		who = fmt.Sprintf("none: the last leader resigned (term %d)", l.Term)
	default:
		who = fmt.Sprintf("none: %s's lease (term %d) ran out %s ago", l.Holder, l.Term, now.Sub(l.Until).Round(time.Second))
	}
	return fmt.Sprintf("%s; relay log: %d waiting", who, s.Backlog)
}
