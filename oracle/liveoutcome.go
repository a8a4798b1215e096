package oracle

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/worker"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
)

// liveSlackWall is how far apart, in wall time, two processes' stamps of
// one instant may be (a worker's clock and the drill's, the store's
// events and a worker's report): the live checks of an attempt's end and
// of a lease's life give this much, in scenario time, before they call a
// move early or late.
const liveSlackWall = 250 * time.Millisecond

// LiveCheck is one violation a history shows, judged at its instant: the
// ledger's judge fails invariant Inv for job Job with Msg at At (after the
// event of the stream at index Pos, when Pos ≥ 0).
type LiveCheck struct {
	At  time.Duration
	Pos float64 // the event it follows in the stream (-1: none)
	Inv string
	Job string
	Msg string
}

// LiveOutcomes is what the history says of attempt-outcome-is-the-move and
// no-lease-left-expired: the violations it shows, and how much of each it
// could judge.
type LiveOutcomes struct {
	// Checks are the violations, each judged at its instant.
	Checks []LiveCheck
	// moves: the attempts whose move was judged; unmatched those whose
	// lease is not in the stream.
	moves, unmatched int
	// leases: the leases whose end was judged; open those whose attempt
	// no worker reported (killed, or running at the end), or kept.
	leases, open int
}

