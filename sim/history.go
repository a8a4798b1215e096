package sim

import (
	"context"
	"io"
	"strconv"
	"time"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/worker"
	"github.com/faultline/faultline/reports"
)

// WithHistory has the run stream its history to w as it goes (faultline
// run --history): the oracle's history format, version 2, which
// `faultline report check` judges as it judges a drill's. source is where
// the scenario came from ("builtin:NAME" or a file), for the judge to
// load it again.
func WithHistory(w io.Writer, source string) Option {
	return func(o *options) { o.history, o.source = w, source }
}

// recorder writes a simulated run's history as the run goes: each job as
// it is made, each disposition event, attempt, dependency call, delivery,
// breaker transition and the store's counts at each sample; the rest at
// the end (close). A job's index is let go when it succeeds, so memory
// stays flat over a long run.
type recorder struct {
	hw     *oracle.HistoryWriter
	source string
	events int
}

func (w *world) recordJob(j job.Job) {
	w.rec.hw.Job(oracle.Job{AtMs: w.now().Milliseconds(), ID: j.ID, Task: j.Task, Key: j.IdempotencyKey, Outcome: "ok"})
}

func (w *world) recordEvent(e disposition.Event) {
	r := w.rec
	r.events++
	r.hw.Event(oracle.EventOf(strconv.Itoa(r.events), e, w.start))
	if e.To == disposition.Succeeded {
		r.hw.Forget(e.JobID)
	}
}

// recordCall records job j's call to its dependency at offset off, and
// what the fault injector made of it.
func (w *world) recordCall(off time.Duration, j job.Job, eff faults.Effect) {
	c := oracle.Call{AtMs: off.Milliseconds(), Dependency: j.Dependency, JobID: j.ID, Key: j.IdempotencyKey, Fault: eff.Fault,
		Outcome: "ok", TookEffect: eff.Err == nil || eff.Charged}
	if eff.Err != nil {
		c.Outcome = "error"
		if eff.Class != 0 {
			c.Class = eff.Class.String()
		}
	}
	w.rec.hw.Call(c)
}

// recordAttempt records the attempt on slot s, its outcome o and what
// became of its move (result: applied, fenced, kept or failed).
func (w *world) recordAttemptOf(s *slot, o *worker.Outcome, result string) {
	a := oracle.Attempt{AtMs: s.att.StartedAt.Sub(w.start).Milliseconds(), Worker: s.name, JobID: s.job.ID, Fault: s.eff.Fault,
		Action: o.Action.String(), Fingerprint: o.Fingerprint, Result: result, EndMs: w.now().Milliseconds()}
	if s.eff.Class != 0 {
		a.Truth = s.eff.Class.String()
	}
	if o.Err != nil {
		a.Err = o.Err.Error()
		a.Class, a.Severity, a.Rule = o.Verdict.Class.String(), o.Verdict.Severity.String(), o.Verdict.Rule
	}
	w.rec.hw.Attempt(a)
}

func (w *world) recordDelivery(receiver string, n alert.Notification, err error) {
	w.rec.hw.Delivery(oracle.DeliveryOf(w.now(), receiver, n, err))
}

func (w *world) recordBreaker(t reports.Transition) {
	w.rec.hw.Breaker(oracle.BreakerTransition{AtMs: t.AtMs, Worker: t.Worker, Breaker: t.Breaker, From: t.From, To: t.To, Reason: t.Reason})
}

func (w *world) recordSnapshot(c queue.Counts, st dlq.Stats) {
	w.rec.hw.Snapshot(oracle.Snapshot{AtMs: w.now().Milliseconds(), AfterEvents: w.rec.events, Counts: c, Stats: st})
}

// closeHistory ends the history with what the run knows at its end: the
// scenario, its faults and steps, the DLQ's entries, the alerter's counts.
func (w *world) closeHistory(res *reports.Result) error {
	h := &oracle.History{Version: oracle.HistoryVersion, Scenario: w.sc.Name, Source: w.rec.source, Seed: w.seed, Simulated: true,
		DurationMs: w.sc.Duration.Milliseconds(), EndedMs: min(w.now(), w.end).Milliseconds(), Planned: int(w.made),
		Faults: res.Faults, Steps: res.Steps, Misses: w.misses}
	for _, s := range w.slots[:min(len(w.slots), w.sc.Workers.Count)] { // the fleet it began with
		h.Workers = append(h.Workers, s.name)
	}
	if res.Verdict == reports.Interrupted || res.Verdict == reports.Errored {
		h.Interrupted = res.Error
	}
	if a, ok := w.alerter.(interface{ Stats() alert.Stats }); ok {
		h.Alerter = oracle.AlerterOf(a.Stats())
	}
	cursor := ""
	for {
		p, err := w.backend.List(context.WithoutCancel(w.ctx), dlq.Filter{}, cursor, 1000)
		if err != nil {
			break
		}
		for _, e := range p.Entries {
			if b, err := dlq.Encode(e); err == nil {
				h.DLQ = append(h.DLQ, b)
			}
		}
		if p.Next == "" {
			break
		}
		cursor = p.Next
	}
	return w.rec.hw.Close(h)
}
