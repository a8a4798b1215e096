// Package oracle is faultline's oracle: what judges a run from its history
// alone. It follows Jepsen's model: a run — the simulator's, a live drill
// of the reference workers, or a black-box drill of a team's system —
// produces a history of what it observed, and the checkers are pure
// functions of that history, so that a saved run can be judged again
// (`faultline report check`) and a new invariant applied to an old run.
//
// # What it holds now: the history format
//
// History is a drill's whole record, in the order it was observed, written
// by Write and read back by Read (which refuses, with an error matching
// ErrHistory, what is not a history of HistoryVersion). Its records are
// each named for what they are, without the H prefix they had in package
// sim:
//
//   - Job: a job the producer enqueued;
//   - Event (EventOf): a disposition event of the store's stream;
//   - Snapshot: the store's counts, read with a position in the stream;
//   - Attempt: a worker's report of one attempt;
//   - Call: a call a fault gateway answered;
//   - Delivery (DeliveryOf, Delivery.Notification) and Alert: a
//     notification the alerter sent, and its alerts;
//   - Overflow: a store's report of a full DLQ;
//   - BreakerTransition: one transition of a worker's breaker;
//   - ProcessEvent: one supervisor event of a worker process;
//   - Miss (MissOf): a window in which a fault aimed at a state never found
//     a targeted worker in it (the simulator records the same);
//   - AlerterCounts (AlerterOf): the alerter's own counts;
//   - Slip and SlipPart: how far the drill fell behind its scaled clock;
//   - ExternalRun, DLQRead, DLQItem and AdapterFailure: what a black-box
//     drill observed of a system it did not write (ExternalRun is the run's
//     record, as scenarios.ExternalSpec is the scenario's description of
//     that system).
//
// The JSON encoding is the one package sim wrote before the move, field
// for field: histories written by an older faultline still load.
//
// # What is to come
//
// The ledger, the invariants, the evaluation of a scenario's expectations
// (data of package scenarios) and the result move here from package sim in
// later steps, so that the simulator and the drills feed one oracle over
// one history, and sim is only the engine.
//
// # What it may import
//
// Only scenarios, reports, faults, layout and reference/... (with the
// standard library) — never sim, drill or cmd: the oracle must not depend
// on any driver that feeds it. A spec checks this with `go list -deps`.
package oracle
