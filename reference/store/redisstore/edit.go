package redisstore

import (
	"context"
	"fmt"
	"time"

	"github.com/faultline/faultline/reference/dlq"
)

var (
	_ dlq.PayloadEditor  = (*Store)(nil)
	_ dlq.RevisionEditor = (*Store)(nil)
)

// EditPayload replaces the payload of entry id's job and records the edit in
// its status history (dlq.PayloadEditor). It is an optimistic
// read-modify-write like Delete's: the dlqSet script writes the edited entry
// only if its revision is still the one read (so an entry requeued, deleted
// or dead-lettered again in between is read again and checked again), and
// keeps its status, its index entries and its place in listings.
func (s *Store) EditPayload(ctx context.Context, id string, payload []byte, by string, now time.Time) (dlq.Entry, error) {
	var out dlq.Entry
	err := s.change(ctx, "edit", id, func(e *dlq.Entry) error {
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

// EditPayloadAt is EditPayload guarded by the revision the caller read
// (dlq.RevisionEditor): the entry is read, its dlq.Revision compared with
// rev (dlq.ErrChanged, nothing written, when they differ), and the edit
// written by dlqSet guarded by the store's own revision of what was read,
// so a change that lands between the read and the write is read again and
// refused.
func (s *Store) EditPayloadAt(ctx context.Context, id, rev string, payload []byte, by string, now time.Time) (dlq.Entry, error) {
	var out dlq.Entry
	err := s.change(ctx, "edit", id, func(e *dlq.Entry) error {
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
