package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/reference/disposition"
)

// The fields of an entry of the event stream (store.Config.EventStream), as
// the scripts write them.
const (
	fieldJob      = "job"  // job ID
	fieldTask     = "task" // its task
	fieldFrom     = "from" // the state it left (disposition.State's name)
	fieldTo       = "to"   // the state it reached
	fieldReason   = "why"  // disposition.Reason
	fieldAt       = "at"   // the caller's now, Unix ms
	fieldAttempts = "att"  // its counted attempts after the move
	fieldPrev     = "prev" // the ID of the entry before this one ("0-0": none)
)

// StreamStart is the position before the first entry of an event stream:
// ReadEvents from it reads the stream from its start.
const StreamStart = "0-0"

// ErrEventsTrimmed says entries of the event stream were trimmed away
// (MAXLEN) before the reader read them: what it read is not every move.
var ErrEventsTrimmed = errors.New("event stream: entries were trimmed before they were read")

// StreamEvent is one entry of a namespace's event stream.
type StreamEvent struct {
	// ID is the entry's stream ID: ReadEvents after it reads on from here.
	ID string
	// Prev is the ID of the entry written before it (StreamStart for the
	// stream's first).
	Prev string
	// Event is the move; At is in UTC, to the millisecond.
	Event disposition.Event
}

// EventStreamKey returns the key of a namespace's event stream,
// "{faultline:NS}:events": under the namespace's hash tag, so the scripts
// append to it in the same step as the move.
func EventStreamKey(namespace string) string { return Prefix(namespace) + ":events" }

// ReadEvents reads up to count entries (count < 1: all there are) of the
// namespace's event stream after the entry with ID after ("", "0" or
// StreamStart: from the start), oldest first, waiting up to block for the
// first one when there is none yet (block <= 0: not at all). It returns no
// entries and no error when none came.
//
// To follow the stream, call it again with the last ID it returned. Each
// entry names the one before it, so a gap is detected: when the first entry
// read does not follow after (entries between them were trimmed by MAXLEN
// before they were read), ReadEvents returns the entries and an error
// matching ErrEventsTrimmed; the reader then knows it did not see every
// move.
//
// It is safe for concurrent use and never writes. With the stream off
// (store.Config.EventStream 0) there is nothing to read.
func (s *Store) ReadEvents(ctx context.Context, after string, count int, block time.Duration) ([]StreamEvent, error) {
	if after == "" || after == "0" {
		after = StreamStart
	}
	args := &redis.XReadArgs{Streams: []string{EventStreamKey(s.cfg.Namespace), after}, Block: -1}
	if count > 0 {
		args.Count = int64(count)
	}
	if block > 0 {
		args.Block = max(block, time.Millisecond)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res, err := s.rdb.XRead(ctx, args).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	var out []StreamEvent
	for _, st := range res {
		for _, m := range st.Messages {
			ev, err := streamEvent(m)
			if err != nil {
				return out, fmt.Errorf("read events: %w", err)
			}
			out = append(out, ev)
		}
	}
	if len(out) > 0 && out[0].Prev != after {
		return out, fmt.Errorf("%w: the first entry after %s follows %s", ErrEventsTrimmed, after, out[0].Prev)
	}
	return out, nil
}

// states maps disposition.State names back to states.
var states = func() map[string]disposition.State {
	m := map[string]disposition.State{}
	for st := disposition.None; st <= disposition.Held; st++ {
		m[st.String()] = st
	}
	return m
}()

// streamEvent decodes one stream entry.
func streamEvent(m redis.XMessage) (StreamEvent, error) {
	str := func(f string) string {
		v, _ := m.Values[f].(string)
		return v
	}
	from, ok1 := states[str(fieldFrom)]
	to, ok2 := states[str(fieldTo)]
	at, err1 := strconv.ParseInt(str(fieldAt), 10, 64)
	att, err2 := strconv.Atoi(str(fieldAttempts))
	if !ok1 || !ok2 || err1 != nil || err2 != nil || str(fieldJob) == "" || str(fieldPrev) == "" {
		return StreamEvent{}, fmt.Errorf("entry %s does not decode: %v", m.ID, m.Values)
	}
	return StreamEvent{ID: m.ID, Prev: str(fieldPrev), Event: disposition.Event{
		JobID: str(fieldJob), Task: str(fieldTask), From: from, To: to,
		Reason: disposition.Reason(str(fieldReason)), At: time.UnixMilli(at).UTC(), Attempts: att,
	}}, nil
}

// FollowEvents reads the namespace's event stream after the entry with ID
// after ("0": from its start), handing each event to fn in order, waiting
// up to poll at a time for more (at least a millisecond; each wait ends
// with a check of ctx), until ctx ends (it returns ctx's error), fn returns
// an error (it returns that), or a read fails. On a gap it hands fn the
// entries read and returns an error matching ErrEventsTrimmed; following on
// from the last ID fn saw is then possible, but what was trimmed is lost.
func (s *Store) FollowEvents(ctx context.Context, after string, poll time.Duration, fn func(StreamEvent) error) error {
	poll = max(poll, time.Millisecond)
	for {
		got, err := s.ReadEvents(ctx, after, 0, poll)
		for _, ev := range got {
			if ferr := fn(ev); ferr != nil {
				return ferr
			}
			after = ev.ID
		}
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}
