// Package worker is the pipeline a job goes through when a worker runs it:
// the breaker's permit, the handler's error classified, the retry policy's
// decision, the dead letter queue, the alert — and the store moves that
// carry the decision out, fenced by the job's lease.
//
// # The core
//
// Core is a synchronous state machine: no goroutines, no wall clock, no
// per-job memory. Begin(job, now) asks the job's dependency for leave to
// call it (a Router: the degrade.Fallback) and stamps the attempt;
// Complete(attempt, err, now) classifies the error, tells the breaker, asks
// the retry policy, builds the DLQ entry when the job dies, raises the alert
// and returns an Outcome value: Succeed, Retry at T, DeadLetter (with the
// entry to write), Release (the attempt is not counted) or, from Begin,
// Divert (the breaker refused; the job goes to the fallback queue). The
// simulator drives it on virtual time; the Runner drives it with goroutines
// on the wall clock. Neither has logic the other lacks.
//
// Every collaborator is a narrow interface declared here, on the consumer
// side (Classifier, Policy, Alerter, Router, Recorder, and the store
// operations of Pipeline, Runner, AutoRetry and Monitor), so a team plugs in
// its own; the reference types satisfy them.
//
// # Where the failure history lives between attempts
//
// A DLQ entry carries every failed attempt of its job, but job.Job has no
// field for them and the queue stores only job.Job. The core keeps nothing
// between calls, so the history travels in values: an Attempt carries the
// failures of the job's earlier attempts in (Attempt.History), and an
// Outcome carries this attempt's failure out (Outcome.Failure), and, for a
// dead job, the whole history in Outcome.Entry. Between the two, the
// Pipeline keeps the failures in a History keyed by job ID: it reads them
// into the Attempt when an attempt starts; it records a failure once its
// Retry is carried out, or when the move could not be written (the store
// failed: the job comes back, and the failure was real), but not
// when the completion was fenced off (for the job, that completion never
// happened); and it forgets them once the job succeeds or its entry is in
// the DLQ or the held set, whose store extends the entry's history if a requeued job dies
// again.
//
// MemoryHistory, the default, lives in the process: a worker process that
// dies takes the histories of its jobs' earlier attempts with it (the jobs
// themselves are safe in the queue, and their DLQ entries then start at the
// failures seen after the restart). A fleet, whose processes run one job's
// attempts between them, keeps the history in the store
// (redisstore.Store.History, one list per job): with a history per
// process, a job's entry would lack the failures of its attempts in other
// processes, and a process would keep, for ever, the histories of the jobs
// that ended in another. The pipeline looks a job's history up only when
// the store counts attempts behind it, so a first attempt costs the
// history nothing, and a failure whose move could not be written on a
// first attempt is not kept. A failure recorded just after its Retry was
// written can, in a live runner, miss the next attempt if that attempt
// starts in between (a retry due at once, forwarded and leased by another
// worker in that instant); its entry then lacks that one failure. A
// history field on job.Job written by the same store move would close that
// gap, and spare the round trips.
//
// # Applying an outcome
//
// Apply carries an Outcome out on the stores: Ack, Retry, DeadLetter,
// Release or Divert, each fenced by the lease, so a completion that arrives
// after its lease was lost is refused (queue.ErrLeaseLost) and never
// applied twice. Pipeline wraps Core and Apply with the history, the hooks
// (OnError per error, OnDead once per death), the disposition events and
// counters.
//
// # A dead letter the DLQ cannot take
//
// A job whose dead letter is decided must never run again: a payment
// whose answer was lost would be charged twice, a declined card called
// again. So when the DLQ is full (reject policy) or its store cannot be
// reached, the job is parked with its entry in the store's held set — by
// DeadLetter itself in the same atomic step when the DLQ is full, by
// Pipeline.Apply through Hold when the DLQ store failed — and only the
// write is retried: FlushHeld moves held entries into the DLQ, oldest
// first, once there is room (the Runner's ticker calls it; the simulator
// does the same on virtual time). The entry keeps its failure's time. The
// held set is bounded (store.Config.HeldCapacity, by default the DLQ's
// capacity); past it, or when the store cannot be reached at all, the
// pipeline keeps the dead letter in memory (ErrKept, OnKept), heartbeats
// its lease and retries the park (a DLQ write that hung until the call's
// deadline leaves the park a deadline of its own, so a dead letter is
// kept for want of a store, never of time) (RetryKept: the Runner calls it every
// TickInterval or LeaseTTL/3, whichever is shorter, and once more when it
// stops), and the monitor says so at once (Monitor.Kept as
// PipelineConfig.OnKept, and MonitorConfig.Kept for its checks: the High
// dlq-kept alert). Only if that process stops, or its lease is lost, does
// such a job come back and run again.
//
// # Around the pipeline
//
// Runner is the wall-clock edge: N workers started by Run, leases and
// heartbeats, a ticker for ForwardDue, RecoverExpired and FlushHeld,
// RetryKept for the dead letters kept in memory, and a graceful
// shutdown that releases the jobs in flight without using an attempt.
// AutoRetry requeues dead jobs inside an off-peak window at a bounded rate
// and quarantines the ones that keep dying; Monitor raises and clears
// alerts on the DLQ's depth, its oldest entry's age, its held dead letters,
// the dead letters kept in memory and its overflows (at once through the store's OnOverflow, and from the
// store's counters, baselined at Start, for other processes'). Both
// run on clock timers, so the simulator drives them in virtual time.
package worker
