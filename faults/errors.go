package faults

import (
	"errors"
	"fmt"
	"github.com/faultline/faultline/internal/didyoumean"
	"math"
	"strconv"
	"strings"
	"time"
)

// FieldError reports a fault, model or schedule parameter that cannot be
// used, e.g. `fault "gw-timeouts": schedule.every.duty: must be in (0,1],
// got 1.5`. A model's or a schedule's own Validate names the field relative
// to itself ("code", "every.duty"); Fault.Validate and NewInjector add the
// fault's name and the prefix ("model.code", "schedule.every.duty").
type FieldError struct {
	// Fault is the fault's name, "" when not known (a model or schedule
	// validated on its own).
	Fault string
	// Field is the path of the offending field, e.g. "schedule.every.duty".
	Field string
	// Msg says what is wrong, e.g. "must be in (0,1], got 1.5".
	Msg string
	// Hint suggests a fix, e.g. `did you mean "gateway-timeout"?`.
	Hint string
	// Err is the underlying error, if any.
	Err error
}

// Error returns `fault "name": field: message; hint: cause`, leaving out
// the parts that are empty.
func (e *FieldError) Error() string {
	var b strings.Builder
	if e.Fault != "" {
		b.WriteString("fault ")
		b.WriteString(strconv.Quote(e.Fault))
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	msg, cause := e.Msg, e.Err
	if msg == "" && cause != nil {
		msg, cause = cause.Error(), nil
	}
	b.WriteString(msg)
	if e.Hint != "" {
		b.WriteString("; ")
		b.WriteString(e.Hint)
	}
	if cause != nil {
		b.WriteString(": ")
		b.WriteString(cause.Error())
	}
	return b.String()
}

// Unwrap returns the underlying error.
func (e *FieldError) Unwrap() error { return e.Err }

// NameError reports a name that is not one of the known ones: a model name
// given to New, a target kind.
type NameError struct {
	// What is the kind of name, e.g. "fault model".
	What string
	// Name is the name given.
	Name string
	// Known lists the names allowed, in catalogue order.
	Known []string
	// Suggestion is the known name closest to Name when it looks like a
	// typo, else "".
	Suggestion string
}

// Error returns e.g. `unknown fault model "gatway-timeout"; did you mean
// "gateway-timeout"? (known: gateway-timeout, latency, ...)`.
func (e *NameError) Error() string {
	s := fmt.Sprintf("unknown %s %q", e.What, e.Name)
	if e.Suggestion != "" {
		s += fmt.Sprintf("; did you mean %q?", e.Suggestion)
	}
	return s + " (known: " + strings.Join(e.Known, ", ") + ")"
}

func newNameError(what, name string, known []string) *NameError {
	return &NameError{What: what, Name: name, Known: append([]string(nil), known...), Suggestion: didyoumean.Closest(normalize(name), known)}
}

// within re-homes the errors a model's or schedule's Validate returned under
// the fault's name and the path prefix, keeping their structure: each
// *FieldError gets Fault and the prefixed Field; anything else is wrapped in
// a *FieldError for the prefix.
func within(err error, fault, prefix string) error {
	if err == nil {
		return nil
	}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		errs := joined.Unwrap()
		out := make([]error, 0, len(errs))
		for _, e := range errs {
			out = append(out, within(e, fault, prefix))
		}
		return errors.Join(out...)
	}
	if fe, ok := err.(*FieldError); ok && fe != nil {
		c := *fe
		c.Fault = fault
		c.Field = joinPath(prefix, fe.Field)
		return &c
	}
	return &FieldError{Fault: fault, Field: prefix, Err: err}
}

func joinPath(prefix, field string) string {
	switch {
	case prefix == "":
		return field
	case field == "":
		return prefix
	}
	return prefix + "." + field
}

// checkDuration requires a duration that is ≥ 0 and a whole number of
// milliseconds.
func checkDuration(field string, d time.Duration) error {
	switch {
	case d < 0:
		return &FieldError{Field: field, Msg: "must be ≥ 0, got " + d.String()}
	case d%time.Millisecond != 0:
		return &FieldError{Field: field, Msg: "must be a whole number of milliseconds, got " + d.String()}
	}
	return nil
}

// checkProbability requires p in [0,1].
func checkProbability(field string, p float64) error {
	if !(p >= 0 && p <= 1) {
		return &FieldError{Field: field, Msg: "must be in [0,1], got " + formatFloat(p)}
	}
	return nil
}

func formatFloat(f float64) string {
	if math.IsNaN(f) {
		return "NaN"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
