package redisstore

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/reference/dlq"
)

var _ dlq.DepthRecorder = (*Store)(nil)

// DefaultDepthCap is how many depth samples the depth stream keeps unless
// SetDepthCap says otherwise: about a week at one sample a minute.
const DefaultDepthCap = dlq.DefaultDepthCap

// depthField is the stream field holding a sample: its JSON, without At
// (the stream entry's ID carries the sample's time, to the millisecond).
const depthField = "sample"

// DepthStreamKey returns the key of a namespace's depth stream,
// {faultline:NS}:dlq:depth.
func DepthStreamKey(namespace string) string { return Prefix(namespace) + ":dlq:depth" }

// depthCaps holds each store's SetDepthCap value beside it, keyed weakly
// so that a store that is collected takes it with it (the depth code stays
// in this file).
var depthCaps sync.Map // weak.Pointer[Store] → *atomic.Int64

func (s *Store) depthCapVar() *atomic.Int64 {
	k := weak.Make(s)
	if v, ok := depthCaps.Load(k); ok {
		return v.(*atomic.Int64)
	}
	v, loaded := depthCaps.LoadOrStore(k, new(atomic.Int64))
	if !loaded {
		runtime.AddCleanup(s, func(k weak.Pointer[Store]) { depthCaps.Delete(k) }, k)
	}
	return v.(*atomic.Int64)
}

// SetDepthCap sets how many samples the depth stream keeps (n < 1: the
// default, DefaultDepthCap). The stream is trimmed with XADD MAXLEN ~ n:
// Redis drops whole stream nodes (100 entries by default), oldest first,
// so it holds between n and about n+100 samples.
func (s *Store) SetDepthCap(n int) { s.depthCapVar().Store(int64(n)) }

func (s *Store) depthCap() int64 {
	if n := s.depthCapVar().Load(); n > 0 {
		return n
	}
	return DefaultDepthCap
}

// depthAddScript appends a sample to the depth stream under an ID made of
// the sample's time, never going back.
//
// KEYS[1] the depth stream. ARGV[1] the sample's time, Unix milliseconds
// (>= 0); ARGV[2] the cap (XADD MAXLEN ~); ARGV[3] the sample's JSON.
// The ID is ARGV[1]-0, or, when the newest entry's millisecond is not
// before ARGV[1], that millisecond with the next sequence number: IDs (and
// so the samples' times) only increase, whatever the clocks of the
// processes writing. Returns the ID.
var depthAddScript = redis.NewScript(`
local ms, seq = ARGV[1], 0
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
if #last > 0 then
  local lms, lseq = string.match(last[1][1], '^(%d+)-(%d+)$')
  if tonumber(lms) >= tonumber(ms) then
    ms, seq = lms, tonumber(lseq) + 1
  end
end
if ms == '0' and seq == 0 then seq = 1 end
local id = ms .. '-' .. string.format('%d', seq)
return redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], id, '` + depthField + `', ARGV[3])
`)

// RecordDepth appends s to the namespace's depth stream,
// {faultline:NS}:dlq:depth (dlq.DepthRecorder): one script that XADDs the
// sample's JSON under an ID of its At in milliseconds (or just after the
// newest sample, when At is not after it), trimmed to about the cap
// (SetDepthCap). The store reads no clock: the time is the caller's.
func (s *Store) RecordDepth(ctx context.Context, d dlq.DepthSample) error {
	if err := s.guardLayout(ctx); err != nil {
		return fmt.Errorf("record depth: %w", err)
	}
	ms := max(d.At.UnixMilli(), 0)
	d.At = time.Time{}
	b, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("record depth: %w", err)
	}
	err = depthAddScript.Run(ctx, s.rdb, []string{DepthStreamKey(s.cfg.Namespace)},
		strconv.FormatInt(ms, 10), s.depthCap(), b).Err()
	if err != nil {
		return fmt.Errorf("record depth: %w", err)
	}
	return nil
}

// DepthSamples returns the newest limit samples of the depth stream taken
// at or after since, oldest first (dlq.DepthRecorder): one XREVRANGE from
// the newest down to since's millisecond. A sample's At is its stream ID's
// millisecond, UTC. A sample whose JSON does not decode is returned with
// its time and no counts, never skipped.
func (s *Store) DepthSamples(ctx context.Context, since time.Time, limit int) ([]dlq.DepthSample, error) {
	if limit < 1 {
		return nil, dlq.ErrDepthLimit
	}
	start := "-"
	if ms := since.UnixMilli(); !since.IsZero() && ms > 0 {
		start = strconv.FormatInt(ms, 10)
		if since.Sub(time.UnixMilli(ms)) > 0 { // a fraction of a millisecond: from the next one
			start = strconv.FormatInt(ms+1, 10)
		}
	}
	msgs, err := s.rdb.XRevRangeN(ctx, DepthStreamKey(s.cfg.Namespace), "+", start, int64(limit)).Result()
	if err != nil {
		return nil, fmt.Errorf("depth samples: %w", err)
	}
	out := make([]dlq.DepthSample, len(msgs))
	for i, m := range msgs {
		var d dlq.DepthSample
		raw, _ := m.Values[depthField].(string)
		_ = json.Unmarshal([]byte(raw), &d)
		ms, _, err := parseStreamID(m.ID)
		if err != nil {
			return nil, fmt.Errorf("depth samples: stream ID %q: %w", m.ID, err)
		}
		d.At = time.UnixMilli(int64(ms)).UTC()
		out[len(msgs)-1-i] = d
	}
	return out, nil
}
