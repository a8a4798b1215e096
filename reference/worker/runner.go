package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/queue"
)

// Handler runs one attempt at a job. Its context is canceled, with cause
// ErrShutdown, when the runner stops (return promptly: the job is released
// without using an attempt), and with cause queue.ErrLeaseLost when the
// job's lease is lost (another worker may have it now).
type Handler func(ctx context.Context, j job.Job) error

// ErrShutdown is the cause of a handler's context canceled because the
// runner is stopping. It wraps context.Canceled, so a handler that returns
// its context's cause (context.Cause(ctx)) is classified as a cancellation
// (by the default rules, with Scope.ShuttingDown, a shutdown: the job is
// released without using an attempt), as one that returns ctx.Err() is.
var ErrShutdown = fmt.Errorf("worker shutting down: %w", context.Canceled)

// ErrRunning: Run was called while the runner was already running.
var ErrRunning = errors.New("runner already running")

// PanicError is a handler's panic, turned into its error (classified like
// any error no rule knows: transient, so the retry policy's limit decides).
type PanicError struct {
	Value any
}

// Error returns "handler panicked: VALUE".
func (e *PanicError) Error() string { return fmt.Sprintf("handler panicked: %v", e.Value) }

// Source is what the Runner needs of a queue besides the moves Apply makes:
// leasing, heartbeats, and the two clock-driven moves. queue.Queue
// implements it.
type Source interface {
	Dequeue(ctx context.Context, queue string, now time.Time, ttl time.Duration) (job.Job, queue.Lease, bool, error)
	Heartbeat(ctx context.Context, l queue.Lease, now time.Time, ttl time.Duration) (queue.Lease, error)
	ForwardDue(ctx context.Context, now time.Time, limit int) (int, error)
	RecoverExpired(ctx context.Context, now time.Time, limit int) (int, error)
}

var _ Source = queue.Queue(nil)

// Defaults for RunnerConfig.
const (
	DefaultWorkers      = 4
	DefaultLeaseTTL     = 30 * time.Second
	DefaultPollMin      = 10 * time.Millisecond
	DefaultPollMax      = time.Second
	DefaultTickInterval = time.Second
	DefaultTickLimit    = 100
	DefaultStoreTimeout = 10 * time.Second
)

// maxTickBatches bounds the ForwardDue or RecoverExpired calls of one tick,
// so a backlog is moved in bounded steps without starving the workers.
const maxTickBatches = 10

// Log attribute keys.
const (
	logJob    = "job"
	logQueue  = "queue"
	logAction = "action"
	logErr    = "err"
)

// RunnerConfig configures a Runner.
type RunnerConfig struct {
	// Pipeline, Source and Handler are required. Clock defaults to
	// clock.Real.
	Pipeline *Pipeline
	Source   Source
	Handler  Handler
	Clock    clock.Clock
	// Workers is the number of jobs run at once (default 4).
	Workers int
	// Queues are the queues polled, each worker starting at a different
	// one (default job.DefaultQueue).
	Queues []string
	// Lanes, if set, closes the queues whose every dependency has an open
	// breaker in this process (see Lanes): a worker skips them, and polls
	// with its backoff when every open lane is empty.
	Lanes *Lanes
	// LeaseTTL is how long a lease lasts without a heartbeat (default 30s);
	// HeartbeatInterval how often a running job's lease is extended
	// (default LeaseTTL/3).
	LeaseTTL, HeartbeatInterval time.Duration
	// PollMin and PollMax bound the backoff of a worker that found its
	// queues empty (doubling from PollMin; default 10ms and 1s).
	PollMin, PollMax time.Duration
	// TickInterval is how often due retries are forwarded, expired leases
	// recovered and held dead letters written to the DLQ (default 1s), and
	// the ones kept in memory retried, their leases heartbeated (every
	// TickInterval or LeaseTTL/3, whichever is shorter, so that their
	// leases never run out), TickLimit the jobs moved per call (default
	// 100).
	TickInterval time.Duration
	TickLimit    int
	// ShutdownGrace is how long a shutdown lets the handlers in flight
	// finish on their own before it cancels them (default 0: at once). A
	// charge that finishes within it is not left with an unknown outcome.
	ShutdownGrace time.Duration
	// StoreTimeout bounds each store call made after a job was leased
	// (start, heartbeat, completion). They do not use Run's context, so a
	// shutdown still writes the completions of the jobs it stopped.
	StoreTimeout time.Duration
	// Logger receives store errors; nil discards them.
	Logger *slog.Logger
	// OnFinish, if set, hears every attempt the runner completed: the
	// outcome the pipeline decided and what became of its move (nil:
	// applied; queue.ErrLeaseLost: fenced off; ErrKept: kept in memory;
	// another error: the store failed). It is called on the worker's
	// goroutine before it runs its next job (which a source that acks and
	// leases in one step, queue.AckDequeuer, has leased with the ack): a
	// drill's worker reports its attempts through it.
	OnFinish func(a Attempt, o Outcome, err error)
}

