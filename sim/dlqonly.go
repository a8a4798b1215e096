package sim

// The DLQ-only mode (WithDLQ): a team that keeps its own dead letters but
// uses faultline's work queue plugs in just its DLQ, a dlq.DeadLetters.
// The run's backend is then dlqOnly: faultline's in-memory store for the
// queue, the team's store for the entries. faultline moves the jobs between
// the two, emits their disposition events itself, and checks conservation
// by reading the team's store (the engine's reconcile lists it through
// dlqOnly.List and Stats, at every sample and at the end).

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/memstore"
	"github.com/faultline/faultline/reports"
)

// TeamDLQ is the DLQ a team plugs in with WithDLQ: see dlq.DeadLetters.
// (The name DeadLetters is the metric's.)
type TeamDLQ = dlq.DeadLetters

// DLQCaps are the capabilities a DeadLetters store declares: see dlq.Caps.
type DLQCaps = dlq.Caps

// ErrNotDeclared: a DLQ-only run was asked for an operation its store does
// not declare (delete, quarantine, restore...); see dlq.ErrNotDeclared.
var ErrNotDeclared = dlq.ErrNotDeclared

// The checks a DLQ-only run reports as not done, by name.
const (
	// NotCheckedAtomicity: the store's own atomicity. faultline moves a
	// job between its queue and the team's store in two steps (add, then
	// ack), so a crash of the store between them is not tested.
	NotCheckedAtomicity = "dlq-store-atomic-moves"
	// NotCheckedCapacity: overflow of a bounded DLQ (refuse, hold, write
	// later), when the store does not declare Capacity.
	NotCheckedCapacity = "dlq-capacity"
	// NotCheckedQuarantine: the auto-retry's quarantine of poison entries,
	// when the store does not declare Quarantine.
	NotCheckedQuarantine = "dlq-quarantine"
	// NotCheckedDelete: operators' delete and purge steps, when the store
	// does not declare Delete.
	NotCheckedDelete = "dlq-delete"
)

// reasonDeleted is the reason of the move out of the DLQ of a job whose
// entry an operator deleted from a team's store (which deletes for good).
const reasonDeleted disposition.Reason = "deleted"

// dlqOnly is a Backend made of faultline's memstore (the queue) and a
// team's DeadLetters (the DLQ). It is driven by the simulator's one
// goroutine, like every Backend the engine runs.
type dlqOnly struct {
	queue.Queue // the memstore: Enqueue, Dequeue, Heartbeat... as they are
	mem         *memstore.Store
	team        dlq.DeadLetters
	caps        dlq.Caps
	cfg         store.Config // the world's: its Observer and OnOverflow

	// rewrite replaces the memstore's next event for a job: its ack of a
	// dead-lettered job is a move to the DLQ (or the held set), not a
	// success, and its enqueue of a requeued job a move from the DLQ.
	rewrite map[string]rewriteRule
	// held are the dead letters decided but not written (the team's store
	// full or away), oldest first: the held set, kept by faultline.
	held []heldEntry
	// requeues counts each job's requeues (all, and the auto-retry's): the
	// team's store forgets an entry on requeue, faultline remembers.
	requeues map[string][2]int
	rejected int
	// refused counts the calls answered ErrNotDeclared, by operation.
	refused map[string]int
}

// rewriteRule replaces the memstore's event from state `from` with ev's
// From, To and Reason.
type rewriteRule struct {
	from disposition.State
	ev   disposition.Event
}

type heldEntry struct {
	e  dlq.Entry
	at time.Time
}

var _ Backend = (*dlqOnly)(nil)

// newDLQOnly opens the DLQ-only backend of a run: the memstore under cfg,
// and the team's store from f.
func newDLQOnly(ctx context.Context, env Env, cfg store.Config, f func(context.Context, Env) (TeamDLQ, error)) (*dlqOnly, error) {
	cfg = cfg.WithDefaults()
	if cfg.Overflow != store.Reject {
		return nil, fmt.Errorf("DLQ-only mode: the overflow policy %s needs the store to evict entries, which a DeadLetters store does not report; use reject", cfg.Overflow)
	}
	team, err := f(ctx, env)
	if err != nil {
		return nil, fmt.Errorf("DLQ-only mode: open the team's DLQ store: %w", err)
	}
	if team == nil {
		return nil, errors.New("DLQ-only mode: the team's DLQ factory returned no store")
	}
	c := &dlqOnly{team: team, caps: dlq.CapsOf(team), cfg: cfg,
		rewrite: map[string]rewriteRule{}, requeues: map[string][2]int{}, refused: map[string]int{}}
	mcfg := cfg
	mcfg.Observer, mcfg.OnOverflow = c.observe, nil // the memstore's DLQ stays empty
	c.mem, err = memstore.New(mcfg)
	if err != nil {
		return nil, fmt.Errorf("DLQ-only mode: open the queue: %w", err)
	}
	c.Queue = c.mem
	return c, nil
}

