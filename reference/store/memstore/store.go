package memstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
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
	jobs      map[string]*rec
	queues    map[string]*fifo
	queued    int
	leases    recHeap // in flight, by expiry
	scheduled recHeap // waiting to retry, by due time
	fallback  fifo
	token     uint64
	seq       uint64
	// free holds recs of jobs that left the queue side, for reuse: the
	// simulator moves millions of jobs through.
	free []*rec

	// The DLQ side, see dlq.go.
	entries map[string]*dent
	heaps   [2]dentHeap
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
	// in order by whoever releases it; spare is its recycled buffer.
	outbox     []note
	spare      []note
	delivering bool
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

// report queues an overflow report; the caller holds the lock.
func (s *Store) report(o store.Overflow) {
	if s.cfg.OnOverflow == nil {
		return
	}
	s.outbox = append(s.outbox, note{overflow: &o})
}

// unlock releases the lock and delivers the queued callbacks, in order,
// without holding it. When another caller is delivering already, it leaves
// its callbacks to that caller, which delivers until the outbox is empty:
// so callbacks keep the order of the moves, and a callback that calls the
// store (even one that moves a job) neither deadlocks nor reorders. A
// callback that panics loses the rest of its batch (the moves stand) and
// the panic reaches the caller; the store goes on working.
func (s *Store) unlock() {
	if s.delivering || len(s.outbox) == 0 {
		s.mu.Unlock()
		return
	}
	s.delivering = true
	batch := s.outbox
	s.outbox, s.spare = s.spare, nil
	s.mu.Unlock()

	done := false
	defer func() {
		if !done { // a callback panicked: let the next caller deliver
			s.mu.Lock()
			s.delivering = false
			s.mu.Unlock()
		}
	}()
	for {
		for i := range batch {
			if n := &batch[i]; n.overflow != nil {
				s.cfg.OnOverflow(*n.overflow)
			} else {
				s.cfg.Observer(n.event)
			}
		}
		clear(batch)
		s.mu.Lock()
		if len(s.outbox) == 0 {
			s.spare = batch[:0]
			s.delivering = false
			done = true
			s.mu.Unlock()
			return
		}
		next := s.outbox
		s.outbox = batch[:0]
		batch = next
		s.mu.Unlock()
	}
}

// queueOf returns the fifo of the named queue, creating it.
func (s *Store) queueOf(name string) *fifo {
	q := s.queues[name]
	if q == nil {
		q = &fifo{}
		s.queues[name] = q
	}
	return q
}

// newRec returns a rec for j, reusing a freed one; the caller holds the
// lock.
func (s *Store) newRec(j job.Job, state disposition.State) *rec {
	var r *rec
	if n := len(s.free); n > 0 {
		r = s.free[n-1]
		s.free[n-1] = nil
		s.free = s.free[:n-1]
	} else {
		r = new(rec)
	}
	*r = rec{job: j, state: state, hidx: -1}
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
	if r == nil || r.state != disposition.InFlight || r.token != l.Token {
		return nil, fmt.Errorf("lease %d of job %s: %w", l.Token, l.JobID, queue.ErrLeaseLost)
	}
	return r, nil
}

// checkCompletion validates the job a completion of lease l stores.
func (s *Store) checkCompletion(l queue.Lease, j *job.Job) error {
	if err := job.Validate(j, s.cfg.MaxPayload); err != nil {
		return err
	}
	if j.ID != l.JobID {
		return &job.InvalidError{Field: "ID", Reason: fmt.Sprintf("is %q; the lease is of job %q", j.ID, l.JobID)}
	}
	if l.Queue != "" && j.QueueName() != l.Queue {
		// A completion cannot move a job to another queue: it stays where
		// it was leased from (the same rule in every backend).
		j.Queue = l.Queue
	}
	return nil
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
	s.mu.Lock()
	defer s.unlock()
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
	s.emit(&r.job, disposition.None, disposition.Queued, disposition.Enqueued, now)
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
	s.mu.Lock()
	defer s.unlock()
	q := s.queues[name]
	if q == nil || q.n == 0 {
		return job.Job{}, queue.Lease{}, false, nil
	}
	r := q.popFront()
	s.queued--
	s.token++
	s.seq++
	r.state, r.token, r.at, r.seq = disposition.InFlight, s.token, now.Add(ttl), s.seq
	s.leases.push(r)
	s.emit(&r.job, disposition.Queued, disposition.InFlight, disposition.Leased, now)
	return r.job, queue.Lease{JobID: r.job.ID, Queue: name, Token: r.token, Expires: r.at}, true, nil
}

