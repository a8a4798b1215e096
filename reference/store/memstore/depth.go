package memstore

import (
	"context"
	"maps"
	"runtime"
	"slices"
	"sync"
	"time"
	"weak"

	"github.com/faultline/faultline/reference/dlq"
)

var _ dlq.DepthRecorder = (*Store)(nil)

// DefaultDepthCap is how many depth samples the store keeps unless
// SetDepthCap says otherwise: the Redis store's default.
const DefaultDepthCap = dlq.DefaultDepthCap

// depthLog is one store's depth samples, oldest first from head, their
// times (to the millisecond) never decreasing.
type depthLog struct {
	mu   sync.Mutex
	cap  int
	recs []dlq.DepthSample
	head int
}

// depths holds each store's depth samples beside it, keyed weakly like
// audits, so that a store that is collected takes its samples with it.
var depths sync.Map // weak.Pointer[Store] → *depthLog

func (s *Store) depthLog() *depthLog {
	k := weak.Make(s)
	if v, ok := depths.Load(k); ok {
		return v.(*depthLog)
	}
	v, loaded := depths.LoadOrStore(k, &depthLog{cap: DefaultDepthCap})
	if !loaded {
		runtime.AddCleanup(s, func(k weak.Pointer[Store]) { depths.Delete(k) }, k)
	}
	return v.(*depthLog)
}

// SetDepthCap sets how many depth samples the store keeps (n < 1: the
// default, DefaultDepthCap); the oldest are dropped first. Unlike the
// Redis store's approximate trim, the cap is exact.
func (s *Store) SetDepthCap(n int) {
	if n < 1 {
		n = DefaultDepthCap
	}
	l := s.depthLog()
	l.mu.Lock()
	l.cap = n
	l.trim()
	l.mu.Unlock()
}

// RecordDepth appends d (dlq.DepthRecorder) with its At truncated to the
// millisecond, as the Redis store keeps it; an At before the newest
// sample's is kept at the newest's time. The store reads no clock.
func (s *Store) RecordDepth(ctx context.Context, d dlq.DepthSample) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d.At = msTime(d.At)
	d.BySeverity = maps.Clone(d.BySeverity)
	l := s.depthLog()
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.recs); n > l.head && d.At.Before(l.recs[n-1].At) {
		d.At = l.recs[n-1].At
	}
	l.recs = append(l.recs, d)
	l.trim()
	return nil
}

// msTime is t to the millisecond, UTC; before 1970, the Unix epoch (a
// stream ID's time is never negative).
func msTime(t time.Time) time.Time {
	return time.UnixMilli(max(t.UnixMilli(), 0)).UTC()
}

// trim drops the oldest samples over the cap, compacting now and then.
func (l *depthLog) trim() {
	if over := len(l.recs) - l.head - l.cap; over > 0 {
		clear(l.recs[l.head : l.head+over])
		l.head += over
	}
	if l.head > 1024 && l.head > len(l.recs)/2 {
		l.recs = slices.Delete(l.recs, 0, l.head)
		l.head = 0
	}
}

// DepthSamples returns the newest limit samples taken at or after since,
// oldest first (dlq.DepthRecorder).
func (s *Store) DepthSamples(ctx context.Context, since time.Time, limit int) ([]dlq.DepthSample, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if limit < 1 {
		return nil, dlq.ErrDepthLimit
	}
	l := s.depthLog()
	l.mu.Lock()
	defer l.mu.Unlock()
	recs := l.recs[l.head:]
	from, _ := slices.BinarySearchFunc(recs, since, func(d dlq.DepthSample, t time.Time) int { return d.At.Compare(t) })
	from = max(from, len(recs)-limit)
	out := make([]dlq.DepthSample, 0, len(recs)-from)
	for _, d := range recs[from:] {
		d.BySeverity = maps.Clone(d.BySeverity)
		out = append(out, d)
	}
	return out, nil
}
