package worker_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/failure"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/retry"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/worker"
)

// heldTTL is the lease the held-dead-letter runner specs take: short, so
// that a lease left to expire would expire many times within them.
const heldTTL = 150 * time.Millisecond

// errDLQDown is a DLQ store that cannot be reached.
var errDLQDown = errors.New("dlq store: connection refused")

// outageDLQ is a backend whose DLQ writes fail while dlqDown is set, and
// whose holds fail too while holdDown is set (the whole store away).
type outageDLQ struct {
	backend
	dlqDown, holdDown atomic.Bool
}

func (o *outageDLQ) DeadLetter(ctx context.Context, l queue.Lease, e dlq.Entry, now time.Time) (dlq.AddResult, error) {
	if o.dlqDown.Load() {
		return dlq.AddResult{}, errDLQDown
	}
	return o.backend.DeadLetter(ctx, l, e, now)
}

func (o *outageDLQ) FlushHeld(ctx context.Context, now time.Time, limit int) (dlq.FlushResult, error) {
	if o.dlqDown.Load() {
		return dlq.FlushResult{}, errDLQDown
	}
	return o.backend.FlushHeld(ctx, now, limit)
}

func (o *outageDLQ) Hold(ctx context.Context, l queue.Lease, e dlq.Entry, now time.Time) error {
	if o.holdDown.Load() {
		return errDLQDown
	}
	return o.backend.Hold(ctx, l, e, now)
}

// heldRunner runs one worker over st, with dlqSide as the pipeline's DLQ,
// on the wall clock with heldTTL leases; handler counts its calls and fails
// every one permanently.
func heldRunner(st backend, dlqSide worker.DeadLetterer, calls *atomic.Int64) (stop func()) {
	GinkgoHelper()
	policy, err := retry.New(retry.Config{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond,
		Budget: retry.BudgetConfig{Disabled: true}}, rand.New(rand.NewPCG(7, 8)))
	Expect(err).NotTo(HaveOccurred())
	core, err := worker.NewCore(worker.Config{Classifier: classify.Default(), Policy: policy})
	Expect(err).NotTo(HaveOccurred())
	p, err := worker.NewPipeline(worker.PipelineConfig{Core: core, Queue: st, DLQ: dlqSide})
	Expect(err).NotTo(HaveOccurred())
	r, err := worker.NewRunner(worker.RunnerConfig{
		Pipeline: p, Source: st, Clock: clock.Real{}, Workers: 1,
		LeaseTTL: heldTTL, PollMin: time.Millisecond, PollMax: 5 * time.Millisecond, TickInterval: 10 * time.Millisecond,
		Handler: func(ctx context.Context, j job.Job) error {
			calls.Add(1)
			return fmt.Errorf("card declined: %w", failure.ErrInvalidInput)
		},
	})
	Expect(err).NotTo(HaveOccurred())
	return startRunner(r)
}

var _ = Describe("The runner with a dead letter the DLQ cannot take", func() {
	var (
		led   *ledger
		calls atomic.Int64
		ctx   context.Context
	)
	BeforeEach(func() {
		led = newLedger()
		calls.Store(0)
		ctx = context.Background()
	})

	// staysDecided checks, over many lease lifetimes, that the handler ran
	// once and the job stays in state.
	staysDecided := func(state disposition.State) {
		GinkgoHelper()
		Consistently(func(g Gomega) {
			g.Expect(calls.Load()).To(Equal(int64(1)), "the handler ran again after the dead letter was decided")
			g.Expect(led.state("j1")).To(Equal(state))
		}, 8*heldTTL, 5*time.Millisecond).Should(Succeed())
	}

	It("parks it when the DLQ is full (reject), never runs the handler again, and writes it when there is room", func() {
		st := newBackend(store.Config{Observer: led.observe, DLQCapacity: 1, Overflow: store.Reject})
		_, err := st.Add(ctx, dlq.Entry{Job: newJob("old", "report", ""), Reason: "permanent"}, time.Now())
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Enqueue(ctx, newJob("j1", "report", ""), time.Now())).To(Succeed())
		stop := heldRunner(st, st, &calls)
		defer stop()

		Eventually(led.state, runnerReacts, poll).WithArguments("j1").Should(Equal(disposition.Held))
		staysDecided(disposition.Held)

		Expect(st.Delete(ctx, "old", "ops", time.Now())).To(Succeed())
		Eventually(led.state, runnerReacts, poll).WithArguments("j1").Should(Equal(disposition.DeadLettered))
		Expect(calls.Load()).To(Equal(int64(1)))
	})

	It("parks it while the DLQ store is down, never runs the handler again, and writes it with its failure's time when the store is back", func() {
		st := newBackend(store.Config{Observer: led.observe})
		down := &outageDLQ{backend: st}
		down.dlqDown.Store(true)
		Expect(st.Enqueue(ctx, newJob("j1", "report", ""), time.Now())).To(Succeed())
		stop := heldRunner(st, down, &calls)
		defer stop()

		Eventually(led.state, runnerReacts, poll).WithArguments("j1").Should(Equal(disposition.Held))
		staysDecided(disposition.Held)

		back := time.Now()
		down.dlqDown.Store(false)
		Eventually(led.state, runnerReacts, poll).WithArguments("j1").Should(Equal(disposition.DeadLettered))
		Expect(calls.Load()).To(Equal(int64(1)))
		e, err := st.Get(ctx, "j1")
		Expect(err).NotTo(HaveOccurred())
		Expect(e.LastFailedAt).To(BeTemporally("<", back), "the failure's time, not the write's")
		Expect(e.History).To(HaveLen(1))
	})

	It("keeps it in memory with its lease heartbeated while the whole store refuses, and writes it when the store is back", func() {
		st := newBackend(store.Config{Observer: led.observe})
		down := &outageDLQ{backend: st}
		down.dlqDown.Store(true)
		down.holdDown.Store(true)
		Expect(st.Enqueue(ctx, newJob("j1", "report", ""), time.Now())).To(Succeed())
		stop := heldRunner(st, down, &calls)
		defer stop()

		Eventually(calls.Load, runnerReacts, poll).Should(Equal(int64(1)))
		staysDecided(disposition.InFlight)

		down.holdDown.Store(false)
		down.dlqDown.Store(false)
		Eventually(led.state, runnerReacts, poll).WithArguments("j1").Should(Equal(disposition.DeadLettered))
		Expect(calls.Load()).To(Equal(int64(1)))
	})
})
