package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/queue"
)

// Mover is what Apply needs of a queue: the moves of a leased job, each
// fenced by its lease. queue.Queue implements it.
type Mover interface {
	Ack(ctx context.Context, l queue.Lease, j job.Job, now time.Time) error
	Retry(ctx context.Context, l queue.Lease, j job.Job, at time.Time, now time.Time) error
	Release(ctx context.Context, l queue.Lease, j job.Job, now time.Time) error
	Divert(ctx context.Context, l queue.Lease, j job.Job, now time.Time) error
}

// DeadLetterer is what Apply needs of a DLQ: the fenced move of a leased job
// into it. dlq.Store implements it.
type DeadLetterer interface {
	DeadLetter(ctx context.Context, l queue.Lease, e dlq.Entry, now time.Time) (dlq.AddResult, error)
}

var (
	_ Mover        = queue.Queue(nil)
	_ DeadLetterer = dlq.Store(nil)
)

// ErrNoEntry: a DeadLetter outcome without its entry (not one Complete
// made); nothing is written.
var ErrNoEntry = errors.New("dead-letter outcome has no entry")

// Apply carries out o on the stores for the job held by lease l, at now. It
// returns nil when the move happened. Otherwise nothing moved and the job is
// still where the lease left it, and the error says why:
//
//   - queue.ErrLeaseLost: the lease is not the job's current one (it
//     expired and the job was recovered, perhaps leased again). The
//     completion is dropped; it can never be applied twice.
//   - dlq.ErrFull: the DLQ is full and refuses new entries. The job stays
//     leased; when the lease expires it comes back and will be tried again.
//     Nothing is lost, and the store reported the overflow.
//   - anything else: the store failed; the job stays leased and comes back
//     when the lease expires.
func Apply(ctx context.Context, q Mover, d DeadLetterer, l queue.Lease, o Outcome, now time.Time) error {
	return apply(ctx, q, d, l, &o, now)
}

// apply is Apply with the outcome by reference: it is large, and the
// pipeline passes it on without copying it again.
func apply(ctx context.Context, q Mover, d DeadLetterer, l queue.Lease, o *Outcome, now time.Time) error {
	var err error
	switch o.Action {
	case Succeed:
		err = q.Ack(ctx, l, o.Job, now)
	case Retry:
		err = q.Retry(ctx, l, o.Job, o.At, now)
	case DeadLetter:
		if o.Entry == nil {
			err = ErrNoEntry
			break
		}
		_, err = d.DeadLetter(ctx, l, *o.Entry, now)
	case Release:
		err = q.Release(ctx, l, o.Job, now)
	case Divert:
		err = q.Divert(ctx, l, o.Job, now)
	default:
		err = fmt.Errorf("unknown action %d", uint8(o.Action))
	}
	if err != nil {
		return fmt.Errorf("%s job %s: %w", o.Action, o.Job.ID, err)
	}
	return nil
}

// History keeps the failures of a job's attempts between them, keyed by job
// ID (see the package documentation). Implementations are safe for
// concurrent use.
type History interface {
	// Failures returns the job's recorded failures, oldest first, as a
	// slice the caller may keep and append to but must not modify in
	// place.
	Failures(jobID string) []dlq.Failure
	// Record appends one failure.
	Record(jobID string, f dlq.Failure)
	// Forget drops the job's failures.
	Forget(jobID string)
}

// MemoryHistory is a History in the process's memory. It holds the jobs
// between a failed attempt and their success or death; a job that succeeds
// first time costs nothing.
type MemoryHistory struct {
	mu   sync.Mutex
	jobs map[string][]dlq.Failure
}

var _ History = (*MemoryHistory)(nil)

// NewMemoryHistory returns an empty history.
func NewMemoryHistory() *MemoryHistory {
	return &MemoryHistory{jobs: make(map[string][]dlq.Failure)}
}

// Failures returns the job's failures without copying them: the slice is
// capped at its length, so an append by the caller copies, and Record only
// ever appends beyond it.
func (h *MemoryHistory) Failures(jobID string) []dlq.Failure {
	h.mu.Lock()
	defer h.mu.Unlock()
	fs := h.jobs[jobID]
	if len(fs) == 0 {
		return nil
	}
	return fs[:len(fs):len(fs)]
}

// Record appends f to the job's failures.
func (h *MemoryHistory) Record(jobID string, f dlq.Failure) {
	h.mu.Lock()
	h.jobs[jobID] = append(h.jobs[jobID], f)
	h.mu.Unlock()
}

// Forget drops the job's failures.
func (h *MemoryHistory) Forget(jobID string) {
	h.mu.Lock()
	delete(h.jobs, jobID)
	h.mu.Unlock()
}

// Len returns the number of jobs with recorded failures.
func (h *MemoryHistory) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.jobs)
}

// PipelineConfig configures a Pipeline.
type PipelineConfig struct {
	// Core, Queue and DLQ are required. A memstore or redisstore Store is
	// both Queue and DLQ.
	Core  *Core
	Queue Mover
	DLQ   DeadLetterer
	// History keeps failures between attempts; nil means a new
	// MemoryHistory.
	History History
	// Observer, if set, hears every move the pipeline made, after the
	// store made it: succeeded, scheduled for a retry, dead-lettered,
	// released, diverted. A fenced or failed move is not heard. (A store's
	// own observer hears these moves too, and the ones the pipeline does
	// not make; a ledger listens to one of the two.)
	Observer disposition.Observer
	// OnDead, if set, is called once per death of a job: after its entry
	// was written to the DLQ. A dead letter that was fenced off or refused
	// is not a death; the job comes back.
	OnDead func(j job.Job, e dlq.Entry)
}

