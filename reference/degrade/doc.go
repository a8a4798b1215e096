// Package degrade keeps a job system working when a dependency does not: a
// circuit breaker that stops calling a failing dependency, and a fallback that
// diverts jobs to a batch queue while the breaker is open and drains them back
// in bounded batches once it closes (the seed's "Fallback: N queued", the
// payment challenge's "fallback to batch processing on primary failure").
//
// # Breaker
//
// A Breaker is Closed (calls pass), Open (calls are rejected with ErrOpen) or
// HalfOpen (a few probe calls test the dependency). Allow returns a Permit or
// a rejection; the caller makes the call and reports its Outcome with Record.
// A failed call is reported with Failure, which takes the classifier's whole
// verdict, and a failure counts against the dependency only if both its class
// and its source are counted. A declined card (classify.Permanent) says nothing about
// the gateway's health and never trips the breaker; neither does a failure
// from the worker's own system (a permission error on a local file, a bug in
// the handler) or from the job's data, however critical: by default only
// Network, Dependency and Auth failures count, and only they can force the
// breaker open.
//
// A plain breaker guarding a flapping dependency flaps with it. This one has
// hysteresis: every re-trip soon after recovering raises a level that
// lengthens the next open period geometrically (up to a cap), the level decays
// only after the breaker has stayed closed and stable, and after closing the
// admitted share of traffic ramps up instead of stampeding back.
//
// The breaker runs on an injected clock.Clock and never reads the wall clock,
// so the simulator drives it in virtual time and gets byte-identical runs; the
// live runner drives the same code with clock.Real. It starts no goroutines
// and never blocks; it is safe for concurrent use. State-change listeners are
// called without any lock held, in the order the transitions happened.
//
// # Fallback
//
// A Fallback asks its breaker where each job should go (Route), counts the
// diversions, and brings the batch queue back to the main queue through a
// Drainer on clock timers. When the breaker goes half-open it drains a few
// jobs, as many as the breaker has free probe slots, to be its probes when
// workers route them, and supplies more as each is routed and its slot freed,
// so that a backlog is not stranded once new traffic stops. When the breaker
// closes it drains the rest, one batch per interval, pausing whenever the
// breaker opens again.
//
// # A fleet's breaker
//
// Each worker process of a fleet has its own Breaker: the calls it makes
// and its probes are its own. Alone, each would see a share of the
// dependency's failures, trip later than one breaker would, and probe on
// its own, so a fleet of N spends N times the probes (jobs' attempts) on a
// dependency that is still down. A Breaker made with WithFleet shares its
// counts and its state's edges through a BreakerStore (the fleet's Redis;
// a MemoryBreakerStore in one process):
//
//   - each process adds its calls to the fleet's rolling window and its
//     failures to the fleet's run of consecutive failures (those after
//     the latest success anywhere), and judges them as it judges its own:
//     the fleet trips on the fleet's failures, not on a process's share;
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
// A process syncs when it is asked for a call (Allow) or records a success
// and the last sync is SyncInterval old, at every counted failure (a
// failure is news), and at every edge of its own (a trip, a claim, a
// close). While the fleet's run of failures is not empty (trouble has
// begun somewhere) it syncs at every call, so a trip elsewhere reaches it
// before its next call. The trade-off: in the steady state a round trip
// to the store per SyncInterval per process, not per call; under trouble,
// one per call and per failure, against calls made to a dependency the
// fleet already knows is down. A success reaches the fleet up to
// SyncInterval late (unless a run is under way), so the fleet's run may
// count a failure a success had ended: a fleet trips early rather than
// late. A process open only while another probes keeps its lanes open
// (LaneOpen): it diverts the backlog to the batch queue, which drains
// behind the ramp-up once the fleet closes.
//
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
// call is the price. This design shares the counts, batched between
// syncs, and the edges of the state; each process keeps its own probes,
// ramp-up and fallback.
//
// # Files
//
//   - breaker.go: the Breaker and NewBreaker; Allow and Record, what a call
//     is admitted by (probe slots, the ramp-up share) and what its outcome
//     counts (the consecutive failures, the rolling window); its readers
//     (State, OpenUntil, RampEnd, Stats) and OnStateChange.
//   - transitions.go: the state machine's edges: a trip with its hysteresis
//     level and open duration, half-open and its probes' timeouts, the
//     close, and the listeners told after the lock is released.
//   - state.go: State, the rejections (ErrOpen, ErrProbeLimit, ErrRampUp),
//     the Reason constants, Transition and Stats.
//   - outcome.go: Permit and Outcome (Success, Failure, Canceled).
//   - config.go: BreakerConfig and FallbackConfig, their defaults and
//     validation (ConfigError).
//   - fallback.go: the Fallback: Route, and the drain of the batch queue
//     when the breaker goes half-open or closes.
//   - shared.go: a fleet's breaker: WithFleet, BreakerStore, the sync with
//     the fleet's shared state, and MemoryBreakerStore.
//   - degradetest: the conformance specs of a BreakerStore.
package degrade
