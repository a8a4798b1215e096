// Package adapter talks to a job system that faultline did not write, the
// way a layout.Inject or a layout.DLQ describes it: it puts jobs into the
// system's queue (a Redis list or stream, an HTTP endpoint, a long-running
// command, or the reference store of the faultline preset) and reads its
// dead letters back as layout.Entry values (Redis lists, sorted sets and
// streams, an HTTP endpoint, a command printing JSON lines, or the
// reference DLQ).
//
// Every adapter reads what it finds and keeps what it cannot read: a DLQ
// entry that is not JSON, or lacks its job's ID, comes back Corrupt, never
// dropped; a queued element that cannot be read is named in an error that
// matches ErrCorrupt, next to the IDs that could. Entries come back in a
// stable order: keys in the order the layout lists them, then position.
package adapter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/layout"
	"github.com/faultline/faultline/reference/clock"
)

// DefaultHTTPTimeout is the timeout of the HTTP client an Env without one
// gets.
const DefaultHTTPTimeout = 10 * time.Second

// Env is what adapters need beyond their config.
type Env struct {
	// Redis is required by the Redis adapters and the faultline preset.
	Redis redis.UniversalClient
	// Namespace is the faultline preset's store namespace.
	Namespace string
	// EventStream is the faultline preset's store.Config.EventStream: above
	// zero, its enqueues are written to the namespace's event stream too,
	// as the reference workers of a drill write theirs.
	EventStream int
	// HTTP is the client of the HTTP adapters (default: a client with a
	// DefaultHTTPTimeout timeout).
	HTTP *http.Client
	// Dir is the folder relative command paths and dirs are taken from
	// (the scenario file's folder); "" is the working directory.
	Dir string
	// Environ is the environment given to commands, added to os.Environ()
	// ("KEY=value" strings; a command's own Env comes last and wins).
	Environ []string
	// Expand is applied to every key, URL, header value, command path,
	// argument, directory and environment value before use (placeholders
	// like {namespace}); nil leaves them as they are.
	Expand func(string) string
	// Stderr receives the commands' standard error (nil: discarded; the
	// last bytes are kept for error messages either way).
	Stderr io.Writer
	// Clock stamps the faultline preset's jobs (EnqueuedAt); default the
	// wall clock.
	Clock clock.Clock
}

func (e Env) expand(s string) string {
	if e.Expand == nil {
		return s
	}
	return e.Expand(s)
}

func (e Env) httpClient() *http.Client {
	if e.HTTP != nil {
		return e.HTTP
	}
	return &http.Client{Timeout: DefaultHTTPTimeout}
}

func (e Env) clock() clock.Clock {
	if e.Clock != nil {
		return e.Clock
	}
	return clock.Real{}
}

// Injector puts faultline's jobs into the system's queue.
type Injector interface {
	// Inject puts one job in. An error means the job may or may not be
	// in (a timeout): the caller records it as unknown.
	Inject(ctx context.Context, j layout.Job) error
	// Close releases what the injector holds (a started command); it does
	// not close Env.Redis or Env.HTTP, which the caller owns.
	Close() error
}

// QueueReader is implemented by injectors that can read back what is still
// queued: the Redis list, stream, hash and sorted-set injectors.
type QueueReader interface {
	// Queued returns the IDs of the jobs in the queue, read at the
	// layout's IDPath, the oldest injected first. Elements it cannot read
	// are named by an error matching ErrCorrupt, returned with the IDs it
	// could read; a queue whose layout does not say what is still queued
	// (a stream without its consumer group) gives an error matching
	// ErrNotObservable, saying what to declare.
	Queued(ctx context.Context) ([]string, error)
}

// ErrNotObservable is matched by the error of a Queued whose layout does
// not say which of the queue's elements are still queued.
var ErrNotObservable = errors.New("queue not observable")

// Reader reads the system's dead letters.
type Reader interface {
	// Read returns every entry, corrupt ones included, in a stable order.
	Read(ctx context.Context) ([]layout.Entry, error)
	// Close releases what the reader holds.
	Close() error
}

// ErrCorrupt is matched by the error of a Queued that met queue elements
// it could not read (*CorruptError).
var ErrCorrupt = errors.New("corrupt queue element")

