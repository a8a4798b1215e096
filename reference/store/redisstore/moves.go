package redisstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
)

// deadStatus reports whether an entry of that status (as the scripts name
// it) holds a dead-lettered job: Failed, Quarantined and Deleted ones do; a
// Requeued entry is a record of a job back in the queue, and a corrupt one
// names no job the system knows.
func deadStatus(st string) bool {
	return st == dlq.Failed.String() || st == dlq.Quarantined.String() || st == dlq.Deleted.String()
}

// checkOptions refuses a requeue that does not state its budget.
func checkOptions(opts dlq.RequeueOptions) error {
	if opts.Budget != dlq.OneMoreAttempt && opts.Budget != dlq.ResetAttempts {
		return fmt.Errorf("options: Budget %d must be OneMoreAttempt or ResetAttempts (the caller decides): %w", opts.Budget, dlq.ErrInvalidOptions)
	}
	return nil
}

// refusal returns the outcome of a requeue of e that cannot happen, and
// false when e may be requeued by opts.
func refusal(e *dlq.Entry, opts dlq.RequeueOptions) (dlq.RequeueOutcome, bool) {
	switch {
	case e.Corrupt, e.Status == dlq.Deleted:
		return dlq.OutcomeNotRequeueable, true
	case e.Status == dlq.Requeued:
		return dlq.OutcomeAlreadyRequeued, true
	case e.Status == dlq.Quarantined && opts.Auto:
		return dlq.OutcomeNotRequeueable, true
	case e.Status != dlq.Failed && e.Status != dlq.Quarantined:
		return dlq.OutcomeNotRequeueable, true
	}
	return 0, false
}

// requeued returns entry e after a requeue by opts, and its job as it goes
// back on its queue, with the attempt budget the caller chose.
func requeued(e dlq.Entry, opts dlq.RequeueOptions, now time.Time) (dlq.Entry, job.Job) {
	q := opts.Queue
	if q == "" {
		q = e.SourceQueue
	}
	j := e.Job
	if q != j.QueueName() {
		j.Queue = q
	}
	if opts.Budget == dlq.ResetAttempts {
		j.Attempts = 0
	}
	e.Changes = append(slices.Clip(e.Changes), dlq.StatusChange{At: now, From: e.Status, To: dlq.Requeued, By: opts.By})
	e.Status = dlq.Requeued
	e.Requeues++
	if opts.Auto {
		e.AutoRetries++
	}
	return e, j
}

// setItem is one dlqSet item: entry e written over revision rev, and for a
// requeue (j != nil) the job put on its queue in the same step.
func setItem(e *dlq.Entry, rev string, j *job.Job) ([]any, error) {
	raw, err := dlq.Encode(*e)
	if err != nil {
		return nil, err
	}
	if j == nil {
		return []any{e.Job.ID, rev, raw, e.Status.String(), "", "", "", 0}, nil
	}
	data, err := json.Marshal(j)
	if err != nil {
		return nil, err
	}
	return []any{e.Job.ID, rev, raw, e.Status.String(), j.QueueName(), data, j.Task, j.Attempts}, nil
}

func requeueEvent(j *job.Job, now time.Time) disposition.Event {
	return disposition.Event{JobID: j.ID, Task: j.Task, From: disposition.DeadLettered, To: disposition.Queued,
		Reason: disposition.Requeued, At: now, Attempts: j.Attempts}
}

// Requeue sends one entry's job back to a queue (dlq.Store): the entry
// becomes Requeued and the job goes on the tail of its queue in one script,
// guarded by the entry's revision, so a retried call answers
// OutcomeAlreadyRequeued and a job already queued or in flight is refused
// with OutcomeBusy.
func (s *Store) Requeue(ctx context.Context, id string, opts dlq.RequeueOptions, now time.Time) (dlq.RequeueOutcome, error) {
	if err := checkOptions(opts); err != nil {
		return 0, fmt.Errorf("requeue %s: %w", id, err)
	}
	for range casAttempts {
		cur, ok, err := s.load(ctx, id)
		if err != nil {
			return 0, fmt.Errorf("requeue %s: %w", id, err)
		}
		if !ok {
			return dlq.OutcomeNotFound, nil
		}
		if o, refused := refusal(&cur.entry, opts); refused {
			return o, nil
		}
		if cur.rev == "0" { // stored by something else: index it, then move it
			if err := s.heal(ctx); err != nil {
				return 0, fmt.Errorf("requeue %s: %w", id, err)
			}
			continue
		}
		next, j := requeued(cur.entry, opts, now)
		if err := job.Validate(&j, s.cfg.MaxPayload); err != nil {
			return 0, fmt.Errorf("requeue %s: %w", id, err)
		}
		item, err := setItem(&next, cur.rev, &j)
		if err != nil {
			return 0, fmt.Errorf("requeue %s: %w", id, err)
		}
		r, err := s.runAt(ctx, now, dlqSetScript, item...)
		if err != nil {
			return 0, fmt.Errorf("requeue %s: %w", id, err)
		}
		switch asString(asSlice(asSlice(r)[0])[0]) {
		case "ok":
			s.emit(requeueEvent(&j, now))
			return dlq.OutcomeRequeued, nil
		case "busy":
			return dlq.OutcomeBusy, nil
		case "notfound":
			return dlq.OutcomeNotFound, nil
		}
		// changed under us: read it again
	}
	return 0, fmt.Errorf("requeue %s: %w", id, ErrContended)
}

