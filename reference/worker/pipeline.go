package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/internal/mutant"
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

// Holder parks decided dead letters the DLQ could not take, and writes them
// when it can: dlq.Store implements it (see dlq.Store.Hold, FlushHeld).
type Holder interface {
	Hold(ctx context.Context, l queue.Lease, e dlq.Entry, now time.Time) error
	FlushHeld(ctx context.Context, now time.Time, limit int) (dlq.FlushResult, error)
}

// Heartbeater extends a lease: queue.Queue implements it. The pipeline
// keeps the leases of the dead letters it holds in memory alive with it.
type Heartbeater interface {
	Heartbeat(ctx context.Context, l queue.Lease, now time.Time, ttl time.Duration) (queue.Lease, error)
}

var (
	_ Mover        = queue.Queue(nil)
	_ DeadLetterer = dlq.Store(nil)
	_ Holder       = dlq.Store(nil)
	_ Heartbeater  = queue.Queue(nil)
)

// parkTimeout bounds the park of a dead letter whose DLQ write used up
// the caller's deadline.
const parkTimeout = 5 * time.Second

// ErrNoEntry: a DeadLetter outcome without its entry (not one Complete
// made); nothing is written.
var ErrNoEntry = errors.New("dead-letter outcome has no entry")

// ErrKept: a decided dead letter neither the DLQ nor the held set took (the
// store could not be reached, or both are full). The pipeline keeps it in
// memory, its lease heartbeated, and RetryKept parks it later: the handler
// does not run again. Only if the process stops, or the lease is lost, does
// the job come back.
var ErrKept = errors.New("dead letter kept by the worker until the store takes it")

// Apply carries out o on the stores for the job held by lease l, at now. It
// returns nil when the move happened. Otherwise nothing moved and the job is
// still where the lease left it, and the error says why:
//
//   - queue.ErrLeaseLost: the lease is not the job's current one (it
//     expired and the job was recovered, perhaps leased again). The
//     completion is dropped; it can never be applied twice.
//   - dlq.ErrFull: the DLQ is full and refuses new entries, and the store
//     had no room to park the job in its held set (a store that parks a
//     refused dead letter answers nil, see dlq.AddResult.Held). The job
//     stays leased. Pipeline.Apply then keeps the dead letter (ErrKept) so
//     that its handler does not run again.
//   - anything else: the store failed; the job stays leased (for a dead
//     letter, Pipeline.Apply parks or keeps it).
func Apply(ctx context.Context, q Mover, d DeadLetterer, l queue.Lease, o Outcome, now time.Time) error {
	_, err := apply(ctx, q, d, l, &o, now)
	return err
}

// apply is Apply with the outcome by reference: it is large, and the
// pipeline passes it on without copying it again. held says the store
// parked a dead letter in its held set (dlq.AddResult.Held).
func apply(ctx context.Context, q Mover, d DeadLetterer, l queue.Lease, o *Outcome, now time.Time) (held bool, err error) {
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
		var r dlq.AddResult
		r, err = d.DeadLetter(ctx, l, *o.Entry, now)
		held = r.Held
	case Release:
		err = q.Release(ctx, l, o.Job, now)
	case Divert:
		err = q.Divert(ctx, l, o.Job, now)
	default:
		err = fmt.Errorf("unknown action %d", uint8(o.Action))
	}
	if err != nil {
		return false, fmt.Errorf("%s job %s: %w", o.Action, o.Job.ID, err)
	}
	return held, nil
}

// History keeps the failures of a job's attempts between them, keyed by job
// ID (see the package documentation): a MemoryHistory for one process, or
// the store's (redisstore.Store.History) for a fleet, whose processes run
// one job's attempts between them. Implementations are safe for
// concurrent use.
type History interface {
	// Failures returns the job's recorded failures, oldest first, as a
	// slice the caller may keep and append to but must not modify in
	// place.
	Failures(ctx context.Context, jobID string) ([]dlq.Failure, error)
	// Record appends one failure.
	Record(ctx context.Context, jobID string, f dlq.Failure) error
	// Forget drops the job's failures.
	Forget(ctx context.Context, jobID string) error
}

