package worker_test

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/failure"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/retry"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/memstore"
	"github.com/faultline/faultline/reference/worker"
)

// Named waits for the specs that run goroutines on the wall clock.
const (
	// runnerProgress bounds how long the runner may take to process a few
	// hundred instant jobs.
	runnerProgress = 20 * time.Second
	// runnerReacts bounds how long a runner goroutine may take to react to
	// a clock tick, a cancel or a store answer.
	runnerReacts = 5 * time.Second
	poll         = time.Millisecond
)

// runnerPipeline builds a pipeline on st with fast retries for the wall
// clock and no breaker.
func runnerPipeline(st backend) *worker.Pipeline {
	GinkgoHelper()
	policy, err := retry.New(retry.Config{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond,
		Budget: retry.BudgetConfig{Disabled: true}}, rand.New(rand.NewPCG(5, 6)))
	Expect(err).NotTo(HaveOccurred())
	core, err := worker.NewCore(worker.Config{Classifier: classify.Default(), Policy: policy})
	Expect(err).NotTo(HaveOccurred())
	p, err := worker.NewPipeline(worker.PipelineConfig{Core: core, Queue: st, DLQ: st})
	Expect(err).NotTo(HaveOccurred())
	return p
}

// startRunner runs r until the returned stop function is called; stop
// cancels Run's context and waits for Run to return.
func startRunner(r *worker.Runner) (stop func()) {
	GinkgoHelper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	return func() {
		GinkgoHelper()
		cancel()
		Eventually(done, runnerReacts, poll).Should(Receive(BeNil()))
	}
}

// fate draws the outcome of attempt n at job id from a stream of its own,
// so that the run's failures do not depend on the workers' interleaving.
func fate(id string, n int) int {
	h := fnv.New64a()
	h.Write([]byte(id))
	return rand.New(rand.NewPCG(h.Sum64(), uint64(n))).IntN(100)
}

