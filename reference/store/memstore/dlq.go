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

// counts reports whether an entry counts toward the capacity.
func (s *Store) counts(d *dent) bool {
	if d.corrupt {
		return false
	}
	switch d.status {
	case dlq.Failed, dlq.Quarantined:
		return true
	case dlq.Requeued, dlq.Deleted:
		return s.cfg.CountInactive
	}
	return false
}

// indexMeta adds a dent to the entries and to the counters and heaps;
// the caller holds the lock, and the ID has no dent.
func (s *Store) indexMeta(d *dent) {
	s.entries[d.id] = d
	if d.corrupt {
		s.corrupt++
		return
	}
	s.bySeverity[d.sev]++
	s.byTask[d.task]++
	s.byClass[d.class]++
	s.byStatus[d.status]++
	if s.counts(d) {
		s.heaps[countedHeap].push(d)
	}
	if d.status == dlq.Failed {
		s.heaps[failedHeap].push(d)
		s.heaps[newestHeap].push(d)
	}
}

// unindexMeta undoes indexMeta and marks the dent gone; the caller holds
// the lock.
func (s *Store) unindexMeta(d *dent) {
	delete(s.entries, d.id)
	d.gone = true
	if d.corrupt {
		s.corrupt--
		return
	}
	if s.bySeverity[d.sev]--; s.bySeverity[d.sev] == 0 {
		delete(s.bySeverity, d.sev)
	}
	if s.byTask[d.task]--; s.byTask[d.task] == 0 {
		delete(s.byTask, d.task)
	}
	if s.byClass[d.class]--; s.byClass[d.class] == 0 {
		delete(s.byClass, d.class)
	}
	s.byStatus[d.status]--
	s.heaps[countedHeap].remove(d)
	s.heaps[failedHeap].remove(d)
	s.heaps[newestHeap].remove(d)
}

// The time index (order) is kept sorted by (LastFailedAt, ID) as long as
// entries arrive in that order, which they do when time moves forward; an
// entry written out of order marks it dirty, and the next reader rebuilds
// it from the entries (O(n log n)). A status change keeps the entry's key,
// so its new dent takes the old one's place. Removed dents stay in place,
// marked gone, until they make up half of it.

// remember adds a new dent to the time index.
func (s *Store) remember(d *dent) {
	if s.orderDirty {
		return
	}
	if len(s.order) == 0 || !d.before(s.order[len(s.order)-1]) {
		s.order = append(s.order, d)
		return
	}
	s.orderDirty, s.order, s.orderGone = true, nil, 0
}

// forget accounts for a gone dent left in the time index, compacting it
// when gone dents make up half of it.
func (s *Store) forget() {
	if s.orderDirty {
		return
	}
	s.orderGone++
	if s.orderGone > 1024 && 2*s.orderGone > len(s.order) {
		n := 0
		for _, d := range s.order {
			if !d.gone {
				s.order[n] = d
				n++
			}
		}
		clear(s.order[n:])
		s.order, s.orderGone = s.order[:n], 0
	}
}

// replaceInOrder puts d in old's place in the time index when both have
// the same key, and reports whether it did.
func (s *Store) replaceInOrder(old, d *dent) bool {
	if s.orderDirty || compareDents(old, d) != 0 {
		return false
	}
	for i := sort.Search(len(s.order), func(k int) bool { return !s.order[k].before(old) }); i < len(s.order) && compareDents(s.order[i], old) == 0; i++ {
		if s.order[i] == old {
			s.order[i] = d
			return true
		}
	}
	return false
}

// encodeDent encodes e as the dent of its job.
func encodeDent(e dlq.Entry) (*dent, error) {
	raw, err := dlq.Encode(e)
	if err != nil {
		return nil, err
	}
	e.Version = dlq.EncodingVersion
	return newDent(e.Job.ID, raw, e), nil
}

// write stores d, replacing old (nil for a new entry); the caller holds
// the lock.
func (s *Store) write(old, d *dent) {
	if old != nil {
		s.unindexMeta(old)
		if s.replaceInOrder(old, d) {
			s.indexMeta(d)
			return
		}
		s.forget()
	}
	s.indexMeta(d)
	s.remember(d)
}

// remove deletes d from the store; the caller holds the lock.
func (s *Store) remove(d *dent) {
	s.unindexMeta(d)
	s.forget()
}

// sorted returns the time index, sorted by (LastFailedAt, ID), rebuilding
// it first when it is dirty; it may hold gone dents, which readers skip.
// The caller holds the lock.
func (s *Store) sorted() []*dent {
	if s.orderDirty {
		order := make([]*dent, 0, len(s.entries))
		for _, d := range s.entries {
			order = append(order, d)
		}
		slices.SortFunc(order, compareDents)
		s.order, s.orderGone, s.orderDirty = order, 0, false
	}
	for len(s.order) > 0 && s.order[0].gone { // purged from the front
		s.order[0] = nil
		s.order = s.order[1:]
		s.orderGone--
	}
	return s.order
}