// WithDefaults returns c with zero fields set to their defaults.
func (c RunnerConfig) WithDefaults() RunnerConfig {
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	if len(c.Queues) == 0 {
		c.Queues = []string{job.DefaultQueue}
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = DefaultLeaseTTL
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = c.LeaseTTL / 3
	}
	if c.PollMin == 0 {
		c.PollMin = DefaultPollMin
	}
	if c.PollMax == 0 {
		c.PollMax = max(DefaultPollMax, c.PollMin)
	}
	if c.TickInterval == 0 {
		c.TickInterval = DefaultTickInterval
	}
	if c.TickLimit == 0 {
		c.TickLimit = DefaultTickLimit
	}
	if c.StoreTimeout == 0 {
		c.StoreTimeout = DefaultStoreTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports the first invalid field of c with defaults applied.
func (c RunnerConfig) Validate() error {
	c = c.WithDefaults()
	switch {
	case c.Pipeline == nil:
		return &ConfigError{"Pipeline", "is required"}
	case c.Source == nil:
		return &ConfigError{"Source", "is required"}
	case c.Handler == nil:
		return &ConfigError{"Handler", "is required"}
	case c.Workers < 1:
		return &ConfigError{"Workers", "must be at least 1"}
	case c.LeaseTTL <= 0:
		return &ConfigError{"LeaseTTL", "must be positive"}
	case c.HeartbeatInterval <= 0 || c.HeartbeatInterval >= c.LeaseTTL:
		return &ConfigError{"HeartbeatInterval", "must be positive and shorter than LeaseTTL"}
	case c.PollMin <= 0 || c.PollMax < c.PollMin:
		return &ConfigError{"PollMin/PollMax", "must be positive, PollMax at least PollMin"}
	case c.TickInterval <= 0:
		return &ConfigError{"TickInterval", "must be positive"}
	case c.TickLimit < 1:
		return &ConfigError{"TickLimit", "must be at least 1"}
	case c.StoreTimeout <= 0:
		return &ConfigError{"StoreTimeout", "must be positive"}
	}
	for i, q := range c.Queues {
		if q == "" {
			return &ConfigError{fmt.Sprintf("Queues[%d]", i), "is empty"}
		}
	}
	return nil
}

// Runner is the pipeline on the wall clock: N workers that lease jobs, run
// the handler while heartbeating the lease, and complete the attempt
// through the pipeline, and a ticker that forwards due retries and recovers
// expired leases. Nothing starts until Run.
type Runner struct {
	cfg RunnerConfig

	mu      sync.Mutex
	running bool
}

// NewRunner returns a runner for cfg (defaults applied), or a *ConfigError.
// It starts nothing.
func NewRunner(cfg RunnerConfig) (*Runner, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Queues = append([]string(nil), cfg.Queues...)
	return &Runner{cfg: cfg}, nil
}

// Run runs the workers and the ticker until ctx is canceled, then shuts
// down gracefully: the workers stop leasing, the handlers still running get
// ShutdownGrace to finish, then have their contexts canceled with cause
// ErrShutdown, and Run waits for them. A handler stopped that way is classified with Scope.ShuttingDown,
// so by the default rules its job is released to the head of its queue
// without using an attempt, and every job ends up where the stores say:
// succeeded, queued, scheduled, in the fallback queue or in the DLQ. (A
// payment that was canceled mid-charge is the exception the classifier
// makes: its outcome is unknown, so it counts.) Run returns nil after a
// shutdown, ErrRunning if the runner is already running.
func (r *Runner) Run(ctx context.Context) error {
	r.mu.Lock()
	if r.running {
		r.mu.Unlock()
		return ErrRunning
	}
	r.running = true
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.running = false
		r.mu.Unlock()
	}()

	// Handlers and store calls after a lease do not inherit ctx's
	// cancellation: a shutdown cancels the handlers with its own cause, and
	// their completions are still written.
	base := context.WithoutCancel(ctx)
	run := &run{r: r, ctx: ctx, base: base, inFlight: make(map[*inFlight]struct{}), finished: make(chan struct{}),
		kept: make(chan struct{}, 1)}
	var wg sync.WaitGroup
	for i := range r.cfg.Workers {
		wg.Go(func() { run.work(i) })
	}
	wg.Go(run.tick)
	wg.Go(run.keep)

	<-ctx.Done()
	run.grace(r.cfg.ShutdownGrace)
	run.shutdown()
	wg.Wait()
	// Once more, now that no handler runs: a dead letter kept by a
	// handler that finished after the ticker stopped (in the grace
	// period) gets its last chance too.
	run.retryKept(true)
	return nil
}

// grace stops the leasing and waits up to d, on the runner's clock, for the
// handlers in flight to finish on their own.
func (rn *run) grace(d time.Duration) {
	rn.mu.Lock()
	rn.stopping = true
	rn.mu.Unlock()
	if d <= 0 {
		return
	}
	expired := make(chan struct{})
	t := rn.r.cfg.Clock.AfterFunc(d, func() { close(expired) })
	defer t.Stop()
	for {
		rn.mu.Lock()
		n, finished := len(rn.inFlight), rn.finished
		rn.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-finished:
		case <-expired:
			return
		}
	}
}

