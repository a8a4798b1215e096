package classify

import (
	"fmt"
	"strings"
	"time"
)

// Class says what a failure means for the job that met it: whether trying
// again can help, and what must be checked first.
type Class uint8

// The classes, from the most hopeful to the most alarming. The zero value is
// None, the class of a nil error.
const (
	// None is the class of no failure.
	None Class = iota
	// Transient failures (timeouts, refused connections, 5xx) may succeed on a
	// later attempt.
	Transient
	// RateLimited failures (429, a quota) will succeed later, ideally after the
	// dependency's Retry-After hint.
	RateLimited
	// Indeterminate failures left the outcome unknown: the request may have
	// taken effect (a payment gateway timeout after the charge). Retrying is
	// safe only when the job carries an idempotency key.
	Indeterminate
	// Permanent failures will fail the same way every time (bad data, a
	// declined card). They are never retried.
	Permanent
	// Critical failures need a person (bad credentials, revoked permissions).
	// They are never retried, and they page.
	Critical
	// Canceled means the job was stopped, typically by a shutdown, not that it
	// failed. The job is released without using an attempt.
	Canceled
)

var classNames = [...]string{"none", "transient", "rate-limited", "indeterminate", "permanent", "critical", "canceled"}

// Classes lists every class but None, in order.
var Classes = []Class{Transient, RateLimited, Indeterminate, Permanent, Critical, Canceled}

// String returns the class's name as written in rule files and reports.
func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return fmt.Sprintf("class(%d)", uint8(c))
}

// Retryable reports whether a failure of this class may be tried again at all
// (Indeterminate only with an idempotency key, which the retry policy checks).
func (c Class) Retryable() bool {
	return c == Transient || c == RateLimited || c == Indeterminate
}

// MarshalText writes the class's name.
func (c Class) MarshalText() ([]byte, error) {
	if int(c) >= len(classNames) {
		return nil, fmt.Errorf("classify: invalid class %d", uint8(c))
	}
	return []byte(c.String()), nil
}

// UnmarshalText reads a class name, as ParseClass does, and also "none",
// the name MarshalText gives the zero value, so that what is written reads
// back.
func (c *Class) UnmarshalText(b []byte) error {
	if string(b) == "none" {
		*c = None
		return nil
	}
	v, err := ParseClass(string(b))
	if err != nil {
		return err
	}
	*c = v
	return nil
}

// ParseClass reads a class name such as "transient" or "rate-limited"
// (case-insensitive; "_" may stand for "-").
func ParseClass(s string) (Class, error) {
	if i := lookup(classNames[1:], s); i >= 0 {
		return Class(i + 1), nil
	}
	return None, &ValueError{What: "class", Value: s, Allowed: classNames[1:]}
}

// Severity says how loudly a failure is reported: Low is logged, Medium is a
// warning, High pages. It is the seed's DEBUG / WARNING / CRITICAL.
type Severity uint8

// The severities. The zero value is SeverityNone, the severity of no failure.
const (
	// SeverityNone is the severity of no failure.
	SeverityNone Severity = iota
	// Low failures are expected and logged (the seed's DEBUG).
	Low
	// Medium failures are worth a warning and a dashboard (WARNING).
	Medium
	// High failures page a person (CRITICAL).
	High
)

var severityNames = [...]string{"none", "low", "medium", "high"}

// Severities lists every severity but SeverityNone, in order.
var Severities = []Severity{Low, Medium, High}

// String returns the severity's name.
func (s Severity) String() string {
	if int(s) < len(severityNames) {
		return severityNames[s]
	}
	return fmt.Sprintf("severity(%d)", uint8(s))
}

// MarshalText writes the severity's name.
func (s Severity) MarshalText() ([]byte, error) {
	if int(s) >= len(severityNames) {
		return nil, fmt.Errorf("classify: invalid severity %d", uint8(s))
	}
	return []byte(s.String()), nil
}

// UnmarshalText reads a severity name, as ParseSeverity does, and also "none",
// the name MarshalText gives the zero value, so that what is written reads
// back.
func (s *Severity) UnmarshalText(b []byte) error {
	if string(b) == "none" {
		*s = SeverityNone
		return nil
	}
	v, err := ParseSeverity(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// ParseSeverity reads "low", "medium" or "high" (case-insensitive).
func ParseSeverity(s string) (Severity, error) {
	if i := lookup(severityNames[1:], s); i >= 0 {
		return Severity(i + 1), nil
	}
	return SeverityNone, &ValueError{What: "severity", Value: s, Allowed: severityNames[1:]}
}

// Source says where a failure came from, so that it reaches the people who
// own that part.
type Source uint8

// The sources. The zero value is SourceNone.
const (
	// SourceNone is the source of no failure.
	SourceNone Source = iota
	// Network failures: connections, DNS, timeouts on the wire.
	Network
	// Data failures: the job's own payload or the data it refers to.
	Data
	// Auth failures: credentials, tokens, permissions.
	Auth
	// System failures: the worker's own process, host or configuration.
	System
	// Dependency failures: a service the job calls answered with an error.
	Dependency
)

var sourceNames = [...]string{"none", "network", "data", "auth", "system", "dependency"}

// Sources lists every source but SourceNone, in order.
var Sources = []Source{Network, Data, Auth, System, Dependency}

// String returns the source's name.
func (s Source) String() string {
	if int(s) < len(sourceNames) {
		return sourceNames[s]
	}
	return fmt.Sprintf("source(%d)", uint8(s))
}

// MarshalText writes the source's name.
func (s Source) MarshalText() ([]byte, error) {
	if int(s) >= len(sourceNames) {
		return nil, fmt.Errorf("classify: invalid source %d", uint8(s))
	}
	return []byte(s.String()), nil
}

// UnmarshalText reads a source name, as ParseSource does, and also "none",
// the name MarshalText gives the zero value, so that what is written reads
// back.
func (s *Source) UnmarshalText(b []byte) error {
	if string(b) == "none" {
		*s = SourceNone
		return nil
	}
	v, err := ParseSource(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// ParseSource reads a source name such as "network" (case-insensitive).
func ParseSource(s string) (Source, error) {
	if i := lookup(sourceNames[1:], s); i >= 0 {
		return Source(i + 1), nil
	}
	return SourceNone, &ValueError{What: "source", Value: s, Allowed: sourceNames[1:]}
}

// Classification is the classifier's verdict on one error: a value that the
// retry policy, the breaker, the DLQ and the alerter all act on.
type Classification struct {
	Class    Class
	Severity Severity
	Source   Source
	// Rule names the rule that matched, for reports and for debugging a rule
	// table ("default" when none did).
	Rule string
	// RetryAfter is the dependency's own hint of when to try again (a
	// Retry-After header or a RetryAfter() method), already resolved to a
	// duration from the classification's time. Zero means no hint.
	RetryAfter time.Duration
	// Status is the HTTP status found in the error chain, or 0.
	Status int
}

// String returns "class/severity/source", e.g. "transient/medium/network".
func (c Classification) String() string {
	return c.Class.String() + "/" + c.Severity.String() + "/" + c.Source.String()
}

// ValueError reports a name that is not one of the allowed values, such as an
// unknown class in a rule file.
type ValueError struct {
	What    string
	Value   string
	Allowed []string
}

// Error says what was given and what is allowed.
func (e *ValueError) Error() string {
	return fmt.Sprintf("unknown %s %q (allowed: %s)", e.What, e.Value, strings.Join(e.Allowed, ", "))
}

func lookup(names []string, s string) int {
	s = strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), "_", "-")
	for i, n := range names {
		if n == s {
			return i
		}
	}
	return -1
}
