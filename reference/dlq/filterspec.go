package dlq

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/faultline/faultline/reference/classify"
)

// FilterSpec is a Filter as an operator types it: the `faultline dlq` CLI's
// flags and the web UI's query parameters are the same fields with the same
// names, so one parser gives both tools one meaning for a filter, and one
// rendering (String) goes into confirmations and the audit stream.
type FilterSpec struct {
	Severities, Tasks, Classes, ErrorTypes, Statuses []string
	// Since and Until are RFC 3339 times or durations ago ("2h", "30m",
	// "7d").
	Since, Until string
	// ErrorText is a case-insensitive substring of the last error.
	ErrorText string
}

// The names of a FilterSpec's fields: the CLI's flags (with "--") and the
// UI's query parameters.
const (
	FieldSeverity  = "severity"
	FieldTask      = "task"
	FieldClass     = "class"
	FieldErrorType = "error-type"
	FieldStatus    = "status"
	FieldSince     = "since"
	FieldUntil     = "until"
	FieldErrorText = "error-text"
)

// FieldError is a FilterSpec field that does not parse.
type FieldError struct {
	// Field is the field's name (FieldSeverity, ...).
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *FieldError) Unwrap() error { return e.Err }

// Empty reports whether the spec selects every entry.
func (s *FilterSpec) Empty() bool {
	return len(s.Severities)+len(s.Tasks)+len(s.Classes)+len(s.ErrorTypes)+len(s.Statuses) == 0 &&
		strings.TrimSpace(s.Since) == "" && strings.TrimSpace(s.Until) == "" && s.ErrorText == ""
}

// FilterSpecFromValues reads a spec from query parameters named as the
// fields (each repeatable or comma-separated, like the CLI's flags).
func FilterSpecFromValues(v url.Values) FilterSpec {
	list := func(name string) []string {
		var out []string
		for _, x := range v[name] {
			for _, p := range strings.Split(x, ",") {
				if p = strings.TrimSpace(p); p != "" {
					out = append(out, p)
				}
			}
		}
		return out
	}
	return FilterSpec{
		Severities: list(FieldSeverity), Tasks: list(FieldTask), Classes: list(FieldClass),
		ErrorTypes: list(FieldErrorType), Statuses: list(FieldStatus),
		Since: v.Get(FieldSince), Until: v.Get(FieldUntil), ErrorText: v.Get(FieldErrorText),
	}
}

// Values renders the spec as query parameters (FilterSpecFromValues reads
// them back).
func (s *FilterSpec) Values() url.Values {
	v := url.Values{}
	add := func(name string, xs []string) {
		if len(xs) > 0 {
			v.Set(name, strings.Join(xs, ","))
		}
	}
	add(FieldSeverity, s.Severities)
	add(FieldTask, s.Tasks)
	add(FieldClass, s.Classes)
	add(FieldErrorType, s.ErrorTypes)
	add(FieldStatus, s.Statuses)
	for name, x := range map[string]string{FieldSince: s.Since, FieldUntil: s.Until, FieldErrorText: s.ErrorText} {
		if x != "" {
			v.Set(name, x)
		}
	}
	return v
}

// String renders the spec in the CLI's flag syntax, "" for the empty spec:
// what a confirmation states and the audit stream records.
func (s *FilterSpec) String() string {
	var parts []string
	add := func(name string, xs ...string) {
		if len(xs) > 0 && (len(xs) > 1 || xs[0] != "") {
			parts = append(parts, "--"+name+"="+strconv.Quote(strings.Join(xs, ",")))
		}
	}
	add(FieldSeverity, s.Severities...)
	add(FieldTask, s.Tasks...)
	add(FieldClass, s.Classes...)
	add(FieldErrorType, s.ErrorTypes...)
	add(FieldStatus, s.Statuses...)
	add(FieldSince, s.Since)
	add(FieldUntil, s.Until)
	add(FieldErrorText, s.ErrorText)
	return strings.Join(parts, " ")
}

// Parse turns the spec into a Filter, reading durations ago from now. A
// field that does not parse is a *FieldError naming it and what it allows.
func (s *FilterSpec) Parse(now time.Time) (Filter, error) {
	var f Filter
	for _, x := range s.Severities {
		v, err := classify.ParseSeverity(strings.TrimSpace(x))
		if err != nil {
			return f, &FieldError{FieldSeverity, err}
		}
		f.Severities = append(f.Severities, v)
	}
	for _, x := range s.Classes {
		v, err := classify.ParseClass(strings.TrimSpace(x))
		if err != nil {
			return f, &FieldError{FieldClass, err}
		}
		f.Classes = append(f.Classes, v)
	}
	for _, x := range s.Statuses {
		v, err := ParseStatus(strings.TrimSpace(x))
		if err != nil {
			return f, &FieldError{FieldStatus, err}
		}
		f.Statuses = append(f.Statuses, v)
	}
	for _, x := range s.Tasks {
		f.Tasks = append(f.Tasks, strings.TrimSpace(x))
	}
	for _, x := range s.ErrorTypes {
		f.ErrorTypes = append(f.ErrorTypes, strings.TrimSpace(x))
	}
	f.ErrorText = s.ErrorText
	var err error
	if f.Since, err = ParseWhen(s.Since, now); err != nil {
		return f, &FieldError{FieldSince, err}
	}
	if f.Until, err = ParseWhen(s.Until, now); err != nil {
		return f, &FieldError{FieldUntil, err}
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return f, &FieldError{FieldSince, fmt.Errorf("%s must be before until (%s)", f.Since.Format(time.RFC3339), f.Until.Format(time.RFC3339))}
	}
	return f, nil
}

// ParseWhen reads a time: RFC 3339, or a duration ago ("2h", "45m", "7d")
// from now. "" is the zero time. The error never repeats more than the
// first 40 bytes of s.
func ParseWhen(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	d, err := ParseAgo(s)
	if err != nil {
		shown := s
		if len(shown) > 40 {
			shown = shown[:40] + "…"
		}
		return time.Time{}, fmt.Errorf("expected an RFC 3339 time (2026-01-02T15:04:05Z) or a duration ago (2h, 30m, 7d), got %q", shown)
	}
	return now.Add(-d), nil
}

// ParseAgo reads a positive duration, with "d" for days allowed.
func ParseAgo(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseFloat(days, 64)
		if err != nil || !(n > 0 && n <= 100*365) { // NaN fails both
			return 0, fmt.Errorf("not a duration: %q", s)
		}
		return time.Duration(n * float64(24*time.Hour)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, errors.New("not a positive duration: " + strconv.Quote(s))
	}
	return d, nil
}
