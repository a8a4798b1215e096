package degrade

import (
	"errors"
	"fmt"
	"time"
)

// State is a breaker's state.
type State uint8

// The states. The zero value is Closed, the state a breaker starts in.
const (
	// Closed: calls pass, and their outcomes are counted.
	Closed State = iota
	// Open: calls are rejected with ErrOpen until the open duration elapses.
	Open
	// HalfOpen: a few probe calls test the dependency; the rest are rejected
	// with ErrProbeLimit.
	HalfOpen
)

var stateNames = [...]string{"closed", "open", "half-open"}

// String returns "closed", "open" or "half-open".
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// Rejections returned by Allow. They are plain sentinels, so a rejection
// allocates nothing; match them with errors.Is.
var (
	// ErrOpen: the breaker is open; the call was not made. Divert the job or
	// fail it fast.
	ErrOpen = errors.New("degrade: circuit breaker is open")
	// ErrProbeLimit: the breaker is half-open and every probe slot is taken.
	ErrProbeLimit = errors.New("degrade: circuit breaker is half-open and all probe slots are taken")
	// ErrRampUp: the breaker has just closed and is ramping traffic back up;
	// this call is over the share admitted at this instant.
	ErrRampUp = errors.New("degrade: circuit breaker is ramping up and this call is over the admitted share")
)

// Reasons given in Transition.Reason. They are constants, so that metrics may
// use them as labels.
const (
	// ReasonConsecutiveFailures: ConsecutiveFailures counted failures in a row.
	ReasonConsecutiveFailures = "consecutive-failures"
	// ReasonFailureRate: the failure rate over the rolling window reached
	// FailureRatePercent with at least MinThroughput calls.
	ReasonFailureRate = "failure-rate"
	// ReasonForced: a failure of one of the ForceOpenClasses from one of the
	// CountedSources.
	ReasonForced = "forced"
	// ReasonProbeFailed: a probe failed with a counted failure.
	ReasonProbeFailed = "probe-failed"
	// ReasonProbeTimeout: a probe was not recorded within ProbeTimeout.
	ReasonProbeTimeout = "probe-timeout"
	// ReasonOpenElapsed: the open duration elapsed.
	ReasonOpenElapsed = "open-elapsed"
	// ReasonProbesSucceeded: SuccessesToClose probes succeeded.
	ReasonProbesSucceeded = "probes-succeeded"
)

// Transition is one change of a breaker's state, as given to the listeners
// added with OnStateChange.
type Transition struct {
	// Breaker is the breaker's Name.
	Breaker string
	// From and To are the states before and after.
	From, To State
	// At is the clock's time of the change.
	At time.Time
	// Reason is one of the Reason constants.
	Reason string
	// OpenFor is how long the breaker will stay open, when To is Open.
	OpenFor time.Duration
	// Level is the hysteresis level after the change.
	Level int
}

// Stats is a snapshot of a breaker's state and counters, for a metrics
// adapter. The counters only grow.
type Stats struct {
	// State, Level and Generation are the breaker's state, hysteresis level
	// (as of the last transition; decay is applied at the next trip) and
	// generation (incremented by every transition).
	State      State
	Level      int
	Generation uint64

	// Transitions by target state.
	ToOpen, ToHalfOpen, ToClosed uint64

	// Admitted counts permits given in Closed, Probes permits given in
	// HalfOpen.
	Admitted, Probes uint64
	// Rejections by reason: ErrOpen, ErrProbeLimit, ErrRampUp.
	RejectedOpen, RejectedProbeLimit, RejectedRampUp uint64

	// Successes counts recorded successes.
	Successes uint64
	// CountedFailures counts failures that counted against the dependency,
	// probe timeouts included.
	CountedFailures uint64
	// IgnoredFailures counts failures that do not count against the
	// dependency: an uncounted class (a declined card) or an uncounted source
	// (a local permission error, a handler bug).
	IgnoredFailures uint64
	// Canceled counts neutral outcomes.
	Canceled uint64
	// Stale counts results ignored because their permit was from an older
	// generation, or was a probe already released (recorded twice, or after
	// its timeout).
	Stale uint64
	// ProbeTimeouts counts probes released by ProbeTimeout.
	ProbeTimeouts uint64
	// ForcedOpens counts trips caused by one of the ForceOpenClasses (from
	// one of the CountedSources).
	ForcedOpens uint64
	// FleetErrors counts the calls to the fleet's BreakerStore that failed
	// (WithFleet): the breaker worked alone meanwhile.
	FleetErrors uint64
}
