package memstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/internal/mutant"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/store"
)

// ReasonPurged is the reason of the event a purge emits for each entry whose
// job was dead-lettered (the job leaves the system).
const ReasonPurged = disposition.Purged

// By names who made the status changes the store makes itself.
const (
	// ByWorker is the By of the change a DeadLetter makes.
	ByWorker = "worker"
)

// deadStatus reports whether the job of an entry with that status is
// dead-lettered (Failed, Quarantined or Deleted), as opposed to a Requeued
// record whose job is back in the queue.
func deadStatus(s dlq.Status) bool {
	return s == dlq.Failed || s == dlq.Quarantined || s == dlq.Deleted
}

// newChange returns one status change.
func newChange(now time.Time, from, to dlq.Status, by, reason string) dlq.StatusChange {
	return dlq.StatusChange{At: now, From: from, To: to, By: by, Reason: reason}
}

// admit writes a dead job's entry, new or extended, evicting to make room
// or refusing by the overflow policy, and queues the events and the
// overflow report. from is the job's state (InFlight for DeadLetter, Held
// for FlushHeld, None for Add). A refusal is counted and reported unless
// quiet (the caller decides what to report). asIs writes a new entry
// exactly as e has it (an import: its status and status history kept, no
// status change of its own; the caller checked there is no entry). The
// caller holds the lock and has validated e.Job.
func (s *Store) admit(e dlq.Entry, now time.Time, from disposition.State, by string, quiet, asIs bool) (dlq.AddResult, error) {
	id := e.Job.ID
	old := s.entries[id]
	var next dlq.Entry
	prevStatus := dlq.Status(0)
	switch {
	case asIs && e.Status != 0:
		next = store.Imported(e, now)
	case old == nil || old.corrupt:
		// A corrupt entry cannot be extended: the new one replaces it and
		// keeps its bytes (the same rule in every backend).
		next = e
		next.FirstFailedAt = store.FirstFailure(e, now)
		next.Changes = slices.Clone(e.Changes)
		if old != nil {
			next.Superseded = slices.Clone(old.raw)
		}
	default:
		next = dlq.Decode(id, old.raw)
		prevStatus = next.Status
		next.Job = e.Job
		next.History = dlq.MergeHistory(next.History, e.History)
		if mutant.On("memstore/history-replaced") {
			next.History = e.History
		}
		next.Verdict, next.Reason = e.Verdict, e.Reason
	}
	if !asIs || e.Status == 0 {
		next.SourceQueue = cmp.Or(e.SourceQueue, e.Job.QueueName())
		next.LastFailedAt = store.LastFailure(e, now)
		next.Status = dlq.Failed
		next.Changes = append(next.Changes, newChange(now, prevStatus, dlq.Failed, by, e.Reason))
		next.Corrupt, next.Raw, next.DecodeError = false, nil, ""
	}
	d, err := encodeDent(next)
	if err != nil {
		return dlq.AddResult{}, err
	}

	var evicted []*dent
	counted := &s.heaps[countedHeap]
	needsRoom := old == nil || !s.counts(old)
	// Under reject, a new dead letter never takes room ahead of a held one
	// (the caller flushed the held set into the room first: see
	// flushAhead): while any is held, it is refused as if the DLQ were full.
	behind := s.cfg.Overflow == store.Reject && from != disposition.Held && s.held.n > 0
	if needsRoom && (counted.len() >= s.cfg.DLQCapacity || behind) {
		if s.cfg.Overflow == store.Reject {
			if quiet {
				return dlq.AddResult{}, dlq.ErrFull
			}
			s.rejected++
			s.report(store.Overflow{Namespace: s.cfg.Namespace, Policy: store.Reject, At: now, JobID: id, Capacity: s.cfg.DLQCapacity})
			return dlq.AddResult{}, fmt.Errorf("%d entries of capacity %d, %d held ahead: %w", counted.len(), s.cfg.DLQCapacity, s.held.n, dlq.ErrFull)
		}
		for counted.len() >= s.cfg.DLQCapacity {
			if mutant.On("memstore/evict-without-event") {
				s.remove(counted.min())
				continue
			}
			evicted = append(evicted, counted.min())
			s.drop(counted.min(), now, disposition.Evicted)
		}
		s.evicted += len(evicted)
	}

	if mutant.On("memstore/silent-trim-at-10000") && needsRoom && counted.len() >= 10_000 {
		s.remove(counted.min())
	}
	s.write(old, d)
	if (from != disposition.None || old == nil || prevStatus == dlq.Requeued) && deadStatus(next.Status) {
		s.emit(&next.Job, from, disposition.DeadLettered, disposition.DeadLetter, now)
	}
	res := dlq.AddResult{Created: old == nil}
	if len(evicted) > 0 {
		res.Evicted = make([]string, len(evicted))
		for i, v := range evicted {
			res.Evicted[i] = v.id
		}
		s.report(store.Overflow{
			Namespace: s.cfg.Namespace, Policy: store.EvictOldest, At: now, JobID: id,
			Evicted: slices.Clone(res.Evicted), Capacity: s.cfg.DLQCapacity,
		})
	}
	return res, nil
}

