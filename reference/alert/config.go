package alert

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/faultline/faultline/reference/classify"
)

// Defaults for Config.
const (
	DefaultGroupWait       = 30 * time.Second
	DefaultGroupInterval   = 5 * time.Minute
	DefaultRepeatInterval  = 4 * time.Hour
	DefaultDedupWindow     = 5 * time.Minute
	DefaultMaxJobsPerAlert = 5
	DefaultFlapThreshold   = 4
	DefaultFlapWindow      = 10 * time.Minute
	DefaultOutboxCapacity  = 1000
	DefaultRetryBase       = time.Second
	DefaultRetryMax        = 5 * time.Minute
	DefaultMaxRetryAfter   = time.Hour
	DefaultFailoverAfter   = 2 * time.Minute
	DefaultHeldRetry       = 5 * time.Minute
	DefaultSendTimeout     = 10 * time.Second
	DefaultMaxAlerts       = 10_000
)

// DefaultFingerprintLabels are the labels whose values identify a job-failure
// alert: one alert per task, class and dependency.
var DefaultFingerprintLabels = []string{LabelAlertName, LabelTask, LabelClass, LabelDependency}

// Timing paces a group's notifications, as Alertmanager's route timings do.
type Timing struct {
	// GroupWait is how long a new group collects alerts before its first
	// notification; it is also the longest a new critical (High) alert waits
	// to be paged, even in a group that already notified.
	GroupWait time.Duration
	// GroupInterval is the shortest time between two notifications of a
	// group about new or resolved alerts.
	GroupInterval time.Duration
	// RepeatInterval is how often an alert that keeps firing is sent again.
	RepeatInterval time.Duration
}

func (t Timing) withDefaults() Timing {
	if t.GroupWait == 0 {
		t.GroupWait = DefaultGroupWait
	}
	if t.GroupInterval == 0 {
		t.GroupInterval = DefaultGroupInterval
	}
	if t.RepeatInterval == 0 {
		t.RepeatInterval = DefaultRepeatInterval
	}
	return t
}

// Receiver is a named destination for notifications.
type Receiver struct {
	Name string
	Sink Sink
	// Fallback names the receiver told of this one's own trouble: it
	// refuses as misconfigured (400, 401, 403, 404, 410), it is past the
	// delivery deadline, its outbox is full. Without a Fallback (or while
	// it refuses too) the Secondary is told, else the default receiver,
	// else the first other receiver configured — never this one. The
	// notifications this one refuses are held and retried (backing off up
	// to Outbox.HeldRetry) until it accepts them again.
	Fallback string
	// Secondary, if set, names a receiver that also gets a notification
	// this one has not accepted within Outbox.FailoverAfter, and every
	// notification at once while this one refuses as misconfigured. Without
	// a Secondary (or while it refuses too), a refusing receiver's
	// notifications are copied at once to its Fallback, else the default
	// receiver, else the first other receiver configured: a refusal never
	// holds a critical page back. A receiver that took an alert only as a
	// copy is told when it resolves.
	Secondary string
}

// Route sends matching alerts to a receiver. Routes are tried in order; the
// first match takes the alert unless it says Continue. However many routes
// lead to one receiver, the alert joins one group there (the first such
// route's), and a receiver is paged at most once per fingerprint per repeat
// interval, copies from a failing receiver included.
type Route struct {
	// Receiver names the destination.
	Receiver string
	// Severities, if set, limits the route to these severities.
	Severities []classify.Severity
	// Match, if set, limits the route to alerts having all these labels.
	Match Labels
	// GroupBy names the labels whose values form a group: alerts with equal
	// values are sent together. Default: dependency.
	GroupBy []string
	// Timing overrides Config.Timing for this route's groups; zero fields
	// take Config.Timing's.
	Timing Timing
	// Continue lets the alert also try the routes after this one.
	Continue bool
}

// FlapConfig says when a breaker is flapping.
type FlapConfig struct {
	// Threshold is the number of openings within Window that make a
	// dependency flapping (default 4).
	Threshold int
	// Window is how far back openings count (default 10m); a flapping
	// alert resolves after a Window without an opening.
	Window time.Duration
}