// run is the state of one Run.
type run struct {
	r    *Runner
	ctx  context.Context // Run's: done when the runner stops
	base context.Context // Run's values, never canceled

	mu       sync.Mutex
	stopping bool
	inFlight map[*inFlight]struct{}
	// finished is closed, and replaced, whenever a handler leaves inFlight.
	finished chan struct{}
	// kept wakes keep when a worker's dead letter was kept in memory.
	kept chan struct{}
}

// inFlight is one running handler.
type inFlight struct {
	cancel context.CancelCauseFunc
}

// shutdown stops the handlers in flight; the workers see ctx done and stop
// leasing.
func (rn *run) shutdown() {
	rn.mu.Lock()
	rn.stopping = true
	stop := make([]*inFlight, 0, len(rn.inFlight))
	for f := range rn.inFlight {
		stop = append(stop, f)
	}
	rn.mu.Unlock()
	for _, f := range stop {
		f.cancel(ErrShutdown)
	}
}

// wait waits d on the runner's clock, or until the run stops; it reports
// false when the run stopped.
func (rn *run) wait(d time.Duration) bool {
	fired := make(chan struct{})
	t := rn.r.cfg.Clock.AfterFunc(d, func() { close(fired) })
	select {
	case <-fired:
		return true
	case <-rn.ctx.Done():
		t.Stop()
		return false
	}
}

// storeCtx returns a context for one store call after a lease.
func (rn *run) storeCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(rn.base, rn.r.cfg.StoreTimeout)
}

// work is one worker: lease a job, run it, poll with backoff when there is
// none, until the run stops.
func (rn *run) work(i int) {
	cfg := &rn.r.cfg
	backoff := cfg.PollMin
	next := i % len(cfg.Queues)
	for rn.ctx.Err() == nil {
		found := false
		for range cfg.Queues {
			name := cfg.Queues[next]
			next = (next + 1) % len(cfg.Queues)
			if !cfg.Lanes.Open(name) {
				continue
			}
			j, l, ok, err := cfg.Source.Dequeue(rn.ctx, name, cfg.Clock.Now(), cfg.LeaseTTL)
			if err != nil {
				if rn.ctx.Err() == nil {
					cfg.Logger.Error("dequeue failed", logQueue, name, logErr, err)
				}
				break
			}
			if ok {
				found = true
				// A job leased with the ack of the one before it runs
				// next (see process).
				for ok {
					j, l, ok = rn.process(j, l, &next)
				}
				break
			}
		}
		if found {
			backoff = cfg.PollMin
			continue
		}
		if !rn.wait(backoff) {
			return
		}
		backoff = min(2*backoff, cfg.PollMax)
	}
}

