package faults_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/faults"
)

var _ = Describe("graceful-stop", func() {
	w := faults.Target{Kind: faults.Worker, Name: "w1"}

	It("stops a worker, to be back restartAfter later, without an error of its own", func() {
		Expect(hit(faults.GracefulStop{RestartAfter: 5 * time.Second}, w)).To(Equal(faults.Effect{Stop: true, RestartAfter: 5 * time.Second, Fault: "f"}))
		Expect(hit(faults.GracefulStop{}, w)).To(Equal(faults.Effect{Stop: true, Fault: "f"}))
	})

	It("is named by the fault that struck, at the fault's own instants too", func() {
		in := mustInjector(1, faults.Fault{Name: "deploy", Target: faults.Target{Kind: faults.Worker}, Model: faults.GracefulStop{}})
		Expect(in.CallFault(0, w, faults.Call{At: time.Second})).To(Equal(faults.Effect{Stop: true, Fault: "deploy"}))
	})

	It("is a worker model of the catalogue, refusing a negative restartAfter", func() {
		m, err := faults.New("graceful-stop")
		Expect(err).NotTo(HaveOccurred())
		Expect(m).To(Equal(faults.GracefulStop{}))
		Expect(m.Targets()).To(Equal([]faults.TargetKind{faults.Worker}))
		err = faults.GracefulStop{RestartAfter: -time.Second}.Validate()
		Expect(err).To(MatchError(ContainSubstring("restartAfter")))
		Expect(err).To(MatchError(ContainSubstring("must be ≥ 0")))
	})
})
