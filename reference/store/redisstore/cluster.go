package redisstore

import (
	"context"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// ClusterRedirects is how many times a cluster client follows a MOVED or
// ASK redirection, or waits out a TRYAGAIN, before it gives the caller the
// error. A namespace is one slot; while that slot moves between nodes every
// script of the namespace is answered TRYAGAIN (see Store.keys), and
// go-redis waits between tries (8 ms, doubling, at most 512 ms), so 40 tries
// ride out a resharding of about 15 s.
const ClusterRedirects = 40

// NewClusterClient returns a client of the Redis Cluster whose seed nodes
// are addrs ("host:port"), as faultline uses it. What it retries, and why
// that is safe:
//
//   - MOVED and ASK: followed at once. A node that redirects did not run
//     the script.
//   - TRYAGAIN (a multi-key command on a slot being migrated) and
//     CLUSTERDOWN: tried again after a backoff. The node did not run the
//     script either.
//   - A lost connection, a timeout, EOF: not retried. The script may have
//     run; the caller sees the error, and its own retry gets the script's
//     guarded answer (the lease is fenced: "lease lost"; a requeued entry:
//     "already requeued"), as with NewClient. The store sends its scripts
//     as commands that say so (noRetryCmd), since a cluster client would
//     otherwise resend them on its own.
func NewClusterClient(addrs []string) *redis.ClusterClient {
	return redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                    addrs,
		MaxRedirects:             ClusterRedirects,
		MaxRetries:               -1,
		DialerRetries:            1,
		ContextTimeoutEnabled:    true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
}

// noRetryCmd is a command the client must not send again on its own after
// a lost connection or a timeout: a script that may have run.
type noRetryCmd struct{ *redis.Cmd }

// NoRetry tells go-redis not to resend the command.
func (noRetryCmd) NoRetry() bool { return true }

// scripter sends scripts as noRetryCmd, so that a cluster client, which
// retries other commands on a lost connection, leaves a script whose reply
// was lost to its caller (see NewClusterClient). Redirections (MOVED, ASK)
// and TRYAGAIN are still followed: the node that answers them ran nothing.
type scripter struct{ redis.UniversalClient }

func (s scripter) eval(ctx context.Context, name, script string, keys []string, args []any) *redis.Cmd {
	all := make([]any, 0, 3+len(keys)+len(args))
	all = append(all, name, script, len(keys))
	for _, k := range keys {
		all = append(all, k)
	}
	all = append(all, args...)
	cmd := redis.NewCmd(ctx, all...)
	_ = s.Process(ctx, noRetryCmd{cmd})
	return cmd
}

// Eval runs script with EVAL.
func (s scripter) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return s.eval(ctx, "eval", script, keys, args)
}

// EvalSha runs the script of sha1 with EVALSHA.
func (s scripter) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return s.eval(ctx, "evalsha", sha1, keys, args)
}