// matches reports whether d passes every field of f, whose ErrorText is
// folded (dlq.FoldText). A corrupt entry passes only a filter that asks about
// nothing but time.
func matches(d *dent, f *dlq.Filter) bool {
	if d.corrupt {
		if len(f.Severities)+len(f.Tasks)+len(f.Classes)+len(f.ErrorTypes)+len(f.Statuses) > 0 || f.ErrorText != "" {
			return false
		}
	} else if len(f.Severities) > 0 && !slices.Contains(f.Severities, d.sev) ||
		len(f.Tasks) > 0 && !slices.Contains(f.Tasks, d.task) ||
		len(f.Classes) > 0 && !slices.Contains(f.Classes, d.class) ||
		len(f.ErrorTypes) > 0 && !slices.Contains(f.ErrorTypes, d.errType) ||
		len(f.Statuses) > 0 && !slices.Contains(f.Statuses, d.status) ||
		f.ErrorText != "" && !dlq.ContainsFold(d.errText, f.ErrorText) {
		return false
	}
	return (f.Since.IsZero() || !d.at.Before(f.Since)) && (f.Until.IsZero() || d.at.Before(f.Until))
}

// folded returns f with its ErrorText folded, as matches takes it.
func folded(f dlq.Filter) dlq.Filter {
	f.ErrorText = dlq.FoldText(f.ErrorText)
	return f
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

// checkOptions validates a requeue's options.
func checkOptions(opts dlq.RequeueOptions) error {
	if opts.Budget != dlq.OneMoreAttempt && opts.Budget != dlq.ResetAttempts {
		return fmt.Errorf("requeue options: Budget %d: must be OneMoreAttempt or ResetAttempts (the caller decides): %w", opts.Budget, dlq.ErrInvalidOptions)
	}
	return nil
}

// outcome says what a requeue of d would do; the caller holds the lock.
func (s *Store) outcome(d *dent, auto bool) dlq.RequeueOutcome {
	switch {
	case d == nil:
		return dlq.OutcomeNotFound
	case d.corrupt, d.status == dlq.Deleted, d.status == dlq.Quarantined && auto:
		return dlq.OutcomeNotRequeueable
	case d.status == dlq.Requeued:
		return dlq.OutcomeAlreadyRequeued
	case s.jobs[d.id] != nil:
		return dlq.OutcomeBusy
	}
	return dlq.OutcomeRequeued
}

// requeue sends d's job to the tail of its target queue and marks the entry
// Requeued; the caller holds the lock and checked the outcome.
func (s *Store) requeue(d *dent, opts dlq.RequeueOptions, now time.Time) error {
	e := dlq.Decode(d.id, d.raw)
	j := e.Job
	if opts.Budget == dlq.ResetAttempts && !mutant.On("memstore/requeue-ignores-budget") {
		j.Attempts = 0
	}
	if target := cmp.Or(opts.Queue, e.SourceQueue, j.QueueName()); target != j.QueueName() {
		j.Queue = target
	}
	if err := job.Validate(&j, s.cfg.MaxPayload); err != nil {
		return err
	}
	e.Changes = append(e.Changes, newChange(now, e.Status, dlq.Requeued, opts.By, ""))
	e.Status = dlq.Requeued
	e.Requeues++
	if opts.Auto {
		e.AutoRetries++
	}
	nd, err := encodeDent(e)
	if err != nil {
		return err
	}
	s.write(d, nd)
	r := s.newRec(j, disposition.Queued)
	s.jobs[j.ID] = r
	s.queueOf(j.QueueName()).pushBack(r)
	s.queued++
	s.emit(&r.job, disposition.DeadLettered, disposition.Queued, disposition.Requeued, now)
	return nil
}

// Requeue sends one entry's job back to a queue.
func (s *Store) Requeue(ctx context.Context, id string, opts dlq.RequeueOptions, now time.Time) (dlq.RequeueOutcome, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := checkOptions(opts); err != nil {
		return 0, fmt.Errorf("requeue %s: %w", id, err)
	}
	s.mu.Lock()
	defer s.unlock()
	d := s.entries[id]
	o := s.outcome(d, opts.Auto)
	if o != dlq.OutcomeRequeued {
		return o, nil
	}
	if err := s.requeue(d, opts, now); err != nil {
		return 0, fmt.Errorf("requeue %s: %w", id, err)
	}
	return o, nil
}

// picks reports whether RequeueMatching (and DeleteMatching) picks d, with
// f folded: see dlqtest for the rule. auto says the run is the auto-retry's.
func picks(d *dent, f *dlq.Filter, auto bool, now time.Time) bool {
	if d.gone || d.corrupt || !d.at.Before(now) && !mutant.On("memstore/requeue-no-cutoff") || !matches(d, f) {
		return false
	}
	if len(f.Statuses) == 0 {
		return d.status == dlq.Failed
	}
	return d.status == dlq.Failed || d.status == dlq.Quarantined && !auto
}

// pickAll returns the dents pick selects, oldest first, under the lock
// once: a bulk run's matches, each dent standing for the revision read (a
// write replaces an entry's dent).
func (s *Store) pickAll(pick func(d *dent) bool) []*dent {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*dent
	for _, d := range s.sorted() {
		if pick(d) {
			out = append(out, d)
		}
	}
	return out
}

// unchanged reports whether d, read by a bulk run, is still its entry, and
// counts the skip when it is not (Gone when the entry was removed, Changed
// when it was written since). The caller holds the lock.
func (s *Store) unchanged(d *dent, res *dlq.BulkResult) bool {
	switch cur := s.entries[d.id]; {
	case cur == nil:
		res.Gone++
	case cur != d:
		res.Changed++
	default:
		return true
	}
	res.Skipped++
	return false
}

// bulk runs a bulk move over picked, in steps of at most Config.BatchSize
// entries, each step under the lock once; between steps other callers run.
// move moves one unchanged entry and reports whether it did (else it
// counted the skip); the moves are counted in res.Requeued.
// The step hook h (op named hop for it), when set, is called after each
// step that leaves entries to move.
func (s *Store) bulk(ctx context.Context, op string, h StepHook, hop string, picked []*dent, res *dlq.BulkResult, move func(d *dent) (bool, error)) error {
	for len(picked) > 0 {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s: after %d of %d: %w", op, res.Requeued, res.Matched, err)
		}
		batch := picked[:min(len(picked), s.cfg.BatchSize)]
		picked = picked[len(batch):]
		if err := s.bulkStep(batch, res, move); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		if len(picked) > 0 {
			if err := s.interleave(ctx, h, hop, res.Batches, picked); err != nil {
				return fmt.Errorf("%s: %w", op, err)
			}
		}
	}
	return nil
}

