package sim_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/degrade"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/retry"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/memstore"
	"github.com/faultline/faultline/reference/worker"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
	"github.com/faultline/faultline/sim"
	"github.com/faultline/faultline/sim/simmatchers"
)

// The broken components below are what a team might plug in by mistake.
// Each breaks one rule, and the run must fail naming that rule.

// lenientClassifier is the reference classifier with one bug: it calls a
// critical failure (bad credentials) transient, so the job is retried
// instead of paging a person.
type lenientClassifier struct{ inner worker.Classifier }

var _ worker.Classifier = lenientClassifier{}

func (c lenientClassifier) Classify(err error, scope classify.Scope) classify.Classification {
	v := c.inner.Classify(err, scope)
	if v.Class == classify.Critical {
		v.Class, v.Severity = classify.Transient, classify.Medium
	}
	return v
}

// relentlessPolicy is the reference retry policy with one bug: a job that
// used up its attempts is retried anyway.
type relentlessPolicy struct {
	inner *retry.Policy
	delay time.Duration
}

var _ worker.Policy = relentlessPolicy{}

func (p relentlessPolicy) Decide(a retry.Attempt, c classify.Classification, now time.Time) retry.Decision {
	d := p.inner.Decide(a, c, now)
	if d.Action == retry.DeadLetter && d.Reason == retry.ExhaustedAttempts {
		d.Action, d.Reason, d.At, d.Delay = retry.Retry, retry.BackoffDelay, now.Add(p.delay), p.delay
	}
	return d
}

// trimmingStore is memstore with a DLQ that keeps at most keep entries: after
// each dead letter it purges the oldest, and hides the purge from the
// simulator by swallowing its events.
type trimmingStore struct {
	*memstore.Store
	keep   int
	hiding bool
	// dropped are the jobs whose entries were purged in secret.
	dropped []string
}

var _ sim.Backend = (*trimmingStore)(nil)

// openTrimming returns a sim.WithStore factory for a trimmingStore keeping
// keep entries; *opened is set to the store it opens.
func openTrimming(keep int, opened **trimmingStore) func(context.Context, sim.Env, store.Config) (sim.Backend, error) {
	return func(_ context.Context, _ sim.Env, cfg store.Config) (sim.Backend, error) {
		t := &trimmingStore{keep: keep}
		observe := cfg.Observer
		cfg.Observer = func(e disposition.Event) {
			if t.hiding {
				t.dropped = append(t.dropped, e.JobID)
				return
			}
			observe(e)
		}
		s, err := memstore.New(cfg)
		if err != nil {
			return nil, err
		}
		t.Store = s
		*opened = t
		return t, nil
	}
}

func (t *trimmingStore) DeadLetter(ctx context.Context, l queue.Lease, e dlq.Entry, now time.Time) (dlq.AddResult, error) {
	res, err := t.Store.DeadLetter(ctx, l, e, now)
	if err != nil {
		return res, err
	}
	// The entry is written; a trim that fails leaves the DLQ over capacity,
	// which loses nothing.
	_ = t.trim(ctx, now)
	return res, nil
}

// trim purges the oldest entries while the DLQ holds more than keep.
func (t *trimmingStore) trim(ctx context.Context, now time.Time) error {
	st, err := t.Store.Stats(ctx)
	if err != nil || st.Total <= t.keep {
		return err
	}
	p, err := t.Store.List(ctx, dlq.Filter{}, "", st.Total)
	if err != nil || len(p.Entries) == 0 {
		return err
	}
	oldest := p.Entries[len(p.Entries)-1] // newest first
	t.hiding = true
	defer func() { t.hiding = false }()
	// Purge's cut-off is a millisecond's (dlq.Store.Purge): this takes the
	// oldest entry's millisecond.
	_, err = t.Store.Purge(ctx, oldest.LastFailedAt.Add(time.Millisecond), now)
	return err
}

// eagerAlerter has no deduplication, grouping or repeat interval: every
// failed attempt goes straight to its receiver's sink as a notification of
// its own.
type eagerAlerter struct{ cfg alert.Config }

