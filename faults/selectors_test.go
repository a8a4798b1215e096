package faults_test

import (
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/faults"
)

var _ = Describe("Schedule tasks and attempts", func() {
	call := func(t time.Duration, job, task string, attempt int) faults.Call {
		return faults.Call{At: t, JobID: job, Task: task, Attempt: attempt}
	}

	It("refuses an empty or repeated task, and an attempt below 1 or repeated", func() {
		err := faults.Schedule{Tasks: []string{"charge", "", "charge"}, Attempts: []int{1, 0, -2, 1}}.Validate()
		Expect(err).To(MatchError(ContainSubstring(`tasks[1]: empty task name`)))
		Expect(err).To(MatchError(ContainSubstring(`tasks[2]: duplicate task "charge"`)))
		Expect(err).To(MatchError(ContainSubstring(`attempts[1]: must be ≥ 1, got 0; 1 is a job's first attempt, 2 its first retry`)))
		Expect(err).To(MatchError(ContainSubstring(`attempts[2]: must be ≥ 1, got -2`)))
		Expect(err).To(MatchError(ContainSubstring(`attempts[3]: duplicate attempt 1`)))
		var fe *faults.FieldError
		Expect(errors.As(err, &fe)).To(BeTrue())
		Expect(fe.Field).To(Equal("tasks[1]"))
		Expect(faults.Schedule{Tasks: []string{"charge", "refund"}, Attempts: []int{1, 3}}.Validate()).To(Succeed())
	})

	DescribeTable("Fault.Validate refuses them on a target whose calls carry no job",
		func(key string, s faults.Schedule) {
			f := faults.Fault{Name: "f", Target: faults.Target{Kind: faults.Worker, Name: "w1"}, Model: faults.WorkerCrash{}, Schedule: s}
			Expect(f.Validate()).To(MatchError(ContainSubstring(`fault "f": schedule.` + key + `: worker faults cannot be limited to ` + key + `: no job makes their calls; only dependency and dlq-store faults take ` + key)))
			f.Target, f.Model = gateway, faults.Outage{}
			Expect(f.Validate()).To(Succeed())
			f.Target, f.Model = faults.Target{Kind: faults.DLQStore}, faults.StoreOutage{}
			Expect(f.Validate()).To(Succeed())
		},
		Entry("tasks", "tasks", faults.Schedule{Tasks: []string{"charge"}}),
		Entry("attempts", "attempts", faults.Schedule{Attempts: []int{1}}),
	)

	It("hits only the calls of its tasks and attempts, combined with jobs and the time conditions", func() {
		in := mustInjector(1,
			faults.Fault{Name: "charges", Target: gateway, Model: faults.Outage{}, Schedule: faults.Schedule{Tasks: []string{"charge"}}},
			faults.Fault{Name: "first", Target: inventory, Model: faults.Outage{}, Schedule: faults.Schedule{Attempts: []int{1}, From: time.Minute}},
			faults.Fault{Name: "both", Target: faults.Target{Kind: faults.DLQStore}, Model: faults.StoreOutage{},
				Schedule: faults.Schedule{Jobs: []string{"a", "b"}, Tasks: []string{"charge"}, Attempts: []int{2, 3}}},
		)
		Expect(in.Call(gateway, call(0, "a", "charge", 1)).Fault).To(Equal("charges"))
		Expect(in.Call(gateway, call(0, "a", "refund", 1)).Err).NotTo(HaveOccurred(), "another task's call")
		Expect(in.Call(gateway, call(0, "a", "", 1)).Err).NotTo(HaveOccurred(), "a call that does not say its task")

		Expect(in.Call(inventory, call(30*time.Second, "a", "x", 1)).Err).NotTo(HaveOccurred(), "before From")
		Expect(in.Call(inventory, call(time.Minute, "a", "x", 1)).Fault).To(Equal("first"))
		Expect(in.Call(inventory, call(time.Minute, "a", "x", 2)).Err).NotTo(HaveOccurred(), "the retry")
		Expect(in.Call(inventory, call(time.Minute, "a", "x", 0)).Err).NotTo(HaveOccurred(), "a call that does not say its attempt")

		dlqStore := faults.Target{Kind: faults.DLQStore}
		Expect(in.Call(dlqStore, call(0, "a", "charge", 2)).Fault).To(Equal("both"))
		Expect(in.Call(dlqStore, call(0, "b", "charge", 3)).Fault).To(Equal("both"))
		Expect(in.Call(dlqStore, call(0, "c", "charge", 2)).Err).NotTo(HaveOccurred(), "another job")
		Expect(in.Call(dlqStore, call(0, "a", "refund", 2)).Err).NotTo(HaveOccurred(), "another task")
		Expect(in.Call(dlqStore, call(0, "a", "charge", 1)).Err).NotTo(HaveOccurred(), "another attempt")

		Expect([]int64{hitsOf(in, "charges"), hitsOf(in, "first"), hitsOf(in, "both")}).To(Equal([]int64{1, 1, 2}))
	})

	It("spends no FirstCalls budget and draws nothing for a call it does not select", func() {
		in := mustInjector(1, faults.Fault{Name: "f", Target: gateway, Model: faults.Outage{}, Schedule: faults.Schedule{Attempts: []int{2}, FirstCalls: 1}})
		for range 5 {
			Expect(in.Call(gateway, call(0, "a", "charge", 1)).Err).NotTo(HaveOccurred())
		}
		Expect(in.Call(gateway, call(0, "a", "charge", 2)).Fault).To(Equal("f"))
		Expect(in.Call(gateway, call(0, "b", "charge", 2)).Err).NotTo(HaveOccurred(), "the budget of one is spent")

		draws := func(extra bool) []bool {
			in := mustInjector(3, faults.Fault{Name: "p", Target: gateway, Model: faults.Outage{}, Schedule: faults.Schedule{Tasks: []string{"charge"}, Probability: 0.5}})
			var hits []bool
			for i := range 200 {
				if extra {
					in.Call(gateway, call(time.Duration(i)*ms, "b", "refund", 1))
				}
				hits = append(hits, in.Call(gateway, call(time.Duration(i)*ms, "a", "charge", 1)).Err != nil)
			}
			return hits
		}
		Expect(draws(true)).To(Equal(draws(false)))
	})

	It("shifts no other fault's draws when a fault gains a selector", func() {
		run := func(sel faults.Schedule) []bool {
			sel.Probability = 0.5
			in := mustInjector(9,
				faults.Fault{Name: "aimed", Target: gateway, Model: faults.Outage{}, Schedule: sel},
				faults.Fault{Name: "other", Target: gateway, Model: faults.Latency{Mean: 10 * ms}, Schedule: faults.Schedule{Probability: 0.5}},
			)
			var other []bool
			for i := range 300 {
				task, attempt := "charge", 1+i%3
				if i%2 == 0 {
					task = "refund"
				}
				e := in.Call(gateway, call(time.Duration(i)*ms, "j", task, attempt))
				other = append(other, e.Latency > 0)
			}
			return other
		}
		plain := run(faults.Schedule{})
		Expect(run(faults.Schedule{Tasks: []string{"charge"}})).To(Equal(plain))
		Expect(run(faults.Schedule{Attempts: []int{1}})).To(Equal(plain))
	})

	It("keeps its own copies of the lists", func() {
		tasks, attempts := []string{"charge"}, []int{1}
		in := mustInjector(1, faults.Fault{Name: "f", Target: gateway, Model: faults.Outage{}, Schedule: faults.Schedule{Tasks: tasks, Attempts: attempts}})
		tasks[0], attempts[0] = "changed", 7
		Expect(in.Faults()[0].Schedule.Tasks).To(Equal([]string{"charge"}))
		Expect(in.Faults()[0].Schedule.Attempts).To(Equal([]int{1}))
		Expect(in.Call(gateway, call(0, "a", "charge", 1)).Err).To(HaveOccurred())
		in.Faults()[0].Schedule.Attempts[0] = 5
		Expect(in.Faults()[0].Schedule.Attempts).To(Equal([]int{1}))
	})
})