// MemoryHistory is a History in the process's memory. It holds the jobs
// between a failed attempt and their success or death; a job that succeeds
// first time costs nothing.
type MemoryHistory struct {
	mu sync.Mutex
	// solo says one goroutine alone uses the history (see Unshared): it
	// takes no lock.
	solo bool
	jobs map[string][]dlq.Failure
	// block is where new failure slices are cut from (see Record): one
	// allocation for many jobs' histories.
	block []dlq.Failure
}

// historyBlock is how many failures a block of a MemoryHistory holds. A
// block lives while any history cut from it does: a history lasts from a
// job's first failure to its success or death, so the jobs of a block,
// which failed about together, mostly let it go about together too.
const historyBlock = 128

var _ History = (*MemoryHistory)(nil)

// NewMemoryHistory returns an empty history.
func NewMemoryHistory() *MemoryHistory {
	return &MemoryHistory{jobs: make(map[string][]dlq.Failure)}
}

// Unshared tells the history that from now on one goroutine alone uses it
// (the simulator's world, which runs every worker in one goroutine): it
// then takes no lock. Call it before the history is used; a history told
// so must not be shared between goroutines.
func (h *MemoryHistory) Unshared() {
	h.mu.Lock()
	h.solo = true
	h.mu.Unlock()
}

// lock takes the lock, unless the history is unshared.
func (h *MemoryHistory) lock() {
	if !h.solo {
		h.mu.Lock()
	}
}

// unlock releases what lock took.
func (h *MemoryHistory) unlock() {
	if !h.solo {
		h.mu.Unlock()
	}
}

// Failures returns the job's failures without copying them: the slice is
// capped at its length, so an append by the caller copies, and Record only
// ever appends beyond it.
func (h *MemoryHistory) Failures(_ context.Context, jobID string) ([]dlq.Failure, error) {
	h.lock()
	fs := h.jobs[jobID]
	h.unlock()
	if len(fs) == 0 {
		return nil, nil
	}
	return fs[:len(fs):len(fs)], nil
}

// Record appends f to the job's failures. A history that must grow is cut
// from the current block, twice its size, rather than allocated on its own:
// the simulator records hundreds of thousands of first failures a run. A
// slice handed out by Failures is capped at its length, so what Record
// writes beyond it is never seen through it.
func (h *MemoryHistory) Record(_ context.Context, jobID string, f dlq.Failure) error {
	h.lock()
	fs := h.jobs[jobID]
	if len(fs) == cap(fs) {
		fs = h.grow(fs)
	}
	h.jobs[jobID] = append(fs, f)
	h.unlock()
	return nil
}

// grow returns fs copied into a slice of twice its capacity (at least 1),
// cut from the block while the block has room; the caller holds the lock.
func (h *MemoryHistory) grow(fs []dlq.Failure) []dlq.Failure {
	n := max(2*cap(fs), 1)
	if n > historyBlock/4 {
		return append(make([]dlq.Failure, 0, n), fs...)
	}
	if len(h.block) < n {
		h.block = make([]dlq.Failure, historyBlock)
	}
	out := append(h.block[:0:n], fs...)
	h.block = h.block[n:]
	return out
}

