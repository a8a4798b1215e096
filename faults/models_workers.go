package faults

import (
	"math/rand/v2"
	"time"

	"github.com/faultline/faultline/reference/classify"
)

// WorkerCrash is a worker process dying: the simulator crashes the worker at
// the start of each of the fault's windows (a call through the Injector says
// Crash while the fault is active), and a new one starts RestartAfter later.
// Its in-flight jobs are found again by lease recovery.
type WorkerCrash struct {
	// RestartAfter is how long until the worker is back; 0 means at once.
	RestartAfter time.Duration
}

// Name returns "worker-crash".
func (WorkerCrash) Name() string { return "worker-crash" }

// Class returns classify.None: a crash is not an error a job sees.
func (WorkerCrash) Class() classify.Class { return classify.None }

// Targets returns Worker.
func (WorkerCrash) Targets() []TargetKind { return []TargetKind{Worker} }

// Validate checks RestartAfter.
func (m WorkerCrash) Validate() error { return checkDuration("restartAfter", m.RestartAfter) }

// Apply returns the crash.
func (m WorkerCrash) Apply(c Call, r *rand.Rand) Effect { return m.bind(binding{}).apply(c, r) }

func (m WorkerCrash) bind(binding) applier {
	return &fixed{Effect{Crash: true, RestartAfter: max(m.RestartAfter, 0)}}
}

// ---------------------------------------------------------------------------

// WorkerStall is a worker process freezing (a long GC pause, a stuck
// syscall): its in-flight completions arrive For later, possibly after their
// leases ran out.
type WorkerStall struct {
	// For is how long the worker freezes; 0 means DefaultStall.
	For time.Duration
}

// Name returns "worker-stall".
func (WorkerStall) Name() string { return "worker-stall" }

// Class returns classify.None.
func (WorkerStall) Class() classify.Class { return classify.None }

// Targets returns Worker.
func (WorkerStall) Targets() []TargetKind { return []TargetKind{Worker} }

// WithDefaults returns the model with its zero parameters set to their
// defaults.
func (m WorkerStall) WithDefaults() WorkerStall {
	if m.For == 0 {
		m.For = DefaultStall
	}
	return m
}

// Validate checks For.
func (m WorkerStall) Validate() error { return checkDuration("for", m.For) }

// Apply returns the stall.
func (m WorkerStall) Apply(c Call, r *rand.Rand) Effect { return m.bind(binding{}).apply(c, r) }

func (m WorkerStall) bind(binding) applier {
	return &fixed{Effect{StallFor: max(m.WithDefaults().For, 0)}}
}
