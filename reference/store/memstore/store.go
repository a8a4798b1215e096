package memstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/internal/mutant"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/store"
)

// Store is one namespace's work queue and DLQ in memory. It is safe for
// concurrent use; one mutex guards everything, and callbacks run after it
// is released.
type Store struct {
	cfg store.Config

	mu sync.Mutex

	// The queue side. jobs holds every job that is queued, in flight,
	// scheduled or in the fallback queue, by ID.
	jobs   map[string]*rec
	queues map[string]*fifo
	// lastQ is the fifo of the queue named lastQName, the one used last:
	// the simulator's jobs mostly share one queue, whose lookup this
	// spares.
	lastQ     *fifo
	lastQName string
	queued    int
	leases    recHeap // in flight, by expiry
	scheduled recHeap // waiting to retry, by due time
	fallback  fifo
	// held holds the jobs whose decided dead letters wait for room in the
	// DLQ, oldest parked first (see dlq.go).
	held  fifo
	token uint64
	// free holds recs of jobs that left the queue side, for reuse: the
	// simulator moves millions of jobs through.
	free []*rec

	// audit is the operators' audit stream (audit.go), made on first use
	// (the simulator audits nothing).
	auditOnce sync.Once
	audit     *auditLog

	// The DLQ side, see dlq.go.
	entries map[string]*dent
	heaps   [dentHeaps]dentHeap
	// order is every entry sorted by (LastFailedAt, ID), with gone dents
	// left in place until the next rebuild; dirty means it must be
	// rebuilt before use.
	order      []*dent
	orderGone  int
	orderDirty bool
	bySeverity map[classify.Severity]int
	byTask     map[string]int
	byClass    map[classify.Class]int
	byStatus   [dlq.Quarantined + 1]int
	corrupt    int
	evicted    int
	rejected   int

	// outbox holds the callbacks of moves made under the lock, delivered
	// in order by whoever releases it; spare is its recycled buffer. Only
	// the caller delivering touches spare.
	outbox []note
	spare  []note
	// One caller at a time delivers (see unlock). turns counts the batches
	// taken for delivery (written under mu); done is the turn of the last
	// delivery that finished, so that a caller is delivering while turns
	// != done. more tells the one delivering that callbacks were queued
	// meanwhile: it then comes back for them.
	turns uint64
	done  atomic.Uint64
	more  atomic.Bool

	// solo says one goroutine alone calls the store (see Unshared): the
	// queue's moves take no lock, and delivering marks a delivery under
	// way (callbacks queued by a callback wait for it).
	solo       bool
	delivering bool

	// stepHook is the test hook a multi-step operation calls between its
	// steps (interleave.go); nil in production.
	stepHook StepHook
}

var (
	_ queue.Queue = (*Store)(nil)
	_ dlq.Store   = (*Store)(nil)
)

// note is one callback to deliver: an event, or an overflow.
type note struct {
	event    disposition.Event
	overflow *store.Overflow
}

// New returns an empty store configured by cfg (zero fields take their
// defaults); an invalid cfg is refused with a *store.ConfigError.
func New(cfg store.Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("memstore: %w", err)
	}
	s := &Store{
		cfg:        cfg.WithDefaults(),
		jobs:       map[string]*rec{},
		queues:     map[string]*fifo{},
		entries:    map[string]*dent{},
		bySeverity: map[classify.Severity]int{},
		byTask:     map[string]int{},
		byClass:    map[classify.Class]int{},
	}
	s.heaps[countedHeap].slot = countedHeap
	s.heaps[failedHeap].slot = failedHeap
	s.heaps[newestHeap].slot, s.heaps[newestHeap].desc = newestHeap, true
	return s, nil
}

// Config returns the store's configuration, defaults applied.
func (s *Store) Config() store.Config { return s.cfg }

