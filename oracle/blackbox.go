package oracle

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
)

// blackInvariants are the invariants a black-box report lists, in its
// order: those it has a check for from outside, then the ledger's others
// (not observable from outside, each saying what it reads), the planted-
// secrets one only for a scenario that plants secrets.
func blackInvariants(secrets bool) []string {
	out := []string{InvConservation, InvNotBoth, InvNoMoveAfterDone, InvOneDLQEntry, InvDLQNeverShrinks, InvNoDoubleCharge, InvNoRetryOfFinal,
		InvNoRerunAfterDead, InvCriticalPaged, InvOnePage, InvDLQSeverity, InvDLQEntryComplete, InvAttempts, InvTransientRetried}
	for _, name := range Invariants() {
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	if secrets {
		out = append(out, InvNoSecretLeaves)
	}
	return out
}

// blackJob is one injected job as the black-box oracle follows it.
type blackJob struct {
	h Job
	// calls are its calls, in arrival order.
	calls []Call
	// okAt is the first successful call's offset (-1: none).
	okAt int64
	// inDLQ counts its active entries at the end; everDLQ says a read
	// saw it there; firstDLQ when; leftDLQ a read saw it leave.
	inDLQ    int
	everDLQ  bool
	firstDLQ int64
	leftDLQ  bool
	// dlqAfter is the read before firstDLQ that did not see the job (0
	// for none): its entry was written in (dlqAfter, firstDLQ].
	dlqAfter int64
	queued   bool
	severity string
	// dupSeen says a duplicate entry was already reported.
	dupSeen bool
}

// unseen says the job's injection timed out and the system never showed
// it: not the system's, as far as anyone can tell.
func (j *blackJob) unseen() bool {
	return j.h.Outcome == "unknown" && len(j.calls) == 0 && !j.everDLQ && j.inDLQ == 0
}

// blackJudge judges a black-box history.
type blackJudge struct {
	sc  *scenarios.Scenario
	h   *History
	x   *ExternalRun
	res *reports.Result
	// counts are the violations per invariant; checked the invariants
	// judged.
	counts map[string]int64
	jobs   map[string]*blackJob
	order  []string
	// callJobs says the calls carry their jobs' IDs (EvCallJobs): without
	// them a job's success cannot be seen, and none is called lost.
	callJobs bool
}

func (b *blackJudge) fail(inv, job string, at int64, format string, args ...any) {
	b.counts[inv]++
	if b.counts[inv] > reports.MaxListedViolations {
		return
	}
	b.res.Violations = append(b.res.Violations, reports.Violation{Invariant: inv, Message: fmt.Sprintf(format, args...), JobID: job, AtMs: at, Seed: b.h.Seed})
}

// JudgeBlackBox computes a black-box drill's result from its history
// alone: every invariant that can be judged from outside (the call log,
// the deliveries, the DLQ's reads, the queue at the end), each named, and
// those that cannot listed as not observable.
func JudgeBlackBox(sc scenarios.Scenario, h *History) *reports.Result {
	// The judge reads the history in time order, whatever order a hand-
	// edited file gives.
	h = sortedHistory(h)
	x := h.External
	res := &reports.Result{ReportVersion: reports.ReportVersion, Scenario: sc.Name, Description: sc.Description, Seed: h.Seed,
		DurationMs: sc.Duration.Milliseconds(), EndedAtMs: h.EndedMs, Expectations: []reports.Expectation{}, Violations: []reports.Violation{},
		Fates: []reports.JobFate{}, Breakers: []reports.Transition{}, Confusion: []reports.Confusion{}, Steps: []reports.Step{}}
	b := &blackJudge{sc: &sc, h: h, x: x, res: res, counts: map[string]int64{}, jobs: map[string]*blackJob{}}
	for _, hj := range h.Jobs {
		if hj.Outcome == "failed" {
			continue // never the system's
		}
		b.jobs[hj.ID] = &blackJob{h: hj, okAt: -1, firstDLQ: -1}
		b.order = append(b.order, hj.ID)
	}
	for _, c := range h.Calls {
		if j := b.jobs[c.JobID]; j != nil {
			j.calls = append(j.calls, c)
			if j.okAt < 0 && (c.Outcome == "ok" || c.Outcome == "replayed") {
				j.okAt = c.AtMs
			}
		}
	}
	for _, id := range x.Queued {
		if j := b.jobs[id]; j != nil {
			j.queued = true
		}
	}
	corrupt := 0
	for _, e := range x.Entries {
		switch {
		case e.Corrupt != "":
			corrupt++
		case e.Inactive:
		default:
			if j := b.jobs[e.JobID]; j != nil {
				j.inDLQ++
				if j.severity == "" {
					j.severity = e.Severity
				}
			}
		}
	}
	res.Faults = JudgedFaults(&sc, h)
	res.Warnings = append(res.Warnings, h.Notes...)
	if h.Interrupted != "" {
		res.Verdict, res.Error = reports.Interrupted, h.Interrupted
	}
	if corrupt > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%d DLQ entries could not be read (corrupt or without a job ID at the layout's id path): shown in the DLQ, and the jobs they hold cannot be named", corrupt))
	}
	if n := countFunc(h.Calls, func(c Call) bool { return c.JobID == "" }); n > 0 && n < len(h.Calls) {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%d of the %d calls to the dependencies carried no job ID (X-Faultline-Job): they are counted for the dependencies, but no job's rules see them", n, len(h.Calls)))
	}
	for _, e := range x.InjectErrors {
		res.Warnings = append(res.Warnings, fmt.Sprintf("job %s could not be injected at %s: %s (not judged: it was never the system's)", e.JobID, fmtMs(e.AtMs), e.Error))
	}
	if len(x.ReadErrors) > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%d of the DLQ's reads failed (first at %s: %s): what changed between the others is judged", len(x.ReadErrors), fmtMs(x.ReadErrors[0].AtMs), x.ReadErrors[0].Error))
	}

	judged := h.Interrupted == ""
	obs := h.Observed()
	b.callJobs = obs.Has(EvCallJobs)
	if !b.callJobs {
		res.Warnings = append(res.Warnings, "the system's calls carried no job ID (X-Faultline-Job): which jobs succeeded cannot be seen, so the jobs neither in the DLQ nor queued are counted pending, not lost, and every rule that follows a job's calls is not observable")
	}
	if b.policy() == nil {
		obs.lack(EvPolicy, whyNoPolicy)
	}
	pageWithin := sc.Invariants.PageWithin
	// Each check runs when the history has what it reads.
	can := func(name string) bool { return obs.Has(InvariantReads(name, FromOutside)) }
	b.reads()
	b.conservation()
	b.charges()
	b.finalRetries()
	b.runsAfterSuccess()
	retriesNote := b.retries()
	pagesNote := ""
	if can(InvCriticalPaged) && pageWithin >= 0 {
		pagesNote = b.pages(pageWithin)
	}
	if can(InvDLQSeverity) {
		b.severities()
	}
	b.entriesComplete()
	notes := map[string]string{
		InvConservation:    "judged at the end, after the drain: in between, the system's own queues are not observable",
		InvDLQNeverShrinks: shrinkNote(b.shrinks()) + b.capNote(),
		InvAttempts:        retriesNote,
		InvCriticalPaged:   b.paging().Note(),
	}
	invs := []reports.InvariantResult{}
	for _, name := range blackInvariants(len(sc.Invariants.Secrets) > 0) {
		r := reports.InvariantResult{Name: name, Verdict: reports.Passed, Violations: b.counts[name], Note: notes[name]}
		why, lacking := obs.Lacks(InvariantReads(name, FromOutside))
		switch {
		case lacking:
			r.Verdict, r.Note, r.Violations = reports.NotObservable, why, 0
		case name == InvCriticalPaged && pagesNote != "" && b.counts[name] == 0 && judged && pageWithin >= 0:
			r.Verdict, r.Note = reports.NotObservable, pagesNote
		case pageWithin < 0 && (name == InvCriticalPaged || name == InvOnePage):
			r.Verdict, r.Note = reports.Skipped, "turned off (invariants.pageWithin < 0)"
		case !judged:
			r.Verdict, r.Note = reports.Skipped, "the drill was interrupted: "+h.Interrupted
		case b.counts[name] > 0:
			r.Verdict = reports.Failed
		}
		invs = append(invs, r)
	}
	res.Invariants = invs
	// A check that ran but whose evidence is lacking (conservation without
	// the calls' job IDs) says nothing: its violations go with its verdict.
	res.Violations = slices.DeleteFunc(res.Violations, func(v reports.Violation) bool {
		return slices.ContainsFunc(invs, func(r reports.InvariantResult) bool {
			return r.Name == v.Invariant && r.Verdict == reports.NotObservable
		})
	})
	slices.SortStableFunc(res.Violations, func(a, b reports.Violation) int { return cmp.Compare(a.AtMs, b.AtMs) })
	if !judged {
		// Judged on part of a drill, a violation would mean nothing.
		res.Violations = []reports.Violation{}
	}

	b.ledger()
	b.dlq()
	b.alerts()
	b.expectations()
	FaultChecks(res, h.Interrupted)
	if h.Interrupted != "" {
		for i := range res.Expectations {
			res.Expectations[i].Verdict = reports.Skipped
		}
	}
	res.Live = LiveSection(h)
	res.Live.External = b.external()
	if h.Aborted != "" && res.Verdict == "" {
		res.Verdict, res.Error = reports.Interrupted, "aborted: "+h.Aborted
	}
	if res.Verdict == "" {
		res.Verdict = reports.Passed
		for _, inv := range res.Invariants {
			if inv.Verdict == reports.Failed {
				res.Verdict = reports.Failed
			}
		}
		for _, e := range res.Expectations {
			if e.Verdict == reports.Failed {
				res.Verdict = reports.Failed
			}
		}
	}
	return res
}