var _ sim.Alerter = (*eagerAlerter)(nil)

func (a *eagerAlerter) JobFailed(f alert.Failure) string {
	fp := "job-failed/" + f.Task + "/" + f.Class.String() + "/" + f.Dependency
	r := a.receiver(f.Severity)
	// A refused send is lost: this alerter has no outbox either.
	_ = r.Sink.Send(context.Background(), alert.Notification{Receiver: r.Name, Alerts: []alert.Alert{{
		Fingerprint: fp, Name: "job-failed", Severity: f.Severity, Status: alert.Firing, Count: 1,
		Summary: f.Task + " failed: " + f.Class.String(),
	}}})
	return fp
}

func (a *eagerAlerter) BreakerChanged(degrade.Transition) {}

// receiver picks the first route taking severity sev, else the default.
func (a *eagerAlerter) receiver(sev classify.Severity) alert.Receiver {
	name := a.cfg.DefaultReceiver
	for _, rt := range a.cfg.Routes {
		if len(rt.Severities) == 0 || slices.Contains(rt.Severities, sev) {
			name = rt.Receiver
			break
		}
	}
	for _, r := range a.cfg.Receivers {
		if r.Name == name {
			return r
		}
	}
	return a.cfg.Receivers[0]
}

// naiveBreaker returns a reference breaker with its hysteresis taken out:
// the open duration never grows, every closed spell counts as stable, and a
// closing breaker takes all traffic at once.
func naiveBreaker(env sim.Env, cfg degrade.BreakerConfig) (sim.Breaker, error) {
	cfg = cfg.WithDefaults()
	cfg.BackoffFactor = 1
	cfg.MaxOpenDuration = cfg.OpenDuration
	cfg.StablePeriod = time.Nanosecond
	cfg.RampUp = degrade.NoRampUp
	return degrade.NewBreaker(cfg, env.Clock)
}

// flappingInventory calls an inventory service whose primary is down for
// half of every 20 seconds for 15 minutes, behind a breaker that must not
// flap with it.
func flappingInventory() scenarios.Scenario {
	return scenarios.Scenario{
		Name: "flapping-inventory", Seed: 3, Duration: 15 * time.Minute,
		Workload: scenarios.WorkloadSpec{
			Tasks:    []scenarios.TaskSpec{{Name: "reserve", Dependency: "inventory", Service: 10 * time.Millisecond}},
			Arrivals: scenarios.ArrivalsSpec{Kind: scenarios.Poisson, Rate: 10},
		},
		System: scenarios.SystemSpec{
			Retry: retry.Config{MaxAttempts: 5, BaseDelay: time.Second, MaxDelay: 30 * time.Second},
			Breakers: []scenarios.BreakerSpec{{
				Config:   degrade.BreakerConfig{Name: "inventory", ConsecutiveFailures: 5, OpenDuration: 2 * time.Second, SuccessesToClose: 2},
				Fallback: degrade.FallbackConfig{BatchSize: 50, DrainInterval: time.Second},
			}},
		},
		Faults: []faults.Fault{{Name: "inventory-flapping", Target: faults.Target{Kind: faults.Dependency, Name: "inventory"},
			Model: faults.Flapping{Period: 20 * time.Second, Duty: 0.5, Code: 503}}},
		Expect: []scenarios.Expectation{scenarios.BreakerTransitions{Breaker: "inventory", AtMost: 40}},
	}
}

// doomedSync is one job whose dependency always answers 503, so it uses up
// its three attempts.
func doomedSync() scenarios.Scenario {
	return scenarios.Scenario{
		Name: "doomed-sync", Seed: 5, Duration: time.Minute,
		Workload: scenarios.WorkloadSpec{
			Tasks: []scenarios.TaskSpec{{Name: "sync", Dependency: "warehouse", Service: 10 * time.Millisecond}},
			Jobs:  []scenarios.PlannedJobSpec{{At: time.Second, ID: "sync-stock", Task: "sync"}},
		},
		System: scenarios.SystemSpec{Retry: retry.Config{MaxAttempts: 3, BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}},
		Faults: []faults.Fault{{Name: "warehouse-down", Target: faults.Target{Kind: faults.Dependency, Name: "warehouse"},
			Model: faults.HTTPStatus{Code: 503}}},
		Expect: []scenarios.Expectation{
			scenarios.JobFate{JobID: "sync-stock", State: disposition.DeadLettered, Severity: classify.Medium},
			scenarios.Count{Metric: scenarios.Retried, Op: scenarios.Exactly, N: 2},
		},
	}
}

