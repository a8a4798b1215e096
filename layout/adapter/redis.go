package adapter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/layout"
)

var (
	_ Injector    = (*listInjector)(nil)
	_ QueueReader = (*listInjector)(nil)
	_ Injector    = (*streamInjector)(nil)
	_ QueueReader = (*streamInjector)(nil)
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
	var doc any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return "", "not JSON"
	}
	id, ok := layout.Lookup(doc, r.idPath)
	if !ok || id == "" {
		return "", "no job ID at " + r.idPath
	}
	return id, ""
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
			bad.Positions = append(bad.Positions, strconv.Itoa(i))
			bad.Reasons = append(bad.Reasons, why)
			continue
		}
		ids = append(ids, id)
	}
	if !l.rpush {
		slices.Reverse(ids)
	}
	if len(bad.Positions) > 0 {
		return ids, bad
	}
	return ids, nil
}

func (l *listInjector) Close() error { return nil }

// streamInjector adds documents to a Redis stream.
type streamInjector struct {
	rdb   redis.UniversalClient
	key   string
	field string
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

// Queued reads the stream, oldest first. A position in a CorruptError is
// the entry's stream ID.
func (s *streamInjector) Queued(ctx context.Context) ([]string, error) {
	msgs, err := s.rdb.XRange(ctx, s.key, "-", "+").Result()
	if err != nil {
		return nil, fmt.Errorf("read queue %s: %w", s.key, err)
	}
	var ids []string
	bad := &CorruptError{Queue: s.key}
	for _, m := range msgs {
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
			bad.Positions = append(bad.Positions, m.ID)
			bad.Reasons = append(bad.Reasons, why)
			continue
		}
		ids = append(ids, id)
	}
	if len(bad.Positions) > 0 {
		return ids, bad
	}
	return ids, nil
}

func (s *streamInjector) Close() error { return nil }

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
