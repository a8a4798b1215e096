package oracle

import (
	"slices"
	"time"

	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
)

// RepeatEvery is the shortest repeat interval of an alerter's
// configuration: one-page-per-repeat-interval's window.
func RepeatEvery(acfg alert.Config) time.Duration {
	d := acfg.WithDefaults().Timing.RepeatInterval
	for _, r := range acfg.Routes {
		if t := r.Timing.RepeatInterval; t > 0 && t < d {
			d = t
		}
	}
	return d
}

// LiveSection is the report's account of how a drill ran: its scale, its
// processes' events, and the latencies of the dependencies' calls.
func LiveSection(h *History) *reports.Live {
	l := &reports.Live{TimeScale: h.TimeScale, StartedAt: h.StartedAt.UTC().Format(time.RFC3339Nano), Workers: len(h.Workers),
		Processes: map[string]int{}, Latencies: []reports.Latency{}, Aborted: h.Aborted}
	for _, p := range h.Processes {
		l.Processes[p.Kind]++
	}
	by := map[string][]float64{}
	var deps []string
	for _, c := range h.Calls {
		if c.Outcome == "" {
			continue
		}
		if _, ok := by[c.Dependency]; !ok {
			deps = append(deps, c.Dependency)
		}
		by[c.Dependency] = append(by[c.Dependency], c.TookMs)
	}
	slices.Sort(deps)
	for _, d := range deps {
		ms := by[d]
		slices.Sort(ms)
		q := func(p float64) float64 { return ms[min(len(ms)-1, int(p*float64(len(ms))))] }
		l.Latencies = append(l.Latencies, reports.Latency{What: "dependency " + d, Calls: int64(len(ms)),
			P50Ms: q(0.50), P95Ms: q(0.95), P99Ms: q(0.99), MaxMs: ms[len(ms)-1]})
	}
	return l
}

// JudgedFaults is the faults' report: as the drill recorded them, with the
// scenario's requireHits.
func JudgedFaults(sc *scenarios.Scenario, h *History) []reports.Fault {
	out := slices.Clone(h.Faults)
	for i := range out {
		for _, f := range sc.Faults {
			if f.Name == out[i].Name {
				out[i].RequireHits = f.RequireHits
			}
		}
		if out[i].Windows == nil {
			out[i].Windows = [][2]int64{}
		}
	}
	if out == nil {
		out = []reports.Fault{}
	}
	return out
}
