package reports

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

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