// Forget drops the job's failures.
func (h *MemoryHistory) Forget(_ context.Context, jobID string) error {
	h.lock()
	delete(h.jobs, jobID)
	h.unlock()
	return nil
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
	// store made it: succeeded, scheduled for a retry, dead-lettered (by
	// Apply or by RetryKept), held, released, diverted. A fenced or failed
	// move is not heard, nor a held dead letter's write by FlushHeld,
	// which only the store's observer hears. (A store's own observer hears
	// these moves too, and the ones the pipeline does not make; a ledger
	// listens to the store's.)
	Observer disposition.Observer
	// OnDead, if set, is called once per death of a job: after its entry
	// was written to the DLQ, or parked with the job in the held set (its
	// fate is decided; the write follows). A dead letter that was fenced
	// off is not a death; the job comes back. One kept in memory (ErrKept)
	// is a death once RetryKept parks it.
	OnDead func(j job.Job, e dlq.Entry)
	// Holder parks the dead letters the DLQ cannot take; nil means the
	// DLQ's own, when it implements Holder (dlq.Store does).
	Holder Holder
	// Heartbeater keeps the leases of dead letters kept in memory alive;
	// nil means the Queue's own, when it implements Heartbeater.
	Heartbeater Heartbeater
	// LeaseTTL is the lease a kept dead letter's heartbeat asks for in
	// RetryKept (default DefaultLeaseTTL); a Runner asks for its own.
	LeaseTTL time.Duration
	// OnKept, if set, is called when a decided dead letter is kept in
	// memory (ErrKept), with why: the DLQ store could not be reached, or
	// the DLQ and the held set are both full (dlq.ErrHeldFull).
	OnKept func(j job.Job, err error)
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
	// Applied counts the outcomes carried out, by action (a dead letter
	// parked in the held set counts as carried out).
	Applied [maxAction + 1]uint64
	// Fenced counts completions refused because their lease was lost, and
	// Errors the other failed moves: in both cases nothing moved. Held
	// counts the dead letters parked in the store's held set (the DLQ full
	// or away), Kept those kept in memory (ErrKept).
	Fenced, Held, Kept, Errors uint64
	// HistoryErrors counts the failures the History could not record or
	// forget (a store that could not be reached): those entries lack them.
	HistoryErrors uint64
}

// KeptState is what became of a dead letter kept in memory.
type KeptState uint8

// The states RetryKept reports.
const (
	// KeptWritten: written to the DLQ.
	KeptWritten KeptState = iota + 1
	// KeptHeld: parked in the store's held set.
	KeptHeld
	// KeptFenced: its lease was lost; the job came back to its queue (it
	// will run again) and the pipeline let go of it.
	KeptFenced
)

// KeptResult is one dead letter that left the pipeline's memory.
type KeptResult struct {
	JobID string
	State KeptState
	// Since is when it was kept; Job and Entry are the dead letter's.
	Since time.Time
	Job   job.Job
	Entry dlq.Entry
	// Err is why it was let go (KeptFenced).
	Err error
}

// kept is a dead letter held in memory.
type kept struct {
	lease queue.Lease
	o     Outcome
	since time.Time
	// heldFull says the held set was full when last tried: only a Hold
	// is tried (the held set drains into the DLQ first, oldest first, and
	// a refused DeadLetter would count as another overflow).
	heldFull bool
}

// Pipeline is the core wired to the stores: it starts attempts, completes
// them and carries the outcomes out, keeping the failure history between
// attempts. It is what both the simulator and the Runner drive. It is safe
// for concurrent use; the hooks and the observer are called without any
// lock held, possibly concurrently from several workers.
type Pipeline struct {
	cfg     PipelineConfig
	history History

	applied                    [maxAction + 1]atomic.Uint64
	fenced, held, kept, errors atomic.Uint64
	historyErrors              atomic.Uint64

	// keptMu guards keep, the dead letters kept in memory, oldest first.
	keptMu sync.Mutex
	keep   []*kept
}