// countFunc counts the elements of xs for which f is true.
func countFunc[T any](xs []T, f func(T) bool) int {
	n := 0
	for _, x := range xs {
		if f(x) {
			n++
		}
	}
	return n
}

func fmtMs(ms int64) string { return "+" + (time.Duration(ms) * time.Millisecond).String() }

// sortedHistory returns h with its calls, deliveries and reads in time
// order (stable: the order of one instant is kept).
func sortedHistory(h *History) *History {
	c := *h
	byAt := func(a, b int64) int { return cmp.Compare(a, b) }
	c.Calls = slices.Clone(h.Calls)
	slices.SortStableFunc(c.Calls, func(a, b Call) int { return byAt(a.AtMs, b.AtMs) })
	c.Deliveries = slices.Clone(h.Deliveries)
	slices.SortStableFunc(c.Deliveries, func(a, b Delivery) int { return byAt(a.AtMs, b.AtMs) })
	c.Processes = slices.Clone(h.Processes)
	slices.SortStableFunc(c.Processes, func(a, b ProcessEvent) int { return byAt(a.AtMs, b.AtMs) })
	x := *h.External
	x.Reads = slices.Clone(h.External.Reads)
	slices.SortStableFunc(x.Reads, func(a, b DLQRead) int { return byAt(a.AtMs, b.AtMs) })
	c.External = &x
	return &c
}
