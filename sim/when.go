package sim

import (
	"fmt"
	"slices"
	"strings"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
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
	var targets []string
	if f.Target.Name != "" {
		targets = []string{f.Target.Name}
	} else {
		for _, s := range w.slots {
			if !s.retired {
				targets = append(targets, s.name)
			}
		}
	}
	for _, name := range targets {
		if s := w.slotNamed(name); s != nil && w.midCall(s, f.Schedule.When.Dependency) {
			w.strikeSlot(i, s)
			continue
		}
		w.waits = append(w.waits, whenWait{fault: i, worker: name, win: win, targeted: len(targets)})
	}
}

// slotNamed is the worker slot named name that is not retired, or nil.
func (w *world) slotNamed(name string) *slot {
	for _, s := range w.slots {
		if s.name == name && !s.retired {
			return s
		}
	}
	return nil
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
		if wt.worker != s.name || w.now() < wt.win.From || w.now() >= wt.win.Until || !w.midCall(s, f.Schedule.When.Dependency) {
			k++
			continue
		}
		w.waits = slices.Delete(w.waits, k, k+1)
		w.strikeSlot(wt.fault, s)
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
	if w.judge != nil {
		return w.judge.h.Misses
	}
	out := slices.Clone(w.misses)
	for _, wt := range w.waits {
		if wt.win.Until <= w.now() || w.now() >= w.end {
			out = append(out, oracle.MissOf(w.sc.Faults[wt.fault], wt.worker, wt.win, wt.targeted))
		}
	}
	return out
}

// whenChecks adds to res what the misses of the faults aimed at a state
// say. A fault that requires hits fails when it never hit, or when one of
// its windows struck none of the workers it waited for, and its
// expectation names every miss; any other miss is a warning. Neither is
// ever a silent pass: a fault that did not find its state did not test
// what it was written for.
func whenChecks(res *reports.Result, sc *scenarios.Scenario, misses []oracle.Miss, stopped string) {
	for _, f := range sc.Faults {
		if f.Schedule.When == nil || f.Target.Kind != faults.Worker {
			continue
		}
		var texts []string
		whole := false
		count := map[[2]int64]int{}
		for _, m := range misses {
			if m.Fault != f.Name {
				continue
			}
			texts = append(texts, m.String())
			k := [2]int64{m.FromMs, m.UntilMs}
			count[k]++
			whole = whole || count[k] >= m.Targeted
		}
		name := "fault " + f.Name + " hits at least once (requireHits)"
		i := slices.IndexFunc(res.Expectations, func(e reports.Expectation) bool { return e.Name == name })
		switch {
		case f.RequireHits && i >= 0:
			e := &res.Expectations[i]
			e.Expected = fmt.Sprintf("≥ 1 hit, and every window finding a targeted worker %s", f.Schedule.When)
			if len(texts) > 0 {
				e.Actual += "; " + strings.Join(texts, "; ")
			}
			if whole {
				e.Verdict = reports.Failed
			}
		case stopped == "":
			for _, t := range texts {
				res.Warnings = append(res.Warnings, fmt.Sprintf("fault %s (%s on %s) %s, so it did not strike it there (requireHits: true makes a window that strikes no worker a failure)",
					f.Name, f.Model.Name(), f.Target, t))
			}
		}
	}
}