// RequeueMatching requeues every entry matching f whose last failure is
// before now (dlq.Store): Failed entries, and Quarantined ones when f names
// that status (never for an automatic requeue). It walks the status index in
// (last failure, id) order, at most BatchSize entries per step: one
// read-only scan that matches the filter on the entries' meta, and one
// dlqSet script that moves the step's matches, each guarded by the revision
// the scan saw; the scans of the next steps, and the decoding of their
// entries, overlap the current step's move (bulkWalk). A dry run counts in
// the scan script without shipping the entries (bulkCount). An entry that
// fails again during
// the run changes revision (and its last failure passes the cut-off), so it
// is skipped, not requeued twice; two runs at once requeue each entry once,
// the other run counting it Skipped (Changed). An entry purged before the
// move is Gone, one whose job is queued or in flight Busy, one whose job
// cannot be queued as it is (a payload over MaxPayload) Invalid. An
// interrupted run leaves every entry either requeued (and on its queue) or
// untouched.
func (s *Store) RequeueMatching(ctx context.Context, f dlq.Filter, opts dlq.RequeueOptions, now time.Time, dryRun bool) (dlq.BulkResult, error) {
	if err := checkOptions(opts); err != nil {
		return dlq.BulkResult{DryRun: dryRun}, fmt.Errorf("requeue matching: %w", err)
	}
	res, err := s.bulkWalk(ctx, f, opts.Auto, now, dryRun, func(e *dlq.Entry, rev string) ([]any, *job.Job) {
		next, j := requeued(*e, opts, now)
		if job.Validate(&j, s.cfg.MaxPayload) != nil {
			return nil, nil
		}
		item, err := setItem(&next, rev, &j)
		if err != nil {
			return nil, nil
		}
		return item, &j
	})
	if err != nil {
		return res, fmt.Errorf("requeue matching: %w", err)
	}
	return res, nil
}

// DeleteMatching soft-deletes every entry RequeueMatching would pick with
// f and now (dlq.BulkDeleter), by the same walk, steps and revision guards:
// each step's matches are moved to Deleted by one dlqSet script, as Delete
// moves one (Restore undoes it). An entry that fails again, is edited or is
// moved by another run meanwhile is skipped (Changed), one purged is Gone;
// two runs at once delete each entry once.
func (s *Store) DeleteMatching(ctx context.Context, f dlq.Filter, by string, now time.Time, dryRun bool) (dlq.BulkResult, error) {
	res, err := s.bulkWalk(ctx, f, false, now, dryRun, func(e *dlq.Entry, rev string) ([]any, *job.Job) {
		next := *e
		next.Changes = append(slices.Clip(next.Changes), dlq.StatusChange{At: now, From: e.Status, To: dlq.Deleted, By: by})
		next.Status = dlq.Deleted
		item, err := setItem(&next, rev, nil)
		if err != nil {
			return nil, nil
		}
		return item, nil
	})
	if err != nil {
		return res, fmt.Errorf("delete matching: %w", err)
	}
	return res, nil
}