// OutboxConfig bounds the outbox and paces redelivery.
type OutboxConfig struct {
	// Capacity is the most notifications waiting per receiver. Past it,
	// notifications are coalesced into waiting ones — never dropped — and an
	// overflow alert is raised.
	Capacity int
	// RetryBase and RetryMax bound the full-jitter backoff between delivery
	// attempts.
	RetryBase, RetryMax time.Duration
	// MaxRetryAfter caps a receiver's Retry-After.
	MaxRetryAfter time.Duration
	// FailoverAfter is the delivery deadline: a notification not accepted
	// this long after it was made is also sent to the receiver's Secondary,
	// and a delivery-late alert is told as Receiver.Fallback says. It is
	// independent of the grouping timers.
	FailoverAfter time.Duration
	// HeldRetry is the longest wait between tries of a receiver that
	// refuses as misconfigured: it is retried with full-jitter backoff from
	// RetryBase up to HeldRetry, so one refusal costs seconds and a
	// receiver that keeps refusing is tried once per HeldRetry at most.
	HeldRetry time.Duration
	// SendTimeout bounds one Send call.
	SendTimeout time.Duration
}

// Redactor masks secrets in text and payload fields before anything leaves
// the process. *redact.Redactor implements it.
type Redactor interface {
	String(s string) string
	Fields(m map[string]any) map[string]any
}

