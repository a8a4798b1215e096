package drill

import (
	"context"
	"errors"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/drill/proxy"
	"github.com/faultline/faultline/reference/store/redisstore"
)

// stopEverything stops the workers and closes every part; safe to call
// twice.
func (d *drill) stopEverything() {
	if d.sup != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		_ = d.sup.Stop(ctx, 3*time.Second)
		cancel()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, g := range d.gws {
		_ = g.Close(ctx)
	}
	for _, r := range d.rcvs {
		_ = r.Close(ctx)
	}
	d.feedOnce.Do(func() { close(d.feedDone) })
	if d.feedSrv != nil {
		_ = d.feedSrv.Close()
	}
	for _, p := range []*proxy.Proxy{d.qProxy, d.dProxy} {
		if p != nil {
			_ = p.Close()
		}
	}
	for _, f := range d.workerLogs {
		_ = f.Close()
	}
}

// cleanup undoes every fault, stops every part and, unless Keep, removes
// the namespace's keys and the work directory.
func (d *drill) cleanup() {
	d.undoFaults()
	d.stopEverything()
	if d.ext != nil {
		d.closeExternal()
	}
	if d.rdb != nil {
		if !d.opts.Keep {
			d.deleteClaimed()
		}
		_ = d.rdb.Close()
	}
	if d.tmpDir && !d.opts.Keep {
		_ = os.RemoveAll(d.dir)
	}
}

// deleteClaimed removes what this drill wrote — its namespace and its
// canary's — on every exit it lives through, a refusal at start-up
// included: when the claim's answer was lost, the claim is read back and
// the namespace removed only if the claim is this drill's. A connection
// killed meanwhile is retried (three tries in all, within 30s).
func (d *drill) deleteClaimed() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if !d.claimed && d.claimUnsure && d.claimVal != "" {
		for range 3 {
			v, err := d.rdb.Get(ctx, claimKey(d.ns)).Result()
			if err == nil || errors.Is(err, redis.Nil) {
				d.claimed = err == nil && v == d.claimVal
				break
			}
		}
	}
	if !d.claimed {
		return
	}
	for _, ns := range []string{d.ns + "-canary", d.ns} { // the claim goes last
		if ns != d.ns {
			// NS-canary may be another drill's namespace: its claim says so.
			if n, err := d.rdb.Exists(ctx, claimKey(ns)).Result(); err != nil || n > 0 {
				continue
			}
		}
		for range 3 {
			if DeleteNamespace(ctx, d.rdb, ns) == nil {
				break
			}
		}
	}
}

// DeleteNamespace removes every key of a namespace, in batches.
func DeleteNamespace(ctx context.Context, rdb redis.UniversalClient, namespace string) error {
	var cursor uint64
	for {
		keys, next, err := rdb.Scan(ctx, cursor, redisstore.Prefix(namespace)+"*", 1000).Result()
		if err != nil {
			return err
		}
		if len(keys) > 0 {
			if err := rdb.Unlink(ctx, keys...).Err(); err != nil {
				return err
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}

// closeExternal closes the adapters and, unless Keep, deletes the
// layout's keys the drill checked empty at its start.
func (d *drill) closeExternal() {
	e := d.ext
	if e.inj != nil {
		_ = e.inj.Close()
	}
	if e.rd != nil {
		_ = e.rd.Close()
	}
	if d.rdb != nil && d.claimed && e.owns && !d.opts.Keep {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if len(e.keys) > 0 {
			_ = d.rdb.Unlink(ctx, e.keys...).Err()
		}
		for ks := e.jobKeys; len(ks) > 0; {
			n := min(len(ks), 500)
			_ = d.rdb.Unlink(ctx, ks[:n]...).Err()
			ks = ks[n:]
		}
		// The system's own keys under the namespace (processing lists,
		// retry sets): the namespace is the drill's.
		_ = unlinkMatching(ctx, d.rdb, globEscape(d.ns)+":*")
		if d.opts.Namespace == "" || d.opts.NamespaceMadeUp {
			// A namespace the drill made up is in no one else's key: a
			// system that puts it inside its own keys (asynq's
			// asynq:{QUEUE}:...) is cleaned too.
			_ = unlinkMatching(ctx, d.rdb, "*"+globEscape(d.ns)+"*")
		}
	}
}

// firstMatching returns a key matching a SCAN pattern, "" when none does.
func firstMatching(ctx context.Context, rdb *redis.Client, pattern string) (string, error) {
	var cursor uint64
	for {
		keys, next, err := rdb.Scan(ctx, cursor, pattern, 1000).Result()
		if err != nil || len(keys) > 0 {
			if len(keys) > 0 {
				return keys[0], err
			}
			return "", err
		}
		if cursor = next; cursor == 0 {
			return "", nil
		}
	}
}

// unlinkMatching removes the keys matching a SCAN pattern, in batches.
func unlinkMatching(ctx context.Context, rdb *redis.Client, pattern string) error {
	var cursor uint64
	for {
		keys, next, err := rdb.Scan(ctx, cursor, pattern, 1000).Result()
		if err != nil {
			return err
		}
		if len(keys) > 0 {
			if err := rdb.Unlink(ctx, keys...).Err(); err != nil {
				return err
			}
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

// globEscape escapes the glob characters of a SCAN pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
