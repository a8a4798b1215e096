package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/queue"
)

// Enqueue puts a new job at the tail of its queue (queue.Queue).
func (s *Store) Enqueue(ctx context.Context, j job.Job, now time.Time) error {
	if err := job.Validate(&j, s.cfg.MaxPayload); err != nil {
		return fmt.Errorf("enqueue: %w", err)
	}
	data, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("enqueue %s: %w", j.ID, err)
	}
	r, err := s.runAt(ctx, now, enqueueScript, j.ID, j.QueueName(), data, j.Task, j.Attempts)
	if err != nil {
		return fmt.Errorf("enqueue %s: %w", j.ID, err)
	}
	if err := enqueueAnswer(j.ID, r); err != nil {
		return err
	}
	s.emit(disposition.Event{JobID: j.ID, Task: j.Task, From: disposition.None, To: disposition.Queued,
		Reason: disposition.Enqueued, At: now, Attempts: j.Attempts})
	return nil
}

// enqueueAnswer is the error of the enqueue script's reply r for job id:
// nil when it enqueued the job.
func enqueueAnswer(id string, r any) error {
	switch asInt(r) {
	case 0:
		return fmt.Errorf("enqueue %s: %w", id, queue.ErrDuplicate)
	case 2:
		return fmt.Errorf("enqueue %s: %w (requeue it from there)", id, queue.ErrDeadLettered)
	}
	return nil
}

