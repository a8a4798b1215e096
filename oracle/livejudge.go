package oracle

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
)

// The live judges' verdicts on a drill's history beyond its invariants and
// expectations: its pace (JudgePace), its evidence (JudgeEvidence), a
// fence never put to the test (JudgeUnlanded), a drill that cannot
// account for every job (JudgeUnaccounted).

// JudgeUnaccounted makes a drill that passed inconclusive when its
// conservation was not observable (its event stream trimmed): a drill that
// cannot account for every job does not pass.
func JudgeUnaccounted(res *reports.Result) {
	if res.Verdict != reports.Passed {
		return
	}
	for _, ir := range res.Invariants {
		if ir.Name == InvConservation && ir.Verdict == reports.NotObservable {
			why := "conservation is " + ir.Note + ": the drill cannot account for every job, so it does not pass"
			res.Verdict, res.Error = reports.Inconclusive, why
		}
	}
}

// JudgeUnlanded makes a drill whose only failures are of the fenced count
// inconclusive when a frozen worker's late answer never reached the store:
// an attempt that spanned its worker's freeze (SIGSTOP to SIGCONT) and
// whose completion failed (the store call timed out or was refused) was
// neither applied nor fenced, so the fence that fenced counts was never
// put to the test. Measured on the project's 2-core machine at load 7,
// worker-crash at scale 10: w2's charge, frozen 25 s of scenario time,
// failed to write its completion within the worker's store timeout (a
// third of the scaled lease, 333 ms) just after SIGCONT; the job came back
// by its lease and was charged once, and `fenced = 1` got 0. So is one
// whose answer left before the freeze landed: the store applied its move
// while the worker was frozen (the freeze came a moment too late; the
// drill now holds the answer of a call found in flight until the stop has
// landed). A late answer the store accepted after the worker resumed is
// still the system's failure.
func JudgeUnlanded(res *reports.Result, h *History) {
	if res.Verdict != reports.Failed || len(res.Violations) > 0 {
		return
	}
	for _, e := range res.Expectations {
		if e.Verdict == reports.Failed && !strings.HasPrefix(e.Name, string(scenarios.Fenced)+" ") {
			return
		}
	}
	var stalls []ProcessEvent
	for _, p := range h.Processes {
		if p.Kind == "stalled" || p.Kind == "resumed" {
			stalls = append(stalls, p)
		}
	}
	for _, a := range h.Attempts {
		if a.Result != "failed" && a.Result != "applied" {
			continue
		}
		for i, p := range stalls {
			if p.Kind != "stalled" || p.Worker != a.Worker || p.AtMs < a.AtMs || p.AtMs > a.EndMs {
				continue
			}
			until := a.EndMs
			for _, q := range stalls[i+1:] {
				if q.Worker == p.Worker && q.Kind == "resumed" {
					until = q.AtMs
					break
				}
			}
			what := "never reached the store (its completion failed: the store call did not answer in time after the worker resumed)"
			if a.Result == "applied" {
				if !movedWhileFrozen(h, a.JobID, p.AtMs, until) {
					continue // applied after the worker resumed: the fence's failure
				}
				what = "left before the freeze landed (the store applied its move while the worker was frozen)"
			}
			why := fmt.Sprintf("the answer of %s's %s, frozen from +%s to +%s, %s, so the fence was never put to the test: %s cannot be judged", a.Worker, a.JobID,
				time.Duration(p.AtMs)*time.Millisecond, time.Duration(until)*time.Millisecond, what, scenarios.Fenced)
			res.Warnings = append(res.Warnings, why)
			res.Verdict, res.Error = reports.Inconclusive, why
			return
		}
	}
}

// movedWhileFrozen says the store moved job id out of flight in [from,
// until]: a completion written while its worker was frozen.
func movedWhileFrozen(h *History, id string, from, until int64) bool {
	return slices.ContainsFunc(h.Events, func(e Event) bool {
		return e.JobID == id && e.From == disposition.InFlight.String() && e.AtMs >= from && e.AtMs <= until
	})
}

// JudgeEvidence checks that every job any part of the drill saw — the
// producer, a fault gateway, a worker's report, the DLQ at the end — is
// in the ledger: a job seen but never accounted for means the history
// lost evidence (an event stream read short, a store restarted under
// the drill), and a verdict over part of the jobs is not a pass. The
// missing evidence is named, and the verdict is inconclusive unless the
// system already failed on what was seen.
func JudgeEvidence(res *reports.Result, h *History, led *Ledger) {
	missing := map[string][]string{}
	see := func(id, who string) {
		if id == "" || led.Job(id) != nil {
			return
		}
		if !slices.Contains(missing[who], id) {
			missing[who] = append(missing[who], id)
		}
	}
	for _, hj := range h.Jobs {
		if hj.Outcome == "ok" {
			see(hj.ID, "the producer")
		}
	}
	for _, c := range h.Calls {
		see(c.JobID, "a fault gateway")
	}
	for _, a := range h.Attempts {
		see(a.JobID, "a worker's report")
	}
	for _, raw := range h.DLQ {
		var probe struct {
			Job struct{ ID string } `json:"job"`
		}
		if json.Unmarshal(raw, &probe) == nil {
			see(probe.Job.ID, "the DLQ at the end")
		}
	}
	if len(missing) == 0 {
		return
	}
	var parts []string
	for _, who := range slices.Sorted(maps.Keys(missing)) {
		ids := missing[who]
		slices.Sort(ids)
		ex := ids[:min(3, len(ids))]
		parts = append(parts, fmt.Sprintf("%d seen by %s (e.g. %s)", len(ids), who, strings.Join(ex, ", ")))
	}
	why := fmt.Sprintf("missing evidence: jobs the drill saw but its history does not account for — %s: the store's event stream or the producer's record is short (was the store restarted or its stream trimmed under the drill?), so the ledger covers part of the jobs only", strings.Join(parts, "; "))
	res.Warnings = append(res.Warnings, why)
	if res.Verdict == reports.Passed {
		res.Verdict, res.Error = reports.Inconclusive, why
	}
}

