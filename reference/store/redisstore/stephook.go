package redisstore

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// The names of the multi-step operations a step hook is told about (the
// same as the in-memory store's).
const (
	// OpRequeueMatching is RequeueMatching.
	OpRequeueMatching = "requeue-matching"
	// OpDeleteMatching is DeleteMatching.
	OpDeleteMatching = "delete-matching"
)

// ErrReplyLost is what a step hook returns, wrapped, to have the store run
// the step's script and then lose its reply: the step's moves are made, the
// operation returns the error as if the connection dropped after the
// script ran.
var ErrReplyLost = errors.New("the reply of the script was lost")

// dlqSetItem is the number of ARGV of one dlqSet item (see dlqSetScript).
const dlqSetItem = 8

// SetStepHook installs h (nil removes it), a test hook a harness uses to
// play another client inside one multi-step operation, as with the
// in-memory store's: a bulk move (RequeueMatching, DeleteMatching) calls it
// before the script of each of its steps after the first, with step n
// meaning "after the n-th step's script", pending the IDs the next script
// moves, and op told by the move (a requeue names a target queue). The
// hook is a go-redis hook on the store's client (redis.Hook's
// ProcessHook); it counts the dlqSet scripts of one context, so each
// operation must run on a context of its own (the first script of a new
// context is step 1's). An error from h stops the operation before that
// script, wrapped; one wrapping ErrReplyLost lets the script run and
// returns the error instead of its reply. Scripts the hook's own writes
// run are not counted. No production code path sets one; the scripts are
// not changed.
func (s *Store) SetStepHook(h func(ctx context.Context, op string, step int, pending []string) error) {
	st := stepHooks.of(s.rdb)
	if st == nil {
		return
	}
	st.mu.Lock()
	st.h = h
	st.mu.Unlock()
}

// stepHooks keeps one hook per client: go-redis hooks cannot be removed,
// so a client gets one, and SetStepHook changes what it calls.
var stepHooks = &hookTable{by: map[redis.UniversalClient]*stepHook{}}

type hookTable struct {
	mu sync.Mutex
	by map[redis.UniversalClient]*stepHook
}

// of returns c's hook, adding it on first use; nil when c takes no hooks.
func (t *hookTable) of(c redis.UniversalClient) *stepHook {
	t.mu.Lock()
	defer t.mu.Unlock()
	if h := t.by[c]; h != nil {
		return h
	}
	h := &stepHook{sha: dlqSetScript.Hash()}
	c.AddHook(h)
	t.by[c] = h
	return h
}

// stepHook is the go-redis hook behind SetStepHook.
type stepHook struct {
	sha string
	mu  sync.Mutex
	h   func(ctx context.Context, op string, step int, pending []string) error
	// The operation being counted: its context, the scripts it ran, and
	// whether the hook was called for the next one already (EVALSHA may
	// fall back to EVAL: one step, two commands).
	ctx    context.Context
	done   int
	called bool
	inside bool // h is running: its own scripts are not steps
}

var _ redis.Hook = (*stepHook)(nil)

// DialHook passes dials through.
func (*stepHook) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessPipelineHook passes pipelines through (no bulk step is one).
func (*stepHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// ProcessHook calls the step hook before a bulk step's dlqSet script.
func (k *stepHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args, ok := k.dlqSet(cmd)
		if !ok {
			return next(ctx, cmd)
		}
		k.mu.Lock()
		h := k.h
		if h == nil || k.inside {
			k.mu.Unlock()
			return next(ctx, cmd)
		}
		if k.ctx != ctx {
			k.ctx, k.done, k.called = ctx, 0, false
		}
		step, call := k.done, k.done > 0 && !k.called
		k.called = true
		k.inside = call
		k.mu.Unlock()

		var herr error
		if call {
			op, pending := stepOf(args)
			herr = h(ctx, op, step, pending)
			k.mu.Lock()
			k.inside = false
			k.mu.Unlock()
			if herr != nil && !errors.Is(herr, ErrReplyLost) {
				err := fmt.Errorf("after step %d: %w", step, herr)
				cmd.SetErr(err)
				return err
			}
		}
		err := next(ctx, cmd)
		if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
			return err // EVAL follows: the same step
		}
		k.mu.Lock()
		if k.ctx == ctx {
			k.done++
			k.called = false
		}
		k.mu.Unlock()
		if herr != nil && err == nil {
			err = fmt.Errorf("after step %d: %w", step, herr)
			cmd.SetErr(err)
		}
		return err
	}
}

// dlqSet returns the ARGV of cmd when it runs the dlqSet script.
func (k *stepHook) dlqSet(cmd redis.Cmder) ([]any, bool) {
	a := cmd.Args()
	if len(a) < 3 {
		return nil, false
	}
	name, _ := a[0].(string)
	switch strings.ToLower(name) {
	case "evalsha", "evalsha_ro":
		if sha, _ := a[1].(string); sha != k.sha {
			return nil, false
		}
	case "eval", "eval_ro":
		if src, _ := a[1].(string); sha1Hex(src) != k.sha {
			return nil, false
		}
	default:
		return nil, false
	}
	n, ok := a[2].(int)
	if !ok || 3+n > len(a) {
		return nil, false
	}
	return a[3+n:], true
}

// stepOf reads a dlqSet call's items: the operation (a requeue names a
// target queue) and the IDs it moves.
func stepOf(args []any) (op string, ids []string) {
	op = OpDeleteMatching
	for i := 0; i+dlqSetItem <= len(args); i += dlqSetItem {
		id, _ := args[i].(string)
		ids = append(ids, id)
		if q, _ := args[i+4].(string); q != "" {
			op = OpRequeueMatching
		}
	}
	return op, ids
}

// sha1Hex is the SHA-1 of a script's source, as EVALSHA names it.
func sha1Hex(src string) string {
	sum := sha1.Sum([]byte(src))
	return hex.EncodeToString(sum[:])
}