// observe passes the memstore's events on, rewriting the one a move of
// faultline's asked for.
func (c *dlqOnly) observe(e disposition.Event) {
	if r, ok := c.rewrite[e.JobID]; ok && e.From == r.from {
		delete(c.rewrite, e.JobID)
		e.From, e.To, e.Reason = r.ev.From, r.ev.To, r.ev.Reason
	}
	c.emit(e)
}

func (c *dlqOnly) emit(e disposition.Event) {
	if c.cfg.Observer != nil {
		c.cfg.Observer(e)
	}
}

// notDeclared answers an operation the store does not declare.
func (c *dlqOnly) notDeclared(op string) error {
	c.refused[op]++
	return fmt.Errorf("%s: %w: the store does not declare %s", op, ErrNotDeclared, op)
}

// fill completes a dead letter's entry as a dlq.Store writes it.
func (c *dlqOnly) fill(e dlq.Entry, now time.Time) dlq.Entry {
	e.Version = dlq.EncodingVersion
	e.LastFailedAt = store.LastFailure(e, now)
	e.FirstFailedAt = store.FirstFailure(e, now)
	if e.SourceQueue == "" {
		e.SourceQueue = e.Job.QueueName()
	}
	e.Changes = append(slices.Clip(e.Changes), dlq.StatusChange{At: now, To: dlq.Failed})
	e.Status = dlq.Failed
	n := c.requeues[e.Job.ID]
	e.Requeues, e.AutoRetries = max(e.Requeues, n[0]), max(e.AutoRetries, n[1])
	return e
}

// ackAs removes a leased job from the queue, its event rewritten to a move
// to `to`.
func (c *dlqOnly) ackAs(ctx context.Context, l queue.Lease, j job.Job, to disposition.State, reason disposition.Reason, now time.Time) error {
	c.rewrite[j.ID] = rewriteRule{disposition.InFlight, disposition.Event{From: disposition.InFlight, To: to, Reason: reason}}
	err := c.mem.Ack(ctx, l, j, now)
	delete(c.rewrite, j.ID)
	return err
}

// leaseHeld reports whether l is still the job's lease, without moving it.
func (c *dlqOnly) leaseHeld(ctx context.Context, l queue.Lease, now time.Time) error {
	_, err := c.mem.Heartbeat(ctx, l, now, max(l.Expires.Sub(now), time.Millisecond))
	return err
}

// Counts are the queue's, and the held set faultline keeps.
func (c *dlqOnly) Counts(ctx context.Context) (queue.Counts, error) {
	n, err := c.mem.Counts(ctx)
	n.Held = len(c.held)
	return n, err
}

// Add writes an entry directly (an import): a move from nowhere to the DLQ.
func (c *dlqOnly) Add(ctx context.Context, e dlq.Entry, now time.Time) (dlq.AddResult, error) {
	if err := job.Validate(&e.Job, c.cfg.MaxPayload); err != nil {
		return dlq.AddResult{}, fmt.Errorf("add %s: %w", e.Job.ID, err)
	}
	e = c.fill(e, now)
	if err := c.team.Add(ctx, e); err != nil {
		if errors.Is(err, dlq.ErrFull) {
			c.rejected++
		}
		return dlq.AddResult{}, fmt.Errorf("add %s: %w", e.Job.ID, err)
	}
	c.emit(disposition.Event{JobID: e.Job.ID, Task: e.Job.Task, From: disposition.None, To: disposition.DeadLettered,
		Reason: disposition.DeadLetter, At: now, Attempts: e.Job.Attempts})
	return dlq.AddResult{Created: true}, nil
}

