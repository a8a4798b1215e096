// Package memstore is the in-memory backend of a namespace: its work queue
// (queue.Queue) and its dead letter queue (dlq.Store) behind one lock, so
// that every move between them is atomic. The simulator runs on it, and it
// meets the same conformance suites (queuetest, dlqtest) as the Redis
// backend, so that what the simulator shows is what a live runner does.
//
// It behaves like a real backend where that matters:
//
//   - Time comes only from the callers' now arguments; nothing reads the
//     wall clock and nothing runs on a goroutine of its own.
//   - DLQ entries are kept encoded (dlq.Encode) and decoded on every read
//     (dlq.Decode), with the few fields that listing, stats and capacity
//     need kept beside the bytes, the way a Redis backend keeps indexes
//     beside its hash of entries. So an entry that does not decode is
//     handled for real: listed as corrupt with its raw bytes, counted,
//     purgeable, never dropped. PlantRaw puts such bytes in, for tests.
//   - Times order and compare at a Redis score's resolution, the Unix
//     millisecond, with ties by job ID (queue.Queue.ForwardDue's rule): the
//     heaps of retries and leases and the DLQ's indexes give the Redis
//     store's order, so one scenario gives one result on both.
//   - Observers and the overflow callback are called after the lock is
//     released, in the order the moves happened, never while it is held
//     (gobreaker issue #37): a callback may call the store again.
//
// Costs, for the simulator's millions of jobs: every queue operation is
// O(1) or O(log n) (a ring buffer per queue and for the fallback queue, a
// min-heap of leases by expiry and one of retries by due time, maps by job
// ID). A dead-letter, requeue or status change is O(log n) plus the
// entry's encoding. Listing, requeue by filter and purge walk an index kept
// sorted by (LastFailedAt's millisecond, ID), re-sorted only after an entry is written
// out of time order; Stats is O(number of tasks).
//
// Iteration never depends on map order, so that a run is reproducible.
//
// # Files
//
//   - store.go: Store, New and the lock (events delivered after it is
//     released); the queue side: Enqueue, Dequeue, Heartbeat, Ack, Retry,
//     Release, Divert, ForwardDue, RecoverExpired, DrainBatch, Counts.
//   - structures.go: the data structures: a job's rec, the ring buffers of
//     the queues, the heaps of leases and retries, an entry's dent and the
//     DLQ's heaps.
//   - dlq.go: the DLQ's writes and reads: Add, DeadLetter (admitted by the
//     capacity and overflow policy), the held jobs (Hold, FlushHeld), Get,
//     List, Stats, and PlantRaw for tests.
//   - index.go: the DLQ's indexes kept beside the entries: the counters and
//     heaps, the time index, and the filter an entry matches.
//   - moves.go: an operator's moves: Requeue, RequeueMatching (in bounded
//     steps), Delete, Restore, Quarantine, Purge.
//   - ops.go: DeleteMatching, AddIfAbsent and EditPayloadAt.
//   - edit.go: EditPayload.
//   - cursor.go: the listing cursor.
//   - interleave.go: the StepHook a harness sets between the steps of a
//     multi-step operation.
//   - audit.go: the audit log (dlq.Auditor).
//   - depth.go: the depth samples (RecordDepth, DepthSamples).
package memstore
