// Package sim is faultline's deterministic simulator: it runs a
// scenarios.Scenario — a workload, worker slots, dependencies, the
// system's configuration, a fault schedule, operator steps and
// expectations — against the reference failure handling (or a team's own
// components) on virtual time. It is an engine only: the event loop, the
// fault wiring, the system under test (BuildWorkerSystem), the workload
// plan a drill's producer shares (Plan) and operator steps
// (CarryOutStep). Whether every job was accounted for, the right people
// were paged and the service degraded instead of falling over is the
// oracle's to say (package oracle): the engine feeds the run's checkers
// (oracle.Checks — the ledger, the breakers, the pages, the secrets, the
// series, the probes) as it runs — every disposition event (Observe),
// every attempt and its outcome (Attempt, BeginOutcome, Settle, Keep), the
// store's counts at each sample (oracle.Reconcile) and the leases its busy
// workers hold (CheckLeases) — and oracle.Checks.Result assembles the
// report, as it does for oracle.Judge of a drill's history.
//
// # The engine
//
// The event queue is reference/clock.Virtual's timer queue, ordered by
// (time, sequence); one goroutine runs it. Arrivals come from the run loop
// (an arrival at T after every timer due at T), attempts end on timers,
// retries are forwarded when due, leases are recovered when they expire,
// the breaker, the fallback's drain and the alerter schedule their own
// timers on the same clock. Everything random comes from math/rand/v2 PCG
// streams keyed by name — the workload, each task's service times, the
// retry policy's jitter, the alerter, and each fault by its own name — so
// that removing a fault shifts no other draw. Nothing reads the wall clock
// or the global source, no map is iterated where the order shows, and the
// report's times are integer milliseconds from the start: the same scenario
// and seed give byte-identical JSON, in any process, time zone or
// GOMAXPROCS, for the same faultline version on the same architecture (the
// Poisson arrivals and latency draws use math.Log/Exp, whose last bit may
// differ between CPU architectures).
//
// # The ledger
//
// The store's disposition events feed a ledger (oracle.Ledger) that knows where every job
// is at every instant and checks the invariants as the run goes, with O(1)
// work per event: conservation (and, at every sample, the store's own
// counts against it; at the end, its DLQ listing), legal moves, nothing
// after success, one DLQ entry per job, no retry of a failure whose
// injected class is permanent or critical, attempts within the policy, no
// payment charged twice, no re-run of a job whose dead letter is decided
// (held, kept or written: its handler never runs again until a requeue,
// however the job would come back), a page within Invariants.PageWithin of every
// critical failure, at most one page per fingerprint per repeat interval,
// and legal breaker transitions. A violation does not stop the run: it
// goes on to its end and records every violation (each job once per
// invariant; the first reports.MaxListedViolations of an invariant listed,
// all counted), each naming the invariant, the job, its trail, the seed
// and the virtual time, so that expectations are judged on the whole run.
// Only a canceled context or a limit (scenarios.ErrLimit) stops a run early: its
// verdict is reports.Interrupted and its expectations are not evaluated. Memory grows with the jobs not yet done, not with those that
// succeeded.
//
// # The system under test
//
// Run uses the reference classifier, retry policy, alerter, breakers and
// fallback on the in-memory store (the classifier through a classify.Memo:
// the faults' errors are built once, so each verdict is worked out once per
// error and scope); WithClassifier, WithPolicy, WithStore,
// WithAlerter and WithBreaker replace any of them with a team's own (see
// broken_test.go for deliberately broken ones, each caught by name). The
// Redis store gives the same result as the memory one (WithStore with
// redisstore on miniredis or a real server).
//
// # Files
//
// A file per concern:
//
//   - doc.go: this map, and how the engine, its ledger and the system
//     under test work.
//   - engine.go: Run; the world (one run's state) and how it is built
//     (baseWorld, newWorld); the clock's helpers (at, wake, rearm); the
//     event loop (run) and what schedule puts on the clock.
//   - arrivals.go: the workload: arrivals (Poisson or constant), the task
//     each job is of, and each job made (create, newJob).
//   - attempts.go: dispatch to idle workers; an attempt's begin (the
//     faults its calls meet, its heartbeats) and end (complete); applying
//     its outcome; the upkeep of held and kept dead letters, due retries and
//     expired leases.
//   - fleet.go: the worker processes and their slots (proc, slot): built,
//     set idle, and struck by worker faults (crash, stall, graceful stop),
//     losing the dead letters they keep in memory.
//   - gracefulstop.go: a worker's graceful stop.
//   - when.go: worker faults aimed at a state (When): each window's wait
//     for it, and its misses.
//   - interleave.go: interleave faults: another client's writes between
//     the steps of a DLQ operation.
//   - selectors.go: the calls a fault's schedule selects by job, task or
//     attempt; the dependency calls an expectation reads.
//   - observe.go: the callbacks of the run's components (the store's
//     Observer and OnOverflow, the pipeline's OnKept, a breaker's
//     transition, a sink's delivery) and the samples: what feeds the
//     oracle's checkers.
//   - adapters.go: what the engine puts in front of the system under test:
//     faultyDLQ (the DLQ-store faults), recordingSink (the alert-sink
//     faults), swapPolicy (a set-retry step) and breakerRouter (a team's
//     breaker).
//   - steps.go: operator steps, and the DLQ steps a drill carries out alike
//     (CarryOutStep, StepStore).
//   - outcome.go: an attempt's end as the ledger checks it (attemptEnded,
//     checkLeases); Violation; fmtOffset.
//   - expect.go: Fate, and a job's DLQ entry at the end.
//   - result.go: the run's report, assembled by the oracle's checkers, and
//     its faults.
//   - history.go: WithHistory: the run's history, written as it goes.
//   - options.go: Option, and the components a team may replace (Backend,
//     Alerter, Breaker; Env); the random streams.
//   - system.go: BuildWorkerSystem: the worker-side system under test, as
//     a drill's worker processes build it too; NewStream.
//   - plan.go: Plan: the workload as the simulator makes it, for a drill's
//     producer.
//   - dlqonly.go: WithDLQ: a run on faultline's queue and a team's own DLQ
//     (TeamDLQ, DLQCaps).
//   - ids.go: the generated jobs' IDs, cut from shared blocks.
package sim