// change applies a status change to one entry with an optimistic
// read-modify-write whose write is the dlqSet script.
func (s *Store) change(ctx context.Context, op, id string, apply func(e *dlq.Entry) error) error {
	for range casAttempts {
		cur, ok, err := s.load(ctx, id)
		if err != nil {
			return fmt.Errorf("%s %s: %w", op, id, err)
		}
		if !ok {
			return fmt.Errorf("%s %s: %w", op, id, dlq.ErrNotFound)
		}
		if cur.entry.Corrupt {
			return fmt.Errorf("%s %s: %w: the entry is corrupt (%s)", op, id, dlq.ErrWrongStatus, cur.entry.DecodeError)
		}
		if cur.rev == "0" {
			if err := s.heal(ctx); err != nil {
				return fmt.Errorf("%s %s: %w", op, id, err)
			}
			continue
		}
		next := cur.entry
		next.Changes = slices.Clip(next.Changes)
		if err := apply(&next); err != nil {
			return fmt.Errorf("%s %s: %w", op, id, err)
		}
		item, err := setItem(&next, cur.rev, nil)
		if err != nil {
			return fmt.Errorf("%s %s: %w", op, id, err)
		}
		r, err := s.run(ctx, dlqSetScript, item...)
		if err != nil {
			return fmt.Errorf("%s %s: %w", op, id, err)
		}
		switch asString(asSlice(asSlice(r)[0])[0]) {
		case "ok":
			return nil
		case "notfound":
			return fmt.Errorf("%s %s: %w", op, id, dlq.ErrNotFound)
		}
	}
	return fmt.Errorf("%s %s: %w", op, id, ErrContended)
}

// Delete soft-deletes a Failed or Quarantined entry (dlq.Store);
// ErrWrongStatus for any other status.
func (s *Store) Delete(ctx context.Context, id, by string, now time.Time) error {
	return s.change(ctx, "delete", id, func(e *dlq.Entry) error {
		if e.Status != dlq.Failed && e.Status != dlq.Quarantined {
			return fmt.Errorf("%w: %s, not failed or quarantined", dlq.ErrWrongStatus, e.Status)
		}
		e.Changes = append(e.Changes, dlq.StatusChange{At: now, From: e.Status, To: dlq.Deleted, By: by})
		e.Status = dlq.Deleted
		return nil
	})
}

// Restore undoes a Delete (dlq.Store): the entry gets back the status it had
// before; ErrWrongStatus when it is not deleted.
func (s *Store) Restore(ctx context.Context, id, by string, now time.Time) error {
	return s.change(ctx, "restore", id, func(e *dlq.Entry) error {
		if e.Status != dlq.Deleted {
			return fmt.Errorf("%w: %s, not deleted", dlq.ErrWrongStatus, e.Status)
		}
		to := dlq.Failed
		for i := len(e.Changes) - 1; i >= 0; i-- {
			if c := e.Changes[i]; c.To == dlq.Deleted {
				if c.From != 0 {
					to = c.From
				}
				break
			}
		}
		e.Changes = append(e.Changes, dlq.StatusChange{At: now, From: dlq.Deleted, To: to, By: by})
		e.Status = to
		return nil
	})
}

// Quarantine marks a Failed entry as poison (dlq.Store); ErrWrongStatus for
// any other status.
func (s *Store) Quarantine(ctx context.Context, id, reason string, now time.Time) error {
	return s.change(ctx, "quarantine", id, func(e *dlq.Entry) error {
		if e.Status != dlq.Failed {
			return fmt.Errorf("%w: %s, not failed", dlq.ErrWrongStatus, e.Status)
		}
		e.Changes = append(e.Changes, dlq.StatusChange{At: now, From: e.Status, To: dlq.Quarantined, Reason: reason})
		e.Status = dlq.Quarantined
		return nil
	})
}

// Purge removes entries of any status, corrupt ones too, whose last failure
// is before olderThan (dlq.Store), oldest first, at most BatchSize per
// script. A corrupt entry whose time is unknown counts as the oldest.
func (s *Store) Purge(ctx context.Context, olderThan time.Time, now time.Time) (int, error) {
	if err := s.heal(ctx); err != nil {
		return 0, fmt.Errorf("purge: %w", err)
	}
	total := 0
	for {
		r, err := s.runAt(ctx, now, dlqPurgeScript, millis(olderThan), s.cfg.BatchSize)
		if err != nil {
			return total, fmt.Errorf("purge: %w", err)
		}
		v := asSlice(r)
		n := len(v) / 4
		total += n
		for i := 0; i+3 < len(v); i += 4 {
			if deadStatus(asString(v[i+3])) {
				s.emit(disposition.Event{JobID: asString(v[i]), Task: asString(v[i+1]), From: disposition.DeadLettered,
					To: disposition.None, Reason: disposition.Purged, At: now, Attempts: int(asInt(v[i+2]))})
			}
		}
		if n < s.cfg.BatchSize {
			return total, nil
		}
	}
}
