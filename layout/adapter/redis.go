package adapter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/layout"
	"github.com/faultline/faultline/reference/clock"
)

var (
	_ Injector    = (*listInjector)(nil)
	_ QueueReader = (*listInjector)(nil)
	_ Injector    = (*streamInjector)(nil)
	_ QueueReader = (*streamInjector)(nil)
	_ Injector    = (*recordInjector)(nil)
	_ QueueReader = (*recordInjector)(nil)
	_ Reader      = (*redisReader)(nil)
)

// docRenderer makes a job's document from the layout's template and reads
// an ID back from one.
type docRenderer struct {
	template string
	idPath   string
}

// render returns the job's document as compact JSON.
func (r docRenderer) render(j layout.Job) ([]byte, error) {
	doc, err := layout.Render(r.template, j)
	if err != nil {
		return nil, fmt.Errorf("render job %s: %w", j.ID, err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("render job %s: %w", j.ID, err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// id reads the job ID of a queued document, or says why it cannot.
func (r docRenderer) id(raw []byte) (string, string) {
	_, id, why := r.parse(raw)
	return id, why
}

// parse decodes a queued document and reads its job ID, or says why it
// cannot.
func (r docRenderer) parse(raw []byte) (doc any, id, why string) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, "", "not JSON"
	}
	id, ok := layout.Lookup(doc, r.idPath)
	if !ok || id == "" {
		return nil, "", "no job ID at " + r.idPath
	}
	return doc, id, ""
}

func isRPush(push string) bool { return strings.EqualFold(push, "rpush") }

// listInjector pushes documents onto a Redis list.
type listInjector struct {
	rdb   redis.UniversalClient
	key   string
	rpush bool
	doc   docRenderer
}

func (l *listInjector) Inject(ctx context.Context, j layout.Job) error {
	b, err := l.doc.render(j)
	if err != nil {
		return err
	}
	if l.rpush {
		err = l.rdb.RPush(ctx, l.key, b).Err()
	} else {
		err = l.rdb.LPush(ctx, l.key, b).Err()
	}
	if err != nil {
		return fmt.Errorf("push job %s onto %s: %w", j.ID, l.key, err)
	}
	return nil
}

// Queued reads the list, the oldest pushed first (the right end for
// LPUSH, the left for RPUSH). A position in a CorruptError is the
// element's LRANGE index.
func (l *listInjector) Queued(ctx context.Context) ([]string, error) {
	raws, err := l.rdb.LRange(ctx, l.key, 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("read queue %s: %w", l.key, err)
	}
	var ids []string
	bad := &CorruptError{Queue: l.key}
	for i, raw := range raws {
		id, why := l.doc.id([]byte(raw))
		if why != "" {
			bad.add(strconv.Itoa(i), why)
			continue
		}
		ids = append(ids, id)
	}
	if !l.rpush {
		slices.Reverse(ids)
	}
	return ids, bad.orNil()
}

func (l *listInjector) Close() error { return nil }

// streamInjector adds documents to a Redis stream.
type streamInjector struct {
	rdb   redis.UniversalClient
	key   string
	field string
	group string // the consumer group that reads it ("" = not observable)
	doc   docRenderer
}

func (s *streamInjector) Inject(ctx context.Context, j layout.Job) error {
	b, err := s.doc.render(j)
	if err != nil {
		return err
	}
	if err := s.rdb.XAdd(ctx, &redis.XAddArgs{Stream: s.key, Values: []any{s.field, b}}).Err(); err != nil {
		return fmt.Errorf("add job %s to stream %s: %w", j.ID, s.key, err)
	}
	return nil
}

// Queued returns the jobs the stream's consumer group has not finished:
// its pending entries (delivered to a consumer, not acknowledged) and the
// entries after its last-delivered ID (never delivered), oldest first,
// read in one transaction. A stream keeps what its consumers acknowledged
// until it is trimmed, so without a declared group the queue is not
// observable (ErrNotObservable). A group the system has not created yet
// has delivered nothing: every entry is queued. A position in a
// CorruptError is the entry's stream ID.
func (s *streamInjector) Queued(ctx context.Context) ([]string, error) {
	if s.group == "" {
		return nil, fmt.Errorf("%w: stream %s keeps the entries its consumers acknowledged, so what is left in it is not what is queued; declare inject.redisStream.group, the consumer group the system reads it with", ErrNotObservable, s.key)
	}
	var (
		groups *redis.XInfoGroupsCmd
		pend   *redis.XPendingExtCmd
		msgs   *redis.XMessageSliceCmd
	)
	read := func(p redis.Pipeliner) error {
		groups = p.XInfoGroups(ctx, s.key)
		pend = p.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: s.key, Group: s.group, Start: "-", End: "+", Count: math.MaxInt32})
		msgs = p.XRange(ctx, s.key, "-", "+")
		return nil
	}
	if _, cluster := s.rdb.(*redis.ClusterClient); cluster {
		_, _ = s.rdb.Pipelined(ctx, read) // one key: one slot, but no MULTI across a cluster client's pipeline
	} else {
		_, _ = s.rdb.TxPipelined(ctx, read)
	}
	if err := msgs.Err(); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("read queue %s: %w", s.key, err)
	}
	if len(msgs.Val()) == 0 {
		return nil, nil // no stream (XINFO says "no such key"), or an empty one
	}
	if err := groups.Err(); err != nil {
		return nil, fmt.Errorf("read queue %s: the groups: %w", s.key, err)
	}
	lastDelivered, found := "0-0", false
	for _, g := range groups.Val() {
		if g.Name == s.group {
			lastDelivered, found = g.LastDeliveredID, true
		}
	}
	pending := map[string]bool{}
	if found {
		if err := pend.Err(); err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("read queue %s: group %s's pending entries: %w", s.key, s.group, err)
		}
		for _, p := range pend.Val() {
			pending[p.ID] = true
		}
	}
	last, ok := parseStreamID(lastDelivered)
	if !ok {
		return nil, fmt.Errorf("read queue %s: group %s's last-delivered ID %q is not a stream ID", s.key, s.group, lastDelivered)
	}
	var ids []string
	bad := &CorruptError{Queue: s.key}
	for _, m := range msgs.Val() {
		at, ok := parseStreamID(m.ID)
		if !ok || (!pending[m.ID] && !last.less(at)) {
			continue // acknowledged (delivered, no longer pending)
		}
		v, ok := m.Values[s.field]
		raw, isStr := v.(string)
		why := ""
		var id string
		switch {
		case !ok:
			why = "no field " + s.field
		case !isStr:
			why = "field " + s.field + " is not a string"
		default:
			id, why = s.doc.id([]byte(raw))
		}
		if why != "" {
			bad.add(m.ID, why)
			continue
		}
		ids = append(ids, id)
	}
	return ids, bad.orNil()
}

