package sim

import (
	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/retry"
	"github.com/faultline/faultline/reports"
)

// result assembles the run's report: the oracle's checkers (oracle.Checks)
// put it together from what they heard and what the engine alone knows.
func (w *world) result() *reports.Result {
	e := oracle.End{
		Errs: w.errs, Made: w.made, Events: w.events, Steps: w.stepLog,
		Store: w.backend, Entry: w.entry, Faults: w.faultReport(), Misses: w.whenMisses(), Calls: w.calls.at,
	}
	if w.rec != nil {
		e.Counted = w.recordSnapshot
	}
	if a, ok := w.alerter.(interface{ Stats() alert.Stats }); ok {
		e.Alerter = oracle.AlerterOf(a.Stats())
	}
	// The fleet's budgets, summed: what each process's policy decided.
	for _, pr := range w.procs {
		p, ok := pr.policy.p.(interface{ Stats() retry.Stats })
		if !ok {
			continue
		}
		st := p.Stats()
		if e.Budget == nil {
			e.Budget = &st
			continue
		}
		b := e.Budget
		b.Decisions += st.Decisions
		for i := range b.ByAction {
			b.ByAction[i] += st.ByAction[i]
		}
		for i := range b.ByReason {
			b.ByReason[i] += st.ByReason[i]
		}
		b.BudgetDelayed += st.BudgetDelayed
		b.BudgetDelay += st.BudgetDelay
		b.BudgetExceeded += st.BudgetExceeded
		b.Dependencies = max(b.Dependencies, st.Dependencies)
	}
	return w.chk.Result(w.ctx, e)
}

func (w *world) faultReport() []reports.Fault {
	out := []reports.Fault{}
	stats := w.inj.Stats()
	wins := w.inj.Windows(w.end, maxWindows)
	for i, s := range stats {
		f := reports.Fault{Name: s.Name, Target: s.Target.String(), Model: s.Model, Hits: s.Hits, Windows: [][2]int64{}}
		if i < len(w.sc.Faults) && w.sc.Faults[i].Name == s.Name {
			f.RequireHits = w.sc.Faults[i].RequireHits
		}
		if s.Class != 0 {
			f.Class = s.Class.String()
		}
		if s.Hits > 0 {
			f.FirstHitMs, f.LastHitMs = s.FirstHit.Milliseconds(), s.LastHit.Milliseconds()
		}
		if i < len(wins) {
			for _, win := range wins[i].Windows {
				f.Windows = append(f.Windows, [2]int64{win.From.Milliseconds(), win.Until.Milliseconds()})
			}
			f.Truncated = wins[i].Truncated
		}
		out = append(out, f)
	}
	return out
}