// EnqueueMany enqueues jobs as Enqueue does each, in one round trip: a
// pipeline of Enqueue's script, one call a job, so each job's enqueue is
// atomic on its own and Redis runs them one after another. errs[i] is
// jobs[i]'s answer as Enqueue gives it (queue.ErrDuplicate,
// queue.ErrDeadLettered, or the store's error: a job whose answer was lost
// may or may not be enqueued, and enqueueing it again says which). A
// producer with many jobs due at once (a drill's burst of 10,050) pays one
// round trip for them, not one each, which on a loaded machine is what
// decides whether they are made in time.
func (s *Store) EnqueueMany(ctx context.Context, jobs []job.Job, now time.Time) (errs []error) {
	errs = make([]error, len(jobs))
	done := make([]bool, len(jobs)) // answered (enqueued, or errs says why not)
	fail := func(err error) []error {
		for i := range errs {
			if !done[i] {
				errs[i] = fmt.Errorf("enqueue %s: %w", jobs[i].ID, err)
			}
		}
		return errs
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	if err := s.guardWrite(ctx, enqueueScript); err != nil {
		return fail(err)
	}
	at := millis(now)
	args := make([][]any, len(jobs))
	for i := range jobs {
		j := &jobs[i]
		if err := job.Validate(j, s.cfg.MaxPayload); err != nil {
			errs[i], done[i] = fmt.Errorf("enqueue: %w", err), true
			continue
		}
		data, err := json.Marshal(*j)
		if err != nil {
			errs[i], done[i] = fmt.Errorf("enqueue %s: %w", j.ID, err), true
			continue
		}
		args[i] = []any{j.ID, j.QueueName(), data, j.Task, j.Attempts, at, s.cfg.EventStream}
	}
	// EVALSHA first; a Redis that has not got the script yet (NOSCRIPT:
	// that call ran nothing) gets it loaded and the call sent again.
	for try := 0; ; try++ {
		pipe := s.rdb.Pipeline()
		cmds := make([]*redis.Cmd, len(jobs))
		for i := range jobs {
			if !done[i] {
				// As scripter sends a script: a command the client must
				// not send again by itself (a cluster client replays a
				// pipeline after a lost connection, and a job this call
				// made would come back as a duplicate, its event lost).
				all := make([]any, 0, 3+len(s.keys)+len(args[i]))
				all = append(all, "evalsha", enqueueScript.Hash(), len(s.keys))
				for _, k := range s.keys {
					all = append(all, k)
				}
				cmds[i] = redis.NewCmd(ctx, append(all, args[i]...)...)
				_ = pipe.Process(ctx, noRetryCmd{cmds[i]})
			}
		}
		_, _ = pipe.Exec(ctx)
		noScript := false
		for i, c := range cmds {
			if c == nil {
				continue
			}
			r, err := c.Result()
			switch {
			case err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") && try == 0:
				noScript = true
				continue
			case err != nil:
				errs[i] = fmt.Errorf("enqueue %s: %w", jobs[i].ID, err)
			default:
				if errs[i] = enqueueAnswer(jobs[i].ID, r); errs[i] != nil {
					break
				}
				s.emit(disposition.Event{JobID: jobs[i].ID, Task: jobs[i].Task, From: disposition.None, To: disposition.Queued,
					Reason: disposition.Enqueued, At: now, Attempts: jobs[i].Attempts})
			}
			done[i] = true
		}
		if !noScript {
			return errs
		}
		if err := enqueueScript.Load(ctx, s.rdb).Err(); err != nil {
			return fail(fmt.Errorf("load scripts: %w", err))
		}
	}
}

// Dequeue leases the job at the head of the named queue until now+ttl
// (queue.Queue). It never blocks.
func (s *Store) Dequeue(ctx context.Context, q string, now time.Time, ttl time.Duration) (job.Job, queue.Lease, bool, error) {
	if q == "" {
		q = job.DefaultQueue
	}
	if ttl <= 0 {
		return job.Job{}, queue.Lease{}, false, fmt.Errorf("dequeue %s: lease ttl %v is not positive", q, ttl)
	}
	expires := now.Add(ttl)
	r, err := s.runAt(ctx, now, dequeueScript, q, millis(expires), strayBound)
	if errors.Is(err, redis.Nil) {
		return job.Job{}, queue.Lease{}, false, nil
	}
	if err != nil {
		return job.Job{}, queue.Lease{}, false, fmt.Errorf("dequeue %s: %w", q, err)
	}
	v := asSlice(r)
	if len(v) != 4 {
		return job.Job{}, queue.Lease{}, false, fmt.Errorf("dequeue %s: unexpected reply %v", q, r)
	}
	j, l, err := s.leased(q, v, now, expires)
	if err != nil {
		return job.Job{}, queue.Lease{}, false, err
	}
	return j, l, true, nil
}

// leased reads the lease a script made from queue q, {id, job JSON,
// attempts, token}, and reports it.
func (s *Store) leased(q string, v []any, now, expires time.Time) (job.Job, queue.Lease, error) {
	id := asString(v[0])
	var j job.Job
	if err := json.Unmarshal([]byte(asString(v[1])), &j); err != nil {
		// The job is leased: its lease expires and RecoverExpired puts it
		// back, so nothing is lost by reporting this.
		return job.Job{}, queue.Lease{}, fmt.Errorf("dequeue %s: job %s: %w", q, id, err)
	}
	j.Attempts = int(asInt(v[2]))
	l := queue.Lease{JobID: id, Queue: j.QueueName(), Token: uint64(asInt(v[3])), Expires: expires}
	s.emit(disposition.Event{JobID: id, Task: j.Task, From: disposition.Queued, To: disposition.InFlight,
		Reason: disposition.Leased, At: now, Attempts: j.Attempts})
	return j, l, nil
}

// leaseErr turns a fence refusal into an error: always queue.ErrLeaseLost,
// and queue.ErrNotFound too when the job is nowhere in the queue any more.
func leaseErr(op string, l queue.Lease, why string) error {
	if why == "gone" {
		return fmt.Errorf("%s %s: %w (%w)", op, l.JobID, queue.ErrLeaseLost, queue.ErrNotFound)
	}
	return fmt.Errorf("%s %s: %w", op, l.JobID, queue.ErrLeaseLost)
}

// notLeased refuses a completion carrying another job than the lease's.
func notLeased(id string) error {
	return &job.InvalidError{Field: "ID", Reason: fmt.Sprintf("%q is not the leased job", id)}
}

func token(l queue.Lease) string { return fmt.Sprint(l.Token) }

// Heartbeat extends a lease to now+ttl (queue.Queue).
func (s *Store) Heartbeat(ctx context.Context, l queue.Lease, now time.Time, ttl time.Duration) (queue.Lease, error) {
	if ttl <= 0 {
		return l, fmt.Errorf("heartbeat %s: lease ttl %v is not positive", l.JobID, ttl)
	}
	expires := now.Add(ttl)
	r, err := s.run(ctx, heartbeatScript, l.JobID, token(l), millis(expires))
	if err != nil {
		return l, fmt.Errorf("heartbeat %s: %w", l.JobID, err)
	}
	if why := asString(r); why != "ok" {
		return l, leaseErr("heartbeat", l, why)
	}
	l.Expires = expires
	return l, nil
}

// Ack removes a job whose attempt succeeded (queue.Queue); j is the job as
// the worker ends it, checked like the other completions, and the succeeded
// event carries its attempts.
func (s *Store) Ack(ctx context.Context, l queue.Lease, j job.Job, now time.Time) error {
	if err := s.ackable(l, &j); err != nil {
		return err
	}
	r, err := s.runAt(ctx, now, ackScript, l.JobID, token(l), j.Task, j.Attempts)
	if err != nil {
		return fmt.Errorf("ack %s: %w", l.JobID, err)
	}
	v := asSlice(r)
	if len(v) != 3 {
		return leaseErr("ack", l, asString(v[0]))
	}
	s.acked(j, now)
	return nil
}

// ackable checks j, the job an ack of l ends, as the completions do.
func (s *Store) ackable(l queue.Lease, j *job.Job) error {
	if err := job.Validate(j, s.cfg.MaxPayload); err != nil {
		return fmt.Errorf("ack %s: %w", l.JobID, err)
	}
	if j.ID != l.JobID {
		return fmt.Errorf("ack %s: %w", l.JobID, notLeased(j.ID))
	}
	if l.Queue != "" && j.QueueName() != l.Queue {
		// The same rule as the other completions (settle): the job stays
		// where it was leased from.
		j.Queue = l.Queue
	}
	return nil
}

// acked reports the ack of j.
func (s *Store) acked(j job.Job, now time.Time) {
	s.emit(disposition.Event{JobID: j.ID, Task: j.Task, From: disposition.InFlight, To: disposition.Succeeded,
		Reason: disposition.Acked, At: now, Attempts: j.Attempts})
}

// AckDequeue acks l's job and leases the head of the first of queues that
// has a job, until now+ttl, in one script (queue.AckDequeuer): a worker's
// steady state is one round trip a job. It never blocks.
func (s *Store) AckDequeue(ctx context.Context, l queue.Lease, j job.Job, queues []string, now time.Time,
	ttl time.Duration) (ack error, next job.Job, nl queue.Lease, i int, ok bool, err error) {
	if ttl <= 0 {
		err = fmt.Errorf("ack %s and dequeue: lease ttl %v is not positive", l.JobID, ttl)
		return err, next, nl, 0, false, err
	}
	if err := s.ackable(l, &j); err != nil {
		return err, next, nl, 0, false, nil
	}
	expires := now.Add(ttl)
	args := make([]any, 0, 6+len(queues))
	args = append(args, l.JobID, token(l), j.Task, j.Attempts, millis(expires), strayBound)
	for _, q := range queues {
		if q == "" {
			q = job.DefaultQueue
		}
		args = append(args, q)
	}
	r, err := s.runAt(ctx, now, ackDequeueScript, args...)
	if err != nil {
		err = fmt.Errorf("ack %s and dequeue: %w", l.JobID, err)
		return err, next, nl, 0, false, err
	}
	v := asSlice(r)
	if len(v) != 2 && len(v) != 6 {
		err = fmt.Errorf("ack %s and dequeue: unexpected reply %v", l.JobID, r)
		return err, next, nl, 0, false, err
	}
	if why := asString(v[0]); why != "ok" {
		ack = leaseErr("ack", l, why)
	} else {
		s.acked(j, now)
	}
	if len(v) == 2 {
		return ack, next, nl, 0, false, nil
	}
	i = int(asInt(v[1])) - 1
	if i < 0 || i >= len(queues) {
		err = fmt.Errorf("ack %s and dequeue: unexpected reply %v", l.JobID, r)
		return ack, next, nl, 0, false, err
	}
	next, nl, err = s.leased(args[6+i].(string), v[2:], now, expires)
	if err != nil {
		return ack, job.Job{}, queue.Lease{}, 0, false, err
	}
	return ack, next, nl, i, true, nil
}

var _ queue.AckDequeuer = (*Store)(nil)

// settle runs one of the fenced moves of a leased job that store a new copy
// of it (retry, release, divert) and reports it.
func (s *Store) settle(ctx context.Context, op string, sc *redis.Script, l queue.Lease, j job.Job, now time.Time,
	to disposition.State, reason disposition.Reason, extra ...any) error {
	if err := job.Validate(&j, s.cfg.MaxPayload); err != nil {
		return fmt.Errorf("%s %s: %w", op, l.JobID, err)
	}
	if j.ID != l.JobID {
		return fmt.Errorf("%s %s: %w", op, l.JobID, notLeased(j.ID))
	}
	if l.Queue != "" && j.QueueName() != l.Queue {
		// A completion cannot move a job to another queue: it stays where
		// it was leased from (the same rule in every backend).
		j.Queue = l.Queue
	}
	data, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("%s %s: %w", op, l.JobID, err)
	}
	args := append([]any{l.JobID, token(l), data, j.Attempts}, extra...)
	r, err := s.runAt(ctx, now, sc, append(args, j.Task)...)
	if err != nil {
		return fmt.Errorf("%s %s: %w", op, l.JobID, err)
	}
	if why := asString(r); why != "ok" {
		return leaseErr(op, l, why)
	}
	s.emit(disposition.Event{JobID: j.ID, Task: j.Task, From: disposition.InFlight, To: to, Reason: reason, At: now, Attempts: j.Attempts})
	return nil
}