// JudgeLiveOutcomes checks each reported attempt against the store's move
// of its job (the first move out of flight after the lease it ran under),
// and each lease whose attempt ended against its recovery, as the
// simulator's attemptEnded and checkLeases do. It reads nothing but h.
func JudgeLiveOutcomes(sc *scenarios.Scenario, h *History) LiveOutcomes {
	var out LiveOutcomes
	if len(h.Snapshots) == 0 || h.EventsLost {
		return out
	}
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	slack := time.Duration(float64(liveSlackWall) * max(h.TimeScale, 1))
	ttl := sc.Workers.LeaseTTL
	// The end of observation: the stream is read up to the last snapshot.
	seen := ms(h.Snapshots[len(h.Snapshots)-1].AtMs)
	inFlight := disposition.InFlight.String()

	// Each job's leases and moves out of flight, by index in the stream.
	leases, outs := map[string][]int{}, map[string][]int{}
	for i, e := range h.Events {
		switch {
		case e.Reason == string(disposition.Leased):
			leases[e.JobID] = append(leases[e.JobID], i)
		case e.From == inFlight:
			outs[e.JobID] = append(outs[e.JobID], i)
		}
	}
	// The attempts, each with the lease it ran under; a lease two reports
	// claim is judged for neither.
	type claimed struct {
		a     Attempt
		lease int
	}
	var atts []claimed
	claims := map[int]int{}
	for _, a := range h.Attempts {
		if h.FrozenMs > 0 && a.EndMs > h.FrozenMs {
			continue // finished as the workers were stopped: no move recorded
		}
		ls := leases[a.JobID]
		k, _ := slices.BinarySearchFunc(ls, a.AtMs, func(i int, at int64) int {
			if h.Events[i].AtMs <= at {
				return -1
			}
			return 1
		})
		if k == 0 {
			out.unmatched++
			continue
		}
		atts = append(atts, claimed{a: a, lease: ls[k-1]})
		claims[ls[k-1]]++
	}
	downs := liveStalls(sc, h)
	for _, c := range atts {
		a := c.a
		if claims[c.lease] > 1 {
			out.unmatched++
			continue
		}
		lease := h.Events[c.lease]
		// The job's first move out of flight after this lease.
		mi := -1
		if os := outs[a.JobID]; len(os) > 0 {
			if k, _ := slices.BinarySearch(os, c.lease); k < len(os) {
				mi = os[k]
			}
		}
		end := ms(a.EndMs)
		action, known := ActionByName[a.Action]
		if !known {
			out.unmatched++
			continue
		}
		out.moves++
		switch {
		case a.Result == "applied" && mi < 0:
			if end+slack < seen {
				out.Checks = append(out.Checks, LiveCheck{At: end, Pos: -1, Inv: InvOutcomeIsMove, Job: a.JobID,
					Msg: fmt.Sprintf("job %s: worker %s reported its attempt's outcome (%s) taken by the store at %s, but the store made no move out of flight: the job is dropped",
						a.JobID, a.Worker, ActionWords(action), fmtOffset(end))})
			}
		case a.Result == "applied" && h.Events[mi].Reason == string(disposition.LeaseExpired):
			e := h.Events[mi]
			out.Checks = append(out.Checks, LiveCheck{At: ms(e.AtMs), Pos: float64(mi) + 0.5, Inv: InvOutcomeIsMove, Job: a.JobID,
				Msg: fmt.Sprintf("job %s: the late answer of an attempt whose lease was lost (it began at %s on worker %s, its lease was recovered at %s) was applied: the store took its outcome (%s) instead of fencing it off",
					a.JobID, fmtOffset(ms(a.AtMs)), a.Worker, fmtOffset(ms(e.AtMs)), ActionWords(action))})
		case a.Result == "applied":
			e := h.Events[mi]
			if to := StateByName[e.To]; !WantMove(action, to) {
				out.Checks = append(out.Checks, LiveCheck{At: ms(e.AtMs), Pos: float64(mi) + 0.5, Inv: InvOutcomeIsMove, Job: a.JobID,
					Msg: fmt.Sprintf("job %s: its attempt (worker %s) was told %s, but the store moved it %s → %s (%s)",
						a.JobID, a.Worker, ActionWords(action), e.From, e.To, e.Reason)})
			}
		case a.Result == "fenced" && action == worker.Succeed:
			// Fenced off as a lost lease's while the lease was certainly
			// its own: good until at least a TTL after it was granted, and
			// never recovered before the answer.
			recovered := mi >= 0 && h.Events[mi].Reason == string(disposition.LeaseExpired) && ms(h.Events[mi].AtMs) <= end+slack
			if !recovered && end+slack < ms(lease.AtMs)+ttl {
				out.Checks = append(out.Checks, LiveCheck{At: end, Pos: -1, Inv: InvOutcomeIsMove, Job: a.JobID,
					Msg: fmt.Sprintf("job %s: its attempt (worker %s) succeeded under a lease that was still its own (leased at %s, good until at least %s, never recovered), but the store fenced the completion off as a lost lease's",
						a.JobID, a.Worker, fmtOffset(ms(lease.AtMs)), fmtOffset(ms(lease.AtMs)+ttl))})
			}
		}
		// The lease's life: once the attempt ended (its lease no longer
		// heartbeated), the job leaves flight — by its outcome's move,
		// or by the recovery of the lease a TTL later at most — within
		// a TTL more (the simulator's grace), the time no worker could
		// recover it (every process down or stalled, the store cut)
		// not counted.
		if a.Result == "kept" || a.Result == "kept-fenced" || ttl <= 0 || a.Result == "applied" && mi < 0 {
			out.open++
			continue
		}
		grace := max(ttl, max(ttl/2, time.Second))
		deadline := extendPast(end+ttl+grace+slack, end, downs)
		var left time.Duration
		switch {
		case mi >= 0:
			left = ms(h.Events[mi].AtMs)
		case deadline < seen:
			left = seen
		default:
			out.open++ // still in flight when the drill stopped looking, not yet late
			continue
		}
		out.leases++
		if left > deadline {
			out.Checks = append(out.Checks, LiveCheck{At: deadline, Pos: -1, Inv: InvNoLeaseLeftExpired, Job: a.JobID,
				Msg: fmt.Sprintf("job %s is still in flight at %s under a lease that expired by %s (its attempt on worker %s ended at %s, %s) and was never recovered: it is stuck, no worker will run it again",
					a.JobID, fmtOffset(deadline), fmtOffset(end+ttl), a.Worker, fmtOffset(end), a.Result)})
		}
	}
	// Leases no report claims: their holder was killed mid-attempt, or
	// still ran when the drill stopped looking.
	for _, ls := range leases {
		for _, i := range ls {
			if claims[i] == 0 {
				out.open++
			}
		}
	}
	return out
}

