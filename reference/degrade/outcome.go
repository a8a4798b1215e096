package degrade

import (
	"github.com/faultline/faultline/reference/classify"
)

// Permit is the breaker's leave to make one call. Report the call's outcome
// with Record, exactly once. A permit remembers the breaker's generation, so a
// result that arrives after the breaker has moved on (a simulated call that
// completes in a later event) is ignored rather than miscounted. The zero
// Permit is never valid.
type Permit struct {
	gen   uint64
	probe uint64
}

// IsProbe reports whether the permit is for a half-open probe call.
func (p Permit) IsProbe() bool { return p.probe != 0 }

type outcomeKind uint8

const (
	outcomeNeutral outcomeKind = iota
	outcomeSuccess
	outcomeFailure
)

// Outcome is the result of a permitted call, made with Success, Failure or
// Canceled. The zero Outcome is neutral, like Canceled.
type Outcome struct {
	kind   outcomeKind
	class  classify.Class
	source classify.Source
}

// Success is the outcome of a call the dependency served.
func Success() Outcome { return Outcome{kind: outcomeSuccess} }

// Failure is the outcome of a failed call, given the classifier's whole
// verdict on its error: what the failure means (its Class) and where it came
// from (its Source). A failure counts against the dependency only if its class
// is one of the breaker's CountedClasses and its source one of its
// CountedSources, and forces the breaker open only if its class is one of the
// ForceOpenClasses and its source is counted: a permission error on a local
// file (critical, from the worker's own system) says nothing about the
// payment gateway. Failures that do not count (a declined card, a handler
// bug, a verdict with no source) are tallied as ignored and are otherwise
// neutral. A verdict of class classify.Canceled gives Canceled().
func Failure(c classify.Classification) Outcome {
	if c.Class == classify.Canceled {
		return Canceled()
	}
	return Outcome{kind: outcomeFailure, class: c.Class, source: c.Source}
}

// Canceled is the outcome of a call that was stopped (a shutdown, a lost
// lease) before it told anything about the dependency. It is neutral: it
// releases a probe slot and counts nothing.
func Canceled() Outcome { return Outcome{kind: outcomeNeutral} }

// String returns "success", "canceled" or "failure(<class>/<source>)".
func (o Outcome) String() string {
	switch o.kind {
	case outcomeSuccess:
		return "success"
	case outcomeFailure:
		return "failure(" + o.class.String() + "/" + o.source.String() + ")"
	default:
		return "canceled"
	}
}
