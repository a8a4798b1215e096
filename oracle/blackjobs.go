package oracle

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/scenarios"
)

// conservation: every job succeeded, sits in the DLQ, or is named as
// still queued; none both succeeded and dead-lettered.
func (b *blackJudge) conservation() {
	end := b.h.EndedMs + b.x.DrainMs
	for _, id := range b.order {
		j := b.jobs[id]
		switch {
		case j.okAt >= 0 && j.inDLQ > 0:
			b.fail(InvNotBoth, id, end, "job %s succeeded at %s and is also in the DLQ: an operator would run it again (a second charge)", id, fmtMs(j.okAt))
		case j.okAt >= 0 || j.inDLQ > 0:
			if j.inDLQ > 1 && !j.dupSeen {
				b.fail(InvOneDLQEntry, id, end, "job %s has %d entries in the DLQ at the end: one failed job, one entry", id, j.inDLQ)
			}
		case j.unseen():
			b.res.Warnings = append(b.res.Warnings, fmt.Sprintf("job %s's injection timed out and the system never showed it (no call, no DLQ entry): not judged", id))
		case j.queued:
			b.fail(InvConservation, id, end, "job %s is still in the system's queue %s after the scenario's end: not lost, but never handled within the drain — a worker that does not read its queue, or one too slow for the workload (raise system.external.drain if it is slow by design)", id, time.Duration(b.x.DrainMs)*time.Millisecond)
		default:
			b.fail(InvConservation, id, end, "job %s was lost: %s", id, b.lostStory(j))
		}
	}
}

// lostStory says what the drill saw of a lost job.
func (b *blackJudge) lostStory(j *blackJob) string {
	var s strings.Builder
	fmt.Fprintf(&s, "injected at %s, ", fmtMs(j.h.AtMs))
	if n := len(j.calls); n == 0 {
		s.WriteString("never called its dependency")
	} else {
		last := j.calls[n-1]
		fmt.Fprintf(&s, "called %d time(s), the last at %s answered %s", n, fmtMs(last.AtMs), answer(last))
	}
	s.WriteString("; never succeeded")
	switch {
	case j.everDLQ && j.leftDLQ:
		fmt.Fprintf(&s, "; it was in the DLQ at %s and then left it", fmtMs(j.firstDLQ))
	default:
		s.WriteString("; never in the DLQ")
	}
	if b.x.QueueObservable {
		s.WriteString("; not in the queue at the end")
	} else {
		s.WriteString("; the queue itself is not observable through this inject adapter")
	}
	if b.x.SettledMs < 0 && !j.leftDLQ {
		fmt.Fprintf(&s, " (the jobs had not settled when the drain of %s ended: it may be in flight inside the system — a longer system.external.drain tells)", time.Duration(b.x.DrainMs)*time.Millisecond)
	}
	return s.String()
}

// answer describes a call's answer for a message.
func answer(c Call) string {
	var what string
	switch {
	case c.Status > 0:
		what = fmt.Sprintf("%d", c.Status)
	case c.Outcome != "":
		what = c.Outcome
	default:
		what = "nothing yet"
	}
	if c.Class != "" {
		what += " (" + c.Class + ")"
	}
	if c.Fault != "" {
		what += " from fault " + c.Fault
	}
	return what
}