// badData sends 2,000 jobs, a tenth of which fail on bad data and are
// dead-lettered at once.
func badData() scenarios.Scenario {
	sc := steady(2000)
	sc.Name = "bad-data"
	sc.Workload.Tasks[0].Dependency = "inventory"
	sc.Faults = []faults.Fault{{Name: "bad-data", Target: faults.Target{Kind: faults.Dependency, Name: "inventory"},
		Model: faults.HTTPStatus{Code: 422}, Schedule: faults.Schedule{Probability: 0.1}}}
	sc.Expect = []scenarios.Expectation{scenarios.Count{Metric: scenarios.Lost, Op: scenarios.Exactly, N: 0}}
	return sc
}

// violation returns the run's first violation; the run went on to its
// end all the same.
func violation(res *reports.Result) reports.Violation {
	GinkgoHelper()
	Expect(res.Verdict).To(Equal(reports.Failed))
	Expect(res.Violations).NotTo(BeEmpty())
	Expect(res.EndedAtMs).To(Equal(res.DurationMs), "a violation no longer stops the run")
	fmt.Fprintf(GinkgoWriter, "%d violations: %v\n", len(res.Violations), res.Invariants)
	return res.Violations[0]
}

var _ = Describe("a team's broken component", func() {
	Describe("a classifier that calls auth failures transient", func() {
		lenient := sim.WithClassifier(func(sim.Env) (worker.Classifier, error) {
			return lenientClassifier{classify.Default()}, nil
		})

		It("fails the run on the retry of the auth failure, naming the job and the rule", func() {
			res := run(payments(), lenient)
			v := violation(res)
			Expect(v.Invariant).To(Equal(oracle.InvNoRetryOfFinal))
			Expect(v.JobID).To(Equal("pay-auth"))
			Expect(v.Message).To(Equal(`job pay-auth: a critical failure (fault revoked-key) was scheduled for a retry: the classifier said transient by rule "auth-status"`))
			Expect(strings.Join(v.Trail, "\n")).To(ContainSubstring(`injected critical (fault revoked-key); classifier said transient by rule "auth-status" → retry`))
			Expect(v.Seed).To(BeEquivalentTo(1))
			Expect(v.AtMs).To(BeNumerically(">=", (3 * time.Minute).Milliseconds()))
		})

		It("passes with the reference classifier", func() {
			Expect(run(payments())).To(simmatchers.Pass())
		})
	})

	Describe("a retry policy that ignores MaxAttempts", func() {
		relentless := sim.WithPolicy(func(env sim.Env) (worker.Policy, error) {
			p, err := retry.New(env.Scenario.System.Retry, env.Rand("retry"))
			return relentlessPolicy{inner: p, delay: time.Second}, err
		})

		It("fails the run on the retry past the last attempt", func() {
			res := run(doomedSync(), relentless)
			v := violation(res)
			Expect(v.Invariant).To(Equal(oracle.InvAttempts))
			Expect(v.JobID).To(Equal("sync-stock"))
			Expect(v.Message).To(Equal("job sync-stock was scheduled for another attempt after 3 attempts; the policy allows 3"))
			Expect(v.Trail[len(v.Trail)-1]).To(ContainSubstring("in-flight → scheduled (retry), attempts 3"))
		})

		It("passes with the reference policy", func() {
			Expect(run(doomedSync())).To(simmatchers.Pass())
		})
	})

	Describe("a store whose DLQ trims silently", func() {
		It("fails the run naming every dead-lettered job whose entry is gone, each once, and runs to its end", func() {
			var ts *trimmingStore
			res := run(badData(), sim.WithStore(openTrimming(5, &ts)))
			v := violation(res)
			Expect(ts.dropped).NotTo(BeEmpty())
			Expect(v.Invariant).To(Equal(oracle.InvConservation))
			Expect(v.JobID).To(Equal(ts.dropped[0]))
			Expect(v.Message).To(HavePrefix("job " + v.JobID + " was dead-lettered, but the DLQ store has no entry for it: it was dropped without an event"))
			Expect(v.Message).To(MatchRegexp(`\(5 entries held, \d+ dead-lettered\)$`))
			Expect(v.Trail[len(v.Trail)-1]).To(ContainSubstring("in-flight → dead-lettered (dead-lettered)"))

			named := map[string]int{}
			for _, v := range res.Violations {
				Expect(v.Invariant).To(Equal(oracle.InvConservation), v.Message)
				named[v.JobID]++
			}
			Expect(res.Invariants).To(ContainElement(reports.InvariantResult{Name: oracle.InvConservation, Verdict: reports.Failed, Violations: int64(len(ts.dropped))}))
			Expect(len(ts.dropped)).To(BeNumerically(">", reports.MaxListedViolations), "enough to be capped")
			Expect(res.Violations).To(HaveLen(reports.MaxListedViolations))
			Expect(slices.Sorted(maps.Keys(named))).To(Equal(slices.Sorted(slices.Values(ts.dropped[:reports.MaxListedViolations]))), "each dropped job named once, in order, up to the cap")
			Expect(res.Expectations).To(ConsistOf(reports.Expectation{Name: "lost = 0", Expected: "= 0", Actual: strconv.Itoa(len(ts.dropped)), Verdict: reports.Failed}),
				"judged on the whole run: every dropped job is lost")
		})

		It("passes with the reference store", func() {
			res := run(badData())
			Expect(res).To(simmatchers.Pass())
			Expect(res.Ledger.DeadLettered).To(BeNumerically(">", 5))
		})
	})

	Describe("a breaker without hysteresis", func() {
		It("flaps with its dependency: the transitions expectation fails", func() {
			res := run(flappingInventory(), sim.WithBreaker(naiveBreaker))
			Expect(res.Violations).To(BeEmpty())
			Expect(res.Expectations).To(ConsistOf(And(
				HaveField("Name", "breaker inventory changes state at most 40 times"),
				HaveField("Expected", "≤ 40"),
				// Each process's breaker flaps: the count is the busiest one's.
				HaveField("Actual", And(MatchRegexp(`^\d+ \(worker w\d, the busiest\)$`),
					WithTransform(func(s string) (int, error) { return strconv.Atoi(strings.Fields(s)[0]) }, BeNumerically(">", 200)))),
				HaveField("Verdict", reports.Failed),
			)))
			Expect(res.Verdict).To(Equal(reports.Failed))
		})

		It("passes with the reference breaker", func() {
			res := run(flappingInventory())
			Expect(res).To(simmatchers.Pass())
			Expect(res).NotTo(simmatchers.HaveBreakerTransitionsAtMost("inventory", 4), "the breaker never tripped")
		})
	})

	Describe("an alerter without deduplication", func() {
		eager := sim.WithAlerter(func(_ sim.Env, cfg alert.Config) (sim.Alerter, error) {
			return &eagerAlerter{cfg: cfg}, nil
		})

		It("pages a receiver twice for one alert within the repeat interval", func() {
			res := run(payments(), eager)
			v := violation(res)
			Expect(v.Invariant).To(Equal(oracle.InvOnePage))
			Expect(v.JobID).To(BeEmpty()) // an alert is about many jobs
			Expect(v.Message).To(HavePrefix(`receiver team got alert "send-receipt failed: transient" (fingerprint job-failed/send-receipt/transient/smtp) again after `))
			Expect(v.Message).To(HaveSuffix("within the repeat interval of 4h0m0s"))
			Expect(v.AtMs).To(BeNumerically("<", time.Minute.Milliseconds()))
		})

		It("passes with the reference alerter", func() {
			Expect(run(payments())).To(simmatchers.Pass())
		})
	})
})
