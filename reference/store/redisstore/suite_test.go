package redisstore_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/reference/degrade"
	"github.com/faultline/faultline/reference/degrade/degradetest"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq/dlqtest"
	"github.com/faultline/faultline/reference/fleet/fleettest"
	"github.com/faultline/faultline/reference/queue/queuetest"
	"github.com/faultline/faultline/reference/retry"
	"github.com/faultline/faultline/reference/retry/retrytest"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/reference/store/redisstore/redistest"
	"github.com/faultline/faultline/reference/worker"
	"github.com/faultline/faultline/reference/worker/workertest"
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
	redistest.StopSharedCluster()
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

// conformanceStream is the MAXLEN of the conformance specs' streams: no
// spec makes that many moves, so none is trimmed.
const conformanceStream = 1 << 20

// heardBy collects, per Redis client and namespace, what the observers of
// the conformance specs' stores heard (a spec may build several stores on
// one namespace, as a restarted process would).
var heardBy = struct {
	sync.Mutex
	m map[string]*events
}{m: map[string]*events{}}

// streamed builds a conformance store with the event stream on, its
// observer wrapped: when the spec ends, the namespace's stream must hold
// exactly the events its observers heard (as a multiset: concurrent callers
// hear their replies in any order).
func streamed(c redis.UniversalClient, cfg store.Config) *redisstore.Store {
	GinkgoHelper()
	if cfg.Namespace == "" {
		cfg.Namespace = fmt.Sprintf("spec%d", namespaces.Add(1))
	}
	key := fmt.Sprintf("%p/%s", c, cfg.Namespace)
	heardBy.Lock()
	ev, seen := heardBy.m[key]
	if !seen {
		ev = &events{}
		heardBy.m[key] = ev
	}
	heardBy.Unlock()
	inner := cfg.Observer
	cfg.Observer = func(e disposition.Event) {
		ev.hear(e)
		if inner != nil {
			inner(e)
		}
	}
	cfg.EventStream = conformanceStream
	s := newStore(c, cfg)
	if !seen {
		DeferCleanup(func() {
			heardBy.Lock()
			delete(heardBy.m, key)
			heardBy.Unlock()
			Expect(tally(readAllBy(s, 10_000))).To(Equal(tally(ev.heard())), "the stream carries what the observers heard")
		})
	}
	return s
}

// tally counts events by their every field: a multiset that compares in
// O(n) (ConsistOf matches in O(n²) and more).
func tally(evs []disposition.Event) map[string]int {
	m := map[string]int{}
	for _, e := range evs {
		m[fmt.Sprintf("%s task=%s attempts=%d", e, e.Task, e.Attempts)]++
	}
	return m
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

			conformanceSuites(func() redis.UniversalClient { return client() })
		})
	}
})

// conformanceSuites registers the conformance suites on the Redis client
// gives, with the event stream on, as drills run: every script's stream-on
// path is held to them, and each spec ends by checking that the stream
// carries exactly the events the observer heard.
func conformanceSuites(client func() redis.UniversalClient) {
	queuetest.Exercise(func(cfg store.Config) queuetest.Harness {
		s := streamed(client(), cfg)
		return queuetest.Harness{Queue: s, DLQ: s}
	})

	retrytest.ExerciseBooker(func() retry.Booker { return newStore(client(), store.Config{}) })
	degradetest.ExerciseBreakerStore(func() degrade.BreakerStore { return newStore(client(), store.Config{}) })
	// A namespace a harness: the property builds many in one spec.
	fleettest.Exercise(func() fleettest.Harness {
		s := newStore(client(), store.Config{Namespace: fmt.Sprintf("fleet%d", namespaces.Add(1))})
		return fleettest.Harness{Leader: s, Log: s}
	})
	Describe("Store.History", func() {
		// One namespace on one server a spec: two calls are two processes
		// of one fleet.
		var (
			c  redis.UniversalClient
			ns string
		)
		BeforeEach(func() { c, ns = nil, fmt.Sprintf("hist%d", namespaces.Add(1)) })
		workertest.ExerciseHistory(func() worker.History {
			if c == nil {
				c = client()
			}
			return newStore(c, store.Config{Namespace: ns}).History()
		}, true)
	})

	dlqtest.Exercise(func(cfg store.Config) dlqtest.Harness {
		s := streamed(client(), cfg)
		return dlqtest.Harness{Queue: s, DLQ: s, Corrupt: func(id string, raw []byte) {
			GinkgoHelper()
			Expect(s.WriteRaw(context.Background(), id, raw)).To(Succeed())
		}}
	})
}
