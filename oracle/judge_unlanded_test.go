package oracle_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
)

// A real drill's history: worker-crash of the reference at scale 10 on a
// 2-core machine at load 7, where w2, frozen mid-charge for 25 s of
// scenario time, failed to write its late completion within its store
// timeout just after SIGCONT: nothing reached the store to be fenced.
var _ = Describe("A drill whose frozen worker's late answer never reached the store", func() {
	load := func() (scenarios.Scenario, *oracle.History) {
		return drillHistory("testdata/worker-crash-unlanded.history.json.gz", "worker-crash")
	}

	It("is inconclusive on fenced, naming the attempt and the freeze, not FAIL", func() {
		sc, h := load()
		r, err := oracle.Judge(context.Background(), sc, h)
		Expect(err).NotTo(HaveOccurred())
		Expect(r.Violations).To(BeEmpty())
		Expect(r.Verdict).To(Equal(reports.Inconclusive))
		Expect(r.Error).To(And(ContainSubstring("w2's charge-73"), ContainSubstring("never reached the store"), ContainSubstring("fenced cannot be judged")))
	})

	It("FAILs when the late answer reached the store and was applied: the fence let it through", func() {
		sc, h := load()
		for i, a := range h.Attempts {
			if a.Worker == "w2" && a.JobID == "charge-73" && a.Result == "failed" {
				h.Attempts[i].Result = "applied"
			}
		}
		r, err := oracle.Judge(context.Background(), sc, h)
		Expect(err).NotTo(HaveOccurred())
		Expect(r.Verdict).To(Equal(reports.Failed))
	})

	It("FAILs when another expectation failed beside fenced", func() {
		sc, h := load()
		sc.Expect = append(sc.Expect, scenarios.Count{Metric: scenarios.Succeeded, Op: scenarios.Exactly, N: 301})
		r, err := oracle.Judge(context.Background(), sc, h)
		Expect(err).NotTo(HaveOccurred())
		Expect(r.Verdict).To(Equal(reports.Failed))
	})
})

// A real drill's history: worker-crash of the reference at scale 15 on the
// idle 2-core machine, before the drill held a call's answer for the
// strike: the poll found w2's charge-131 in flight at +80.546s, the gateway
// answered in 0.05ms, and the SIGSTOP at +80.547s froze a worker whose
// success the store applied at +80.549s: nothing late to fence.
var _ = Describe("A drill whose frozen worker's answer left before the freeze landed", func() {
	load := func() (scenarios.Scenario, *oracle.History) {
		return drillHistory("testdata/worker-crash-frozen-late.history.json.gz", "worker-crash")
	}

	It("is inconclusive on fenced, saying the answer left before the freeze landed, not FAIL", func() {
		sc, h := load()
		r, err := oracle.Judge(context.Background(), sc, h)
		Expect(err).NotTo(HaveOccurred())
		Expect(r.Violations).To(BeEmpty())
		Expect(r.Verdict).To(Equal(reports.Inconclusive))
		Expect(r.Error).To(And(ContainSubstring("w2's charge-131"), ContainSubstring("left before the freeze landed"), ContainSubstring("fenced cannot be judged")))
	})

	It("FAILs when the store applied the answer only after the worker resumed: a late answer let through", func() {
		sc, h := load()
		for i, e := range h.Events {
			if e.JobID == "charge-131" && e.To == "succeeded" {
				h.Events[i].AtMs = 105_600 // after the resume at +105.564s
			}
		}
		r, err := oracle.Judge(context.Background(), sc, h)
		Expect(err).NotTo(HaveOccurred())
		Expect(r.Verdict).To(Equal(reports.Failed))
		var failed []string
		for _, e := range r.Expectations {
			if e.Verdict == reports.Failed {
				failed = append(failed, e.Name)
			}
		}
		Expect(failed).To(Equal([]string{"fenced = 1"}))
	})
})