// DeadLetter moves a leased job to the team's store: the lease checked,
// the entry added, then the job acked off the queue (its event rewritten
// to in-flight→dead-lettered). That order loses nothing: a failed add
// leaves the job in flight; a failed ack leaves it in both places, which
// the reading check reports. Under the reject policy, a dead letter the
// store refuses as full, or that would go ahead of held ones, is parked in
// the held set.
func (c *dlqOnly) DeadLetter(ctx context.Context, l queue.Lease, e dlq.Entry, now time.Time) (dlq.AddResult, error) {
	if e.Job.ID != l.JobID {
		return dlq.AddResult{}, fmt.Errorf("dead-letter %s under the lease of %s: %w", e.Job.ID, l.JobID, job.ErrInvalid)
	}
	if err := job.Validate(&e.Job, c.cfg.MaxPayload); err != nil {
		return dlq.AddResult{}, fmt.Errorf("dead-letter %s: %w", e.Job.ID, err)
	}
	if err := c.leaseHeld(ctx, l, now); err != nil {
		return dlq.AddResult{}, fmt.Errorf("dead-letter %s: %w", e.Job.ID, err)
	}
	e = c.fill(e, now)
	if len(c.held) > 0 {
		if _, err := c.FlushHeld(ctx, now, len(c.held)); err != nil {
			return dlq.AddResult{}, fmt.Errorf("dead-letter %s: write the held ones first: %w", e.Job.ID, err)
		}
		if len(c.held) > 0 { // none goes ahead of the held ones
			return c.park(ctx, l, e, now)
		}
	}
	if err := c.team.Add(ctx, e); err != nil {
		if c.caps.Capacity && errors.Is(err, dlq.ErrFull) {
			return c.park(ctx, l, e, now)
		}
		return dlq.AddResult{}, fmt.Errorf("dead-letter %s: %w", e.Job.ID, err)
	}
	if err := c.ackAs(ctx, l, e.Job, disposition.DeadLettered, disposition.DeadLetter, now); err != nil {
		return dlq.AddResult{}, fmt.Errorf("dead-letter %s: the entry is written but the job is still in flight: %w", e.Job.ID, err)
	}
	return dlq.AddResult{Created: true}, nil
}

// park holds a dead letter the full store refused, and reports the
// overflow.
func (c *dlqOnly) park(ctx context.Context, l queue.Lease, e dlq.Entry, now time.Time) (dlq.AddResult, error) {
	c.rejected++
	o := store.Overflow{Namespace: c.cfg.Namespace, Policy: store.Reject, At: now, JobID: e.Job.ID, Capacity: c.cfg.DLQCapacity}
	if len(c.held) >= c.cfg.HeldCapacity {
		if c.cfg.OnOverflow != nil {
			c.cfg.OnOverflow(o)
		}
		return dlq.AddResult{}, dlq.HeldFullError("dead-letter", e.Job.ID, c.cfg.DLQCapacity, c.cfg.HeldCapacity)
	}
	if err := c.hold(ctx, l, e, now); err != nil {
		return dlq.AddResult{}, err
	}
	o.Held = true
	if c.cfg.OnOverflow != nil {
		c.cfg.OnOverflow(o)
	}
	return dlq.AddResult{Held: true}, nil
}

func (c *dlqOnly) hold(ctx context.Context, l queue.Lease, e dlq.Entry, now time.Time) error {
	if err := c.ackAs(ctx, l, e.Job, disposition.Held, disposition.HeldBack, now); err != nil {
		return fmt.Errorf("hold %s: %w", e.Job.ID, err)
	}
	c.held = append(c.held, heldEntry{e: e, at: now})
	return nil
}

// Hold parks a leased job whose dead letter the team's store could not
// take in faultline's held set.
func (c *dlqOnly) Hold(ctx context.Context, l queue.Lease, e dlq.Entry, now time.Time) error {
	if e.Job.ID != l.JobID {
		return fmt.Errorf("hold %s under the lease of %s: %w", e.Job.ID, l.JobID, job.ErrInvalid)
	}
	if len(c.held) >= c.cfg.HeldCapacity {
		return dlq.HeldFullError("hold", e.Job.ID, 0, c.cfg.HeldCapacity)
	}
	return c.hold(ctx, l, c.fill(e, now), now)
}