// emit queues an event for j's move; the caller holds the lock.
func (s *Store) emit(j *job.Job, from, to disposition.State, reason disposition.Reason, now time.Time) {
	if s.cfg.Observer == nil {
		return
	}
	s.outbox = append(s.outbox, note{event: disposition.Event{
		JobID: j.ID, Task: j.Task, From: from, To: to, Reason: reason, At: now, Attempts: j.Attempts,
	}})
}

// emitLast is emit for the last change of a single move (Enqueue, Dequeue,
// Ack, Retry, Release, Divert): an unshared store with nothing queued and
// no delivery under way delivers the event at once, without queueing a
// copy; the caller's release delivers whatever the observer's own moves
// queued meanwhile, after it, as unlock does. Otherwise it queues as emit
// does.
func (s *Store) emitLast(j *job.Job, from, to disposition.State, reason disposition.Reason, now time.Time) {
	if s.cfg.Observer == nil {
		return
	}
	if !s.solo || s.delivering || len(s.outbox) > 0 {
		s.emit(j, from, to, reason, now)
		return
	}
	s.delivering = true
	defer func() { s.delivering = false }()
	s.cfg.Observer(disposition.Event{
		JobID: j.ID, Task: j.Task, From: from, To: to, Reason: reason, At: now, Attempts: j.Attempts,
	})
}

// report queues an overflow report; the caller holds the lock.
func (s *Store) report(o store.Overflow) {
	if s.cfg.OnOverflow == nil {
		return
	}
	s.outbox = append(s.outbox, note{overflow: &o})
}

// Unshared tells the store that from now on one goroutine alone calls it,
// its callbacks included: the simulator's world, which runs every worker,
// timer and step in one goroutine. The queue's moves (Enqueue, Dequeue,
// Ack, Retry, Release, Divert, ForwardDue, RecoverExpired, DrainBatch) then
// take no lock, and the callbacks are delivered by the caller without the
// handshake between concurrent deliverers: the same events, in the same
// order. Call it before the store is used; a store told so must not be
// shared between goroutines.
func (s *Store) Unshared() {
	s.mu.Lock()
	s.solo = true
	s.mu.Unlock()
}

// lock takes the lock for a move of the queue's: none when the store is
// unshared. Released with release.
func (s *Store) lock() {
	if !s.solo {
		s.mu.Lock()
	}
}

// release ends what lock began, and delivers the queued callbacks (see
// unlock).
func (s *Store) release() {
	if s.solo {
		s.deliverSolo()
		return
	}
	s.unlock()
}

// deliverSolo delivers the queued callbacks of an unshared store, in order,
// and whatever they queue meanwhile; a callback's own moves, queued while
// a delivery is under way, are delivered by it after the batch (as deliver
// does). A callback that panics loses the rest of its batch; the panic
// reaches the caller and the store goes on working.
func (s *Store) deliverSolo() {
	if s.delivering || len(s.outbox) == 0 {
		return
	}
	s.delivering = true
	defer func() { s.delivering = false }()
	for len(s.outbox) > 0 {
		batch := s.outbox
		s.outbox, s.spare = s.spare, nil
		for i := range batch {
			if n := &batch[i]; n.overflow != nil {
				s.cfg.OnOverflow(*n.overflow)
				*n = note{}
			} else {
				s.cfg.Observer(n.event)
				*n = note{}
			}
		}
		s.spare = batch[:0]
	}
}

// unlock releases the lock and delivers the queued callbacks, in order,
// without holding it. When another caller is delivering already, it leaves
// its callbacks to that caller, which delivers until the outbox is empty:
// so callbacks keep the order of the moves, and a callback that calls the
// store (even one that moves a job) neither deadlocks nor reorders. A
// callback that panics loses the rest of its batch (the moves stand) and
// the panic reaches the caller; the store goes on working.
func (s *Store) unlock() {
	if s.solo {
		s.mu.Unlock()
		s.deliverSolo()
		return
	}
	if len(s.outbox) == 0 {
		s.mu.Unlock()
		return
	}
	if s.turns != s.done.Load() {
		// Someone is delivering. Tell them there is more, then look
		// again: they may have finished before seeing it (more is set
		// before done is read here, and done before more is read there,
		// so one of the two sees the other's write).
		s.more.Store(true)
		if s.turns != s.done.Load() {
			s.mu.Unlock()
			return
		}
	}
	s.deliver()
}

