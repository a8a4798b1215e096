package oracle

import (
	"strings"
	"time"

	"github.com/faultline/faultline/reports"
)

// ledger fills the result's ledger from the oracle's view.
func (b *blackJudge) ledger() {
	led := &b.res.Ledger
	byTask := map[string]*reports.TaskTotals{}
	for _, id := range b.order {
		j := b.jobs[id]
		if j.unseen() {
			continue
		}
		led.Created++
		t := byTask[j.h.Task]
		if t == nil {
			t = &reports.TaskTotals{Task: j.h.Task}
			byTask[j.h.Task] = t
		}
		t.Created++
		led.Attempts += int64(len(j.calls))
		if n := len(j.calls); n > 1 {
			led.Retries += int64(n - 1)
		}
		switch {
		case j.okAt >= 0:
			led.Succeeded++
			t.Succeeded++
		case j.inDLQ > 0:
			led.DeadLettered++
			t.DeadLettered++
		case j.queued:
			led.Queued++
			t.Pending++
		case !b.callJobs:
			led.InFlight++ // its calls, if any, cannot be told apart: its fate is unseen
			t.Pending++
		default:
			led.Lost++
		}
		if j.everDLQ {
			led.DeadLetters++
		}
	}
	for _, c := range b.h.Calls {
		if c.Charge > 0 {
			led.Charges++
		}
	}
	led.ByTask = []reports.TaskTotals{}
	for _, t := range b.sc.Workload.Tasks {
		if tt := byTask[t.Name]; tt != nil {
			led.ByTask = append(led.ByTask, *tt)
		}
	}
	led.DeadLetteredBy = []reports.DeadLetterCount{}
}

// dlq fills the result's DLQ from the last read.
func (b *blackJudge) dlq() {
	d := reports.DLQ{ByStatus: map[string]int{}, BySeverity: map[string]int{}, Entries: []reports.DLQEntry{}}
	for _, e := range b.x.Entries {
		d.Total++
		if e.Corrupt != "" {
			d.Corrupt++
		}
		st := e.Status
		if st == "" {
			st = "failed"
		}
		d.ByStatus[st]++
		if e.Severity != "" {
			d.BySeverity[strings.ToLower(e.Severity)]++
		}
		if len(d.Entries) < 100 {
			task := ""
			if j := b.jobs[e.JobID]; j != nil {
				task = j.h.Task
			}
			errText := e.Error
			if e.Corrupt != "" {
				errText = "corrupt entry at " + e.Source + ": " + e.Corrupt
			}
			d.Entries = append(d.Entries, reports.DLQEntry{JobID: e.JobID, Task: task, Status: st, Class: e.Class, Severity: e.Severity,
				Attempts: e.Retries, Error: errText, Reason: e.Source})
		} else {
			d.Truncated = true
		}
	}
	b.res.DLQ = d
}

// alerts fills the result's alerts from the receivers' deliveries.
func (b *blackJudge) alerts() {
	a := reports.Alerts{ByReceiver: map[string]int64{}, PagesByFingerprint: map[string]int64{}, Deliveries: []reports.Delivery{}}
	for _, d := range b.h.Deliveries {
		if !d.Accepted {
			a.Rejected++
			continue
		}
		a.Notifications++
		a.ByReceiver[d.Receiver]++
		if b.paging().IsPage(d) {
			a.Pages++
		}
		if len(a.Deliveries) < 100 {
			sum := ""
			if len(d.Alerts) > 0 {
				sum = d.Alerts[0].Summary
			}
			a.Deliveries = append(a.Deliveries, reports.Delivery{AtMs: d.AtMs, Receiver: d.Receiver, Summary: sum, Attempt: max(d.Attempt, 1), Status: "firing", Count: 1})
		} else {
			a.Truncated = true
		}
	}
	b.res.Alerts = a
}

// expectations evaluates the scenario's expectations with the oracle's
// evaluation, from outside: what one reads that a black-box drill does not
// observe is not observable, by the expectation's own declaration
// (ExpectationReads).
func (b *blackJudge) expectations() {
	o := &Observation{Result: b.res, Observed: b.h.Observed(), Calls: map[string][]time.Duration{}} // no ledger: counts read the result
	for _, c := range b.h.Calls {
		o.Calls[c.Dependency] = append(o.Calls[c.Dependency], time.Duration(c.AtMs)*time.Millisecond)
	}
	for _, e := range b.sc.Expect {
		b.res.Expectations = append(b.res.Expectations, Evaluate(e, o))
	}
}

func (b *blackJudge) external() *reports.External {
	x := b.x
	out := &reports.External{Command: x.Command, Copies: x.Copies, Running: x.Running, Inject: x.Inject, DLQ: x.DLQ,
		DrainMs: x.DrainMs, SettledAtMs: x.SettledMs, DLQReads: max(x.ReadCount, len(x.Reads)), DLQReadErrors: len(x.ReadErrors), Ready: x.Ready}
	if w := x.PageWait; w != nil {
		pw := *w
		out.PageWait = &pw
	}
	if b.h.Interrupted != "" {
		return out // nothing is lost of a drill stopped half-way
	}
	for _, id := range b.order {
		j := b.jobs[id]
		if j.okAt < 0 && j.inDLQ == 0 && !j.queued && !j.unseen() && b.callJobs && len(out.Lost) < reports.MaxListedViolations {
			out.Lost = append(out.Lost, id)
		}
		if j.leftDLQ && len(b.shrinks()) == 0 {
			out.TrimmedCount++
			if len(out.Trimmed) < reports.MaxListedViolations {
				out.Trimmed = append(out.Trimmed, id)
			}
		}
	}
	return out
}