var _ = Describe("The runner", func() {
	It("runs 1,000 jobs with random failures on 4 workers, and a Ctrl-C mid-run loses nothing: every job is succeeded, "+
		"queued, scheduled or in the DLQ, none in two places, none with an attempt counted by the shutdown", func() {
		led := newLedger()
		st := newBackend(store.Config{Observer: led.observe})
		const jobs = 1000
		for i := range jobs {
			Expect(st.Enqueue(context.Background(), newJob(fmt.Sprintf("job-%04d", i), "email", "smtp"), time.Now())).To(Succeed())
		}

		var (
			mu       sync.Mutex
			calls    = map[string]int{}
			finished atomic.Int64
			blocked  atomic.Int64
			armed    atomic.Bool
			causes   []error
		)
		handler := func(ctx context.Context, j job.Job) error {
			mu.Lock()
			calls[j.ID]++
			n := calls[j.ID]
			mu.Unlock()
			defer finished.Add(1)
			if armed.Load() {
				// Long jobs, in flight when the runner is stopped.
				blocked.Add(1)
				<-ctx.Done()
				mu.Lock()
				causes = append(causes, context.Cause(ctx))
				mu.Unlock()
				return ctx.Err()
			}
			switch f := fate(j.ID, n); {
			case f < 70:
				return nil
			case f < 88:
				return &failure.TimeoutError{Op: "SMTP send", After: time.Second}
			case f < 95:
				return &failure.HTTPError{Code: 503}
			case f < 98:
				return fmt.Errorf("template: %w", failure.ErrInvalidInput)
			default:
				panic("handler bug")
			}
		}
		r, err := worker.NewRunner(worker.RunnerConfig{
			Pipeline: runnerPipeline(st), Source: st, Handler: handler, Clock: clock.Real{},
			Workers: 4, LeaseTTL: time.Minute, PollMin: time.Millisecond, PollMax: 5 * time.Millisecond,
			TickInterval: 2 * time.Millisecond,
		})
		Expect(err).NotTo(HaveOccurred())
		stop := startRunner(r)

		Eventually(finished.Load, runnerProgress, poll).Should(BeNumerically(">=", 400))
		armed.Store(true)
		Eventually(blocked.Load, runnerReacts, poll).Should(BeNumerically("==", 4), "every worker holds a long job")
		stop() // Ctrl-C

		Expect(causes).To(HaveLen(4))
		for _, c := range causes {
			Expect(c).To(MatchError(worker.ErrShutdown))
		}
		Expect(led.errs()).To(BeEmpty(), "no move started where its job was not")
		counts := led.counts()
		Expect(counts).NotTo(HaveKey(disposition.InFlight))
		Expect(counts).NotTo(HaveKey(disposition.Fallback))
		Expect(counts[disposition.Succeeded] + counts[disposition.Queued] + counts[disposition.Scheduled] +
			counts[disposition.DeadLettered]).To(Equal(jobs))
		Expect(counts[disposition.Succeeded]).To(BeNumerically(">", 200))
		Expect(counts[disposition.DeadLettered]).To(BeNumerically(">", 0))
		c, err := st.Counts(context.Background())
		Expect(err).NotTo(HaveOccurred())
		Expect(c).To(Equal(queue.Counts{Queued: counts[disposition.Queued], Scheduled: counts[disposition.Scheduled]}))
		dst, err := st.Stats(context.Background())
		Expect(err).NotTo(HaveOccurred())
		Expect(dst.Total).To(Equal(counts[disposition.DeadLettered]), "one DLQ entry per dead job")

		// Attempts grow by exactly one at each counted attempt — a failure
		// or the success (queue.Ack is given the job with the attempt that
		// succeeded counted) — and never otherwise: not at a release, not at
		// a recovery.
		released := 0
		for i := range jobs {
			id := fmt.Sprintf("job-%04d", i)
			prev := 0
			for _, e := range led.events(id) {
				switch e.Reason {
				case disposition.RetryLater, disposition.DeadLetter, disposition.Acked:
					Expect(e.Attempts).To(Equal(prev+1), "%s", e)
				default:
					Expect(e.Attempts).To(Equal(prev), "%s", e)
				}
				if e.Reason == disposition.Released {
					released++
				}
				prev = e.Attempts
			}
		}
		Expect(released).To(Equal(4), "the four jobs in flight at the Ctrl-C were released")
	})

	It("heartbeats a long job's lease so it is not recovered under it, and completes it", func() {
		clk := clock.NewVirtual(t0)
		led := newLedger()
		st := newBackend(store.Config{Observer: led.observe})
		src := &countingSource{Source: st}
		Expect(st.Enqueue(context.Background(), newJob("long", "report", ""), clk.Now())).To(Succeed())
		started, finish := make(chan struct{}), make(chan struct{})
		r, err := worker.NewRunner(worker.RunnerConfig{
			Pipeline: runnerPipeline(st), Source: src, Clock: clk, Workers: 1,
			LeaseTTL: 30 * time.Second, HeartbeatInterval: 10 * time.Second, TickInterval: time.Hour,
			Handler: func(ctx context.Context, j job.Job) error {
				close(started)
				<-finish
				return nil
			},
		})
		Expect(err).NotTo(HaveOccurred())
		stop := startRunner(r)
		Eventually(started, runnerReacts).Should(BeClosed())

		for beat := int64(1); beat <= 6; beat++ { // a minute: twice the lease
			src.beat(clk, beat)
		}
		n, err := st.RecoverExpired(context.Background(), clk.Now(), 10)
		Expect(err).NotTo(HaveOccurred())
		Expect(n).To(BeZero(), "the lease was kept alive")

		close(finish)
		Eventually(func() disposition.State { return led.state("long") }, runnerReacts, poll).Should(Equal(disposition.Succeeded))
		stop()
	})

	It("cancels the handler with queue.ErrLeaseLost when its lease is lost, fences off its completion, "+
		"and runs the job again", func() {
		clk := clock.NewVirtual(t0)
		led := newLedger()
		st := newBackend(store.Config{Observer: led.observe})
		src := &countingSource{Source: st}
		src.swallow.Store(true) // heartbeats never reach the store: the lease runs out
		Expect(st.Enqueue(context.Background(), newJob("lost", "report", ""), clk.Now())).To(Succeed())
		var calls atomic.Int64
		cause := make(chan error, 1)
		p := runnerPipeline(st)
		type finished struct {
			action worker.Action
			err    error
		}
		finishes := make(chan finished, 4)
		r, err := worker.NewRunner(worker.RunnerConfig{
			Pipeline: p, Source: src, Clock: clk, Workers: 1,
			LeaseTTL: 30 * time.Second, HeartbeatInterval: 10 * time.Second, TickInterval: time.Hour,
			// OnFinish hears each attempt's outcome and what became of its
			// move: the fenced one, then the one that succeeded.
			OnFinish: func(_ worker.Attempt, o worker.Outcome, err error) { finishes <- finished{o.Action, err} },
			Handler: func(ctx context.Context, j job.Job) error {
				if calls.Add(1) > 1 {
					return nil
				}
				<-ctx.Done()
				cause <- context.Cause(ctx)
				return ctx.Err()
			},
		})
		Expect(err).NotTo(HaveOccurred())
		stop := startRunner(r)
		Eventually(calls.Load, runnerReacts, poll).Should(Equal(int64(1)))

		for beat := int64(1); beat <= 3; beat++ {
			src.beat(clk, beat)
		}
		n, err := st.RecoverExpired(context.Background(), clk.Now(), 10)
		Expect(err).NotTo(HaveOccurred())
		Expect(n).To(Equal(1))

		src.swallow.Store(false)
		src.beat(clk, 4)
		Eventually(cause, runnerReacts).Should(Receive(MatchError(queue.ErrLeaseLost)))
		Eventually(func() disposition.State { return led.state("lost") }, runnerReacts, poll).Should(Equal(disposition.Succeeded))
		Expect(calls.Load()).To(Equal(int64(2)))
		Expect(p.Stats().Fenced).To(Equal(uint64(1)))
		var first, second finished
		Eventually(finishes, runnerReacts).Should(Receive(&first))
		Eventually(finishes, runnerReacts).Should(Receive(&second))
		Expect(first.err).To(MatchError(queue.ErrLeaseLost))
		Expect(second.action).To(Equal(worker.Succeed))
		Expect(second.err).NotTo(HaveOccurred())
		stop()
		Expect(led.errs()).To(BeEmpty())
	})

	It("stops a handler whose heartbeats cannot reach the store before its lease runs out", func() {
		clk := clock.NewVirtual(t0)
		st := newBackend(store.Config{})
		src := &countingSource{Source: st}
		src.down.Store(true)
		Expect(st.Enqueue(context.Background(), newJob("cut-off", "report", ""), clk.Now())).To(Succeed())
		cause := make(chan error, 1)
		r, err := worker.NewRunner(worker.RunnerConfig{
			Pipeline: runnerPipeline(st), Source: src, Clock: clk, Workers: 1,
			LeaseTTL: 30 * time.Second, HeartbeatInterval: 10 * time.Second, TickInterval: time.Hour,
			Handler: func(ctx context.Context, j job.Job) error {
				<-ctx.Done()
				cause <- context.Cause(ctx)
				return ctx.Err()
			},
		})
		Expect(err).NotTo(HaveOccurred())
		stop := startRunner(r)
		src.beat(clk, 1) // at 10s: failed, 20s of lease left: keep going
		Consistently(cause, 50*time.Millisecond, poll).ShouldNot(Receive())
		src.beat(clk, 2) // at 20s: failed, and the lease ends before the next beat
		Eventually(cause, runnerReacts).Should(Receive(MatchError(queue.ErrLeaseLost)))
		stop()
	})

	It("turns a handler's panic into a failure the retry policy handles", func() {
		led := newLedger()
		st := newBackend(store.Config{Observer: led.observe})
		Expect(st.Enqueue(context.Background(), newJob("boom", "report", ""), time.Now())).To(Succeed())
		r, err := worker.NewRunner(worker.RunnerConfig{
			Pipeline: runnerPipeline(st), Source: st, Workers: 1, PollMin: time.Millisecond, PollMax: time.Millisecond,
			TickInterval: time.Millisecond,
			Handler:      func(context.Context, job.Job) error { panic("nil map") },
		})
		Expect(err).NotTo(HaveOccurred())
		stop := startRunner(r)
		Eventually(func() disposition.State { return led.state("boom") }, runnerProgress, poll).Should(Equal(disposition.DeadLettered))
		stop()
		e, err := st.Get(context.Background(), "boom")
		Expect(err).NotTo(HaveOccurred())
		Expect(e.History).To(HaveLen(retry.DefaultMaxAttempts))
		Expect(e.History[0].Error).To(Equal("handler panicked: nil map"))
		Expect(e.History[0].ErrorType).To(Equal("*worker.PanicError"))
	})

	It("refuses a second Run while running, and a bad config naming the field", func() {
		st := newBackend(store.Config{})
		Expect(st.Enqueue(context.Background(), newJob("hold", "report", ""), time.Now())).To(Succeed())
		running, release := make(chan struct{}), make(chan struct{})
		r, err := worker.NewRunner(worker.RunnerConfig{Pipeline: runnerPipeline(st), Source: st, Workers: 1,
			Handler: func(context.Context, job.Job) error {
				close(running)
				<-release
				return nil
			}})
		Expect(err).NotTo(HaveOccurred())
		stop := startRunner(r)
		Eventually(running, runnerReacts).Should(BeClosed())
		Expect(r.Run(context.Background())).To(MatchError(worker.ErrRunning))
		close(release)
		stop()

		_, err = worker.NewRunner(worker.RunnerConfig{Pipeline: runnerPipeline(st), Source: st})
		Expect(err).To(MatchError(ContainSubstring("Handler")))
		_, err = worker.NewRunner(worker.RunnerConfig{Pipeline: runnerPipeline(st), Source: st, Handler: func(context.Context, job.Job) error { return nil },
			LeaseTTL: time.Second, HeartbeatInterval: 2 * time.Second})
		Expect(err).To(MatchError(ContainSubstring("HeartbeatInterval")))
	})
})

