package sim

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/worker"
)

// dispatch gives idle workers the jobs at the heads of the queues their
// processes' lanes let them lease from (worker.Lanes).
func (w *world) dispatch() {
	w.kick = false
	w.round++
	now := w.clk.Now()
	// The idle slots of processes with closed lanes that found nothing,
	// put back on the stack, in order, when the round ends.
	var dry []*slot
	defer func() {
		for i := len(dry) - 1; i >= 0; i-- {
			w.idle = append(w.idle, dry[i])
		}
	}()
	for len(w.idle) > 0 && w.led.Count(disposition.Queued) > 0 {
		s := w.idle[len(w.idle)-1]
		if !s.idle || s.busy || s.down || s.retired || s.stallUntil > w.now() {
			// Off the stack; a stalled slot's stall timer puts it back.
			w.idle = w.idle[:len(w.idle)-1]
			s.idle = false
			continue
		}
		if s.proc.dry == w.round {
			w.idle = w.idle[:len(w.idle)-1]
			dry = append(dry, s)
			continue
		}
		got, skipped := false, false
		for range w.queues {
			q := w.queues[w.rr]
			w.rr = (w.rr + 1) % len(w.queues)
			if !s.proc.lanes.Open(q) {
				skipped = true
				continue
			}
			j, l, ok, err := w.backend.Dequeue(w.ctx, q, now, w.sc.Workers.LeaseTTL)
			if err != nil {
				w.errs = append(w.errs, fmt.Errorf("dequeue from %s: %w", q, err))
				return
			}
			if ok {
				got = true
				w.idle = w.idle[:len(w.idle)-1]
				s.idle = false
				w.begin(s, j, l)
				break
			}
		}
		if got {
			continue
		}
		if !skipped {
			return // every queue is empty
		}
		// Only this process's closed lanes hold jobs: another process's
		// slots may lease them.
		s.proc.dry = w.round
		w.idle = w.idle[:len(w.idle)-1]
		dry = append(dry, s)
	}
}

// begin starts an attempt of job j on slot s.
func (w *world) begin(s *slot, j job.Job, l queue.Lease) {
	now := w.clk.Now()
	off := w.now()
	r := w.led.Last() // the Leased event just went through the ledger
	if r == nil || r.ID() != j.ID {
		r = w.led.Job(j.ID)
	}
	a, run, err := s.proc.pipeline.Start(w.ctx, j, l, now)
	if err != nil {
		// The job stays leased and comes back when the lease expires.
		if r != nil {
			w.led.Note(r, "attempt could not start: %v", err)
		}
		w.at(l.Expires.Sub(w.start), w.recoverFn)
		w.setIdle(s)
		return
	}
	if !run {
		w.setIdle(s)
		return
	}
	var t *taskGen
	if r != nil && int(r.TaskIndex()) < len(w.tasks) {
		t = w.tasks[r.TaskIndex()]
	} else {
		t = w.byTask[j.Task]
	}
	var eff faults.Effect
	if j.Dependency != "" {
		target := faults.Target{Kind: faults.Dependency, Name: j.Dependency}
		if t != nil && t.Dependency == j.Dependency {
			target = t.target
		}
		eff = w.inj.Call(target, dependencyCall(off, j))
		w.noteCall(j.Dependency, off)
		if w.rec != nil {
			w.recordCall(off, j, eff)
		}
	}
	slow := w.inj.Call(faults.Target{Kind: faults.Store}, faults.Call{At: off, JobID: j.ID})
	if eff.Err == nil || eff.Charged {
		if t != nil && t.dep != nil && t.dep.Name == j.Dependency {
			if t.dep.Payment && r != nil {
				w.chk.Charge(r, j.IdempotencyKey, *t.dep)
			}
		} else if dep, ok := w.deps[j.Dependency]; ok && dep.Payment && r != nil {
			w.chk.Charge(r, j.IdempotencyKey, dep)
		}
	}
	d := eff.Latency + slow.Latency
	if t != nil {
		d += t.Service
		if t.ServiceJitter > 0 {
			// In milliseconds before doubling: twice a jitter near the
			// longest duration does not fit in nanoseconds.
			ms := int64(t.ServiceJitter / time.Millisecond)
			d += time.Duration(t.svc.Int64N(2*ms+1))*time.Millisecond - t.ServiceJitter
		}
	}
	d = max(d, 0)
	s.busy, s.job, s.lease, s.att, s.eff, s.rec = true, j, l, a, eff, r
	s.gen++
	s.doneAt = off + d
	s.timer = w.rearm(s.timer, s.doneAt, s.fire)
	// A long attempt keeps its lease alive, as the live runner's
	// heartbeats do (every third of the lease).
	if every := w.sc.Workers.LeaseTTL / 3; d > every {
		gen := s.gen
		var beat func()
		beat = func() {
			if !s.busy || s.gen != gen {
				return
			}
			if s.stallUntil > w.now() { // a stalled process sends nothing
				w.at(s.stallUntil, beat)
				return
			}
			if nl, err := w.backend.Heartbeat(w.ctx, s.lease, w.clk.Now(), w.sc.Workers.LeaseTTL); err == nil {
				s.lease = nl
			}
			if next := w.now() + every; next < s.doneAt {
				w.at(next, beat)
			}
		}
		w.at(off+every, beat)
	}
	if len(w.waits) > 0 {
		w.whenBegan(s)
	}
}

