// Package fleet holds what a fleet of worker processes runs once: a
// lease-based leader elected in the store, the relay that carries every
// process's failures and breaker transitions to the leader's alerter, and
// the Control that ties them to the duties only the leader performs (the
// DLQ monitor, the off-peak auto-retry).
//
// Files:
//   - leader.go: Lease, LeaderStore, Claim (the one rule both stores
//     keep), Elector (a process's view of the leadership) and MemoryLeader.
//   - relay.go: Record, Log, Relay (every process's side: an alerter that
//     writes to the log), Drain (the leader's side: the log into its
//     alerter, acknowledged under the leader's term) and MemoryLog.
//   - control.go: Control, the tick that claims, flushes, drains and
//     starts or stops the leader's duties.
//   - fleettest: the conformance specs a store keeping a fleet's leader and
//     log runs (the memory types here and the Redis store both do).
//
// # Why a leader
//
// An alerter deduplicates, groups and pages within its process: two
// processes that each run one page every incident twice, and two DLQ
// monitors or auto-retries double their pages and their requeues. In a
// drill of the reference, and in the simulator, these run once, in the
// drill's (or the simulator's) control process. A deployment that runs
// them inside its worker processes (`faultline worker --scenario`, copies
// > 1) runs them under a leader instead: every process relays what its
// alerter would hear to the store's log; the process holding the lease
// reads the log into its alerter and runs the monitor and the auto-retry.
//
// # Guarantees and trade-offs
//
//   - One leader at a time by the store's lease: a claim succeeds when the
//     lease is free, run out (by the claimant's clock) or the claimant's
//     own. A process acts as leader only while its own lease holds by its
//     own clock, so two leaders overlap only by the clocks' skew (the
//     Redis store compares the times the processes send, not the server's).
//   - Each term numbers a leadership: the leader acknowledges what it read
//     from the log only under its term (the store refuses a stale term,
//     and the refused leader stops leading at once), so a leader that
//     paused past its lease cannot drop what the new leader has not read.
//   - A record stays in the log until the leader's alerter can have paged
//     it (DrainConfig.Hold: its longest group wait, and a little): a
//     leader that dies before paging leaves it to its successor, which
//     reads the log from its start. A failure is heard at least once; a
//     page may repeat across a change of leader. Within one leadership a
//     record is heard once: the leader reads after what it fed, and drops
//     a record relayed twice (a batch whose answer was lost) by its
//     process's sequence number. What the alerter's outbox holds for a
//     receiver that is down dies with the leader.
//   - A leader's death: its lease runs out (TTL) and the first process to
//     claim after that leads; what was relayed meanwhile waits in the log.
//     A graceful stop resigns, so the next claim (within a tick) leads.
//   - The new leader's alerter starts empty: an incident still under way
//     when the leader changed is paged again by the new one.
//   - A store that cannot be reached: a process keeps what it would relay
//     in memory (up to MaxPending records, then counts the excess as
//     dropped and logs it) and relays it at the next tick that reaches the
//     store; a leader that cannot renew stops leading when its lease runs
//     out by its clock.
package fleet