// Retry moves a leased job to the retry schedule, due at `at` (queue.Queue).
func (s *Store) Retry(ctx context.Context, l queue.Lease, j job.Job, at time.Time, now time.Time) error {
	return s.settle(ctx, "retry", retryScript, l, j, now, disposition.Scheduled, disposition.RetryLater, millis(at))
}

// Release puts a leased job back at the head of its queue (queue.Queue).
func (s *Store) Release(ctx context.Context, l queue.Lease, j job.Job, now time.Time) error {
	return s.settle(ctx, "release", releaseScript, l, j, now, disposition.Queued, disposition.Released)
}

// Divert moves a leased job to the fallback (batch) queue (queue.Queue).
func (s *Store) Divert(ctx context.Context, l queue.Lease, j job.Job, now time.Time) error {
	return s.settle(ctx, "divert", divertScript, l, j, now, disposition.Fallback, disposition.Diverted)
}

// bulk runs a bulk queue move in steps of at most BatchSize jobs until limit
// jobs moved or a step finds no more, and reports every move in order; a
// limit below 1 moves nothing. step runs one script for at most n jobs and
// returns the jobs it moved and whether more may be waiting.
func (s *Store) bulk(limit int, step func(n int) ([]moved, bool, error), from, to disposition.State,
	reason disposition.Reason, now time.Time) (total int, more bool, err error) {
	for total < limit {
		var got []moved
		got, more, err = step(min(s.cfg.BatchSize, limit-total))
		total += len(got)
		for _, m := range got {
			s.emit(disposition.Event{JobID: m.id, Task: m.task, From: from, To: to, Reason: reason, At: now, Attempts: m.attempts})
		}
		if err != nil || !more {
			break
		}
	}
	return total, more, err
}

