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
package degrade