// ErrEnv is matched by the errors of NewInjector and NewReader when Env
// lacks what the config needs (a Redis client).
var ErrEnv = errors.New("adapter environment")

// CorruptError names the queue elements Queued could not read.
type CorruptError struct {
	// Queue is the key read.
	Queue string
	// Positions are the elements' positions ("3" in a list, an entry ID
	// in a stream), with Reasons saying why each could not be read.
	Positions []string
	Reasons   []string
}

// Error returns "corrupt queue element(s) in QUEUE: POS (REASON), ...".
func (e *CorruptError) Error() string {
	s := fmt.Sprintf("%d corrupt queue element(s) in %s:", len(e.Positions), e.Queue)
	for i, p := range e.Positions {
		if i == 5 {
			s += fmt.Sprintf(" … and %d more", len(e.Positions)-i)
			break
		}
		s += fmt.Sprintf(" %s (%s)", p, e.Reasons[i])
	}
	return s
}

// Is matches ErrCorrupt.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// add names one element that could not be read.
func (e *CorruptError) add(pos, why string) {
	e.Positions = append(e.Positions, pos)
	e.Reasons = append(e.Reasons, why)
}

// orNil is e when it names an element, else nil.
func (e *CorruptError) orNil() error {
	if len(e.Positions) == 0 {
		return nil
	}
	return e
}

// NewInjector returns the injector cfg describes, its preset resolved. It
// validates cfg and checks env has what the adapter needs; a command is
// started on the first Inject.
func NewInjector(cfg layout.Inject, env Env) (Injector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("inject: %w", err)
	}
	if cfg.Preset == layout.PresetFaultline {
		return newFaultlineInjector(env)
	}
	r := cfg.Resolved()
	tmpl, idPath := r.Template, r.IDPath
	if tmpl == "" {
		tmpl = layout.DefaultTemplate
	}
	if idPath == "" {
		idPath = "id"
	}
	doc := docRenderer{template: tmpl, idPath: idPath}
	switch {
	case layout.IsFramework(r.Preset):
		return newFrameworkInjector(r, env, doc)
	case r.RedisList != nil:
		if env.Redis == nil {
			return nil, fmt.Errorf("inject: redisList: %w: no Redis client", ErrEnv)
		}
		return &listInjector{rdb: env.Redis, key: env.expand(r.RedisList.Key), rpush: isRPush(r.RedisList.Push), doc: doc}, nil
	case r.RedisStream != nil:
		if env.Redis == nil {
			return nil, fmt.Errorf("inject: redisStream: %w: no Redis client", ErrEnv)
		}
		return &streamInjector{rdb: env.Redis, key: env.expand(r.RedisStream.Key), field: streamField(r.RedisStream.Field),
			group: env.expand(r.RedisStream.Group), doc: doc}, nil
	case r.RedisHash != nil:
		if env.Redis == nil {
			return nil, fmt.Errorf("inject: redisHash: %w: no Redis client", ErrEnv)
		}
		return &recordInjector{rdb: env.Redis, key: env.expand(r.RedisHash.Key), state: r.RedisHash.State, doc: doc, clock: env.clock()}, nil
	case r.RedisZSet != nil:
		if env.Redis == nil {
			return nil, fmt.Errorf("inject: redisZSet: %w: no Redis client", ErrEnv)
		}
		return &recordInjector{rdb: env.Redis, key: env.expand(r.RedisZSet.Key), zset: true, state: r.RedisZSet.State, doc: doc, clock: env.clock()}, nil
	case r.HTTP != nil:
		return &httpInjector{client: env.httpClient(), url: env.expand(r.HTTP.URL), header: expandHeader(r.HTTP.Header, env), doc: doc}, nil
	case r.Command != nil:
		spec, err := newCommandSpec(*r.Command, env)
		if err != nil {
			return nil, fmt.Errorf("inject: %w", err)
		}
		return &commandInjector{spec: spec, doc: doc}, nil
	}
	return nil, fmt.Errorf("inject: %w: no adapter", layout.ErrConfig) // Validate rules this out
}