// Validate reports the first invalid field of c.
func (c PipelineConfig) Validate() error {
	switch {
	case c.Core == nil:
		return &ConfigError{"Core", "is required"}
	case c.Queue == nil:
		return &ConfigError{"Queue", "is required"}
	case c.DLQ == nil:
		return &ConfigError{"DLQ", "is required"}
	}
	return nil
}

// PipelineStats are a pipeline's counters; they only grow.
type PipelineStats struct {
	// Applied counts the outcomes carried out, by action.
	Applied [maxAction + 1]uint64
	// Fenced counts completions refused because their lease was lost;
	// Held the dead letters refused by a full DLQ; Errors the other
	// failed moves. In all three cases nothing moved.
	Fenced, Held, Errors uint64
}

// Pipeline is the core wired to the stores: it starts attempts, completes
// them and carries the outcomes out, keeping the failure history between
// attempts. It is what both the simulator and the Runner drive. It is safe
// for concurrent use; the hooks and the observer are called without any
// lock held, possibly concurrently from several workers.
type Pipeline struct {
	cfg     PipelineConfig
	history History

	applied              [maxAction + 1]atomic.Uint64
	fenced, held, errors atomic.Uint64
}

// NewPipeline returns a pipeline for cfg, or a *ConfigError.
func NewPipeline(cfg PipelineConfig) (*Pipeline, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &Pipeline{cfg: cfg, history: cfg.History}
	if p.history == nil {
		p.history = NewMemoryHistory()
	}
	return p, nil
}

// Core returns the pipeline's core.
func (p *Pipeline) Core() *Core { return p.cfg.Core }

// History returns where the pipeline keeps failures between attempts.
func (p *Pipeline) History() History { return p.history }

// Start begins an attempt at j, leased with l, at now. It reports true when
// the handler may run. When the dependency's breaker refuses, the job is
// diverted to the fallback queue here and Start reports false; the error is
// the divert's, if it failed.
func (p *Pipeline) Start(ctx context.Context, j job.Job, l queue.Lease, now time.Time) (a Attempt, run bool, err error) {
	// The attempt is built in the result, not copied into it.
	if err := p.cfg.Core.begin(&j, now, &a); err != nil {
		return a, false, fmt.Errorf("begin job %q: %w", j.ID, err)
	}
	if a.Diverted {
		return a, false, p.Apply(ctx, l, a.Divert(), now)
	}
	a.History = p.history.Failures(j.ID)
	return a, true, nil
}

// Finish completes attempt a, whose handler returned err, and carries the
// outcome out with lease l, at now. The error is Apply's.
func (p *Pipeline) Finish(ctx context.Context, a Attempt, l queue.Lease, err error, now time.Time) (Outcome, error) {
	o := p.cfg.Core.Complete(a, err, now)
	return o, p.Apply(ctx, l, o, now)
}

// Release puts a leased job back at the head of its queue without an
// attempt: for a job dequeued just as the worker stopped, whose handler
// never ran.
func (p *Pipeline) Release(ctx context.Context, j job.Job, l queue.Lease, now time.Time) error {
	return p.Apply(ctx, l, Outcome{Action: Release, Job: j, At: now}, now)
}

// Apply carries o out on the pipeline's stores (see the package function
// Apply), keeping the history, calling OnDead and the observer, and
// counting.
func (p *Pipeline) Apply(ctx context.Context, l queue.Lease, o Outcome, now time.Time) error {
	err := apply(ctx, p.cfg.Queue, p.cfg.DLQ, l, &o, now)
	switch {
	case err == nil:
	case errors.Is(err, queue.ErrLeaseLost):
		// The completion never happened as far as the job is concerned:
		// its failure is not part of its history either.
		p.fenced.Add(1)
		return err
	default:
		// The job stays leased and comes back; the failure was real.
		if errors.Is(err, dlq.ErrFull) {
			p.held.Add(1)
		} else {
			p.errors.Add(1)
		}
		if o.Failed() {
			p.history.Record(o.Job.ID, o.Failure)
		}
		return err
	}
	p.applied[o.Action].Add(1)
	switch o.Action {
	case Retry:
		p.history.Record(o.Job.ID, o.Failure)
	case Succeed, DeadLetter:
		p.history.Forget(o.Job.ID)
	}
	if p.cfg.Observer != nil {
		p.cfg.Observer(o.Event(now))
	}
	if o.Action == DeadLetter && p.cfg.OnDead != nil {
		p.cfg.OnDead(o.Job, *o.Entry)
	}
	return nil
}

// Stats returns a snapshot of the pipeline's counters.
func (p *Pipeline) Stats() PipelineStats {
	var s PipelineStats
	for i := range p.applied {
		s.Applied[i] = p.applied[i].Load()
	}
	s.Fenced, s.Held, s.Errors = p.fenced.Load(), p.held.Load(), p.errors.Load()
	return s
}
