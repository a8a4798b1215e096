package redisstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/faultline/faultline/reference/dlq"
)

// HistoryKey is the key of job id's failure history in namespace ns.
func HistoryKey(ns, id string) string { return Prefix(ns) + ":hist:" + id }

// History is the failure history of a fleet's jobs between their attempts
// (worker.History), in the store: a list of JSON failures per job, so that
// a job whose attempts run in different processes keeps all its failures
// in its DLQ entry, and a process never keeps the history of a job that
// ended in another. Record is one RPUSH, Failures one LRANGE, Forget one
// DEL; the pipeline looks a job up only when it has attempts behind it.
type History struct{ s *Store }

// History returns the store's failure history.
func (s *Store) History() *History { return &History{s: s} }

// Failures returns job id's failures, oldest first. A failure that does
// not decode is returned as one saying so, never dropped.
func (h *History) Failures(ctx context.Context, id string) ([]dlq.Failure, error) {
	raw, err := h.s.rdb.LRange(ctx, HistoryKey(h.s.cfg.Namespace, id), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("the failure history of job %s: %w", id, err)
	}
	if len(raw) == 0 {
		return nil, nil
	}
	out := make([]dlq.Failure, len(raw))
	for i, r := range raw {
		if err := json.Unmarshal([]byte(r), &out[i]); err != nil {
			out[i] = dlq.Failure{Attempt: i + 1, Error: fmt.Sprintf("a failure the history could not read: %v", err)}
		}
	}
	return out, nil
}

// Record appends f to job id's failures.
func (h *History) Record(ctx context.Context, id string, f dlq.Failure) error {
	b, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("record a failure of job %s: %w", id, err)
	}
	if err := h.s.rdb.RPush(ctx, HistoryKey(h.s.cfg.Namespace, id), b).Err(); err != nil {
		return fmt.Errorf("record a failure of job %s: %w", id, err)
	}
	return nil
}

// Forget drops job id's failures.
func (h *History) Forget(ctx context.Context, id string) error {
	if err := h.s.rdb.Del(ctx, HistoryKey(h.s.cfg.Namespace, id)).Err(); err != nil {
		return fmt.Errorf("forget the failures of job %s: %w", id, err)
	}
	return nil
}
