package reports

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Caps that keep a Markdown summary inside a pull-request comment (GitHub
// takes 65,536 characters) for a sweep of many seeds.
const (
	// mdRowCap is how many runs the table lists.
	mdRowCap = 100
	// mdDetailCap is how many failed runs are shown in detail.
	mdDetailCap = 10
	// mdTrailCap is how many of a trail's last lines are shown.
	mdTrailCap = 8
)

// WriteMarkdown writes a compact GitHub-flavoured summary of rs for a
// pull-request comment or a job summary: a table of the runs (scenario,
// seed, verdict, jobs, lost, DLQ, pages; when a run's DLQ entries differ
// from its jobs dead-lettered, a note on what each counts), then, for each run that did not
// pass, its failed expectations (expected vs actual), the violations with
// the end of a trail, what a black-box drill could not observe, the system
// under test of a black-box drill (its lost and trimmed jobs), the
// warnings, and the reproduce command; then the warnings of the runs that
// passed, and what their drills could not observe. Text from the report is escaped, so a
// pipe, a backtick or a tag in a message cannot break the layout. For many
// runs, MarkdownWriter writes the same bytes one run at a time.
func WriteMarkdown(w io.Writer, rs []*Result) error {
	mw := NewMarkdownWriter()
	for _, r := range rs {
		if err := mw.Add(r); err != nil {
			return err
		}
	}
	return mw.Finish(w)
}

// MarkdownWriter builds the Markdown summary one run at a time, keeping
// only what the summary shows — the first rows of the table, the first
// failed runs' details and the first warnings, all capped — so a sweep of
// many seeds need not keep its results.
type MarkdownWriter struct {
	// runs counts the runs added; notPassed those that did not pass, of
	// which failed failed, errored errored, interrupted were stopped and
	// inconclusive were drills whose harness fell behind its time scale.
	runs, notPassed                            int
	failed, errored, interrupted, inconclusive int
	// notMade and total are what NotMade was told: of total runs
	// planned, notMade were never made.
	notMade, total uint64
	rows           []string
	details        []string
	warnings       []string
	moreWarnings   int
	// unseen are the passing runs' not-observable items, capped like
	// the warnings.
	unseen     []string
	moreUnseen int
	// dlqKept says a run's DLQ held more entries, or fewer, than the jobs
	// that ended dead-lettered: the table says why.
	dlqKept bool
}

// NewMarkdownWriter returns an empty summary.
func NewMarkdownWriter() *MarkdownWriter { return &MarkdownWriter{} }

// mdWarningCap is how many warnings of passing runs the summary lists.
const mdWarningCap = 20

// NotMade says that of total runs planned, n were never made (a run
// stopped by Ctrl-C, a shard stopped): the summary says so, as the command
// line's last line does, instead of reading as if every run was made.
func (mw *MarkdownWriter) NotMade(n, total uint64) { mw.notMade, mw.total = n, total }

// Add adds one run to the summary.
func (mw *MarkdownWriter) Add(r *Result) error {
	if r == nil {
		return fmt.Errorf("write Markdown: run %d: %w", mw.runs, ErrNilResult)
	}
	r = Redact(r)
	mw.runs++
	if int64(r.DLQ.Total) != r.Ledger.DeadLettered {
		mw.dlqKept = true
	}
	if len(mw.rows) < mdRowCap {
		mw.rows = append(mw.rows, fmt.Sprintf("| %s | %d | %s | %d | %d | %d | %d |\n", mdEscape(r.Scenario), r.Seed, verdictBadge(r.Verdict),
			r.Ledger.Created, r.Ledger.Lost, r.DLQ.Total, r.Alerts.Pages))
	}
	if !r.Failed() {
		for _, w := range r.Warnings {
			if len(mw.warnings) == mdWarningCap {
				mw.moreWarnings++
				continue
			}
			mw.warnings = append(mw.warnings, fmt.Sprintf("- %s: %s\n", mdEscape(runName(r)), mdEscape(w)))
		}
		for _, u := range notObservable(r) {
			if len(mw.unseen) == mdWarningCap {
				mw.moreUnseen++
				continue
			}
			mw.unseen = append(mw.unseen, fmt.Sprintf("- %s: %s\n", mdEscape(runName(r)), mdEscape(u.Kind+" "+u.Name+": "+u.Why)))
		}
		return nil
	}
	mw.notPassed++
	switch r.Verdict {
	case Errored:
		mw.errored++
	case Interrupted:
		mw.interrupted++
	case Inconclusive:
		mw.inconclusive++
	default:
		mw.failed++
	}
	if len(mw.details) < mdDetailCap {
		var b strings.Builder
		bw := bufio.NewWriter(&b)
		mdWriter{bw}.run(r)
		_ = bw.Flush()
		mw.details = append(mw.details, b.String())
	}
	return nil
}

// Finish writes the summary to w.
func (mw *MarkdownWriter) Finish(w io.Writer) error {
	bw := bufio.NewWriter(w)
	m := mdWriter{bw}
	m.printf("%s", mw.headline())
	if mw.runs > 0 {
		m.printf("\n| Scenario | Seed | Verdict | Jobs | Lost | DLQ | Pages |\n")
		m.printf("| --- | ---: | --- | ---: | ---: | ---: | ---: |\n")
		for row := range slices.Values(mw.rows) {
			m.printf("%s", row)
		}
		if mw.runs > mdRowCap {
			m.printf("\n… and %d more runs (%d did not pass in all).\n", mw.runs-mdRowCap, mw.notPassed)
		}
		if mw.dlqKept {
			m.printf("\n%s\n", dlqNote)
		}
	}
	for _, d := range mw.details {
		m.printf("%s", d)
	}
	if mw.notPassed > mdDetailCap {
		m.printf("\n… and %d more runs that did not pass, not shown.\n", mw.notPassed-mdDetailCap)
	}
	if len(mw.warnings) > 0 {
		m.printf("\n**Warnings:**\n\n")
		for _, w := range mw.warnings {
			m.printf("%s", w)
		}
		if mw.moreWarnings > 0 {
			m.printf("- … and %d more\n", mw.moreWarnings)
		}
	}
	if len(mw.unseen) > 0 {
		m.printf("\n**Not observable from outside** (black-box drills that passed: judged neither passed nor failed):\n\n")
		for _, u := range mw.unseen {
			m.printf("%s", u)
		}
		if mw.moreUnseen > 0 {
			m.printf("- … and %d more\n", mw.moreUnseen)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write Markdown: %w", err)
	}
	return nil
}

// dlqNote says why a run's DLQ (the table's column) and its jobs
// dead-lettered (its summary line) differ: the DLQ keeps a requeued job's
// entry, marked requeued (dlq.Requeued), until it is purged; the ledger
// counts a job where it ended.
const dlqNote = "DLQ counts the dead-letter queue's entries at the end, whatever their status; dead-lettered counts the jobs that ended there " +
	"(its failed, quarantined and deleted entries). The DLQ keeps the entry of a job requeued from it, marked requeued, until it is purged: " +
	"that job ran again and ended elsewhere."

// headline is the summary's first line: the runs' counts by verdict, and
// the runs not made, as the command line's last line gives them.
func (mw *MarkdownWriter) headline() string {
	runs := plural(mw.runs, "run", "runs")
	if mw.notPassed == 0 && mw.notMade == 0 {
		if mw.runs == 0 {
			return "## faultline: no runs\n"
		}
		return fmt.Sprintf("## faultline: ✅ %d %s passed\n", mw.runs, runs)
	}
	var b strings.Builder
	switch {
	case mw.failed > 0 || mw.errored > 0:
		b.WriteString("## faultline: ❌ ")
	default:
		b.WriteString("## faultline: ⚠️ ")
	}
	switch {
	case mw.failed > 0:
		fmt.Fprintf(&b, "%d of %d %s failed", mw.failed, mw.runs, runs)
	default:
		fmt.Fprintf(&b, "%d of %d %s passed", mw.runs-mw.notPassed, mw.runs, runs)
	}
	if mw.errored > 0 {
		fmt.Fprintf(&b, ", %d errored", mw.errored)
	}
	if mw.interrupted > 0 {
		fmt.Fprintf(&b, ", %d interrupted (expectations not evaluated)", mw.interrupted)
	}
	if mw.inconclusive > 0 {
		fmt.Fprintf(&b, ", %d inconclusive (the drill's harness fell behind its time scale)", mw.inconclusive)
	}
	if mw.notMade > 0 {
		fmt.Fprintf(&b, "; %d of %d runs not made", mw.notMade, mw.total)
	}
	b.WriteString("\n")
	return b.String()
}

type mdWriter struct{ w *bufio.Writer }

func (m mdWriter) printf(format string, args ...any) { _, _ = fmt.Fprintf(m.w, format, args...) }

// run writes why one run did not pass and how to run it again.
func (m mdWriter) run(r *Result) {
	m.printf("\n### %s %s\n\n", verdictEmoji(r.Verdict), mdEscape(runName(r)))
	m.printf("%s", mdEscape(summaryLine(r)))
	if r.EndedAtMs < r.DurationMs {
		m.printf("; stopped at %s of %s", fmtOffset(r.EndedAtMs), msDuration(r.DurationMs))
	}
	m.printf(".\n")
	if r.Live != nil && r.Live.External != nil {
		// The lost and trimmed jobs are a black-box drill's headline.
		for _, f := range externalFacts(r.Live.External, r.Ledger.Lost) {
			if f.Bad {
				m.printf("\n❌ **%s:** %s\n", mdEscape(f.Label), mdEscape(f.Text))
			}
		}
	}
	if (r.Verdict == Errored || r.Verdict == Interrupted || r.Verdict == Inconclusive) && r.Error != "" {
		m.printf("\n**%s:**\n\n", map[Verdict]string{Errored: "Error", Interrupted: "Interrupted", Inconclusive: "Inconclusive"}[r.Verdict])
		m.code("text", r.Error)
	}
	if r.Verdict == Inconclusive {
		m.printf("\n%s\n", mdEscape(upperFirst(inconclusiveNote(r))+"."))
	}
	if r.Live != nil && r.Live.Slip != nil {
		m.slip(r.Live.Slip)
	}
	if n := len(skippedExpectations(r)); n > 0 {
		m.printf("\n%d %s not evaluated: the run did not reach its end.\n", n, plural(n, "expectation", "expectations"))
	}
	if failed := failedExpectations(r); len(failed) > 0 {
		m.printf("\n| Failed expectation | Expected | Actual |\n| --- | --- | --- |\n")
		for _, e := range failed {
			m.printf("| %s | %s | %s |\n", mdEscape(e.Name), mdEscape(e.Expected), mdEscape(e.Actual))
		}
	}
	for _, inv := range r.InvariantResults() {
		if inv.Verdict != Failed {
			continue
		}
		vs := violationsOf(r, inv.Name)
		if len(vs) == 0 {
			continue
		}
		v := vs[0]
		m.printf("\n**Invariant violated: %s** at %s%s:\n\n%s\n", mdEscape(v.Invariant), fmtOffset(v.AtMs), mdEscape(jobSuffix(v.JobID)), mdEscape(v.Message))
		if inv.Violations > 1 {
			var jobs []string
			for _, o := range vs[1:min(len(vs), 1+mdTrailCap)] {
				if o.JobID != "" {
					jobs = append(jobs, o.JobID)
				}
			}
			also := ""
			if len(jobs) > 0 {
				also = " (jobs " + strings.Join(jobs, ", ") + "…)"
			}
			m.printf("\n%s\n", mdEscape(fmt.Sprintf("And %d more %s of %s%s.", inv.Violations-1, plural(int(inv.Violations-1), "violation", "violations"), inv.Name, also)))
		}
		if rule := invariantRule(v.Invariant); rule != "" {
			m.printf("\n> %s\n", mdEscape("The rule: "+rule+"."))
		}
		if len(v.Trail) > 0 {
			trail := v.Trail
			var b strings.Builder
			if n := len(trail) - mdTrailCap; n > 0 {
				fmt.Fprintf(&b, "… %d earlier %s\n", n, plural(n, "line", "lines"))
				trail = trail[n:]
			}
			for _, t := range trail {
				b.WriteString(t + "\n")
			}
			m.printf("\nTrail of job %s:\n\n", mdEscape(v.JobID))
			m.code("text", b.String())
		}
	}
	var off []string
	for _, inv := range r.InvariantResults() {
		if inv.Verdict == Skipped {
			off = append(off, inv.Name+" ("+inv.Note+")")
		}
	}
	if len(off) > 0 {
		m.printf("\n%s\n", mdEscape("Invariants not checked: "+strings.Join(off, "; ")+"."))
	}
	if unseen := notObservable(r); len(unseen) > 0 {
		m.printf("\n**Not observable from outside** (judged neither passed nor failed):\n\n")
		for _, u := range unseen {
			m.printf("- %s\n", mdEscape(u.Kind+" "+u.Name+": "+u.Why))
		}
	}
	if r.Live != nil && r.Live.External != nil {
		m.printf("\n**System under test (black box):**\n\n")
		for _, f := range externalFacts(r.Live.External, r.Ledger.Lost) {
			if !f.Bad {
				m.printf("- **%s:** %s\n", mdEscape(f.Label), mdEscape(f.Text))
			}
		}
	}
	for _, w := range r.Warnings {
		m.printf("\n⚠️ %s\n", mdEscape("Warning: "+w))
	}
	m.printf("\nReproduce:\n\n")
	m.code("sh", reproduceCommand(r))
}

// slip writes a drill's harness slip as a table, a part past the
// tolerance marked.
func (m mdWriter) slip(s *Slip) {
	m.printf("\n| Harness slip (wall) | Samples | p99 | Max | Over %s |\n| --- | ---: | ---: | ---: | ---: |\n", mdEscape(fmtMs(s.ToleranceMs)))
	for _, p := range s.Parts {
		mark := ""
		if p.Over > 0 {
			mark = "❌ "
		}
		m.printf("| %s%s | %d | %s | %s | %d |\n", mark, mdEscape(p.What), p.Samples, fmtMs(p.P99Ms), fmtMs(p.MaxMs), p.Over)
	}
}

// upperFirst is s with its first letter upper-case.
func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// code writes s as a fenced code block, the fence longer than any run of
// backticks in s.
func (m mdWriter) code(lang, s string) {
	fence := strings.Repeat("`", max(3, longestRun(s, '`')+1))
	m.printf("%s%s\n%s\n%s\n", fence, lang, strings.TrimRight(s, "\n"), fence)
}

func longestRun(s string, c byte) int {
	best, n := 0, 0
	for i := range len(s) {
		if s[i] == c {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}

// mdEscape makes s literal inline text in GitHub-flavoured Markdown, safe
// in a table cell: every character that Markdown or HTML would act on
// mid-line is backslash-escaped (the pipe included), and a line break
// becomes a space.
func mdEscape(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, c := range s {
		switch {
		case c == '\n' || c == '\r' || c == '\t':
			b.WriteByte(' ')
		case strings.ContainsRune(mdSpecial, c):
			b.WriteByte('\\')
			b.WriteRune(c)
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

// mdSpecial are the characters mdEscape escapes.
const mdSpecial = "\\`*_[]<>|~#&!"

func verdictEmoji(v Verdict) string {
	switch v {
	case Passed:
		return "✅"
	case Failed:
		return "❌"
	}
	return "⚠️"
}

func verdictBadge(v Verdict) string { return verdictEmoji(v) + " " + string(v) }
