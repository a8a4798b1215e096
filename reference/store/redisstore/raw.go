package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/reference/dlq"
)

// indexArgs are one dlqIndex item for bytes raw stored under id: the fields
// of the entry they decode to, or status "corrupt" when they do not. A
// corrupt entry has no known failure time: it is indexed as failed at the
// zero time (listed last, removed by every purge).
func indexArgs(id string, raw []byte) []any {
	e := dlq.Decode(id, raw)
	return append(append([]any{id, raw}, metaArgs(&e)...), millis(e.LastFailedAt))
}

// WriteRaw stores raw under id in the DLQ as another writer would (an older
// or newer faultline, a hand-made HSET) and indexes it: bytes that do not
// decode become a corrupt entry, listed, counted and purgeable, never
// dropped. It is the test hook behind the conformance suites' Corrupt.
func (s *Store) WriteRaw(ctx context.Context, id string, raw []byte) error {
	if _, err := s.run(ctx, dlqIndexScript, append([]any{"write"}, indexArgs(id, raw)...)...); err != nil {
		return fmt.Errorf("write raw entry %s: %w", id, err)
	}
	return nil
}

// WriteRawIfAbsent is WriteRaw done only when id has no entry and no job of
// that id is queued, in flight, scheduled or held, in one step; it reports
// whether it wrote. It is how an import keeps an exported corrupt entry's
// bytes without ever overwriting an entry (or a job) written meanwhile.
// Like WriteRaw, it does not count against the DLQ's capacity.
func (s *Store) WriteRawIfAbsent(ctx context.Context, id string, raw []byte) (bool, error) {
	n, err := s.run(ctx, dlqIndexScript, append([]any{"absent"}, indexArgs(id, raw)...)...)
	if err != nil {
		return false, fmt.Errorf("write raw entry %s: %w", id, err)
	}
	return asInt(n) == 1, nil
}

// mark re-indexes as corrupt the entries whose bytes another writer replaced
// in place (they decode no more), so that Stats counts them as such.
func (s *Store) mark(ctx context.Context, entries []stored) error {
	if len(entries) == 0 {
		return nil
	}
	args := []any{"mark"}
	for _, c := range entries {
		args = append(args, indexArgs(c.entry.Job.ID, c.entry.Raw)...)
	}
	if _, err := s.run(ctx, dlqIndexScript, args...); err != nil {
		return fmt.Errorf("index corrupt entries: %w", err)
	}
	return nil
}

// heal indexes entries another writer stored without an index (a raw HSET
// of a new id on the entries hash), so that they are listed, counted and
// purgeable. It costs one round trip when there are none (the entries hash
// and the indexed count agree); otherwise it walks the entries hash with HSCAN,
// BatchSize at a time, adopting each unindexed entry with a script that
// checks it is still unindexed and unchanged.
func (s *Store) heal(ctx context.Context) error {
	entries := s.prefix + ":dlq:entries"
	pipe := s.rdb.Pipeline()
	hlen := pipe.HLen(ctx, entries)
	counters := pipe.HGetAll(ctx, s.prefix+":dlq:stats")
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("heal index: %w", err)
	}
	indexed := int64(0)
	for field, v := range counters.Val() {
		if strings.HasPrefix(field, "st:") {
			n, _ := strconv.ParseInt(v, 10, 64)
			indexed += n
		}
	}
	if hlen.Val() <= indexed {
		return nil
	}
	var cursor uint64
	for {
		kv, next, err := s.rdb.HScan(ctx, entries, cursor, "", int64(s.cfg.BatchSize)).Result()
		if err != nil {
			return fmt.Errorf("heal index: %w", err)
		}
		pipe := s.rdb.Pipeline()
		exists := make([]*redis.IntCmd, 0, len(kv)/2)
		for i := 0; i+1 < len(kv); i += 2 {
			exists = append(exists, pipe.Exists(ctx, s.prefix+":dlq:m:"+kv[i]))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("heal index: %w", err)
		}
		args := []any{"adopt"}
		for k, ex := range exists {
			if ex.Val() == 0 {
				args = append(args, indexArgs(kv[2*k], []byte(kv[2*k+1]))...)
			}
		}
		if len(args) > 1 {
			if _, err := s.run(ctx, dlqIndexScript, args...); err != nil {
				return fmt.Errorf("heal index: %w", err)
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}