// FlushHeld writes up to limit held dead letters to the team's store,
// oldest first, and stops at the first it refuses as full.
func (c *dlqOnly) FlushHeld(ctx context.Context, now time.Time, limit int) (dlq.FlushResult, error) {
	var res dlq.FlushResult
	for len(c.held) > 0 && len(res.Written) < limit {
		h := c.held[0]
		if err := c.team.Add(ctx, h.e); err != nil {
			if errors.Is(err, dlq.ErrFull) {
				res.Full = true
				break
			}
			res.Left = len(c.held)
			return res, fmt.Errorf("flush held %s: %w", h.e.Job.ID, err)
		}
		c.held = c.held[1:]
		res.Written = append(res.Written, h.e.Job.ID)
		c.emit(disposition.Event{JobID: h.e.Job.ID, Task: h.e.Job.Task, From: disposition.Held, To: disposition.DeadLettered,
			Reason: disposition.DeadLetter, At: now, Attempts: h.e.Job.Attempts})
	}
	res.Left = len(c.held)
	return res, nil
}

// entries lists the team's store.
func (c *dlqOnly) entries(ctx context.Context) ([]dlq.Entry, error) {
	es, err := c.team.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the team's DLQ store: %w", err)
	}
	return es, nil
}

// Get returns one entry, or dlq.ErrNotFound.
func (c *dlqOnly) Get(ctx context.Context, id string) (dlq.Entry, error) {
	es, err := c.entries(ctx)
	if err != nil {
		return dlq.Entry{}, err
	}
	for _, e := range es {
		if e.Job.ID == id {
			return e, nil
		}
	}
	return dlq.Entry{}, fmt.Errorf("get %s: %w", id, dlq.ErrNotFound)
}

// newestFirst orders entries as dlq.Store.List does: LastFailedAt's
// millisecond, then job ID, descending.
func newestFirst(a, b dlq.Entry) int {
	if c := cmp.Compare(b.LastFailedAt.UnixMilli(), a.LastFailedAt.UnixMilli()); c != 0 {
		return c
	}
	return strings.Compare(b.Job.ID, a.Job.ID)
}

// matches reports whether e is selected by f (dlq.Filter's rule).
func matches(e *dlq.Entry, f *dlq.Filter) bool {
	if e.Corrupt {
		if len(f.Severities)+len(f.Tasks)+len(f.Classes)+len(f.ErrorTypes)+len(f.Statuses) > 0 {
			return false
		}
	} else if len(f.Severities) > 0 && !slices.Contains(f.Severities, e.Severity()) ||
		len(f.Tasks) > 0 && !slices.Contains(f.Tasks, e.Job.Task) ||
		len(f.Classes) > 0 && !slices.Contains(f.Classes, e.Verdict.Class) ||
		len(f.ErrorTypes) > 0 && !slices.Contains(f.ErrorTypes, e.ErrorType()) ||
		len(f.Statuses) > 0 && !slices.Contains(f.Statuses, e.Status) {
		return false
	}
	ms := e.LastFailedAt.UnixMilli()
	return (f.Since.IsZero() || ms >= f.Since.UnixMilli()) && (f.Until.IsZero() || ms < f.Until.UnixMilli())
}

// List lists the team's store by f, newest first; the cursor is the last
// entry's millisecond and job ID.
func (c *dlqOnly) List(ctx context.Context, f dlq.Filter, cursor string, limit int) (dlq.Page, error) {
	es, err := c.entries(ctx)
	if err != nil {
		return dlq.Page{}, err
	}
	es = slices.DeleteFunc(es, func(e dlq.Entry) bool { return !matches(&e, &f) })
	slices.SortFunc(es, newestFirst)
	if cursor != "" {
		ms, id, ok := strings.Cut(cursor, "/")
		n, err := strconv.ParseInt(ms, 10, 64)
		if !ok || err != nil {
			return dlq.Page{}, fmt.Errorf("list: invalid cursor %q", cursor)
		}
		after := dlq.Entry{Job: job.Job{ID: id}, LastFailedAt: time.UnixMilli(n)}
		i, _ := slices.BinarySearchFunc(es, after, func(e, t dlq.Entry) int { return newestFirst(e, t) })
		if i < len(es) && newestFirst(es[i], after) == 0 {
			i++
		}
		es = es[i:]
	}
	if limit <= 0 || limit > len(es) {
		limit = len(es)
	}
	p := dlq.Page{Entries: es[:limit]}
	if limit < len(es) {
		last := es[limit-1]
		p.Next = strconv.FormatInt(last.LastFailedAt.UnixMilli(), 10) + "/" + last.Job.ID
	}
	return p, nil
}

