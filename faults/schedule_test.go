package faults_test

import (
	"errors"
	"fmt"
	"math"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"pgregory.net/rapid"

	"github.com/faultline/faultline/faults"
)

// scheduleGen draws valid schedules over a short timeline, so that a
// property can look at every millisecond.
func scheduleGen() *rapid.Generator[faults.Schedule] {
	return rapid.Custom(func(t *rapid.T) faults.Schedule {
		var s faults.Schedule
		s.From = time.Duration(rapid.IntRange(0, 300).Draw(t, "from")) * ms
		if rapid.Bool().Draw(t, "bounded") {
			s.Until = s.From + time.Duration(rapid.IntRange(1, 2000).Draw(t, "length"))*ms
		}
		if rapid.Bool().Draw(t, "periodic") {
			period := rapid.IntRange(1, 200).Draw(t, "period")
			p := &faults.Periodic{
				Period: time.Duration(period) * ms,
				Jitter: time.Duration(rapid.IntRange(0, period/2).Draw(t, "jitter")) * ms,
				Phase:  time.Duration(rapid.IntRange(0, 3*period).Draw(t, "phase")) * ms,
			}
			// A duty giving at least one millisecond.
			p.Duty = rapid.Float64Range(1/float64(period), 1).Draw(t, "duty")
			if math.Round(p.Duty*float64(period)) < 1 {
				p.Duty = 1
			}
			s.Every = p
		}
		return s
	})
}

