package scenarios_test

import (
	"context"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/reference/store/redisstore/redistest"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
	"github.com/faultline/faultline/sim"
)

// backendsRun runs sc on its own seed with opts and returns the report's
// JSON.
func backendsRun(sc sim.Scenario, opts ...sim.Option) []byte {
	GinkgoHelper()
	res, err := sim.Run(context.Background(), sc, opts...)
	Expect(err).NotTo(HaveOccurred())
	Expect(res.Verdict).NotTo(Equal(reports.Errored), "%s errored: %s", sc.Name, res.Error)
	b, err := res.JSON()
	Expect(err).NotTo(HaveOccurred())
	return b
}

// firstDiff names the first line where two reports differ.
func firstDiff(memory, redis []byte) string {
	ml, rl := strings.Split(string(memory), "\n"), strings.Split(string(redis), "\n")
	for i := range min(len(ml), len(rl)) {
		if ml[i] != rl[i] {
			return fmt.Sprintf("first difference at line %d: memory %q, miniredis %q", i+1, ml[i], rl[i])
		}
	}
	return fmt.Sprintf("memory has %d lines, miniredis %d", len(ml), len(rl))
}

// The README promises that the simulator gives the same result on the
// in-memory store and on Redis. Every built-in, run whole on its own seed on
// both, must write the same JSON report byte for byte: a difference between
// the stores (a tie ordered one way in memory and another in a sorted set,
// a time kept at another resolution) shows up here as a different run. The
// whole library takes about 45 s on one core, both stores included.
var _ = Describe("the built-in library on both stores", func() {
	for _, b := range scenarios.Builtins() {
		It(fmt.Sprintf("gives %s the same JSON report on miniredis as in memory", b.Name), func() {
			l, err := scenarios.LoadBuiltin(b.Name)
			Expect(err).NotTo(HaveOccurred())
			memory := backendsRun(l.Scenario)

			c := redisstore.NewClient(redistest.Mini(1).Addr())
			DeferCleanup(c.Close)
			redis := backendsRun(l.Scenario, sim.WithStore(func(_ context.Context, _ sim.Env, cfg store.Config) (sim.Backend, error) {
				return redisstore.New(c, cfg)
			}))
			Expect(string(redis)).To(Equal(string(memory)), "%s: %s", b.Name, firstDiff(memory, redis))
		})
	}
})
