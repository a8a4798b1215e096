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
