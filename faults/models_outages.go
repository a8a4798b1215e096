package faults

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/failure"
)

// Flapping is a primary that goes down and comes back: it is down for Duty
// of every Period (each down-phase shifted by a jitter drawn per period, as
// Periodic does, from the fault's seed and name but apart from its
// schedule's), answering Code; while it is up, the fault is not active. The
// Injector treats the down-phases like time conditions: FirstCalls and
// Probability count only calls while the primary is down, and the fault's
// windows are its schedule's windows intersected with them. Transient.
type Flapping struct {
	// Period is the length of one down-and-up cycle; 0 means
	// DefaultFlappingPeriod.
	Period time.Duration
	// Duty is the fraction of each period the primary is down, in (0,1];
	// 0 means DefaultFlappingDuty.
	Duty float64
	// Jitter shifts each down-phase by up to ±Jitter; at most Period/2.
	Jitter time.Duration
	// Code is the status answered while down, 500..599; 0 means 503.
	Code int
}

// Name returns "flapping".
func (Flapping) Name() string { return "flapping" }

// Class returns Transient.
func (Flapping) Class() classify.Class { return classify.Transient }

// Targets returns Dependency.
func (Flapping) Targets() []TargetKind { return []TargetKind{Dependency} }

// WithDefaults returns the model with its zero parameters set to their
// defaults.
func (m Flapping) WithDefaults() Flapping {
	if m.Period == 0 {
		m.Period = DefaultFlappingPeriod
	}
	if m.Duty == 0 {
		m.Duty = DefaultFlappingDuty
	}
	if m.Code == 0 {
		m.Code = http.StatusServiceUnavailable
	}
	return m
}

// Validate checks the period, duty and jitter as Periodic's, and the status.
func (m Flapping) Validate() error {
	var code error
	if m.Code != 0 {
		code = checkStatus("code", m.Code, 500, 599)
	}
	d := m.WithDefaults()
	return joinErrs(Periodic{Period: d.Period, Duty: d.Duty, Jitter: d.Jitter}.validate(""), code)
}

// DownAt reports whether the primary is down at offset t for the fault named
// fault in a scenario with the given seed. An invalid model is never down.
func (m Flapping) DownAt(seed uint64, fault string, t time.Duration) bool {
	p, ok := m.periodic(seed, NameHash(fault))
	return ok && p.on(millisFloor(t))
}

// periodic is the down-phases' pattern; ok is false for an invalid model.
func (m Flapping) periodic(seed, key uint64) (p periodic, ok bool) {
	d := m.WithDefaults()
	pd := Periodic{Period: d.Period, Duty: d.Duty, Jitter: d.Jitter}
	if !pd.valid() || d.Code < 500 || d.Code > 599 {
		return periodic{}, false
	}
	return pd.compile(seed, key^flappingSalt), true
}

// Apply returns the error answer while the primary is down at c.At (with
// seed 0 and no fault name: inside an Injector, the fault's own are used),
// and no effect while it is up.
func (m Flapping) Apply(c Call, r *rand.Rand) Effect {
	if !m.DownAt(0, "", c.At) {
		return Effect{}
	}
	return m.bind(binding{}).apply(c, r)
}

func (m Flapping) bind(binding) applier {
	m = m.WithDefaults()
	return &fixed{errEffect(&failure.HTTPError{Code: m.Code}, classify.Transient)}
}

func (m Flapping) gate(b binding) *periodic {
	if p, ok := m.periodic(b.seed, b.key); ok {
		return &p
	}
	return nil
}

// ---------------------------------------------------------------------------

// Outage is a dependency, store or receiver that is down: connections are
// refused (a *net.OpError wrapping syscall.ECONNREFUSED, as a dial returns),
// or, with a Code, every call gets that 5xx. Transient: nothing took effect.
// (A 500, 502 or 504 from the payment gateway is classified indeterminate by
// the default classifier, which cannot know that.)
type Outage struct {
	// Code is 0 (connection refused) or a status in 500..599.
	Code int
}

