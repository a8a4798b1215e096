package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/store"
)

var (
	_ queue.Queue = (*Store)(nil)
	_ dlq.Store   = (*Store)(nil)
)

// strayBound bounds how many stray ids (ids in a list whose job is not there,
// written by something else) one Dequeue skips.
const strayBound = 100

// casAttempts bounds how often one call re-reads an entry that changed under
// it before giving up with ErrContended.
const casAttempts = 16

// ErrContended is returned when an entry kept changing under a call for
// casAttempts rounds; nothing was written by the call. Retrying is safe.
var ErrContended = errors.New("dlq entry changed under every attempt")

// Store is the queue and the DLQ of one namespace on Redis. It is safe for
// concurrent use, by goroutines and by processes: every move is one Lua
// script guarded like a compare-and-set.
type Store struct {
	rdb    redis.UniversalClient
	cfg    store.Config
	prefix string
	keys   []string
	ops    opsState // the layout guard and the audit cap (version.go, audit.go)
}

// New returns the store of cfg.Namespace on client. It checks cfg and writes
// nothing; the scripts are loaded on first use (EVALSHA, falling back to
// EVAL).
func New(client redis.UniversalClient, cfg store.Config) (*Store, error) {
	if client == nil {
		return nil, errors.New("redisstore: client is nil")
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("redisstore: %w", err)
	}
	cfg = cfg.WithDefaults()
	prefix := Prefix(cfg.Namespace)
	// Two keys that no script writes: KEYS[1], the prefix every key name
	// is derived from, and a guard. On a Redis Cluster, a script with
	// several keys that are not all there is refused with TRYAGAIN by the
	// node a slot migrates from and by the node it migrates to, where a
	// script with one missing key would be sent (ASK) to the new node and
	// run there on half of the namespace's keys: so while a namespace's
	// slot moves, no script of it runs anywhere, and the client tries again
	// (NewClusterClient). On one Redis the guard costs nothing.
	return &Store{rdb: client, cfg: cfg, prefix: prefix, keys: []string{prefix, prefix + ":slot-guard"}}, nil
}

// Prefix returns the prefix, and hash tag, of every key of a namespace:
// "{faultline:NS}".
func Prefix(namespace string) string { return "{faultline:" + namespace + "}" }

// Config returns the store's configuration, defaults applied.
func (s *Store) Config() store.Config { return s.cfg }

// NewClient returns a client of the Redis at addr ("host:port", or a
// "redis://host:port/db" URL) as faultline uses it: the one place clients are
// built. It turns off go-redis's maintenance
// notifications (a plain Redis does not know CLIENT MAINT_NOTIFICATIONS and
// the client would log a fallback line per connection) and go-redis's
// automatic retries: a script whose reply was lost is not sent again behind
// the caller's back; the caller sees the error, and its own retry gets the
// script's guarded answer ("already requeued", "lease lost").
func NewClient(addr string) *redis.Client {
	opt := &redis.Options{Addr: addr}
	if strings.Contains(addr, "://") {
		if o, err := redis.ParseURL(addr); err == nil {
			opt = o
		}
	}
	opt.MaxRetries = -1
	// A refused dial fails at once: by default go-redis dials five times,
	// 100ms apart, so a Redis that is down would cost each call half a
	// second before its caller hears of it (and a drill at time scale K,
	// K times that of its scenario's time: a lease gone while a worker
	// waits to park a dead letter).
	opt.DialerRetries = 1
	// Without this go-redis ignores context deadlines (it uses its own
	// read/write timeouts), and a caller's StoreTimeout would mean nothing.
	opt.ContextTimeoutEnabled = true
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	return redis.NewClient(opt)
}

// Load loads every script into Redis (SCRIPT LOAD), so that the first calls
// of a pipeline or a benchmark do not pay for EVAL. Calling it is optional.
func (s *Store) Load(ctx context.Context) error {
	for _, sc := range allScripts {
		if err := sc.Load(ctx, s.rdb).Err(); err != nil {
			return fmt.Errorf("load scripts: %w", err)
		}
	}
	return nil
}

// run runs a script that reports no move on the namespace's prefix. A
// canceled context sends nothing.
func (s *Store) run(ctx context.Context, sc *redis.Script, args ...any) (any, error) {
	return s.runAt(ctx, time.Time{}, sc, args...)
}

// runAt runs a script on the namespace's prefix, appending the two ARGV
// every script takes last: now, the time of the events of the moves it
// makes, and the event stream's MAXLEN ("0": off). A canceled context sends
// nothing.
func (s *Store) runAt(ctx context.Context, now time.Time, sc *redis.Script, args ...any) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	at := "0"
	if !now.IsZero() {
		at = millis(now)
	}
	if err := s.guardWrite(ctx, sc); err != nil {
		return nil, err
	}
	args = append(args, at, s.cfg.EventStream)
	return sc.Run(ctx, scripter{s.rdb}, s.keys, args...).Result()
}

// emit hands events to the observer, in order, after the move happened.
func (s *Store) emit(evs ...disposition.Event) {
	if s.cfg.Observer == nil {
		return
	}
	for _, e := range evs {
		s.cfg.Observer(e)
	}
}

// millis is t as the integer milliseconds scripts take: the store's
// resolution. Scores are these numbers (a float64 holds them exactly).
func millis(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

// Reply decoding: scripts answer with nested arrays of strings and integers.

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

func asString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case []byte:
		return string(x)
	}
	return ""
}

func asInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}

// moved is one job a bulk queue script moved.
type moved struct {
	id, task string
	attempts int
}

// triples reads {id, task, attempts, ...} with one trailing number.
func triples(r []any) ([]moved, int64) {
	if len(r) == 0 {
		return nil, 0
	}
	last := asInt(r[len(r)-1])
	r = r[:len(r)-1]
	out := make([]moved, 0, len(r)/3)
	for i := 0; i+2 < len(r); i += 3 {
		out = append(out, moved{id: asString(r[i]), task: asString(r[i+1]), attempts: int(asInt(r[i+2]))})
	}
	return out, last
}
