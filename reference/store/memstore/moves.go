package memstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/internal/mutant"
	"github.com/faultline/faultline/reference/job"
)

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
