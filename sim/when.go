package sim

import (
	"slices"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/oracle"
)

// whenWait is a targeted worker waiting, in one window, for the state its
// worker fault is aimed at.
type whenWait struct {
	fault    int
	worker   string
	win      faults.Window
	targeted int
}

// armWhen starts window win of the i-th fault, a worker fault aimed at a
// state: each targeted worker in the state now is struck now; the others
// wait for it (whenBegan) until the window ends (endWhen).
func (w *world) armWhen(i int, f faults.Fault, win faults.Window) {
	var targets []*proc
	if f.Target.Name != "" {
		if p := w.procOf(f.Target.Name); p != nil {
			targets = []*proc{p}
		}
	} else {
		for _, p := range w.procs {
			if w.procRuns(p) {
				targets = append(targets, p)
			}
		}
	}
	for _, p := range targets {
		if w.procMidCall(p, f.Schedule.When.Dependency) {
			w.strikeProc(i, p)
			continue
		}
		w.waits = append(w.waits, whenWait{fault: i, worker: p.first, win: win, targeted: len(targets)})
	}
}

// procRuns reports whether process p runs a slot that is not retired.
func (w *world) procRuns(p *proc) bool {
	for _, s := range w.slots {
		if s.proc == p && !s.retired {
			return true
		}
	}
	return false
}

// procMidCall reports whether a slot of process p has a call in flight at
// dependency dep (midCall).
func (w *world) procMidCall(p *proc, dep string) bool {
	for _, s := range w.slots {
		if s.proc == p && w.midCall(s, dep) {
			return true
		}
	}
	return false
}

// midCall reports whether slot s holds a lease and has a call in flight at
// dependency dep: an attempt of a job calling dep that began (the
// simulator makes its call as the attempt begins) and whose answer has not
// come (it comes as the attempt ends, at doneAt).
func (w *world) midCall(s *slot, dep string) bool {
	return s.busy && !s.down && !s.retired && s.job.Dependency == dep && w.now() < s.doneAt && w.clk.Now().Before(s.lease.Expires)
}

// whenBegan strikes, as slot s begins an attempt, the faults whose window
// waits for s to be in the state the attempt puts it in.
func (w *world) whenBegan(s *slot) {
	for k := 0; k < len(w.waits); {
		wt := w.waits[k]
		f := &w.sc.Faults[wt.fault]
		if wt.worker != s.proc.first || w.now() < wt.win.From || w.now() >= wt.win.Until || !w.midCall(s, f.Schedule.When.Dependency) {
			k++
			continue
		}
		w.waits = slices.Delete(w.waits, k, k+1)
		w.strikeProc(wt.fault, s.proc)
	}
}

// endWhen ends window win of the i-th fault: the workers still waiting
// never reached the state in it.
func (w *world) endWhen(i int, win faults.Window) {
	w.waits = slices.DeleteFunc(w.waits, func(wt whenWait) bool {
		if wt.fault != i || wt.win != win {
			return false
		}
		w.misses = append(w.misses, oracle.MissOf(w.sc.Faults[i], wt.worker, wt.win, wt.targeted))
		return true
	})
}

// whenMisses are the run's misses: a drill's as its history recorded them,
// or the simulator's, those of windows still open at the end included
// once the run reached them (a run stopped early leaves its open windows
// out: they had no chance).
func (w *world) whenMisses() []oracle.Miss {
	out := slices.Clone(w.misses)
	for _, wt := range w.waits {
		if wt.win.Until <= w.now() || w.now() >= w.end {
			out = append(out, oracle.MissOf(w.sc.Faults[wt.fault], wt.worker, wt.win, wt.targeted))
		}
	}
	return out
}
