package cli

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/faultline/faultline/reference/store/redisstore"
)

// nsScanCalls and nsScanCount bound the scan for the namespaces a Redis
// holds: at most nsScanCalls SCAN steps of nsScanCount keys (about 100,000
// keys), so that a big server is never walked whole.
var nsScanCalls, nsScanCount = 100, 1000

// writesNew names the commands that may write into a namespace that holds
// nothing yet (an import into a new namespace is the point): open does not
// note an empty namespace for them.
var writesNew = map[string]bool{"import": true, "migrate": true, "upgrade": true}

// holdsData reports whether the namespace holds any of the keys whose
// presence means it holds data (redisstore.DataKeys).
func (d *dlqConn) holdsData(ctx context.Context) (bool, error) {
	n, err := d.rdb.Exists(ctx, redisstore.DataKeys(d.namespace)...).Result()
	if err != nil {
		return false, fmt.Errorf("look for namespace %q: %w", d.namespace, err)
	}
	return n > 0, nil
}

// noteIfNothing says on stderr, in one line, when the namespace holds no
// faultline key at all — a typo in --namespace, or another Redis or
// database — naming the namespaces that do hold keys there. A read of it
// still exits as for an empty DLQ: the note is not an error. It costs one
// EXISTS when the namespace holds data; else a bounded SCAN.
func (d *dlqConn) noteIfNothing(c *cobra.Command) error {
	ctx := c.Context()
	if ok, err := d.holdsData(ctx); err != nil || ok {
		return err
	}
	names, complete, err := scanNamespaces(ctx, d.rdb, nsScanCalls, nsScanCount)
	if err != nil {
		return fmt.Errorf("look for namespace %q: %w", d.namespace, err)
	}
	if slices.Contains(names, d.namespace) {
		return nil // keys other than the presence keys (a fleet's breaker)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "namespace %q holds nothing at %s", d.namespace, d.target.printable())
	switch {
	case !complete:
		total, err := d.rdb.DBSize(ctx).Result()
		if err != nil {
			return fmt.Errorf("look for namespace %q: %w", d.namespace, err)
		}
		fmt.Fprintf(&b, " that faultline dlq reads (no DLQ, queue or audit key); namespaces here (from a partial scan, about %d of %d keys): %s",
			nsScanCalls*nsScanCount, total, cmp.Or(strings.Join(names, ", "), "none seen"))
	case len(names) == 0:
		b.WriteString("; no namespace holds faultline keys here (a wrong --redis-url or database?)")
	default:
		fmt.Fprintf(&b, "; namespaces here: %s", strings.Join(names, ", "))
	}
	fmt.Fprintln(c.ErrOrStderr(), masked(b.String()))
	return nil
}

// scanNamespaces returns the namespaces whose keys ({faultline:NS}…) a
// SCAN of at most calls steps of count keys finds, sorted, and whether the
// scan reached the end of the keyspace.
func scanNamespaces(ctx context.Context, rdb *redis.Client, calls, count int) ([]string, bool, error) {
	const open = "{faultline:"
	seen := map[string]bool{}
	names := func() []string {
		out := make([]string, 0, len(seen))
		for ns := range seen {
			out = append(out, ns)
		}
		return sortedStrings(out)
	}
	var cursor uint64
	for range calls {
		keys, next, err := rdb.Scan(ctx, cursor, open+"*", int64(count)).Result()
		if err != nil {
			return nil, false, err
		}
		for _, k := range keys {
			if ns, _, ok := strings.Cut(strings.TrimPrefix(k, open), "}"); ok && ns != "" {
				seen[ns] = true
			}
		}
		if next == 0 {
			return names(), true, nil
		}
		cursor = next
	}
	return names(), false, nil
}
