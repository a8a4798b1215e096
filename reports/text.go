package reports

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// TextOptions say how WriteText writes.
type TextOptions struct {
	// Color turns on ANSI colours. The caller decides: the CLI sets it on a
	// terminal when NO_COLOR is unset.
	Color bool
	// Verbose adds the ledger totals, the DLQ at the end, the alerts
	// delivered, the breaker transitions, the faults' hits and the operator
	// steps.
	Verbose bool
}

// ANSI escapes, used only with TextOptions.Color.
const (
	ansiReset  = "\x1b[0m"
	ansiBold   = "\x1b[1m"
	ansiDim    = "\x1b[2m"
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
)

// textCap is how many rows of a verbose listing (DLQ entries, deliveries,
// transitions) the text report shows.
const textCap = 20

// WriteText writes the terminal report of one run: a verdict line and the
// run's totals, then, for a run that did not pass, the violation with its
// trail, the failed expectations and the reproduce command (for an
// inconclusive drill, what slipped first); the operator
// steps that failed, whatever the verdict; what a
// black-box drill could not observe from outside, with why, whatever the
// verdict; for a drill, how it ran (with its harness's slip, when
// measured) and, for a black-box drill, the system
// under test with its lost and trimmed jobs. With Verbose it
// adds the ledger, the DLQ, the alerts, the breaker transitions, the
// faults' hits and the operator steps.
func WriteText(w io.Writer, r *Result, o TextOptions) error {
	if r == nil {
		return fmt.Errorf("write text report: %w", ErrNilResult)
	}
	r = Redact(r)
	bw := bufio.NewWriter(w)
	t := textWriter{w: bw, color: o.Color}
	t.verdict(r)
	failed := failedExpectations(r)
	unseen := notObservable(r)
	stepErrs := failedSteps(r)
	if r.Verdict == Errored || r.Verdict == Interrupted || r.Verdict == Inconclusive || len(r.Violations) > 0 || len(failed) > 0 || len(r.Warnings) > 0 || len(unseen) > 0 || len(stepErrs) > 0 {
		t.line(0, "")
	}
	switch r.Verdict {
	case Errored:
		t.line(2, t.paint(ansiYellow, "error: ")+indentMore(r.Error, 4))
	case Interrupted:
		t.line(2, t.paint(ansiYellow, "interrupted: ")+indentMore(r.Error, 4))
		if n := len(skippedExpectations(r)); n > 0 {
			t.line(4, fmt.Sprintf("%d %s not evaluated: a run that did not reach its end proves nothing either way", n, plural(n, "expectation", "expectations")))
		}
	case Inconclusive:
		t.line(2, t.paint(ansiYellow, "inconclusive: ")+indentMore(r.Error, 4))
		t.line(4, inconclusiveNote(r))
	}
	t.violations(r)
	for _, e := range failed {
		t.line(2, t.paint(ansiRed, "✗ ")+e.Name)
		t.line(6, fmt.Sprintf("expected %s, got %s", e.Expected, e.Actual))
	}
	for _, w := range r.Warnings {
		t.line(2, t.paint(ansiYellow, "⚠ warning: ")+w)
	}
	// A failed operator step is shown whatever the verdict: a run can pass
	// with a step that did nothing.
	for _, s := range stepErrs {
		what := s.Kind
		if s.Detail != "" {
			what += " (" + oneLine(s.Detail) + ")"
		}
		t.line(2, t.paint(ansiYellow, "⚠ operator step failed: ")+what+" at "+fmtOffset(s.AtMs)+": "+oneLine(s.Error))
	}
	if len(unseen) > 0 {
		t.line(2, t.paint(ansiBold, fmt.Sprintf("Not observable from outside (%d): judged neither passed nor failed", len(unseen))))
		for _, u := range unseen {
			t.line(4, t.paint(ansiDim, "○ ")+u.Kind+" "+u.Name+": "+u.Why)
		}
	}
	if p := r.Engine.Processes; p > 1 && (r.Failed() || o.Verbose) {
		t.line(2, fmt.Sprintf("fleet: %d worker processes over %d slots, round robin — each its own breakers and fallbacks; the store, the DLQ, the alerter and the retry budget (unless scope: process) shared", p, r.Engine.Slots))
	}
	t.live(r)
	if o.Verbose {
		t.verbose(r)
	}
	if r.Failed() || o.Verbose {
		t.line(0, "")
		t.line(2, "reproduce: "+t.paint(ansiBold, reproduceCommand(r)))
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write text report: %w", err)
	}
	return nil
}