// streamID is a Redis stream ID, milliseconds and sequence.
type streamID struct{ ms, seq uint64 }

func (a streamID) less(b streamID) bool { return a.ms < b.ms || (a.ms == b.ms && a.seq < b.seq) }

func parseStreamID(s string) (streamID, bool) {
	ms, seq, ok := strings.Cut(s, "-")
	if !ok {
		seq = "0"
	}
	a, err1 := strconv.ParseUint(ms, 10, 64)
	b, err2 := strconv.ParseUint(seq, 10, 64)
	return streamID{a, b}, err1 == nil && err2 == nil
}

func (s *streamInjector) Close() error { return nil }

// recordInjector sets documents in a hash under the job's ID, or adds
// them to a sorted set scored by the injection's Unix milliseconds.
type recordInjector struct {
	rdb   redis.UniversalClient
	key   string
	zset  bool
	state *layout.QueueState
	doc   docRenderer
	clock clock.Clock
}

func (r *recordInjector) Inject(ctx context.Context, j layout.Job) error {
	b, err := r.doc.render(j)
	if err != nil {
		return err
	}
	if r.zset {
		err = r.rdb.ZAdd(ctx, r.key, redis.Z{Score: float64(r.clock.Now().UnixMilli()), Member: string(b)}).Err()
	} else {
		err = r.rdb.HSet(ctx, r.key, j.ID, b).Err()
	}
	if err != nil {
		return fmt.Errorf("add job %s to %s: %w", j.ID, r.key, err)
	}
	return nil
}

