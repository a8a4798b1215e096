package memstore

import (
	"context"
	"time"

	"github.com/faultline/faultline/reference/dlq"
)

var _ dlq.PayloadEditor = (*Store)(nil)

// EditPayload replaces the payload of entry id's job and records the edit in
// its status history (dlq.PayloadEditor), under the store's lock.
func (s *Store) EditPayload(ctx context.Context, id string, payload []byte, by string, now time.Time) (dlq.Entry, error) {
	var out dlq.Entry
	err := s.setStatus(ctx, "dlq edit", id, now, func(e *dlq.Entry) error {
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