// countingSource counts heartbeats; while swallow is set, it answers them
// itself, without extending the lease in the store.
type countingSource struct {
	worker.Source
	beats   atomic.Int64
	swallow atomic.Bool
	// down makes heartbeats fail as if the store could not be reached.
	down atomic.Bool
}

// beat waits until the heartbeat's timer is set (the runner's two timers:
// the ticker's and the heartbeat's, its one worker being busy), moves the
// clock to it and waits for heartbeat n.
func (s *countingSource) beat(clk *clock.Virtual, n int64) {
	GinkgoHelper()
	Eventually(clk.Pending, runnerReacts, poll).Should(Equal(2))
	clk.Advance(10 * time.Second)
	Eventually(s.beats.Load, runnerReacts, poll).Should(Equal(n))
}

func (s *countingSource) Heartbeat(ctx context.Context, l queue.Lease, now time.Time, ttl time.Duration) (queue.Lease, error) {
	defer s.beats.Add(1)
	if s.down.Load() {
		return queue.Lease{}, errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")
	}
	if s.swallow.Load() {
		return l, nil
	}
	return s.Source.Heartbeat(ctx, l, now, ttl)
}

var _ = Describe("The runner's shutdown grace", func() {
	It("lets a handler in flight finish within the grace instead of cancelling it", func() {
		st, err := memstore.New(store.Config{})
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Enqueue(context.Background(), job.Job{ID: "charge-1", Task: "charge"}, time.Now())).To(Succeed())
		started, release := make(chan struct{}), make(chan struct{})
		var sawCancel atomic.Bool
		r, err := worker.NewRunner(worker.RunnerConfig{
			Pipeline: runnerPipeline(st), Source: st, Workers: 1, ShutdownGrace: time.Minute,
			Handler: func(ctx context.Context, j job.Job) error {
				close(started)
				select {
				case <-release:
					return nil
				case <-ctx.Done():
					sawCancel.Store(true)
					return ctx.Err()
				}
			},
		})
		Expect(err).NotTo(HaveOccurred())
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.Run(ctx) }()
		Eventually(started, runnerReacts, poll).Should(BeClosed())
		cancel() // Ctrl-C while the charge is in flight
		Consistently(done, 100*time.Millisecond, poll).ShouldNot(Receive(), "the runner waits for the handler")
		close(release)
		Eventually(done, runnerReacts, poll).Should(Receive(BeNil()))
		Expect(sawCancel.Load()).To(BeFalse())
		c, err := st.Counts(context.Background())
		Expect(err).NotTo(HaveOccurred())
		Expect(c).To(Equal(queue.Counts{}), "succeeded: nothing queued, in flight, scheduled or diverted")
	})
})

