package oracle

import (
	"fmt"
	"time"

	"github.com/faultline/faultline/scenarios"
)

// FaultWindow is one window of a fault's schedule: the fault is on from
// From until Until (scenario offsets).
type FaultWindow struct {
	Fault       string
	From, Until time.Duration
}

// FaultWindows are the windows of sc's faults for seed, up to end (at
// most 10,000 a fault): the one computation of where a scenario's faults
// are on, which the drill's pacing (the scale at which it can carry a
// workload into its windows) and the judge (LateJobs) share.
func FaultWindows(sc *scenarios.Scenario, seed uint64, end time.Duration) []FaultWindow {
	var wins []FaultWindow
	for _, f := range sc.Faults {
		ws, _ := f.Schedule.Windows(seed, f.Name, end, 10_000)
		for _, x := range ws {
			wins = append(wins, FaultWindow{f.Name, x.From, x.Until})
		}
	}
	return wins
}

// Misses says a job due at due and reached (created, or first tried) at
// at missed window w: it was due while w was on, and reached only after w
// closed — it met another system than the scenario meant.
func (w FaultWindow) Misses(due, at time.Duration) bool {
	return due >= w.From && due < w.Until && at >= w.Until
}

// LateJobs says which jobs the drill created so late that they missed
// what the scenario meant them to meet ("" when none did): a job due
// inside a fault's window but created after the window closed, or due
// before the scenario's end but created after it (the settle runs with
// every fault undone), by more than the drill's tolerance. A burst of 10,050 jobs created
// over 12 s of wall time at scale 10 met no fault after the scenario's 2 minutes, and
// succeeded; the judge would have called that the system's.
func LateJobs(h *History, sc *scenarios.Scenario) string {
	end := h.DurationMs
	wins := FaultWindows(sc, h.Seed, time.Duration(end)*time.Millisecond)
	// A lag within the drill's tolerance (on the scenario's clock) is the
	// pace the drill promises: such a job is on time.
	var allow int64
	if h.Slip != nil {
		allow = int64(h.Slip.ToleranceMs * max(h.TimeScale, 1))
	}
	n, example := 0, ""
	for _, hj := range h.Jobs {
		if hj.LagMs <= allow {
			continue
		}
		due, made := hj.AtMs-hj.LagMs, hj.AtMs
		what := ""
		for _, x := range wins {
			if x.Misses(time.Duration(due)*time.Millisecond, time.Duration(made)*time.Millisecond) {
				what = fmt.Sprintf("fault %s's window, which closed at +%s", x.Fault, x.Until.Truncate(time.Millisecond))
				break
			}
		}
		if what == "" && end > 0 && due < end && made >= end {
			what = fmt.Sprintf("the scenario's end at +%s", time.Duration(end)*time.Millisecond)
		}
		if what == "" {
			continue
		}
		if n++; example == "" {
			example = fmt.Sprintf("%s, due at +%s, created at +%s, after %s", hj.ID, time.Duration(due)*time.Millisecond, time.Duration(made)*time.Millisecond, what)
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("the drill created %d jobs too late for what the scenario meant them to meet (e.g. %s): it did not run the scenario's workload on time", n, example)
}
