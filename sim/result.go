package sim

import (
	"errors"
	"slices"
	"strings"

	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
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
		Series:        w.series,
		Engine:        reports.Engine{Events: w.events, Jobs: w.made, MaxQueue: w.maxQ},
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
	w.checkResultSecrets(res)
	res.Violations = append(res.Violations, w.led.Violations()...)
	res.Invariants = w.invariants(stopped)
	res.Violations = observedViolations(res)

	obs := w.observation(res)
	for _, e := range w.sc.Expect {
		res.Expectations = append(res.Expectations, oracle.Evaluate(e, obs))
	}
	oracle.FaultChecks(res, stopped)
	whenChecks(res, &w.sc, w.whenMisses(), stopped)
	if stopped != "" {
		// Judged on part of a run, an expectation would mean nothing.
		for i := range res.Expectations {
			e := &res.Expectations[i]
			e.Actual, e.Verdict = "not evaluated: "+stopped, reports.Skipped
		}
		return res
	}
	res.Verdict = reports.Passed
	if len(res.Violations) > 0 {
		res.Verdict = reports.Failed
	}
	for _, e := range res.Expectations {
		if e.Verdict != reports.Passed && e.Verdict != reports.NotObservable {
			res.Verdict = reports.Failed
		}
	}
	return res
}

// invariants says what became of each invariant: violated, held to the
// end, or skipped — turned off, or checked only until the run stopped
// (stopped says where; "" for a run that reached its end).
func (w *world) invariants(stopped string) []reports.InvariantResult {
	names := oracle.Invariants()
	out := make([]reports.InvariantResult, 0, len(names))
	var obs oracle.Observed // the simulator's: everything
	if w.judge != nil {
		obs = w.judge.h.Observed()
	}
	for _, name := range names {
		ir := reports.InvariantResult{Name: name, Verdict: reports.Passed, Violations: w.led.ViolationCount(name)}
		why, lacking := obs.Lacks(oracle.InvariantReads(name, oracle.ViaLedger))
		switch {
		case lacking:
			// What the ledger saw of it is not the whole: no verdict.
			ir.Verdict, ir.Note, ir.Violations = reports.NotObservable, "not observable in this drill: "+why, 0
		case ir.Violations > 0:
			ir.Verdict = reports.Failed
		case name == InvCriticalPaged && w.pg.PageWithin() < 0:
			ir.Verdict, ir.Note = reports.Skipped, "turned off (invariants.pageWithin: off)"
		case name == InvAttempts && w.led.MaxAttempts() <= 0:
			ir.Verdict, ir.Note = reports.Skipped, "turned off: the retry policy sets no maximum of attempts"
		case stopped != "":
			ir.Verdict, ir.Note = reports.Skipped, "not checked to the end: "+stopped
		}
		out = append(out, ir)
	}
	if ir, ok := w.secretResult(stopped); ok {
		out = append(out, ir)
	}
	return out
}

// observedViolations are res's violations of the invariants it could
// observe: a violation of one it could not (a drill's event stream
// trimmed) is the ledger's view of part of the run, not a verdict.
func observedViolations(res *reports.Result) []reports.Violation {
	unseen := map[string]bool{}
	for _, ir := range res.Invariants {
		if ir.Verdict == reports.NotObservable {
			unseen[ir.Name] = true
		}
	}
	if len(unseen) == 0 {
		return res.Violations
	}
	out := res.Violations[:0:0]
	for _, v := range res.Violations {
		if !unseen[v.Invariant] {
			out = append(out, v)
		}
	}
	return out
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func (w *world) dlqSummary() reports.DLQ {
	out := reports.DLQ{ByStatus: map[string]int{}, BySeverity: map[string]int{}, Entries: []reports.DLQEntry{}}
	st, err := w.backend.Stats(w.ctx)
	if err != nil {
		return out
	}
	out.Total, out.Corrupt = st.Total, st.Corrupt
	for k, v := range st.ByStatus {
		out.ByStatus[k] = v
	}
	for k, v := range st.BySeverity {
		out.BySeverity[k] = v
	}
	var all []dlq.Entry
	cursor := ""
	for {
		p, err := w.backend.List(w.ctx, dlq.Filter{}, cursor, 1000)
		if err != nil {
			break
		}
		all = append(all, p.Entries...)
		if p.Next == "" {
			break
		}
		cursor = p.Next
	}
	slices.SortFunc(all, func(a, b dlq.Entry) int { return strings.Compare(a.Job.ID, b.Job.ID) })
	if len(all) > maxDLQEntries {
		all, out.Truncated = all[:maxDLQEntries], true
	}
	for _, e := range all {
		last := ""
		if n := len(e.History); n > 0 {
			last = e.History[n-1].Error
		}
		out.Entries = append(out.Entries, reports.DLQEntry{
			JobID: e.Job.ID, Task: e.Job.Task, Status: e.Status.String(), Class: e.Verdict.Class.String(),
			Severity: e.Verdict.Severity.String(), Rule: e.Verdict.Rule, Attempts: e.Job.Attempts, Reason: e.Reason,
			Error: last, FirstFailedAtMs: e.FirstFailedAt.Sub(w.start).Milliseconds(), LastFailedAtMs: e.LastFailedAt.Sub(w.start).Milliseconds(),
		})
	}
	return out
}

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
func (w *world) lost() int64 {
	c, err := w.backend.Counts(w.ctx)
	if err != nil {
		return 0
	}
	st, err := w.backend.Stats(w.ctx)
	if err != nil {
		return 0
	}
	held := int64(c.Queued+c.InFlight+c.Scheduled+c.Fallback+c.Held) +
		int64(st.ByStatus[dlq.Failed.String()]+st.ByStatus[dlq.Quarantined.String()]+st.ByStatus[dlq.Deleted.String()]+st.Corrupt)
	return max(w.made-held-w.led.Count(disposition.Succeeded)-w.led.Count(oracle.Removed), 0)
}

func (w *world) fates() []reports.JobFate { return w.led.Fates() }
