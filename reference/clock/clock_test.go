package clock_test

import (
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"pgregory.net/rapid"

	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/reference/clock/clocktest"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

var _ = Describe("Virtual", func() {
	clocktest.Exercise(func() clocktest.Harness {
		v := clock.NewVirtual(epoch)
		return clocktest.Harness{Clock: v, Elapse: func(d time.Duration) { v.Advance(d) }, Unit: time.Second}
	})

	var (
		v     *clock.Virtual
		order []string
	)
	note := func(name string) func() { return func() { order = append(order, name) } }
	BeforeEach(func() {
		v = clock.NewVirtual(epoch)
		order = nil
	})

	It("runs callbacks due at one instant in the order they were scheduled", func() {
		for _, n := range []string{"a", "b", "c", "d"} {
			v.AfterFunc(time.Second, note(n))
		}
		Expect(v.Advance(time.Second)).To(Equal(4))
		Expect(order).To(Equal([]string{"a", "b", "c", "d"}))
	})

	It("runs a callback scheduled for the current instant after the ones already due", func() {
		v.AfterFunc(time.Second, func() {
			order = append(order, "a")
			v.AfterFunc(0, note("a's follow-up"))
		})
		v.AfterFunc(time.Second, note("b"))
		v.Advance(time.Second)
		Expect(order).To(Equal([]string{"a", "b", "a's follow-up"}))
	})

	It("shows each callback the time it was due, not the target of the advance", func() {
		var seen []time.Duration
		for _, d := range []time.Duration{3 * time.Second, time.Second, 2 * time.Second} {
			v.AfterFunc(d, func() { seen = append(seen, v.Now().Sub(epoch)) })
		}
		v.Advance(10 * time.Second)
		Expect(seen).To(Equal([]time.Duration{time.Second, 2 * time.Second, 3 * time.Second}))
		Expect(v.Now()).To(Equal(epoch.Add(10 * time.Second)))
	})

	It("reads in UTC whatever zone it was started in", func() {
		v := clock.NewVirtual(time.Date(2026, 1, 1, 9, 0, 0, 0, time.FixedZone("CET", 3600)))
		Expect(v.Now().Location()).To(Equal(time.UTC))
		Expect(v.Now().Format(time.RFC3339)).To(Equal("2026-01-01T08:00:00Z"))
	})

	It("treats a negative duration as now", func() {
		v.AfterFunc(-time.Hour, note("late"))
		Expect(v.Advance(0)).To(Equal(1))
		Expect(order).To(Equal([]string{"late"}))
		Expect(v.Now()).To(Equal(epoch))
	})

	It("never moves backwards", func() {
		v.Advance(time.Minute)
		v.RunUntil(epoch)
		v.Advance(-time.Hour)
		Expect(v.Now()).To(Equal(epoch.Add(time.Minute)))
	})

	It("steps one event at a time and reports the next", func() {
		v.AfterFunc(2*time.Second, note("two"))
		v.AfterFunc(time.Second, note("one"))
		next, ok := v.Next()
		Expect(ok).To(BeTrue())
		Expect(next).To(Equal(epoch.Add(time.Second)))
		Expect(v.Pending()).To(Equal(2))

		Expect(v.Step()).To(BeTrue())
		Expect(order).To(Equal([]string{"one"}))
		Expect(v.Now()).To(Equal(epoch.Add(time.Second)))
		Expect(v.Step()).To(BeTrue())
		Expect(v.Step()).To(BeFalse())
		_, ok = v.Next()
		Expect(ok).To(BeFalse())
		Expect(order).To(Equal([]string{"one", "two"}))
	})

	It("steps only callbacks due by a limit, and tells the elapsed time", func() {
		v.AfterFunc(time.Second, note("one"))
		v.AfterFunc(3*time.Second, note("three"))
		Expect(v.StepUntil(epoch.Add(500 * time.Millisecond))).To(BeFalse())
		Expect(v.Elapsed()).To(BeZero())
		Expect(v.StepUntil(epoch.Add(time.Second))).To(BeTrue())
		Expect(v.Elapsed()).To(Equal(time.Second))
		Expect(v.StepUntil(epoch.Add(2 * time.Second))).To(BeFalse())
		Expect(v.Now()).To(Equal(epoch.Add(time.Second)), "a refused step leaves the clock alone")
		Expect(v.StepUntil(epoch.Add(time.Hour))).To(BeTrue())
		Expect(v.StepUntil(epoch.Add(time.Hour))).To(BeFalse())
		Expect(order).To(Equal([]string{"one", "three"}))
		Expect(v.Elapsed()).To(Equal(3 * time.Second))
	})

	It("steps and runs by offsets from its start as by times (StepUntilElapsed, RunUntilElapsed)", func() {
		v.AfterFunc(time.Second, note("one"))
		v.AfterFunc(3*time.Second, note("three"))
		v.AfterFunc(5*time.Second, note("five"))
		Expect(v.StepUntilElapsed(500 * time.Millisecond)).To(BeFalse())
		Expect(v.StepUntilElapsed(time.Second)).To(BeTrue())
		Expect(v.StepUntilElapsed(2 * time.Second)).To(BeFalse())
		Expect(v.Now()).To(Equal(epoch.Add(time.Second)), "a refused step leaves the clock alone")
		Expect(v.RunUntilElapsed(4 * time.Second)).To(Equal(1))
		Expect(v.Now()).To(Equal(epoch.Add(4*time.Second)), "run moves the clock to its limit")
		Expect(v.StepUntilElapsed(time.Hour)).To(BeTrue())
		Expect(order).To(Equal([]string{"one", "three", "five"}))
		Expect(v.Elapsed()).To(Equal(5 * time.Second))
	})

	It("reads every limit of StepUntil and RunUntil against its start, the zero time and repeats included", func() {
		v.AfterFunc(0, note("now"))
		v.AfterFunc(time.Second, note("one"))
		Expect(v.StepUntil(time.Time{})).To(BeFalse(), "the zero time is long before the start")
		Expect(v.RunUntil(time.Time{})).To(BeZero())
		Expect(v.StepUntil(epoch.Add(-time.Nanosecond))).To(BeFalse())
		Expect(v.StepUntil(epoch)).To(BeTrue())
		Expect(v.StepUntil(epoch)).To(BeFalse())
		Expect(v.RunUntil(epoch.In(time.FixedZone("X", 3600)).Add(time.Second))).To(Equal(1), "the same instant in another zone")
		Expect(v.StepUntil(time.Time{})).To(BeFalse())
		Expect(order).To(Equal([]string{"now", "one"}))
		Expect(v.Elapsed()).To(Equal(time.Second))
	})

	It("keeps Pending, Next and Step right with stopped timers, however many", func() {
		var timers []clock.Timer
		for i := range 200 {
			timers = append(timers, v.AfterFunc(time.Duration(i)*time.Millisecond, note(fmt.Sprint(i))))
		}
		for i := range 199 {
			Expect(timers[i].Stop()).To(BeTrue())
			Expect(timers[i].Stop()).To(BeFalse())
			Expect(v.Pending()).To(Equal(199 - i))
		}
		next, ok := v.Next()
		Expect(ok).To(BeTrue())
		Expect(next).To(Equal(epoch.Add(199 * time.Millisecond)))
		Expect(v.Step()).To(BeTrue())
		Expect(v.Step()).To(BeFalse())
		Expect(timers[199].Stop()).To(BeFalse(), "it ran")
		Expect(order).To(Equal([]string{"199"}))
		Expect(v.Pending()).To(BeZero())
	})

	It("lets a callback stop a timer due at the same instant", func() {
		var victim clock.Timer
		v.AfterFunc(time.Second, func() { Expect(victim.Stop()).To(BeTrue()) })
		victim = v.AfterFunc(time.Second, note("victim"))
		v.Advance(time.Second)
		Expect(order).To(BeEmpty())
	})

	It("runs Schedule's callbacks in (time, sequence) order among AfterFunc's", func() {
		v.AfterFunc(time.Second, note("a"))
		v.Schedule(time.Second, note("b"))
		v.Schedule(-time.Second, note("now"))
		v.AfterFunc(500*time.Millisecond, note("half"))
		Expect(v.Pending()).To(Equal(4))
		Expect(v.Advance(time.Second)).To(Equal(4))
		Expect(order).To(Equal([]string{"now", "half", "a", "b"}))
	})

	It("re-arms a timer with Reset as Stop then AfterFunc would, reusing it", func() {
		t := v.AfterFunc(time.Second, note("first"))
		v.AfterFunc(2*time.Second, note("other"))
		t2 := v.Reset(t, 2*time.Second, note("re-armed"))
		Expect(t2).To(BeIdenticalTo(t))
		Expect(v.Pending()).To(Equal(2), "the first callback is gone")
		v.Advance(2 * time.Second)
		Expect(order).To(Equal([]string{"other", "re-armed"}), "a later sequence than other")
		Expect(t.Stop()).To(BeFalse(), "it ran")

		t3 := v.Reset(t, time.Second, note("again"))
		Expect(t3).To(BeIdenticalTo(t))
		Expect(t3.Stop()).To(BeTrue())
		Expect(v.Advance(time.Hour)).To(BeZero())

		fresh := v.Reset(nil, 0, note("fresh"))
		Expect(fresh).NotTo(BeNil())
		foreign := clock.NewVirtual(epoch).AfterFunc(0, note("foreign"))
		Expect(v.Reset(foreign, 0, note("mine"))).NotTo(BeIdenticalTo(foreign))
		v.Advance(0)
		Expect(order).To(Equal([]string{"other", "re-armed", "fresh", "mine"}))
		Expect(fresh.Stop()).To(BeFalse())
	})

	It("is safe for concurrent scheduling and stopping", func() {
		var wg sync.WaitGroup
		var mu sync.Mutex
		fired := 0
		for g := range 8 {
			wg.Go(func() {
				for i := range 500 {
					t := v.AfterFunc(time.Duration(i%50)*time.Millisecond, func() { mu.Lock(); fired++; mu.Unlock() })
					if (i+g)%2 == 0 {
						t.Stop()
					}
				}
			})
		}
		wg.Wait()
		v.Advance(time.Second)
		Expect(fired).To(Equal(2000))
		Expect(v.Pending()).To(BeZero())
	})

	It("fires any schedule in (time, sequence) order and honours every Stop (property)", func() {
		rapid.Check(GinkgoT(), func(t *rapid.T) {
			v := clock.NewVirtual(epoch)
			type fire struct {
				at  time.Time
				seq int
			}
			var fired []fire
			var timers []clock.Timer
			stopped := map[int]bool{}
			n := rapid.IntRange(1, 60).Draw(t, "timers")
			for i := range n {
				d := time.Duration(rapid.IntRange(-2, 20).Draw(t, "d")) * time.Millisecond
				f := func() { fired = append(fired, fire{v.Now(), i}) }
				switch rapid.IntRange(0, 2).Draw(t, "how") {
				case 0:
					timers = append(timers, v.AfterFunc(d, f))
				case 1: // re-armed: a first schedule stopped, then the real one
					tm := v.AfterFunc(time.Hour, func() { t.Fatalf("timer %d ran its first callback", i) })
					timers = append(timers, v.Reset(tm, d, f))
				default: // never stopped
					v.Schedule(d, f)
					timers = append(timers, nil)
					continue
				}
				if rapid.Bool().Draw(t, "stop") {
					stopped[i] = timers[i].Stop()
				}
			}
			for v.Pending() > 0 {
				v.Advance(time.Duration(rapid.IntRange(0, 7).Draw(t, "step")) * time.Millisecond)
			}
			ran := map[int]bool{}
			for k, f := range fired {
				ran[f.seq] = true
				if k > 0 {
					prev := fired[k-1]
					if f.at.Before(prev.at) || (f.at.Equal(prev.at) && f.seq < prev.seq) {
						t.Fatalf("timer %d at %v ran after timer %d at %v", f.seq, f.at, prev.seq, prev.at)
					}
				}
			}
			for i := range n {
				if stopped[i] == ran[i] {
					t.Fatalf("timer %d: stopped=%v ran=%v", i, stopped[i], ran[i])
				}
			}
		})
	})
})

var _ = Describe("Real", func() {
	clocktest.Exercise(func() clocktest.Harness {
		return clocktest.Harness{
			Clock: clock.Real{},
			// Waiting on a timer channel, not time.Sleep: this is the real
			// clock's time passing, which is what is under test.
			Elapse: func(d time.Duration) { <-time.NewTimer(d).C },
			// Each callback runs on its own goroutine (time.AfterFunc), so
			// two timers only fire in order when the scheduler gets to the
			// first before the second is due: 25ms was not enough with CI
			// compiling and testing other packages on both cores (seen:
			// "second" before "first").
			Unit:   150 * time.Millisecond,
			Settle: 600 * time.Millisecond,
		}
	})
})