// live writes a drill's lines: how it ran, and the latencies observed.
func (t textWriter) live(r *Result) {
	l := r.Live
	if l == nil {
		return
	}
	kinds := make([]string, 0, len(l.Processes))
	for k := range l.Processes {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var procs []string
	for _, k := range kinds {
		procs = append(procs, fmt.Sprintf("%d %s", l.Processes[k], k))
	}
	line := fmt.Sprintf("drill: time scale %s, %d worker %s", strconv.FormatFloat(l.TimeScale, 'g', -1, 64), l.Workers, plural(l.Workers, "process", "processes"))
	if len(procs) > 0 {
		line += " (" + strings.Join(procs, ", ") + ")"
	}
	t.line(2, line)
	for _, lat := range l.Latencies {
		t.line(4, fmt.Sprintf("%s: %d calls, p50 %s, p95 %s, p99 %s, max %s (wall)", lat.What, lat.Calls,
			fmtMs(lat.P50Ms), fmtMs(lat.P95Ms), fmtMs(lat.P99Ms), fmtMs(lat.MaxMs)))
	}
	if l.Slip != nil {
		t.slip(l.Slip)
	}
	if l.Aborted != "" {
		t.line(2, t.paint(ansiYellow, "aborted: ")+l.Aborted)
	}
	if l.External != nil {
		// The lost and trimmed jobs head the report (verdict).
		t.line(2, "System under test (black box):")
		for _, f := range externalFacts(l.External, r.Ledger.Lost) {
			if !f.Bad {
				t.line(4, f.Label+": "+f.Text)
			}
		}
	}
}

// slip writes how far the drill's harness fell behind its time scale: a
// row per part, the parts past the tolerance marked.
func (t textWriter) slip(s *Slip) {
	t.line(4, fmt.Sprintf("harness slip (wall; tolerance %s):", fmtMs(s.ToleranceMs)))
	if len(s.Parts) == 0 {
		t.line(6, "(no part measured)")
		return
	}
	tw := t.table(6)
	for _, p := range s.Parts {
		mark := " "
		if p.Over > 0 {
			mark = "✗"
		}
		fmt.Fprintf(tw, "%s %s\t%d %s\tp99 %s\tmax %s\t%d over\n", mark, p.What, p.Samples, plural(int(p.Samples), "sample", "samples"),
			fmtMs(p.P99Ms), fmtMs(p.MaxMs), p.Over)
	}
	_ = tw.Flush()
}

// textWriter writes the text report, coloured or not.
type textWriter struct {
	w     *bufio.Writer
	color bool
}

func (t textWriter) paint(code, s string) string {
	if !t.color || s == "" {
		return s
	}
	return code + s + ansiReset
}

// line writes s indented by n spaces.
func (t textWriter) line(n int, s string) {
	_, _ = t.w.WriteString(strings.Repeat(" ", n) + s + "\n")
}

func (t textWriter) heading(s string) {
	t.line(0, "")
	t.line(2, t.paint(ansiBold, s))
}

// verdict writes the verdict line and the run's totals.
func (t textWriter) verdict(r *Result) {
	var word, code string
	switch r.Verdict {
	case Passed:
		word, code = "PASS", ansiGreen
	case Failed:
		word, code = "FAIL", ansiRed
	case Errored:
		word, code = "ERROR", ansiYellow
	case Interrupted:
		word, code = "INTERRUPTED", ansiYellow
	case Inconclusive:
		word, code = "INCONCLUSIVE", ansiYellow
	default: // never read as a pass
		word, code = strings.ToUpper(string(r.Verdict)), ansiYellow
		if word == "" {
			word = "NO VERDICT"
		}
	}
	head := fmt.Sprintf("%s  %s  seed %d", t.paint(ansiBold+code, word), r.Scenario, r.Seed)
	if r.ScenarioFile != "" && r.ScenarioFile != "builtin:"+r.Scenario {
		head += "  (" + r.ScenarioFile + ")"
	}
	t.line(0, head)
	t.line(2, summaryLine(r))
	if len(notObservable(r)) > 0 {
		t.line(2, "invariants: "+invariantTally(r))
	}
	if r.Live != nil && r.Live.External != nil {
		for _, f := range externalFacts(r.Live.External, r.Ledger.Lost) {
			if f.Bad {
				t.line(2, t.paint(ansiRed, "✗ "+f.Label+": ")+f.Text)
			}
		}
	}
	if r.EndedAtMs < r.DurationMs {
		t.line(2, fmt.Sprintf("stopped at %s of %s", fmtOffset(r.EndedAtMs), msDuration(r.DurationMs)))
	}
}

// textViolationCap is how many violations of one invariant the text
// report shows with their trail; textViolationLines how many more get a
// line each.
const (
	textViolationCap   = 1
	textViolationLines = 5
)

// violations writes the broken invariants: per invariant, the first
// violation with its rule and trail, a few more on a line each, and how
// many there were in all.
func (t textWriter) violations(r *Result) {
	for _, inv := range r.InvariantResults() {
		if inv.Verdict != Failed {
			continue
		}
		vs := violationsOf(r, inv.Name)
		for i, v := range vs {
			switch {
			case i < textViolationCap:
				t.violation(v)
			case i < textViolationCap+textViolationLines:
				t.line(6, fmt.Sprintf("also at %s%s: %s", fmtOffset(v.AtMs), jobSuffix(v.JobID), v.Message))
			}
		}
		if shown := int64(min(len(vs), textViolationCap+textViolationLines)); inv.Violations > shown {
			t.line(6, fmt.Sprintf("… and %d more %s of %s (%d in all)", inv.Violations-shown,
				plural(int(inv.Violations-shown), "violation", "violations"), inv.Name, inv.Violations))
		}
	}
}

// violation writes a broken invariant, its rule and the job's trail.
func (t textWriter) violation(v Violation) {
	t.line(2, t.paint(ansiRed, "✗ invariant "+v.Invariant)+fmt.Sprintf(" at %s%s (seed %d)", fmtOffset(v.AtMs), jobSuffix(v.JobID), v.Seed))
	t.line(6, v.Message)
	if rule := invariantRule(v.Invariant); rule != "" {
		t.line(6, t.paint(ansiDim, "rule: "+rule))
	}
	if len(v.Trail) > 0 {
		t.line(6, "trail:")
		for _, s := range v.Trail {
			t.line(8, t.paint(ansiDim, s))
		}
	}
}

// verbose writes the ledger, the DLQ, the alerts, the breakers, the
// faults and the steps.
func (t textWriter) verbose(r *Result) {
	l := r.Ledger
	t.heading("invariants")
	for _, inv := range r.InvariantResults() {
		mark := t.paint(ansiGreen, "✓")
		what := "held"
		switch inv.Verdict {
		case Failed:
			mark, what = t.paint(ansiRed, "✗"), fmt.Sprintf("violated %d %s", inv.Violations, plural(int(inv.Violations), "time", "times"))
		case Skipped, Errored:
			mark, what = t.paint(ansiDim, "–"), "not checked: "+inv.Note
		case NotObservable:
			mark, what = t.paint(ansiDim, "○"), notObservableNote(r, inv.Note)
		}
		t.line(4, mark+" "+inv.Name+": "+what)
	}
	t.heading("ledger")
	held := ""
	if l.HeldAtEnd > 0 {
		held = fmt.Sprintf(" + held %d", l.HeldAtEnd)
	}
	t.line(4, fmt.Sprintf("created %d = queued %d + in flight %d + scheduled %d + fallback %d%s + dead-lettered %d + succeeded %d + removed %d; lost %d",
		l.Created, l.Queued, l.InFlight, l.Scheduled, l.Fallback, held, l.DeadLettered, l.Succeeded, l.Removed, l.Lost))
	if moves := nonZero(ledgerMoves(l)); moves != "" {
		t.line(4, "moves: "+moves)
	}
	if len(l.ByTask) > 0 {
		tw := t.table(4)
		fmt.Fprintln(tw, "task\tcreated\tsucceeded\tdead-lettered\tpending\tfallback\tremoved")
		for _, k := range l.ByTask {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\n", k.Task, k.Created, k.Succeeded, k.DeadLettered, k.Pending, k.Fallback, k.Removed)
		}
		_ = tw.Flush()
	}
	if len(l.DeadLetteredBy) > 0 {
		t.line(4, "dead letters by task, severity and class:")
		tw := t.table(6)
		for _, d := range l.DeadLetteredBy {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", d.Task, d.Severity, d.Class, d.Count)
		}
		_ = tw.Flush()
	}

	d := r.DLQ
	t.heading(fmt.Sprintf("DLQ at the end: %d %s", d.Total, plural(d.Total, "entry", "entries")))
	if d.Total > 0 {
		t.line(4, "by status: "+countsOf(d.ByStatus)+"; by severity: "+countsOf(d.BySeverity))
	}
	if d.Corrupt > 0 {
		t.line(4, fmt.Sprintf("corrupt: %d", d.Corrupt))
	}
	if len(d.Entries) > 0 {
		tw := t.table(4)
		for i, e := range d.Entries {
			if i == textCap {
				break
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s/%s\t%d %s\t%s\n", e.JobID, e.Task, e.Status, e.Class, e.Severity,
				e.Attempts, plural(e.Attempts, "attempt", "attempts"), oneLine(e.Error))
		}
		_ = tw.Flush()
	}
	if more := d.Total - min(len(d.Entries), textCap); more > 0 {
		t.line(4, fmt.Sprintf("… %d more", more))
	}

	a := r.Alerts
	t.heading(fmt.Sprintf("alerts: %d %s, %d %s, %d rejected", a.Notifications, plural(int(a.Notifications), "notification", "notifications"),
		a.Pages, plural(int(a.Pages), "page", "pages"), a.Rejected))
	t.line(4, fmt.Sprintf("raised %d, deduplicated %d, inhibited %d, redelivered %d, repeats %d, resolved %d",
		a.Raised, a.Deduplicated, a.Inhibited, a.Redelivered, a.Repeats, a.Resolved))
	if len(a.ByReceiver) > 0 {
		t.line(4, "by receiver: "+countsOf(a.ByReceiver))
	}
	if len(a.Deliveries) > 0 {
		tw := t.table(4)
		for i, dv := range a.Deliveries {
			if i == textCap {
				break
			}
			page := ""
			if dv.IsPage() {
				page = "PAGE"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t×%d\t%s\t%s\n", fmtOffset(dv.AtMs), dv.Receiver, dv.Severity, dv.Status, dv.Name, dv.Count, page, oneLine(dv.Summary))
		}
		_ = tw.Flush()
	}
	if more := len(a.Deliveries) - textCap; more > 0 || a.Truncated {
		t.line(4, "… more deliveries")
	}

	if len(r.Confusion) > 0 {
		t.heading("classifier: injected class → what it said, and the route taken")
		tw := t.table(4)
		for _, c := range r.Confusion {
			fmt.Fprintf(tw, "%s\t%d\tsaid %s\troutes %s\n", c.True, c.Total, countsOf(c.Said), countsOf(c.Routes))
		}
		_ = tw.Flush()
	}

	t.heading(fmt.Sprintf("breaker transitions: %d", len(r.Breakers)))
	if len(r.Breakers) > 0 {
		tw := t.table(4)
		for i, b := range r.Breakers {
			if i == textCap {
				break
			}
			name := b.Breaker
			if b.Worker != "" {
				name += " (" + b.Worker + ")"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s → %s\t%s\n", fmtOffset(b.AtMs), name, b.From, b.To, b.Reason)
		}
		_ = tw.Flush()
		if more := len(r.Breakers) - textCap; more > 0 {
			t.line(4, fmt.Sprintf("… %d more", more))
		}
	}

	t.heading(fmt.Sprintf("faults: %d", len(r.Faults)))
	if len(r.Faults) > 0 {
		tw := t.table(4)
		for _, f := range r.Faults {
			hits := fmt.Sprintf("%d %s", f.Hits, plural(int(f.Hits), "hit", "hits"))
			if f.Hits > 0 {
				hits += fmt.Sprintf(" (%s … %s)", fmtOffset(f.FirstHitMs), fmtOffset(f.LastHitMs))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", f.Name, f.Target, f.Model, hits)
		}
		_ = tw.Flush()
	}

	if len(r.Steps) > 0 {
		t.heading(fmt.Sprintf("operator steps: %d", len(r.Steps)))
		tw := t.table(4)
		for _, s := range r.Steps {
			detail := s.Detail
			if s.Error != "" {
				detail = strings.TrimSpace(detail + " error: " + s.Error)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", fmtOffset(s.AtMs), s.Kind, oneLine(detail))
		}
		_ = tw.Flush()
	}
}

// failedSteps are the operator steps that failed (Error set), in order.
func failedSteps(r *Result) []Step {
	var out []Step
	for _, s := range r.Steps {
		if s.Error != "" {
			out = append(out, s)
		}
	}
	return out
}

func (t textWriter) table(indent int) *tabwriter.Writer {
	return tabwriter.NewWriter(&indenter{w: t.w, prefix: strings.Repeat(" ", indent), bol: true}, 0, 4, 2, ' ', 0)
}

// indenter prefixes every line written through it.
type indenter struct {
	w      io.Writer
	prefix string
	bol    bool
}

func (in *indenter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		if in.bol {
			if _, err := io.WriteString(in.w, in.prefix); err != nil {
				return n, err
			}
			in.bol = false
		}
		i := slices.Index(p, '\n')
		chunk := p
		if i >= 0 {
			chunk, in.bol = p[:i+1], true
		}
		m, err := in.w.Write(chunk)
		n += m
		if err != nil {
			return n, err
		}
		p = p[len(chunk):]
	}
	return n, nil
}

// namedCount is one count of the model, by the name a report gives it.
type namedCount struct {
	name string
	n    int64
}

// ledgerMoves lists the ledger's move counts, in model order.
func ledgerMoves(l Ledger) []namedCount {
	return []namedCount{
		{"attempts", l.Attempts}, {"retries", l.Retries}, {"dead letters", l.DeadLetters}, {"requeues", l.Requeues},
		{"diversions", l.Diversions}, {"drained", l.Drained}, {"released", l.Released}, {"lease expiries", l.LeaseExpiries},
		{"evicted", l.Evicted}, {"purged", l.Purged}, {"fenced", l.Fenced}, {"held", l.Held}, {"kept", l.Kept}, {"refused", l.Refused}, {"refusals", l.RefusedTimes},
		{"budget-delayed", l.BudgetDelayed}, {"budget-exceeded", l.BudgetExceeded}, {"charges", l.Charges},
	}
}

// nonZero writes the non-zero counts as "name n, name n".
func nonZero(counts []namedCount) string {
	var parts []string
	for _, c := range counts {
		if c.n != 0 {
			parts = append(parts, fmt.Sprintf("%s %d", c.name, c.n))
		}
	}
	return strings.Join(parts, ", ")
}

// countsOf writes a map of counts as "k n, k n", keys sorted.
func countsOf[N int | int64](m map[string]N) string {
	if len(m) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// oneLine folds s onto one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// indentMore indents every line of s after the first by n spaces.
func indentMore(s string, n int) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+strings.Repeat(" ", n))
}