// Name returns "outage".
func (Outage) Name() string { return "outage" }

// Class returns Transient.
func (Outage) Class() classify.Class { return classify.Transient }

// Targets returns Dependency, DLQStore, AlertSink and Store.
func (Outage) Targets() []TargetKind { return []TargetKind{Dependency, DLQStore, AlertSink, Store} }

// Validate checks the status.
func (m Outage) Validate() error {
	if m.Code != 0 {
		return checkStatus("code", m.Code, 500, 599)
	}
	return nil
}

// Apply returns the refusal or the error answer.
func (m Outage) Apply(c Call, r *rand.Rand) Effect { return m.bind(binding{}).apply(c, r) }

func (m Outage) bind(b binding) applier {
	if m.Code == 0 {
		return &fixed{errEffect(refused(b.target), classify.Transient)}
	}
	return &fixed{errEffect(&failure.HTTPError{Code: m.Code}, classify.Transient)}
}

// ---------------------------------------------------------------------------

// StoreOutage is the queue store or the DLQ store being unreachable: every
// call's connection is refused (a *net.OpError wrapping
// syscall.ECONNREFUSED). Transient.
type StoreOutage struct{}

// Name returns "store-outage".
func (StoreOutage) Name() string { return "store-outage" }

// Class returns Transient.
func (StoreOutage) Class() classify.Class { return classify.Transient }

// Targets returns DLQStore and Store.
func (StoreOutage) Targets() []TargetKind { return []TargetKind{DLQStore, Store} }

// Validate accepts every StoreOutage.
func (StoreOutage) Validate() error { return nil }

// Apply returns the refusal.
func (m StoreOutage) Apply(c Call, r *rand.Rand) Effect { return m.bind(binding{}).apply(c, r) }

func (StoreOutage) bind(b binding) applier {
	return &fixed{errEffect(refused(b.target), classify.Transient)}
}

// ---------------------------------------------------------------------------

// SinkOutage is an alert receiver that cannot take deliveries: connections
// refused, a 429 with a Retry-After, or a 5xx. Transient, or RateLimited for
// the 429.
type SinkOutage struct {
	// Code is 0 (connection refused), 429 or a status in 500..599.
	Code int
	// RetryAfter, when > 0, adds a Retry-After header and hint to the
	// answer; for a 429, 0 means DefaultRetryAfter.
	RetryAfter time.Duration
}

// Name returns "sink-outage".
func (SinkOutage) Name() string { return "sink-outage" }

// Class returns RateLimited for a 429, else Transient.
func (m SinkOutage) Class() classify.Class {
	if m.Code == http.StatusTooManyRequests {
		return classify.RateLimited
	}
	return classify.Transient
}

// Targets returns AlertSink.
func (SinkOutage) Targets() []TargetKind { return []TargetKind{AlertSink} }

// WithDefaults returns the model with its zero parameters set to their
// defaults.
func (m SinkOutage) WithDefaults() SinkOutage {
	if m.Code == http.StatusTooManyRequests && m.RetryAfter == 0 {
		m.RetryAfter = DefaultRetryAfter
	}
	return m
}

// Validate checks the status and RetryAfter.
func (m SinkOutage) Validate() error {
	var code error
	if m.Code != 0 && m.Code != http.StatusTooManyRequests && (m.Code < 500 || m.Code > 599) {
		code = &FieldError{Field: "code", Msg: fmt.Sprintf("must be 0 (connection refused), 429 or in 500..599, got %d", m.Code)}
	}
	return joinErrs(code, checkDuration("retryAfter", m.RetryAfter))
}

// Apply returns the refusal or the error answer.
func (m SinkOutage) Apply(c Call, r *rand.Rand) Effect { return m.bind(binding{}).apply(c, r) }

func (m SinkOutage) bind(b binding) applier {
	m = m.WithDefaults()
	if m.Code == 0 {
		return &fixed{errEffect(refused(b.target), classify.Transient)}
	}
	return &fixed{errEffect(httpError(m.Code, "", m.RetryAfter, nil), m.Class())}
}