// Stats summarises the team's store and faultline's held set.
func (c *dlqOnly) Stats(ctx context.Context) (dlq.Stats, error) {
	es, err := c.entries(ctx)
	if err != nil {
		return dlq.Stats{}, err
	}
	st := dlq.Stats{Total: len(es), BySeverity: map[string]int{}, ByTask: map[string]int{}, ByClass: map[string]int{},
		ByStatus: map[string]int{}, Rejected: c.rejected, Held: len(c.held)}
	if len(c.held) > 0 {
		st.HeldOldest = c.held[0].at
	}
	for _, e := range es {
		if e.Corrupt {
			st.Corrupt++
			continue
		}
		st.BySeverity[e.Severity().String()]++
		st.ByTask[e.Job.Task]++
		st.ByClass[e.Verdict.Class.String()]++
		st.ByStatus[e.Status.String()]++
		if e.Status == dlq.Failed && (st.OldestID == "" || e.LastFailedAt.UnixMilli() < st.Oldest.UnixMilli() ||
			e.LastFailedAt.UnixMilli() == st.Oldest.UnixMilli() && e.Job.ID < st.OldestID) {
			st.Oldest, st.OldestID = e.LastFailedAt, e.Job.ID
		}
	}
	return st, nil
}

// requeueable says what a requeue of e would do.
func requeueable(e dlq.Entry, auto bool) dlq.RequeueOutcome {
	switch {
	case e.Corrupt || e.Status == dlq.Deleted || e.Status == dlq.Quarantined && auto:
		return dlq.OutcomeNotRequeueable
	case e.Status == dlq.Requeued:
		return dlq.OutcomeAlreadyRequeued
	}
	return dlq.OutcomeRequeued
}

// Requeue takes one entry out of the team's store and enqueues its job.
func (c *dlqOnly) Requeue(ctx context.Context, id string, opts dlq.RequeueOptions, now time.Time) (dlq.RequeueOutcome, error) {
	if opts.Budget != dlq.OneMoreAttempt && opts.Budget != dlq.ResetAttempts {
		return 0, fmt.Errorf("requeue %s: Budget %d: %w", id, opts.Budget, dlq.ErrInvalidOptions)
	}
	e, err := c.Get(ctx, id)
	if errors.Is(err, dlq.ErrNotFound) {
		return dlq.OutcomeNotFound, nil
	}
	if err != nil {
		return 0, fmt.Errorf("requeue %s: %w", id, err)
	}
	if o := requeueable(e, opts.Auto); o != dlq.OutcomeRequeued {
		return o, nil
	}
	j, err := c.team.Requeue(ctx, id)
	if errors.Is(err, dlq.ErrNotFound) {
		return dlq.OutcomeNotFound, nil
	}
	if err != nil {
		return 0, fmt.Errorf("requeue %s: %w", id, err)
	}
	return c.enqueue(ctx, e, j, opts, now)
}

// enqueue puts a job the team's store let go of back on its queue (its
// event rewritten to dead-lettered→queued). A refused enqueue puts the
// entry back, so the job is never in neither place.
func (c *dlqOnly) enqueue(ctx context.Context, e dlq.Entry, j job.Job, opts dlq.RequeueOptions, now time.Time) (dlq.RequeueOutcome, error) {
	if j.ID == "" {
		j = e.Job
	}
	if opts.Budget == dlq.ResetAttempts {
		j.Attempts = 0
	}
	j.Queue = cmp.Or(opts.Queue, e.SourceQueue, j.Queue)
	c.rewrite[j.ID] = rewriteRule{disposition.None, disposition.Event{From: disposition.DeadLettered, To: disposition.Queued, Reason: disposition.Requeued}}
	err := c.mem.Enqueue(ctx, j, now)
	delete(c.rewrite, j.ID)
	if err != nil {
		if aerr := c.team.Add(ctx, e); aerr != nil {
			return 0, fmt.Errorf("requeue %s: enqueue: %w; put the entry back: %w (the job is lost)", j.ID, err, aerr)
		}
		if errors.Is(err, queue.ErrDuplicate) {
			return dlq.OutcomeBusy, nil
		}
		return 0, fmt.Errorf("requeue %s: %w", j.ID, err)
	}
	n := c.requeues[j.ID]
	n[0]++
	if opts.Auto {
		n[1]++
	}
	c.requeues[j.ID] = n
	return dlq.OutcomeRequeued, nil
}

