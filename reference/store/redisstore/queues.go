package redisstore

import (
	"context"
	"fmt"
	"slices"
)

// Queues returns the names of the namespace's queues — every queue a job
// was ever enqueued on (its :queues set) — sorted: what an operator's
// `requeue --to` is checked against, so that a typo does not strand jobs
// on a queue no worker reads.
func (s *Store) Queues(ctx context.Context) ([]string, error) {
	names, err := s.rdb.SMembers(ctx, s.prefix+":queues").Result()
	if err != nil {
		return nil, fmt.Errorf("queues: %w", err)
	}
	slices.Sort(names)
	return names, nil
}

// JobLive reports whether a job of that ID is in the queue side of the
// namespace — queued, in flight, scheduled, in the fallback queue or held —
// as AddIfAbsent and WriteRawIfAbsent see it: what a dry run of an import
// checks.
func (s *Store) JobLive(ctx context.Context, id string) (bool, error) {
	n, err := s.rdb.Exists(ctx, s.prefix+":job:"+id).Result()
	if err != nil {
		return false, fmt.Errorf("job %s: %w", id, err)
	}
	return n == 1, nil
}
