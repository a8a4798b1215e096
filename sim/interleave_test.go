package sim_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
	"github.com/faultline/faultline/sim"
)

// Specs for faults inside an operation (issue 15): the interleave model's
// other client writing between the steps of a bulk requeue.
var _ = Describe("Faults inside an operation (interleave)", func() {
	// between returns the built-in requeue-under-other-writes with its
	// between-batches fault doing write instead, and only "lost = 0"
	// expected.
	between := func(write string) scenarios.Scenario {
		GinkgoHelper()
		sc := builtin("requeue-under-other-writes")
		Expect(sc.Faults[2].Name).To(Equal("deleted-between-batches"))
		sc.Faults[2].Model = faults.Interleave{Operation: faults.OpRequeueMatching, AfterStep: 1, Write: write}
		sc.Expect = []scenarios.Expectation{scenarios.Count{Metric: scenarios.Lost, Op: scenarios.Exactly, N: 0}}
		return sc
	}
	run := func(sc scenarios.Scenario) *reports.Result {
		GinkgoHelper()
		res, err := sim.Run(context.Background(), sc)
		Expect(err).NotTo(HaveOccurred())
		return res
	}

	It("plays another client's writes inside the built-in's requeue, which leaves both alone", func() {
		res := run(builtin("requeue-under-other-writes"))
		Expect(res.Verdict).To(Equal(reports.Passed), "%v", res.Violations)
		Expect(res.Steps).To(HaveLen(1))
		Expect(res.Steps[0].Detail).To(Equal("matched 149, requeued 148, skipped 1"))
		for _, f := range res.Faults[1:] {
			Expect(f.Hits).To(Equal(int64(1)), f.Name)
		}
	})

	DescribeTable("an entry changed between two batches is skipped, the other client's write stands",
		func(write string) {
			res := run(between(write))
			Expect(res.Violations).To(BeEmpty())
			Expect(res.Verdict).To(Equal(reports.Passed))
			Expect(res.Steps[0].Detail).To(Equal("matched 149, requeued 148, skipped 1"))
		},
		Entry("deleted", faults.WriteDelete),
		Entry("its payload edited", faults.WriteEditPayload),
		Entry("requeued on its own", faults.WriteRequeue),
		Entry("failed again", faults.WriteDeadLetter),
	)

	DescribeTable("a requeue that fails or is canceled after its first batch loses no job",
		func(write, text string) {
			res := run(between(write))
			Expect(res.Violations).To(BeEmpty())
			Expect(res.Verdict).To(Equal(reports.Passed))
			Expect(res.Steps[0].Detail).To(Equal("matched 149, requeued 100, skipped 0"))
			Expect(res.Steps[0].Error).To(ContainSubstring("after step 1"))
			Expect(res.Steps[0].Error).To(ContainSubstring(text))
		},
		Entry("a lost connection", faults.WriteFail, "connection to the DLQ store lost inside the operation"),
		Entry("canceled", faults.WriteCancel, "context canceled"),
	)

	It("refuses an interleave on an operation the simulator never runs", func() {
		sc := between(faults.WriteDelete)
		sc.Faults[2].Model = faults.Interleave{Operation: faults.OpDeleteMatching, AfterStep: 1, Write: faults.WriteDelete}
		_, err := sim.Run(context.Background(), sc)
		Expect(err).To(MatchError(scenarios.ErrNotSimulated))
		Expect(err).To(MatchError(ContainSubstring("delete-matching")))
	})

	It("refuses an interleave in a scenario with no requeue step, which it could never strike", func() {
		sc := between(faults.WriteDelete)
		sc.Steps = nil
		err := sc.WithDefaults().Validate()
		Expect(err).To(MatchError(ContainSubstring("Faults[2].Model")))
		Expect(err).To(MatchError(ContainSubstring("no requeue step, so the fault never fires")))
	})
})
