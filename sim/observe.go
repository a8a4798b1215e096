package sim

import (
	"fmt"

	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/degrade"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/store"
)

// observe is the store's Observer: the ledger, and a wake for idle workers.
func (w *world) observe(e disposition.Event) {
	if w.rec != nil {
		w.recordEvent(e)
	}
	w.led.Observe(e)
	if e.To == disposition.Queued && len(w.idle) > 0 {
		w.kick = true
	}
}

// overflow is the store's OnOverflow: the ledger counts refusals, and the
// DLQ monitor hears of it at once, whenever it happens.
func (w *world) overflow(o store.Overflow) {
	if w.rec != nil {
		w.rec.hw.Overflow(oracle.Overflow{AtMs: o.At.Sub(w.start).Milliseconds(), JobID: o.JobID, Policy: o.Policy.String(),
			Capacity: o.Capacity, Evicted: o.Evicted, Held: o.Held})
	}
	if o.Policy == store.Reject {
		w.led.Refuse(o.JobID)
		if r := w.led.Job(o.JobID); r != nil {
			w.led.Note(r, "a full DLQ refused the dead letter (capacity %d)", o.Capacity)
		}
	}
	if w.mon != nil {
		w.mon.Overflow(o)
	}
}

// kept is the pipeline's OnKept: the DLQ monitor hears at once of a dead
// letter kept in a worker's memory (the held set full, or the store away).
func (w *world) kept(j job.Job, err error) {
	if w.mon != nil {
		w.mon.Kept(j, err)
	}
}

func (w *world) breakerChanged(br *breakerRun, t degrade.Transition) {
	w.chk.Breakers.Transition(t.At.Sub(w.start), br.worker, br.name, t.From.String(), t.To.String(), t.Reason)
	if w.rec != nil {
		tr := w.chk.Breakers.Transitions()
		w.recordBreaker(tr[len(tr)-1])
	}
	w.alerter.BreakerChanged(t)
	if t.From == degrade.Open {
		w.kick = true // its process's lanes may have opened
	}
	if _, ok := br.b.(*degrade.Breaker); !ok && t.To == degrade.Closed {
		w.drainAll()
	}
}

// drainAll empties the fallback queue (for a team's breaker, which has no
// reference fallback to drain it).
func (w *world) drainAll() {
	for {
		_, more, err := w.backend.DrainBatch(w.ctx, w.clk.Now(), 100)
		if err != nil {
			w.errs = append(w.errs, fmt.Errorf("drain the fallback queue: %w", err))
			return
		}
		if !more {
			return
		}
	}
}

// deliver records a notification a sink accepted.
func (w *world) deliver(receiver string, n alert.Notification) {
	w.chk.Deliver(receiver, n)
}

// sample records one point of the time series and checks the ledger
// against the store's own counts.
func (w *world) sample() {
	if !w.chk.Sampler.Sample(w.now(), w.led, w.breakerStates) {
		return
	}
	w.reconcile(false)
}

// breakerStates yields each breaker's name and state, for the series and
// the probes.
func (w *world) breakerStates(yield func(string, degrade.State) bool) {
	if len(w.procs) > 1 {
		// A breaker per process: its state across the fleet, as the
		// oracle reads a drill's.
		for _, bc := range w.sc.System.Breakers {
			if !yield(bc.Config.Name, w.chk.Breakers.State(bc.Config.Name)) {
				return
			}
		}
		return
	}
	for _, br := range w.breakers {
		if !yield(br.name, br.b.State()) {
			return
		}
	}
}

// reconcile compares the ledger with the store's counts (and, at the end,
// its DLQ listing): oracle.Reconcile, the history recording each count.
func (w *world) reconcile(full bool) {
	c, st, ok := oracle.Reconcile(w.ctx, w.led, w.backend, full)
	if ok && w.rec != nil {
		w.recordSnapshot(c, st)
	}
}