// process runs one leased job through the pipeline. When its attempt
// succeeded and the source acks and leases in one step
// (queue.AckDequeuer), the ack leases the next job of the worker's open
// queues, starting at *next: process returns it, to run next, and moves
// *next past its queue.
func (rn *run) process(j job.Job, l queue.Lease, next *int) (job.Job, queue.Lease, bool) {
	cfg := &rn.r.cfg
	p := cfg.Pipeline

	hctx, cancel := context.WithCancelCause(rn.base)
	defer cancel(nil)
	f := &inFlight{cancel: cancel}
	rn.mu.Lock()
	if rn.stopping {
		// Leased just as the runner stopped: back at once, no attempt.
		rn.mu.Unlock()
		sctx, done := rn.storeCtx()
		defer done()
		if err := p.Release(sctx, j, l, cfg.Clock.Now()); err != nil {
			cfg.Logger.Error("release failed; the job comes back when its lease expires", logJob, j.ID, logErr, err)
		}
		return job.Job{}, queue.Lease{}, false
	}
	rn.inFlight[f] = struct{}{}
	rn.mu.Unlock()
	defer func() {
		rn.mu.Lock()
		delete(rn.inFlight, f)
		close(rn.finished)
		rn.finished = make(chan struct{})
		rn.mu.Unlock()
	}()

	sctx, done := rn.storeCtx()
	a, ok, err := p.Start(sctx, j, l, cfg.Clock.Now())
	done()
	if err != nil {
		cfg.Logger.Error("start failed; the job comes back when its lease expires", logJob, j.ID, logErr, err)
		return job.Job{}, queue.Lease{}, false
	}
	if !ok {
		return job.Job{}, queue.Lease{}, false // diverted to the fallback queue
	}

	beat := rn.heartbeat(hctx, l, cancel)
	herr := callHandler(cfg.Handler, hctx, a.Job)
	l = beat()

	a.ShuttingDown = errors.Is(context.Cause(hctx), ErrShutdown)
	sctx, done = rn.storeCtx()
	defer done()
	var (
		o      Outcome
		nj     job.Job
		nl     queue.Lease
		leased bool
	)
	now := cfg.Clock.Now()
	if o = p.cfg.Core.Complete(sctx, a, herr, now); o.Action == Succeed {
		nj, nl, leased, err = rn.ackNext(sctx, l, &o, now, next)
	} else {
		err = p.Apply(sctx, l, o, now)
	}
	if cfg.OnFinish != nil {
		cfg.OnFinish(a, o, err)
	}
	switch {
	case err == nil:
	case errors.Is(err, queue.ErrLeaseLost):
		cfg.Logger.Warn("completion fenced off: the lease was lost", logJob, j.ID, logAction, o.Action.String())
	case errors.Is(err, ErrKept):
		cfg.Logger.Warn("dead letter kept by the worker (lease heartbeated, handler not run again) until the store takes it", logJob, j.ID, logErr, err)
		select {
		case rn.kept <- struct{}{}:
		default: // keep is woken already
		}
	default:
		cfg.Logger.Error("completion not written; the job comes back when its lease expires", logJob, j.ID, logAction, o.Action.String(), logErr, err)
	}
	return nj, nl, leased
}

// ackNext acks the succeeded outcome o of l's job through the pipeline.
// When the source is a queue.AckDequeuer and the run is not stopping, the
// same store step leases the next job of the open queues, tried from
// *next on: ackNext returns it and moves *next past its queue. The error
// is the ack's, as Pipeline.Apply gives it.
func (rn *run) ackNext(ctx context.Context, l queue.Lease, o *Outcome, now time.Time, next *int) (job.Job, queue.Lease, bool, error) {
	cfg := &rn.r.cfg
	p := cfg.Pipeline
	ad, ok := cfg.Source.(queue.AckDequeuer)
	rn.mu.Lock()
	stopping := rn.stopping
	rn.mu.Unlock()
	if !ok || stopping || rn.ctx.Err() != nil {
		return job.Job{}, queue.Lease{}, false, p.Apply(ctx, l, *o, now)
	}
	names := make([]string, 0, len(cfg.Queues))
	at := make([]int, 0, len(cfg.Queues))
	for k := range cfg.Queues {
		i := (*next + k) % len(cfg.Queues)
		if cfg.Lanes.Open(cfg.Queues[i]) {
			names, at = append(names, cfg.Queues[i]), append(at, i)
		}
	}
	if len(names) == 0 {
		return job.Job{}, queue.Lease{}, false, p.Apply(ctx, l, *o, now)
	}
	ack, nj, nl, i, leased, err := ad.AckDequeue(ctx, l, o.Job, names, now, cfg.LeaseTTL)
	if err != nil && rn.ctx.Err() == nil {
		cfg.Logger.Error("dequeue failed", logQueue, names[0], logErr, err)
	}
	if leased {
		*next = (at[i] + 1) % len(cfg.Queues)
	}
	return nj, nl, leased, p.acked(ctx, o, now, ack)
}