// JudgePace reads the drill's pace into res: the workload created against
// the scenario's, what was still pending after the settle (named), and
// the slip. A drill that fell behind its scale, or did not create the
// scenario's workload, cannot tell a slow machine from a wrong system:
// unless an invariant was violated (that is the system's, at any pace),
// its verdict is inconclusive, never a pass and never a fail.
func JudgePace(res *reports.Result, h *History, sc *scenarios.Scenario, led *Ledger) {
	res.Live.Slip = h.Slip.Report()
	if h.Slip != nil && h.Slip.AutoScale != "" {
		res.Warnings = append(res.Warnings, fmt.Sprintf("--time-scale auto chose %v: %s", h.TimeScale, h.Slip.AutoScale))
	}
	why := h.Slip.Past()
	if h.Planned > 0 {
		created := 0
		for _, hj := range h.Jobs {
			if hj.Outcome == "ok" || led.Job(hj.ID) != nil {
				created++
			}
		}
		var maxLag int64
		for _, hj := range h.Jobs {
			maxLag = max(maxLag, hj.LagMs)
		}
		res.Warnings = append(res.Warnings, fmt.Sprintf("workload: %d of the scenario's %d jobs created (the latest %s after its instant)", created, h.Planned, time.Duration(maxLag)*time.Millisecond))
		if created < h.Planned && h.Interrupted == "" && why == "" {
			why = fmt.Sprintf("the drill created %d of the scenario's %d jobs: it did not run the scenario's workload", created, h.Planned)
		}
		if late := LateJobs(h, sc); late != "" && h.Interrupted == "" && why == "" {
			why = late
		}
	}
	if h.SettleMs > 0 && h.SettledMs < 0 {
		ids := led.Pending()
		more := ""
		if len(ids) > 10 {
			more = fmt.Sprintf(" and %d more", len(ids)-10)
			ids = ids[:10]
		}
		res.Warnings = append(res.Warnings, fmt.Sprintf("still pending after the settle of %s past the scenario's end: %s%s",
			time.Duration(h.SettleMs-h.DurationMs)*time.Millisecond, strings.Join(ids, ", "), more))
	}
	if why == "" || (res.Verdict != reports.Passed && res.Verdict != reports.Failed) {
		return
	}
	if res.Verdict == reports.Passed && h.Planned > 0 && h.Slip.PastBut("store") == "" && !strings.HasPrefix(why, "the drill created") {
		// Only the store was slow (Redis's answers to the drill's probe):
		// what that can change is when each job was made (every job's own
		// lag was judged above: none was made past the fault window it
		// was due in, or past the end) and whether a lease ran out before
		// its heartbeat (a job run again, which a lease-bound invariant or
		// an expectation would show). With every expectation and
		// invariant held, the slow store changed nothing the verdict
		// rests on; a failed expectation or a lease-bound violation
		// beside it stays inconclusive.
		res.Warnings = append(res.Warnings, why+" (only the store ran slow; every job was made in time for the faults it was due in, and every expectation and invariant held: the verdict stands)")
		return
	}
	if len(res.Violations) > 0 {
		var timed []string
		for _, v := range res.Violations {
			if !paceBound[v.Invariant] {
				res.Warnings = append(res.Warnings, why+" (the invariant "+v.Invariant+" holds at any pace: its violation is the system's, and the verdict stands)")
				return
			}
			if !slices.Contains(timed, v.Invariant) {
				timed = append(timed, v.Invariant)
			}
		}
		why += "; the violations of " + strings.Join(timed, ", ") +
			" depend on leases and timeouts the drill ran late against: drill at a slower --time-scale to judge them"
	}
	res.Verdict, res.Error = reports.Inconclusive, why
}

// paceBound are the invariants a drill that fell behind its time scale
// cannot judge: each rests on a lease, a timeout or a window (a store
// answer later than the scaled lease lets the lease expire, and the job
// runs again), so a late harness breaks them in a correct system. The
// others (nothing lost, legal moves, one DLQ entry, no retry of a final
// failure, legal breaker moves, an outcome that is its move) hold at any
// pace: their violation fails a drill whatever its slip.
var paceBound = map[string]bool{
	InvNoDoubleCharge:     true,
	InvNoRerunAfterDead:   true,
	InvNoLeaseLeftExpired: true,
	InvCriticalPaged:      true,
	InvOnePage:            true,
	InvAttempts:           true,
}
