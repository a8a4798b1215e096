package oracle

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/layout"
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

// shrinks are the declared ways out of the DLQ: the scenario's (judged
// again with `report check --scenario`, its own), else the history's.
func (b *blackJudge) shrinks() []string {
	if x := b.sc.System.External; x != nil {
		return x.DLQShrinks
	}
	return b.x.DLQShrinks
}

func shrinkNote(declared []string) string {
	if len(declared) == 0 {
		return "no mechanism declared (system.external.dlqShrinks): every entry that leaves the DLQ is a violation"
	}
	return "declared: " + strings.Join(declared, ", ") + " — entries leaving the DLQ are counted, not failed"
}

// capNote names the cap an undeclared shrink looks like: entries that
// left one list from its tail (each at a position in its far half), the
// deepest at position N−1, are what a cap of N entries drops (the seed's
// LTRIM to 10,000). "" when the removals show none.
func (b *blackJudge) capNote() string {
	if len(b.shrinks()) > 0 {
		return ""
	}
	type list struct{ n, shallowest, deepest int }
	lists := map[string]*list{}
	var names []string
	for _, r := range b.x.Reads {
		for _, it := range r.Removed {
			open := strings.LastIndexByte(it.Source, '[')
			var idx int
			if open < 0 || !strings.HasSuffix(it.Source, "]") {
				return ""
			}
			if _, err := fmt.Sscanf(it.Source[open+1:len(it.Source)-1], "%d", &idx); err != nil {
				return ""
			}
			name := it.Source[:open]
			l := lists[name]
			if l == nil {
				l = &list{shallowest: idx}
				lists[name] = l
				names = append(names, name)
			}
			l.n++
			l.shallowest, l.deepest = min(l.shallowest, idx), max(l.deepest, idx)
		}
	}
	var caps []string
	for _, name := range names {
		l := lists[name]
		n := l.deepest + 1
		if l.n >= 2 && n >= 2 && l.shallowest >= n/2 { // every one from the far half: the tail
			caps = append(caps, fmt.Sprintf("%d entries left %s from its tail, the deepest at position %s: a cap of %s entries (such as LTRIM %s 0 %d) drops the oldest dead letters silently",
				l.n, name, thousands(n-1), thousands(n), name, n-1))
		}
	}
	if len(caps) == 0 {
		return ""
	}
	return "; " + strings.Join(caps, "; ")
}

// thousands writes n with a comma every three digits: 10,000.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// reads replays the DLQ's reads: an entry seen twice for one job, an
// entry leaving by no declared mechanism.
func (b *blackJudge) reads() {
	cur := map[string]int{}
	allowed := len(b.shrinks()) > 0
	reads := b.x.Reads
	addedAt := func(k int, id string) bool {
		if k >= len(reads) {
			return false
		}
		return slices.ContainsFunc(reads[k].Added, func(it DLQItem) bool { return it.JobID == id })
	}
	for k, r := range reads {
		for _, it := range r.Added {
			j := b.jobs[it.JobID]
			if j == nil {
				continue // not a job of the drill's
			}
			cur[it.JobID]++
			if !j.everDLQ {
				j.everDLQ, j.firstDLQ = true, r.AtMs
				if k > 0 {
					j.dlqAfter = reads[k-1].AtMs
				}
			}
		}
		for _, it := range r.Removed {
			j := b.jobs[it.JobID]
			if j == nil {
				continue
			}
			cur[it.JobID]--
			if addedAt(k+1, it.JobID) {
				continue // moved (from one list to another) between two reads
			}
			j.leftDLQ = true
			if !allowed {
				b.fail(InvDLQNeverShrinks, it.JobID, r.AtMs, "job %s's entry left the DLQ by %s (it was at %s): the DLQ shrank and the scenario declares no way it may (dlqShrinks) — a trim (LTRIM), a cap or an expiry drops dead letters silently", it.JobID, fmtMs(r.AtMs), it.Source)
			}
		}
		// Two entries for one job, seen by two reads in a row (not a
		// move caught half-way) or at the end.
		for _, it := range r.Added {
			j := b.jobs[it.JobID]
			if j == nil || j.dupSeen || cur[it.JobID] < 2 {
				continue
			}
			if k+1 < len(reads) && slices.ContainsFunc(reads[k+1].Removed, func(x DLQItem) bool { return x.JobID == it.JobID }) {
				continue
			}
			j.dupSeen = true
			b.fail(InvOneDLQEntry, it.JobID, r.AtMs, "job %s has two entries in the DLQ at %s (the second at %s): one failed job, one entry — a retry that dead-letters again must replace its entry, not add one", it.JobID, fmtMs(r.AtMs), it.Source)
		}
	}
}

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

// severities: a job dead-lettered after a critical answer has an entry
// of high (or critical) severity.
func (b *blackJudge) severities() {
	for _, id := range b.order {
		j := b.jobs[id]
		if j.inDLQ == 0 || len(j.calls) == 0 {
			continue
		}
		last := j.calls[len(j.calls)-1]
		if last.Class != "critical" {
			continue
		}
		if s := strings.ToLower(j.severity); s != "" && s != "high" && s != "critical" {
			b.fail(InvDLQSeverity, id, b.h.EndedMs, "job %s was dead-lettered after %s but its entry's severity is %s: a critical failure's entry says high, so the DLQ's triage shows it first", id, answer(last), s)
		}
	}
}

// entriesComplete: every dead letter of a drill's job carries the job,
// its error, its attempt count and when it failed (at the layout's paths,
// else the seed's names) — what an operator triages by.
func (b *blackJudge) entriesComplete() {
	var f layout.Fields
	if x := b.sc.System.External; x != nil {
		f = x.DLQ.Resolved().Fields
	}
	for _, e := range b.x.Entries {
		if e.Corrupt != "" || e.Inactive || b.jobs[e.JobID] == nil {
			continue
		}
		if miss := layout.MissingMetadata(e.Raw, f); len(miss) > 0 {
			b.fail(InvDLQEntryComplete, e.JobID, b.h.EndedMs, "job %s's DLQ entry (%s) lacks %s: an operator cannot triage a dead letter without its error, attempts and time — the seed's DeadLetterHandler stores all three",
				e.JobID, e.Source, strings.Join(miss, ", "))
		}
	}
}

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
