package sim_test

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/dlq/dlqtest"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
	"github.com/faultline/faultline/sim"
)

// dropEvery10th loses every 10th Add silently: a broken team store.
type dropEvery10th struct {
	dlqtest.MapStore
	n atomic.Int64
}

func (d *dropEvery10th) Add(ctx context.Context, e dlq.Entry) error {
	if d.n.Add(1)%10 == 0 {
		return nil
	}
	return d.MapStore.Add(ctx, e)
}

// listTwice lists its entries twice: a broken team store.
type listTwice struct{ dlqtest.MapStore }

func (l *listTwice) List(ctx context.Context) ([]dlq.Entry, error) {
	es, err := l.MapStore.List(ctx)
	return append(es, es...), err
}

func builtin(name string) scenarios.Scenario {
	GinkgoHelper()
	l, err := scenarios.LoadBuiltin(name)
	Expect(err).NotTo(HaveOccurred())
	return l.Scenario
}

func invariant(res *reports.Result, name string) reports.InvariantResult {
	GinkgoHelper()
	for _, inv := range res.Invariants {
		if inv.Name == name {
			return inv
		}
	}
	Fail("no invariant " + name + " in the result")
	return reports.InvariantResult{}
}

func withTeam(s sim.TeamDLQ) sim.Option {
	return sim.WithDLQ(func(context.Context, sim.Env) (sim.TeamDLQ, error) { return s, nil })
}

var _ = Describe("DLQ-only mode (WithDLQ)", func() {
	It("runs a built-in on a team's store declaring nothing, checking conservation by reading it and listing what it did not check", func() {
		team := &dlqtest.MapStore{}
		res := run(builtin("dlq-basics"), withTeam(team))
		Expect(res.Violations).To(BeEmpty())
		Expect(failedExpectations(res)).To(BeEmpty())
		Expect(res.Verdict).To(Equal(reports.Passed))
		Expect(invariant(res, oracle.InvConservation).Verdict).To(Equal(reports.Passed))
		Expect(invariant(res, oracle.InvOneDLQEntry).Verdict).To(Equal(reports.Passed))
		for _, name := range []string{sim.NotCheckedAtomicity, sim.NotCheckedCapacity, sim.NotCheckedQuarantine, sim.NotCheckedDelete} {
			inv := invariant(res, name)
			Expect(inv.Verdict).To(Equal(reports.Skipped), name)
			Expect(inv.Note).To(HavePrefix("not checked in DLQ-only mode: "), name)
		}
		ref := run(builtin("dlq-basics"))
		Expect(res.Ledger).To(Equal(ref.Ledger), "the ledger on the team's store against the reference's")
		n, err := team.Count(context.Background())
		Expect(err).NotTo(HaveOccurred())
		Expect(n).To(Equal(res.DLQ.Total), "entries in the team's store at the end")
	})

	It("gives the same result on the same seed", func() {
		a := run(builtin("requeue-drill"), withTeam(&dlqtest.MapStore{}))
		b := run(builtin("requeue-drill"), withTeam(&dlqtest.MapStore{}))
		Expect(a).To(Equal(b))
		Expect(a.Violations).To(BeEmpty())
	})

	It("parks dead letters a full store refuses and writes them later, when the store declares capacity", func() {
		sc := builtin("dlq-full-reject")
		team := &dlqtest.MapStore{Caps: dlq.Caps{Capacity: true, Delete: true}, Capacity: sc.System.DLQ.Capacity}
		res := run(sc, withTeam(team))
		Expect(res.Violations).To(BeEmpty())
		Expect(invariant(res, oracle.InvConservation).Verdict).To(Equal(reports.Passed))
		Expect(res.Invariants).NotTo(ContainElement(HaveField("Name", sim.NotCheckedCapacity)))
	})

	It("catches a store that drops every 10th entry, naming the lost job", func() {
		res := run(builtin("auth-failure-burst"), withTeam(&dropEvery10th{}))
		Expect(res.Verdict).To(Equal(reports.Failed))
		Expect(res.Violations).To(ContainElement(And(
			HaveField("Invariant", oracle.InvConservation),
			HaveField("Message", MatchRegexp(`job \S+ was dead-lettered, but the DLQ store has no entry for it`)))))
	})

	It("catches a store that lists an entry twice", func() {
		res := run(builtin("dlq-basics"), withTeam(&listTwice{}))
		Expect(res.Violations).To(ContainElement(And(HaveField("Invariant", oracle.InvOneDLQEntry), HaveField("Message", ContainSubstring("has 2 DLQ entries")))))
	})

	It("answers ErrNotDeclared for an operator's delete the store does not declare, and says so in the step", func() {
		sc := builtin("dlq-basics")
		sc.Steps = append(sc.Steps, scenarios.StepSpec{At: sc.Duration - time.Second, Kind: scenarios.Delete})
		res := run(sc, withTeam(&dlqtest.MapStore{}))
		Expect(res.Steps).To(ContainElement(And(HaveField("Kind", "delete"), HaveField("Error", ContainSubstring("the store does not declare delete")))))
		Expect(res.Warnings).To(ContainElement(ContainSubstring("not checked: the store does not declare delete")))
		Expect(errors.Is(sim.ErrNotDeclared, dlq.ErrNotDeclared)).To(BeTrue())
	})
})