// drop removes an entry (eviction, purge), reporting its job's leaving the
// system when it was dead-lettered. The caller holds the lock.
func (s *Store) drop(d *dent, now time.Time, reason disposition.Reason) {
	s.remove(d)
	if !d.corrupt && deadStatus(d.status) {
		s.emit(&job.Job{ID: d.id, Task: d.task, Attempts: d.attempts}, disposition.DeadLettered, disposition.None, reason, now)
	}
}

// Add records a dead job: a new entry, or the history of an existing one
// extended; under reject, held dead letters take the room first (flushAhead).
// See dlq.Store and the contract in dlqtest.
func (s *Store) Add(ctx context.Context, e dlq.Entry, now time.Time) (dlq.AddResult, error) {
	if err := ctx.Err(); err != nil {
		return dlq.AddResult{}, err
	}
	if err := job.Validate(&e.Job, s.cfg.MaxPayload); err != nil {
		return dlq.AddResult{}, fmt.Errorf("dlq add: %w", err)
	}
	s.mu.Lock()
	defer s.unlock()
	if err := s.flushAhead(e.Job.ID, now); err != nil {
		return dlq.AddResult{}, fmt.Errorf("dlq add %s: %w", e.Job.ID, err)
	}
	res, err := s.admit(e, now, disposition.None, "", false, false)
	if err != nil {
		return res, fmt.Errorf("dlq add %s: %w", e.Job.ID, err)
	}
	return res, nil
}

// DeadLetter moves a leased job into the DLQ in one step, fenced by the
// lease. When the DLQ is full under the reject policy, the same step parks
// the job with its entry in the held set (AddResult.Held); when the held set
// is full too, nothing moves and the job stays in flight under the same
// lease (dlq.ErrFull and dlq.ErrHeldFull). Held dead letters take any room
// first, under the same lock (flushAhead): a new one never overtakes them.
func (s *Store) DeadLetter(ctx context.Context, l queue.Lease, e dlq.Entry, now time.Time) (dlq.AddResult, error) {
	if err := ctx.Err(); err != nil {
		return dlq.AddResult{}, err
	}
	if _, err := s.checkCompletion(l, &e.Job); err != nil {
		return dlq.AddResult{}, fmt.Errorf("dead-letter: %w", err)
	}
	s.mu.Lock()
	defer s.unlock()
	r, err := s.leased(l)
	if err != nil {
		return dlq.AddResult{}, fmt.Errorf("dead-letter: %w", err)
	}
	if err := s.flushAhead(e.Job.ID, now); err != nil {
		return dlq.AddResult{}, fmt.Errorf("dead-letter %s: %w", l.JobID, err)
	}
	res, err := s.admit(e, now, disposition.InFlight, ByWorker, true, false)
	if errors.Is(err, dlq.ErrFull) {
		// Reject: the dead letter is refused, and parked if there is room.
		// The move first, then the report: the order Redis's callers see.
		s.rejected++
		overflow := store.Overflow{Namespace: s.cfg.Namespace, Policy: store.Reject, At: now, JobID: l.JobID, Capacity: s.cfg.DLQCapacity}
		if s.held.n >= s.cfg.HeldCapacity {
			s.report(overflow)
			return res, dlq.HeldFullError("dead-letter", l.JobID, s.cfg.DLQCapacity, s.cfg.HeldCapacity)
		}
		if mutant.On("memstore/full-dlq-drops-job") {
			s.leases.remove(r)
			delete(s.jobs, r.job.ID)
			return dlq.AddResult{}, nil
		}
		s.park(r, e, now)
		overflow.Held = true
		s.report(overflow)
		return dlq.AddResult{Held: true}, nil
	}
	if err != nil {
		return res, fmt.Errorf("dead-letter %s: %w", l.JobID, err)
	}
	s.leases.remove(r)
	delete(s.jobs, r.job.ID)
	s.freeRec(r)
	return res, nil
}