// bulkStep is one step of bulk.
func (s *Store) bulkStep(batch []*dent, res *dlq.BulkResult, move func(d *dent) (bool, error)) error {
	s.mu.Lock()
	defer s.unlock()
	res.Batches++
	for _, d := range batch {
		if !s.unchanged(d, res) && !mutant.On("memstore/bulk-no-recheck") {
			continue
		}
		ok, err := move(d)
		if err != nil {
			return fmt.Errorf("%s: %w", d.id, err)
		}
		if ok {
			res.Requeued++
		}
	}
	return nil
}

// RequeueMatching requeues the entries matching f that failed before now,
// oldest first, in steps of at most Config.BatchSize entries, each step
// under the lock once; between steps other callers run. The entries are
// picked when the run begins; one that changed since (requeued by another
// run, failed again, edited, deleted: Changed), was purged (Gone), whose
// job is busy (Busy) or that cannot be requeued as it is (a payload over
// Config.MaxPayload: Invalid) is skipped.
func (s *Store) RequeueMatching(ctx context.Context, f dlq.Filter, opts dlq.RequeueOptions, now time.Time, dryRun bool) (dlq.BulkResult, error) {
	res := dlq.BulkResult{DryRun: dryRun}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if err := checkOptions(opts); err != nil {
		return res, fmt.Errorf("requeue matching: %w", err)
	}
	f = folded(f)
	h := s.hookOf()
	if err := s.interleave(ctx, h, OpRequeueMatching, 0, nil); err != nil {
		return res, fmt.Errorf("requeue matching: %w", err)
	}
	picked := s.pickAll(func(d *dent) bool { return picks(d, &f, opts.Auto, now) })
	res.Matched = len(picked)
	if dryRun {
		return res, nil
	}
	move := func(d *dent) (bool, error) {
		if s.jobs[d.id] != nil {
			res.Busy++
			res.Skipped++
			return false, nil
		}
		err := s.requeue(d, opts, now)
		if errors.Is(err, job.ErrInvalid) {
			res.Invalid++
			res.Skipped++
			return false, nil
		}
		return err == nil, err
	}
	for done := 0; mutant.On("memstore/requeue-by-position") && done < res.Matched; done += s.cfg.BatchSize {
		// The mutant re-picks each batch by its position in the matches.
		cur := s.pickAll(func(d *dent) bool { return picks(d, &f, opts.Auto, now) })
		picked = cur[min(done, len(cur)):min(done+s.cfg.BatchSize, len(cur))]
		if err := s.bulk(ctx, "requeue matching", h, OpRequeueMatching, picked, &res, move); err != nil || done+s.cfg.BatchSize >= res.Matched {
			return res, err
		}
	}
	err := s.bulk(ctx, "requeue matching", h, OpRequeueMatching, picked, &res, move)
	return res, err
}

