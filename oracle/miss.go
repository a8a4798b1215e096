package oracle

import (
	"time"

	"github.com/faultline/faultline/faults"
)

// Miss is a window of a worker fault aimed at a state (schedule.when) in
// which a targeted worker never reached the state, so that the fault did
// not strike it there: the simulator's and a drill's record alike, which
// the report turns into a warning, or a failed requireHits (formerly
// sim.HMiss; the simulator's waiting for the state stays in sim).
type Miss struct {
	// Fault is the fault's name; Worker the worker it did not strike.
	Fault  string `json:"fault"`
	Worker string `json:"worker"`
	// State and Dependency are the state waited for (faults.When).
	State      string `json:"state"`
	Dependency string `json:"dependency"`
	// FromMs and UntilMs are the window waited in, [from, until).
	FromMs  int64 `json:"fromMs"`
	UntilMs int64 `json:"untilMs"`
	// Targeted is how many workers the fault waited for in that window:
	// when every one of them missed, the window struck none.
	Targeted int `json:"targeted"`
}

// MissOf is the record of worker's miss of fault f's state in window win,
// one of targeted workers the window waited for.
func MissOf(f faults.Fault, worker string, win faults.Window, targeted int) Miss {
	m := Miss{Fault: f.Name, Worker: worker, FromMs: win.From.Milliseconds(), UntilMs: win.Until.Milliseconds(), Targeted: targeted}
	if w := f.Schedule.When; w != nil {
		m.State, m.Dependency = string(w.State), w.Dependency
	}
	return m
}

// String returns e.g. `never found worker w2 mid-call at payment-gateway
// in [1m20s, 1m30s)`.
func (m Miss) String() string {
	return faults.Miss{Fault: m.Fault, Worker: m.Worker, When: faults.When{State: faults.WhenState(m.State), Dependency: m.Dependency},
		Window: faults.Window{From: time.Duration(m.FromMs) * time.Millisecond, Until: time.Duration(m.UntilMs) * time.Millisecond}}.String()
}
