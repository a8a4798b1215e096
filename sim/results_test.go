package sim_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/memstore"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
	"github.com/faultline/faultline/sim"
)

// stoppingStore is memstore that, at its nth enqueue, calls stop (a
// context's cancel) or fails with err.
type stoppingStore struct {
	*memstore.Store
	n, seen int
	stop    func()
	err     error
}

func openStopping(n int, stop func(), err error) func(context.Context, sim.Env, store.Config) (sim.Backend, error) {
	return func(_ context.Context, _ sim.Env, cfg store.Config) (sim.Backend, error) {
		s, err2 := memstore.New(cfg)
		return &stoppingStore{Store: s, n: n, stop: stop, err: err}, err2
	}
}

func (s *stoppingStore) Enqueue(ctx context.Context, j job.Job, now time.Time) error {
	if s.seen++; s.seen == s.n {
		if s.stop != nil {
			s.stop()
		}
		if s.err != nil {
			return s.err
		}
	}
	return s.Store.Enqueue(ctx, j, now)
}

var _ = Describe("A run's result", func() {
	Describe("a run interrupted before its end (Ctrl-C, a limit)", func() {
		It("has a verdict of its own, its expectations not evaluated and its invariants not checked to the end", func() {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			res, err := sim.Run(ctx, payments(), sim.WithStore(openStopping(2000, cancel, nil)))
			Expect(err).NotTo(HaveOccurred())
			Expect(res.Verdict).To(Equal(reports.Interrupted))
			Expect(res.Failed()).To(BeTrue(), "an interrupted run is not a pass")
			Expect(res.Error).To(HaveSuffix("context canceled"))
			Expect(res.EndedAtMs).To(BeNumerically("<", res.DurationMs))
			Expect(res.Expectations).To(HaveLen(len(payments().Expect)))
			for _, e := range res.Expectations {
				Expect(e.Verdict).To(Equal(reports.Skipped), e.Name)
				Expect(e.Actual).To(HavePrefix("not evaluated: the run was interrupted at +"), e.Name)
			}
			Expect(res.Invariants).To(HaveLen(len(simInvariants())))
			for _, inv := range res.Invariants {
				Expect(inv.Verdict).To(Equal(reports.Skipped), inv.Name)
				Expect(inv.Note).To(HavePrefix("not checked to the end: the run was interrupted at +"))
			}
		})

		It("is interrupted by a limit (sim.ErrLimit) as by a canceled context; a store failure is an error", func() {
			limit := fmt.Errorf("jobs in flight: 1000000 is over the limit: %w", scenarios.ErrLimit)
			res := run(payments(), sim.WithStore(openStopping(100, nil, limit)))
			Expect(res.Verdict).To(Equal(reports.Interrupted))
			Expect(res.Error).To(ContainSubstring("over the limit"))
			Expect(res.Expectations).To(HaveEach(HaveField("Verdict", reports.Skipped)))

			res = run(payments(), sim.WithStore(openStopping(100, nil, fmt.Errorf("connection refused"))))
			Expect(res.Verdict).To(Equal(reports.Errored))
			Expect(res.Expectations).To(HaveEach(HaveField("Verdict", reports.Skipped)))
		})
	})

	Describe("the invariants that ran", func() {
		It("lists every invariant, held, in the simulator's order, for a run that passed", func() {
			res := run(payments())
			Expect(res.Verdict).To(Equal(reports.Passed))
			var names []string
			for _, inv := range simInvariants() {
				names = append(names, inv.Name)
			}
			Expect(res.Invariants).To(HaveLen(len(names)))
			for i, inv := range res.Invariants {
				Expect(inv).To(Equal(reports.InvariantResult{Name: names[i], Verdict: reports.Passed}))
			}
		})

		It("says a turned-off invariant was not checked, never that it held", func() {
			sc := payments()
			sc.Invariants.PageWithin = -1
			res := run(sc)
			Expect(res.Invariants).To(ContainElement(reports.InvariantResult{Name: oracle.InvCriticalPaged, Verdict: reports.Skipped,
				Note: "turned off (invariants.pageWithin: off)"}))
		})
	})

	Describe("a fault with zero hits", func() {
		// A fault on the receipts' dependency after the arrivals stop:
		// nothing calls it while it is on.
		idle := faults.Fault{Name: "late-smtp", Target: faults.Target{Kind: faults.Dependency, Name: "smtp"},
			Model: faults.Outage{Code: 503}, Schedule: faults.Schedule{From: 9*time.Minute + 50*time.Second}}

		It("is a warning by default: the run still passes", func() {
			sc := payments()
			sc.Faults = append(sc.Faults, idle)
			res := run(sc)
			Expect(res.Verdict).To(Equal(reports.Passed))
			Expect(res.Faults).To(ContainElement(And(HaveField("Name", "late-smtp"), HaveField("Hits", BeZero()))))
			Expect(res.Warnings).To(ConsistOf("fault late-smtp (outage on dependency/smtp) never hit: no call reached its target while it was on, so the run did not test it (requireHits: true makes this a failure)"))
		})

		It("fails the run where the fault says requireHits", func() {
			sc := payments()
			f := idle
			f.RequireHits = true
			sc.Faults = append(sc.Faults, f)
			res := run(sc)
			Expect(res.Verdict).To(Equal(reports.Failed))
			Expect(res.Warnings).To(BeEmpty())
			Expect(res.Faults).To(ContainElement(And(HaveField("Name", "late-smtp"), HaveField("RequireHits", true))))
			Expect(res.Expectations).To(ContainElement(reports.Expectation{Name: "fault late-smtp hits at least once (requireHits)",
				Expected: "≥ 1 hit", Actual: "0 hits", Verdict: reports.Failed}))
		})

		It("passes the requireHits expectation of a fault that hit", func() {
			sc := payments()
			sc.Faults[2].RequireHits = true // revoked-key: its first call
			res := run(sc)
			Expect(res.Verdict).To(Equal(reports.Passed))
			Expect(res.Expectations).To(ContainElement(reports.Expectation{Name: "fault revoked-key hits at least once (requireHits)",
				Expected: "≥ 1 hit", Actual: "1 hit", Verdict: reports.Passed}))
		})
	})
})

// simInvariants are the invariants the simulator checks: every one but
// those only a black-box drill judges, and those a scenario asks for
// (Optional: listed only when it plants secrets, say).
func simInvariants() []reports.Invariant {
	var out []reports.Invariant
	for _, inv := range reports.Invariants() {
		if !inv.BlackBox && !inv.Optional {
			out = append(out, inv)
		}
	}
	return out
}