// charges: no payment taken twice for one key (or one job without a key).
func (b *blackJudge) charges() {
	// The calls that charged, per payment (its key, or its job without
	// one), so that a second charge names the first and both answers.
	charged := map[string][]Call{}
	for _, c := range b.h.Calls {
		if c.Charge < 1 {
			continue
		}
		pay := c.Dependency + "\x00" + c.Key
		if c.Key == "" {
			pay += "\x00" + c.JobID
		}
		prev := charged[pay]
		charged[pay] = append(prev, c)
		if c.Charge < 2 {
			continue
		}
		what := "key " + c.Key
		if c.Key == "" {
			what = "job " + c.JobID + " (no idempotency key sent)"
		}
		if len(prev) == 0 { // the first charge happened before the history began
			b.fail(InvNoDoubleCharge, c.JobID, c.AtMs, "%s charged %d times by %s, again at %s (answered %s)", what, c.Charge, c.Dependency, fmtMs(c.AtMs), answer(c))
			continue
		}
		first := prev[len(prev)-1]
		why := "the earlier call took effect although its answer failed, and the retry charged again"
		if answeredOK(first) {
			why = "the earlier call was answered as a success, yet the payment ran again: a job run after it succeeded (a duplicating requeue or redelivery)"
		}
		b.fail(InvNoDoubleCharge, c.JobID, c.AtMs, "%s charged %d times by %s: at %s (job %s, answered %s) and again at %s (job %s, answered %s): %s",
			what, c.Charge, c.Dependency, fmtMs(first.AtMs), first.JobID, answer(first), fmtMs(c.AtMs), c.JobID, answer(c), why)
	}
}

// answeredOK says a call's answer told the caller it succeeded.
func answeredOK(c Call) bool {
	return c.Outcome == "ok" || c.Outcome == "replayed" || (c.Status >= 200 && c.Status < 300)
}

// finalRetries: a permanent or critical answer is final for its job,
// unless the job left the DLQ by a declared requeue first; a job in the
// DLQ is not run. A declared requeue (operator, auto-retry) is matched to
// the calls it causes: a job that runs again once its dead letter may
// have been written — after the last read that did not see it — was
// requeued by it, even when it failed again and was back in the DLQ
// before the next read (the reads saw no change).
func (b *blackJudge) finalRetries() {
	var requeue []string
	for _, m := range []string{scenarios.ShrinkOperator, scenarios.ShrinkAutoRetry} {
		if slices.Contains(b.shrinks(), m) {
			requeue = append(requeue, m)
		}
	}
	var matched []string
	wins := b.systemFaultWindows()
	for _, id := range b.order {
		j := b.jobs[id]
		// requeued says a call at ms is one the declared requeue can
		// have caused.
		requeued := func(ms int64) bool {
			return len(requeue) > 0 && (j.leftDLQ || (j.everDLQ && ms > j.dlqAfter))
		}
		var final *Call
		var after []int64
		for i := range j.calls {
			c := &j.calls[i]
			if final != nil {
				after = append(after, c.AtMs)
			}
			if final == nil && c.Outcome == "error" && (c.Class == "permanent" || c.Class == "critical") {
				final = c
			}
		}
		if final != nil && len(after) > 0 {
			if why := b.redelivery(final.AtMs, after[0], wins); why != "" {
				b.res.Warnings = append(b.res.Warnings, fmt.Sprintf("job %s was called again at %s after its final answer at %s, with %s in between: a redelivery, not judged a retry", id, fmtMs(after[0]), fmtMs(final.AtMs), why))
				after = after[:0]
			}
		}
		if final != nil && len(after) > 0 && !requeued(after[0]) {
			why := "a declined card is declined again: retrying it only annoys the customer's bank"
			if final.Class == "critical" {
				why = "an authentication failure needs a person, not a retry: every retry fails the same way"
			}
			b.fail(InvNoRetryOfFinal, id, after[0], "job %s was answered %s at %s and called again %d time(s) (%s): %s", id, answer(*final), fmtMs(final.AtMs), len(after), joinMs(after, 5), why)
		}
		if j.everDLQ && !j.leftDLQ {
			var late []int64
			for _, c := range j.calls {
				if c.AtMs > j.firstDLQ {
					late = append(late, c.AtMs)
				}
			}
			switch {
			case len(late) == 0:
			case len(requeue) > 0:
				matched = append(matched, fmt.Sprintf("%s (%d call(s) from %s)", id, len(late), fmtMs(late[0])))
			default:
				b.fail(InvNoRerunAfterDead, id, late[0], "job %s was in the DLQ from %s and still ran: %d call(s) after (%s)", id, fmtMs(j.firstDLQ), len(late), joinMs(late, 5))
			}
		}
	}
	if n := len(matched); n > 0 {
		more := ""
		if n > 5 {
			more = fmt.Sprintf(" … and %d more", n-5)
			matched = matched[:5]
		}
		b.res.Warnings = append(b.res.Warnings, fmt.Sprintf("%d job(s) ran again after their dead letter and were back in the DLQ by the next read: matched to the declared requeue (%s), not judged a run of a dead letter: %s%s",
			n, strings.Join(requeue, ", "), strings.Join(matched, "; "), more))
	}
}

