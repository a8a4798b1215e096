package faults_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/faults"
)

var _ = Describe("Interleave (a fault inside one store operation)", func() {
	dlqStore := faults.Target{Kind: faults.DLQStore}

	It("refuses an unknown operation or write and a negative step, naming the parameter", func() {
		err := faults.Interleave{Operation: "requeue-matchin", AfterStep: -1, Write: "delet"}.Validate()
		Expect(err).To(MatchError(ContainSubstring(`operation: expected one of requeue-matching, delete-matching, got "requeue-matchin"`)))
		Expect(err).To(MatchError(ContainSubstring(`did you mean "requeue-matching"?`)))
		Expect(err).To(MatchError(ContainSubstring("afterStep: must be ≥ 0")))
		Expect(err).To(MatchError(ContainSubstring(`write: expected one of delete, edit-payload, requeue, dead-letter, fail, cancel, got "delet"`)))
		Expect(faults.Interleave{}.WithDefaults()).To(Equal(faults.Interleave{Operation: faults.OpRequeueMatching, Write: faults.WriteFail}))
	})

	It("is never hit by a call, strikes by its schedule, and shifts no other fault's draws", func() {
		slow := faults.Fault{Name: "slow", Target: dlqStore, Model: faults.Latency{Distribution: faults.LatencyExponential}, Schedule: faults.Schedule{Probability: 0.5}}
		in := faults.Fault{Name: "other-client", Target: dlqStore, Model: faults.Interleave{AfterStep: 1},
			Schedule: faults.Schedule{From: time.Minute, Until: 2 * time.Minute, FirstCalls: 1}}
		alone, err := faults.NewInjector(7, []faults.Fault{slow})
		Expect(err).NotTo(HaveOccurred())
		both, err := faults.NewInjector(7, []faults.Fault{slow, in})
		Expect(err).NotTo(HaveOccurred())
		for i := range 50 {
			c := faults.Call{At: time.Duration(i) * 3 * time.Second}
			Expect(both.Call(dlqStore, c)).To(Equal(alone.Call(dlqStore, c)))
		}
		Expect(both.Stats()[1].Hits).To(BeZero())

		Expect(both.Strike(0, dlqStore, faults.Call{At: 90 * time.Second})).To(BeFalse(), "not an operation fault")
		Expect(both.Strike(1, dlqStore, faults.Call{At: 30 * time.Second})).To(BeFalse(), "before its window")
		Expect(both.Strike(1, dlqStore, faults.Call{At: 90 * time.Second})).To(BeTrue())
		Expect(both.Strike(1, dlqStore, faults.Call{At: 91 * time.Second})).To(BeFalse(), "its one call spent")
		Expect(both.Stats()[1].Hits).To(Equal(int64(1)))
	})
})
