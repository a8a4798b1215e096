package sim

import (
	"errors"

	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/retry"
	"github.com/faultline/faultline/reports"
)

// result assembles the run's report model.
func (w *world) result() *reports.Result {
	if len(w.errs) == 0 {
		w.led.CheckCreated(w.made)
		w.reconcile(true)
	}
	res := &reports.Result{
		ReportVersion: reports.ReportVersion,
		Scenario:      w.sc.Name,
		Description:   w.sc.Description,
		Seed:          w.seed,
		DurationMs:    w.end.Milliseconds(),
		EndedAtMs:     w.now().Milliseconds(),
		Expectations:  []reports.Expectation{},
		Violations:    []reports.Violation{},
		Ledger:        w.led.Report(),
		Alerts:        w.pg.Alerts,
		Breakers:      w.brk.Transitions(),
		Confusion:     w.led.Confusion(),
		Steps:         w.stepLog,
		Series:        w.samp.Series,
		Engine:        reports.Engine{Events: w.events, Jobs: w.made, MaxQueue: w.samp.MaxQueue},
	}
	res.Series.IntervalMs = w.sc.Sample.Milliseconds()
	if res.Alerts.ByReceiver == nil {
		res.Alerts.ByReceiver = map[string]int64{}
	}
	if res.Alerts.PagesByFingerprint == nil {
		res.Alerts.PagesByFingerprint = map[string]int64{}
	}
	if res.Alerts.Deliveries == nil {
		res.Alerts.Deliveries = []reports.Delivery{}
	}
	if res.Breakers == nil {
		res.Breakers = []reports.Transition{}
	}
	if res.Confusion == nil {
		res.Confusion = []reports.Confusion{}
	}
	if res.Steps == nil {
		res.Steps = []reports.Step{}
	}
	res.Ledger.Lost = w.lost()
	if a, ok := w.alerter.(interface{ Stats() alert.Stats }); ok {
		st := a.Stats()
		res.Alerts.Raised, res.Alerts.Deduplicated, res.Alerts.Inhibited = int64(st.Raised), int64(st.Deduplicated), int64(st.Inhibited)
		res.Alerts.Redelivered, res.Alerts.Repeats, res.Alerts.Resolved = int64(st.Retried), int64(st.Repeats), int64(st.Resolved)
	}
	if w.judge != nil && w.judge.h.Alerter != nil { // a drill's: its alerter's own counts, as recorded
		st := w.judge.h.Alerter
		res.Alerts.Raised, res.Alerts.Deduplicated, res.Alerts.Inhibited = st.Raised, st.Deduplicated, st.Inhibited
		res.Alerts.Redelivered, res.Alerts.Repeats, res.Alerts.Resolved = st.Retried, st.Repeats, st.Resolved
	}
	if p, ok := w.policy.p.(interface{ Stats() retry.Stats }); ok {
		st := p.Stats()
		res.Ledger.BudgetDelayed, res.Ledger.BudgetExceeded = int64(st.BudgetDelayed), int64(st.BudgetExceeded)
	}
	res.Fates = w.fates()
	res.DLQ = w.dlqSummary()
	res.Faults = w.faultReport()

	// The run's end: reached, or stopped by an error or an interruption.
	stopped := ""
	if len(w.errs) > 0 {
		res.Verdict = reports.Interrupted
		for _, err := range w.errs {
			if !interruption(err) {
				res.Verdict = reports.Errored
			}
		}
		res.Error = errors.Join(w.errs...).Error()
		stopped = "the run errored at " + fmtOffset(w.now())
		if res.Verdict == reports.Interrupted {
			stopped = "the run was interrupted at " + fmtOffset(w.now())
		}
	}
	w.sec.Result(res, w.entry)
	res.Violations = append(res.Violations, w.led.Violations()...)
	res.Invariants = w.invariants(stopped)
	res.Violations = oracle.ObservedViolations(res)
	oracle.Conclude(res, &w.sc, w.observation(res), w.whenMisses(), stopped)
	return res
}

// invariants says what became of each invariant (oracle.InvariantResults),
// the planted-secrets one, which the engine alone checks, after them.
func (w *world) invariants(stopped string) []reports.InvariantResult {
	var obs oracle.Observed // the simulator's: everything
	if w.judge != nil {
		obs = w.judge.h.Observed()
	}
	out := oracle.InvariantResults(w.led, obs, w.pg.PageWithin(), stopped)
	if ir, ok := w.sec.InvariantResult(stopped); ok {
		out = append(out, ir)
	}
	return out
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func (w *world) dlqSummary() reports.DLQ { return oracle.DLQSummary(w.ctx, w.backend, w.start) }

func (w *world) faultReport() []reports.Fault {
	if w.judge != nil {
		return w.judge.faults
	}
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

// lost counts the jobs created that the store does not hold and that did
// not succeed or leave the DLQ with an event.
func (w *world) lost() int64 { return oracle.Lost(w.ctx, w.led, w.backend, w.made) }

func (w *world) fates() []reports.JobFate { return w.led.Fates() }