// Config configures an Alerter.
type Config struct {
	// Receivers are the destinations; names are unique.
	Receivers []Receiver
	// Routes pick receivers; an alert no route takes goes to
	// DefaultReceiver.
	Routes          []Route
	DefaultReceiver string
	// DefaultGroupBy groups the default route (default: dependency).
	DefaultGroupBy []string
	// Timing is the default pacing of every route.
	Timing Timing
	// FingerprintLabels are the labels that identify a job-failure alert.
	FingerprintLabels []string
	// DedupWindow: occurrences of a fingerprint closer than this are one
	// alert, and a job-failure alert resolves after this long without one.
	DedupWindow time.Duration
	// MaxJobsPerAlert bounds the sample of jobs an alert carries.
	MaxJobsPerAlert int
	// BreakerSeverity is the severity of a breaker's open and flapping
	// alerts (default High: a dependency is down).
	BreakerSeverity classify.Severity
	Flapping        FlapConfig
	Outbox          OutboxConfig
	// MaxAlerts bounds the distinct alerts held at once (default 10,000).
	// Past it, new fingerprints are counted in one alert-limit alert
	// instead: a label with a value per customer cannot exhaust memory or
	// flood the receivers.
	MaxAlerts int
	// Redactor masks job payloads, error texts, summaries and label values
	// before they leave; required.
	Redactor Redactor
	// OnDelivered, if set, is called after a sink accepted a notification,
	// outside the alerter's lock, on the delivering timer callback: the
	// simulator's ledger hears of every page here.
	OnDelivered func(n Notification, at time.Time)
	// Logger receives delivery errors; nil discards them.
	Logger *slog.Logger
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	c.Timing = c.Timing.withDefaults()
	if len(c.DefaultGroupBy) == 0 {
		c.DefaultGroupBy = []string{LabelDependency}
	}
	if len(c.FingerprintLabels) == 0 {
		c.FingerprintLabels = DefaultFingerprintLabels
	}
	if c.DedupWindow == 0 {
		c.DedupWindow = DefaultDedupWindow
	}
	if c.MaxJobsPerAlert == 0 {
		c.MaxJobsPerAlert = DefaultMaxJobsPerAlert
	}
	if c.MaxAlerts == 0 {
		c.MaxAlerts = DefaultMaxAlerts
	}
	if c.BreakerSeverity == classify.SeverityNone {
		c.BreakerSeverity = classify.High
	}
	if c.Flapping.Threshold == 0 {
		c.Flapping.Threshold = DefaultFlapThreshold
	}
	if c.Flapping.Window == 0 {
		c.Flapping.Window = DefaultFlapWindow
	}
	o := &c.Outbox
	if o.Capacity == 0 {
		o.Capacity = DefaultOutboxCapacity
	}
	if o.RetryBase == 0 {
		o.RetryBase = DefaultRetryBase
	}
	if o.RetryMax == 0 {
		o.RetryMax = DefaultRetryMax
	}
	if o.MaxRetryAfter == 0 {
		o.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if o.FailoverAfter == 0 {
		o.FailoverAfter = DefaultFailoverAfter
	}
	if o.HeldRetry == 0 {
		o.HeldRetry = DefaultHeldRetry
	}
	if o.SendTimeout == 0 {
		o.SendTimeout = DefaultSendTimeout
	}
	for i := range c.Routes {
		if len(c.Routes[i].GroupBy) == 0 {
			c.Routes[i].GroupBy = c.DefaultGroupBy
		}
	}
	return c
}

// ErrInvalidConfig is matched by every *ConfigError.
var ErrInvalidConfig = errors.New("invalid alert config")

// ConfigError names the field of a Config that is invalid.
type ConfigError struct {
	Field  string
	Reason string
}

// Error returns "alert config: Field: reason".
func (e *ConfigError) Error() string { return "alert config: " + e.Field + ": " + e.Reason }

// Is matches ErrInvalidConfig.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidConfig }

// Validate reports the first invalid field of c with defaults applied.
func (c Config) Validate() error {
	c = c.WithDefaults()
	bad := func(field, format string, args ...any) error {
		return &ConfigError{Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	names := map[string]bool{}
	for i, r := range c.Receivers {
		f := fmt.Sprintf("Receivers[%d]", i)
		switch {
		case r.Name == "":
			return bad(f+".Name", "a receiver needs a name")
		case names[r.Name]:
			return bad(f+".Name", "receiver %q is defined twice", r.Name)
		case r.Sink == nil:
			return bad(f+".Sink", "receiver %q has no sink", r.Name)
		}
		names[r.Name] = true
	}
	for i, r := range c.Receivers {
		f := fmt.Sprintf("Receivers[%d]", i)
		if r.Fallback != "" && (!names[r.Fallback] || r.Fallback == r.Name) {
			return bad(f+".Fallback", "%q is not another receiver", r.Fallback)
		}
		if r.Secondary != "" && (!names[r.Secondary] || r.Secondary == r.Name) {
			return bad(f+".Secondary", "%q is not another receiver", r.Secondary)
		}
	}
	if !names[c.DefaultReceiver] {
		return bad("DefaultReceiver", "%q is not a receiver", c.DefaultReceiver)
	}
	for i, r := range c.Routes {
		f := fmt.Sprintf("Routes[%d]", i)
		if !names[r.Receiver] {
			return bad(f+".Receiver", "%q is not a receiver", r.Receiver)
		}
		for j, s := range r.Severities {
			if s < classify.Low || s > classify.High {
				return bad(fmt.Sprintf("%s.Severities[%d]", f, j), "not a severity (%d)", s)
			}
		}
		if err := checkTiming(f+".Timing", r.Timing, true); err != nil {
			return err
		}
	}
	if err := checkTiming("Timing", c.Timing, false); err != nil {
		return err
	}
	// A job-failure alert resolves after DedupWindow of quiet; one that
	// resolved before its group waited out would first be heard of as
	// resolved, and a resolve alone pages nobody.
	if c.DedupWindow < c.Timing.GroupWait {
		return bad("DedupWindow", "must be at least Timing.GroupWait (%s), or a failure resolves before it is paged", c.Timing.GroupWait)
	}
	for i, r := range c.Routes {
		if r.Timing.GroupWait > c.DedupWindow {
			return bad(fmt.Sprintf("Routes[%d].Timing.GroupWait", i), "must be at most DedupWindow (%s), or a failure resolves before it is paged", c.DedupWindow)
		}
	}
	switch {
	case c.DedupWindow < 0:
		return bad("DedupWindow", "must not be negative")
	case c.MaxJobsPerAlert < 1:
		return bad("MaxJobsPerAlert", "must be at least 1")
	case c.MaxAlerts < 2:
		return bad("MaxAlerts", "must be at least 2")
	case c.BreakerSeverity > classify.High:
		return bad("BreakerSeverity", "not a severity (%d)", c.BreakerSeverity)
	case c.Flapping.Threshold < 2:
		return bad("Flapping.Threshold", "must be at least 2")
	case c.Flapping.Window <= 0:
		return bad("Flapping.Window", "must be positive")
	case c.Outbox.Capacity < 1:
		return bad("Outbox.Capacity", "must be at least 1")
	case c.Outbox.RetryBase <= 0:
		return bad("Outbox.RetryBase", "must be positive")
	case c.Outbox.RetryMax < c.Outbox.RetryBase:
		return bad("Outbox.RetryMax", "must be at least RetryBase (%s)", c.Outbox.RetryBase)
	case c.Outbox.MaxRetryAfter <= 0:
		return bad("Outbox.MaxRetryAfter", "must be positive")
	case c.Outbox.FailoverAfter <= 0:
		return bad("Outbox.FailoverAfter", "must be positive")
	case c.Outbox.HeldRetry <= 0:
		return bad("Outbox.HeldRetry", "must be positive")
	case c.Outbox.SendTimeout <= 0:
		return bad("Outbox.SendTimeout", "must be positive")
	case c.Redactor == nil:
		return bad("Redactor", "required: notifications leave the process (use redact.Default())")
	}
	return nil
}

func checkTiming(field string, t Timing, zeroOK bool) error {
	for _, x := range []struct {
		name string
		d    time.Duration
	}{{"GroupWait", t.GroupWait}, {"GroupInterval", t.GroupInterval}, {"RepeatInterval", t.RepeatInterval}} {
		if x.d < 0 || (x.d == 0 && !zeroOK) {
			return &ConfigError{Field: field + "." + x.name, Reason: "must be positive"}
		}
	}
	return nil
}
