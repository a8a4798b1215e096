package reports

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// inconclusiveNote says what an inconclusive run's expectations are
// worth: judged and shown, but neither a pass nor a fail.
func inconclusiveNote(r *Result) string {
	n := len(r.Expectations) - len(expectationsWith(r, NotObservable)) - len(skippedExpectations(r))
	return fmt.Sprintf("%d %s judged and shown, but a drill whose harness fell behind its time scale is neither a pass nor a fail (a lower --time-scale or a less loaded machine gives it room)",
		n, plural(n, "expectation", "expectations"))
}

func fmtMs(ms float64) string { return strconv.FormatFloat(ms, 'f', 2, 64) + "ms" }

// summaryLine is a run's totals on one line.
func summaryLine(r *Result) string {
	l := r.Ledger
	lost := fmt.Sprintf("%d lost", l.Lost)
	if n := l.Unaccounted() - l.Lost; n != 0 {
		// "0 lost" would read as proof above a count that does not add up
		// (a black box's lost jobs are in no state: counted once).
		lost += fmt.Sprintf(", %d not accounted for", n)
	}
	s := fmt.Sprintf("%d jobs: %d succeeded, %d dead-lettered, %d pending, %d in fallback, %s; %d %s, %d %s",
		l.Created, l.Succeeded, l.DeadLettered, l.Queued+l.InFlight+l.Scheduled+l.HeldAtEnd, l.Fallback, lost,
		r.Alerts.Notifications, plural(int(r.Alerts.Notifications), "notification", "notifications"),
		r.Alerts.Pages, plural(int(r.Alerts.Pages), "page", "pages"))
	n, failed, unseen := len(r.Expectations), len(failedExpectations(r)), len(expectationsWith(r, NotObservable))
	judged := n - unseen
	switch skipped := len(skippedExpectations(r)); {
	case n == 0:
	case skipped > 0:
		s += fmt.Sprintf("; %d of %d %s not evaluated", skipped, n, plural(n, "expectation", "expectations"))
	case judged == 0:
		s += fmt.Sprintf("; %d %s not observable", n, plural(n, "expectation", "expectations"))
		return s
	case failed == 0:
		s += fmt.Sprintf("; %d %s held", judged, plural(judged, "expectation", "expectations"))
	default:
		s += fmt.Sprintf("; %d of %d %s failed", failed, judged, plural(judged, "expectation", "expectations"))
	}
	if unseen > 0 {
		s += fmt.Sprintf(", %d not observable", unseen)
	}
	return s
}

// failedExpectations returns the expectations that were judged and did
// not pass: neither skipped nor not observable.
func failedExpectations(r *Result) []Expectation {
	var out []Expectation
	for _, e := range r.Expectations {
		if e.Verdict != Passed && e.Verdict != Skipped && e.Verdict != NotObservable {
			out = append(out, e)
		}
	}
	return out
}

// skippedExpectations returns the expectations that were not evaluated.
func skippedExpectations(r *Result) []Expectation {
	var out []Expectation
	for _, e := range r.Expectations {
		if e.Verdict == Skipped {
			out = append(out, e)
		}
	}
	return out
}

// invariantRule returns the rule of the named invariant, or "".
func invariantRule(name string) string {
	for _, inv := range invariants {
		if inv.Name == name {
			return inv.Rule
		}
	}
	return ""
}

// runName names a run: "scenario (seed N)".
func runName(r *Result) string { return fmt.Sprintf("%s (seed %d)", r.Scenario, r.Seed) }

// reproduceCommand returns the command that runs r again: its Reproduce,
// or one made from its scenario file and seed.
func reproduceCommand(r *Result) string {
	if r.Reproduce != "" {
		return r.Reproduce
	}
	file := r.ScenarioFile
	if name, ok := strings.CutPrefix(file, "builtin:"); ok {
		file = name
	}
	if file == "" {
		file = r.Scenario
	}
	return fmt.Sprintf("faultline run %s --seed %d", shellQuote(file), r.Seed)
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`*?[]{}()<>|&;#~!") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// fmtOffset writes a virtual offset in milliseconds as "+3m0.031s".
func fmtOffset(ms int64) string { return "+" + msDuration(ms) }

func msDuration(ms int64) string { return (time.Duration(ms) * time.Millisecond).String() }

func jobSuffix(id string) string {
	if id == "" {
		return ""
	}
	return ", job " + id
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// expectationsWith returns r's expectations whose verdict is v.
func expectationsWith(r *Result, v Verdict) []Expectation {
	var out []Expectation
	for _, e := range r.Expectations {
		if e.Verdict == v {
			out = append(out, e)
		}
	}
	return out
}
