// Package oracle is faultline's oracle: what judges a run from its history
// alone. It follows Jepsen's model: a run — the simulator's, a live drill
// of the reference workers, or a black-box drill of a team's system —
// produces a history of what it observed, and the checkers are pure
// functions of that history, so that a saved run can be judged again
// (`faultline report check`) and a new invariant applied to an old run.
//
// # The history format
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
// # The ledger and its invariants
//
// Ledger follows every job from a store's disposition events and a run's
// attempt outcomes and checks the invariants as it goes (Inv* name them,
// as a violation carries them; Invariants lists them in a report's order),
// with O(1) work and no allocation per event for a job it holds. The
// simulator's engine feeds it as its run goes, the judge of a drill from
// the drill's history: both through the same methods, so a run is judged
// the same way however it was observed. Its files:
//
//   - ledger.go: Ledger, NewLedger and Record (one job's record and its
//     trail); Observe (a store's move), Register and Unregister (a job
//     enqueued, or not), Attempt, Settle, Keep and Refuse (an attempt's
//     verdict and its outcome's fate), Note, Fail; the legal moves; the
//     totals (Report) and the confusion matrix (Confusion,
//     ConfusionCount);
//   - outcome.go: attempt-outcome-is-the-move and no-lease-left-expired
//     (BeginOutcome, ResolveRefusal, LeaseCheckDue, CheckLeases; WantMove,
//     ActionWords), and the times expectations read (Attempts, WatchDue,
//     RetriesDue);
//   - ledger_api.go: what a driver reads of the ledger (Record's ID,
//     TaskIndex, State, Kept; Last, Job, Count, Created, Violations,
//     ViolationCount, Fate, Fates, Pending, InDLQ) and the checks it feeds
//     with what only it sees: a payment's charges (Charge,
//     no-double-charge), the store's own counts and DLQ listing
//     (CheckCounts, DLQDiffers, CheckDLQ).
//
// The engine keeps what is its own: worker slots, timers, breakers, the
// alerter's pages (it calls Fail and FailJob for critical-failure-paged,
// one-page-per-repeat-interval and breaker-transitions-legal, which rest
// on its state).
//
// # The expectations
//
// Evaluate judges one of a scenario's expectations (data of package
// scenarios, each naming itself with Name) against the Observation a run
// gives: the result's totals, the Ledger (nil for a black-box drill, whose
// counts come from the result alone), the Probe snapshots taken at the
// instants expectations asked for, the first critical failure and page,
// the firing deliveries (FiringKey), the dependency calls and the DLQ
// entries; a count the run could not see is named in Unobservable and
// reported not observable. FaultChecks adds what the faults' hits say.
// Files: expect.go (Evaluate, Observation, Probe), evaluate.go (each
// expectation's evaluation, FaultChecks).
//
// # The evidence checks read
//
// Every invariant and expectation declares the kinds of evidence it reads
// (Evidence; InvariantReads, ExpectationReads), and a history says what its
// run observed and why it lacks the rest (History.Observed, Simulated): a
// check whose evidence the run lacks is not observable, with why — no
// judge keeps a list of what it cannot see. Files: evidence.go.
//
// # The black-box judge, pacing and the live section
//
// JudgeBlackBox judges a black-box drill's history (blackbox.go): where
// each job ended and what crossed the system's edges. FaultWindows and
// LateJobs (pace.go) are the one computation of where a scenario's faults
// are on, which the drill's pacing and the judge share; LiveSection,
// JudgedFaults and RepeatEvery (live.go) are what every judge of a live
// history reports alike.
//
// # The history format on disk
//
// Version 2 (history2.go): one JSON document whose records stream — a job
// table, then events, attempts and calls naming their job by index — so
// that the simulator writes it as it runs (HistoryWriter, memory flat) and
// Read takes a record at a time; version 1 (one History object) still
// loads.
//
// # One run's checkers, and the judge of a history
//
// Checks (checks.go) are one run's checkers — the ledger, the breakers,
// the pages, the secrets, the time series and the probes — fed by
// whichever driver has the run, and Checks.Result the one assembler of its
// report (the final reconciliation, the invariants' verdicts, the
// expectations, the verdict). The simulator's engine feeds them as it
// runs; Judge (judge.go) replays a history into them on a virtual clock of
// its own: a drill of the reference, or a simulated run's history, which
// gives the run's own verdict on every check. A black-box drill's history
// goes to JudgeBlackBox. Judge reads nothing but the history and the
// scenario.
//
// # What it may import
//
// Only scenarios, reports, faults, layout and reference/... (with the
// standard library) — never sim, drill or cmd: the oracle must not depend
// on any driver that feeds it. A spec checks this with `go list -deps`.
//
// # Files
//
//   - doc.go: this map, and how the oracle works.
//   - history.go: the history format (History and its records), Read,
//     EventOf.
//   - history2.go: the history's version 2 on disk, streamed
//     (HistoryWriter).
//   - atrest.go: AtRest, a history written with its secrets masked.
//   - delivery.go: DeliveryOf, a notification as a history records it.
//   - miss.go: Miss and MissOf, a window a worker fault never struck in.
//   - ledger.go: the Ledger and its invariants (Inv*): a job's Record and
//     trail, the legal moves, the totals, the confusion matrix.
//   - ledger_api.go: what a driver reads of the ledger, and the checks only
//     a driver can feed (charges, the store's counts and DLQ listing).
//   - outcome.go: attempt-outcome-is-the-move and no-lease-left-expired.
//   - checks.go: Checks, one run's checkers, and Checks.Result, the one
//     assembler of its report.
//   - result.go: the invariants' verdicts and the run's (InvariantResults,
//     ObservedViolations, Conclude, WhenChecks).
//   - breakers.go: the breakers' checker (legal transitions).
//   - pages.go: the pages' checker (critical failure paged, one page per
//     repeat interval).
//   - secrets.go: the planted secrets' checker.
//   - series.go: the time series and the probes (Sampler, TakeProbe).
//   - store.go: the store reconciled with the ledger (Reconcile), the DLQ
//     at the end (DLQSummary), Lost.
//   - expect.go: Evaluate and the Observation expectations read.
//   - evaluate.go: each expectation's evaluation; FaultChecks.
//   - evidence.go: the evidence each check reads, and what a history
//     observed (Evidence, Observed).
//   - observability.go: what a black-box drill can judge
//     (BlackBoxObservability).
//   - judge.go: Judge, a history replayed into the checkers.
//   - livejudge.go: what makes a drill inconclusive or failed beyond the
//     checks (JudgeUnaccounted, JudgeUnlanded, JudgeEvidence, JudgePace).
//   - liveoutcome.go: a drill's reported attempts against the store's moves
//     (JudgeLiveOutcomes).
//   - live.go: the live section every judge of a drill reports
//     (LiveSection, JudgedFaults, RepeatEvery).
//   - pace.go: where the faults are on (FaultWindows, LateJobs).
//   - blackbox.go: JudgeBlackBox, and the black-box judge's state (each job
//     as it is followed from outside).
//   - blackjobs.go: what each job's calls say: conservation,
//     no-double-charge, no retry of a final answer, no run after the dead
//     letter or after success.
//   - blackdlq.go: what the DLQ's reads say: it never shrinks, one entry a
//     job, the entries' severity and metadata.
//   - blackretries.go: the declared retry policy held against the calls
//     (Policy).
//   - blackpages.go: the pages owed and sent (Incident, Paging).
//   - blackreport.go: the result's ledger, DLQ, alerts, expectations and
//     system under test, filled from outside.
package oracle
