// Package faults is faultline's catalogue of fault models: composable,
// parameterised descriptions of what goes wrong in a job system's world — a
// gateway that times out, latency, error rates by HTTP status, refused
// credentials, declined cards, rate limits, 5xx answers of unknown outcome,
// a flapping primary, outages of dependencies, of the DLQ store and of alert
// receivers, crashed and stalled workers, a slow store.
//
// A Model says what happens to one call at an instant: an Effect carrying
// the error the call returns (the same error types the reference
// implementation's classifier knows, from reference/failure), the error's
// true class (what a perfect classifier would say, for scoring a team's
// classifier), the latency it adds, whether the request took effect anyway,
// and for workers a crash or a stall. A Fault gives a model a name, a Target
// and a Schedule (from, until, a periodic on-phase with per-period jitter,
// the calls of named jobs, the first N calls, a probability; for a worker, a
// state to wait for within each window: When). How a fault is
// applied is separate: the simulator (package sim) asks an Injector about
// each call on virtual time; the staging drills apply the same models to
// real services on the wall clock.
//
// Everything is deterministic. Time is a time.Duration offset from the
// scenario start, in whole milliseconds. Each fault draws from its own PCG
// stream keyed by the scenario seed and the FNV-1a hash of its name
// (Stream), and its periodic jitter is a stateless hash of (seed, name,
// period index), so the same seed gives the same run, any instant can be
// asked about in any order, and removing one fault changes no other fault's
// draws. Injector.Call allocates nothing: error values are built once per
// fault, and callers must not modify them.
//
// Catalogue describes every model (name, summary, class, targets,
// parameters) for reference pages and schemas; New builds one by name.
//
// # Files
//
//   - doc.go: this map, and how faults are described and drawn.
//   - model.go: the Model interface, Call and Effect; how a model is
//     prepared for a fault (binder, applier, gater) and the errors models
//     build alike (httpError, refused, statusClass).
//   - models.go: the models' defaults (Default*), the compile-time checks
//     that every catalogue model is a Model, and helpers they share.
//   - models_latency.go: what makes a call slow: GatewayTimeout, Latency
//     (its distributions), SlowStore.
//   - models_errors.go: a dependency's error answers: HTTPStatus,
//     AuthFailure, CardDeclined (its decline codes), RateLimit,
//     Indeterminate5xx.
//   - models_outages.go: what goes away: Flapping (a flapping primary),
//     Outage (a dependency, a store or a receiver down), StoreOutage (the
//     queue or DLQ store unreachable), SinkOutage (an alert receiver).
//   - models_workers.go: what strikes a worker: WorkerCrash, WorkerStall.
//   - gracefulstop.go: GracefulStop, a worker told to stop.
//   - interleave.go: Interleave, another client's write inside a DLQ-store
//     operation (Op*, Write*), and Injector.Strike.
//   - catalogue.go: the catalogue (Catalogue, Entry, Param) and New.
//   - fault.go: Fault (a model, a target, a schedule) and its validation;
//     the shorthands FlappingPrimary, ErrorRate and During.
//   - target.go: Target and TargetKind.
//   - schedule.go: Schedule and Periodic: when a fault is on (ActiveAt,
//     Windows), compiled for the injector.
//   - when.go: When, the state a worker fault waits for in each window,
//     and Miss.
//   - injector.go: Injector: what happens to each call (Call, CallFault),
//     with the faults' stats and windows.
//   - rand.go: the per-fault streams (Stream, NameHash) and the stateless
//     jitter hash.
//   - errors.go: FieldError and NameError, and the parameter checks.
package faults