// Heartbeat extends a lease to now+ttl, keeping its token.
func (s *Store) Heartbeat(ctx context.Context, l queue.Lease, now time.Time, ttl time.Duration) (queue.Lease, error) {
	if err := ctx.Err(); err != nil {
		return queue.Lease{}, err
	}
	if ttl <= 0 {
		return queue.Lease{}, fmt.Errorf("heartbeat %s: %w", l.JobID, errTTL)
	}
	s.mu.Lock()
	defer s.unlock()
	r, err := s.leased(l)
	if err != nil {
		return queue.Lease{}, fmt.Errorf("heartbeat: %w", err)
	}
	r.at = now.Add(ttl)
	s.leases.fix(r)
	return queue.Lease{JobID: r.job.ID, Queue: r.job.QueueName(), Token: r.token, Expires: r.at}, nil
}

// Ack removes a job whose attempt succeeded; j is the job as the worker
// ends it (its attempts counted), and the succeeded event carries its
// attempts.
func (s *Store) Ack(ctx context.Context, l queue.Lease, j job.Job, now time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.checkCompletion(l, &j); err != nil {
		return fmt.Errorf("ack: %w", err)
	}
	s.mu.Lock()
	defer s.unlock()
	r, err := s.leased(l)
	if err != nil {
		return fmt.Errorf("ack: %w", err)
	}
	s.leases.remove(r)
	delete(s.jobs, r.job.ID)
	s.emit(&j, disposition.InFlight, disposition.Succeeded, disposition.Acked, now)
	s.freeRec(r)
	return nil
}

// Retry moves a leased job to the retry schedule, due at `at`, storing j.
func (s *Store) Retry(ctx context.Context, l queue.Lease, j job.Job, at time.Time, now time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.checkCompletion(l, &j); err != nil {
		return fmt.Errorf("retry: %w", err)
	}
	j = ownPayload(j)
	s.mu.Lock()
	defer s.unlock()
	r, err := s.leased(l)
	if err != nil {
		return fmt.Errorf("retry: %w", err)
	}
	s.leases.remove(r)
	s.seq++
	r.job, r.state, r.at, r.seq = j, disposition.Scheduled, at, s.seq
	s.scheduled.push(r)
	s.emit(&r.job, disposition.InFlight, disposition.Scheduled, disposition.RetryLater, now)
	return nil
}

// Release puts a leased job back at the head of its queue, storing j.
func (s *Store) Release(ctx context.Context, l queue.Lease, j job.Job, now time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.checkCompletion(l, &j); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	j = ownPayload(j)
	s.mu.Lock()
	defer s.unlock()
	r, err := s.leased(l)
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	s.leases.remove(r)
	r.job, r.state = j, disposition.Queued
	s.queueOf(j.QueueName()).pushFront(r)
	s.queued++
	s.emit(&r.job, disposition.InFlight, disposition.Queued, disposition.Released, now)
	return nil
}

// Divert moves a leased job to the tail of the fallback queue, storing j.
func (s *Store) Divert(ctx context.Context, l queue.Lease, j job.Job, now time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.checkCompletion(l, &j); err != nil {
		return fmt.Errorf("divert: %w", err)
	}
	j = ownPayload(j)
	s.mu.Lock()
	defer s.unlock()
	r, err := s.leased(l)
	if err != nil {
		return fmt.Errorf("divert: %w", err)
	}
	s.leases.remove(r)
	r.job, r.state = j, disposition.Fallback
	s.fallback.pushBack(r)
	s.emit(&r.job, disposition.InFlight, disposition.Fallback, disposition.Diverted, now)
	return nil
}

// ForwardDue moves up to limit retries due at or before now to the tails
// of their queues, oldest due first (in scheduling order among equal due
// times). A limit below 1 moves nothing.
func (s *Store) ForwardDue(ctx context.Context, now time.Time, limit int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.unlock()
	n := 0
	for ; n < limit; n++ {
		r := s.scheduled.min()
		if r == nil || r.at.After(now) {
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
// back at the heads of their queues, the earliest-expired first, counting
// the lost attempt when Config.LostLeaseUsesAttempt is set. A limit below 1
// moves nothing.
func (s *Store) RecoverExpired(ctx context.Context, now time.Time, limit int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.unlock()
	var expired []*rec
	for len(expired) < limit {
		r := s.leases.min()
		if r == nil || r.at.After(now) {
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
	s.mu.Lock()
	defer s.unlock()
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
	return queue.Counts{Queued: s.queued, InFlight: len(s.leases), Scheduled: len(s.scheduled), Fallback: s.fallback.n}, nil
}