// deliver takes the outbox and delivers it, and whatever is queued
// meanwhile. The caller holds the lock, nobody is delivering and the outbox
// is not empty; deliver releases the lock.
//
// Finishing a delivery takes no lock: the deliverer publishes done and
// checks more, which a caller leaving callbacks behind set. So the common
// case, a move whose callbacks queued nothing new, takes the lock once
// instead of twice.
func (s *Store) deliver() {
	s.turns++
	turn := s.turns
	if s.more.Load() {
		s.more.Store(false)
	}
	batch := s.outbox
	s.outbox, s.spare = s.spare, nil
	s.mu.Unlock()

	finished := false
	defer func() {
		if !finished { // a callback panicked: let the next caller deliver
			s.done.Store(turn)
		}
	}()
	for {
		for i := range batch {
			if n := &batch[i]; n.overflow != nil {
				s.cfg.OnOverflow(*n.overflow)
				*n = note{}
			} else {
				s.cfg.Observer(n.event)
				*n = note{} // cheaper than clearing the batch after
			}
		}
		s.spare = batch[:0] // the next deliverer takes it after seeing done
		s.done.Store(turn)
		if !s.more.Load() {
			finished = true
			return
		}
		// Callbacks were queued meanwhile. Deliver them, unless another
		// caller took them already (or is delivering them now).
		s.mu.Lock()
		if s.turns != s.done.Load() || len(s.outbox) == 0 {
			s.mu.Unlock()
			finished = true
			return
		}
		s.turns++
		turn = s.turns
		s.more.Store(false)
		batch = s.outbox
		s.outbox, s.spare = s.spare, nil
		s.mu.Unlock()
	}
}

// queueOf returns the fifo of the named queue, creating it.
func (s *Store) queueOf(name string) *fifo {
	if q := s.lastQ; q != nil && name == s.lastQName {
		return q
	}
	q := s.queues[name]
	if q == nil {
		q = &fifo{}
		s.queues[name] = q
	}
	s.lastQ, s.lastQName = q, name
	return q
}

// queueNamed returns the fifo of the named queue, or nil when there is
// none.
func (s *Store) queueNamed(name string) *fifo {
	if q := s.lastQ; q != nil && name == s.lastQName {
		return q
	}
	q := s.queues[name]
	if q != nil {
		s.lastQ, s.lastQName = q, name
	}
	return q
}

// newRec returns a rec for j, reusing a freed one; the caller validated j
// and holds the lock.
func (s *Store) newRec(j job.Job, state disposition.State) *rec {
	var r *rec
	if n := len(s.free); n > 0 {
		r = s.free[n-1]
		s.free[n-1] = nil
		s.free = s.free[:n-1]
	} else {
		r = new(rec)
	}
	*r = rec{job: j, checked: true, state: state, hidx: -1}
	return r
}

// freeRec keeps r for reuse once its job left the queue side and nothing
// refers to it; the caller holds the lock.
func (s *Store) freeRec(r *rec) {
	if len(s.free) < 1024 {
		*r = rec{hidx: -1}
		s.free = append(s.free, r)
	}
}

// leased returns the job l leases, or queue.ErrLeaseLost when l is not its
// current lease. The caller holds the lock.
func (s *Store) leased(l queue.Lease) (*rec, error) {
	r := s.jobs[l.JobID]
	if r == nil || r.state != disposition.InFlight || r.token != l.Token && !mutant.On("memstore/no-fencing") {
		return nil, fmt.Errorf("lease %d of job %s: %w", l.Token, l.JobID, queue.ErrLeaseLost)
	}
	return r, nil
}

