package reports

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The HTML report is one self-contained file: the template, its CSS and its
// script are embedded here and inlined into every report, the charts are
// inline SVG drawn from the model, and a Content-Security-Policy that allows
// nothing but the inlined style and script keeps the page off the network.
//
//go:embed html/report.html.tmpl html/report.css html/report.js
var htmlAssets embed.FS

// ErrNilResult is returned, wrapped, by WriteHTML when it is given no
// result to write.
var ErrNilResult = errors.New("no result to write")

// Caps on what one HTML report shows, so that a long run's report stays
// small and quick to open; each capped list says how many it left out.
const (
	// htmlMaxPoints is the most points a time series is drawn with (about
	// 600; a 10-minute run's 601 samples are drawn as they are): longer
	// series are downsampled to the maximum of each bucket, so spikes stay.
	htmlMaxPoints = 610
	// htmlMaxRows caps each table (alerts, DLQ, transitions, fates, steps).
	htmlMaxRows = 500
	// htmlMaxViolations caps the violations shown with their trails.
	htmlMaxViolations = 20
	// htmlMaxMarks caps the markers of one timeline row.
	htmlMaxMarks = 2000
	// htmlMaxLaneRows caps the breaker and receiver rows of the timeline.
	htmlMaxLaneRows = 12
)