// Queued reads the members whose document says queued at the declared
// state field (every member of a sorted set without one): a sorted set's
// by score, a hash's in the order of their job IDs (a map has none). A position in a CorruptError is the hash's
// field or the member's rank.
func (r *recordInjector) Queued(ctx context.Context) ([]string, error) {
	type member struct{ pos, raw string }
	var members []member
	if r.zset {
		raws, err := r.rdb.ZRange(ctx, r.key, 0, -1).Result()
		if err != nil {
			return nil, fmt.Errorf("read queue %s: %w", r.key, err)
		}
		for i, raw := range raws {
			members = append(members, member{"rank " + strconv.Itoa(i), raw})
		}
	} else {
		all, err := r.rdb.HGetAll(ctx, r.key).Result()
		if err != nil {
			return nil, fmt.Errorf("read queue %s: %w", r.key, err)
		}
		for k, raw := range all {
			members = append(members, member{k, raw})
		}
		slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.pos, b.pos) })
	}
	var ids []string
	bad := &CorruptError{Queue: r.key}
	for _, m := range members {
		doc, id, why := r.doc.parse([]byte(m.raw))
		if why != "" {
			bad.add(m.pos, why)
			continue
		}
		if r.state != nil {
			if v, _ := layout.Lookup(doc, r.state.Field); !slices.Contains(r.state.Queued, v) {
				continue // taken, running or done: not queued
			}
		}
		ids = append(ids, id)
	}
	return ids, bad.orNil()
}

func (r *recordInjector) Close() error { return nil }

type redisKind uint8

const (
	kindList redisKind = iota + 1
	kindZSet
	kindStream
)

// redisReader reads DLQ entries from Redis lists, sorted sets or a stream.
type redisReader struct {
	rdb    redis.UniversalClient
	kind   redisKind
	keys   []string
	field  string // a stream's
	fields layout.Fields
}

// Read reads every key in one transaction when the client allows it (not
// a cluster client: keys of different slots), so that an entry moving
// between two keys during the read is seen once.
func (r *redisReader) Read(ctx context.Context) ([]layout.Entry, error) {
	cmds := make([]redis.Cmder, len(r.keys))
	queue := func(p redis.Pipeliner) error {
		for i, k := range r.keys {
			switch r.kind {
			case kindList:
				cmds[i] = p.LRange(ctx, k, 0, -1)
			case kindZSet:
				cmds[i] = p.ZRange(ctx, k, 0, -1)
			case kindStream:
				cmds[i] = p.XRange(ctx, k, "-", "+")
			}
		}
		return nil
	}
	var err error
	if _, cluster := r.rdb.(*redis.ClusterClient); cluster {
		_, err = r.rdb.Pipelined(ctx, queue)
	} else {
		_, err = r.rdb.TxPipelined(ctx, queue)
	}
	if err != nil && !errors.Is(err, redis.Nil) {
		for i, c := range cmds {
			if c != nil && c.Err() != nil && !errors.Is(c.Err(), redis.Nil) {
				return nil, fmt.Errorf("read DLQ key %s: %w", r.keys[i], c.Err())
			}
		}
		return nil, fmt.Errorf("read DLQ keys %s: %w", strings.Join(r.keys, ", "), err)
	}
	var out []layout.Entry
	for i, k := range r.keys {
		switch c := cmds[i].(type) {
		case *redis.StringSliceCmd:
			for pos, raw := range c.Val() {
				src := fmt.Sprintf("%s[%d]", k, pos)
				if r.kind == kindZSet {
					src = fmt.Sprintf("%s rank %d", k, pos)
				}
				out = append(out, layout.ParseEntry(src, []byte(raw), r.fields).RequireID())
			}
		case *redis.XMessageSliceCmd:
			for _, m := range c.Val() {
				out = append(out, r.streamEntry(k, m))
			}
		}
	}
	return out, nil
}

// streamEntry reads one stream entry: its field's value, or, when the
// field is missing, a Corrupt entry carrying every field it has.
func (r *redisReader) streamEntry(key string, m redis.XMessage) layout.Entry {
	src := key + " " + m.ID
	if v, ok := m.Values[r.field].(string); ok {
		return layout.ParseEntry(src, []byte(v), r.fields).RequireID()
	}
	raw, err := json.Marshal(m.Values)
	if err != nil {
		raw, _ = json.Marshal(fmt.Sprint(m.Values))
	}
	return layout.Entry{Source: src, Raw: raw, Corrupt: "no field " + r.field}
}

func (r *redisReader) Close() error { return nil }