// NewPipeline returns a pipeline for cfg, or a *ConfigError.
func NewPipeline(cfg PipelineConfig) (*Pipeline, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &Pipeline{cfg: cfg, history: cfg.History}
	if p.history == nil || mutant.On("worker/history-per-process") {
		p.history = NewMemoryHistory()
	}
	if p.cfg.Holder == nil {
		p.cfg.Holder, _ = cfg.DLQ.(Holder)
	}
	if p.cfg.Heartbeater == nil {
		p.cfg.Heartbeater, _ = cfg.Queue.(Heartbeater)
	}
	if p.cfg.LeaseTTL <= 0 {
		p.cfg.LeaseTTL = DefaultLeaseTTL
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
	// A job the store counts no attempt of has no failure to look up (see
	// Apply): its first attempt costs the history nothing.
	if j.Attempts > 0 {
		fs, err := p.history.Failures(ctx, j.ID)
		if err != nil {
			return a, false, fmt.Errorf("the failure history of job %q: %w", j.ID, err)
		}
		a.History = fs
	}
	return a, true, nil
}

// Finish completes attempt a, whose handler returned err, and carries the
// outcome out with lease l, at now. The error is Apply's.
func (p *Pipeline) Finish(ctx context.Context, a Attempt, l queue.Lease, err error, now time.Time) (Outcome, error) {
	o := p.cfg.Core.Complete(ctx, a, err, now)
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
//
// A dead letter's fate is decided: its handler must not run again. When the
// DLQ is full (reject) the store parks it in its held set in the same step;
// when the DLQ cannot be reached, Apply parks it with the Holder. Either way
// Apply returns nil and the observer hears in-flight→held. When neither
// works (the store is away, or the held set is full too), Apply keeps the
// dead letter in memory, its lease heartbeated by RetryKept, and returns an
// error matching ErrKept: the job is still in flight, and RetryKept writes
// or parks it later.
func (p *Pipeline) Apply(ctx context.Context, l queue.Lease, o Outcome, now time.Time) error {
	return p.ApplyOutcome(ctx, l, &o, now)
}

// ApplyOutcome is Apply with the outcome by reference, which it reads and
// does not change: an outcome is large, and a driver that keeps its own
// (the simulator) spares a copy per attempt.
func (p *Pipeline) ApplyOutcome(ctx context.Context, l queue.Lease, o *Outcome, now time.Time) error {
	held, err := apply(ctx, p.cfg.Queue, p.cfg.DLQ, l, o, now)
	if err != nil && o.Action == DeadLetter && o.Entry != nil && !errors.Is(err, queue.ErrLeaseLost) && !errors.Is(err, job.ErrInvalid) {
		// The DLQ refused it with no room to park it, or was away.
		held, err = p.park(ctx, l, o, now, err)
		if mutant.On("worker/ack-instead-of-hold") {
			held, err = false, p.cfg.Queue.Ack(ctx, l, o.Job, now)
		}
	}
	return p.settled(ctx, o, now, held, err)
}

// acked is Apply for a Succeed outcome o whose ack the store answered with
// ack (nil: acked) in a step of its own choosing (queue.AckDequeuer: the
// ack and the next lease in one step).
func (p *Pipeline) acked(ctx context.Context, o *Outcome, now time.Time, ack error) error {
	if ack != nil {
		ack = fmt.Errorf("%s job %s: %w", o.Action, o.Job.ID, ack)
	}
	return p.settled(ctx, o, now, false, ack)
}

// settled counts and reports o after its move: err is the move's answer,
// held says a dead letter was parked in the held set.
func (p *Pipeline) settled(ctx context.Context, o *Outcome, now time.Time, held bool, err error) error {
	switch {
	case err == nil:
		if held && o.Action == DeadLetter {
			p.held.Add(1)
		}
	case errors.Is(err, queue.ErrLeaseLost):
		// The completion never happened as far as the job is concerned:
		// its failure is not part of its history either.
		p.fenced.Add(1)
		return err
	case errors.Is(err, ErrKept):
		p.kept.Add(1)
		if p.cfg.OnKept != nil {
			p.cfg.OnKept(o.Job, err)
		}
		return err
	default:
		// The job stays leased and comes back; the failure was real. A
		// job the store still counts no attempt of comes back without
		// one, and its history is not looked up (Start): its first
		// failure is not kept either.
		p.errors.Add(1)
		if o.Failed() && o.Job.Attempts > 1 {
			p.record(ctx, o.Job.ID, o.Failure)
		}
		return err
	}
	p.applied[o.Action].Add(1)
	switch o.Action {
	case Retry:
		p.record(ctx, o.Job.ID, o.Failure)
	case Succeed, DeadLetter:
		if o.Job.Attempts > 1 { // a first attempt has no history to forget
			p.forget(ctx, o.Job.ID)
		}
	}
	if p.cfg.Observer != nil {
		ev := o.Event(now)
		if held {
			ev.To, ev.Reason = disposition.Held, disposition.HeldBack
		}
		p.cfg.Observer(ev)
	}
	if o.Action == DeadLetter && p.cfg.OnDead != nil {
		p.cfg.OnDead(o.Job, *o.Entry)
	}
	return nil
}

// record appends a failure to the job's history; a failure the history
// could not take is counted (PipelineStats.HistoryErrors): the job's DLQ
// entry will lack it.
func (p *Pipeline) record(ctx context.Context, id string, f dlq.Failure) {
	if err := p.history.Record(ctx, id, f); err != nil {
		p.historyErrors.Add(1)
	}
}

// forget drops the job's history; one the history could not drop is
// counted (PipelineStats.HistoryErrors).
func (p *Pipeline) forget(ctx context.Context, id string) {
	if err := p.history.Forget(ctx, id); err != nil {
		p.historyErrors.Add(1)
	}
}

// park parks a dead letter whose write failed with cause: with the Holder,
// unless the held set is full; else in memory. It reports whether the job
// is in the held set, or the lease's loss, or an error matching ErrKept.
func (p *Pipeline) park(ctx context.Context, l queue.Lease, o *Outcome, now time.Time, cause error) (bool, error) {
	if p.cfg.Holder != nil && !errors.Is(cause, dlq.ErrHeldFull) {
		if ctx.Err() != nil && !errors.Is(context.Cause(ctx), ErrShutdown) {
			// The DLQ's write used up the call's deadline (a connection
			// that hung rather than refused): the park, on the queue
			// store, gets a deadline of its own, or the dead letter would
			// be kept in memory for want of time, not of a store.
			hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), parkTimeout)
			defer cancel()
			ctx = hctx
		}
		herr := p.cfg.Holder.Hold(ctx, l, *o.Entry, now)
		switch {
		case herr == nil:
			return true, nil
		case errors.Is(herr, queue.ErrLeaseLost):
			return false, herr
		}
		cause = fmt.Errorf("%w; hold: %w", cause, herr)
	}
	p.keptMu.Lock()
	p.keep = append(p.keep, &kept{lease: l, o: *o, since: now, heldFull: errors.Is(cause, dlq.ErrHeldFull)})
	p.keptMu.Unlock()
	return false, fmt.Errorf("%w: %w", ErrKept, cause)
}

