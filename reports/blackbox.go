package reports

import (
	"fmt"
	"strconv"
	"strings"
)

// unobserved is an expectation or invariant a black-box drill could not
// judge from outside the system, and why.
type unobserved struct {
	// Kind is "invariant" or "expectation".
	Kind, Name, Why string
}

// notObservable lists r's not-observable invariants, then its
// not-observable expectations.
func notObservable(r *Result) []unobserved {
	var out []unobserved
	for _, inv := range r.InvariantResults() {
		if inv.Verdict == NotObservable {
			out = append(out, unobserved{"invariant", inv.Name, inv.Note})
		}
	}
	for _, e := range expectationsWith(r, NotObservable) {
		out = append(out, unobserved{"expectation", e.Name, e.Actual})
	}
	return out
}

// invariantTally counts r's invariants by verdict, e.g. "12 passed, 1
// failed, 4 not observable" (a count of none is left out).
func invariantTally(r *Result) string {
	n := map[Verdict]int{}
	for _, inv := range r.InvariantResults() {
		n[inv.Verdict]++
	}
	var parts []string
	for _, c := range []struct {
		v    Verdict
		word string
	}{{Passed, "passed"}, {Failed, "failed"}, {Skipped, "not checked"}, {Errored, "errored"}, {NotObservable, "not observable"}} {
		if n[c.v] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[c.v], c.word))
		}
	}
	return strings.Join(parts, ", ")
}

// extListCap is how many job IDs of the lost or trimmed jobs a report
// shows on their line.
const extListCap = 10

// externalFact is one line of the system-under-test block of a black-box
// drill: a label and its text; Bad marks the lost and trimmed jobs.
type externalFact struct {
	Label, Text string
	Bad         bool
}

// externalFacts describes the system a black-box drill judged: its
// command (or that it was already running), its copies, the inject and
// DLQ adapters, the drain, the DLQ's reads and the lost and trimmed
// jobs. lost is the ledger's count of lost jobs (x.Lost lists at most
// MaxListedViolations of them).
func externalFacts(x *External, lost int64) []externalFact {
	var out []externalFact
	add := func(label, text string, bad bool) { out = append(out, externalFact{label, text, bad}) }
	if x.Running {
		add("command", "already running: the drill started nothing, so it could not crash or stall it", false)
	} else {
		cmd := x.Command
		if cmd == "" {
			cmd = "(not recorded)"
		}
		add("command", cmd, false)
		add("copies", strconv.Itoa(x.Copies), false)
	}
	if x.Ready != "" {
		add("ready", x.Ready, false)
	}
	add("inject", orNone(x.Inject), false)
	add("DLQ", orNone(x.DLQ), false)
	settled := "every job settled at " + fmtOffset(x.SettledAtMs)
	if x.SettledAtMs < 0 {
		settled = "some jobs never settled"
	}
	if w := x.PageWait; w != nil {
		paged := fmt.Sprintf("paged at %s", fmtOffset(w.PagedMs))
		if w.PagedMs < 0 {
			paged = fmt.Sprintf("not paged by %s", fmtOffset(w.UntilMs))
			if w.DeadlineMs > w.UntilMs {
				paged += " (the drain ended first: a longer system.external.drain waits for it)"
			}
		}
		settled += fmt.Sprintf("; then waited from %s for the page owed for the critical failure of %s at %s (deadline %s): %s",
			fmtOffset(w.FromMs), w.Dependency, fmtOffset(w.IncidentMs), fmtOffset(w.DeadlineMs), paged)
	}
	add("drain", fmt.Sprintf("waited up to %s after the scenario's end; %s", msDuration(x.DrainMs), settled), false)
	reads := strconv.Itoa(x.DLQReads)
	if x.DLQReadErrors > 0 {
		reads += fmt.Sprintf(" (%d failed)", x.DLQReadErrors)
	}
	add("DLQ reads", reads, false)
	if len(x.Lost) > 0 || lost > 0 {
		n := int64(len(x.Lost))
		if n == MaxListedViolations {
			n = max(n, lost)
		}
		add("Lost", fmt.Sprintf("%d %s%s: neither succeeded, nor in the DLQ, nor queued at the end", n, plural(int(n), "job", "jobs"), jobList(x.Lost, n)), true)
	}
	if len(x.Trimmed) > 0 {
		n, atLeast := int64(len(x.Trimmed)), ""
		switch {
		case x.TrimmedCount > n:
			n = x.TrimmedCount
		case n == MaxListedViolations:
			atLeast = "at least " // a report of an older faultline, without the count
		}
		add("Trimmed", fmt.Sprintf("%s%d %s%s: trimmed from the DLQ by no declared mechanism", atLeast, n, plural(int(n), "job", "jobs"), jobList(x.Trimmed, n)), true)
	}
	return out
}

// jobList writes the first extListCap of ids as " (a, b, …)", the
// ellipsis when there are more than it shows (total in all).
func jobList(ids []string, total int64) string {
	if len(ids) == 0 {
		return ""
	}
	shown := ids[:min(len(ids), extListCap)]
	more := ""
	if int64(len(shown)) < total {
		more = ", …"
	}
	return " (" + strings.Join(shown, ", ") + more + ")"
}

func orNone(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// notObservableNote is an invariant's "not observable" line: "from
// outside" for a black-box drill's, and the note as it is when it says so
// itself.
func notObservableNote(r *Result, note string) string {
	if strings.HasPrefix(note, "not observable") {
		return note
	}
	if r.Live != nil && r.Live.External != nil {
		return "not observable from outside: " + note
	}
	return "not observable: " + note
}
