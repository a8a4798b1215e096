package scenarios_test

import (
	"context"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/reference/store/redisstore/redistest"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
	"github.com/faultline/faultline/sim"
)

// backendsRun runs sc on its own seed with opts and returns the report's
// JSON.
func backendsRun(sc scenarios.Scenario, opts ...sim.Option) []byte {
	GinkgoHelper()
	res, err := sim.Run(context.Background(), sc, opts...)
	Expect(err).NotTo(HaveOccurred())
	Expect(res.Verdict).NotTo(Equal(reports.Errored), "%s errored: %s", sc.Name, res.Error)
	b, err := res.JSON()
	Expect(err).NotTo(HaveOccurred())
	return b
}

// firstDiff names the first line where two reports differ; other names
// the second store.
func firstDiff(memory, redis []byte, other string) string {
	ml, rl := strings.Split(string(memory), "\n"), strings.Split(string(redis), "\n")
	for i := range min(len(ml), len(rl)) {
		if ml[i] != rl[i] {
			return fmt.Sprintf("first difference at line %d: memory %q, %s %q", i+1, ml[i], other, rl[i])
		}
	}
	return fmt.Sprintf("memory has %d lines, %s %d", len(ml), other, len(rl))
}

// onRedis is the option that runs a scenario on the Redis store of c.
func onRedis(c *redis.Client) sim.Option {
	return sim.WithStore(func(_ context.Context, _ sim.Env, cfg store.Config) (sim.Backend, error) {
		return redisstore.New(c, cfg)
	})
}

// The README promises that the simulator gives the same result on the
// in-memory store and on Redis. Every built-in, run whole on its own seed on
// both, must write the same JSON report byte for byte: a difference between
// the stores (a tie ordered one way in memory and another in a sorted set,
// a time kept at another resolution) shows up here as a different run. The
// whole library takes about 45 s on one core, both stores included. A scale
// built-in (tagged scale: ten thousand jobs) takes a minute on miniredis's
// Lua, so this lane leaves it to the real-Redis lane below, which runs it.
var _ = Describe("the built-in library on both stores", func() {
	for _, b := range scenarios.Builtins() {
		if isScale(b) {
			continue // the real-Redis lane runs it; see the spec below
		}
		It(fmt.Sprintf("gives %s the same JSON report on miniredis as in memory", b.Name), func() {
			l, err := scenarios.LoadBuiltin(b.Name)
			Expect(err).NotTo(HaveOccurred())
			memory := backendsRun(l.Scenario)

			c := redisstore.NewClient(redistest.Mini(1).Addr())
			DeferCleanup(c.Close)
			redis := backendsRun(l.Scenario, onRedis(c))
			Expect(string(redis)).To(Equal(string(memory)), "%s: %s", b.Name, firstDiff(memory, redis, "miniredis"))
		})
	}
	It(fmt.Sprintf("leaves the built-ins tagged %s to the real-Redis lane, which runs every built-in", scaleTag), func() {
		var scale []string
		for _, b := range scenarios.Builtins() {
			if isScale(b) {
				scale = append(scale, b.Name)
			}
		}
		Expect(scale).NotTo(BeEmpty())
		Expect(realRedisLane()).To(ContainElements(scale))
	})
})

// realRedisLane names the built-ins the real-Redis lane compares: all.
func realRedisLane() []string {
	var names []string
	for _, b := range scenarios.Builtins() {
		names = append(names, b.Name)
	}
	return names
}

// The same promise on a real redis-server (started by the test process on
// a free loopback port; redistest.Real flushes this process's database
// before each spec): the Lua scripts, the server's own sorted-set ties and
// number formatting, not miniredis's. Every built-in, the scale ones
// included, once each on its own seed. Without redis-server the lane is
// skipped with a message, or fails when FAULTLINE_REQUIRE_REDIS=1 (as CI
// sets it).
var _ = Describe("the built-in library on a real redis-server", Label("redis"), func() {
	for _, name := range realRedisLane() {
		It(fmt.Sprintf("gives %s the same JSON report on a real redis-server as in memory", name), func() {
			url := redistest.Real()
			l, err := scenarios.LoadBuiltin(name)
			Expect(err).NotTo(HaveOccurred())
			memory := backendsRun(l.Scenario)

			c := redisstore.NewClient(url)
			DeferCleanup(c.Close)
			redis := backendsRun(l.Scenario, onRedis(c))
			Expect(string(redis)).To(Equal(string(memory)), "%s: %s", name, firstDiff(memory, redis, "redis-server"))
		})
	}
})

var _ = AfterSuite(redistest.StopShared)
