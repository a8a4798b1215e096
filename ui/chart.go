package ui

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/faultline/faultline/reference/dlq"
)

// TrendHours are the dashboard's depth-trend spans (?hours=), and
// DefaultTrendHours the one shown when none is asked for.
var TrendHours = []int{1, 3, 6, 12, 24, 72, 168}

// DefaultTrendHours is the depth trend's span when ?hours= is not given.
const DefaultTrendHours = 6

// The chart's geometry, in SVG user units: the plot area is inset for the
// axis labels.
const (
	chartW, chartH                     = 800, 220
	plotL, plotR, plotT, plotB         = 48, 790, 10, 190
	plotW                      float64 = plotR - plotL
	plotH                      float64 = plotB - plotT
)

// trendView is the dashboard's depth chart, drawn by the template as an
// SVG line chart (no script: the page's CSP allows none inline).
type trendView struct {
	Hours   int
	Choices []int
	// Missing says the store keeps no depth samples; Error that they could
	// not be read.
	Missing, Error string
	// Samples is how many samples the span holds; Last is the newest.
	Samples int
	Last    dlq.DepthSample
	Peak    int
	// W and H are the SVG's size; Total and High the two lines' points.
	W, H        int
	Total, High string
	YTicks      []tick
	XTicks      []tick
	PlotL       int
	PlotR       int
	PlotB       int
}

// tick is an axis label at a position.
type tick struct {
	X, Y  int
	Label string
	// Anchor is the label's text-anchor: the first and last time labels
	// stay inside the chart.
	Anchor string
}

// hoursOf reads the ?hours= choice.
func hoursOf(v string) (int, error) {
	if v == "" {
		return DefaultTrendHours, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || !slices.Contains(TrendHours, n) {
		choices := make([]string, len(TrendHours))
		for i, h := range TrendHours {
			choices[i] = strconv.Itoa(h)
		}
		return 0, &InputError{Field: "hours", Reason: fmt.Sprintf("expected one of %s, got %q", strings.Join(choices, ", "), cutText(v, 20))}
	}
	return n, nil
}

// trend reads the depth samples of the last hours before now and lays out
// the chart.
func (s *server) trend(ctx context.Context, now time.Time, hours int) trendView {
	v := trendView{Hours: hours, Choices: TrendHours, W: chartW, H: chartH, PlotL: plotL, PlotR: plotR, PlotB: plotB}
	rec, ok := s.cfg.Store.(dlq.DepthRecorder)
	if !ok {
		v.Missing = "this store keeps no depth samples (it does not implement dlq.DepthRecorder)"
		return v
	}
	since := now.Add(-time.Duration(hours) * time.Hour)
	samples, err := rec.DepthSamples(ctx, since, dlq.DefaultDepthCap)
	if err != nil {
		v.Error = maskText(err.Error())
		return v
	}
	v.Samples = len(samples)
	if len(samples) == 0 {
		return v
	}
	v.Last = samples[len(samples)-1]
	for _, d := range samples {
		v.Peak = max(v.Peak, d.Waiting)
	}
	ymax := niceCeil(v.Peak)
	span := now.Sub(since)
	x := func(t time.Time) float64 {
		f := float64(t.Sub(since)) / float64(span)
		return plotL + plotW*min(max(f, 0), 1)
	}
	y := func(n int) float64 { return plotB - plotH*float64(n)/float64(ymax) }
	v.Total = polyline(samples, x, y, func(d dlq.DepthSample) int { return d.Waiting })
	v.High = polyline(samples, x, y, func(d dlq.DepthSample) int { return d.BySeverity["high"] })
	for _, n := range []int{0, ymax / 2, ymax} {
		v.YTicks = append(v.YTicks, tick{X: plotL - 6, Y: int(y(n)) + 4, Label: strconv.Itoa(n), Anchor: "end"})
	}
	layout := "15:04"
	if hours > 24 {
		layout = "Jan 2 15:04"
	}
	for i := range 5 {
		t := since.Add(span * time.Duration(i) / 4)
		anchor := "middle"
		switch i {
		case 0:
			anchor = "start"
		case 4:
			anchor = "end"
		}
		v.XTicks = append(v.XTicks, tick{X: int(x(t)), Y: plotB + 18, Label: t.UTC().Format(layout), Anchor: anchor})
	}
	return v
}

// polyline returns the points of one line: at most one point per unit of
// width (the largest value there, so a spike stays visible).
func polyline(samples []dlq.DepthSample, x func(time.Time) float64, y func(int) float64, val func(dlq.DepthSample) int) string {
	var b strings.Builder
	col, best := -1, 0
	flush := func() {
		if col >= 0 {
			fmt.Fprintf(&b, "%d,%.1f ", col, y(best))
		}
	}
	for _, d := range samples {
		c := int(x(d.At))
		if c != col {
			flush()
			col, best = c, val(d)
			continue
		}
		best = max(best, val(d))
	}
	flush()
	return strings.TrimSpace(b.String())
}

// niceCeil is the smallest of 1, 2, 5 times a power of ten (or 4, as the
// axis halves it) at or above n, at least 2.
func niceCeil(n int) int {
	if n <= 2 {
		return 2
	}
	for p := 1; ; p *= 10 {
		for _, m := range []int{1, 2, 4, 5} {
			if m*p >= n && (m*p)%2 == 0 {
				return m * p
			}
		}
	}
}

// depthBody is the API's depth answer.
type depthBody struct {
	Hours   int               `json:"hours"`
	Since   time.Time         `json:"since"`
	Samples []dlq.DepthSample `json:"samples"`
}

func (s *server) apiDepth(w http.ResponseWriter, r *http.Request, _ string) {
	hours, err := hoursOf(r.URL.Query().Get("hours"))
	if err != nil {
		apiFail(w, err)
		return
	}
	rec, ok := s.cfg.Store.(dlq.DepthRecorder)
	if !ok {
		apiFail(w, &UnavailableError{Action: "the depth trend", Interface: "dlq.DepthRecorder"})
		return
	}
	since := s.cfg.Now().Add(-time.Duration(hours) * time.Hour)
	samples, err := rec.DepthSamples(r.Context(), since, dlq.DefaultDepthCap)
	if err != nil {
		apiFail(w, err)
		return
	}
	if samples == nil {
		samples = []dlq.DepthSample{}
	}
	writeJSON(w, http.StatusOK, depthBody{Hours: hours, Since: since, Samples: samples})
}
