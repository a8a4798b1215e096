package reports

import (
	"math"
	"strings"
)

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