// park moves the in-flight r, whose dead letter is e, to the held set; the
// caller holds the lock and checked the lease.
func (s *Store) park(r *rec, e dlq.Entry, now time.Time) {
	s.leases.remove(r)
	e = ownEntry(e)
	r.job, r.checked, r.state, r.entry = e.Job, false, disposition.Held, &e
	r.setAt(now)
	s.held.pushBack(r)
	s.emit(&r.job, disposition.InFlight, disposition.Held, disposition.HeldBack, now)
}

// ownEntry returns e with slices of its own, so that the caller may reuse
// its buffers.
func ownEntry(e dlq.Entry) dlq.Entry {
	e.Job = ownPayload(e.Job)
	e.History = slices.Clone(e.History)
	e.Changes = slices.Clone(e.Changes)
	e.Superseded = slices.Clone(e.Superseded)
	return e
}

// Hold parks a leased job with its decided dead letter in the held set, in
// one step fenced by the lease (dlq.ErrHeldFull at the bound).
func (s *Store) Hold(ctx context.Context, l queue.Lease, e dlq.Entry, now time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := s.checkCompletion(l, &e.Job); err != nil {
		return fmt.Errorf("hold: %w", err)
	}
	s.mu.Lock()
	defer s.unlock()
	r, err := s.leased(l)
	if err != nil {
		return fmt.Errorf("hold: %w", err)
	}
	if s.held.n >= s.cfg.HeldCapacity {
		return dlq.HeldFullError("hold", l.JobID, 0, s.cfg.HeldCapacity)
	}
	s.park(r, e, now)
	return nil
}

// FlushHeld moves up to limit held jobs into the DLQ, oldest parked first,
// under the lock once, stopping at the first the DLQ refuses.
func (s *Store) FlushHeld(ctx context.Context, now time.Time, limit int) (dlq.FlushResult, error) {
	if err := ctx.Err(); err != nil {
		return dlq.FlushResult{}, err
	}
	s.mu.Lock()
	defer s.unlock()
	return s.flushHeld(now, limit)
}

// flushAhead writes held dead letters into whatever room the DLQ has before
// a new dead letter of job id may take it (reject policy; the caller holds
// the lock): the held ones are written first, oldest first, each with its
// held→dead-lettered event, as FlushHeld writes them — as many as fit,
// which with no room left may still be the oldest, when its own entry
// already counts (its write takes no room). It does nothing when nothing is
// held or when the new one needs no room (it extends an entry already
// counted).
func (s *Store) flushAhead(id string, now time.Time) error {
	if s.cfg.Overflow != store.Reject || s.held.n == 0 {
		return nil
	}
	if old := s.entries[id]; old != nil && s.counts(old) {
		return nil
	}
	_, err := s.flushHeld(now, s.held.n)
	return err
}

// flushHeld is FlushHeld under the lock, which the caller holds.
func (s *Store) flushHeld(now time.Time, limit int) (dlq.FlushResult, error) {
	var res dlq.FlushResult
	for len(res.Written) < limit && s.held.n > 0 {
		r := s.held.buf[s.held.head]
		add, err := s.admit(*r.entry, now, disposition.Held, ByWorker, true, false)
		if errors.Is(err, dlq.ErrFull) {
			res.Full = true
			break
		}
		if err != nil {
			res.Left = s.held.n
			return res, fmt.Errorf("flush held %s: %w", r.job.ID, err)
		}
		s.held.popFront()
		res.Written = append(res.Written, r.job.ID)
		res.Evicted = append(res.Evicted, add.Evicted...)
		delete(s.jobs, r.job.ID)
		s.freeRec(r)
	}
	res.Left = s.held.n
	return res, nil
}

