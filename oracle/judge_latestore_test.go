package oracle_test

import (
	"compress/gzip"
	"context"
	"os"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
)

// A real drill's history: requeue-reset-attempts of the reference at
// --time-scale 50 on a 2-core machine, whose Redis answered enqueues in
// 75ms against a tolerance of 20ms. Heartbeats as late as that let leases
// expire while workers held dead letters, and 17 jobs were leased again
// after their dead letter was decided: a violation the machine made, not
// the reference (at scale 6 the same drill passes).
var _ = Describe("A drill that fell behind its scale, with violations of lease-bound invariants", func() {
	load := func() (scenarios.Scenario, *oracle.History) {
		sc, h := drillHistory("testdata/late-store-rerun.history.json.gz", "requeue-reset-attempts")
		sc.Workers.Count = len(h.Workers)
		return sc, h
	}

	It("is inconclusive, naming the invariants and what to do, not FAIL", func() {
		sc, h := load()
		r, err := oracle.Judge(context.Background(), sc, h)
		Expect(err).NotTo(HaveOccurred())
		Expect(r.Violations).To(ContainElement(HaveField("Invariant", oracle.InvNoRerunAfterDead)))
		Expect(r.Verdict).To(Equal(reports.Inconclusive))
		Expect(r.Error).To(And(ContainSubstring("store p99"), ContainSubstring("violations of no-rerun-after-dead-letter"), ContainSubstring("slower --time-scale")))
	})

	It("FAILs when the same history kept pace: the violations are then the system's", func() {
		sc, h := load()
		h.Slip = nil
		r, err := oracle.Judge(context.Background(), sc, h)
		Expect(err).NotTo(HaveOccurred())
		Expect(r.Verdict).To(Equal(reports.Failed))
	})
})

// drillHistory reads a real drill's gzipped history and the built-in it
// drilled, with the drill's seed.
func drillHistory(path, builtin string) (scenarios.Scenario, *oracle.History) {
	GinkgoHelper()
	f, err := os.Open(path)
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	z, err := gzip.NewReader(f)
	Expect(err).NotTo(HaveOccurred())
	h, err := oracle.Read(z)
	Expect(err).NotTo(HaveOccurred())
	l, err := scenarios.LoadBuiltin(builtin)
	Expect(err).NotTo(HaveOccurred())
	sc := l.Scenario
	sc.Seed = h.Seed
	return sc, h
}