// checkCompletion validates the job a completion of lease l stores, and
// reports whether keepQueue moved it.
func (s *Store) checkCompletion(l queue.Lease, j *job.Job) (bool, error) {
	if err := job.Validate(j, s.cfg.MaxPayload); err != nil {
		return false, err
	}
	if j.ID != l.JobID {
		return false, &job.InvalidError{Field: "ID", Reason: fmt.Sprintf("is %q; the lease is of job %q", j.ID, l.JobID)}
	}
	return keepQueue(l, j), nil
}

// keepQueue puts j back on the queue lease l was taken from, if it names
// another, and reports whether it did: a completion cannot move a job to
// another queue: it stays where it was leased from (the same rule in every
// backend).
func keepQueue(l queue.Lease, j *job.Job) bool {
	if l.Queue != "" && j.QueueName() != l.Queue {
		j.Queue = l.Queue
		return true
	}
	return false
}

// completion checks j, the job a completion of lease l stores, as
// checkCompletion does, and returns the rec l leases: the validation error
// first, then the lease's, as if checkCompletion and leased ran in turn.
// checked reports whether the job to store is the validated j (not moved
// by keepQueue to the lease's queue, a name nothing validated). The caller
// holds the lock.
//
// A completion usually stores the job it leased, its attempts counted.
// When j has the rec's ID, task and queue, which passed job.Validate when
// the rec's job was stored, only what Validate checks of the other fields
// is checked again: the same verdict without scanning the names.
func (s *Store) completion(l queue.Lease, j *job.Job) (r *rec, checked bool, err error) {
	r = s.jobs[l.JobID]
	if r != nil && r.checked && r.state == disposition.InFlight && r.token == l.Token &&
		j.ID == r.job.ID && j.Task == r.job.Task && j.Queue == r.job.Queue &&
		j.Attempts >= 0 && len(j.Payload) <= s.maxPayload() {
		return r, !keepQueue(l, j), nil
	}
	moved, err := s.checkCompletion(l, j)
	if err != nil {
		return nil, false, err
	}
	r, err = s.leased(l)
	return r, !moved, err
}

// maxPayload is the payload limit job.Validate applies with
// cfg.MaxPayload.
func (s *Store) maxPayload() int {
	if s.cfg.MaxPayload <= 0 {
		return job.DefaultMaxPayload
	}
	return s.cfg.MaxPayload
}

// ownPayload returns j with a payload of its own, so that the caller may
// reuse its buffer.
func ownPayload(j job.Job) job.Job {
	if j.Payload != nil {
		j.Payload = slices.Clone(j.Payload)
	}
	return j
}

var errTTL = errors.New("lease ttl must be positive")

// Enqueue puts a new job at the tail of its queue: see queue.Queue. The
// store keeps its own copy of the payload.
func (s *Store) Enqueue(ctx context.Context, j job.Job, now time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := job.Validate(&j, s.cfg.MaxPayload); err != nil {
		return fmt.Errorf("enqueue: %w", err)
	}
	j = ownPayload(j)
	s.lock()
	defer s.release()
	if s.jobs[j.ID] != nil {
		return fmt.Errorf("enqueue %s: %w", j.ID, queue.ErrDuplicate)
	}
	if d := s.entries[j.ID]; d != nil && !d.corrupt && deadStatus(d.status) {
		return fmt.Errorf("enqueue %s: %w (requeue it from there)", j.ID, queue.ErrDeadLettered)
	}
	r := s.newRec(j, disposition.Queued)
	s.jobs[j.ID] = r
	s.queueOf(j.QueueName()).pushBack(r)
	s.queued++
	s.emitLast(&r.job, disposition.None, disposition.Queued, disposition.Enqueued, now)
	return nil
}

