package sim_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
	"github.com/faultline/faultline/sim"
)

// One oracle over one history: a simulated run's history (faultline run
// --history), judged again by the judge of drills, gives the run's own
// verdict, invariant by invariant and expectation by expectation, on
// every built-in (each judged where the history has what it reads).
var _ = Describe("A simulated run's history (sim.WithHistory), judged again (oracle.Judge)", func() {
	It("gives the run's own verdict on every check, for every built-in on seeds 1 to 3", func() {
		for _, b := range scenarios.Builtins() {
			if slices.Contains(b.Tags, "scale") {
				continue // dlq-past-ten-thousand: the scenarios lane runs it
			}
			l, err := scenarios.LoadBuiltin(b.Name)
			Expect(err).NotTo(HaveOccurred())
			for _, seed := range []uint64{1, 2, 3} {
				var buf bytes.Buffer
				res, err := sim.Run(context.Background(), l.Scenario, sim.WithSeed(seed), sim.WithHistory(&buf, "builtin:"+b.Name))
				Expect(err).NotTo(HaveOccurred())
				h, err := oracle.Read(&buf)
				Expect(err).NotTo(HaveOccurred(), b.Name)
				Expect(h.Simulated).To(BeTrue())
				sc := l.Scenario
				sc.Seed = seed
				again, err := oracle.Judge(context.Background(), sc, h)
				Expect(err).NotTo(HaveOccurred())
				what := func(kind, name string) string { return b.Name + " seed " + fmt.Sprint(seed) + ": " + kind + " " + name }
				Expect(again.Verdict).To(Equal(res.Verdict), what("verdict", ""))
				Expect(again.Ledger.Created).To(Equal(res.Ledger.Created), what("created", ""))
				Expect(again.Ledger.Succeeded).To(Equal(res.Ledger.Succeeded), what("succeeded", ""))
				Expect(again.Ledger.DeadLettered).To(Equal(res.Ledger.DeadLettered), what("dead-lettered", ""))
				judged := map[string]reports.InvariantResult{}
				for _, ir := range again.Invariants {
					judged[ir.Name] = ir
				}
				for _, ir := range res.Invariants {
					got, ok := judged[ir.Name]
					Expect(ok).To(BeTrue(), what("invariant", ir.Name))
					if got.Verdict == reports.NotObservable {
						continue
					}
					Expect(got.Verdict).To(Equal(ir.Verdict), what("invariant", ir.Name))
				}
				Expect(again.Expectations).To(HaveLen(len(res.Expectations)), b.Name)
				for i, e := range res.Expectations {
					got := again.Expectations[i]
					Expect(got.Name).To(Equal(e.Name))
					if got.Verdict == reports.NotObservable {
						continue
					}
					Expect(got.Verdict).To(Equal(e.Verdict), what("expectation", e.Name))
					if i < len(sc.Expect) {
						if _, count := sc.Expect[i].(scenarios.Count); count {
							// A count is the same count (a time is read to
							// the history's millisecond).
							Expect(got.Actual).To(Equal(e.Actual), what("expectation", e.Name))
						}
					}
				}
			}
		}
	})
})

// A history whose store events repeat (a file edited, or written twice)
// read "0 lost" above "302 not accounted for" (issue 28): each event is
// judged once, the report says the file repeats them, and its headline
// never reads 0 lost above counts that do not add up.
var _ = Describe("A history that repeats the store's events", func() {
	It("judges each event once and says so", func() {
		l, err := scenarios.LoadBuiltin("dlq-basics")
		Expect(err).NotTo(HaveOccurred())
		var buf bytes.Buffer
		res, err := sim.Run(context.Background(), l.Scenario, sim.WithHistory(&buf, "builtin:dlq-basics"))
		Expect(err).NotTo(HaveOccurred())
		h, err := oracle.Read(&buf)
		Expect(err).NotTo(HaveOccurred())
		twice := make([]oracle.Event, 0, 2*len(h.Events))
		for _, e := range h.Events {
			twice = append(twice, e, e)
		}
		h.Events, h.Snapshots = twice, nil
		again, err := oracle.Judge(context.Background(), l.Scenario, h)
		Expect(err).NotTo(HaveOccurred())
		Expect(again.Ledger.Created).To(Equal(res.Ledger.Created))
		Expect(again.Ledger.Unaccounted()).To(BeZero())
		Expect(again.Verdict).To(Equal(reports.Passed))
		Expect(again.Warnings).To(ContainElement(ContainSubstring(fmt.Sprintf("the history repeats %d of the store's events", len(twice)/2))))
	})

	It("never headlines 0 lost above counts that do not add up", func() {
		r := &reports.Result{Scenario: "s", Verdict: reports.Failed}
		r.Ledger.Created, r.Ledger.Succeeded = 604, 302
		var out bytes.Buffer
		Expect(reports.WriteText(&out, r, reports.TextOptions{})).To(Succeed())
		Expect(out.String()).To(ContainSubstring("0 lost, 302 not accounted for;"))
	})
})
