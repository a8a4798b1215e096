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
// fallback on the in-memory store; WithClassifier, WithPolicy, WithStore,
// WithAlerter and WithBreaker replace any of them with a team's own (see
// broken_test.go for deliberately broken ones, each caught by name). The
// Redis store gives the same result as the memory one (WithStore with
// redisstore on miniredis or a real server).
package sim