// Dequeue leases the head of the named queue ("" is job.DefaultQueue) until
// now+ttl: see queue.Queue. The returned job's Payload is the store's own
// copy: read it, do not modify it in place.
func (s *Store) Dequeue(ctx context.Context, name string, now time.Time, ttl time.Duration) (job.Job, queue.Lease, bool, error) {
	if err := ctx.Err(); err != nil {
		return job.Job{}, queue.Lease{}, false, err
	}
	if ttl <= 0 {
		return job.Job{}, queue.Lease{}, false, fmt.Errorf("dequeue %s: %w", name, errTTL)
	}
	if name == "" {
		name = job.DefaultQueue
	}
	s.lock()
	defer s.release()
	q := s.queueNamed(name)
	if q == nil || q.n == 0 {
		return job.Job{}, queue.Lease{}, false, nil
	}
	r := q.popFront()
	s.queued--
	s.token++
	r.state, r.token = disposition.InFlight, s.token
	r.setAt(now.Add(ttl))
	s.leases.push(r)
	// The results are taken before the event is delivered: an unshared
	// store's observer hears it at once, and may move the job.
	j, l := r.job, queue.Lease{JobID: r.job.ID, Queue: name, Token: r.token, Expires: r.at}
	s.emitLast(&r.job, disposition.Queued, disposition.InFlight, disposition.Leased, now)
	return j, l, true, nil
}

// Heartbeat extends a lease to now+ttl, keeping its token.
func (s *Store) Heartbeat(ctx context.Context, l queue.Lease, now time.Time, ttl time.Duration) (queue.Lease, error) {
	if err := ctx.Err(); err != nil {
		return queue.Lease{}, err
	}
	if ttl <= 0 {
		return queue.Lease{}, fmt.Errorf("heartbeat %s: %w", l.JobID, errTTL)
	}
	s.lock()
	defer s.release()
	r, err := s.leased(l)
	if err != nil {
		return queue.Lease{}, fmt.Errorf("heartbeat: %w", err)
	}
	s.leases.setAt(r, now.Add(ttl))
	return queue.Lease{JobID: r.job.ID, Queue: r.job.QueueName(), Token: r.token, Expires: r.at}, nil
}

// Ack removes a job whose attempt succeeded; j is the job as the worker
// ends it (its attempts counted), and the succeeded event carries its
// attempts.
func (s *Store) Ack(ctx context.Context, l queue.Lease, j job.Job, now time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.lock()
	defer s.release()
	r, _, err := s.completion(l, &j)
	if err != nil {
		return fmt.Errorf("ack: %w", err)
	}
	s.leases.remove(r)
	delete(s.jobs, r.job.ID)
	s.freeRec(r)
	s.emitLast(&j, disposition.InFlight, disposition.Succeeded, disposition.Acked, now)
	return nil
}

// Retry moves a leased job to the retry schedule, due at `at`, storing j.
func (s *Store) Retry(ctx context.Context, l queue.Lease, j job.Job, at time.Time, now time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	j = ownPayload(j)
	s.lock()
	defer s.release()
	r, checked, err := s.completion(l, &j)
	if err != nil {
		return fmt.Errorf("retry: %w", err)
	}
	s.leases.remove(r)
	r.job, r.checked, r.state = j, checked, disposition.Scheduled
	r.setAt(at)
	s.scheduled.push(r)
	s.emitLast(&r.job, disposition.InFlight, disposition.Scheduled, disposition.RetryLater, now)
	return nil
}

// Release puts a leased job back at the head of its queue, storing j.
func (s *Store) Release(ctx context.Context, l queue.Lease, j job.Job, now time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	j = ownPayload(j)
	s.lock()
	defer s.release()
	r, checked, err := s.completion(l, &j)
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	s.leases.remove(r)
	r.job, r.checked, r.state = j, checked, disposition.Queued
	s.queueOf(j.QueueName()).pushFront(r)
	s.queued++
	s.emitLast(&r.job, disposition.InFlight, disposition.Queued, disposition.Released, now)
	return nil
}

