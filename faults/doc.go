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
package faults
