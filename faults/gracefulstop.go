package faults

import (
	"math/rand/v2"
	"time"

	"github.com/faultline/faultline/reference/classify"
)

var (
	_ Model  = GracefulStop{}
	_ binder = GracefulStop{}
)

// GracefulStop is a worker process told to stop (a SIGTERM at a deploy or a
// scale-in): at the start of each of the fault's windows the simulator
// cancels the worker's attempt in flight as a shutdown (its context
// canceled with the shutdown as the cause, the attempt marked
// ShuttingDown), so the job is handed back without using an attempt; a new
// process starts RestartAfter later. Unlike WorkerCrash nothing waits for a
// lease to expire.
type GracefulStop struct {
	// RestartAfter is how long until the worker is back; 0 means at once.
	RestartAfter time.Duration
}

// Name returns "graceful-stop".
func (GracefulStop) Name() string { return "graceful-stop" }

// Class returns classify.None: the stop itself is not an error a
// dependency returns (the canceled attempt's error is the worker's own).
func (GracefulStop) Class() classify.Class { return classify.None }

// Targets returns Worker.
func (GracefulStop) Targets() []TargetKind { return []TargetKind{Worker} }

// Validate checks RestartAfter.
func (m GracefulStop) Validate() error { return checkDuration("restartAfter", m.RestartAfter) }

// Apply returns the stop.
func (m GracefulStop) Apply(c Call, r *rand.Rand) Effect { return m.bind(binding{}).apply(c, r) }

func (m GracefulStop) bind(binding) applier {
	return &fixed{Effect{Stop: true, RestartAfter: max(m.RestartAfter, 0)}}
}