// RequeueMatching requeues the Failed entries matching f that failed
// before now, oldest first: through the store's RequeueMatcher when it
// declares one, else one Requeue at a time.
func (c *dlqOnly) RequeueMatching(ctx context.Context, f dlq.Filter, opts dlq.RequeueOptions, now time.Time, dryRun bool) (dlq.BulkResult, error) {
	res := dlq.BulkResult{DryRun: dryRun}
	if opts.Budget != dlq.OneMoreAttempt && opts.Budget != dlq.ResetAttempts {
		return res, fmt.Errorf("requeue matching: Budget %d: %w", opts.Budget, dlq.ErrInvalidOptions)
	}
	es, err := c.entries(ctx)
	if err != nil {
		return res, err
	}
	quarantined := slices.Contains(f.Statuses, dlq.Quarantined) && !opts.Auto
	es = slices.DeleteFunc(es, func(e dlq.Entry) bool {
		return e.Corrupt || !matches(&e, &f) || e.LastFailedAt.UnixMilli() >= now.UnixMilli() ||
			!(e.Status == dlq.Failed || quarantined && e.Status == dlq.Quarantined)
	})
	slices.SortFunc(es, func(a, b dlq.Entry) int { return newestFirst(b, a) })
	res.Matched = len(es)
	if dryRun || len(es) == 0 {
		return res, nil
	}
	batch := max(c.cfg.BatchSize, 1)
	res.Batches = (len(es) + batch - 1) / batch
	if m, ok := c.team.(dlq.RequeueMatcher); ok && c.caps.RequeueMatching {
		g := f
		g.Until = now
		if len(g.Statuses) == 0 {
			g.Statuses = []dlq.Status{dlq.Failed}
		}
		byID := map[string]dlq.Entry{}
		for _, e := range es {
			byID[e.Job.ID] = e
		}
		jobs, err := m.RequeueMatching(ctx, g, len(es))
		for _, j := range jobs {
			e, ok := byID[j.ID]
			if !ok {
				e = dlq.Entry{Job: j, SourceQueue: j.QueueName()}
			}
			o, eerr := c.enqueue(ctx, e, j, opts, now)
			if eerr != nil {
				return res, eerr
			}
			if o == dlq.OutcomeRequeued {
				res.Requeued++
			}
		}
		res.Skipped = max(res.Matched-res.Requeued, 0)
		if err != nil {
			return res, fmt.Errorf("requeue matching: %w", err)
		}
		return res, nil
	}
	for _, e := range es {
		o, err := c.Requeue(ctx, e.Job.ID, opts, now)
		if err != nil {
			return res, err
		}
		if o == dlq.OutcomeRequeued {
			res.Requeued++
		} else {
			res.Skipped++
		}
	}
	return res, nil
}

// Delete removes an entry from the team's store for good (a team's store
// does not soft-delete): a move out of the DLQ.
func (c *dlqOnly) Delete(ctx context.Context, id, by string, now time.Time) error {
	d, ok := c.team.(dlq.Deleter)
	if !ok || !c.caps.Delete {
		return c.notDeclared("delete")
	}
	return c.remove(ctx, d, id, reasonDeleted, now)
}

func (c *dlqOnly) remove(ctx context.Context, d dlq.Deleter, id string, reason disposition.Reason, now time.Time) error {
	e, err := c.Get(ctx, id)
	if err != nil {
		return fmt.Errorf("delete %s: %w", id, err)
	}
	if !e.Corrupt && e.Status != dlq.Failed && e.Status != dlq.Quarantined {
		return fmt.Errorf("delete %s (%s): %w", id, e.Status, dlq.ErrWrongStatus)
	}
	if err := d.Delete(ctx, id); err != nil {
		return fmt.Errorf("delete %s: %w", id, err)
	}
	c.emit(disposition.Event{JobID: id, Task: e.Job.Task, From: disposition.DeadLettered, To: disposition.None,
		Reason: reason, At: now, Attempts: e.Job.Attempts})
	return nil
}

// Restore is never declared: a team's store deletes for good.
func (c *dlqOnly) Restore(ctx context.Context, id, by string, now time.Time) error {
	return c.notDeclared("restore")
}

