package cli

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/faultline/faultline/drill"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/sim"
)

// The stores `faultline run --backend` runs the simulator on.
const (
	runOnMemory    = "memory"
	runOnMiniredis = "miniredis"
	runOnRedis     = "redis"
)

// runBackendNames are --backend's allowed values, the default first.
var runBackendNames = []string{runOnMemory, runOnMiniredis, runOnRedis}

// runBackendFlags are run's store flags.
type runBackendFlags struct {
	backend     string
	redisURL    string
	namespace   string
	allowRemote bool
}

func (f *runBackendFlags) register(c *cobra.Command) {
	fl := c.Flags()
	fl.StringVar(&f.backend, "backend", runOnMemory, "the store the simulator runs on: "+strings.Join(runBackendNames, ", ")+" (the same scenario and seed give the same report on each)")
	addRequiredRedisFlag(c, &f.redisURL, "the Redis server of --backend redis (required with it)")
	fl.StringVar(&f.namespace, "namespace", "", "with --backend redis: the namespace prefix of the runs (default: a fresh run-<random>); each run uses <prefix>-<n>, which must hold no keys")
	fl.BoolVar(&f.allowRemote, "allow-remote", false, "with --backend redis: allow a Redis off loopback (needs --namespace)")
}

// runStore opens one run's store; nil means the simulator's in-memory one.
// done releases what the run used (the run's keys, an embedded server).
type runStore func(ctx context.Context, index uint64) (opt sim.Option, done func(), err error)

// openRunBackend checks the store flags and returns how each run opens
// its store, and what closes the connection at the end.
func openRunBackend(c *cobra.Command, f runBackendFlags) (runStore, func(), error) {
	redisFlags := c.Flags().Changed("redis-url") || c.Flags().Changed("namespace") || f.allowRemote
	switch f.backend {
	case runOnMemory, runOnMiniredis:
		if redisFlags {
			return nil, nil, usage(c, fmt.Errorf("--redis-url, --namespace and --allow-remote go with --backend redis, not --backend %s", f.backend))
		}
	case runOnRedis:
	default:
		return nil, nil, usage(c, fmt.Errorf("unknown --backend %q (allowed: %s)", masked(f.backend), strings.Join(runBackendNames, ", ")))
	}
	switch f.backend {
	case runOnMemory:
		return nil, func() {}, nil
	case runOnMiniredis:
		return miniredisRun, func() {}, nil
	}
	if !c.Flags().Changed("redis-url") {
		return nil, nil, usage(c, errors.New("--backend redis needs --redis-url (a Redis that faultline writes to and cleans up after, e.g. redis://127.0.0.1:6379/0)"))
	}
	rt, err := parseRedisURL(f.redisURL)
	if err != nil {
		return nil, nil, usage(c, err)
	}
	if err := drill.CheckRedisURL(rt.url, f.allowRemote, f.namespace); err != nil {
		return nil, nil, usage(c, errors.New(strings.NewReplacer("a drill", "a run", "to drill a Redis", "to run on a Redis").Replace(err.Error())))
	}
	prefix := f.namespace
	if prefix != "" {
		if err := (store.Config{Namespace: prefix + "-0"}).Validate(); err != nil {
			return nil, nil, usage(c, fmt.Errorf("--namespace %q: takes 1-54 letters, digits, '-', '_' and '.' (each run adds -<n>)", masked(prefix)))
		}
	} else {
		var b [4]byte
		_, _ = crand.Read(b[:])
		prefix = "run-" + hex.EncodeToString(b[:])
	}
	client := rt.client()
	if err := client.Ping(c.Context()).Err(); err != nil {
		_ = client.Close()
		return nil, nil, &UnavailableError{Service: "Redis", Addr: rt.addr, Op: "connect", Err: err}
	}
	// Every run's namespace at once, before any run: a prefix in use is
	// refused as invalid input, not as a run that errored.
	if err := checkEmptyNamespace(c.Context(), client, prefix+"-*"); err != nil {
		_ = client.Close()
		return nil, nil, err
	}
	open := func(ctx context.Context, index uint64) (sim.Option, func(), error) {
		ns := prefix + "-" + strconv.FormatUint(index, 10)
		if err := checkEmptyNamespace(ctx, client, ns); err != nil {
			return nil, nil, err
		}
		opt := sim.WithStore(func(_ context.Context, _ sim.Env, cfg store.Config) (sim.Backend, error) {
			cfg.Namespace = ns
			return redisstore.New(client, cfg)
		})
		// The run wrote every key of its namespace (it was empty): they go.
		return opt, func() { _ = clearNamespace(context.WithoutCancel(ctx), client, ns) }, nil
	}
	return open, func() { _ = client.Close() }, nil
}

// miniredisRun gives a run an embedded miniredis of its own, seeded as the
// store specs seed theirs.
func miniredisRun(context.Context, uint64) (sim.Option, func(), error) {
	m := miniredis.NewMiniRedis()
	if err := m.Start(); err != nil {
		return nil, nil, fmt.Errorf("start the embedded miniredis: %w", err)
	}
	m.Seed(1)
	client := redisstore.NewClient(m.Addr())
	opt := sim.WithStore(func(_ context.Context, _ sim.Env, cfg store.Config) (sim.Backend, error) {
		return redisstore.New(client, cfg)
	})
	return opt, func() { _ = client.Close(); m.Close() }, nil
}

// ErrNamespaceInUse: --backend redis was given a namespace that already
// holds keys. A run starts from an empty namespace, as a drill does, so
// that nothing in its store is anything it did not put there, and it
// never deletes what it did not write.
var ErrNamespaceInUse = errors.New("namespace already holds keys")

// checkEmptyNamespace refuses a namespace that holds keys (ns may end in
// a glob's *: every namespace it matches).
func checkEmptyNamespace(ctx context.Context, client *redis.Client, ns string) error {
	keys, _, err := client.Scan(ctx, 0, redisstore.Prefix(ns)+"*", 1000).Result()
	if err != nil {
		return fmt.Errorf("check namespace %q is empty: %w", ns, err)
	}
	for cursor := uint64(1); len(keys) == 0 && cursor != 0; {
		if keys, cursor, err = client.Scan(ctx, cursor, redisstore.Prefix(ns)+"*", 1000).Result(); err != nil {
			return fmt.Errorf("check namespace %q is empty: %w", ns, err)
		}
	}
	if len(keys) > 0 {
		return &InvalidInputError{Err: fmt.Errorf("--namespace: %w: %q (e.g. %s): a run starts from an empty namespace, so that nothing in its store is anything it did not put there", ErrNamespaceInUse, ns, masked(keys[0]))}
	}
	return nil
}
