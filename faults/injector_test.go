package faults_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"pgregory.net/rapid"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/reference/classify"
)

// customModel is a team's own model: not one of the catalogue's.
type customModel struct{ err error }

func (customModel) Name() string                 { return "custom" }
func (customModel) Class() classify.Class        { return classify.Permanent }
func (customModel) Targets() []faults.TargetKind { return []faults.TargetKind{faults.Dependency} }
func (customModel) Validate() error              { return nil }
func (m customModel) Apply(faults.Call, *rand.Rand) faults.Effect {
	return faults.Effect{Err: m.err, Class: classify.Permanent}
}

// panickyModel panics in every method.
type panickyModel struct{ customModel }

func (panickyModel) Validate() error { panic("boom") }

var _ = Describe("Injector", func() {
	at := func(d time.Duration) faults.Call { return faults.Call{At: d, JobID: "j1"} }

	It("hits the targets a fault names: every name of its kind for an empty name", func() {
		in := mustInjector(1,
			faults.Fault{Name: "all-deps", Target: faults.Target{Kind: faults.Dependency}, Model: faults.Latency{Mean: 10 * ms}},
			faults.Fault{Name: "gw-only", Target: gateway, Model: faults.Outage{}},
			faults.Fault{Name: "w1", Target: faults.Target{Kind: faults.Worker, Name: "w1"}, Model: faults.WorkerStall{}},
		)
		e := in.Call(inventory, at(0))
		Expect(e).To(Equal(faults.Effect{Latency: 10 * ms, Fault: "all-deps"}))
		e = in.Call(gateway, at(0))
		Expect(e.Err).To(HaveOccurred())
		Expect(e.Latency).To(Equal(10 * ms))
		Expect(e.Fault).To(Equal("gw-only"))
		Expect(in.Call(faults.Target{Kind: faults.Worker, Name: "w2"}, at(0))).To(Equal(faults.Effect{}))
		Expect(in.Call(faults.Target{Kind: faults.Worker, Name: "w1"}, at(0)).StallFor).To(Equal(30 * time.Second))
		Expect(in.Call(faults.Target{Kind: faults.Store}, at(0))).To(Equal(faults.Effect{}))
		Expect(in.Call(faults.Target{Kind: 99}, at(0))).To(Equal(faults.Effect{}))
		Expect(in.Call(faults.Target{Kind: faults.Dependency, Name: "payment-gateway-2"}, at(0)).Err).NotTo(HaveOccurred())
	})

	It("adds latencies up, lets the first error decide, and counts every active fault", func() {
		in := mustInjector(1,
			faults.Fault{Name: "slow", Target: gateway, Model: faults.Latency{Mean: 200 * ms}},
			faults.Fault{Name: "timeout", Target: gateway, Model: faults.GatewayTimeout{After: 5 * time.Second, ChargedProbability: 1}, Schedule: faults.During(time.Minute, 2*time.Minute)},
			faults.Fault{Name: "declines", Target: gateway, Model: faults.CardDeclined{}},
			faults.Fault{Name: "slower", Target: gateway, Model: faults.Latency{Mean: 50 * ms}},
		)
		e := in.Call(gateway, at(0))
		Expect(e.Err).To(MatchError(ContainSubstring("card_declined")))
		Expect(e.Class).To(Equal(classify.Permanent))
		Expect(e.Latency).To(Equal(250 * ms))
		Expect(e.Fault).To(Equal("declines"))
		Expect(e.Charged).To(BeFalse())

		e = in.Call(gateway, at(90*time.Second))
		Expect(e.Err).To(MatchError("payment-gateway: timed out after 5s"))
		Expect(e.Class).To(Equal(classify.Indeterminate))
		Expect(e.Charged).To(BeTrue())
		Expect(e.Latency).To(Equal(5*time.Second + 250*ms))
		Expect(e.Fault).To(Equal("timeout"))

		stats := in.Stats()
		Expect(stats).To(HaveLen(4))
		Expect(stats[0]).To(Equal(faults.FaultStats{Name: "slow", Target: gateway, Model: "latency", Class: classify.None, Hits: 2, FirstHit: 0, LastHit: 90 * time.Second}))
		Expect(stats[1]).To(Equal(faults.FaultStats{Name: "timeout", Target: gateway, Model: "gateway-timeout", Class: classify.Indeterminate, Hits: 1, FirstHit: 90 * time.Second, LastHit: 90 * time.Second}))
		Expect(stats[2].Hits).To(BeEquivalentTo(2), "shadowed by an earlier error, still hit")
		Expect(stats[3].Hits).To(BeEquivalentTo(2))
	})

	It("names the crash, then the stall, then the last latency when nothing failed", func() {
		w := faults.Target{Kind: faults.Worker, Name: "w1"}
		in := mustInjector(1,
			faults.Fault{Name: "stall", Target: w, Model: faults.WorkerStall{For: time.Second}},
			faults.Fault{Name: "crash", Target: faults.Target{Kind: faults.Worker}, Model: faults.WorkerCrash{RestartAfter: time.Second}, Schedule: faults.During(time.Minute, 0)},
		)
		Expect(in.Call(w, at(0))).To(Equal(faults.Effect{StallFor: time.Second, Fault: "stall"}))
		Expect(in.Call(w, at(time.Minute))).To(Equal(faults.Effect{StallFor: time.Second, Crash: true, RestartAfter: time.Second, Fault: "crash"}))
	})

	It("limits a fault to its first calls while its time conditions hold", func() {
		in := mustInjector(1, faults.Fault{Name: "f", Target: gateway, Model: faults.Outage{}, Schedule: faults.Schedule{From: time.Second, FirstCalls: 3}})
		var failed []time.Duration
		for i := range 10 {
			t := time.Duration(i) * 300 * ms
			if in.Call(gateway, at(t)).Err != nil {
				failed = append(failed, t)
			}
		}
		Expect(failed).To(Equal([]time.Duration{1200 * ms, 1500 * ms, 1800 * ms}), "calls before From do not use the budget")
		Expect(hitsOf(in, "f")).To(BeEquivalentTo(3))
		Expect(in.Call(inventory, at(time.Hour)).Err).NotTo(HaveOccurred(), "other targets never used it either")
	})

	It("hits only the calls of its schedule's jobs, and counts only theirs against FirstCalls", func() {
		by := func(job string, t time.Duration) faults.Call { return faults.Call{At: t, JobID: job} }
		in := mustInjector(1,
			faults.Fault{Name: "declined", Target: gateway, Model: faults.CardDeclined{}, Schedule: faults.Schedule{Jobs: []string{"pay-declined"}}},
			faults.Fault{Name: "revoked", Target: gateway, Model: faults.AuthFailure{Code: 401}, Schedule: faults.Schedule{From: 3 * time.Minute, Jobs: []string{"pay-auth", "pay-auth-2"}, FirstCalls: 2}},
		)
		// Other jobs' calls, and infrastructure calls, come first and at the
		// same instants: on the wall clock a job's call comes a little after
		// its arrival, and whichever job called first used to take the hit.
		Expect(in.Call(gateway, by("charge-1", 30*time.Second)).Err).NotTo(HaveOccurred())
		Expect(in.Call(gateway, by("", 30*time.Second)).Err).NotTo(HaveOccurred())
		e := in.Call(gateway, by("pay-declined", 30*time.Second+7*ms))
		Expect(e.Fault).To(Equal("declined"))
		Expect(e.Class).To(Equal(classify.Permanent))
		Expect(in.Call(gateway, by("pay-declined", 9*time.Minute)).Fault).To(Equal("declined"), "without time conditions, every call of the job")
		Expect(in.Call(inventory, by("pay-declined", 0)).Err).NotTo(HaveOccurred(), "the target still applies")

		for i := range 5 {
			Expect(in.Call(gateway, by(fmt.Sprintf("charge-%d", i+2), 3*time.Minute)).Err).NotTo(HaveOccurred())
		}
		Expect(in.Call(gateway, by("pay-auth", 2*time.Minute)).Err).NotTo(HaveOccurred(), "the time conditions still apply, and use no budget")
		Expect(in.Call(gateway, by("pay-auth", 3*time.Minute+12*ms)).Fault).To(Equal("revoked"))
		Expect(in.Call(gateway, by("pay-auth-2", 3*time.Minute+40*ms)).Fault).To(Equal("revoked"))
		Expect(in.Call(gateway, by("pay-auth", 4*time.Minute)).Err).NotTo(HaveOccurred(), "two calls by its jobs spent the budget")

		Expect(hitsOf(in, "declined")).To(BeEquivalentTo(2))
		Expect(hitsOf(in, "revoked")).To(BeEquivalentTo(2))
		st := in.Stats()[1]
		Expect([]time.Duration{st.FirstHit, st.LastHit}).To(Equal([]time.Duration{3*time.Minute + 12*ms, 3*time.Minute + 40*ms}))
	})

	It("looks a long list of jobs up as well as a short one", func() {
		jobs := make([]string, 40)
		for i := range jobs {
			jobs[i] = fmt.Sprintf("job-%d", i)
		}
		in := mustInjector(1, faults.Fault{Name: "many", Target: gateway, Model: faults.Outage{}, Schedule: faults.Schedule{Jobs: jobs}})
		for i := range 80 {
			e := in.Call(gateway, faults.Call{At: time.Duration(i) * ms, JobID: fmt.Sprintf("job-%d", i)})
			Expect(e.Err != nil).To(Equal(i < 40), "job-%d", i)
		}
		jobs[0] = "changed"
		Expect(in.Faults()[0].Schedule.Jobs[0]).To(Equal("job-0"), "the Injector keeps its own copy")
		Expect(in.Call(gateway, faults.Call{JobID: "job-0"}).Err).To(HaveOccurred())
	})

	It("draws nothing for another job's call, so a jobs-limited fault's draws do not depend on other jobs", func() {
		only := func(extra bool) []bool {
			in := mustInjector(3, faults.Fault{Name: "p", Target: gateway, Model: faults.Outage{}, Schedule: faults.Schedule{Jobs: []string{"a"}, Probability: 0.5}})
			var hits []bool
			for i := range 200 {
				if extra {
					in.Call(gateway, faults.Call{At: time.Duration(i) * ms, JobID: "b"})
				}
				hits = append(hits, in.Call(gateway, faults.Call{At: time.Duration(i) * ms, JobID: "a"}).Err != nil)
			}
			return hits
		}
		Expect(only(true)).To(Equal(only(false)))
	})

	It("spends the FirstCalls budget on calls the probability draw misses", func() {
		in := mustInjector(5, faults.Fault{Name: "f", Target: gateway, Model: faults.Outage{}, Schedule: faults.Schedule{FirstCalls: 1000, Probability: 0.5}})
		for i := range 5000 {
			in.Call(gateway, at(time.Duration(i)*ms))
		}
		Expect(hitsOf(in, "f")).To(BeNumerically("~", 500, 60))
	})

	It("hits a fraction Probability of the calls", func() {
		for _, p := range []float64{0.01, 0.1, 0.5, 0.9} {
			in := mustInjector(uint64(p*1000), faults.ErrorRate("rate", "payment-gateway", 503, p))
			failed := 0
			for i := range 10_000 {
				if in.Call(gateway, at(time.Duration(i)*ms)).Err != nil {
					failed++
				}
			}
			Expect(float64(failed)/10_000).To(BeNumerically("~", p, 0.015), "p=%v", p)
			Expect(hitsOf(in, "rate")).To(BeEquivalentTo(failed))
		}
	})

	It("is deterministic: the same seed gives the same effects and stats, another seed others", func() {
		scenario := func(seed uint64) ([]faults.Effect, []faults.FaultStats) {
			in := mustInjector(seed,
				faults.Fault{Name: "rate", Target: gateway, Model: faults.HTTPStatus{Code: 502}, Schedule: faults.Schedule{Probability: 0.2}},
				faults.Fault{Name: "lat", Target: faults.Target{Kind: faults.Dependency}, Model: faults.Latency{Distribution: "lognormal"}, Schedule: faults.Schedule{Probability: 0.5}},
				faults.Fault{Name: "cards", Target: gateway, Model: faults.CardDeclined{Codes: []string{"a", "b", "c"}}, Schedule: faults.Schedule{Probability: 0.1, Every: &faults.Periodic{Period: time.Second, Duty: 0.5, Jitter: 200 * ms}}},
			)
			var es []faults.Effect
			for i := range 2000 {
				t := gateway
				if i%3 == 0 {
					t = inventory
				}
				es = append(es, in.Call(t, at(time.Duration(i)*7*ms)))
			}
			return es, in.Stats()
		}
		e1, s1 := scenario(99)
		e2, s2 := scenario(99)
		Expect(e1).To(Equal(e2))
		Expect(s1).To(Equal(s2))
		e3, s3 := scenario(100)
		Expect(e3).NotTo(Equal(e1))
		Expect(s3).NotTo(Equal(s1))
	})

	It("leaves every other fault's hits and effects unchanged when a fault is removed (property)", func() {
		rapid.Check(GinkgoT(), func(t *rapid.T) {
			seed := rapid.Uint64().Draw(t, "seed")
			deps := []string{"payment-gateway", "smtp", ""}
			n := rapid.IntRange(2, 6).Draw(t, "faults")
			fs := make([]faults.Fault, n)
			for i := range fs {
				s := scheduleGen().Draw(t, fmt.Sprint("schedule", i))
				s.FirstCalls = rapid.SampledFrom([]int{0, 0, 5, 50}).Draw(t, fmt.Sprint("firstCalls", i))
				s.Probability = rapid.SampledFrom([]float64{0, 0.1, 0.5, 1}).Draw(t, fmt.Sprint("probability", i))
				s.Jobs = rapid.SampledFrom([][]string{nil, nil, {"a"}, {"b", "c"}}).Draw(t, fmt.Sprint("jobs", i))
				models := []faults.Model{
					faults.HTTPStatus{}, faults.Latency{Distribution: "exponential"}, faults.CardDeclined{Codes: []string{"x", "y"}},
					faults.GatewayTimeout{ChargedProbability: 0.5}, faults.Flapping{Period: 100 * ms, Jitter: 20 * ms},
				}
				fs[i] = faults.Fault{
					Name:     fmt.Sprintf("f%d", i),
					Target:   faults.Target{Kind: faults.Dependency, Name: rapid.SampledFrom(deps).Draw(t, fmt.Sprint("target", i))},
					Model:    rapid.SampledFrom(models).Draw(t, fmt.Sprint("model", i)),
					Schedule: s,
				}
			}
			type call struct {
				t faults.Target
				c faults.Call
			}
			calls := make([]call, rapid.IntRange(1, 300).Draw(t, "calls"))
			for i := range calls {
				calls[i] = call{
					t: faults.Target{Kind: faults.Dependency, Name: rapid.SampledFrom(deps[:2]).Draw(t, fmt.Sprint("dep", i))},
					c: faults.Call{At: time.Duration(rapid.IntRange(0, 3000).Draw(t, fmt.Sprint("at", i))) * ms,
						JobID: rapid.SampledFrom([]string{"", "a", "b", "c", "d"}).Draw(t, fmt.Sprint("job", i))},
				}
			}
			// What each fault alone does, call by call, against what it does
			// among the others (minus one).
			run := func(fs []faults.Fault) []faults.FaultStats {
				in, err := faults.NewInjector(seed, fs)
				if err != nil {
					t.Fatalf("NewInjector: %v", err)
				}
				for _, c := range calls {
					in.Call(c.t, c.c)
				}
				return in.Stats()
			}
			all := run(fs)
			for i, f := range fs {
				if len(f.Schedule.Jobs) == 0 {
					continue
				}
				theirs := 0
				for _, c := range calls {
					if (f.Target.Name == "" || f.Target.Name == c.t.Name) && slices.Contains(f.Schedule.Jobs, c.c.JobID) {
						theirs++
					}
				}
				if all[i].Hits > int64(theirs) {
					t.Fatalf("%s hit %d calls, but its jobs %v made only %d", f.Name, all[i].Hits, f.Schedule.Jobs, theirs)
				}
			}
			drop := rapid.IntRange(0, n-1).Draw(t, "drop")
			rest := run(slices.Delete(slices.Clone(fs), drop, drop+1))
			want := slices.Delete(slices.Clone(all), drop, drop+1)
			if !slices.Equal(rest, want) {
				t.Fatalf("removing %s changed the others' stats:\n got %+v\nwant %+v", fs[drop].Name, rest, want)
			}
		})
	})

	It("lists every fault's windows, a flapping primary's only while it is down", func() {
		in := mustInjector(3,
			faults.Fault{Name: "outage", Target: gateway, Model: faults.Outage{}, Schedule: faults.During(time.Minute, 2*time.Minute)},
			faults.Fault{Name: "flap", Target: gateway, Model: faults.Flapping{Period: 10 * time.Second, Duty: 0.5}, Schedule: faults.During(time.Minute+2*time.Second, 2*time.Minute)},
			faults.Fault{Name: "crash", Target: faults.Target{Kind: faults.Worker}, Model: faults.WorkerCrash{}, Schedule: faults.Schedule{Every: &faults.Periodic{Period: time.Hour, Duty: 0.01, Phase: 30 * time.Minute}}},
		)
		ws := in.Windows(3*time.Hour, 100)
		Expect(ws).To(HaveLen(3))
		Expect(ws[0]).To(Equal(faults.FaultWindows{Fault: "outage", Target: gateway, Model: "outage", Class: classify.Transient, Windows: []faults.Window{{time.Minute, 2 * time.Minute}}}))
		Expect(ws[1].Windows).To(Equal([]faults.Window{
			{62 * time.Second, 65 * time.Second}, {70 * time.Second, 75 * time.Second}, {80 * time.Second, 85 * time.Second},
			{90 * time.Second, 95 * time.Second}, {100 * time.Second, 105 * time.Second}, {110 * time.Second, 115 * time.Second},
		}))
		Expect(ws[2].Windows).To(HaveLen(3))
		Expect(ws[2].Windows[0].From).To(Equal(30 * time.Minute))
		Expect(in.Windows(3*time.Hour, 1)[1].Truncated).To(BeTrue())
	})

	It("applies a team's own model with its plain Apply", func() {
		boom := errors.New("boom")
		in := mustInjector(1, faults.Fault{Name: "mine", Target: gateway, Model: customModel{err: boom}})
		e := in.Call(gateway, at(0))
		Expect(e.Err).To(MatchError(boom))
		Expect(e.Fault).To(Equal("mine"))
		Expect(in.Stats()[0].Model).To(Equal("custom"))
	})

	It("allocates nothing per call, with or without an active fault", func() {
		in := mustInjector(1,
			faults.Fault{Name: "later", Target: gateway, Model: faults.Outage{}, Schedule: faults.During(time.Hour, 0)},
			faults.Fault{Name: "rate", Target: inventory, Model: faults.HTTPStatus{Code: 502}, Schedule: faults.Schedule{Probability: 0.5, Every: &faults.Periodic{Period: time.Second, Duty: 0.5, Jitter: 100 * ms}}},
			faults.Fault{Name: "lat", Target: inventory, Model: faults.Latency{Distribution: "normal"}},
			faults.Fault{Name: "cards", Target: inventory, Model: faults.CardDeclined{Codes: []string{"a", "b"}}, Schedule: faults.Schedule{Probability: 0.1}},
			faults.Fault{Name: "one-job", Target: inventory, Model: faults.CardDeclined{}, Schedule: faults.Schedule{Jobs: []string{"pay-declined", "pay-auth"}}},
			faults.Fault{Name: "many-jobs", Target: inventory, Model: faults.Outage{}, Schedule: faults.Schedule{Jobs: []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "pay-auth"}, FirstCalls: 1_000_000}},
		)
		i := 0
		Expect(testing.AllocsPerRun(1000, func() {
			i++
			in.Call(gateway, faults.Call{At: time.Duration(i) * ms})
		})).To(BeZero())
		Expect(testing.AllocsPerRun(1000, func() {
			i++
			in.Call(inventory, faults.Call{At: time.Duration(i) * ms})
		})).To(BeZero())
		for _, job := range []string{"pay-declined", "pay-auth", "charge-7"} {
			Expect(testing.AllocsPerRun(1000, func() {
				i++
				in.Call(inventory, faults.Call{At: time.Duration(i) * ms, JobID: job})
			})).To(BeZero(), job)
		}
		Expect(hitsOf(in, "one-job")).To(BeNumerically(">", 0))
		Expect(hitsOf(in, "many-jobs")).To(BeNumerically(">", 0))
	})

	Describe("NewInjector", func() {
		It("reports every invalid fault at once, each naming its fault and field", func() {
			_, err := faults.NewInjector(1, []faults.Fault{
				{Name: "gw-timeouts", Target: gateway, Model: faults.GatewayTimeout{}, Schedule: faults.Schedule{Every: &faults.Periodic{Period: time.Minute, Duty: 1.5}}},
				{Name: "bad-code", Target: gateway, Model: faults.HTTPStatus{Code: 200}},
				{Name: "crash-gw", Target: gateway, Model: faults.WorkerCrash{}},
				{Name: "no-model", Target: gateway},
				{Name: "no-target", Model: faults.Outage{}},
				{Target: gateway, Model: faults.Outage{}},
				{Name: "gw-timeouts", Target: gateway, Model: faults.Outage{}},
				{Name: "panics", Target: gateway, Model: panickyModel{}},
				{Name: "star", Target: faults.Target{Kind: faults.Worker, Name: "*"}, Model: faults.WorkerCrash{}},
				{Name: "crash-job", Target: faults.Target{Kind: faults.Worker}, Model: faults.WorkerCrash{}, Schedule: faults.Schedule{Jobs: []string{"pay-auth"}}},
			})
			Expect(err).To(HaveOccurred())
			for _, want := range []string{
				`fault "gw-timeouts": schedule.every.duty: must be in (0,1], got 1.5`,
				`fault "bad-code": model.code: must be in 400..599, got 200`,
				`fault "crash-gw": target.kind: model "worker-crash" cannot target dependency; it targets worker`,
				`fault "no-model": model: required; one of gateway-timeout, latency,`,
				`fault "no-target": target.kind: required`,
				`faults[5].name: required`,
				`fault "gw-timeouts": name: duplicate: faults[0] and faults[6] share it`,
				`fault "panics": model: the model panicked: boom`,
				`fault "star": target.name: "*" is not a name`,
				`fault "crash-job": schedule.jobs: worker faults cannot be limited to jobs: no job makes their calls`,
			} {
				Expect(err.Error()).To(ContainSubstring(want))
			}
			var fe *faults.FieldError
			Expect(errors.As(err, &fe)).To(BeTrue())
			Expect(fe.Fault).To(Equal("gw-timeouts"))
			Expect(fe.Field).To(Equal("schedule.every.duty"))
		})

		It("accepts no faults, and keeps the faults in order", func() {
			in := mustInjector(1)
			Expect(in.Call(gateway, at(0))).To(Equal(faults.Effect{}))
			Expect(in.Stats()).To(BeEmpty())
			fs := []faults.Fault{faults.ErrorRate("a", "x", 500, 0.5), faults.FlappingPrimary("b", "y", time.Minute, 0.5, 0)}
			in = mustInjector(1, fs...)
			Expect(in.Faults()).To(Equal(fs))
			Expect(in.Seed()).To(BeEquivalentTo(1))
		})
	})

	It("derives each fault's stream from the seed and the FNV-1a hash of its name", func() {
		Expect(faults.NameHash("")).To(BeEquivalentTo(uint64(14695981039346656037)))
		Expect(faults.NameHash("a")).To(BeEquivalentTo(uint64(0xaf63dc4c8601ec8c)))
		a, b := faults.Stream(1, "gw"), rand.New(rand.NewPCG(1, faults.NameHash("gw")))
		Expect(a.Uint64()).To(Equal(b.Uint64()))
	})
})