// Quarantine marks an entry as poison, when the store declares it.
func (c *dlqOnly) Quarantine(ctx context.Context, id, reason string, now time.Time) error {
	q, ok := c.team.(dlq.Quarantiner)
	if !ok || !c.caps.Quarantine {
		return c.notDeclared("quarantine")
	}
	if err := q.Quarantine(ctx, id, reason); err != nil {
		return fmt.Errorf("quarantine %s: %w", id, err)
	}
	return nil
}

// Purge deletes the entries whose last failure is before olderThan, when
// the store declares delete.
func (c *dlqOnly) Purge(ctx context.Context, olderThan, now time.Time) (int, error) {
	d, ok := c.team.(dlq.Deleter)
	if !ok || !c.caps.Delete {
		return 0, c.notDeclared("purge")
	}
	es, err := c.entries(ctx)
	if err != nil {
		return 0, err
	}
	slices.SortFunc(es, func(a, b dlq.Entry) int { return newestFirst(b, a) })
	n := 0
	for _, e := range es {
		if e.LastFailedAt.UnixMilli() >= olderThan.UnixMilli() {
			continue
		}
		if err := d.Delete(ctx, e.Job.ID); err != nil {
			return n, fmt.Errorf("purge %s: %w", e.Job.ID, err)
		}
		c.emit(disposition.Event{JobID: e.Job.ID, Task: e.Job.Task, From: disposition.DeadLettered, To: disposition.None,
			Reason: disposition.Purged, At: now, Attempts: e.Job.Attempts})
		n++
	}
	return n, nil
}

// annotate says, in a DLQ-only run's result, what was checked and what was
// not: the checks the mode cannot make, those the store's capabilities
// leave out, and the expectations a refused operation left unjudged.
func (c *dlqOnly) annotate(res *reports.Result) {
	if res.Verdict == reports.Errored || res.Verdict == reports.Interrupted {
		return
	}
	skip := func(name, note string) {
		res.Invariants = append(res.Invariants, reports.InvariantResult{Name: name, Verdict: reports.Skipped,
			Note: "not checked in DLQ-only mode: " + note})
	}
	skip(NotCheckedAtomicity, "faultline moves each job between its queue and the team's store in two steps (add, then ack); the store's own atomicity is not tested (a failure between the steps shows as a job in two places)")
	if !c.caps.Capacity {
		skip(NotCheckedCapacity, "the store does not declare capacity: overflow (refuse, hold, write later) is not tested")
	}
	if !c.caps.Quarantine {
		skip(NotCheckedQuarantine, "the store does not declare quarantine")
	}
	if !c.caps.Delete {
		skip(NotCheckedDelete, "the store does not declare delete (nor purge)")
	}
	res.Warnings = append(res.Warnings, fmt.Sprintf("DLQ-only mode: the DLQ is the team's store (%T, declaring %s); faultline moved the jobs, emitted their events and checked conservation by reading the store",
		c.team, declared(c.caps)))
	if len(c.refused) == 0 {
		return
	}
	ops, calls := make([]string, 0, len(c.refused)), 0
	for op, n := range c.refused {
		ops, calls = append(ops, op), calls+n
	}
	slices.Sort(ops)
	why := "not checked: the store does not declare " + strings.Join(ops, ", ")
	res.Warnings = append(res.Warnings, why+fmt.Sprintf(" (%d calls refused): a failed expectation is reported not checked", calls))
	for i := range res.Expectations {
		if e := &res.Expectations[i]; e.Verdict == reports.Failed {
			e.Actual, e.Verdict = why+" (it read: "+e.Actual+")", reports.Skipped
		}
	}
	if res.Verdict == reports.Failed && len(res.Violations) == 0 &&
		!slices.ContainsFunc(res.Expectations, func(e reports.Expectation) bool { return e.Verdict == reports.Failed }) {
		res.Verdict = reports.Passed
	}
}

// declared names the capabilities c declares.
func declared(c dlq.Caps) string {
	var out []string
	for _, d := range []struct {
		on   bool
		name string
	}{{c.Delete, "delete"}, {c.RequeueMatching, "requeue-matching"}, {c.Quarantine, "quarantine"}, {c.Capacity, "capacity"}} {
		if d.on {
			out = append(out, d.name)
		}
	}
	if len(out) == 0 {
		return "no optional capability"
	}
	return strings.Join(out, ", ")
}