// Get returns one entry, Corrupt when its bytes do not decode.
func (s *Store) Get(ctx context.Context, id string) (dlq.Entry, error) {
	if err := ctx.Err(); err != nil {
		return dlq.Entry{}, err
	}
	s.mu.Lock()
	d := s.entries[id]
	s.mu.Unlock()
	if d == nil {
		return dlq.Entry{}, fmt.Errorf("dlq get %s: %w", id, dlq.ErrNotFound)
	}
	return dlq.Decode(id, d.raw), nil // a dent's bytes never change
}

// List returns up to limit matching entries, newest LastFailedAt first
// (highest ID first among equal times), after cursor.
func (s *Store) List(ctx context.Context, f dlq.Filter, cursor string, limit int) (dlq.Page, error) {
	if err := ctx.Err(); err != nil {
		return dlq.Page{}, err
	}
	if limit < 1 {
		return dlq.Page{}, fmt.Errorf("dlq list: limit %d: must be at least 1", limit)
	}
	f = folded(f)
	var after *dent
	if cursor != "" {
		k, err := parseCursor(cursor)
		if err != nil {
			return dlq.Page{}, fmt.Errorf("dlq list: %w", err)
		}
		after = k
	}

	s.mu.Lock()
	order := s.sorted()
	i := len(order) - 1
	if after != nil {
		i = sort.Search(len(order), func(k int) bool { return !order[k].before(after) }) - 1
	}
	var page []*dent
	for ; i >= 0 && len(page) < limit; i-- {
		if d := order[i]; !d.gone && matches(d, &f) {
			page = append(page, d)
		}
	}
	more := false
	for ; i >= 0 && !more; i-- {
		more = !order[i].gone && matches(order[i], &f)
	}
	s.mu.Unlock()

	p := dlq.Page{Entries: make([]dlq.Entry, len(page))}
	for k, d := range page {
		p.Entries[k] = dlq.Decode(d.id, d.raw)
	}
	if more {
		p.Next = makeCursor(page[len(page)-1])
	}
	return p, nil
}

// Stats summarises the store.
func (s *Store) Stats(ctx context.Context) (dlq.Stats, error) {
	if err := ctx.Err(); err != nil {
		return dlq.Stats{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := dlq.Stats{
		Total:      len(s.entries),
		BySeverity: make(map[string]int, len(s.bySeverity)),
		ByTask:     make(map[string]int, len(s.byTask)),
		ByClass:    make(map[string]int, len(s.byClass)),
		ByStatus:   map[string]int{},
		Corrupt:    s.corrupt,
		Evicted:    s.evicted,
		Rejected:   s.rejected,
		Held:       s.held.n,
	}
	if s.held.n > 0 {
		st.HeldOldest = s.held.buf[s.held.head].at
	}
	for k, v := range s.bySeverity {
		st.BySeverity[k.String()] = v
	}
	for k, v := range s.byTask {
		st.ByTask[k] = v
	}
	for k, v := range s.byClass {
		st.ByClass[k.String()] = v
	}
	for _, status := range dlq.Statuses {
		if n := s.byStatus[status]; n > 0 {
			st.ByStatus[status.String()] = n
		}
	}
	if d := s.heaps[failedHeap].min(); d != nil {
		st.Oldest, st.OldestID = d.at, d.id
	}
	if d := s.heaps[newestHeap].min(); d != nil {
		st.Newest, st.NewestID = d.at, d.id
	}
	return st, nil
}

// PlantRaw stores raw as the bytes of the entry of job id, replacing any,
// the way another writer (or a newer faultline) would have left them: a
// test hook (dlqtest.Harness.Corrupt). Bytes that decode become an
// ordinary entry; bytes that do not are kept as a corrupt entry with no
// known failure time (the zero time: listed last, removed by every Purge).
// No event is emitted.
func (s *Store) PlantRaw(id string, raw []byte) {
	raw = slices.Clone(raw)
	if raw == nil {
		raw = []byte{}
	}
	d := newDent(id, raw, dlq.Decode(id, raw))
	s.mu.Lock()
	defer s.unlock()
	s.write(s.entries[id], d)
}