// runsAfterSuccess: a job whose call was answered as a success is not run
// again — unless a copy of the system was killed, stopped or ended, or a
// fault struck the system's store or workers, in between: then the job
// may not have been marked done, and a redelivery is the at-least-once
// delivery every queue gives (its charge is judged by no-double-charge).
func (b *blackJudge) runsAfterSuccess() {
	wins := b.systemFaultWindows()
	for _, id := range b.order {
		j := b.jobs[id]
		if j.okAt < 0 {
			continue
		}
		var first *Call
		var after []int64
		for i := range j.calls {
			c := &j.calls[i]
			switch {
			case first == nil && answeredOK(*c):
				first = c
			case first != nil && c.AtMs > first.AtMs:
				after = append(after, c.AtMs)
			}
		}
		if len(after) == 0 {
			continue
		}
		from, to := first.AtMs, after[0]
		if why := b.redelivery(from, to, wins); why != "" {
			b.res.Warnings = append(b.res.Warnings, fmt.Sprintf("job %s was called again at %s after its success at %s, with %s in between: a redelivery, not judged a run after success", id, fmtMs(to), fmtMs(from), why))
			continue
		}
		b.fail(InvNoMoveAfterDone, id, to, "job %s succeeded at %s (%s answered %s) and was run again: %d more call(s) (%s) — a job that succeeded is done; running it again is a duplicating requeue or a lost acknowledgement",
			id, fmtMs(from), first.Dependency, answer(*first), len(after), joinMs(after, 5))
	}
}

// systemFaultWindows are the windows of the faults on the system itself
// (its store, its workers), not on a dependency.
func (b *blackJudge) systemFaultWindows() []FaultWindow {
	var wins []FaultWindow
	for _, w := range FaultWindows(b.sc, b.h.Seed, b.sc.Duration) {
		if f := b.fault(w.Fault); f != nil && f.Target.Kind != faults.Dependency {
			wins = append(wins, w)
		}
	}
	return wins
}

// fault is the scenario's fault named name, or nil.
func (b *blackJudge) fault(name string) *faults.Fault {
	for i := range b.sc.Faults {
		if b.sc.Faults[i].Name == name {
			return &b.sc.Faults[i]
		}
	}
	return nil
}

// redelivery says why a job run again between from and to may have been
// redelivered by the system's queue ("" when nothing explains it): a copy
// of the system killed, stopped or ended, or a fault on its store or
// workers, in between.
func (b *blackJudge) redelivery(from, to int64, wins []FaultWindow) string {
	for _, p := range b.h.Processes {
		switch p.Kind {
		case "killed", "exited", "stalled", "terminated":
			if p.AtMs >= from && p.AtMs <= to {
				return fmt.Sprintf("copy %s %s at %s", p.Worker, p.Kind, fmtMs(p.AtMs))
			}
		}
	}
	for _, w := range wins {
		if w.From.Milliseconds() <= to && w.Until.Milliseconds() >= from {
			return fmt.Sprintf("fault %s on from %s to %s", w.Fault, fmtMs(w.From.Milliseconds()), fmtMs(w.Until.Milliseconds()))
		}
	}
	return ""
}

func joinMs(ms []int64, n int) string {
	var parts []string
	for i, m := range ms {
		if i == n {
			parts = append(parts, fmt.Sprintf("and %d more", len(ms)-n))
			break
		}
		parts = append(parts, fmtMs(m))
	}
	return strings.Join(parts, ", ")
}
