package redisstore

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/queue"
)

// Snapshot is the store's counts and the DLQ's stats at one instant, with
// the ID of the last entry of the event stream at that instant: every
// move before it is in the stream up to LastEvent, none after it.
type Snapshot struct {
	Counts queue.Counts
	Stats  dlq.Stats
	// LastEvent is the ID of the stream's last entry (StreamStart when it
	// has none).
	LastEvent string
}

// Snapshot reads the counts, the DLQ's stats and the event stream's last
// ID in one MULTI/EXEC, so that a judge replaying the stream up to
// LastEvent must find exactly these counts. Bytes written to the DLQ
// without an index count as corrupt (Stats heals them; this does not
// write).
func (s *Store) Snapshot(ctx context.Context) (Snapshot, error) {
	for _, sc := range []*redis.Script{countsScript, dlqStatsScript} {
		if err := sc.Load(ctx, s.rdb).Err(); err != nil {
			return Snapshot{}, fmt.Errorf("snapshot: %w", err)
		}
	}
	args := []any{"0", s.cfg.EventStream}
	var counts, stats *redis.Cmd
	var last *redis.XMessageSliceCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		counts = p.EvalSha(ctx, countsScript.Hash(), s.keys, args...)
		stats = p.EvalSha(ctx, dlqStatsScript.Hash(), s.keys, args...)
		last = p.XRevRangeN(ctx, EventStreamKey(s.cfg.Namespace), "+", "-", 1)
		return nil
	})
	if err != nil {
		return Snapshot{}, fmt.Errorf("snapshot: %w", err)
	}
	c, err := parseCounts(counts.Val())
	if err != nil {
		return Snapshot{}, fmt.Errorf("snapshot: %w", err)
	}
	st, _ := parseStats(stats.Val())
	out := Snapshot{Counts: c, Stats: st, LastEvent: StreamStart}
	if m := last.Val(); len(m) > 0 {
		out.LastEvent = m[0].ID
	}
	return out, nil
}