// WriteHTML writes r as one self-contained HTML file: the verdict and what
// failed first (with what a black-box drill could not observe, and its
// system under test), then a timeline chart of faults, breakers, alerts and queue
// depths, then the confusion matrix, where the jobs ended, the DLQ, alerts,
// breaker transitions, faults, operator steps and the configuration that
// ran. Every string of the model is escaped; the page loads nothing.
func WriteHTML(w io.Writer, r *Result) error {
	if r == nil {
		return fmt.Errorf("write html report: %w", ErrNilResult)
	}
	r = Redact(r)
	t, err := htmlTemplate()
	if err != nil {
		return fmt.Errorf("write html report: %w", err)
	}
	var buf bytes.Buffer
	buf.Grow(128 << 10)
	if err := t.Execute(&buf, newHTMLView(r)); err != nil {
		return fmt.Errorf("write html report %s: %w", r.Scenario, err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("write html report %s: %w", r.Scenario, err)
	}
	return nil
}

// htmlPage is what the template needs besides the view: the inlined assets
// and the policy that admits exactly them.
type htmlPage struct {
	tmpl *template.Template
	css  template.CSS
	js   template.JS
	csp  string
}

var htmlTemplate = sync.OnceValues(func() (*htmlPage, error) {
	read := func(name string) (string, error) {
		b, err := htmlAssets.ReadFile("html/" + name)
		return string(b), err
	}
	src, err := read("report.html.tmpl")
	if err != nil {
		return nil, err
	}
	css, err := read("report.css")
	if err != nil {
		return nil, err
	}
	js, err := read("report.js")
	if err != nil {
		return nil, err
	}
	t, err := template.New("report").Funcs(htmlFuncs).Parse(src)
	if err != nil {
		return nil, fmt.Errorf("parse report template: %w", err)
	}
	hash := func(s string) string {
		sum := sha256.Sum256([]byte(s))
		return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	}
	return &htmlPage{
		tmpl: t,
		css:  template.CSS(css),
		js:   template.JS(js),
		// Nothing may load: no fetch, no image, no font, no frame; the one
		// style sheet and the one script run because their hashes match.
		csp: "default-src 'none'; style-src " + hash(css) + "; script-src " + hash(js) +
			"; img-src 'none'; base-uri 'none'; form-action 'none'",
	}, nil
})

// Execute renders v with the page's assets.
func (p *htmlPage) Execute(w io.Writer, v *htmlView) error {
	v.CSS, v.JS, v.CSP = p.css, p.js, p.csp
	return p.tmpl.Execute(w, v)
}

var htmlFuncs = template.FuncMap{
	"at":  htmlOffset,
	"num": htmlNum,
}

// htmlOffset formats a virtual offset in milliseconds as "+3m0.031s".
func htmlOffset(ms int64) string {
	if ms == 0 {
		return "+0s"
	}
	if ms < 0 {
		return "-" + (time.Duration(-ms) * time.Millisecond).String()
	}
	return "+" + (time.Duration(ms) * time.Millisecond).String()
}

// htmlTickLabel formats an axis tick compactly: "+0", "+45s", "+1m30s",
// "+24h".
func htmlTickLabel(ms int64) string {
	if ms == 0 {
		return "+0"
	}
	var b strings.Builder
	b.WriteByte('+')
	if h := ms / 3_600_000; h > 0 {
		b.WriteString(strconv.FormatInt(h, 10) + "h")
		ms %= 3_600_000
	}
	if m := ms / 60_000; m > 0 {
		b.WriteString(strconv.FormatInt(m, 10) + "m")
		ms %= 60_000
	}
	if ms > 0 {
		b.WriteString(strconv.FormatFloat(float64(ms)/1000, 'f', -1, 64) + "s")
	}
	return b.String()
}

// htmlNum formats a count with thousands separators: 12,345.
func htmlNum(v any) string {
	var n int64
	switch v := v.(type) {
	case int:
		n = int64(v)
	case int64:
		n = v
	default:
		return fmt.Sprint(v)
	}
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// htmlView is the report as the template reads it: the model plus what is
// computed for the page (the chart's geometry, sorted maps, capped lists).
type htmlView struct {
	R   *Result
	CSS template.CSS
	JS  template.JS
	CSP string

	Verdict  htmlVerdict
	Failed   []Expectation
	Held     int
	Skipped  int
	Vios     []Violation
	ViosMore int
	// Invariants says what became of each invariant.
	Invariants []InvariantResult
	// Unseen is what a black-box drill could not observe from outside,
	// with why; UnseenExp how many of them are expectations; InvTally the
	// invariants by verdict, set when any is not observable.
	Unseen    []unobserved
	UnseenExp int
	InvTally  string
	// External describes a black-box drill's system under test.
	External []externalFact

	Timeline    *htmlTimeline
	Confusion   htmlConfusion
	Fates       htmlFates
	DLQ         htmlDLQ
	Alerts      htmlAlerts
	Trans       []Transition
	TransMore   int
	Faults      []Fault
	Steps       []Step
	StepsMore   int
	Config      string
	ConfigLines int
}

type htmlVerdict struct {
	Class, Label, Symbol, Headline string
}

// htmlKV is one entry of a count map, for a table in a stable order.
type htmlKV struct {
	K string
	V int64
}

func newHTMLView(r *Result) *htmlView {
	v := &htmlView{R: r}
	for _, e := range r.Expectations {
		switch e.Verdict {
		case Passed:
			v.Held++
		case Skipped:
			v.Skipped++
		case NotObservable:
			v.UnseenExp++
		default:
			v.Failed = append(v.Failed, e)
		}
	}
	v.Invariants = r.InvariantResults()
	v.Unseen = notObservable(r)
	if len(v.Unseen) > v.UnseenExp {
		v.InvTally = invariantTally(r)
	}
	if r.Live != nil && r.Live.External != nil {
		v.External = externalFacts(r.Live.External, r.Ledger.Lost)
	}
	v.Vios, v.ViosMore = htmlCapped(r.Violations, htmlMaxViolations)
	v.Verdict = newHTMLVerdict(r, len(v.Failed))
	v.Timeline = newHTMLTimeline(r)
	v.Confusion = newHTMLConfusion(r.Confusion)
	v.Fates = newHTMLFates(r)
	v.DLQ = newHTMLDLQ(r.DLQ)
	v.Alerts = newHTMLAlerts(r.Alerts)
	v.Trans, v.TransMore = htmlCapped(r.Breakers, htmlMaxRows)
	v.Faults = r.Faults
	v.Steps, v.StepsMore = htmlCapped(r.Steps, htmlMaxRows)
	if len(r.Config) > 0 {
		if b, err := json.MarshalIndent(r.Config, "", "  "); err == nil {
			v.Config, v.ConfigLines = string(b), bytes.Count(b, []byte("\n"))+1
		}
	}
	return v
}

// htmlCapped returns the first n of s and how many it left out.
func htmlCapped[T any](s []T, n int) ([]T, int) {
	if len(s) <= n {
		return s, 0
	}
	return s[:n], len(s) - n
}

func newHTMLVerdict(r *Result, failed int) htmlVerdict {
	var v htmlVerdict
	switch r.Verdict {
	case Passed:
		v = htmlVerdict{Class: "passed", Label: "PASSED", Symbol: "✔"}
	case Failed:
		v = htmlVerdict{Class: "failed", Label: "FAILED", Symbol: "✘"}
	case Errored:
		v = htmlVerdict{Class: "errored", Label: "ERRORED", Symbol: "⚠"}
	case Interrupted:
		v = htmlVerdict{Class: "errored", Label: "INTERRUPTED", Symbol: "⏹"}
	case Inconclusive:
		v = htmlVerdict{Class: "errored", Label: "INCONCLUSIVE", Symbol: "⏱"}
	default:
		v = htmlVerdict{Class: "errored", Label: strings.ToUpper(string(r.Verdict)), Symbol: "?"}
		if v.Label == "" {
			v.Label = "NO VERDICT"
		}
	}
	var parts []string
	if n := len(r.Expectations); n > 0 {
		if r.Verdict == Interrupted || r.Verdict == Errored {
			parts = append(parts, fmt.Sprintf("%d %s not evaluated", n, plural(n, "expectation", "expectations")))
		} else if unseen := len(expectationsWith(r, NotObservable)); unseen == n {
			parts = append(parts, fmt.Sprintf("no expectation was observable (%d)", n))
		} else if failed > 0 {
			parts = append(parts, fmt.Sprintf("%d of %d expectations failed", failed, n-unseen))
		} else {
			parts = append(parts, fmt.Sprintf("all %d expectations held", n-unseen))
		}
	}
	if r.Verdict == Inconclusive {
		parts = append([]string{"neither a pass nor a fail: the drill's harness could not keep pace with its time scale"}, parts...)
	}
	var broken, violations int64
	for _, inv := range r.InvariantResults() {
		if inv.Verdict == Failed {
			broken++
			violations += inv.Violations
		}
	}
	switch broken {
	case 0:
		parts = append(parts, "no invariant was violated")
	case 1:
		parts = append(parts, fmt.Sprintf("1 invariant was violated (%d %s)", violations, plural(int(violations), "time", "times")))
	default:
		parts = append(parts, fmt.Sprintf("%d invariants were violated (%d times in all)", broken, violations))
	}
	if n := len(notObservable(r)); n > 0 {
		where := ""
		if r.Live != nil && r.Live.External != nil {
			where = " from outside"
		}
		parts = append(parts, fmt.Sprintf("%d not observable%s", n, where))
	}
	v.Headline = strings.Join(parts, "; ")
	if r.EndedAtMs < r.DurationMs {
		v.Headline += fmt.Sprintf("; the run stopped at %s of %s", htmlOffset(r.EndedAtMs), htmlOffset(r.DurationMs))
	}
	return v
}

// classOrder is the order of failure classes in tables; others follow,
// sorted.
var htmlClassOrder = []string{"transient", "indeterminate", "permanent", "critical"}

// severityOrder is the order of severities, worst first.
var htmlSeverityOrder = []string{"high", "medium", "low"}

// routeOrder is the order of routes in the confusion matrix.
var htmlRouteOrder = []string{"retry", "dead-letter", "fallback"}

// htmlOrdered returns keys in the order of first, then the rest sorted.
func htmlOrdered(keys []string, first []string) []string {
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		seen[k] = true
	}
	var out []string
	for _, k := range first {
		if seen[k] {
			out = append(out, k)
			delete(seen, k)
		}
	}
	return append(out, slices.Sorted(maps.Keys(seen))...)
}

// htmlSortedKV returns m's entries, keys in the order of first, then sorted.
func htmlSortedKV[V int | int64](m map[string]V, first []string) []htmlKV {
	var out []htmlKV
	for _, k := range htmlOrdered(slices.Collect(maps.Keys(m)), first) {
		out = append(out, htmlKV{k, int64(m[k])})
	}
	return out
}

// htmlConfusion is the confusion matrix: true classes as rows, what the
// classifier said and the route taken as columns.
type htmlConfusion struct {
	Said, Routes []string
	Rows         []htmlConfusionRow
}

type htmlConfusionRow struct {
	True   string
	Total  int64
	Said   []htmlCell
	Routes []htmlCell
}

// htmlCell is one count of the matrix with its mark: "hit" on the diagonal,
// "miss" off it, "bad" for a final failure that was retried.
type htmlCell struct {
	N    int64
	Mark string
}

func newHTMLConfusion(rows []Confusion) htmlConfusion {
	var said, routes []string
	for _, c := range rows {
		said = append(said, slices.Collect(maps.Keys(c.Said))...)
		said = append(said, c.True)
		routes = append(routes, slices.Collect(maps.Keys(c.Routes))...)
	}
	v := htmlConfusion{Said: htmlOrdered(said, htmlClassOrder), Routes: htmlOrdered(routes, htmlRouteOrder)}
	for _, c := range rows {
		row := htmlConfusionRow{True: c.True, Total: c.Total}
		for _, s := range v.Said {
			n := c.Said[s]
			mark := ""
			switch {
			case s == c.True:
				mark = "hit"
			case n > 0:
				mark = "miss"
			}
			row.Said = append(row.Said, htmlCell{n, mark})
		}
		for _, rt := range v.Routes {
			n := c.Routes[rt]
			mark := ""
			if n > 0 && rt == "retry" && (c.True == "critical" || c.True == "permanent") {
				mark = "bad"
			}
			row.Routes = append(row.Routes, htmlCell{n, mark})
		}
		v.Rows = append(v.Rows, row)
	}
	return v
}

// htmlFates is where the jobs ended, with a bar for each disposition, what
// happened on the way, the split by task and sample jobs.
type htmlFates struct {
	Created int64
	Ends    []htmlFateRow
	Moves   []htmlFateRow
	Sample  []JobFate
	More    int
}

type htmlFateRow struct {
	Label, Note string
	N           int64
	Pct         string
	Bar         float64
	Bad         bool
}

func newHTMLFates(r *Result) htmlFates {
	l := r.Ledger
	v := htmlFates{Created: l.Created}
	end := func(label, note string, n int64, bad bool) {
		row := htmlFateRow{Label: label, Note: note, N: n, Bad: bad}
		if l.Created > 0 {
			f := float64(n) / float64(l.Created)
			row.Pct = strconv.FormatFloat(100*f, 'f', 1, 64) + " %"
			row.Bar = math.Round(1000*f) / 10
		}
		v.Ends = append(v.Ends, row)
	}
	end("succeeded", "completed", l.Succeeded, false)
	end("dead-lettered", "in the DLQ at the end", l.DeadLettered, false)
	end("fallback", "in the batch queue at the end", l.Fallback, false)
	if l.HeldAtEnd > 0 {
		end("held", "dead letters decided, waiting for room in the DLQ", l.HeldAtEnd, false)
	}
	end("queued", "waiting for a worker", l.Queued, false)
	end("in flight", "leased by a worker", l.InFlight, false)
	end("scheduled", "waiting to retry", l.Scheduled, false)
	end("removed", "evicted or purged from the DLQ", l.Removed, false)
	end("lost", "not accounted for by the store", l.Lost, l.Lost > 0)
	move := func(label, note string, n int64) {
		v.Moves = append(v.Moves, htmlFateRow{Label: label, Note: note, N: n})
	}
	move("attempts", "calls of a handler", l.Attempts)
	move("retries", "failures scheduled to run again", l.Retries)
	move("dead letters", "moves into the DLQ", l.DeadLetters)
	move("requeues", "moves out of the DLQ, back to a queue", l.Requeues)
	move("diversions", "jobs sent to the batch queue by an open breaker", l.Diversions)
	move("drained", "jobs run from the batch queue", l.Drained)
	move("released", "leases given back unrun", l.Released)
	move("lease expiries", "leases that ran out (a crashed or stalled worker)", l.LeaseExpiries)
	move("fenced", "late answers refused because the lease was lost", l.Fenced)
	move("evicted", "DLQ entries pushed out of a full DLQ", l.Evicted)
	move("purged", "DLQ entries purged", l.Purged)
	move("held", fmt.Sprintf("dead letters held while the DLQ was away or full, then written (longest %s)", htmlOffset(l.HeldMaxMs)), l.Held)
	move("kept", "dead letters the held set had no room for, kept by the worker with their leases alive", l.Kept)
	move("refused", fmt.Sprintf("jobs whose dead letters a full DLQ refused (%d refusals in all); held, never run again", l.RefusedTimes), l.Refused)
	move("budget delayed", "retries the retry budget pushed later", l.BudgetDelayed)
	move("budget exceeded", "retries over the budget after the longest wait", l.BudgetExceeded)
	move("charges", "calls that charged a payment", l.Charges)
	v.Sample, v.More = htmlCapped(r.Fates, htmlMaxRows)
	return v
}

type htmlDLQ struct {
	ByStatus, BySeverity []htmlKV
	Entries              []DLQEntry
	More                 int
}

func newHTMLDLQ(d DLQ) htmlDLQ {
	v := htmlDLQ{
		ByStatus:   htmlSortedKV(d.ByStatus, []string{"failed", "quarantined", "requeued", "deleted"}),
		BySeverity: htmlSortedKV(d.BySeverity, htmlSeverityOrder),
	}
	v.Entries, v.More = htmlCapped(d.Entries, htmlMaxRows)
	return v
}

type htmlAlerts struct {
	Counts     []htmlKV
	ByReceiver []htmlKV
	Pages      []htmlKV
	Deliveries []htmlDelivery
	More       int
}

type htmlDelivery struct {
	Delivery
	Page bool
}

func newHTMLAlerts(a Alerts) htmlAlerts {
	v := htmlAlerts{
		Counts: []htmlKV{
			{"notifications", a.Notifications}, {"pages", a.Pages}, {"rejected sends", a.Rejected},
			{"raised", a.Raised}, {"deduplicated", a.Deduplicated}, {"inhibited", a.Inhibited},
			{"redelivered", a.Redelivered}, {"repeats", a.Repeats}, {"resolved", a.Resolved},
		},
		ByReceiver: htmlSortedKV(a.ByReceiver, nil),
		Pages:      htmlSortedKV(a.PagesByFingerprint, nil),
	}
	ds, more := htmlCapped(a.Deliveries, htmlMaxRows)
	for _, d := range ds {
		v.Deliveries = append(v.Deliveries, htmlDelivery{d, d.IsPage()})
	}
	v.More = more
	return v
}

// The timeline chart's geometry, in SVG user units.
const (
	htmlChartW     = 1100
	htmlChartLeft  = 210 // the row labels
	htmlChartRight = 1084
	htmlPlotW      = htmlChartRight - htmlChartLeft
	htmlLaneH      = 16
	htmlHeaderH    = 18
	htmlJobsH      = 170
	htmlDLQH       = 120
	htmlPanelGap   = 30
	htmlAxisH      = 22
	htmlMaxLabel   = 32
)

// htmlTimeline is one SVG: rows of faults, breakers, alerts and steps over
// two stacked-area panels (jobs in the system; DLQ depth by severity), on a
// shared time axis, with the downsampled data the script's readout shows.
type htmlTimeline struct {
	W, H        int
	Left, Right float64
	EndMs       int64
	Ticks       []htmlXTick
	TopY, BotY  float64 // the span of the gridlines and vertical marks
	AxisY       float64 // the bottom axis
	TickY       float64
	TickLabelY  float64
	AxisTitleY  float64
	Rows        []htmlRow
	Panels      []htmlPanel
	Marks       []htmlVMark
	Patterns    []htmlPattern
	Legend      []htmlLegendItem
	Data        htmlChartData
	Bucket      string // how much time one drawn point stands for
	Downsampled bool
}

type htmlXTick struct {
	X     float64
	Label string
}

type htmlYTick struct {
	Y     float64
	Label string
}

// htmlRow is one labelled row of the timeline: a group header, a fault, a
// breaker, an alert receiver or the operator steps.
type htmlRow struct {
	Y, H    float64
	TY      float64 // the baseline of its text
	Label   string
	Title   string // the full label, when Label is shortened
	Header  bool
	Class   string
	Note    string // shown in the row when it has nothing drawn
	Tip     string // the tooltip of the whole row
	Rects   []htmlRect
	Markers []htmlMarker
}

type htmlRect struct {
	X, Y, W, H float64
	LX, LY     float64 // where its label goes
	Fill       string
	Class      string
	Label      string
	Title      string
}

type htmlMarker struct {
	D     string
	Shape string // page, firing, resolved, step, step-error
	Title string
}

// htmlMarkerPath returns the outline of a marker centred on (x, y): a triangle
// for a page, a circle for another alert, a diamond for a step.
func htmlMarkerPath(shape string, x, y float64) string {
	var b strings.Builder
	switch shape {
	case "page":
		b.WriteByte('M')
		htmlPoint(&b, x, htmlRound(y-5))
		b.WriteString("l5,9h-10z")
	case "step", "step-error":
		b.WriteByte('M')
		htmlPoint(&b, x, htmlRound(y-5))
		b.WriteString("l5,5l-5,5l-5,-5z")
		if shape == "step-error" {
			b.WriteByte('M')
			htmlPoint(&b, x-3, htmlRound(y-3))
			b.WriteString("l6,6m0,-6l-6,6")
		}
	default:
		b.WriteByte('M')
		htmlPoint(&b, x-4, y)
		b.WriteString("a4,4 0 1,0 8,0a4,4 0 1,0 -8,0z")
	}
	return b.String()
}

type htmlPanel struct {
	Title, Unit string
	Y, H        float64
	Bottom      float64
	TitleY      float64
	UnitY       float64
	NoteY       float64
	YTicks      []htmlYTick
	Layers      []htmlArea
	Note        string
}

type htmlArea struct {
	Name, D, Fill, Stroke string
}

// htmlVMark is a vertical line across the chart: a violation, or where the run
// stopped.
type htmlVMark struct {
	X, DX float64
	LY    float64
	// Anchor is the label's text-anchor: "end" near the right edge.
	Anchor string
	Class  string
	Label  string
	Title  string
}

// htmlPattern is one fill: a light background with a pattern in a strong
// colour, so that no meaning rests on colour alone.
type htmlPattern struct {
	ID, Bg, Fg, Kind string
}

type htmlLegendItem struct {
	Label string
	Fill  string // a pattern's url, for a swatch
	Shape string // a marker or a line, instead of a swatch
}

// htmlChartData is the downsampled series the script reads for its readout.
type htmlChartData struct {
	X []float64         `json:"x"`
	T []int64           `json:"t"`
	S []htmlChartSeries `json:"s"`
}

type htmlChartSeries struct {
	Name string  `json:"name"`
	V    []int64 `json:"v"`
}

// htmlStyle is how one series or state is drawn.
type htmlStyle struct {
	id, bg, fg, kind string
}

var (
	htmlQueuedStyle    = htmlStyle{"f-queued", "#cfe2f3", "#0b5394", "solid"}
	htmlInFlightStyle  = htmlStyle{"f-inflight", "#d0eee2", "#00704f", "dots"}
	htmlScheduledStyle = htmlStyle{"f-scheduled", "#fde9c4", "#a86b00", "diag"}
	htmlFallbackStyle  = htmlStyle{"f-fallback", "#f3dbe9", "#8e3a6b", "rdiag"}
	htmlSeverityStyles = []htmlStyle{
		{"f-sev-0", "#f8d5c2", "#b3400a", "cross"},
		{"f-sev-1", "#fff1c9", "#7d5a00", "horiz"},
		{"f-sev-2", "#d5ebf8", "#1f6f9f", "dots"},
		{"f-sev-3", "#e4e4e4", "#505050", "solid"},
		{"f-sev-4", "#e8e0f3", "#5b3f8c", "rdiag"},
		{"f-sev-5", "#dff0d0", "#3d6b1f", "diag"},
	}
	htmlClosedStyle   = htmlStyle{"f-closed", "#dcefd8", "#2e6b2e", "solid"}
	htmlHalfOpenStyle = htmlStyle{"f-half", "#fde9c4", "#a86b00", "diag"}
	htmlOpenStyle     = htmlStyle{"f-open", "#f8d5c2", "#b3400a", "cross"}
	htmlFaultStyle    = htmlStyle{"f-fault", "#e6e6e6", "#555555", "rdiag"}
)

func (s htmlStyle) fill() string { return "url(#" + s.id + ")" }

func (s htmlStyle) def() htmlPattern { return htmlPattern{s.id, s.bg, s.fg, s.kind} }

// htmlBreakerStyle returns the style of a breaker state and its rank: the worst
// state of a pixel is drawn.
func htmlBreakerStyle(state string) (htmlStyle, int) {
	switch state {
	case "open":
		return htmlOpenStyle, 2
	case "half-open":
		return htmlHalfOpenStyle, 1
	default:
		return htmlClosedStyle, 0
	}
}

// htmlChart lays the timeline out top to bottom.
type htmlChart struct {
	r     *Result
	v     *htmlTimeline
	y     float64
	endMs int64
}

func (b *htmlChart) x(ms int64) float64 {
	if ms < 0 {
		ms = 0
	}
	if ms > b.endMs {
		ms = b.endMs
	}
	return htmlRound(htmlChartLeft + float64(ms)/float64(b.endMs)*htmlPlotW)
}

func htmlRound(f float64) float64 { return math.Round(f*10) / 10 }

// htmlShorten cuts a label to fit the left margin.
func htmlShorten(s string) (label, title string) {
	if r := []rune(s); len(r) > htmlMaxLabel {
		return string(r[:htmlMaxLabel-1]) + "…", s
	}
	return s, ""
}

func (b *htmlChart) header(label string) {
	l, t := htmlShorten(label)
	b.v.Rows = append(b.v.Rows, htmlRow{Y: b.y + 2, H: htmlHeaderH, TY: b.y + htmlHeaderH - 4, Label: l, Title: t, Header: true})
	b.y += htmlHeaderH
}

func (b *htmlChart) row(label, class string) *htmlRow {
	l, t := htmlShorten(label)
	b.v.Rows = append(b.v.Rows, htmlRow{Y: b.y, H: htmlLaneH, TY: b.y + htmlLaneH/2 + 4, Label: l, Title: t, Class: class})
	b.y += htmlLaneH
	return &b.v.Rows[len(b.v.Rows)-1]
}

func newHTMLTimeline(r *Result) *htmlTimeline {
	endMs := max(r.DurationMs, r.EndedAtMs, 1)
	if n := len(r.Series.AtMs); n > 0 {
		endMs = max(endMs, r.Series.AtMs[n-1])
	}
	if len(r.Series.AtMs) == 0 && len(r.Faults) == 0 && len(r.Breakers) == 0 &&
		len(r.Alerts.Deliveries) == 0 && len(r.Steps) == 0 {
		return nil
	}
	b := &htmlChart{r: r, endMs: endMs, y: htmlAxisH + 6,
		v: &htmlTimeline{W: htmlChartW, Left: htmlChartLeft, Right: htmlChartRight, EndMs: endMs}}
	b.v.TopY = b.y
	b.faults()
	b.breakers()
	b.alerts()
	b.steps()
	b.y += 12
	b.panels()
	b.v.BotY = b.y
	b.v.AxisY = b.y
	b.v.TickY = b.y + 4
	b.v.TickLabelY = b.y + 17
	b.v.AxisTitleY = b.y + htmlAxisH + 12
	b.y += htmlAxisH + 18
	b.v.H = int(math.Ceil(b.y))
	b.ticks()
	b.marks()
	b.legend()
	return b.v
}

// faults draws a row per fault, grouped under its target: its windows
// shaded, and a solid bar from its first to its last hit.
func (b *htmlChart) faults() {
	if len(b.r.Faults) == 0 {
		return
	}
	var targets []string
	byTarget := map[string][]Fault{}
	for _, f := range b.r.Faults {
		if _, ok := byTarget[f.Target]; !ok {
			targets = append(targets, f.Target)
		}
		byTarget[f.Target] = append(byTarget[f.Target], f)
	}
	for _, t := range targets {
		b.header(t)
		for _, f := range byTarget[t] {
			label := fmt.Sprintf("%s (%s hits)", f.Name, htmlNum(f.Hits))
			row := b.row(label, "fault")
			row.Tip = fmt.Sprintf("fault %s (%s, %s) on %s: %d windows", f.Name, f.Model, f.Class, f.Target, len(f.Windows))
			if f.Truncated {
				row.Tip += " listed, and more"
			}
			if f.Hits > 0 {
				row.Tip += fmt.Sprintf("; %s hits, the first at %s, the last at %s", htmlNum(f.Hits), htmlOffset(f.FirstHitMs), htmlOffset(f.LastHitMs))
			}
			// Windows closer than a unit are drawn as one; each has its
			// own tooltip while there are few.
			few := len(f.Windows) <= 20
			for _, w := range f.Windows {
				x0, x1 := b.x(w[0]), b.x(w[1])
				if n := len(row.Rects); n > 0 && x0 <= row.Rects[n-1].X+row.Rects[n-1].W+1 {
					last := &row.Rects[n-1]
					last.W = htmlRound(max(last.W, x1-last.X))
					continue
				}
				r := htmlRect{X: x0, Y: row.Y + 2, W: htmlRound(max(x1-x0, 1.5)), H: htmlLaneH - 4, Fill: htmlFaultStyle.fill(), Class: "window"}
				if few {
					r.Title = fmt.Sprintf("fault %s on from %s until %s", f.Name, htmlOffset(w[0]), htmlOffset(w[1]))
				}
				row.Rects = append(row.Rects, r)
			}
			if f.Hits > 0 {
				x0, x1 := b.x(f.FirstHitMs), b.x(f.LastHitMs)
				row.Rects = append(row.Rects, htmlRect{
					X: x0, Y: row.Y + htmlLaneH/2 - 1.5, W: htmlRound(max(x1-x0, 2)), H: 3, Class: "hits",
					Title: fmt.Sprintf("fault %s hit %s times, the first at %s, the last at %s", f.Name, htmlNum(f.Hits), htmlOffset(f.FirstHitMs), htmlOffset(f.LastHitMs)),
				})
			}
		}
	}
	b.v.Patterns = append(b.v.Patterns, htmlFaultStyle.def())
}

// htmlSegment is a span of one breaker state.
type htmlSegment struct {
	from, to int64
	state    string
}

// htmlBreakerSegments returns each breaker's states over the run: from its
// transitions when it has any (exact to the millisecond), else from the
// sampled series.
func htmlBreakerSegments(r *Result) (names []string, segs map[string][]htmlSegment) {
	segs = map[string][]htmlSegment{}
	end := max(r.EndedAtMs, 1)
	byName := map[string][]Transition{}
	for _, t := range r.Breakers {
		if _, ok := byName[t.Breaker]; !ok {
			names = append(names, t.Breaker)
		}
		byName[t.Breaker] = append(byName[t.Breaker], t)
	}
	for _, name := range names {
		ts := byName[name]
		at, state := int64(0), ts[0].From
		for _, t := range ts {
			if t.AtMs > at {
				segs[name] = append(segs[name], htmlSegment{at, t.AtMs, state})
			}
			at, state = t.AtMs, t.To
		}
		if end > at {
			segs[name] = append(segs[name], htmlSegment{at, end, state})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(r.Series.Breakers)) {
		if _, ok := byName[name]; ok {
			continue
		}
		names = append(names, name)
		states, at := r.Series.Breakers[name], r.Series.AtMs
		for i := 0; i < len(states) && i < len(at); {
			j := i
			for j < len(states) && j < len(at) && states[j] == states[i] {
				j++
			}
			to := end
			if j < len(at) {
				to = at[j]
			}
			segs[name] = append(segs[name], htmlSegment{at[i], to, states[i]})
			i = j
		}
	}
	return names, segs
}

// breakers draws a band per breaker, its state in colour, pattern and word.
// A run of spans too narrow to see is drawn as one, in the worst state among
// them, so that a flapping breaker's band stays small and its blips visible.
func (b *htmlChart) breakers() {
	names, segs := htmlBreakerSegments(b.r)
	if len(names) == 0 {
		return
	}
	b.header("circuit breakers")
	shown, more := htmlCapped(names, htmlMaxLaneRows)
	type span struct {
		x0, x1   float64
		from, to int64
		state    string
		rank, n  int
	}
	for _, name := range shown {
		row := b.row(name, "breaker")
		var spans []span
		for _, s := range segs[name] {
			x0, x1 := b.x(s.from), b.x(s.to)
			_, rank := htmlBreakerStyle(s.state)
			if k := len(spans) - 1; k >= 0 {
				c := &spans[k]
				if c.state == s.state || (c.x1-c.x0 < 1.5 && x1-x0 < 1.5) {
					c.x1, c.to, c.n = x1, s.to, c.n+1
					if rank > c.rank {
						c.state, c.rank = s.state, rank
					}
					continue
				}
			}
			spans = append(spans, span{x0, x1, s.from, s.to, s.state, rank, 1})
		}
		for _, s := range spans {
			st, _ := htmlBreakerStyle(s.state)
			r := htmlRect{X: s.x0, Y: row.Y + 1, W: htmlRound(max(s.x1-s.x0, 1.5)), H: htmlLaneH - 2,
				Fill: st.fill(), Class: "band " + st.id}
			// A tooltip where there is room to point at it.
			switch {
			case r.W < 4:
			case s.n > 1:
				r.Title = fmt.Sprintf("breaker %s: %d states from %s until %s, the worst %s", name, s.n, htmlOffset(s.from), htmlOffset(s.to), s.state)
			default:
				r.Title = fmt.Sprintf("breaker %s %s from %s until %s", name, s.state, htmlOffset(s.from), htmlOffset(s.to))
			}
			if r.W >= 46 {
				r.Label, r.LX, r.LY = s.state, htmlRound(r.X+4), r.Y+r.H/2+4
			}
			row.Rects = append(row.Rects, r)
		}
	}
	if more > 0 {
		b.row(fmt.Sprintf("%d more breakers", more), "breaker").Note = "see the transitions table"
	}
	b.v.Patterns = append(b.v.Patterns, htmlClosedStyle.def(), htmlHalfOpenStyle.def(), htmlOpenStyle.def())
}

// alerts draws a row of markers per receiver: a triangle for a page, a
// filled circle for another firing alert, a ring for a resolved one.
func (b *htmlChart) alerts() {
	a := b.r.Alerts
	recv := slices.Collect(maps.Keys(a.ByReceiver))
	for _, d := range a.Deliveries {
		recv = append(recv, d.Receiver)
	}
	names := htmlOrdered(recv, nil)
	if len(names) == 0 && a.Notifications == 0 {
		return
	}
	b.header("alerts by receiver")
	shown, _ := htmlCapped(names, htmlMaxLaneRows)
	rows := map[string]int{}
	for _, n := range shown {
		b.row(n, "receiver")
		rows[n] = len(b.v.Rows) - 1
	}
	other := -1
	if len(names) > len(shown) {
		b.row("other receivers", "receiver")
		other = len(b.v.Rows) - 1
	}
	for _, d := range a.Deliveries {
		i, ok := rows[d.Receiver]
		if !ok {
			i = other
		}
		if i < 0 {
			continue
		}
		row := &b.v.Rows[i]
		if len(row.Markers) >= htmlMaxMarks {
			continue
		}
		shape := "firing"
		switch {
		case d.IsPage():
			shape = "page"
		case d.Status != "firing":
			shape = "resolved"
		}
		title := fmt.Sprintf("%s %s → %s: %s %s %s ×%d: %s", htmlOffset(d.AtMs), shape, d.Receiver, d.Name, d.Severity, d.Status, d.Count, d.Summary)
		if d.Attempt > 1 {
			title += fmt.Sprintf(" (delivered on attempt %d)", d.Attempt)
		}
		row.Markers = append(row.Markers, htmlMarker{D: htmlMarkerPath(shape, b.x(d.AtMs), row.Y+htmlLaneH/2), Shape: shape, Title: title})
	}
	for _, i := range rows {
		if r := &b.v.Rows[i]; len(r.Markers) == 0 {
			r.Note = "no delivery in the listed ones"
		}
	}
}

// steps draws a diamond per operator step; a failed step is crossed.
func (b *htmlChart) steps() {
	if len(b.r.Steps) == 0 {
		return
	}
	b.header("operator")
	row := b.row(fmt.Sprintf("steps (%d)", len(b.r.Steps)), "steps")
	for _, s := range b.r.Steps {
		if len(row.Markers) >= htmlMaxMarks {
			break
		}
		shape, title := "step", fmt.Sprintf("%s %s: %s", htmlOffset(s.AtMs), s.Kind, s.Detail)
		if s.Error != "" {
			shape, title = "step-error", title+" — failed: "+s.Error
		}
		row.Markers = append(row.Markers, htmlMarker{D: htmlMarkerPath(shape, b.x(s.AtMs), row.Y+htmlLaneH/2), Shape: shape, Title: title})
	}
}

// htmlBucketSize returns how many samples one bucket takes for n samples to
// fit in at most most buckets.
func htmlBucketSize(n, most int) (size int) {
	if n <= most {
		return 1
	}
	return (n + most - 1) / most
}

// htmlMaxIn returns the largest of vals[from:to], reading missing values as 0.
func htmlMaxIn(vals []int64, from, to int) int64 {
	var m int64
	for i := from; i < to && i < len(vals); i++ {
		m = max(m, vals[i])
	}
	return m
}

type htmlSeriesIn struct {
	name  string
	vals  []int64
	style htmlStyle
}

// panels draws the stacked areas: jobs in the system, then the DLQ's depth
// by severity.
func (b *htmlChart) panels() {
	s := b.r.Series
	n := len(s.AtMs)
	size := htmlBucketSize(n, htmlMaxPoints)
	nb := (n + size - 1) / size
	b.v.Downsampled = size > 1
	if size > 1 {
		b.v.Bucket = htmlOffset(int64(size) * max(s.IntervalMs, 1))
	}
	// Bucket i starts at sample i*size; the last point repeats the last
	// bucket at the last sample, so that the areas reach the end.
	xs := make([]float64, 0, nb+1)
	ts := make([]int64, 0, nb+1)
	for i := 0; i < nb; i++ {
		ts = append(ts, s.AtMs[i*size])
		xs = append(xs, b.x(s.AtMs[i*size]))
	}
	if nb > 0 && ts[nb-1] != s.AtMs[n-1] {
		ts = append(ts, s.AtMs[n-1])
		xs = append(xs, b.x(s.AtMs[n-1]))
	}
	down := func(vals []int64) []int64 {
		out := make([]int64, 0, len(ts))
		for i := 0; i < nb; i++ {
			out = append(out, htmlMaxIn(vals, i*size, (i+1)*size))
		}
		if len(ts) > nb {
			out = append(out, out[nb-1])
		}
		return out
	}
	b.v.Data.X, b.v.Data.T = xs, ts

	jobs := []htmlSeriesIn{
		{"queued", s.Queued, htmlQueuedStyle},
		{"in flight", s.InFlight, htmlInFlightStyle},
		{"waiting to retry", s.Scheduled, htmlScheduledStyle},
		{"fallback (batch queue)", s.Fallback, htmlFallbackStyle},
	}
	var dlq []htmlSeriesIn
	for i, sev := range htmlOrdered(slices.Collect(maps.Keys(s.DLQBySeverity)), htmlSeverityOrder) {
		dlq = append(dlq, htmlSeriesIn{"DLQ " + sev, s.DLQBySeverity[sev], htmlSeverityStyles[i%len(htmlSeverityStyles)]})
	}
	b.panel("Jobs in the system, stacked", "jobs", htmlJobsH, jobs, xs, down, "nothing was queued, in flight, waiting to retry or in the batch queue")
	b.y += htmlPanelGap - 16
	b.panel("DLQ depth by severity, stacked", "entries", htmlDLQH, dlq, xs, down, "the DLQ stayed empty")
}

func (b *htmlChart) panel(title, unit string, h float64, in []htmlSeriesIn, xs []float64, down func([]int64) []int64, empty string) {
	b.y += 16 // the title
	p := htmlPanel{Title: title, Unit: unit, Y: b.y, H: h, Bottom: b.y + h, TitleY: b.y - 6, UnitY: b.y + h/2, NoteY: b.y + h/2}
	b.y += h
	var layers [][]int64
	var top int64
	stack := make([]int64, len(xs))
	for _, s := range in {
		vals := down(s.vals)
		b.v.Data.S = append(b.v.Data.S, htmlChartSeries{s.name, vals})
		b.v.Legend = append(b.v.Legend, htmlLegendItem{Label: s.name, Fill: s.style.fill()})
		b.v.Patterns = append(b.v.Patterns, s.style.def())
		for i, v := range vals {
			stack[i] += v
			top = max(top, stack[i])
		}
		layers = append(layers, vals)
	}
	step, yMax := htmlNiceScale(top)
	yOf := func(v int64) float64 { return htmlRound(p.Y + h - float64(v)/float64(yMax)*h) }
	for v := int64(0); v <= yMax; v += step {
		p.YTicks = append(p.YTicks, htmlYTick{yOf(v), htmlNum(v)})
	}
	if top == 0 {
		p.Note = empty
	}
	below := make([]int64, len(xs))
	for k, vals := range layers {
		var any bool
		for _, v := range vals {
			any = any || v > 0
		}
		if !any || len(xs) == 0 {
			continue
		}
		var d strings.Builder
		d.Grow(len(xs) * 24)
		for i := range xs {
			if i == 0 {
				d.WriteByte('M')
			} else {
				d.WriteByte('L')
			}
			htmlPoint(&d, xs[i], yOf(below[i]+vals[i]))
		}
		for i := len(xs) - 1; i >= 0; i-- {
			d.WriteByte('L')
			htmlPoint(&d, xs[i], yOf(below[i]))
		}
		d.WriteByte('Z')
		p.Layers = append(p.Layers, htmlArea{Name: in[k].name, D: d.String(), Fill: in[k].style.fill(), Stroke: in[k].style.fg})
		for i := range below {
			below[i] += vals[i]
		}
	}
	b.v.Panels = append(b.v.Panels, p)
}

func htmlPoint(b *strings.Builder, x, y float64) {
	var buf [32]byte
	b.Write(strconv.AppendFloat(buf[:0], x, 'f', -1, 64))
	b.WriteByte(',')
	b.Write(strconv.AppendFloat(buf[:0], y, 'f', -1, 64))
}

// htmlNiceScale returns a tick step of 1, 2 or 5 × 10^k and the axis maximum, a
// multiple of it at or above top, with about four ticks.
func htmlNiceScale(top int64) (step, yMax int64) {
	if top <= 0 {
		return 1, 1
	}
	raw := float64(top) / 4
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step = int64(mag)
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*mag {
			step = int64(m * mag)
			break
		}
	}
	step = max(step, 1)
	return step, (top + step - 1) / step * step
}

// htmlTickSteps are the time axis's candidate steps, in milliseconds.
var htmlTickSteps = []int64{
	100, 200, 500, 1_000, 2_000, 5_000, 10_000, 15_000, 30_000,
	60_000, 120_000, 300_000, 600_000, 900_000, 1_800_000,
	3_600_000, 7_200_000, 10_800_000, 21_600_000, 43_200_000, 86_400_000,
}

// htmlMaxTicks bounds the time axis's ticks, however long the run.
const htmlMaxTicks = 10

// ticks puts at most about ten labelled ticks on the time axis: a step
// from htmlTickSteps, or, past a day, a whole number of days (1, 2 or 5
// times a power of ten), so a run of years has ten ticks too.
func (b *htmlChart) ticks() {
	step := int64(0)
	for _, s := range htmlTickSteps {
		if b.endMs/s <= htmlMaxTicks {
			step = s
			break
		}
	}
	if step == 0 {
		day := htmlTickSteps[len(htmlTickSteps)-1]
	days:
		for p := int64(1); ; p *= 10 {
			for _, m := range []int64{1, 2, 5} {
				if p*m > b.endMs/day/htmlMaxTicks || p*m >= math.MaxInt64/day/10 {
					step = p * m * day
					break days
				}
			}
		}
	}
	for i := int64(0); i <= htmlMaxTicks+1 && i <= b.endMs/step; i++ {
		t := i * step
		b.v.Ticks = append(b.v.Ticks, htmlXTick{b.x(t), htmlTickLabel(t)})
	}
}

// marks draws a line at each violation and where a stopped run stopped.
func (b *htmlChart) marks() {
	ly := b.v.TopY
	if len(b.v.Panels) > 0 {
		ly = b.v.Panels[0].Y
	}
	mark := func(m htmlVMark) {
		m.DX, m.Anchor, m.LY = 4, "start", ly+12+float64(len(b.v.Marks)%4)*14
		if m.X > htmlChartLeft+htmlPlotW*0.6 {
			m.DX, m.Anchor = -4, "end"
		}
		b.v.Marks = append(b.v.Marks, m)
	}
	vs, _ := htmlCapped(b.r.Violations, htmlMaxViolations)
	for _, v := range vs {
		mark(htmlVMark{X: b.x(v.AtMs), Class: "violation", Label: "✘ " + v.Invariant,
			Title: fmt.Sprintf("%s violation of %s: %s", htmlOffset(v.AtMs), v.Invariant, v.Message)})
	}
	if b.r.EndedAtMs > 0 && b.r.EndedAtMs < b.r.DurationMs {
		mark(htmlVMark{X: b.x(b.r.EndedAtMs), Class: "stopped", Label: "run stopped at " + htmlOffset(b.r.EndedAtMs),
			Title: fmt.Sprintf("the run stopped at %s of %s", htmlOffset(b.r.EndedAtMs), htmlOffset(b.r.DurationMs))})
	}
}

// legend lists what the rows and marks mean; the series added theirs.
func (b *htmlChart) legend() {
	var l []htmlLegendItem
	if len(b.r.Faults) > 0 {
		l = append(l, htmlLegendItem{Label: "fault window (schedule on)", Fill: htmlFaultStyle.fill()}, htmlLegendItem{Label: "first to last hit", Shape: "hits"})
	}
	if len(b.r.Breakers) > 0 || len(b.r.Series.Breakers) > 0 {
		l = append(l, htmlLegendItem{Label: "breaker closed", Fill: htmlClosedStyle.fill()},
			htmlLegendItem{Label: "breaker half-open", Fill: htmlHalfOpenStyle.fill()},
			htmlLegendItem{Label: "breaker open", Fill: htmlOpenStyle.fill()})
	}
	l = append(l, htmlLegendItem{Label: "page (firing, high severity)", Shape: "page"},
		htmlLegendItem{Label: "alert firing", Shape: "firing"}, htmlLegendItem{Label: "alert resolved", Shape: "resolved"})
	if len(b.r.Steps) > 0 {
		l = append(l, htmlLegendItem{Label: "operator step", Shape: "step"})
	}
	if len(b.r.Violations) > 0 {
		l = append(l, htmlLegendItem{Label: "invariant violation", Shape: "violation"})
	}
	b.v.Legend = append(l, b.v.Legend...)
	// One definition per pattern.
	seen := map[string]bool{}
	b.v.Patterns = slices.DeleteFunc(b.v.Patterns, func(p htmlPattern) bool {
		dup := seen[p.ID]
		seen[p.ID] = true
		return dup
	})
}
