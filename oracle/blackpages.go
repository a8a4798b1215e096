package oracle

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/faultline/faultline/reference/alert"
)

// Incident is a run of critical answers from one dependency, none more
// than the page deadline after the one before: what one page is owed for.
type Incident struct {
	Dependency      string
	FirstMs, LastMs int64
	// JobID, Fault and Answer describe the first critical answer.
	JobID, Fault, Answer string
}

// Incidents groups the critical answers among calls (in time order) into
// incidents, per dependency.
func Incidents(calls []Call, within time.Duration) []Incident {
	var incs []Incident
	open := map[string]int{}
	for _, c := range calls {
		if c.Class != "critical" || c.Outcome != "error" {
			continue
		}
		if i, ok := open[c.Dependency]; ok && c.AtMs-incs[i].LastMs <= within.Milliseconds() {
			incs[i].LastMs = c.AtMs
			continue
		}
		open[c.Dependency] = len(incs)
		incs = append(incs, Incident{Dependency: c.Dependency, FirstMs: c.AtMs, LastMs: c.AtMs, JobID: c.JobID, Fault: c.Fault, Answer: answer(c)})
	}
	return incs
}

// Paging says which accepted notifications are pages: those to a
// receiver not declared non-paging whose severity does not say it is not
// urgent — faultline's own format carries a severity; plain text is read
// for a leading severity word ("[low] …", "WARNING: …", "info - …").
type Paging struct {
	// NotPaging are the receivers declared not paging.
	NotPaging []string
}

// IsPage says d, if accepted, is a page.
func (p Paging) IsPage(d Delivery) bool {
	if slices.Contains(p.NotPaging, d.Receiver) {
		return false
	}
	if len(d.Alerts) == 0 {
		return true
	}
	for _, a := range d.Alerts {
		sev := strings.ToLower(a.Severity)
		if sev == "" {
			sev = TextSeverity(a.Summary)
		}
		switch sev {
		case "", "high", "critical":
			return true
		}
	}
	return false
}

// Note says what a page is, for the report.
func (p Paging) Note() string {
	s := "a page is a notification a paging receiver accepted within invariants.pageWithin of an incident's first critical answer, unless its severity (faultline's format, or a leading word of plain text) says low, medium, info or warning"
	if len(p.NotPaging) > 0 {
		s += "; not paging, by declaration: " + strings.Join(p.NotPaging, ", ")
	}
	return s
}

// severityWord is a severity word at the start of a plain-text message,
// after any punctuation or emoji shortcode: "[low]", "WARNING:",
// ":warning: medium -".
var severityWord = regexp.MustCompile(`(?i)^(?:[^a-z0-9]|:[a-z0-9_+-]+:)*(critical|crit|fatal|emergency|urgent|high|sev-?1|p1|error|medium|moderate|low|warning|warn|info|notice|debug|sev-?[34]|p[34])\b`)

// TextSeverity reads the severity a plain-text notification starts with:
// "high" for critical, fatal, emergency, urgent, high, sev1, p1 or error;
// "medium" for medium, moderate, warning, warn; "low" for low, info,
// notice, debug, sev3, sev4, p3, p4; "" when it starts with none.
func TextSeverity(text string) string {
	m := severityWord.FindStringSubmatch(text)
	if m == nil {
		return ""
	}
	switch w := strings.ToLower(m[1]); w {
	case "critical", "crit", "fatal", "emergency", "urgent", "high", "sev1", "sev-1", "p1", "error":
		return "high"
	case "medium", "moderate", "warning", "warn":
		return "medium"
	default:
		return "low"
	}
}

// PendingPage returns the first incident among calls that no page (of
// deliveries, by p) has answered yet and whose deadline is after nowMs:
// a page that may still come (a group wait, a batch). False when none.
func PendingPage(calls []Call, deliveries []Delivery, within time.Duration, p Paging, nowMs int64) (Incident, bool) {
	for _, in := range Incidents(calls, within) {
		if in.FirstMs+within.Milliseconds() <= nowMs {
			continue
		}
		if !slices.ContainsFunc(deliveries, func(d Delivery) bool { return d.Accepted && d.AtMs >= in.FirstMs && p.IsPage(d) }) {
			return in, true
		}
	}
	return Incident{}, false
}

// paging is the judge's Paging: the scenario's declaration (judged again
// with `report check --scenario`), else the history's.
func (b *blackJudge) paging() Paging {
	if x := b.sc.System.External; x != nil {
		return Paging{NotPaging: x.NotPaging()}
	}
	return Paging{NotPaging: b.x.NotPaging}
}

// watchedUntil is the last instant the drill watched the receivers: its
// freeze for the last look (or, in a history without one, the end of the
// drain).
func (b *blackJudge) watchedUntil() int64 {
	if b.h.FrozenMs > 0 {
		return b.h.FrozenMs
	}
	return b.h.EndedMs + b.x.DrainMs
}

// pages: every incident of critical answers paged within the deadline,
// and not more often than once per repeat interval. An incident whose
// deadline fell after the drill stopped watching and that no page
// answered is not judged: the note returned says so, with the drain that
// would judge it ("" when every incident was judged).
func (b *blackJudge) pages(within time.Duration) string {
	repeat := RepeatEvery(b.sc.AlertConfig(func(string) alert.Sink { return nil }))
	p := b.paging()
	watched := b.watchedUntil()
	var unjudged []string
	var need int64
	for _, in := range Incidents(b.h.Calls, within) {
		deadline := in.FirstMs + within.Milliseconds()
		var pages []int64
		for _, d := range b.h.Deliveries {
			if d.Accepted && p.IsPage(d) && d.AtMs >= in.FirstMs && d.AtMs <= in.LastMs+within.Milliseconds() {
				pages = append(pages, d.AtMs)
			}
		}
		if len(pages) == 0 && deadline > watched {
			unjudged = append(unjudged, fmt.Sprintf("the critical failure of %s at %s (deadline %s)", in.Dependency, fmtMs(in.FirstMs), fmtMs(deadline)))
			need = max(need, deadline-b.h.EndedMs)
			continue
		}
		if len(pages) == 0 || pages[0] > deadline {
			b.fail(InvCriticalPaged, in.JobID, in.FirstMs, "the critical failure of %s at %s (job %s answered %s, until %s) was never paged: no paging receiver accepted a notification within %s", in.Dependency, fmtMs(in.FirstMs), in.JobID, in.Answer, fmtMs(in.LastMs), within)
			continue
		}
		allowed := 1 + int((in.LastMs-in.FirstMs)/max(repeat.Milliseconds(), 1))
		if len(pages) > allowed {
			b.fail(InvOnePage, in.JobID, pages[allowed], "the critical failure of %s from %s to %s paged %d times (%s): once per incident (per repeat interval %s) is enough — every extra page is noise at 3 a.m.", in.Dependency, fmtMs(in.FirstMs), fmtMs(in.LastMs), len(pages), joinMs(pages, 5), repeat)
		}
	}
	if len(unjudged) == 0 {
		return ""
	}
	return fmt.Sprintf("not paged by %s, when the drill stopped watching, and the page deadline had not passed: %s — a system.external.drain of at least %s waits for it",
		fmtMs(watched), strings.Join(unjudged, "; "), (time.Duration(need)*time.Millisecond).Truncate(time.Second)+time.Second)
}