// heartbeat extends l every HeartbeatInterval until the returned function
// is called, which returns the latest lease. A lost lease cancels the
// handler with cause queue.ErrLeaseLost.
func (rn *run) heartbeat(hctx context.Context, l queue.Lease, cancel context.CancelCauseFunc) func() queue.Lease {
	cfg := &rn.r.cfg
	stop := make(chan struct{})
	result := make(chan queue.Lease, 1)
	go func() {
		for {
			fired := make(chan struct{})
			t := cfg.Clock.AfterFunc(cfg.HeartbeatInterval, func() { close(fired) })
			select {
			case <-stop:
				t.Stop()
				result <- l
				return
			case <-fired:
			}
			sctx, done := rn.storeCtx()
			nl, err := cfg.Source.Heartbeat(sctx, l, cfg.Clock.Now(), cfg.LeaseTTL)
			done()
			switch {
			case err == nil:
				l = nl
			case errors.Is(err, queue.ErrLeaseLost):
				cancel(queue.ErrLeaseLost)
				<-stop
				result <- l
				return
			case !cfg.Clock.Now().Before(l.Expires.Add(-cfg.HeartbeatInterval)):
				// The store cannot be reached and the lease runs out before
				// the next heartbeat: another worker will recover the job,
				// so this one must stop rather than run it twice.
				cfg.Logger.Warn("heartbeat failed and the lease is about to expire; stopping the handler", logJob, l.JobID, logErr, err)
				cancel(queue.ErrLeaseLost)
				<-stop
				result <- l
				return
			case hctx.Err() == nil:
				cfg.Logger.Warn("heartbeat failed", logJob, l.JobID, logErr, err)
			}
		}
	}()
	return func() queue.Lease {
		close(stop)
		return <-result
	}
}

// retryKept gives the dead letters the pipeline keeps in memory to the
// store; at the end of a run, it logs those still kept: their leases will
// expire and the jobs run again.
func (rn *run) retryKept(last bool) {
	cfg := &rn.r.cfg
	p := cfg.Pipeline
	if p.Kept() == 0 {
		return
	}
	sctx, done := rn.storeCtx()
	defer done()
	for _, k := range p.retryKept(sctx, cfg.Clock.Now(), cfg.LeaseTTL) {
		if k.State == KeptFenced {
			cfg.Logger.Error("kept dead letter lost its lease: the job comes back and runs again", logJob, k.JobID, logErr, k.Err)
		}
	}
	if n := p.Kept(); last && n > 0 {
		cfg.Logger.Error("stopping with dead letters the store never took: their leases expire and the jobs run again", "kept", n)
	}
}

// callHandler runs h, turning a panic into a *PanicError.
func callHandler(h Handler, ctx context.Context, j job.Job) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v}
		}
	}()
	return h(ctx, j)
}

// keep hands the dead letters kept in memory to the store, heartbeating
// their leases, every TickInterval or LeaseTTL/3, whichever is shorter,
// until the run stops (Run tries them once more when its workers are
// done): on its own cadence, so that a long TickInterval never lets a kept
// lease expire and another process run the job again.
func (rn *run) keep() {
	cfg := &rn.r.cfg
	every := max(min(cfg.TickInterval, cfg.LeaseTTL/3), time.Millisecond)
	for {
		if cfg.Pipeline.Kept() == 0 {
			// No timer while nothing is kept: wait for a worker's word.
			select {
			case <-rn.ctx.Done():
				return
			case <-rn.kept:
			}
		}
		if !rn.wait(every) {
			return
		}
		rn.retryKept(false)
	}
}

// tick forwards due retries, recovers expired leases and writes held dead
// letters to the DLQ every TickInterval until the run stops.
func (rn *run) tick() {
	cfg := &rn.r.cfg
	for rn.wait(cfg.TickInterval) {
		for range maxTickBatches {
			res, err := cfg.Pipeline.FlushHeld(rn.ctx, cfg.Clock.Now(), cfg.TickLimit)
			if err != nil {
				if rn.ctx.Err() == nil {
					cfg.Logger.Error("write held dead letters failed", logErr, err)
				}
				break
			}
			if res.Full || len(res.Written) < cfg.TickLimit {
				break
			}
		}
		for _, step := range []struct {
			name string
			f    func(context.Context, time.Time, int) (int, error)
		}{{"forward due retries", cfg.Source.ForwardDue}, {"recover expired leases", cfg.Source.RecoverExpired}} {
			for range maxTickBatches {
				n, err := step.f(rn.ctx, cfg.Clock.Now(), cfg.TickLimit)
				if err != nil {
					if rn.ctx.Err() == nil {
						cfg.Logger.Error(step.name+" failed", logErr, err)
					}
					break
				}
				if n < cfg.TickLimit {
					break
				}
			}
		}
	}
}
