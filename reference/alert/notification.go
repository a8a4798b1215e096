package alert

import (
	"context"
	"slices"
	"time"

	"github.com/faultline/faultline/reference/classify"
)

// Status is whether an alert's condition holds.
type Status uint8

// The statuses. The zero value is Firing.
const (
	// Firing means the condition holds.
	Firing Status = iota
	// Resolved means the condition has cleared.
	Resolved
)

// String returns "firing" or "resolved".
func (s Status) String() string {
	if s == Resolved {
		return "resolved"
	}
	return "firing"
}

// Labels are an alert's key/value pairs, used for its fingerprint, routing
// and grouping. Well-known keys are the Label* constants.
type Labels map[string]string

// Well-known label keys.
const (
	LabelAlertName  = "alertname"
	LabelTask       = "task"
	LabelClass      = "class"
	LabelDependency = "dependency"
	LabelSource     = "source"
	LabelSeverity   = "severity"
	LabelReceiver   = "receiver"
)

// Keys returns the label keys, sorted, so that anything built from labels
// (fingerprints, messages) is deterministic.
func (l Labels) Keys() []string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// JobRef is a short, redacted summary of one job an alert is about.
type JobRef struct {
	ID       string
	Task     string
	Attempts int
	Class    classify.Class
	// Error is the job's last error text, redacted.
	Error string
	// Fields is a short summary of the job's payload, redacted.
	Fields map[string]any
	At     time.Time
}

// Alert is a snapshot of one fingerprint's alert as it goes out in a
// notification.
type Alert struct {
	// Fingerprint identifies the alert: equal fingerprints are the same
	// alert, deduplicated and counted.
	Fingerprint string
	// Name says what kind of alert it is, e.g. "job-failed", "breaker-open".
	Name     string
	Severity classify.Severity
	Labels   Labels
	// Summary is one line for a person, redacted.
	Summary string
	Status  Status
	// Count is how many times the condition was seen.
	Count     int
	FirstSeen time.Time
	LastSeen  time.Time
	// ResolvedAt is set on a resolved alert.
	ResolvedAt time.Time
	// Jobs are the latest jobs the alert is about (a bounded sample).
	Jobs []JobRef

	// instance and group tie a snapshot to the alert it was taken of, so
	// that a delivery is credited to the right alert.
	instance uint64
	group    string
}

// Notification is one message to one receiver: the alerts of one group that
// are new, due for a repeat, or resolved since the group's last message.
type Notification struct {
	// ID is unique per alerter and increases in creation order.
	ID uint64
	// Receiver names where the notification goes.
	Receiver string
	// GroupKey identifies the group, e.g. `{dependency="payment-gateway"}`.
	GroupKey string
	Alerts   []Alert
	// StillFiring counts the group's other firing alerts, already notified
	// and not yet due for a repeat: context for the reader, not new pages.
	StillFiring int
	// CreatedAt is when the notification was made.
	CreatedAt time.Time
	// Attempt is the delivery attempt this Send is, from 1.
	Attempt int
}

// Status is Firing if any of the notification's alerts fires.
func (n *Notification) Status() Status {
	for i := range n.Alerts {
		if n.Alerts[i].Status == Firing {
			return Firing
		}
	}
	return Resolved
}

// Severity is the highest severity among the notification's alerts.
func (n *Notification) Severity() classify.Severity {
	s := classify.SeverityNone
	for i := range n.Alerts {
		s = max(s, n.Alerts[i].Severity)
	}
	return s
}

// IsPage reports whether alert x, in a notification a receiver accepted, is
// a page: it fires and it is critical (High severity). This is the one
// definition of a page — in the simulator's invariants and expectations,
// and in every report's counts: one page per firing critical alert per
// receiver that accepted it, so a notification carrying two critical alerts
// is two pages, and an alert taken by a receiver and by its secondary is
// two pages; a resolution, a warning, and a send not (yet) accepted are
// none.
func IsPage(x Alert) bool { return x.Status == Firing && x.Severity == classify.High }

// Sink delivers notifications: Slack, a webhook, a log, memory.
//
// Send returns nil only when the receiver accepted the notification. An HTTP
// answer that is not a success is returned as (or wrapping) a
// *failure.HTTPError carrying its status code and headers, so that the
// alerter can honour Retry-After and tell a receiver that is down (429, 5xx:
// retried) from one that is misconfigured (400, 401, 403, 404, 410: held and
// retried with backoff, copied to a receiver that works, and a config alert
// raised there). Any other error (a timeout, a refused connection) is
// retried. Errors must never contain a secret such as a webhook URL.
type Sink interface {
	Send(ctx context.Context, n Notification) error
}
