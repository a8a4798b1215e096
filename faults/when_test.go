package faults_test

import (
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/faults"
)

var _ = Describe("Schedule.When", func() {
	midCall := func(dep string) *faults.When { return &faults.When{State: faults.MidCall, Dependency: dep} }
	stall := func(target faults.Target, w *faults.When) faults.Fault {
		return faults.Fault{Name: "gc-pause", Target: target, Model: faults.WorkerStall{For: 25 * time.Second},
			Schedule: faults.Schedule{From: 80 * time.Second, Until: 90 * time.Second, When: w}}
	}
	fieldErrors := func(err error) []string {
		GinkgoHelper()
		var out []string
		var walk func(error)
		walk = func(e error) {
			if j, ok := e.(interface{ Unwrap() []error }); ok {
				for _, x := range j.Unwrap() {
					walk(x)
				}
				return
			}
			var fe *faults.FieldError
			Expect(errors.As(e, &fe)).To(BeTrue(), "a *FieldError: %v", e)
			out = append(out, fe.Field+": "+fe.Error())
		}
		if err != nil {
			walk(err)
		}
		return out
	}

	It("accepts mid-call at a dependency on a worker fault, naming one worker or all", func() {
		Expect(stall(faults.Target{Kind: faults.Worker, Name: "w2"}, midCall("payment-gateway")).Validate()).To(Succeed())
		Expect(stall(faults.Target{Kind: faults.Worker}, midCall("payment-gateway")).Validate()).To(Succeed())
		crash := faults.Fault{Name: "c", Target: faults.Target{Kind: faults.Worker}, Model: faults.WorkerCrash{},
			Schedule: faults.Schedule{When: midCall("ledger")}}
		Expect(crash.Validate()).To(Succeed())
	})

	It("refuses a state other than mid-call, listing the states, with a suggestion for a typo", func() {
		f := stall(faults.Target{Kind: faults.Worker, Name: "w2"}, &faults.When{State: "mid-cal", Dependency: "gw"})
		Expect(fieldErrors(f.Validate())).To(ConsistOf(
			`schedule.when.state: fault "gc-pause": schedule.when.state: unknown state "mid-cal"; did you mean "mid-call"? (one of mid-call)`))
		f = stall(faults.Target{Kind: faults.Worker, Name: "w2"}, &faults.When{State: "idle", Dependency: "gw"})
		Expect(fieldErrors(f.Validate())).To(ConsistOf(
			`schedule.when.state: fault "gc-pause": schedule.when.state: unknown state "idle"; one of mid-call`))
	})

	It("requires a state and a dependency", func() {
		f := stall(faults.Target{Kind: faults.Worker, Name: "w2"}, &faults.When{})
		Expect(fieldErrors(f.Validate())).To(ConsistOf(
			`schedule.when.state: fault "gc-pause": schedule.when.state: required; one of mid-call`,
			`schedule.when.dependency: fault "gc-pause": schedule.when.dependency: required; the dependency the worker's call is in flight at, e.g. payment-gateway`))
	})

	It("refuses when on a target that is no worker, with the reason", func() {
		f := faults.Fault{Name: "gw", Target: faults.Target{Kind: faults.Dependency, Name: "gw"}, Model: faults.Outage{},
			Schedule: faults.Schedule{When: midCall("gw")}}
		msgs := fieldErrors(f.Validate())
		Expect(msgs).To(HaveLen(1))
		Expect(msgs[0]).To(HavePrefix("schedule.when: "))
		Expect(msgs[0]).To(ContainSubstring("dependency faults cannot wait for a state"))
		Expect(msgs[0]).To(ContainSubstring("only worker faults take when"))
	})

	It("changes no window, and is copied with the injector's faults", func() {
		f := stall(faults.Target{Kind: faults.Worker, Name: "w2"}, midCall("gw"))
		ws, _ := f.Schedule.Windows(1, f.Name, 6*time.Minute, 10)
		Expect(ws).To(Equal([]faults.Window{{From: 80 * time.Second, Until: 90 * time.Second}}))
		in, err := faults.NewInjector(1, []faults.Fault{f})
		Expect(err).NotTo(HaveOccurred())
		got := in.Faults()[0].Schedule.When
		Expect(got).To(Equal(midCall("gw")))
		got.Dependency = "other"
		Expect(in.Faults()[0].Schedule.When.Dependency).To(Equal("gw"))
	})

	It("says what a window that never found the state missed", func() {
		m := faults.Miss{Fault: "gc-pause", Worker: "w2", When: *midCall("payment-gateway"),
			Window: faults.Window{From: 80 * time.Second, Until: 90 * time.Second}}
		Expect(m.String()).To(Equal("never found worker w2 mid-call at payment-gateway in [1m20s, 1m30s)"))
	})
})
