package worker_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
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

var _ = Describe("The pipeline with a dead letter it keeps in memory", func() {
	// keptPipeline finishes job j1 with a permanent failure on a pipeline
	// whose DLQ store refuses everything, so that it keeps the dead letter,
	// and returns the pipeline, the store's two sides and the moves the
	// pipeline's observer heard.
	keptPipeline := func() (*worker.Pipeline, *outageDLQ, *[]disposition.Event, *[]string) {
		GinkgoHelper()
		ctx := context.Background()
		st := newBackend(store.Config{})
		down := &outageDLQ{backend: st}
		down.dlqDown.Store(true)
		down.holdDown.Store(true)
		policy, err := retry.New(retry.Config{Budget: retry.BudgetConfig{Disabled: true}}, rand.New(rand.NewPCG(7, 8)))
		Expect(err).NotTo(HaveOccurred())
		core, err := worker.NewCore(worker.Config{Classifier: classify.Default(), Policy: policy})
		Expect(err).NotTo(HaveOccurred())
		var moves []disposition.Event
		var deaths []string
		p, err := worker.NewPipeline(worker.PipelineConfig{Core: core, Queue: st, DLQ: down,
			Observer: func(e disposition.Event) { moves = append(moves, e) },
			OnDead:   func(j job.Job, _ dlq.Entry) { deaths = append(deaths, j.ID) },
		})
		Expect(err).NotTo(HaveOccurred())
		now := time.Now()
		Expect(st.Enqueue(ctx, newJob("j1", "report", ""), now)).To(Succeed())
		j, l, ok, err := st.Dequeue(ctx, job.DefaultQueue, now, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeTrue())
		a, run, err := p.Start(ctx, j, l, now)
		Expect(err).NotTo(HaveOccurred())
		Expect(run).To(BeTrue())
		o, err := p.Finish(ctx, a, l, fmt.Errorf("card declined: %w", failure.ErrInvalidInput), now)
		Expect(err).To(MatchError(worker.ErrKept))
		Expect(o.Action).To(Equal(worker.DeadLetter))
		Expect(moves).To(BeEmpty(), "nothing moved yet")
		return p, down, &moves, &deaths
	}

	It("tells its observer of the move when RetryKept writes it to the DLQ", func() {
		p, down, moves, deaths := keptPipeline()
		down.dlqDown.Store(false)
		down.holdDown.Store(false)
		res := p.RetryKept(context.Background(), time.Now())
		Expect(res).To(HaveLen(1))
		Expect(res[0].State).To(Equal(worker.KeptWritten))
		Expect(*deaths).To(Equal([]string{"j1"}))
		Expect(*moves).To(ConsistOf(SatisfyAll(
			HaveField("JobID", "j1"), HaveField("From", disposition.InFlight), HaveField("To", disposition.DeadLettered))),
			"the observer hears every move the pipeline made")
	})

	It("lets it go on DropKept, as a dying process does: nothing written, nothing heard, RetryKept no longer tries it", func() {
		p, down, moves, deaths := keptPipeline()
		Expect(p.Kept()).To(Equal(1))
		_, ok := p.DropKept("other")
		Expect(ok).To(BeFalse())
		l, ok := p.DropKept("j1")
		Expect(ok).To(BeTrue())
		Expect(l.JobID).To(Equal("j1"))
		Expect(p.Kept()).To(BeZero())
		down.dlqDown.Store(false)
		down.holdDown.Store(false)
		Expect(p.RetryKept(context.Background(), time.Now())).To(BeEmpty())
		Expect(*moves).To(BeEmpty())
		Expect(*deaths).To(BeEmpty())
	})

	It("tells its observer of the move when RetryKept parks it in the held set", func() {
		p, down, moves, _ := keptPipeline()
		down.holdDown.Store(false)
		res := p.RetryKept(context.Background(), time.Now())
		Expect(res).To(HaveLen(1))
		Expect(res[0].State).To(Equal(worker.KeptHeld))
		Expect(*moves).To(ConsistOf(SatisfyAll(
			HaveField("JobID", "j1"), HaveField("From", disposition.InFlight), HaveField("To", disposition.Held),
			HaveField("Reason", disposition.HeldBack))))
	})
})

