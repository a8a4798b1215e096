package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/cmd/faultline/internal/demo"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/memstore"
	"github.com/faultline/faultline/reference/store/redisstore"
)

// backends are the stores the demo can run on, by flag value. Each returns
// the store and what closes it.
var backends = map[string]func(redis redisTarget) (func(cfg store.Config) (demo.Backend, error), func(), error){
	"memory": func(redisTarget) (func(cfg store.Config) (demo.Backend, error), func(), error) {
		return func(cfg store.Config) (demo.Backend, error) { return memstore.New(cfg) }, func() {}, nil
	},
	// miniredis runs the same Lua scripts as a real Redis, embedded: the
	// default, so that the demo needs no server.
	"miniredis": func(redisTarget) (func(cfg store.Config) (demo.Backend, error), func(), error) {
		m := miniredis.NewMiniRedis()
		if err := m.Start(); err != nil {
			return nil, nil, fmt.Errorf("start the embedded miniredis: %w", err)
		}
		client := redisstore.NewClient(m.Addr())
		return func(cfg store.Config) (demo.Backend, error) { return redisstore.New(client, cfg) },
			func() { _ = client.Close(); m.Close() }, nil
	},
	// redis runs on a real server (a staging drill); the demo's namespace
	// is flushed first.
	"redis": func(t redisTarget) (func(cfg store.Config) (demo.Backend, error), func(), error) {
		client := t.client()
		return func(cfg store.Config) (demo.Backend, error) {
			if err := clearNamespace(context.Background(), client, cfg.Namespace); err != nil {
				return nil, fmt.Errorf("clear namespace %q: %w", cfg.Namespace, err)
			}
			return redisstore.New(client, cfg)
		}, func() { _ = client.Close() }, nil
	},
}

func backendNames() string {
	names := make([]string, 0, len(backends))
	for n := range backends {
		names = append(names, n)
	}
	return strings.Join(sortedStrings(names), ", ")
}

func newDemoCommand() *cobra.Command {
	var (
		seed     uint64
		backend  string
		redisURL string
	)
	c := &cobra.Command{
		Use:   "demo",
		Short: "Play the seed's payment-service challenge through the reference implementation and show what happened to every job",
		Long: `demo runs the payment-service challenge on virtual time: a declined card, gateway
timeouts with and without an idempotency key, an authentication failure that pages,
an SMTP relay that fails until the DLQ, a primary that fails and recovers (jobs
diverted to the batch queue and drained back) and an operator reprocessing the
medium-severity DLQ entries. The same seed prints the same report, byte for byte.`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usage(c, fmt.Errorf("demo takes no arguments, got %q", args[0]))
			}
			return nil
		},
		RunE: func(c *cobra.Command, _ []string) error {
			opener, ok := backends[backend]
			if !ok {
				return usage(c, fmt.Errorf("unknown --backend %q (allowed: %s)", backend, backendNames()))
			}
			var target redisTarget
			if backend == "redis" {
				t, err := parseRedisURL(redisURL)
				if err != nil {
					return usage(c, err)
				}
				target = t
			}
			open, closeStore, err := opener(target)
			if err != nil {
				return err
			}
			defer closeStore()
			name := backend
			if backend == "redis" {
				name = "redis at " + target.addr
			}
			if err := demo.Run(c.Context(), c.OutOrStdout(), demo.Options{Seed: seed, Name: name, NewBackend: open, Now: time.Now}); err != nil {
				return err
			}
			if backend == "redis" {
				// The DLQ stays in Redis: the command that shows it.
				fmt.Fprintf(c.OutOrStdout(), "\nits DLQ is in Redis: faultline dlq list --redis-url %s --namespace demo\n", target.printable())
				fmt.Fprintln(c.OutOrStdout(), masked("and in a browser, with its depth over the last day: faultline ui --redis-url "+target.printable()+" --namespace demo"))
			}
			return nil
		},
	}
	c.Flags().Uint64Var(&seed, "seed", 1, "seed for every random stream")
	c.Flags().StringVar(&backend, "backend", defaultBackend, "store to run on: "+backendNames())
	addRedisFlag(c, &redisURL, "the Redis server of --backend redis")
	return c
}

// clearNamespace deletes every key of a namespace (they share its prefix),
// so that a demo on a real Redis starts from nothing.
func clearNamespace(ctx context.Context, client *redis.Client, namespace string) error {
	iter := client.Scan(ctx, 0, redisstore.Prefix(namespace)+"*", 500).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return err
	}
	for len(keys) > 0 {
		n := min(len(keys), 500)
		if err := client.Del(ctx, keys[:n]...).Err(); err != nil {
			return err
		}
		keys = keys[n:]
	}
	return nil
}