// ForwardDue moves up to limit scheduled retries due at or before now to the
// tails of their queues, oldest due first (queue.Queue), in steps of at most
// BatchSize. A limit below 1 moves nothing.
func (s *Store) ForwardDue(ctx context.Context, now time.Time, limit int) (int, error) {
	n, _, err := s.bulk(limit, func(n int) ([]moved, bool, error) {
		r, err := s.runAt(ctx, now, forwardDueScript, millis(now), n)
		if err != nil {
			return nil, false, fmt.Errorf("forward due retries: %w", err)
		}
		got, examined := triples(asSlice(r))
		return got, examined == int64(n), nil
	}, disposition.Scheduled, disposition.Queued, disposition.Due, now)
	return n, err
}

// RecoverExpired puts up to limit jobs whose lease expired at or before now
// back at the heads of their queues, the earliest-expired first
// (queue.Queue). It reads which leases to take (the processing set is
// ordered by expiry, so they are its first ranks), then moves them in steps
// of at most BatchSize, the latest-expired step first, so that the jobs of
// the whole call land in expiry order ahead of the jobs waiting; each step is
// one script that checks every lease is still expired and in flight. A limit
// below 1 moves nothing.
func (s *Store) RecoverExpired(ctx context.Context, now time.Time, limit int) (int, error) {
	if limit < 1 {
		return 0, nil
	}
	var ids []string
	nowMs := now.UnixMilli()
	for len(ids) < limit {
		n := min(s.cfg.BatchSize, limit-len(ids))
		page, err := s.rdb.ZRangeWithScores(ctx, s.prefix+":processing", int64(len(ids)), int64(len(ids)+n-1)).Result()
		if err != nil {
			return 0, fmt.Errorf("recover expired leases: %w", err)
		}
		for _, z := range page {
			if int64(z.Score) > nowMs {
				page = nil // past the expired prefix
				break
			}
			ids = append(ids, z.Member.(string))
		}
		if len(page) < n {
			break
		}
	}
	useAttempt := "0"
	if s.cfg.LostLeaseUsesAttempt {
		useAttempt = "1"
	}
	total := 0
	for end := len(ids); end > 0; end -= s.cfg.BatchSize {
		args := []any{millis(now), useAttempt}
		for _, id := range ids[max(0, end-s.cfg.BatchSize):end] {
			args = append(args, id)
		}
		r, err := s.runAt(ctx, now, recoverScript, args...)
		if err != nil {
			return total, fmt.Errorf("recover expired leases: %w", err)
		}
		got, _ := triples(asSlice(r))
		total += len(got)
		for _, m := range got {
			s.emit(disposition.Event{JobID: m.id, Task: m.task, From: disposition.InFlight, To: disposition.Queued,
				Reason: disposition.LeaseExpired, At: now, Attempts: m.attempts})
		}
	}
	return total, nil
}

