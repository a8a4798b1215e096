package faults

import (
	"errors"
	"fmt"
	"strings"

	"github.com/faultline/faultline/internal/didyoumean"
)

// WhenState is a state a worker fault may be aimed at (When.State).
type WhenState string

// The states a worker fault may wait for.
const (
	// MidCall is a worker holding a lease with a call in flight at a
	// dependency: the call started, its answer not yet received.
	MidCall WhenState = "mid-call"
)

// WhenStates lists the states When.State may name, in order.
func WhenStates() []WhenState { return []WhenState{MidCall} }

// When aims a worker fault at a state rather than an instant: in each of
// its schedule's windows the fault strikes a targeted worker at the first
// instant the worker is in the state (for MidCall: it holds a lease and has
// a call in flight at Dependency), at most once per worker and window. A
// window in which a targeted worker never reached the state does not strike
// it; the drivers report that window as not fired for that worker (a
// Miss), never as a silent pass. Both drivers give it one meaning: the
// simulator watches its slots' attempts, a drill asks the dependency's
// fault gateway which worker has a call in flight.
type When struct {
	// State is the state waited for; only MidCall exists.
	State WhenState
	// Dependency is the dependency the call is in flight at; required.
	// The scenario's validation checks that it names a declared
	// dependency or a task's.
	Dependency string
}

// String returns e.g. "mid-call at payment-gateway".
func (w When) String() string { return string(w.State) + " at " + w.Dependency }

// validate checks the state is known and a dependency is named; fields are
// relative to the schedule ("when.state").
func (w When) validate() error {
	var errs []error
	switch {
	case w.State == "":
		errs = append(errs, &FieldError{Field: "when.state", Msg: "required", Hint: "one of " + whenStateList()})
	case !validState(w.State):
		hint := "one of " + whenStateList()
		if near := didyoumean.Closest(string(w.State), whenStateNames()); near != "" {
			hint = fmt.Sprintf("did you mean %q? (%s)", near, hint)
		}
		errs = append(errs, &FieldError{Field: "when.state", Msg: fmt.Sprintf("unknown state %q", string(w.State)), Hint: hint})
	}
	if w.Dependency == "" {
		errs = append(errs, &FieldError{Field: "when.dependency", Msg: "required", Hint: "the dependency the worker's call is in flight at, e.g. payment-gateway"})
	}
	return errors.Join(errs...)
}

func validState(s WhenState) bool {
	for _, k := range WhenStates() {
		if k == s {
			return true
		}
	}
	return false
}

func whenStateNames() []string {
	var names []string
	for _, s := range WhenStates() {
		names = append(names, string(s))
	}
	return names
}

func whenStateList() string { return strings.Join(whenStateNames(), ", ") }

// Miss is a window of a worker fault aimed at a state (Schedule.When) in
// which a targeted worker never reached the state: the fault did not strike
// it there.
type Miss struct {
	// Fault is the fault's name; Worker the worker it did not strike.
	Fault, Worker string
	// When is the state it waited for.
	When When
	// Window is the window it waited in.
	Window Window
}

// String returns e.g. `never found worker w2 mid-call at payment-gateway in
// [1m20s, 1m30s)`.
func (m Miss) String() string {
	return fmt.Sprintf("never found worker %s %s in %s", m.Worker, m.When, m.Window)
}
