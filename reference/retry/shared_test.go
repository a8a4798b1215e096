package retry_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/retry"
	"github.com/faultline/faultline/reference/retry/retrytest"
)

var _ = Describe("MemoryBudget", func() {
	retrytest.ExerciseBooker(func() retry.Booker { return retry.NewMemoryBudget() })
})

// downBooker is a budget store that cannot be reached.
type downBooker struct{}

func (downBooker) Book(context.Context, retry.BudgetKey, int64, int64, int64, int) (int64, bool, error) {
	return 0, false, errors.New("connection refused")
}

var _ = Describe("a fleet-scoped budget", func() {
	transient := classify.Classification{Class: classify.Transient}
	cfg := retry.Config{BaseDelay: time.Millisecond, MaxDelay: time.Millisecond, MaxAttempts: 10,
		Budget: retry.BudgetConfig{Burst: 5, Refill: 200 * time.Millisecond, MaxWait: time.Minute}}
	// storm has n processes decide 10 retries each of one dependency at
	// once, and returns how many run in the first second (one slot).
	storm := func(scope retry.Scope, shared retry.Booker) int {
		GinkgoHelper()
		c := cfg
		c.Budget.Scope = scope
		first := 0
		for k := range 4 {
			p, err := retry.New(c, rand.New(rand.NewPCG(uint64(k), 1)), retry.WithBooker(shared))
			Expect(err).NotTo(HaveOccurred())
			for j := range 10 {
				d := p.Decide(retry.Attempt{JobID: "j", Dependency: "gateway", Attempts: 1 + j%3}, transient, epoch)
				Expect(d.Action).To(Equal(retry.Retry))
				if d.At.Before(epoch.Add(time.Second)) {
					first++
				}
			}
		}
		return first
	}

	It("bounds the fleet by the configured budget, where per-process budgets let each process's through", func() {
		Expect(storm(retry.ScopeProcess, nil)).To(Equal(20), "four processes, four budgets of five")
		Expect(storm(retry.ScopeFleet, retry.NewMemoryBudget())).To(Equal(5), "one budget of five for the fleet")
	})

	It("is refused without a Booker", func() {
		c := cfg
		c.Budget.Scope = retry.ScopeFleet
		_, err := retry.New(c, rand.New(rand.NewPCG(1, 1)))
		Expect(err).To(MatchError(retry.ErrNoBooker))
	})

	It("is refused with slots under a microsecond", func() {
		c := cfg
		c.Budget = retry.BudgetConfig{Scope: retry.ScopeFleet, Burst: 2, Refill: 100 * time.Nanosecond}
		var ce *retry.ConfigError
		Expect(errors.As(c.Validate(), &ce)).To(BeTrue())
		Expect(ce.Field).To(Equal("Budget.Refill"))
	})

	It("fails open when its store cannot be reached: the retry runs as due, counted", func() {
		c := cfg
		c.Budget.Scope = retry.ScopeFleet
		p, err := retry.New(c, rand.New(rand.NewPCG(1, 1)), retry.WithBooker(downBooker{}))
		Expect(err).NotTo(HaveOccurred())
		for range 20 {
			d := p.Decide(retry.Attempt{JobID: "j", Dependency: "gateway", Attempts: 1}, transient, epoch)
			Expect(d.Action).To(Equal(retry.Retry))
			Expect(d.Reason).To(Equal(retry.BackoffDelay))
			Expect(d.At).To(BeTemporally("<=", epoch.Add(time.Millisecond)))
		}
		Expect(p.Stats().BudgetUnavailable).To(BeEquivalentTo(20))
	})

	It("aligns its slots to the Unix epoch, so processes started apart share them", func() {
		c := cfg
		c.Budget.Scope = retry.ScopeFleet
		shared := retry.NewMemoryBudget()
		at := time.Unix(1_800_000_000, 300*int64(time.Millisecond)) // 0.3s into a slot of 1s
		var ats []time.Time
		for k := range 2 {
			p, err := retry.New(c, rand.New(rand.NewPCG(uint64(k), 9)), retry.WithBooker(shared))
			Expect(err).NotTo(HaveOccurred())
			for range 5 {
				ats = append(ats, p.Decide(retry.Attempt{JobID: "j", Dependency: "gateway", Attempts: 1}, transient, at.Add(time.Duration(k)*time.Millisecond)).At)
			}
		}
		slot := time.Unix(1_800_000_001, 0)
		for i, t := range ats[5:] {
			Expect(t).To(BeTemporally(">=", slot), "the second process's retry %d waits for the next slot", i)
			Expect(t).To(BeTemporally("<", slot.Add(time.Second)))
		}
	})
})