// NewReader returns the DLQ reader d describes, its preset resolved. It
// validates d and checks env has what the adapter needs.
func NewReader(d layout.DLQ, env Env) (Reader, error) {
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("dlq: %w", err)
	}
	r := d.Resolved()
	needRedis := func(what string) error {
		if env.Redis == nil {
			return fmt.Errorf("dlq: %s: %w: no Redis client", what, ErrEnv)
		}
		return nil
	}
	switch {
	case r.Preset == layout.PresetFaultline:
		if err := needRedis("the faultline preset"); err != nil {
			return nil, err
		}
		return newFaultlineReader(env, r.Fields)
	case layout.IsFramework(r.Preset):
		return newFrameworkReader(r, r.Fields, env)
	case r.RedisList != nil:
		if err := needRedis("redisList"); err != nil {
			return nil, err
		}
		return &redisReader{rdb: env.Redis, kind: kindList, keys: expandAll(r.RedisList.Keys, env), fields: r.Fields}, nil
	case r.RedisZSet != nil:
		if err := needRedis("redisZSet"); err != nil {
			return nil, err
		}
		return &redisReader{rdb: env.Redis, kind: kindZSet, keys: expandAll(r.RedisZSet.Keys, env), fields: r.Fields}, nil
	case r.RedisStream != nil:
		if err := needRedis("redisStream"); err != nil {
			return nil, err
		}
		return &redisReader{rdb: env.Redis, kind: kindStream, keys: []string{env.expand(r.RedisStream.Key)},
			field: streamField(r.RedisStream.Field), fields: r.Fields}, nil
	case r.HTTP != nil:
		return &httpReader{client: env.httpClient(), url: env.expand(r.HTTP.URL), header: expandHeader(r.HTTP.Header, env), fields: r.Fields}, nil
	case r.Command != nil:
		spec, err := newCommandSpec(*r.Command, env)
		if err != nil {
			return nil, fmt.Errorf("dlq: %w", err)
		}
		return &commandReader{spec: spec, fields: r.Fields}, nil
	}
	return nil, fmt.Errorf("dlq: %w: no adapter", layout.ErrConfig) // Validate rules this out
}

// Keys returns the Redis keys in and d touch, expanded, each once, in
// order (the queue's first): a drill refuses to start on non-empty keys
// and deletes them after. The faultline preset's keys are its namespace's
// (redisstore.Prefix), not listed here; a framework preset's are its
// queue's keys (layout.FrameworkKeys), the sets every queue shares aside.
func Keys(in layout.Inject, d layout.DLQ, env Env) []string {
	var keys []string
	add := func(ks ...string) {
		for _, k := range ks {
			if k = env.expand(k); k != "" && !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	ri := in.Resolved()
	if ri.RedisList != nil {
		add(ri.RedisList.Key)
	}
	if ri.RedisStream != nil {
		add(ri.RedisStream.Key)
	}
	if ri.RedisHash != nil {
		add(ri.RedisHash.Key)
	}
	if ri.RedisZSet != nil {
		add(ri.RedisZSet.Key)
	}
	// A framework's keys of this queue alone; the sets every queue shares
	// (Sidekiq's retry, schedule, dead) are not the drill's (CheckFramework
	// refuses them when they hold this queue's jobs).
	for _, fk := range append(frameworkKeys(in.Preset, in.FrameworkOptions(), env), frameworkKeys(d.Preset, d.FrameworkOptions(), env)...) {
		if !fk.Shared {
			add(fk.Key)
		}
	}
	rd := d.Resolved()
	if rd.RedisList != nil {
		add(rd.RedisList.Keys...)
	}
	if rd.RedisZSet != nil {
		add(rd.RedisZSet.Keys...)
	}
	if rd.RedisStream != nil {
		add(rd.RedisStream.Key)
	}
	return keys
}

func expandAll(xs []string, env Env) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = env.expand(x)
	}
	return out
}

func expandHeader(h map[string]string, env Env) map[string]string {
	out := make(map[string]string, len(h))
	for k, v := range h {
		out[k] = env.expand(v)
	}
	return out
}

func streamField(f string) string {
	if f == "" {
		return "job"
	}
	return f
}

// excerpt returns at most max bytes of b, marked when cut.
func excerpt(b []byte, max int) string {
	if len(b) <= max {
		return string(b)
	}
	return string(b[:max]) + "…"
}
