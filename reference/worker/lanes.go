package worker

import (
	"github.com/faultline/faultline/reference/degrade"
	"github.com/faultline/faultline/reference/internal/mutant"
)

// StateReader tells a breaker's state: *degrade.Breaker.
type StateReader interface {
	State() degrade.State
}

// Lanes decides which queues a worker process leases from. Each queue is a
// lane of the tasks it holds (by default a task has its own), and a lane
// is closed to the process while every dependency its tasks call has a
// breaker that is open in the process: a job leased from it could only be
// diverted to the fallback queue, where another process would drain it
// back, over and over (the ping-pong of a fleet whose breakers disagree).
// Such a job stays in its queue for a process that can run it.
//
// Starvation is bounded: a lane is closed only while a breaker is open, and
// an open breaker goes half-open by its own timer, when the lane opens
// again for its probes; a lane with any dependency that is not guarded, or
// not open, is never closed. Fairness among the open lanes is the caller's
// round robin, unchanged. The simulator and the Runner ask the same Lanes.
type Lanes struct {
	// deps are each queue's dependencies; a queue that holds a task
	// without one is absent (always open).
	deps map[string][]StateReader
}

// NewLanes returns the lanes of a process whose queues hold tasks calling
// the dependencies queueDeps names (queue → dependency per task; "" for a
// task that calls none), guarded by the process's breakers (dependency →
// breaker; a dependency without one is never refused).
func NewLanes(queueDeps map[string][]string, breakers map[string]StateReader) *Lanes {
	l := &Lanes{deps: map[string][]StateReader{}}
	for q, deps := range queueDeps {
		var guards []StateReader
		for _, d := range deps {
			b, ok := breakers[d]
			if !ok || b == nil {
				guards = nil
				break
			}
			guards = append(guards, b)
		}
		if len(guards) > 0 {
			l.deps[q] = guards
		}
	}
	return l
}

// Open reports whether the process may lease from queue now: false only
// when every dependency of the queue's tasks has an open breaker. A nil
// Lanes opens every queue.
func (l *Lanes) Open(queue string) bool {
	if l == nil || mutant.On("worker/lease-closed-lanes") {
		return true
	}
	guards, ok := l.deps[queue]
	if !ok {
		return true
	}
	for _, b := range guards {
		if g, ok := b.(laneGate); ok {
			if g.LaneOpen() {
				return true
			}
			continue
		}
		if b.State() != degrade.Open {
			return true
		}
	}
	return false
}

// laneGate is a breaker that says itself whether its dependency's lanes
// are open: *degrade.Breaker (a fleet's breaker waiting, open, for
// another process's probes keeps them open).
type laneGate interface {
	LaneOpen() bool
}
