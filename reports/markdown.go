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
// seed, verdict, jobs, lost, DLQ, pages), then, for each run that did not
// pass, its failed expectations (expected vs actual), the violation with
// the end of its trail, and the reproduce command. Text from the report is
// escaped, so a pipe, a backtick or a tag in a message cannot break the
// layout.
func WriteMarkdown(w io.Writer, rs []*Result) error {
	var failed []*Result
	rs = slices.Clone(rs)
	for i, r := range rs {
		if r == nil {
			return fmt.Errorf("write Markdown: run %d: %w", i, ErrNilResult)
		}
		rs[i] = Redact(r)
		r = rs[i]
		if r.Failed() {
			failed = append(failed, r)
		}
	}
	bw := bufio.NewWriter(w)
	m := mdWriter{bw}
	switch {
	case len(rs) == 0:
		m.printf("## faultline: no runs\n")
	case len(failed) == 0:
		m.printf("## faultline: ✅ %d %s passed\n", len(rs), plural(len(rs), "run", "runs"))
	default:
		m.printf("## faultline: ❌ %d of %d %s failed\n", len(failed), len(rs), plural(len(rs), "run", "runs"))
	}
	if len(rs) > 0 {
		m.printf("\n| Scenario | Seed | Verdict | Jobs | Lost | DLQ | Pages |\n")
		m.printf("| --- | ---: | --- | ---: | ---: | ---: | ---: |\n")
		for i, r := range rs {
			if i == mdRowCap {
				m.printf("\n… and %d more runs (%d failed in all).\n", len(rs)-mdRowCap, len(failed))
				break
			}
			m.printf("| %s | %d | %s | %d | %d | %d | %d |\n", mdEscape(r.Scenario), r.Seed, verdictBadge(r.Verdict),
				r.Ledger.Created, r.Ledger.Lost, r.DLQ.Total, r.Alerts.Pages)
		}
	}
	for i, r := range failed {
		if i == mdDetailCap {
			m.printf("\n… and %d more failed runs, not shown.\n", len(failed)-mdDetailCap)
			break
		}
		m.run(r)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write Markdown: %w", err)
	}
	return nil
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
	if r.Verdict == Errored && r.Error != "" {
		m.printf("\n**Error:**\n\n")
		m.code("text", r.Error)
	}
	if failed := failedExpectations(r); len(failed) > 0 {
		m.printf("\n| Failed expectation | Expected | Actual |\n| --- | --- | --- |\n")
		for _, e := range failed {
			m.printf("| %s | %s | %s |\n", mdEscape(e.Name), mdEscape(e.Expected), mdEscape(e.Actual))
		}
	}
	for _, v := range r.Violations {
		m.printf("\n**Invariant violated: %s** at %s%s:\n\n%s\n", mdEscape(v.Invariant), fmtOffset(v.AtMs), mdEscape(jobSuffix(v.JobID)), mdEscape(v.Message))
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
	m.printf("\nReproduce:\n\n")
	m.code("sh", reproduceCommand(r))
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
