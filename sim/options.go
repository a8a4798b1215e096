package sim

import (
	"context"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"time"

	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/reference/degrade"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/retry"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/memstore"
	"github.com/faultline/faultline/reference/worker"
	"github.com/faultline/faultline/scenarios"
)

// Backend is the system's store: a namespace's work queue and DLQ in one,
// so that moves between them are atomic (memstore, redisstore, or a team's
// own). It must call its store.Config's Observer after every move.
type Backend interface {
	queue.Queue
	dlq.Store
}

// Alerter is what the simulator needs of an alerter: it hears every failed
// attempt and every breaker transition, and delivers through the sinks of
// its configuration's receivers (which the simulator supplies and records).
// *alert.Alerter implements it.
type Alerter interface {
	worker.Alerter
	BreakerChanged(t degrade.Transition)
}

// Breaker is a circuit breaker the simulator can drive: it gives permits,
// hears outcomes and reports its transitions in order. *degrade.Breaker
// implements it; with one, the reference degrade.Fallback drains the batch
// queue, otherwise the simulator drains it when the breaker closes.
type Breaker interface {
	Allow() (degrade.Permit, error)
	Record(p degrade.Permit, o degrade.Outcome)
	State() degrade.State
	OnStateChange(f func(degrade.Transition))
}

var (
	_ Alerter = (*alert.Alerter)(nil)
	_ Breaker = (*degrade.Breaker)(nil)
	_ Backend = (*memstore.Store)(nil)
)

// Env is what a component factory gets: the run's clock and its random
// streams. A component must take time and randomness from here only.
type Env struct {
	// Clock is the virtual clock.
	Clock clock.Clock
	// Rand returns the named random stream: the same name gives the same
	// sequence for the same seed, and streams never share draws.
	Rand func(name string) *rand.Rand
	// Scenario is the scenario being run, defaults applied.
	Scenario *scenarios.Scenario
	// Breakers keeps the state of the breakers the fleet shares (scope:
	// fleet): a degrade.MemoryBreakerStore in the simulator, the Redis
	// store in a drill's worker process; Process names this process in it
	// (unique in the fleet), and StoreTimeout bounds each call to it in
	// wall time (0: unbounded, for a store in memory).
	Breakers     degrade.BreakerStore
	Process      string
	StoreTimeout time.Duration
	// Budget keeps the fleet's shared retry budget (a scenario's
	// system.retry.budget.scope: fleet): a retry.MemoryBudget in the
	// simulator, the Redis store in a drill's worker process.
	Budget retry.Booker
}

// Option changes how Run runs a scenario: its seed, or a component of the
// system under test replaced by a team's own.
type Option func(*options)

type options struct {
	seed       *uint64
	classifier func(Env) (worker.Classifier, error)
	policy     func(Env) (worker.Policy, error)
	store      func(ctx context.Context, env Env, cfg store.Config) (Backend, error)
	alerter    func(Env, alert.Config) (Alerter, error)
	breaker    func(Env, degrade.BreakerConfig) (Breaker, error)
	name       string
	dlqOnly    func(ctx context.Context, env Env) (TeamDLQ, error)
	history    io.Writer
	source     string
}

// WithSeed runs the scenario with seed instead of its own.
func WithSeed(seed uint64) Option { return func(o *options) { o.seed = &seed } }

// WithClassifier replaces the reference classifier.
func WithClassifier(f func(Env) (worker.Classifier, error)) Option {
	return func(o *options) { o.classifier = f }
}

// WithPolicy replaces the reference retry policy (the scenario's Retry
// config still says how many attempts the invariants allow).
func WithPolicy(f func(Env) (worker.Policy, error)) Option {
	return func(o *options) { o.policy = f }
}

// WithStore replaces the in-memory store: f opens a Backend for cfg (whose
// Observer it must call after every move).
func WithStore(f func(ctx context.Context, env Env, cfg store.Config) (Backend, error)) Option {
	return func(o *options) { o.store = f }
}

// WithDLQ plugs in just a team's DLQ (the DLQ-only mode, see dlqonly.go):
// the run keeps faultline's in-memory work queue and keeps its dead
// letters in the store f opens, which needs no events, leases or held set:
// faultline moves the jobs, emits their events and checks conservation by
// reading the store. What the store does not declare (dlq.Caps) is
// answered ErrNotDeclared, and the result lists the checks not made.
// WithStore, when given too, is ignored.
func WithDLQ(f func(ctx context.Context, env Env) (TeamDLQ, error)) Option {
	return func(o *options) { o.dlqOnly = f }
}

// WithAlerter replaces the reference alerter; cfg's receivers carry the
// sinks the simulator records.
func WithAlerter(f func(env Env, cfg alert.Config) (Alerter, error)) Option {
	return func(o *options) { o.alerter = f }
}

// WithBreaker replaces the reference circuit breaker, one per configured
// dependency.
func WithBreaker(f func(env Env, cfg degrade.BreakerConfig) (Breaker, error)) Option {
	return func(o *options) { o.breaker = f }
}

// WithReproduce sets the command line the result gives to run the
// scenario again (the CLI fills it in).
func WithReproduce(cmd string) Option { return func(o *options) { o.name = cmd } }

// streamSeed derives the seed of the named stream: FNV-1a of the name, so
// that adding a stream shifts no other.
func streamSeed(name string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	return h.Sum64()
}

// newStream returns the run's named random stream.
func newStream(seed uint64, name string) *rand.Rand {
	return rand.New(rand.NewPCG(seed, streamSeed(name)))
}