var _ = Describe("Injector.CallFault", func() {
	It("applies one fault alone, counted like a hit, and nothing for another target or index", func() {
		in, err := faults.NewInjector(1, []faults.Fault{
			{Name: "crash-w1", Target: faults.Target{Kind: faults.Worker, Name: "w1"}, Model: faults.WorkerCrash{RestartAfter: time.Second},
				Schedule: faults.Schedule{From: 10 * time.Second}},
			{Name: "stall-all", Target: faults.Target{Kind: faults.Worker}, Model: faults.WorkerStall{For: 5 * time.Second},
				Schedule: faults.Schedule{From: 30 * time.Second}},
		})
		Expect(err).NotTo(HaveOccurred())
		w1 := faults.Target{Kind: faults.Worker, Name: "w1"}
		e := in.CallFault(1, w1, faults.Call{At: 30 * time.Second})
		Expect(e.StallFor).To(Equal(5 * time.Second))
		Expect(e.Crash).To(BeFalse(), "the crash fault, also on at 30s, is not applied")
		Expect(e.Fault).To(Equal("stall-all"))
		Expect(in.CallFault(0, faults.Target{Kind: faults.Worker, Name: "w2"}, faults.Call{At: 30 * time.Second})).To(BeZero())
		Expect(in.CallFault(0, w1, faults.Call{At: 5 * time.Second})).To(BeZero(), "before its window")
		Expect(in.CallFault(7, w1, faults.Call{At: 30 * time.Second})).To(BeZero())
		st := in.Stats()
		Expect(st[0].Hits).To(BeZero())
		Expect(st[1].Hits).To(BeEquivalentTo(1))
	})
})