var _ = Describe("The runner's shutdown without a grace", func() {
	// A handler that returns its context's cause at a shutdown returns
	// ErrShutdown, which wraps context.Canceled: the job is released
	// without spending an attempt, as the simulator's graceful stop does.
	It("releases a job whose handler returns context.Cause(ctx), its attempt not spent", func() {
		st, err := memstore.New(store.Config{})
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Enqueue(context.Background(), job.Job{ID: "export-1", Task: "export"}, time.Now())).To(Succeed())
		started := make(chan struct{})
		r, err := worker.NewRunner(worker.RunnerConfig{
			Pipeline: runnerPipeline(st), Source: st, Workers: 1,
			Handler: func(ctx context.Context, j job.Job) error {
				close(started)
				<-ctx.Done()
				return context.Cause(ctx)
			},
		})
		Expect(err).NotTo(HaveOccurred())
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.Run(ctx) }()
		Eventually(started, runnerReacts, poll).Should(BeClosed())
		cancel() // SIGTERM while the export is in flight
		Eventually(done, runnerReacts, poll).Should(Receive(BeNil()))
		c, err := st.Counts(context.Background())
		Expect(err).NotTo(HaveOccurred())
		Expect(c).To(Equal(queue.Counts{Queued: 1}), "released to its queue, not retried or dead-lettered")
		j, _, ok, err := st.Dequeue(context.Background(), job.DefaultQueue, time.Now(), time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeTrue())
		Expect(j.Attempts).To(Equal(0), "a shutdown spends no attempt")
	})
})