var _ = Describe("Schedule", func() {
	const seed = 42

	It("is active from From and before Until", func() {
		s := faults.During(10*time.Second, 20*time.Second)
		Expect(s.Validate()).To(Succeed())
		for t, want := range map[time.Duration]bool{
			0: false, 10*time.Second - time.Nanosecond: false, 10 * time.Second: true,
			15 * time.Second: true, 20*time.Second - time.Nanosecond: true, 20 * time.Second: false, -time.Second: false,
		} {
			Expect(s.ActiveAt(seed, "f", t)).To(Equal(want), "at %s", t)
		}
		ws, truncated := s.Windows(seed, "f", time.Minute, 10)
		Expect(ws).To(Equal([]faults.Window{{10 * time.Second, 20 * time.Second}}))
		Expect(truncated).To(BeFalse())

		open := faults.Schedule{From: time.Second}
		Expect(open.ActiveAt(seed, "f", 1000*time.Hour)).To(BeTrue())
		ws, _ = open.Windows(seed, "f", time.Minute+500*time.Microsecond, 10)
		Expect(ws).To(Equal([]faults.Window{{time.Second, time.Minute + 500*time.Microsecond}}), "clipped to the horizon")
		Expect(faults.Schedule{}.ActiveAt(seed, "f", 0)).To(BeTrue(), "the zero schedule is always active")
	})

	It("is on for Duty of every Period without jitter, from Phase", func() {
		s := faults.Schedule{Every: &faults.Periodic{Period: 10 * time.Second, Duty: 0.25, Phase: 3 * time.Second}}
		ws, truncated := s.Windows(seed, "f", 40*time.Second, 10)
		Expect(truncated).To(BeFalse())
		Expect(ws).To(Equal([]faults.Window{
			{3 * time.Second, 5500 * ms}, {13 * time.Second, 15500 * ms}, {23 * time.Second, 25500 * ms}, {33 * time.Second, 35500 * ms},
		}))
		Expect(s.ActiveAt(seed, "f", 5499*ms)).To(BeTrue())
		Expect(s.ActiveAt(seed, "f", 5500*ms)).To(BeFalse())

		ws, truncated = s.Windows(seed, "f", 40*time.Second, 2)
		Expect(ws).To(HaveLen(2))
		Expect(truncated).To(BeTrue())
		ws, truncated = s.Windows(seed, "f", 40*time.Second, 0)
		Expect(ws).To(BeEmpty())
		Expect(truncated).To(BeTrue())

		always := faults.Schedule{Every: &faults.Periodic{Period: ms, Duty: 1}}
		ws, _ = always.Windows(seed, "f", 365*24*time.Hour, 2)
		Expect(ws).To(Equal([]faults.Window{{0, 365 * 24 * time.Hour}}), "a full duty is one window")
	})

	It("shifts each on-phase by a jitter drawn per period, the same whatever is asked first", func() {
		s := faults.Schedule{Every: &faults.Periodic{Period: 10 * time.Second, Duty: 0.2, Jitter: 3 * time.Second}}
		ws, _ := s.Windows(seed, "f", time.Hour, 1000)
		Expect(ws).To(HaveLen(360))
		shifts := map[time.Duration]bool{}
		for i, w := range ws[1:] {
			nominal := time.Duration(i+1) * 10 * time.Second
			Expect(w.From).To(BeNumerically("~", nominal, 3*time.Second))
			Expect(w.Until - w.From).To(Equal(2 * time.Second))
			shifts[w.From-nominal] = true
		}
		Expect(len(shifts)).To(BeNumerically(">", 100), "jitters vary")

		// Asking in reverse gives the same answers as asking in order.
		forward := make([]bool, 0, 3600)
		for t := time.Duration(0); t < time.Hour; t += time.Second {
			forward = append(forward, s.ActiveAt(seed, "f", t))
		}
		for i := len(forward) - 1; i >= 0; i-- {
			Expect(s.ActiveAt(seed, "f", time.Duration(i)*time.Second)).To(Equal(forward[i]))
		}

		other, _ := s.Windows(seed, "g", time.Hour, 1000)
		Expect(other).NotTo(Equal(ws), "another fault's jitter differs")
		reseeded, _ := s.Windows(seed+1, "f", time.Hour, 1000)
		Expect(reseeded).NotTo(Equal(ws), "another seed's jitter differs")
	})

	It("agrees with its windows at every millisecond (property)", func() {
		rapid.Check(GinkgoT(), func(t *rapid.T) {
			s := scheduleGen().Draw(t, "schedule")
			seed := rapid.Uint64().Draw(t, "seed")
			name := rapid.StringMatching(`[a-z]{1,8}`).Draw(t, "name")
			horizon := time.Duration(rapid.IntRange(1, 3000).Draw(t, "horizon")) * ms
			if err := s.Validate(); err != nil || !faults.ScheduleValid(s) {
				t.Fatalf("generated an invalid schedule: %v", err)
			}
			ws, truncated := s.Windows(seed, name, horizon, 1_000_000)
			if truncated {
				t.Fatalf("truncated")
			}
			for i, w := range ws {
				if w.From < 0 || w.Until > horizon || w.From >= w.Until {
					t.Fatalf("window %d %v outside [0, %s) or empty", i, w, horizon)
				}
				if i > 0 && w.From <= ws[i-1].Until {
					t.Fatalf("windows %v and %v touch or overlap", ws[i-1], w)
				}
			}
			j := 0
			for at := time.Duration(0); at < horizon; at += ms {
				for j < len(ws) && ws[j].Until <= at {
					j++
				}
				in := j < len(ws) && ws[j].From <= at
				if got := s.ActiveAt(seed, name, at); got != in {
					t.Fatalf("ActiveAt(%s) = %v, windows %v", at, got, ws)
				}
				if got := s.ActiveAt(seed, name, at+ms/2); got != in {
					t.Fatalf("ActiveAt(%s) = %v within the millisecond", at+ms/2, got)
				}
			}
			// Truncation lists a prefix.
			if len(ws) > 1 {
				few, truncated := s.Windows(seed, name, horizon, len(ws)-1)
				if !truncated || fmt.Sprint(few) != fmt.Sprint(ws[:len(ws)-1]) {
					t.Fatalf("truncated list %v of %v", few, ws)
				}
			}
		})
	})

	DescribeTable("Validate names the bad field",
		func(s faults.Schedule, field, msg string) {
			err := s.Validate()
			Expect(err).To(HaveOccurred())
			Expect(faults.ScheduleValid(s)).To(BeFalse())
			var fe *faults.FieldError
			Expect(errors.As(err, &fe)).To(BeTrue())
			Expect(fe.Field).To(Equal(field))
			Expect(err).To(MatchError(ContainSubstring(field + ": " + msg)))
		},
		Entry(nil, faults.Schedule{From: -time.Second}, "from", "must be ≥ 0, got -1s"),
		Entry(nil, faults.Schedule{From: time.Microsecond}, "from", "must be a whole number of milliseconds, got 1µs"),
		Entry(nil, faults.Schedule{Until: 1500 * time.Microsecond}, "until", "must be a whole number of milliseconds"),
		Entry(nil, faults.Schedule{From: time.Minute, Until: time.Second}, "until", "must be after from (1m0s), got 1s; 0 means until the end"),
		Entry(nil, faults.Schedule{From: time.Minute, Until: time.Minute}, "until", "must be after from"),
		Entry(nil, faults.Schedule{Every: &faults.Periodic{Duty: 0.5}}, "every.period", "must be > 0, got 0s"),
		Entry(nil, faults.Schedule{Every: &faults.Periodic{Period: time.Second, Duty: 1.5}}, "every.duty", "must be in (0,1], got 1.5"),
		Entry(nil, faults.Schedule{Every: &faults.Periodic{Period: time.Second}}, "every.duty", "must be in (0,1], got 0"),
		Entry(nil, faults.Schedule{Every: &faults.Periodic{Period: time.Second, Duty: math.NaN()}}, "every.duty", "must be in (0,1], got NaN"),
		Entry(nil, faults.Schedule{Every: &faults.Periodic{Period: 2 * ms, Duty: 0.1}}, "every.duty", "0.1 of period 2ms is less than 1ms"),
		Entry(nil, faults.Schedule{Every: &faults.Periodic{Period: time.Second, Duty: 0.5, Jitter: 600 * ms}}, "every.jitter", "must be at most half the period (500ms), got 600ms"),
		Entry(nil, faults.Schedule{Every: &faults.Periodic{Period: time.Second, Duty: 0.5, Phase: -ms}}, "every.phase", "must be ≥ 0"),
		Entry(nil, faults.Schedule{FirstCalls: -1}, "firstCalls", "must be ≥ 0, got -1"),
		Entry(nil, faults.Schedule{Probability: 1.5}, "probability", "must be in [0,1], got 1.5"),
		Entry(nil, faults.Schedule{Probability: -0.1}, "probability", "must be in [0,1], got -0.1"),
	)

	It("refuses an empty or repeated job ID, and its jobs change none of its windows", func() {
		s := faults.Schedule{From: time.Second, Until: 2 * time.Second, Jobs: []string{"a", "", "b", "a"}}
		err := s.Validate()
		Expect(err).To(MatchError(ContainSubstring(`jobs[1]: empty job ID`)))
		Expect(err).To(MatchError(ContainSubstring(`jobs[3]: duplicate job ID "a"`)))
		var fe *faults.FieldError
		Expect(errors.As(err, &fe)).To(BeTrue())
		Expect(fe.Field).To(Equal("jobs[1]"))
		Expect(faults.Schedule{Jobs: []string{"a", "b"}}.Validate()).To(Succeed())

		s.Jobs = []string{"pay-declined"}
		plain := s
		plain.Jobs = nil
		ws, tr := s.Windows(seed, "f", time.Hour, 10)
		pws, ptr := plain.Windows(seed, "f", time.Hour, 10)
		Expect(ws).To(Equal(pws))
		Expect(tr).To(Equal(ptr))
		Expect(ws).To(Equal([]faults.Window{{From: time.Second, Until: 2 * time.Second}}))
		Expect(s.ActiveAt(seed, "f", 1500*ms)).To(BeTrue())
		Expect(faults.Schedule{Jobs: []string{"x"}}.Windows(seed, "f", time.Minute, 10)).To(Equal([]faults.Window{{From: 0, Until: time.Minute}}))
	})

	DescribeTable("Fault.Validate refuses jobs on a target whose calls carry no job",
		func(target faults.Target, model faults.Model, refused bool) {
			f := faults.Fault{Name: "f", Target: target, Model: model, Schedule: faults.Schedule{Jobs: []string{"pay-auth"}}}
			err := f.Validate()
			if !refused {
				Expect(err).NotTo(HaveOccurred())
				return
			}
			Expect(err).To(MatchError(ContainSubstring(`fault "f": schedule.jobs: ` + target.Kind.String() + ` faults cannot be limited to jobs: no job makes their calls; only dependency and dlq-store faults take jobs`)))
			var fe *faults.FieldError
			Expect(errors.As(err, &fe)).To(BeTrue())
			Expect(fe.Field).To(Equal("schedule.jobs"))
		},
		Entry("a dependency", faults.Target{Kind: faults.Dependency, Name: "payment-gateway"}, faults.CardDeclined{}, false),
		Entry("the DLQ store", faults.Target{Kind: faults.DLQStore}, faults.StoreOutage{}, false),
		Entry("a worker", faults.Target{Kind: faults.Worker, Name: "w1"}, faults.WorkerCrash{}, true),
		Entry("the store", faults.Target{Kind: faults.Store}, faults.SlowStore{}, true),
		Entry("an alert sink", faults.Target{Kind: faults.AlertSink}, faults.SinkOutage{}, true),
	)

	It("reports every bad field at once, and an invalid schedule is active nowhere", func() {
		s := faults.Schedule{From: -1, Probability: 2, Every: &faults.Periodic{Duty: 3}}
		err := s.Validate()
		for _, f := range []string{"from:", "probability:", "every.period:", "every.duty:"} {
			Expect(err).To(MatchError(ContainSubstring(f)))
		}
		Expect(s.ActiveAt(seed, "f", time.Second)).To(BeFalse())
		ws, truncated := s.Windows(seed, "f", time.Hour, 10)
		Expect(ws).To(BeEmpty())
		Expect(truncated).To(BeFalse())
	})
})