// Kept returns how many dead letters the pipeline keeps in memory.
func (p *Pipeline) Kept() int {
	p.keptMu.Lock()
	defer p.keptMu.Unlock()
	return len(p.keep)
}

// DropKept lets go of the dead letter of job id kept in memory, as the
// process keeping it does when it dies: nothing is written, its lease is no
// longer heartbeated, and the job comes back when that lease expires (and
// runs again: why a kept dead letter is the last resort). It returns the
// lease as last heartbeated, and false when the pipeline keeps no dead
// letter of id. The simulator calls it for a worker that crashes.
func (p *Pipeline) DropKept(id string) (queue.Lease, bool) {
	p.keptMu.Lock()
	defer p.keptMu.Unlock()
	for i, k := range p.keep {
		if k.o.Job.ID == id {
			p.keep = slices.Delete(p.keep, i, i+1)
			return k.lease, true
		}
	}
	return queue.Lease{}, false
}

// RetryKept tries again, oldest first, to hand the dead letters kept in
// memory to the store, at now: it heartbeats each lease that has less than
// half of LeaseTTL left (call it at least every LeaseTTL/3), then writes the
// dead letter (DeadLetter, which parks it when the DLQ is full) or parks it
// (Hold; only Hold while the held set was full, so that the older held
// entries go first and a full DLQ is not refused again every round). After
// the first store failure of a round it only heartbeats. It returns the
// dead letters that left memory; OnDead hears those written or parked. Safe
// to call from one goroutine at a time.
func (p *Pipeline) RetryKept(ctx context.Context, now time.Time) []KeptResult {
	return p.retryKept(ctx, now, p.cfg.LeaseTTL)
}