var _ = Describe("The pipeline letting go of a kept dead letter whose lease was lost", func() {
	It("records the attempt's failure in the history, as Apply does, whatever the entry carries", func() {
		ctx := context.Background()
		st := newBackend(store.Config{})
		down := &outageDLQ{backend: st}
		down.dlqDown.Store(true)
		down.holdDown.Store(true)
		policy, err := retry.New(retry.Config{Budget: retry.BudgetConfig{Disabled: true}}, rand.New(rand.NewPCG(7, 8)))
		Expect(err).NotTo(HaveOccurred())
		core, err := worker.NewCore(worker.Config{Classifier: classify.Default(), Policy: policy})
		Expect(err).NotTo(HaveOccurred())
		p, err := worker.NewPipeline(worker.PipelineConfig{Core: core, Queue: st, DLQ: down})
		Expect(err).NotTo(HaveOccurred())
		now := time.Now()
		Expect(st.Enqueue(ctx, newJob("j1", "report", ""), now)).To(Succeed())
		j, l, _, err := st.Dequeue(ctx, job.DefaultQueue, now, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		f := dlq.Failure{Attempt: 2, At: now, Error: "declined"}
		// A dead letter built by hand, the job's second attempt (a first
		// attempt's failure is not kept: the store counts no attempt of
		// the job, whose history is then not looked up): its entry has
		// no history.
		j.Attempts = 2
		o := worker.Outcome{Action: worker.DeadLetter, Job: j, Failure: f, Entry: &dlq.Entry{Job: j, Reason: "declined"}}
		Expect(p.Apply(ctx, l, o, now)).To(MatchError(worker.ErrKept))

		late := now.Add(2 * time.Minute)
		n, err := st.RecoverExpired(ctx, late, 10)
		Expect(err).NotTo(HaveOccurred())
		Expect(n).To(Equal(1))
		var res []worker.KeptResult
		Expect(func() { res = p.RetryKept(ctx, late) }).NotTo(Panic())
		Expect(res).To(HaveLen(1))
		Expect(res[0].State).To(Equal(worker.KeptFenced))
		Expect(p.History().Failures(context.Background(), "j1")).To(Equal([]dlq.Failure{f}))
		Expect(p.Kept()).To(BeZero())
	})
})

// tickSpy is the wall clock, telling when a timer of duration d is stopped:
// the runner's ticker stops its timer when the run stops.
type tickSpy struct {
	clock.Real
	d       time.Duration
	once    sync.Once
	stopped chan struct{}
}

func (c *tickSpy) AfterFunc(d time.Duration, f func()) clock.Timer {
	t := c.Real.AfterFunc(d, f)
	if d != c.d {
		return t
	}
	return spyTimer{t, c}
}

type spyTimer struct {
	clock.Timer
	c *tickSpy
}

func (t spyTimer) Stop() bool {
	ok := t.Timer.Stop()
	t.c.once.Do(func() { close(t.c.stopped) })
	return ok
}

// flakyDLQ is a backend whose DLQ store fails the first DeadLetter and the
// first Hold, and works from then on.
type flakyDLQ struct {
	backend
	deadFailed, holdFailed atomic.Bool
}

func (f *flakyDLQ) DeadLetter(ctx context.Context, l queue.Lease, e dlq.Entry, now time.Time) (dlq.AddResult, error) {
	if f.deadFailed.CompareAndSwap(false, true) {
		return dlq.AddResult{}, errDLQDown
	}
	return f.backend.DeadLetter(ctx, l, e, now)
}

func (f *flakyDLQ) Hold(ctx context.Context, l queue.Lease, e dlq.Entry, now time.Time) error {
	if f.holdFailed.CompareAndSwap(false, true) {
		return errDLQDown
	}
	return f.backend.Hold(ctx, l, e, now)
}

var _ = Describe("The runner stopping", func() {
	It("hands the store a dead letter kept by a handler that finished in the shutdown's grace period, after the ticker stopped", func() {
		ctx := context.Background()
		led := newLedger()
		st := newBackend(store.Config{Observer: led.observe})
		flaky := &flakyDLQ{backend: st}
		policy, err := retry.New(retry.Config{Budget: retry.BudgetConfig{Disabled: true}}, rand.New(rand.NewPCG(7, 8)))
		Expect(err).NotTo(HaveOccurred())
		core, err := worker.NewCore(worker.Config{Classifier: classify.Default(), Policy: policy})
		Expect(err).NotTo(HaveOccurred())
		p, err := worker.NewPipeline(worker.PipelineConfig{Core: core, Queue: st, DLQ: flaky})
		Expect(err).NotTo(HaveOccurred())
		const tick = 7 * time.Millisecond
		spy := &tickSpy{d: tick, stopped: make(chan struct{})}
		started, release := make(chan struct{}), make(chan struct{})
		r, err := worker.NewRunner(worker.RunnerConfig{
			Pipeline: p, Source: st, Clock: spy, Workers: 1, LeaseTTL: time.Minute, HeartbeatInterval: 10 * time.Second,
			PollMin: time.Millisecond, PollMax: 3 * time.Millisecond, TickInterval: tick, ShutdownGrace: time.Minute,
			Handler: func(ctx context.Context, j job.Job) error {
				close(started)
				<-release
				return fmt.Errorf("card declined: %w", failure.ErrInvalidInput)
			},
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Enqueue(ctx, newJob("j1", "report", ""), time.Now())).To(Succeed())
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- r.Run(runCtx) }()
		Eventually(started, runnerReacts, poll).Should(BeClosed())

		cancel()
		Eventually(spy.stopped, runnerReacts, poll).Should(BeClosed(), "the ticker stopped")
		close(release) // the handler finishes within the grace period; its dead letter is kept
		Eventually(done, runnerReacts, poll).Should(Receive(BeNil()))

		Expect(p.Kept()).To(BeZero(), "the runner tried the kept dead letter once more before it returned")
		Expect(led.state("j1")).To(Equal(disposition.DeadLettered))
	})
})

var _ = Describe("The runner keeping a dead letter in memory", func() {
	It("heartbeats its lease in time whatever the TickInterval, so that no other process recovers the job and runs it again", func() {
		ctx := context.Background()
		led := newLedger()
		var calls atomic.Int64
		st := newBackend(store.Config{Observer: led.observe})
		down := &outageDLQ{backend: st}
		down.dlqDown.Store(true)
		down.holdDown.Store(true)
		policy, err := retry.New(retry.Config{Budget: retry.BudgetConfig{Disabled: true}}, rand.New(rand.NewPCG(7, 8)))
		Expect(err).NotTo(HaveOccurred())
		core, err := worker.NewCore(worker.Config{Classifier: classify.Default(), Policy: policy})
		Expect(err).NotTo(HaveOccurred())
		p, err := worker.NewPipeline(worker.PipelineConfig{Core: core, Queue: st, DLQ: down})
		Expect(err).NotTo(HaveOccurred())
		r, err := worker.NewRunner(worker.RunnerConfig{
			Pipeline: p, Source: st, Clock: clock.Real{}, Workers: 1,
			LeaseTTL: heldTTL, HeartbeatInterval: heldTTL / 3, PollMin: time.Millisecond, PollMax: 5 * time.Millisecond,
			TickInterval: time.Hour, // a long tick: another process recovers expired leases
			Handler: func(ctx context.Context, j job.Job) error {
				calls.Add(1)
				return fmt.Errorf("card declined: %w", failure.ErrInvalidInput)
			},
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Enqueue(ctx, newJob("j1", "report", ""), time.Now())).To(Succeed())
		stop := startRunner(r)
		defer stop()

		Eventually(p.Kept, runnerReacts, poll).Should(Equal(1))
		Consistently(func(g Gomega) {
			_, err := st.RecoverExpired(ctx, time.Now(), 10) // another process's ticker
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(calls.Load()).To(Equal(int64(1)), "the handler ran again after its dead letter was decided")
		}, 8*heldTTL, 5*time.Millisecond).Should(Succeed())
		Expect(led.state("j1")).To(Equal(disposition.InFlight))
	})
})

// hangingDLQ is a DLQ whose writes hang until the caller's deadline, as on
// a connection cut while the command was in flight.
type hangingDLQ struct{}

func (hangingDLQ) DeadLetter(ctx context.Context, _ queue.Lease, _ dlq.Entry, _ time.Time) (dlq.AddResult, error) {
	<-ctx.Done()
	return dlq.AddResult{}, ctx.Err()
}

var _ = Describe("The pipeline whose DLQ write hangs until the call's deadline", func() {
	It("still parks the dead letter in the held set (a deadline of its own), rather than keeping it in memory", func() {
		st := newBackend(store.Config{})
		policy, err := retry.New(retry.Config{Budget: retry.BudgetConfig{Disabled: true}}, rand.New(rand.NewPCG(7, 8)))
		Expect(err).NotTo(HaveOccurred())
		core, err := worker.NewCore(worker.Config{Classifier: classify.Default(), Policy: policy})
		Expect(err).NotTo(HaveOccurred())
		p, err := worker.NewPipeline(worker.PipelineConfig{Core: core, Queue: st, DLQ: hangingDLQ{}, Holder: st})
		Expect(err).NotTo(HaveOccurred())
		now := time.Now()
		bg := context.Background()
		Expect(st.Enqueue(bg, newJob("j1", "report", ""), now)).To(Succeed())
		j, l, ok, err := st.Dequeue(bg, job.DefaultQueue, now, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeTrue())
		a, _, err := p.Start(bg, j, l, now)
		Expect(err).NotTo(HaveOccurred())
		ctx, cancel := context.WithTimeout(bg, 50*time.Millisecond)
		defer cancel()
		_, err = p.Finish(ctx, a, l, fmt.Errorf("card declined: %w", failure.ErrInvalidInput), now)
		Expect(err).NotTo(HaveOccurred())
		Expect(p.Kept()).To(BeZero())
		c, err := st.Counts(bg)
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Held).To(Equal(1))
	})
})
