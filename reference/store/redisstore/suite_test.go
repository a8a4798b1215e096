package redisstore_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/reference/dlq/dlqtest"
	"github.com/faultline/faultline/reference/queue/queuetest"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/reference/store/redisstore/redistest"
)

func TestRedisstore(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "redisstore")
}

// TestMain stops the process's redis-server, if a spec or a benchmark
// started one, when the tests are done.
func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(helperMain())
	}
	code := m.Run()
	redistest.StopShared()
	os.Exit(code)
}

// lane is one Redis the specs run against: a miniredis per harness, or the
// process's real redis-server.
type lane struct {
	name string
	// connect returns a client of a fresh, empty Redis (or database) for
	// the running spec, closed when the spec ends.
	connect func() *redis.Client
}

// namespaces keeps the harnesses of one spec apart on a shared Redis.
var namespaces atomic.Int64

var lanes = []lane{
	{name: "on miniredis", connect: func() *redis.Client {
		GinkgoHelper()
		m := redistest.Mini(GinkgoRandomSeed())
		c := redisstore.NewClient(m.Addr())
		DeferCleanup(c.Close)
		return c
	}},
	{name: "on redis-server", connect: func() *redis.Client {
		GinkgoHelper()
		c := redisstore.NewClient(redistest.Real())
		DeferCleanup(c.Close)
		return c
	}},
}

// newStore builds a store on c in a namespace of its own, passing cfg
// through as the conformance suites require.
func newStore(c redis.UniversalClient, cfg store.Config) *redisstore.Store {
	GinkgoHelper()
	if cfg.Namespace == "" {
		cfg.Namespace = fmt.Sprintf("spec%d", namespaces.Add(1))
	}
	s, err := redisstore.New(c, cfg)
	Expect(err).NotTo(HaveOccurred())
	return s
}

var _ = Describe("redisstore", func() {
	for _, ln := range lanes {
		Describe(ln.name, func() {
			// A real Redis is shared by the specs of a process: each
			// harness gets a namespace of its own on a database flushed
			// before the spec. A miniredis is per harness.
			var shared *redis.Client
			client := func() *redis.Client {
				if ln.name == "on miniredis" {
					return ln.connect()
				}
				if shared == nil {
					shared = ln.connect()
				}
				return shared
			}
			BeforeEach(func() { shared = nil })

			queuetest.Exercise(func(cfg store.Config) queuetest.Harness {
				s := newStore(client(), cfg)
				return queuetest.Harness{Queue: s, DLQ: s}
			})

			dlqtest.Exercise(func(cfg store.Config) dlqtest.Harness {
				s := newStore(client(), cfg)
				return dlqtest.Harness{Queue: s, DLQ: s, Corrupt: func(id string, raw []byte) {
					GinkgoHelper()
					Expect(s.WriteRaw(context.Background(), id, raw)).To(Succeed())
				}}
			})
		})
	}
})