// Divert moves a leased job to the tail of the fallback queue, storing j.
func (s *Store) Divert(ctx context.Context, l queue.Lease, j job.Job, now time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	j = ownPayload(j)
	s.lock()
	defer s.release()
	r, checked, err := s.completion(l, &j)
	if err != nil {
		return fmt.Errorf("divert: %w", err)
	}
	s.leases.remove(r)
	r.job, r.checked, r.state = j, checked, disposition.Fallback
	if mutant.On("memstore/divert-drops-job") {
		delete(s.jobs, r.job.ID)
		return nil
	}
	s.fallback.pushBack(r)
	s.emitLast(&r.job, disposition.InFlight, disposition.Fallback, disposition.Diverted, now)
	return nil
}

// ForwardDue moves up to limit retries due at or before now to the tails
// of their queues, oldest due first, in (due millisecond, job ID) order as
// queue.Queue.ForwardDue requires. A limit below 1 moves nothing.
func (s *Store) ForwardDue(ctx context.Context, now time.Time, limit int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.lock()
	defer s.release()
	n := 0
	for ; n < limit; n++ {
		r := s.scheduled.min()
		if r == nil || compareMs(r.at, now) > 0 && !mutant.On("memstore/retry-due-at-once") {
			break
		}
		s.scheduled.remove(r)
		r.state = disposition.Queued
		s.queueOf(r.job.QueueName()).pushBack(r)
		s.queued++
		s.emit(&r.job, disposition.Scheduled, disposition.Queued, disposition.Due, now)
	}
	return n, nil
}

// RecoverExpired puts up to limit jobs whose lease expired at or before now
// back at the heads of their queues, the earliest-expired first (in (expiry
// millisecond, job ID) order, as ForwardDue's), counting
// the lost attempt when Config.LostLeaseUsesAttempt is set. A limit below 1
// moves nothing.
func (s *Store) RecoverExpired(ctx context.Context, now time.Time, limit int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.lock()
	defer s.release()
	var expired []*rec
	for len(expired) < limit && !mutant.On("memstore/leases-never-recovered") {
		r := s.leases.min()
		if r == nil || compareMs(r.at, now) > 0 {
			break
		}
		s.leases.remove(r)
		expired = append(expired, r)
	}
	// Pushed to the heads latest-expired first, so that the earliest ends
	// up first; the events keep the order of expiry.
	for i := len(expired) - 1; i >= 0; i-- {
		r := expired[i]
		r.state = disposition.Queued
		if s.cfg.LostLeaseUsesAttempt {
			r.job.Attempts++
		}
		s.queueOf(r.job.QueueName()).pushFront(r)
		s.queued++
	}
	for _, r := range expired {
		s.emit(&r.job, disposition.InFlight, disposition.Queued, disposition.LeaseExpired, now)
	}
	return len(expired), nil
}

// DrainBatch moves up to max jobs from the fallback queue to the tails of
// their queues, oldest diverted first, and reports whether more are left.
func (s *Store) DrainBatch(ctx context.Context, now time.Time, max int) (int, bool, error) {
	if err := ctx.Err(); err != nil {
		return 0, false, err
	}
	s.lock()
	defer s.release()
	n := 0
	for ; n < max && s.fallback.n > 0; n++ {
		r := s.fallback.popFront()
		r.state = disposition.Queued
		s.queueOf(r.job.QueueName()).pushBack(r)
		s.queued++
		s.emit(&r.job, disposition.Fallback, disposition.Queued, disposition.Drained, now)
	}
	return n, s.fallback.n > 0, nil
}

// Counts reports how many jobs are where.
func (s *Store) Counts(ctx context.Context) (queue.Counts, error) {
	if err := ctx.Err(); err != nil {
		return queue.Counts{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return queue.Counts{Queued: s.queued, InFlight: s.leases.len(), Scheduled: s.scheduled.len(), Fallback: s.fallback.n, Held: s.held.n}, nil
}
