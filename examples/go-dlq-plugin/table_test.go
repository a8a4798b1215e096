package dlqplugin_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dlqplugin "github.com/faultline/faultline/examples/go-dlq-plugin"
	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/dlq/dlqtest"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
	"github.com/faultline/faultline/sim"
)

func withTable(t *dlqplugin.Table) sim.Option {
	return sim.WithDLQ(func(context.Context, sim.Env) (sim.TeamDLQ, error) { return t, nil })
}

func runBuiltin(name string, t *dlqplugin.Table) *reports.Result {
	GinkgoHelper()
	l, err := scenarios.LoadBuiltin(name)
	Expect(err).NotTo(HaveOccurred())
	res, err := sim.Run(context.Background(), l.Scenario, withTable(t))
	Expect(err).NotTo(HaveOccurred())
	return res
}

var _ = Describe("the team's table", func() {
	// faultline's conformance suite, on the team's own store.
	dlqtest.ExerciseDeadLetters(func(int) dlq.DeadLetters { return &dlqplugin.Table{} })

	It("runs a built-in scenario with faultline's queue, conservation checked by reading the table", func() {
		t := &dlqplugin.Table{}
		res := runBuiltin("auth-failure-burst", t)
		Expect(res.Violations).To(BeEmpty())
		Expect(res.Verdict).To(Equal(reports.Passed))
		Expect(res.Invariants).To(ContainElement(And(HaveField("Name", oracle.InvConservation), HaveField("Verdict", reports.Passed))))
		Expect(res.Invariants).To(ContainElement(And(HaveField("Name", sim.NotCheckedQuarantine), HaveField("Verdict", reports.Skipped),
			HaveField("Note", ContainSubstring("does not declare quarantine")))))
		n, err := t.Count(context.Background())
		Expect(err).NotTo(HaveOccurred())
		Expect(int64(n)).To(Equal(res.Ledger.DeadLettered), "rows in the table against the jobs dead-lettered")
	})

	Describe("with a bug: every 10th insert lost", func() {
		It("is caught by the run, naming a lost job", func() {
			res := runBuiltin("auth-failure-burst", &dlqplugin.Table{DropEvery: 10})
			Expect(res.Verdict).To(Equal(reports.Failed))
			Expect(res.Violations).To(ContainElement(And(HaveField("Invariant", oracle.InvConservation),
				HaveField("JobID", Not(BeEmpty())),
				HaveField("Message", MatchRegexp(`^job \S+ was dead-lettered, but the DLQ store has no entry for it`)))))
		})

		It("is caught by the conformance suite, naming the lost job", func() {
			// The suite's own failure, captured: job-9 is the 10th insert.
			msg := InterceptGomegaFailure(func() {
				t := &dlqplugin.Table{DropEvery: 10}
				ctx := context.Background()
				var want []string
				for i := range 12 {
					id := "job-" + string(rune('a'+i))
					Expect(t.Add(ctx, dlqtest.PluginEntry(id, i))).To(Succeed())
					want = append(want, id)
				}
				dlqtest.ExpectListed(ctx, t, want, "after 12 inserts")
			})
			Expect(msg).To(MatchError(ContainSubstring("job job-j was added but is not listed")))
		})
	})
})
