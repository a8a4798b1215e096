package reports

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
)

// The kinds of Change.
const (
	// ChangeScenario: the two reports are of different scenarios (a
	// regression: the comparison means nothing), or of a different seed
	// or scenario document (noted, not a regression).
	ChangeScenario = "scenario"
	// ChangeVerdict: the run's verdict changed; worse is a regression
	// (passed, inconclusive, failed, then errored or interrupted, best
	// first: passed to inconclusive is one, inconclusive to passed not).
	ChangeVerdict = "verdict"
	// ChangeExpectation: an expectation flipped, appeared or disappeared;
	// one that now fails is a regression; one that became observable or
	// not observable (a black-box drill's) is shown, never a regression.
	ChangeExpectation = "expectation"
	// ChangeViolation: an invariant violation appeared (a regression) or
	// disappeared, or an invariant was checked in one run and not checked
	// or not observable in the other (noted).
	ChangeViolation = "violation"
	// ChangeDisposition: a count of where jobs ended moved; more lost jobs
	// are a regression.
	ChangeDisposition = "disposition"
	// ChangeAlerts: the notifications or pages sent changed.
	ChangeAlerts = "alerts"
)

// Change is one difference between two runs.
type Change struct {
	// Kind is one of the Change* constants.
	Kind string
	// What names what changed: the expectation, the invariant, the count.
	What string
	// Old and New are its value in each run ("" where it was absent).
	Old, New string
	// Regression says the change makes the new run worse: lost jobs went
	// up, an invariant is now violated, an expectation now fails, the
	// verdict got worse, or the runs are of different scenarios.
	Regression bool
}

// DiffResult is what changed between two runs of one scenario.
type DiffResult struct {
	// Scenario is the new run's scenario.
	Scenario string
	// Changes are in report order: scenario, verdict, expectations,
	// violations, dispositions, alerts.
	Changes []Change
	// Regression says any change is one.
	Regression bool
}