// liveStalls are the spans of a drill in which no worker could recover an
// expired lease: every worker process down or stalled, or the queue
// store's proxy cut or slowed.
func liveStalls(sc *scenarios.Scenario, h *History) [][2]time.Duration {
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	var spans [][2]time.Duration
	for _, f := range h.Faults {
		t, err := faults.ParseTarget(f.Target)
		if err != nil || t.Kind != faults.Store && t.Kind != faults.DLQStore {
			continue
		}
		for _, w := range f.Windows {
			until := ms(w[1])
			if w[1] < 0 {
				until = sc.Duration
			}
			spans = append(spans, [2]time.Duration{ms(w[0]), until})
		}
	}
	up := map[string]bool{}
	n := 0
	downAt := time.Duration(-1)
	procs := slices.Clone(h.Processes)
	slices.SortStableFunc(procs, func(a, b ProcessEvent) int { return cmp.Compare(a.AtMs, b.AtMs) })
	for _, p := range procs {
		was := up[p.Worker]
		switch p.Kind {
		case "started", "restarted", "resumed":
			up[p.Worker] = true
		case "killed", "stalled", "terminated", "exited":
			up[p.Worker] = false
		}
		switch {
		case !was && up[p.Worker]:
			n++
			if n == 1 && downAt >= 0 {
				spans = append(spans, [2]time.Duration{downAt, ms(p.AtMs)})
				downAt = -1
			}
		case was && !up[p.Worker]:
			n--
			if n == 0 {
				downAt = ms(p.AtMs)
			}
		}
	}
	if downAt >= 0 {
		spans = append(spans, [2]time.Duration{downAt, sc.Duration})
	}
	slices.SortFunc(spans, func(a, b [2]time.Duration) int { return cmp.Compare(a[0], b[0]) })
	return spans
}

// extendPast moves deadline later by the part of each span that falls
// between from and it (the deadline moving as it is extended).
func extendPast(deadline, from time.Duration, spans [][2]time.Duration) time.Duration {
	for _, s := range spans {
		lo, hi := max(s[0], from), s[1]
		if lo >= deadline || hi <= lo {
			continue
		}
		deadline += hi - lo
		from = hi
	}
	return deadline
}

// LiveOutcomeNotes sets the results of attempt-outcome-is-the-move and
// no-lease-left-expired to what the history let the judge see: a note
// saying how much was judged, and not observable when nothing was.
func LiveOutcomeNotes(res *reports.Result, lo LiveOutcomes, h *History) {
	for i := range res.Invariants {
		ir := &res.Invariants[i]
		var judged, unjudged int
		var what, why string
		switch ir.Name {
		case InvOutcomeIsMove:
			judged, unjudged = lo.moves, lo.unmatched
			what = "attempts the workers reported, each against the store's first move of its job out of flight after its lease"
			why = "an attempt whose lease is not in the event stream (or claimed by two reports) cannot be matched to its move; an attempt whose worker was killed mid-way is never reported"
		case InvNoLeaseLeftExpired:
			judged, unjudged = lo.leases, lo.open
			what = "leases whose attempt a worker reported ended, each left by the job within a TTL of the lease's expiry plus a TTL (the time no worker could recover it not counted)"
			why = "a lease's expiry is observable only once its attempt's end is reported: a lease whose worker was killed or frozen mid-attempt, or that the worker keeps for a dead letter, has no known end"
		default:
			continue
		}
		switch {
		case h.EventsLost:
			if ir.Verdict != reports.Failed {
				ir.Verdict = reports.NotObservable
			}
			ir.Note = "not observable: the store's event stream was trimmed before the drill read all of it"
		case ir.Verdict == reports.Skipped:
		case judged == 0:
			if ir.Verdict != reports.Failed {
				ir.Verdict = reports.NotObservable
			}
			ir.Note = "not observable in this drill: none of its " + what + " could be judged (" + why + ")"
		default:
			ir.Note = fmt.Sprintf("judged from the history: %d %s", judged, what)
			if unjudged > 0 {
				ir.Note += fmt.Sprintf("; %d not observable (%s)", unjudged, why)
			}
		}
	}
}

// StateByName is each disposition state by its name (a history's
// spelling).
var StateByName = func() map[string]disposition.State {
	m := map[string]disposition.State{}
	for s := disposition.None; s <= disposition.Held; s++ {
		m[s.String()] = s
	}
	return m
}()

// ActionByName is each worker action by its name.
var ActionByName = func() map[string]worker.Action {
	m := map[string]worker.Action{}
	for a := worker.Succeed; a <= worker.Divert; a++ {
		m[a.String()] = a
	}
	return m
}()
