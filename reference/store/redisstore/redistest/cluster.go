package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive // Ginkgo's DSL reads best dot-imported.
	"github.com/redis/go-redis/v9"
)

// ClusterNodes is how many masters the test cluster has: the fewest Redis
// Cluster accepts.
const ClusterNodes = 3

// Cluster is a Redis Cluster of ClusterNodes redis-server child processes
// on loopback, masters only, its 16,384 slots spread by redis-cli.
type Cluster struct {
	// Addrs are the nodes' "127.0.0.1:PORT", in the order they were
	// started.
	Addrs []string
	nodes []*Server
}

// ErrNoCLI says redis-cli, which creates the cluster, is not on PATH.
var ErrNoCLI = errors.New("redis-cli is not on PATH")

// StartCluster starts ClusterNodes redis-servers with cluster mode on, joins
// them with `redis-cli --cluster create` and waits until every node says
// cluster_state:ok. It returns ErrNoServer or ErrNoCLI when a binary is
// missing.
func StartCluster() (*Cluster, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, ErrNoServer
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		return nil, ErrNoCLI
	}
	c := &Cluster{}
	for range ClusterNodes {
		var s *Server
		for range 3 { // a free port can be taken between the probe and the start
			if s, err = start(bin, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
				"--cluster-node-timeout", "5000"); err == nil {
				break
			}
		}
		if err != nil {
			_ = c.Stop()
			return nil, err
		}
		c.nodes = append(c.nodes, s)
		c.Addrs = append(c.Addrs, s.Addr)
	}
	args := append([]string{"--cluster", "create"}, c.Addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		_ = c.Stop()
		return nil, fmt.Errorf("redis-cli --cluster create: %w:\n%s", err, out)
	}
	if err := c.waitOK(30 * time.Second); err != nil {
		_ = c.Stop()
		return nil, err
	}
	return c, nil
}

// waitOK waits until every node reports cluster_state:ok and knows every
// other node.
func (c *Cluster) waitOK(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		ok := true
		for _, a := range c.Addrs {
			n := redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1})
			info, err := n.ClusterInfo(ctx).Result()
			_ = n.Close()
			if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, fmt.Sprintf("cluster_known_nodes:%d", len(c.Addrs))) {
				ok = false
				break
			}
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the test cluster %v was not ok after %v", c.Addrs, timeout)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Stop kills every node and removes their directories.
func (c *Cluster) Stop() error {
	var errs []error
	for _, s := range c.nodes {
		errs = append(errs, s.Stop())
	}
	return errors.Join(errs...)
}

var (
	clusterOnce sync.Once
	cluster     *Cluster
	clusterErr  error
)

// SharedCluster returns the test process's cluster, starting it on first
// use; call StopSharedCluster at the end of the process (TestMain).
func SharedCluster() (*Cluster, error) {
	clusterOnce.Do(func() { cluster, clusterErr = StartCluster() })
	return cluster, clusterErr
}

// StopSharedCluster stops the process's cluster if one was started.
func StopSharedCluster() {
	if cluster != nil {
		_ = cluster.Stop()
	}
}

// RealCluster returns the process's test cluster, its every node flushed.
// Without redis-server or redis-cli it skips the spec with a message, or
// fails it when FAULTLINE_REQUIRE_REDIS=1.
func RealCluster() *Cluster {
	GinkgoHelper()
	c, err := SharedCluster()
	switch {
	case (errors.Is(err, ErrNoServer) || errors.Is(err, ErrNoCLI)) && !Required():
		msg := err.Error() + ": the Redis Cluster lane is skipped (install redis-server and redis-cli, or set " +
			RequireEnv + "=1 to make this a failure)"
		skipNote.Do(func() { fmt.Fprintln(os.Stderr, "redistest: "+msg) })
		Skip(msg)
	case errors.Is(err, ErrNoServer) || errors.Is(err, ErrNoCLI):
		Fail(RequireEnv + "=1 but " + err.Error() + ": install redis-server (it brings redis-cli); the Redis Cluster lane must run, not be skipped")
	case err != nil:
		Fail("start the test Redis Cluster: " + err.Error())
	}
	ctx := context.Background()
	for _, a := range c.Addrs {
		n := redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1})
		err := n.FlushAll(ctx).Err()
		_ = n.Close()
		if err != nil {
			Fail("flush the test cluster's node " + a + ": " + err.Error())
		}
	}
	return c
}

// node returns a plain client of the node at addr.
func node(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
}

// Owner returns the address of the node that serves slot.
func (c *Cluster) Owner(ctx context.Context, slot int) (string, error) {
	n := node(c.Addrs[0])
	defer n.Close()
	shards, err := n.ClusterSlots(ctx).Result()
	if err != nil {
		return "", fmt.Errorf("cluster slots: %w", err)
	}
	for _, s := range shards {
		if s.Start <= slot && slot <= s.End && len(s.Nodes) > 0 {
			return s.Nodes[0].Addr, nil
		}
	}
	return "", fmt.Errorf("no node serves slot %d", slot)
}

// MigrateSlot moves slot, keys and all, to the node at to, the way
// `redis-cli --cluster reshard` does: the target imports and the source
// migrates the slot, its keys go over in MIGRATE batches of batch keys,
// and every node is told the slot's new owner. between, when not nil, is
// called after each batch (the slot is then half moved), so that a spec can
// drive traffic in the middle of a resharding.
func (c *Cluster) MigrateSlot(ctx context.Context, slot int, to string, batch int, between func(moved int)) error {
	from, err := c.Owner(ctx, slot)
	if err != nil {
		return err
	}
	if from == to {
		return nil
	}
	src, dst := node(from), node(to)
	defer src.Close()
	defer dst.Close()
	srcID, err := src.Do(ctx, "cluster", "myid").Text()
	if err != nil {
		return err
	}
	dstID, err := dst.Do(ctx, "cluster", "myid").Text()
	if err != nil {
		return err
	}
	if err := dst.Do(ctx, "cluster", "setslot", slot, "importing", srcID).Err(); err != nil {
		return fmt.Errorf("setslot importing: %w", err)
	}
	if err := src.Do(ctx, "cluster", "setslot", slot, "migrating", dstID).Err(); err != nil {
		return fmt.Errorf("setslot migrating: %w", err)
	}
	host, port, _ := strings.Cut(to, ":")
	moved := 0
	for {
		keys, err := src.ClusterGetKeysInSlot(ctx, slot, batch).Result()
		if err != nil {
			return fmt.Errorf("getkeysinslot: %w", err)
		}
		if len(keys) == 0 {
			break
		}
		args := []any{"migrate", host, port, "", 0, 10000, "keys"}
		for _, k := range keys {
			args = append(args, k)
		}
		if err := src.Do(ctx, args...).Err(); err != nil {
			return fmt.Errorf("migrate %d keys: %w", len(keys), err)
		}
		moved += len(keys)
		if between != nil {
			between(moved)
		}
	}
	// The new owner first, then the old, then the rest: as redis-cli does.
	for _, a := range append([]string{to, from}, c.Addrs...) {
		n := node(a)
		err := n.Do(ctx, "cluster", "setslot", slot, "node", dstID).Err()
		_ = n.Close()
		if err != nil {
			return fmt.Errorf("setslot node on %s: %w", a, err)
		}
	}
	return nil
}