// retryKept is RetryKept with the lease its heartbeats ask for: the
// Runner's own LeaseTTL.
func (p *Pipeline) retryKept(ctx context.Context, now time.Time, ttl time.Duration) []KeptResult {
	p.keptMu.Lock()
	todo := slices.Clone(p.keep)
	p.keptMu.Unlock()
	var (
		out  []KeptResult
		left []*kept // out's dead letters, in the same order
	)
	gone := map[*kept]bool{}
	down := false
	for _, k := range todo {
		res, done := p.retryOne(ctx, k, now, ttl, &down)
		if done {
			gone[k] = true
			out = append(out, res)
			left = append(left, k)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	p.keptMu.Lock()
	p.keep = slices.DeleteFunc(p.keep, func(k *kept) bool { return gone[k] })
	p.keptMu.Unlock()
	for i, r := range out {
		k := left[i]
		switch r.State {
		case KeptFenced:
			// As Apply does for a move that was not written: the failure
			// was real, and the job comes back.
			if k.o.Failed() && k.o.Job.Attempts > 1 {
				p.record(ctx, r.JobID, k.o.Failure)
			}
		default:
			p.forget(ctx, r.JobID)
			p.applied[DeadLetter].Add(1)
			if r.State == KeptHeld {
				p.held.Add(1)
			}
			if p.cfg.Observer != nil {
				// The pipeline made this move: its observer hears it, as
				// Apply's.
				ev := k.o.Event(now)
				if r.State == KeptHeld {
					ev.To, ev.Reason = disposition.Held, disposition.HeldBack
				}
				p.cfg.Observer(ev)
			}
			if p.cfg.OnDead != nil {
				p.cfg.OnDead(r.Job, r.Entry)
			}
		}
	}
	return out
}

// retryOne is one kept dead letter's turn in RetryKept.
func (p *Pipeline) retryOne(ctx context.Context, k *kept, now time.Time, ttl time.Duration, down *bool) (KeptResult, bool) {
	res := KeptResult{JobID: k.o.Job.ID, Since: k.since, Job: k.o.Job, Entry: *k.o.Entry}
	if p.cfg.Heartbeater != nil && k.lease.Expires.Sub(now) < ttl/2 {
		nl, err := p.cfg.Heartbeater.Heartbeat(ctx, k.lease, now, ttl)
		switch {
		case err == nil:
			k.lease = nl
		case errors.Is(err, queue.ErrLeaseLost):
			res.State, res.Err = KeptFenced, err
			return res, true
		}
	}
	if *down {
		return res, false
	}
	var err error
	if !k.heldFull {
		var r dlq.AddResult
		r, err = p.cfg.DLQ.DeadLetter(ctx, k.lease, *k.o.Entry, now)
		if err == nil {
			res.State = KeptWritten
			if r.Held {
				res.State = KeptHeld
			}
			return res, true
		}
	}
	if (k.heldFull || !errors.Is(err, queue.ErrLeaseLost) && !errors.Is(err, dlq.ErrHeldFull)) && p.cfg.Holder != nil {
		err = p.cfg.Holder.Hold(ctx, k.lease, *k.o.Entry, now)
		if err == nil {
			res.State = KeptHeld
			return res, true
		}
	}
	if errors.Is(err, queue.ErrLeaseLost) {
		res.State, res.Err = KeptFenced, err
		return res, true
	}
	k.heldFull = errors.Is(err, dlq.ErrHeldFull)
	*down = true
	return res, false
}

// FlushHeld writes up to limit dead letters from the store's held set into
// the DLQ, oldest first (see dlq.Store.FlushHeld); a store without a held
// set flushes nothing. The store's observer hears the moves.
func (p *Pipeline) FlushHeld(ctx context.Context, now time.Time, limit int) (dlq.FlushResult, error) {
	if p.cfg.Holder == nil {
		return dlq.FlushResult{}, nil
	}
	res, err := p.cfg.Holder.FlushHeld(ctx, now, limit)
	if err != nil {
		return res, fmt.Errorf("flush held dead letters: %w", err)
	}
	return res, nil
}

// Stats returns a snapshot of the pipeline's counters.
func (p *Pipeline) Stats() PipelineStats {
	var s PipelineStats
	for i := range p.applied {
		s.Applied[i] = p.applied[i].Load()
	}
	s.Fenced, s.Held, s.Kept, s.Errors = p.fenced.Load(), p.held.Load(), p.kept.Load(), p.errors.Load()
	s.HistoryErrors = p.historyErrors.Load()
	return s
}