// Diff says what changed between two runs of the same scenario, old and
// new — typically two versions of a team's failure handling on the same
// seed: the verdict, expectations that flipped, violations that appeared
// or disappeared, ledger dispositions that moved (overall and per task),
// and alert counts. Each change says whether it is a regression. The tool
// version is ignored. Neither run may be nil.
func Diff(old, new *Result) DiffResult {
	d := DiffResult{Scenario: new.Scenario}
	add := func(c Change) {
		d.Changes = append(d.Changes, c)
		d.Regression = d.Regression || c.Regression
	}

	if old.Scenario != new.Scenario {
		add(Change{Kind: ChangeScenario, What: "scenario", Old: old.Scenario, New: new.Scenario, Regression: true})
	}
	if old.Seed != new.Seed {
		add(Change{Kind: ChangeScenario, What: "seed", Old: strconv.FormatUint(old.Seed, 10), New: strconv.FormatUint(new.Seed, 10)})
	}
	if old.ScenarioHash != new.ScenarioHash && old.ScenarioHash != "" && new.ScenarioHash != "" {
		add(Change{Kind: ChangeScenario, What: "scenario document", Old: old.ScenarioHash, New: new.ScenarioHash})
	}

	if old.Verdict != new.Verdict {
		add(Change{Kind: ChangeVerdict, What: "verdict", Old: string(old.Verdict), New: string(new.Verdict),
			Regression: verdictRank(new.Verdict) > verdictRank(old.Verdict)})
		// What made a drill inconclusive, said beside the verdict it
		// came to or left: the slip, not the system, is what changed.
		switch {
		case new.Verdict == Inconclusive && new.Error != "":
			add(Change{Kind: ChangeVerdict, What: "inconclusive", New: firstLine(new.Error)})
		case old.Verdict == Inconclusive && old.Error != "":
			add(Change{Kind: ChangeVerdict, What: "inconclusive", Old: firstLine(old.Error)})
		}
	}

	if old.EndedAtMs != new.EndedAtMs {
		// An interrupted run (or, in a version-1 report, one stopped by
		// its first violation) covers less time: its dispositions are not
		// comparable with a full run's.
		add(Change{Kind: ChangeVerdict, What: "run ended at", Old: runEnd(old), New: runEnd(new)})
	}

	oldExp := make(map[string]Expectation, len(old.Expectations))
	for _, e := range old.Expectations {
		oldExp[e.Name] = e
	}
	seen := make(map[string]bool, len(new.Expectations))
	for _, e := range new.Expectations {
		seen[e.Name] = true
		o, ok := oldExp[e.Name]
		switch {
		case !ok:
			add(Change{Kind: ChangeExpectation, What: e.Name, New: expectationState(e), Regression: e.Verdict != Passed && e.Verdict != NotObservable})
		case o.Verdict != e.Verdict:
			// To or from not observable is shown, never a regression: one
			// of the two runs could not judge it, so neither is worse.
			add(Change{Kind: ChangeExpectation, What: e.Name, Old: expectationState(o), New: expectationState(e),
				Regression: o.Verdict != NotObservable && e.Verdict != NotObservable && verdictRank(e.Verdict) > verdictRank(o.Verdict)})
		}
	}
	for _, e := range old.Expectations {
		if !seen[e.Name] {
			add(Change{Kind: ChangeExpectation, What: e.Name, Old: expectationState(e)})
		}
	}

	for _, v := range new.Violations {
		if _, ok := violationOf(old, v.Invariant); !ok {
			add(Change{Kind: ChangeViolation, What: v.Invariant, New: v.Message, Regression: true})
		}
	}
	for _, v := range old.Violations {
		if _, ok := violationOf(new, v.Invariant); !ok {
			add(Change{Kind: ChangeViolation, What: v.Invariant, Old: v.Message})
		}
	}
	if old.Invariants != nil && new.Invariants != nil {
		// Both count every violation (version 2): more of an invariant's
		// violations is a regression; an invariant that stopped being
		// checked, or became observable or not, is noted.
		oldInv := map[string]InvariantResult{}
		for _, inv := range old.Invariants {
			oldInv[inv.Name] = inv
		}
		for _, inv := range new.Invariants {
			o, ok := oldInv[inv.Name]
			if !ok {
				continue
			}
			if o.Violations > 0 && inv.Violations > 0 && o.Violations != inv.Violations {
				add(Change{Kind: ChangeViolation, What: inv.Name + " violations", Old: strconv.FormatInt(o.Violations, 10),
					New: strconv.FormatInt(inv.Violations, 10), Regression: inv.Violations > o.Violations})
			}
			if invariantState(o) != invariantState(inv) {
				add(Change{Kind: ChangeViolation, What: inv.Name + " checked", Old: invariantStateNote(o), New: invariantStateNote(inv)})
			}
		}
	}

	oldDisp, newDisp := dispositions(old.Ledger), dispositions(new.Ledger)
	for i, n := range newDisp {
		if o := oldDisp[i]; o.n != n.n {
			add(Change{Kind: ChangeDisposition, What: n.name, Old: strconv.FormatInt(o.n, 10), New: strconv.FormatInt(n.n, 10),
				Regression: n.name == "lost" && n.n > o.n})
		}
	}
	oldTasks := make(map[string]TaskTotals, len(old.Ledger.ByTask))
	for _, t := range old.Ledger.ByTask {
		oldTasks[t.Task] = t
	}
	for _, t := range new.Ledger.ByTask {
		o := oldTasks[t.Task]
		for i, n := range taskDispositions(t) {
			if on := taskDispositions(o)[i].n; on != n.n {
				add(Change{Kind: ChangeDisposition, What: "task " + t.Task + ": " + n.name, Old: strconv.FormatInt(on, 10), New: strconv.FormatInt(n.n, 10)})
			}
		}
	}

	for _, c := range []struct {
		what     string
		old, new int64
	}{
		{"notifications", old.Alerts.Notifications, new.Alerts.Notifications},
		{"pages", old.Alerts.Pages, new.Alerts.Pages},
		{"rejected sends", old.Alerts.Rejected, new.Alerts.Rejected},
	} {
		if c.old != c.new {
			add(Change{Kind: ChangeAlerts, What: c.what, Old: strconv.FormatInt(c.old, 10), New: strconv.FormatInt(c.new, 10)})
		}
	}
	receivers := maps.Clone(new.Alerts.ByReceiver)
	if receivers == nil {
		receivers = map[string]int64{}
	}
	maps.Copy(receivers, old.Alerts.ByReceiver)
	for _, rc := range slices.Sorted(maps.Keys(receivers)) {
		if o, n := old.Alerts.ByReceiver[rc], new.Alerts.ByReceiver[rc]; o != n {
			add(Change{Kind: ChangeAlerts, What: "notifications to " + rc, Old: strconv.FormatInt(o, 10), New: strconv.FormatInt(n, 10)})
		}
	}
	return d
}