// complete ends the attempt on slot s.
func (w *world) complete(s *slot) {
	if !s.busy {
		return
	}
	now := w.clk.Now()
	off := w.now() // now's offset
	if s.stallUntil > off {
		s.timer = w.rearm(s.timer, s.stallUntil, s.fire)
		return
	}
	s.busy = false
	o := s.proc.core.CompleteAttempt(w.ctx, &s.att, s.eff.Err, now)
	// The record is looked up again by the job's ID: a stalled worker's job
	// may have been recovered and finished elsewhere meanwhile, and its
	// record reused for another job.
	r := s.rec
	if r == nil || r.ID() != s.job.ID {
		r = w.led.Job(s.job.ID)
	}
	if r != nil {
		if w.chk.Attempt(r, s.eff.Fault, s.eff.Class, &o) {
			w.chk.Critical(r, o.Fingerprint)
		}
	}
	w.attemptEnded(s, r, &o)
	result := w.apply(s.proc, s.lease, &o, r, now)
	if w.rec != nil {
		w.recordAttemptOf(s, &o, result)
	}
	if r != nil && r.Kept() {
		// Those no longer kept (written or parked since) are let go of
		// here, so the list stays as short as what the worker keeps.
		s.kept = slices.DeleteFunc(s.kept, func(id string) bool { k := w.led.Job(id); return k == nil || !k.Kept() })
		s.kept = append(s.kept, r.ID())
	}
	s.rec, s.att, s.job = nil, worker.Attempt{}, job.Job{}
	w.setIdle(s)
}

// apply carries an outcome out. A dead letter the DLQ refused (full, reject)
// or could not take (its store away) is parked in the store's held set by
// the pipeline, or kept by it in memory when the held set is full too; its
// handler never runs again, and retryHolds writes it later. now is the
// clock's now (the attempt's end): o is large, and passed by reference.
//
// It returns what became of the move, as a drill's worker reports it:
// applied, fenced, kept or failed.
func (w *world) apply(p *proc, l queue.Lease, o *worker.Outcome, r *oracle.Record, now time.Time) string {
	err := p.pipeline.ApplyOutcome(w.ctx, l, o, now)
	switch {
	case err == nil:
		w.led.Settle(r, true)
		if o.Action == worker.Retry {
			// The wake is on a whole millisecond, the store's resolution
			// (Redis scripts get integer milliseconds).
			w.wake(ceilMs(o.At.Sub(w.start)), w.forwardFn)
		}
		if o.Action == worker.DeadLetter && r != nil && r.State() == disposition.Held {
			w.led.Note(r, "the DLQ did not take the dead letter: it is held with its entry; only the write is retried")
			w.scheduleHolds()
		}
		return "applied"
	case errors.Is(err, queue.ErrLeaseLost):
		w.led.Settle(r, false)
		w.led.AddFenced()
		if r != nil {
			w.led.Note(r, "late completion (%s) fenced off: the lease was lost", o.Action)
		}
		return "fenced"
	case errors.Is(err, worker.ErrKept):
		// Neither the DLQ nor the held set took it: the worker keeps it,
		// its lease alive. The verdict stays pending until it is parked.
		w.led.Keep(r)
		if r != nil {
			w.led.Note(r, "the dead letter is kept by the worker, its lease kept alive (%v)", err)
		}
		w.scheduleHolds()
		return "kept"
	default:
		w.led.Settle(r, false)
		if r != nil {
			w.led.Note(r, "the store failed (%v): the job comes back when its lease expires", err)
		}
		w.at(l.Expires.Sub(w.start), w.recoverFn)
		return "failed"
	}
}

// ceilMs rounds d up to a whole millisecond.
func ceilMs(d time.Duration) time.Duration {
	if r := d % time.Millisecond; r > 0 {
		d += time.Millisecond - r
	}
	return d
}

// holdEvery is how often held dead letters are written and kept ones
// retried (their leases heartbeated).
func (w *world) holdEvery() time.Duration {
	return max(min(time.Second, w.sc.Workers.LeaseTTL/3), time.Millisecond)
}

// scheduleHolds wakes retryHolds while dead letters are held or kept.
func (w *world) scheduleHolds() {
	if w.holdTimerSet || w.led.Count(disposition.Held) == 0 && w.keptCount() == 0 {
		return
	}
	w.holdTimerSet = true
	w.at(w.now()+w.holdEvery(), w.retryHolds)
}

// retryHolds hands the kept dead letters to the store and writes the held
// ones to the DLQ, oldest first.
func (w *world) retryHolds() {
	w.holdTimerSet = false
	now := w.clk.Now()
	for _, p := range w.procs {
		for _, k := range p.pipeline.RetryKept(w.ctx, now) {
			r := w.led.Job(k.JobID)
			if r == nil {
				continue
			}
			if k.State == worker.KeptFenced {
				w.led.Settle(r, false)
				w.led.AddFenced()
				w.led.Note(r, "kept dead letter let go: its lease was lost")
				continue
			}
			r.Unkeep()
		}
	}
	if w.led.Count(disposition.Held) > 0 {
		for {
			// The held set is the store's: any process writes it.
			res, err := w.procs[0].pipeline.FlushHeld(w.ctx, now, 1000)
			if err != nil || res.Full || len(res.Written) < 1000 {
				break
			}
		}
	}
	w.scheduleHolds()
}

// forward moves due retries to their queues.
func (w *world) forward() {
	for {
		n, err := w.backend.ForwardDue(w.ctx, w.clk.Now(), 1000)
		if err != nil {
			w.errs = append(w.errs, fmt.Errorf("forward due retries: %w", err))
			return
		}
		if n < 1000 {
			return
		}
	}
}

// recover puts jobs whose leases expired back on their queues.
func (w *world) recover() {
	for {
		n, err := w.backend.RecoverExpired(w.ctx, w.clk.Now(), 1000)
		if err != nil {
			w.errs = append(w.errs, fmt.Errorf("recover expired leases: %w", err))
			return
		}
		if n < 1000 {
			return
		}
	}
}