// DrainBatch moves up to max jobs from the fallback queue back to the tails
// of their queues, oldest diverted first (queue.Queue, degrade.Drainer), in
// steps of at most BatchSize; more reports whether jobs remain in the
// fallback queue. A max below 1 moves nothing.
func (s *Store) DrainBatch(ctx context.Context, now time.Time, max int) (int, bool, error) {
	step := func(n int) ([]moved, bool, error) {
		r, err := s.runAt(ctx, now, drainScript, n)
		if err != nil {
			return nil, false, fmt.Errorf("drain fallback queue: %w", err)
		}
		got, remaining := triples(asSlice(r))
		return got, remaining > 0, nil
	}
	if max < 1 { // moves nothing, but says whether jobs wait
		_, more, err := step(0)
		return 0, more, err
	}
	return s.bulk(max, step, disposition.Fallback, disposition.Queued, disposition.Drained, now)
}

// Counts reports how many jobs are where, read at one instant (queue.Queue).
func (s *Store) Counts(ctx context.Context) (queue.Counts, error) {
	r, err := s.run(ctx, countsScript)
	if err != nil {
		return queue.Counts{}, fmt.Errorf("counts: %w", err)
	}
	return parseCounts(r)
}

// parseCounts reads countsScript's reply.
func parseCounts(r any) (queue.Counts, error) {
	v := asSlice(r)
	if len(v) != 5 {
		return queue.Counts{}, fmt.Errorf("counts: unexpected reply %v", r)
	}
	return queue.Counts{Queued: int(asInt(v[0])), InFlight: int(asInt(v[1])), Scheduled: int(asInt(v[2])), Fallback: int(asInt(v[3])), Held: int(asInt(v[4]))}, nil
}
