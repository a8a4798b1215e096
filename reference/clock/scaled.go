package clock

import (
	"errors"
	"math"
	"sync/atomic"
	"time"
)

// Scaled is scenario time on the wall clock, run K times faster: a staging
// drill at time scale 10 plays a 10-minute scenario in one wall minute.
// Now is Start plus K times the wall time since the origin, and AfterFunc(d)
// fires after d/K of wall time, so every component that takes a Clock
// (leases, heartbeats, backoff, breaker timeouts, alert group waits) is
// scaled without a change to its configuration. Several processes given the
// same Start, Origin and K share one scenario time (to the accuracy of the
// machine's clock), which is what the store's scripts compare.
//
// Scaled reads the wall clock: it is for live drills, never the simulator.
type Scaled struct {
	// Start is the scenario time at the origin.
	Start time.Time
	// origin is the wall-clock instant the scenario starts (Origin);
	// atomic, so that Restart may move it while others read the clock.
	origin atomic.Pointer[time.Time]
	// K is how many scenario seconds pass per wall second (≥ 1).
	K float64
	// Wall is the wall clock (nil means Real); a test may give another.
	Wall Clock
}

var _ Clock = (*Scaled)(nil)

// ErrScale is returned by NewScaled for a factor that is not finite and ≥ 1.
var ErrScale = errors.New("time scale must be a finite number ≥ 1")

// NewScaled returns a scaled clock whose scenario time start begins at the
// wall instant origin, running k times faster than wall. A nil wall means
// Real.
func NewScaled(start, origin time.Time, k float64, wall Clock) (*Scaled, error) {
	if !(k >= 1) || math.IsInf(k, 0) {
		return nil, ErrScale
	}
	if wall == nil {
		wall = Real{}
	}
	s := &Scaled{Start: start, K: k, Wall: wall}
	s.origin.Store(&origin)
	return s, nil
}

// Origin returns the wall-clock instant the scenario starts.
func (s *Scaled) Origin() time.Time { return *s.origin.Load() }

// Restart moves the origin: scenario time Start now begins at the wall
// instant origin (a drill that starts its clock once the system is
// ready). Safe while other goroutines read the clock.
func (s *Scaled) Restart(origin time.Time) { s.origin.Store(&origin) }

func (s *Scaled) wall() Clock {
	if s.Wall == nil {
		return Real{}
	}
	return s.Wall
}

// Now returns the scenario time: Start + K × (wall now − Origin), to the
// millisecond's accuracy the stores use and below.
func (s *Scaled) Now() time.Time { return s.Start.Add(s.Elapsed()) }

// Elapsed returns the scenario time since Start.
func (s *Scaled) Elapsed() time.Duration {
	return s.ToScenario(s.wall().Now().Sub(s.Origin()))
}

// ToScenario converts a wall duration to scenario time.
func (s *Scaled) ToScenario(wall time.Duration) time.Duration {
	return time.Duration(float64(wall) * s.K)
}

// ToWall converts a scenario duration to wall time (rounded up to the
// nanosecond, so that a positive duration stays positive).
func (s *Scaled) ToWall(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	return time.Duration(math.Ceil(float64(d) / s.K))
}

// WallAt returns the wall instant at which scenario offset d (from Start)
// falls.
func (s *Scaled) WallAt(d time.Duration) time.Time { return s.Origin().Add(s.ToWall(d)) }

// AfterFunc calls f after d of scenario time (d/K of wall time).
func (s *Scaled) AfterFunc(d time.Duration, f func()) Timer {
	return s.wall().AfterFunc(s.ToWall(d), f)
}
