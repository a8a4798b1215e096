package faults_test

import (
	"encoding/json"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/faults"
)

var _ = Describe("Target", func() {
	DescribeTable("prints as scenario files write it, and reads back",
		func(t faults.Target, s string) {
			Expect(t.String()).To(Equal(s))
			back, err := faults.ParseTarget(s)
			Expect(err).NotTo(HaveOccurred())
			Expect(back).To(Equal(t))
			b, err := json.Marshal(t)
			Expect(err).NotTo(HaveOccurred())
			var viaJSON faults.Target
			Expect(json.Unmarshal(b, &viaJSON)).To(Succeed())
			Expect(viaJSON).To(Equal(t))
		},
		Entry("a dependency", faults.Target{Kind: faults.Dependency, Name: "payment-gateway"}, "dependency/payment-gateway"),
		Entry("every dependency", faults.Target{Kind: faults.Dependency}, "dependency/*"),
		Entry("the DLQ store", faults.Target{Kind: faults.DLQStore}, "dlq-store"),
		Entry("a receiver", faults.Target{Kind: faults.AlertSink, Name: "on-call"}, "alert-sink/on-call"),
		Entry("every worker", faults.Target{Kind: faults.Worker}, "worker/*"),
		Entry("a worker", faults.Target{Kind: faults.Worker, Name: "w1"}, "worker/w1"),
		Entry("the store", faults.Target{Kind: faults.Store}, "store"),
	)

	It("names every kind, reads names leniently and suggests the closest for a typo", func() {
		names := []string{}
		for _, k := range faults.TargetKinds() {
			names = append(names, k.String())
			back, err := faults.ParseTargetKind(k.String())
			Expect(err).NotTo(HaveOccurred())
			Expect(back).To(Equal(k))
		}
		Expect(names).To(Equal([]string{"dependency", "dlq-store", "alert-sink", "worker", "store"}))
		Expect(faults.ParseTargetKind("DLQ_Store")).To(Equal(faults.DLQStore))

		_, err := faults.ParseTargetKind("dependancy")
		var ne *faults.NameError
		Expect(err).To(BeAssignableToTypeOf(ne))
		Expect(err.Error()).To(ContainSubstring(`did you mean "dependency"?`))

		Expect(faults.TargetKind(0).String()).To(Equal("target-kind(0)"))
		_, err = faults.TargetKind(9).MarshalText()
		Expect(err).To(HaveOccurred())
		var k faults.TargetKind
		Expect(k.UnmarshalText([]byte("worker"))).To(Succeed())
		Expect(k).To(Equal(faults.Worker))
		Expect(k.UnmarshalText([]byte("wroker"))).To(MatchError(ContainSubstring(`did you mean "worker"?`)))
	})
})
