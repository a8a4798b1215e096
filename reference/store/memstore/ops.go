package memstore

import (
	"context"
	"fmt"
	"time"

	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
)

var (
	_ dlq.BulkDeleter    = (*Store)(nil)
	_ dlq.Importer       = (*Store)(nil)
	_ dlq.RevisionEditor = (*Store)(nil)
)

// DeleteMatching soft-deletes the entries matching f that failed before now
// (dlq.BulkDeleter), picked as RequeueMatching picks them, oldest first, in
// steps of at most Config.BatchSize entries, each step under the lock once.
// An entry that changed since the run began (failed again, edited, moved by
// another run) is skipped as Changed, one purged as Gone.
func (s *Store) DeleteMatching(ctx context.Context, f dlq.Filter, by string, now time.Time, dryRun bool) (dlq.BulkResult, error) {
	res := dlq.BulkResult{DryRun: dryRun}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	f = folded(f)
	h := s.hookOf()
	if err := s.interleave(ctx, h, OpDeleteMatching, 0, nil); err != nil {
		return res, fmt.Errorf("delete matching: %w", err)
	}
	picked := s.pickAll(func(d *dent) bool { return picks(d, &f, false, now) })
	res.Matched = len(picked)
	if dryRun {
		return res, nil
	}
	err := s.bulk(ctx, "delete matching", h, OpDeleteMatching, picked, &res, func(d *dent) (bool, error) {
		e := dlq.Decode(d.id, d.raw)
		e.Changes = append(e.Changes, newChange(now, e.Status, dlq.Deleted, by, ""))
		e.Status = dlq.Deleted
		nd, err := encodeDent(e)
		if err != nil {
			return false, err
		}
		s.write(d, nd)
		return true, nil
	})
	return res, err
}

// AddIfAbsent writes e as a new entry, as Add would, when the store has no
// entry of its job and no job of that ID is queued, in flight, scheduled,
// in the fallback queue or held (dlq.Importer); else it writes nothing and
// returns false. The check and the write happen under the lock once.
func (s *Store) AddIfAbsent(ctx context.Context, e dlq.Entry, now time.Time) (dlq.AddResult, bool, error) {
	if err := ctx.Err(); err != nil {
		return dlq.AddResult{}, false, err
	}
	if err := job.Validate(&e.Job, s.cfg.MaxPayload); err != nil {
		return dlq.AddResult{}, false, fmt.Errorf("dlq import: %w", err)
	}
	id := e.Job.ID
	s.mu.Lock()
	defer s.unlock()
	if s.entries[id] != nil || s.jobs[id] != nil {
		return dlq.AddResult{}, false, nil
	}
	if err := s.flushAhead(id, now); err != nil {
		return dlq.AddResult{}, false, fmt.Errorf("dlq import %s: %w", id, err)
	}
	res, err := s.admit(e, now, disposition.None, "", false, true)
	if err != nil {
		return res, false, fmt.Errorf("dlq import %s: %w", id, err)
	}
	return res, true, nil
}

// EditPayloadAt is EditPayload guarded by the revision the caller read
// (dlq.RevisionEditor): dlq.ErrChanged, nothing written, when the entry's
// dlq.Revision is not rev.
func (s *Store) EditPayloadAt(ctx context.Context, id, rev string, payload []byte, by string, now time.Time) (dlq.Entry, error) {
	var out dlq.Entry
	err := s.setStatus(ctx, "dlq edit", id, now, func(e *dlq.Entry) error {
		if cur := dlq.Revision(e); cur != rev {
			return fmt.Errorf("revision %s, not %s: %w", cur, rev, dlq.ErrChanged)
		}
		if err := dlq.ApplyEdit(e, payload, by, now, s.cfg.MaxPayload); err != nil {
			return err
		}
		out = *e
		return nil
	})
	if err != nil {
		return dlq.Entry{}, err
	}
	return out, nil
}