// setStatus makes one status change of an entry: change checks the
// entry's status (dlq.ErrWrongStatus) and edits it. A corrupt entry is
// refused with dlq.ErrWrongStatus, an unknown ID with dlq.ErrNotFound.
func (s *Store) setStatus(ctx context.Context, op, id string, now time.Time, change func(e *dlq.Entry) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.unlock()
	d := s.entries[id]
	switch {
	case d == nil:
		return fmt.Errorf("%s %s: %w", op, id, dlq.ErrNotFound)
	case d.corrupt:
		return fmt.Errorf("%s %s: the entry does not decode: %w", op, id, dlq.ErrWrongStatus)
	}
	e := dlq.Decode(id, d.raw)
	if err := change(&e); err != nil {
		return fmt.Errorf("%s %s: %w", op, id, err)
	}
	nd, err := encodeDent(e)
	if err != nil {
		return fmt.Errorf("%s %s: %w", op, id, err)
	}
	s.write(d, nd)
	return nil
}

// wrongStatus reports a status that does not allow a move.
func wrongStatus(s dlq.Status) error {
	return fmt.Errorf("entry is %s: %w", s, dlq.ErrWrongStatus)
}

// Delete soft-deletes a Failed or Quarantined entry.
func (s *Store) Delete(ctx context.Context, id, by string, now time.Time) error {
	return s.setStatus(ctx, "dlq delete", id, now, func(e *dlq.Entry) error {
		if e.Status != dlq.Failed && e.Status != dlq.Quarantined {
			return wrongStatus(e.Status)
		}
		e.Changes = append(e.Changes, newChange(now, e.Status, dlq.Deleted, by, ""))
		e.Status = dlq.Deleted
		return nil
	})
}

// Restore gives a Deleted entry back the status it had.
func (s *Store) Restore(ctx context.Context, id, by string, now time.Time) error {
	return s.setStatus(ctx, "dlq restore", id, now, func(e *dlq.Entry) error {
		if e.Status != dlq.Deleted {
			return wrongStatus(e.Status)
		}
		to := dlq.Failed
		if n := len(e.Changes); n > 0 && e.Changes[n-1].To == dlq.Deleted && e.Changes[n-1].From == dlq.Quarantined {
			to = dlq.Quarantined
		}
		e.Changes = append(e.Changes, newChange(now, dlq.Deleted, to, by, ""))
		e.Status = to
		return nil
	})
}

// Quarantine marks a Failed entry as poison.
func (s *Store) Quarantine(ctx context.Context, id, reason string, now time.Time) error {
	return s.setStatus(ctx, "dlq quarantine", id, now, func(e *dlq.Entry) error {
		if e.Status != dlq.Failed {
			return wrongStatus(e.Status)
		}
		e.Changes = append(e.Changes, newChange(now, dlq.Failed, dlq.Quarantined, "", reason))
		e.Status = dlq.Quarantined
		return nil
	})
}

// Purge removes the entries, of any status and corrupt ones too, whose last
// failure is in a millisecond before olderThan's (dlq.Store.Purge), oldest
// first, in steps of at most Config.BatchSize entries, and returns how many
// it removed.
func (s *Store) Purge(ctx context.Context, olderThan time.Time, now time.Time) (int, error) {
	total := 0
	for {
		if err := ctx.Err(); err != nil {
			return total, fmt.Errorf("dlq purge: after %d: %w", total, err)
		}
		n := s.purgeBatch(olderThan, now)
		total += n
		if n < s.cfg.BatchSize {
			return total, nil
		}
	}
}

// purgeBatch is one step of Purge.
func (s *Store) purgeBatch(olderThan, now time.Time) int {
	s.mu.Lock()
	defer s.unlock()
	// Pick first, drop after: dropping may compact the time index, which
	// must not happen under a range over it.
	var victims []*dent
	for _, d := range s.sorted() {
		if len(victims) == s.cfg.BatchSize || compareMs(d.at, olderThan) >= 0 {
			break
		}
		if !d.gone {
			victims = append(victims, d)
		}
	}
	for _, d := range victims {
		s.drop(d, now, ReasonPurged)
	}
	return len(victims)
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