// invariantState says whether an invariant was checked: "checked", "not
// checked" or "not observable".
func invariantState(inv InvariantResult) string {
	switch inv.Verdict {
	case Skipped:
		return "not checked"
	case NotObservable:
		return "not observable"
	}
	return "checked"
}

// invariantStateNote is invariantState with why it was not checked or not
// observable.
func invariantStateNote(inv InvariantResult) string {
	if s := invariantState(inv); s != "checked" {
		return s + " (" + inv.Note + ")"
	}
	return "checked"
}

// ErrDifferentScenarios is matched (errors.Is) by the error Comparable
// returns for two reports of different scenarios.
var ErrDifferentScenarios = errors.New("the reports are of different scenarios")

// Comparable says whether Diff of old and new means anything: they must be
// runs of the same scenario (the seed and the document may differ, and
// are noted).
func Comparable(old, new *Result) error {
	if old.Scenario != new.Scenario {
		return fmt.Errorf("%w: %q and %q; report diff compares two runs of one scenario (two versions of a team's handler, say)",
			ErrDifferentScenarios, old.Scenario, new.Scenario)
	}
	return nil
}

// verdictRank orders verdicts from best to worst: passed; inconclusive
// (judged, but the drill's harness fell behind: not a pass, yet no
// failure of the system seen); failed; then the runs that were not
// carried out to their end (errored, interrupted).
func verdictRank(v Verdict) int {
	switch v {
	case Passed:
		return 0
	case Inconclusive:
		return 1
	case Failed:
		return 2
	}
	return 3
}

// runEnd says where a run ended: "+10m0s", or "+3m0.031s of 10m0s".
func runEnd(r *Result) string {
	if r.EndedAtMs < r.DurationMs {
		return fmt.Sprintf("%s of %s", fmtOffset(r.EndedAtMs), msDuration(r.DurationMs))
	}
	return fmtOffset(r.EndedAtMs)
}

// expectationState is an expectation's verdict and actual value, e.g.
// "failed (actual 0)".
func expectationState(e Expectation) string {
	return fmt.Sprintf("%s (actual %s)", e.Verdict, e.Actual)
}

// dispositions are where jobs ended, in model order.
func dispositions(l Ledger) []namedCount {
	return []namedCount{
		{"created", l.Created}, {"queued", l.Queued}, {"in flight", l.InFlight}, {"scheduled", l.Scheduled},
		{"fallback", l.Fallback}, {"held", l.HeldAtEnd}, {"dead-lettered", l.DeadLettered}, {"succeeded", l.Succeeded},
		{"removed", l.Removed}, {"lost", l.Lost},
	}
}

func taskDispositions(t TaskTotals) []namedCount {
	return []namedCount{
		{"created", t.Created}, {"succeeded", t.Succeeded}, {"dead-lettered", t.DeadLettered},
		{"pending", t.Pending}, {"fallback", t.Fallback}, {"removed", t.Removed},
	}
}

// WriteDiff writes d for a terminal or a CI log: one line per change,
// regressions marked, and a closing line saying whether any change is a
// regression.
func WriteDiff(w io.Writer, d DiffResult) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "report diff: %s\n", d.Scenario)
	if len(d.Changes) == 0 {
		fmt.Fprintln(bw, "  no changes")
	}
	for _, c := range d.Changes {
		mark := " "
		if c.Regression {
			mark = "✗"
		}
		switch {
		case c.Old == "":
			fmt.Fprintf(bw, "%s %-12s %s: new, %s\n", mark, c.Kind, c.What, c.New)
		case c.New == "":
			fmt.Fprintf(bw, "%s %-12s %s: gone, was %s\n", mark, c.Kind, c.What, c.Old)
		default:
			fmt.Fprintf(bw, "%s %-12s %s: %s → %s\n", mark, c.Kind, c.What, c.Old, c.New)
		}
	}
	n := 0
	for _, c := range d.Changes {
		if c.Regression {
			n++
		}
	}
	if d.Regression {
		fmt.Fprintf(bw, "regression: %d of %d %s (marked ✗)\n", n, len(d.Changes), plural(len(d.Changes), "change", "changes"))
	} else {
		fmt.Fprintln(bw, "no regression")
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write report diff: %w", err)
	}
	return nil
}
