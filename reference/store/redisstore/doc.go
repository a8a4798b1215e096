// Package redisstore is the Redis backend of a namespace's work queue
// (queue.Queue) and dead letter queue (dlq.Store): the store a live runner
// uses, held to the same conformance suites (queuetest, dlqtest) as the
// in-memory store the simulator uses.
//
// Build it on a client from NewClient, the one place clients are built:
//
//	s, err := redisstore.New(redisstore.NewClient("127.0.0.1:6379"), store.Config{Namespace: "payments"})
//
// # Guarantees
//
// Every move of a job or an entry is one Lua script, so Redis applies it
// whole or not at all: a process that dies, or a context canceled, between
// two steps of a bulk operation leaves every job in exactly one place. Each
// script checks its preconditions before its first write, like a
// compare-and-set, and answers distinctly when they do not hold: a
// completion from a lost lease gets queue.ErrLeaseLost (the lease token
// fences it), a retried requeue gets dlq.OutcomeAlreadyRequeued, a requeue of
// a job that is queued or in flight gets dlq.OutcomeBusy. A DLQ entry is
// read, changed in Go (its JSON is opaque to the scripts) and written back by
// a script that checks the entry's revision is still the one read; when it is
// not, the call reads again (at most 16 times, then ErrContended, having
// written nothing).
//
// Time reaches Redis only as script arguments, in integer milliseconds taken
// from the caller's now: no script calls TIME and no key has a TTL, so the
// store runs under virtual time as well as the wall clock. Its resolution is
// one millisecond; sorted-set scores are those milliseconds.
//
// Bulk work (RequeueMatching, Purge, ForwardDue, RecoverExpired, DrainBatch)
// goes in steps of at most Config.BatchSize jobs or entries per script, so no
// script stalls Redis: a requeue of 100,000 entries is about a thousand short
// scripts. RequeueMatching walks the failed index by (last failure, id) with
// the call's now as cut-off, so an entry that fails again during the run is
// not picked twice, and two runs at once requeue each entry once.
//
// Overflow of the DLQ is checked, and resolved by the policy (reject, or
// evict the oldest entries with their payloads), in the same script as the
// add, and always reported (a dead letter refused under reject is parked,
// in that script, in the held set with its entry; FlushHeld writes it when
// there is room, and a new dead letter that finds room while jobs are held
// gets no write from dlqPut but 'flushfirst': the caller flushes the held
// set into the room, oldest first, and retries behind them; a held entry
// that does not decode is written from its job's hash with its bytes in
// Superseded, see FlushHeld): in the call's result or error, in counters kept
// in Redis (Stats.Evicted, Stats.Rejected) and through Config.OnOverflow
// after the call. Disposition events reach Config.Observer after each
// script, in order. A script whose reply never arrives (the connection
// broke after Redis ran it) did its move but the caller hears no event for
// it; NewClient turns off go-redis's automatic retries so that such a script
// is never run twice behind the caller's back, and the caller's own retry
// gets the guarded answer.
//
// # Event stream
//
// With Config.EventStream = N > 0, every script that moves a job also
// appends each move's event to the namespace's stream {faultline:NS}:events
// (EventStreamKey), in the same script: a move and its event are one atomic
// step, so a move whose reply was lost is in the stream exactly once though
// the Observer never heard of it. The entries come in the order the Observer
// hears the events of the calls whose replies arrived (a batch whose
// entries merge with existing ones reports the merges after the batch's own
// moves, as they happen). Each entry has the fields
//
//	job   the job ID            from, to  the states' names (disposition.State)
//	task  its task              why       the reason (disposition.Reason)
//	at    the caller's now (ms) att       its counted attempts after the move
//	prev  the ID of the entry before it ("0-0" for the first)
//
// and an ID from Redis ('*'). The stream is trimmed with XADD MAXLEN ~ N:
// Redis drops whole nodes of entries (100 by default), so it holds between N
// and about N+100; miniredis trims exactly. ReadEvents reads it (XREAD, with
// BLOCK when asked) and, from prev, tells a reader that entries were trimmed
// before it read them (ErrEventsTrimmed): then what it read is not every
// move. With N = 0 (the default) no script writes the stream. A heartbeat is
// no move and has no event; nor have Delete, Restore and Quarantine (the job
// stays dead-lettered). The cost: one XREVRANGE per script that moves
// anything and one XADD per move (and, for a lease, a decode of the job's
// JSON in Lua to name its task). BenchmarkStream* (bench_test.go) measured
// it on a loaded two-core machine: 7-12 µs of server time for one Add or
// dead letter, whose script takes 80-120 µs and whose call 150-300 µs end to
// end (the difference is within the noise); about 3 µs per entry of a
// batched add, whose server time goes from 29-32 to 35-43 µs per entry.
// The stream's IDs come from the Redis server's clock; at carries the
// caller's.
//
// Bytes in the DLQ that do not decode (another writer's, or a newer
// version's) are listed, counted and purgeable as corrupt entries, never
// dropped: bytes written without an index (a raw HSET of a new id) are
// indexed by the next List, Stats or Purge; bytes replaced in place are
// re-indexed as corrupt when a List or Get reads them.
//
// # Redis Cluster
//
// A namespace is one hash slot, so one node: New takes any
// redis.UniversalClient, and on a cluster (NewClusterClient) every script
// of a namespace runs on the node that serves its slot; several namespaces
// spread over the nodes. Scripts declare two keys that are never written:
// the prefix, and the prefix's ":slot-guard". While a namespace's slot
// migrates, both the node it leaves and the node it joins answer a script
// whose declared keys are not all there with TRYAGAIN, so no script ever
// runs on half of a namespace's keys; the cluster client waits and tries
// again (ClusterRedirects), and a resharding is, to the namespace's
// callers, a pause. MOVED and ASK are followed, TRYAGAIN and CLUSTERDOWN
// retried (the node ran nothing); a lost connection or a timeout is not
// retried (the script may have run: the caller hears the error and its own
// retry gets the script's guarded answer). The specs run the conformance
// suites, a resharding in the middle of a run and a lost reply on a real
// three-node cluster.
//
// # Key layout
//
// Every key of namespace NS starts with the prefix {faultline:NS}, its hash
// tag, so that all of them live in one Redis Cluster slot and a move between
// the queue and the DLQ is one script. Scripts receive the prefix as KEYS[1]
// and derive the keys below from it.
//
//	{faultline:NS}:q:<queue>       list   job IDs waiting, head first
//	{faultline:NS}:queues          set    the names of the queues
//	{faultline:NS}:job:<id>        hash   a job in the queue: data (job JSON), task,
//	                                      q (its queue), att (attempts), loc (queued,
//	                                      inflight, scheduled, fallback, held), tok and
//	                                      exp (its lease token and expiry, ms), entry
//	                                      and heldat (a held job's decided dead letter,
//	                                      JSON, and when it was parked, ms)
//	{faultline:NS}:lease           string the last lease token handed out (INCR)
//	{faultline:NS}:processing      zset   leased job IDs by lease expiry (ms)
//	{faultline:NS}:retry           zset   scheduled job IDs by due time (ms)
//	{faultline:NS}:fallback        list   diverted job IDs, oldest first
//	{faultline:NS}:held            zset   held job IDs (dead letters decided, waiting
//	                                      for room in the DLQ) in parking order
//	{faultline:NS}:heldseq         string the last parking number handed out (INCR)
//	{faultline:NS}:dlq:entries     hash   job ID → encoded entry (dlq.Encode; opaque)
//	{faultline:NS}:dlq:m:<id>      hash   an entry's meta: rev (its revision), st
//	                                      (status, or corrupt), sev, cls, task, att
//	                                      (job attempts), et (last error type)
//	{faultline:NS}:dlq:bytime      zset   job IDs by last failure (ms; the zero time
//	                                      for a corrupt entry)
//	{faultline:NS}:dlq:st:<status> zset   the same, one per status (failed, requeued,
//	                                      deleted, quarantined, corrupt)
//	{faultline:NS}:dlq:stats       hash   counters: st:<status>, sev:<severity>,
//	                                      cls:<class>, task:<task>, evicted, rejected
//	{faultline:NS}:dlq:etx         hash   job ID → its last error's text, folded, for
//	                                      the error-text filter: '=' and the whole
//	                                      text, or '~' and its first ErrTextCap bytes
//	{faultline:NS}:dlq:audit       stream the operators' actions (dlq.Auditor), the
//	                                      newest DefaultAuditCap, about (MAXLEN ~)
//	{faultline:NS}:layout          string the layout's version (LayoutVersion),
//	                                      stamped by the first write into an empty
//	                                      namespace; upgraded by Store.Upgrade
//	{faultline:NS}:events          stream the disposition events, oldest first, when
//	                                      Config.EventStream > 0 (see Event stream)
//	{faultline:NS}:budget:<w>:<dep> hash  a fleet-scoped retry budget (Store.Book) of
//	                                      slot width w (ns) for dependency dep: slot
//	                                      number (Unix ns / w) → retries booked in it;
//	                                      lo (no slot field below it), fl and fh (a
//	                                      run [fl, fh) of full slots, skipped)
//	{faultline:NS}:hist:<id>       list   a job's failures between its attempts (JSON,
//	                                      oldest first; Store.History), while it has
//	                                      attempts behind it and is neither done nor
//	                                      dead
//	{faultline:NS}:breaker:<name>  hash   the state a fleet shares of breaker name
//	                                      (degrade.WithFleet): gen, st, until (ms),
//	                                      lvl, holder
//	{faultline:NS}:breaker:<name>:w:<w> hash the fleet's rolling window of buckets w
//	                                      ns wide: <bucket>:c and <bucket>:f, calls
//	                                      and counted failures
//	{faultline:NS}:breaker:<name>:run zset the fleet's run of consecutive counted
//	                                      failures, by time (ms); :ok the latest
//	                                      success's time (ms); :seq names the run's
//	                                      members
//
// Stats reads the counters (O(counters), not O(entries)) and the head of the
// failed index. List walks the time index, or one status's index, in bounded
// steps, matching the filter on the meta inside the script, so that Go
// decodes only the entries it returns; a filter that matches little costs an
// O(n) walk in bounded steps.
//
// # Scripts
//
// Each starts with a comment giving its KEYS and ARGV and what it
// guarantees (the conventions all of them keep are in scripts.go, the
// scripts one file per family); every one takes two more ARGV last, the time of
// its events and the stream's MAXLEN ('0': off): enqueue, dequeue, heartbeat, ack, ackDequeue (an ack
// and the next lease in one step, queue.AckDequeuer), retry, release,
// divert, forwardDue, recoverExpired, drainBatch and counts for the queue
// (scripts_queue.go);
// dlqPut (add, dead-letter and flush of a held job, with capacity, eviction
// and parking), hold, heldPeek, dlqSet (requeue,
// delete, restore, quarantine), dlqPurge, dlqIndex (indexing bytes written by
// another writer) for the DLQ (scripts_dlq.go), and the DLQ's read-only
// dlqGet, dlqScan and dlqStats (scripts_dlqread.go). All of them run on miniredis too (its Lua has no bit, struct or
// cmsgpack libraries, which they do not use).
//
// # Files
//
//   - store.go: Store, New, NewClient and Prefix; running a script (run,
//     emit) and reading its reply.
//   - version.go: the key layout's version: the stamp, the guards that refuse
//     a newer layout, CheckLayout and Upgrade.
//   - cluster.go: Redis Cluster: NewClusterClient, ClusterRedirects, and the
//     client that never retries a script that may have run.
//   - scripts.go: what every script keeps (the conventions above its
//     prelude), the prelude parts (key names, the DLQ's index helpers), the
//     linking of a script with the parts it uses, and allScripts.
//   - scripts_queue.go: the queue's scripts, each with its KEYS/ARGV
//     contract on top: enqueue, dequeue, heartbeat, ack, ackDequeue, retry, release,
//     divert, forwardDue, recoverExpired, drainBatch, counts.
//   - scripts_dlq.go: the DLQ's writing scripts: dlqPut, hold, heldPeek,
//     dlqSet, dlqPurge, dlqIndex.
//   - scripts_dlqread.go: the DLQ's read-only scripts: dlqGet, dlqScan,
//     dlqStats.
//   - queue.go: queue.Queue: Enqueue, Dequeue, Heartbeat, Ack, AckDequeue, Retry,
//     Release, Divert, the bulk ForwardDue, RecoverExpired and DrainBatch,
//     and Counts.
//   - queues.go: Queues and JobLive.
//   - dlq.go: the DLQ's writes and reads: the meta a script indexes, Add,
//     DeadLetter, Hold, FlushHeld, AddBatch, Get, List (the scan) and Stats.
//   - entry.go: an entry as stored: normalize, merge, match, lastError.
//   - moves.go: an operator's moves: Requeue, RequeueMatching,
//     DeleteMatching, Delete, Restore, Quarantine, Purge.
//   - bulk.go: the walk a bulk move takes, in bounded steps read ahead.
//   - edit.go: EditPayload and EditPayloadAt.
//   - ops.go: AddIfAbsent (dlq.Importer).
//   - raw.go: WriteRaw and WriteRawIfAbsent: bytes as another writer leaves
//     them, indexed.
//   - events.go: the event stream: ReadEvents and FollowEvents.
//   - snapshot.go: Snapshot, the counts at one instant of the event stream.
//   - audit.go: the audit stream (dlq.Auditor).
//   - depth.go: the depth stream: RecordDepth and DepthSamples.
//   - stephook.go: the step hook a spec sets between the steps of a
//     multi-step operation (SetStepHook, ErrReplyLost).
//   - history.go: History, a fleet's jobs' failures between attempts.
//   - budget.go: Book and Booked, a fleet-scoped retry budget.
//   - breaker.go: the state a fleet shares of a breaker (LoadBreaker,
//     SwapBreaker, AddWindow).
//   - fleet.go: a fleet's leader leases and relay log (fleet.LeaderStore,
//     fleet.Log).
//   - redistest: the specs' two Redis lanes, miniredis and a real redis-server.
package redisstore
