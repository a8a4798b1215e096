package faults

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/failure"
)

// Defaults of the models' zero parameters.
const (
	// DefaultTimeoutAfter is how long a GatewayTimeout makes the caller wait.
	DefaultTimeoutAfter = 30 * time.Second
	// DefaultLatencyMean is a Latency's mean.
	DefaultLatencyMean = 100 * time.Millisecond
	// DefaultStatus is an HTTPStatus's code: 503, transient everywhere.
	DefaultStatus = http.StatusServiceUnavailable
	// DefaultAuthBody is an AuthFailure's body: it reads like a credential
	// problem and holds no credential.
	DefaultAuthBody = "API key revoked or expired"
	// DefaultDeclineCode is a CardDeclined's decline code.
	DefaultDeclineCode = "insufficient_funds"
	// DefaultRetryAfter is a RateLimit's (and a 429 SinkOutage's) hint.
	DefaultRetryAfter = time.Second
	// DefaultIndeterminateStatus is an Indeterminate5xx's code.
	DefaultIndeterminateStatus = http.StatusBadGateway
	// DefaultFlappingPeriod is a Flapping's period.
	DefaultFlappingPeriod = time.Minute
	// DefaultFlappingDuty is the fraction of a Flapping's period the primary
	// is down.
	DefaultFlappingDuty = 0.5
	// DefaultStall is how long a WorkerStall freezes the worker.
	DefaultStall = 30 * time.Second
	// DefaultSlowStoreLatency is a SlowStore's added latency.
	DefaultSlowStoreLatency = 250 * time.Millisecond
)

// Compile-time checks: every catalogue model is a Model and prepares itself
// for the Injector.
var (
	_ Model  = GatewayTimeout{}
	_ binder = GatewayTimeout{}
	_ Model  = Latency{}
	_ binder = Latency{}
	_ Model  = HTTPStatus{}
	_ binder = HTTPStatus{}
	_ Model  = AuthFailure{}
	_ binder = AuthFailure{}
	_ Model  = CardDeclined{}
	_ binder = CardDeclined{}
	_ Model  = RateLimit{}
	_ binder = RateLimit{}
	_ Model  = Indeterminate5xx{}
	_ binder = Indeterminate5xx{}
	_ Model  = Flapping{}
	_ binder = Flapping{}
	_ gater  = Flapping{}
	_ Model  = Outage{}
	_ binder = Outage{}
	_ Model  = StoreOutage{}
	_ binder = StoreOutage{}
	_ Model  = SinkOutage{}
	_ binder = SinkOutage{}
	_ Model  = WorkerCrash{}
	_ binder = WorkerCrash{}
	_ Model  = WorkerStall{}
	_ binder = WorkerStall{}
	_ Model  = SlowStore{}
	_ binder = SlowStore{}
)

// orFallback gives Apply a stream when called without one.
func orFallback(r *rand.Rand) *rand.Rand {
	if r == nil {
		return Stream(0, "")
	}
	return r
}

func joinErrs(errs ...error) error { return errors.Join(errs...) }

func checkStatus(field string, code, lo, hi int) error {
	if code < lo || code > hi {
		return &FieldError{Field: field, Msg: fmt.Sprintf("must be in %d..%d, got %d", lo, hi, code)}
	}
	return nil
}

// ---------------------------------------------------------------------------

// GatewayTimeout is a dependency that does not answer in time: the caller
// waits After and gets a *failure.TimeoutError. Its true class is
// Indeterminate: the request may have gone through (Charged says whether it
// did). The default classifier agrees on the payment gateway; for other
// dependencies it says Transient, not knowing whether they are idempotent.
type GatewayTimeout struct {
	// Op names what timed out in the error, e.g. "POST /v1/charges"; ""
	// means the dependency's name.
	Op string
	// After is how long the caller waits; 0 means DefaultTimeoutAfter.
	After time.Duration
	// ChargedProbability is the chance that the request took effect
	// although it timed out, in [0,1] (default 0).
	ChargedProbability float64
}

// Name returns "gateway-timeout".
func (GatewayTimeout) Name() string { return "gateway-timeout" }

// Class returns Indeterminate.
func (GatewayTimeout) Class() classify.Class { return classify.Indeterminate }

// Targets returns Dependency.
func (GatewayTimeout) Targets() []TargetKind { return []TargetKind{Dependency} }

// WithDefaults returns the model with its zero parameters set to their
// defaults (Op stays "": it depends on the target).
func (m GatewayTimeout) WithDefaults() GatewayTimeout {
	if m.After == 0 {
		m.After = DefaultTimeoutAfter
	}
	return m
}

// Validate checks After and ChargedProbability.
func (m GatewayTimeout) Validate() error {
	return joinErrs(checkDuration("after", m.After), checkProbability("chargedProbability", m.ChargedProbability))
}

// Apply returns the timeout after its wait, Charged drawn from r.
func (m GatewayTimeout) Apply(c Call, r *rand.Rand) Effect {
	return m.bind(binding{}).apply(c, orFallback(r))
}

func (m GatewayTimeout) bind(b binding) applier {
	m = m.WithDefaults()
	op := m.Op
	if op == "" {
		op = b.target.Name
	}
	if op == "" {
		op = "request"
	}
	m.After = max(m.After, 0)
	err := &failure.TimeoutError{Op: op, After: m.After}
	return &charged{eff: Effect{Err: err, Latency: m.After, Class: classify.Indeterminate}, p: m.ChargedProbability}
}

// ---------------------------------------------------------------------------

// The Latency distributions, as Latency.Distribution names them.
const (
	// LatencyConstant always adds Mean.
	LatencyConstant = "constant"
	// LatencyUniform adds a latency drawn uniformly from [Min, Max].
	LatencyUniform = "uniform"
	// LatencyExponential adds an exponential latency of mean Mean.
	LatencyExponential = "exponential"
	// LatencyNormal adds a normal latency of mean Mean and deviation StdDev.
	LatencyNormal = "normal"
	// LatencyLogNormal adds a lognormal latency of mean Mean and deviation
	// StdDev: mostly near the mean, with a long tail.
	LatencyLogNormal = "lognormal"
)

// distributions lists the Latency distributions, in catalogue order.
var distributions = []string{LatencyConstant, LatencyUniform, LatencyExponential, LatencyNormal, LatencyLogNormal}

// Latency slows calls down without failing them: each hit call takes an
// extra latency drawn from a distribution, clamped to [Min, Max] (Max 0: no
// upper bound) and to ≥ 0, rounded to whole milliseconds.
type Latency struct {
	// Distribution is "constant" (the default: always Mean), "uniform"
	// (between Min and Max), "exponential" (mean Mean), "normal" (Mean,
	// StdDev) or "lognormal" (of mean Mean and standard deviation StdDev: a
	// long tail).
	Distribution string
	// Mean is the distribution's mean; 0 means DefaultLatencyMean.
	Mean time.Duration
	// Min is the least latency drawn (uniform: the low end).
	Min time.Duration
	// Max is the greatest latency drawn; 0 means no bound, except for
	// uniform, where 0 means 2×Mean.
	Max time.Duration
	// StdDev is the standard deviation of normal and lognormal; 0 means
	// Mean/4 (normal) or Mean/2 (lognormal).
	StdDev time.Duration
}

// Name returns "latency".
func (Latency) Name() string { return "latency" }

// Class returns classify.None: latency fails nothing.
func (Latency) Class() classify.Class { return classify.None }

// Targets returns Dependency, Store and DLQStore.
func (Latency) Targets() []TargetKind { return []TargetKind{Dependency, Store, DLQStore} }

// WithDefaults returns the model with its zero parameters set to their
// defaults.
func (m Latency) WithDefaults() Latency {
	if m.Distribution == "" {
		m.Distribution = LatencyConstant
	}
	if m.Mean == 0 {
		m.Mean = DefaultLatencyMean
	}
	switch m.Distribution {
	case LatencyUniform:
		if m.Max == 0 {
			m.Max = 2 * m.Mean
		}
	case LatencyNormal:
		if m.StdDev == 0 {
			m.StdDev = m.Mean / 4
		}
	case LatencyLogNormal:
		if m.StdDev == 0 {
			m.StdDev = m.Mean / 2
		}
	}
	return m
}

// Validate checks the distribution's name and the durations, and that Max
// is not below Min.
func (m Latency) Validate() error {
	var errs []error
	if m.Distribution != "" && !slices.Contains(distributions, m.Distribution) {
		ne := newNameError("distribution", m.Distribution, distributions)
		hint := "one of " + strings.Join(distributions, ", ")
		if ne.Suggestion != "" {
			hint = fmt.Sprintf("did you mean %q?", ne.Suggestion)
		}
		errs = append(errs, &FieldError{Field: "distribution", Msg: fmt.Sprintf("unknown distribution %q", m.Distribution), Hint: hint})
	}
	errs = append(errs, checkDuration("mean", m.Mean), checkDuration("min", m.Min), checkDuration("max", m.Max), checkDuration("stdDev", m.StdDev))
	if d := m.WithDefaults(); d.Max > 0 && d.Max < d.Min {
		errs = append(errs, &FieldError{Field: "max", Msg: fmt.Sprintf("must be ≥ min (%s), got %s", d.Min, d.Max)})
	}
	return joinErrs(errs...)
}

// Apply returns no error and a latency drawn from r.
func (m Latency) Apply(c Call, r *rand.Rand) Effect {
	return m.bind(binding{}).apply(c, orFallback(r))
}

func (m Latency) bind(binding) applier {
	m = m.WithDefaults()
	ms := func(d time.Duration) float64 { return float64(max(d, 0)) / float64(time.Millisecond) }
	l := &latencyDraw{dist: m.Distribution, mean: ms(m.Mean), sd: ms(m.StdDev), lo: ms(m.Min), hi: ms(m.Max)}
	if m.Max <= 0 {
		l.hi = maxLatencyMs
	}
	if l.hi < l.lo {
		l.hi = l.lo
	}
	if l.dist == LatencyLogNormal && l.mean > 0 {
		l.sigma = math.Sqrt(math.Log1p(l.sd * l.sd / (l.mean * l.mean)))
		l.mu = math.Log(l.mean) - l.sigma*l.sigma/2
	}
	return l
}

// maxLatencyMs bounds a drawn latency so that it converts to a Duration.
const maxLatencyMs = float64(math.MaxInt64/int64(time.Millisecond)) / 2

type latencyDraw struct {
	dist                        string
	mean, sd, lo, hi, mu, sigma float64 // in ms
}

func (l *latencyDraw) apply(_ Call, r *rand.Rand) Effect {
	var ms float64
	switch l.dist {
	case LatencyUniform:
		lo, hi := math.Round(l.lo), math.Round(l.hi)
		ms = lo + float64(r.Int64N(int64(hi-lo)+1))
	case LatencyExponential:
		ms = r.ExpFloat64() * l.mean
	case LatencyNormal:
		ms = l.mean + r.NormFloat64()*l.sd
	case LatencyLogNormal:
		ms = math.Exp(l.mu + l.sigma*r.NormFloat64())
	default:
		ms = l.mean
	}
	if l.dist != LatencyConstant {
		ms = min(max(ms, l.lo), l.hi)
	}
	ms = math.Round(min(max(ms, 0), maxLatencyMs))
	if math.IsNaN(ms) {
		ms = 0
	}
	return Effect{Latency: time.Duration(ms) * time.Millisecond}
}

// ---------------------------------------------------------------------------

// HTTPStatus is an error answer with an HTTP status: the "error rate by HTTP
// status" fault, its rate being the schedule's Probability. The true class
// follows the status: 429 rate-limited; 401, 403 and 407 critical; 408 and
// 5xx transient; other 4xx permanent (408 is a timeout a retry may cure, as
// the default classifier also says). A 500, 502 or 504 from the payment
// gateway is classified indeterminate by the default classifier, which cannot
// know that the charge did not go through; this model's 5xx did not take
// effect, so its true class is Transient. Indeterminate5xx is the model of a
// 5xx whose outcome is unknown.
type HTTPStatus struct {
	// Code is the status, 400..599; 0 means DefaultStatus (503).
	Code int
	// Body is an excerpt of the answer's body, if any.
	Body string
	// RetryAfter, when > 0, adds a Retry-After header (whole seconds,
	// rounded up) and a failure.WithRetryAfter hint.
	RetryAfter time.Duration
}

// Name returns "http-status".
func (HTTPStatus) Name() string { return "http-status" }

// Class returns the true class of the status.
func (m HTTPStatus) Class() classify.Class { return statusClass(m.WithDefaults().Code) }

// Targets returns Dependency and AlertSink.
func (HTTPStatus) Targets() []TargetKind { return []TargetKind{Dependency, AlertSink} }

// WithDefaults returns the model with its zero parameters set to their
// defaults.
func (m HTTPStatus) WithDefaults() HTTPStatus {
	if m.Code == 0 {
		m.Code = DefaultStatus
	}
	return m
}

// Validate checks the status and RetryAfter.
func (m HTTPStatus) Validate() error {
	var code error
	if m.Code != 0 {
		code = checkStatus("code", m.Code, 400, 599)
	}
	return joinErrs(code, checkDuration("retryAfter", m.RetryAfter))
}

// Apply returns the error answer.
func (m HTTPStatus) Apply(c Call, r *rand.Rand) Effect { return m.bind(binding{}).apply(c, r) }

func (m HTTPStatus) bind(binding) applier {
	m = m.WithDefaults()
	return &fixed{errEffect(httpError(m.Code, m.Body, m.RetryAfter, nil), statusClass(m.Code))}
}

// ---------------------------------------------------------------------------

// AuthFailure is a dependency refusing the credentials: an HTTP 401 or 403
// answer wrapping failure.ErrAuthentication. Critical: a person must act.
type AuthFailure struct {
	// Code is 401 or 403; 0 means 401.
	Code int
	// Body is the answer's body; "" means DefaultAuthBody. Scenario
	// authors: never put a real credential here.
	Body string
}

// Name returns "auth-failure".
func (AuthFailure) Name() string { return "auth-failure" }

// Class returns Critical.
func (AuthFailure) Class() classify.Class { return classify.Critical }

// Targets returns Dependency and AlertSink.
func (AuthFailure) Targets() []TargetKind { return []TargetKind{Dependency, AlertSink} }

// WithDefaults returns the model with its zero parameters set to their
// defaults.
func (m AuthFailure) WithDefaults() AuthFailure {
	if m.Code == 0 {
		m.Code = http.StatusUnauthorized
	}
	if m.Body == "" {
		m.Body = DefaultAuthBody
	}
	return m
}

// Validate checks the status.
func (m AuthFailure) Validate() error {
	if m.Code != 0 && m.Code != http.StatusUnauthorized && m.Code != http.StatusForbidden {
		return &FieldError{Field: "code", Msg: fmt.Sprintf("must be 401 or 403, got %d", m.Code)}
	}
	return nil
}

// Apply returns the refusal.
func (m AuthFailure) Apply(c Call, r *rand.Rand) Effect { return m.bind(binding{}).apply(c, r) }

func (m AuthFailure) bind(binding) applier {
	m = m.WithDefaults()
	return &fixed{errEffect(&failure.HTTPError{Code: m.Code, Body: m.Body, Err: failure.ErrAuthentication}, classify.Critical)}
}

// ---------------------------------------------------------------------------

// CardDeclined is a card processor declining the charge: a
// *failure.CardError{Code: "card_declined"} whose decline code is drawn
// uniformly from Codes. A decline is Permanent, except the codes in
// classify.RetryableDeclineCodes ("try_again_later", "processing_error",
// ...), which mean the issuer had a problem: their true class is Transient,
// and Apply says so per call.
type CardDeclined struct {
	// Codes are the issuer's decline codes to draw from; empty means
	// [DefaultDeclineCode]. Each is lowercase letters, digits and "_".
	Codes []string
}

// Name returns "card-declined".
func (CardDeclined) Name() string { return "card-declined" }

// Class returns Permanent, or Transient when every code is retryable.
func (m CardDeclined) Class() classify.Class {
	for _, c := range m.WithDefaults().Codes {
		if declineClass(c) == classify.Permanent {
			return classify.Permanent
		}
	}
	return classify.Transient
}

// Targets returns Dependency.
func (CardDeclined) Targets() []TargetKind { return []TargetKind{Dependency} }

// WithDefaults returns the model with its zero parameters set to their
// defaults.
func (m CardDeclined) WithDefaults() CardDeclined {
	if len(m.Codes) == 0 {
		m.Codes = []string{DefaultDeclineCode}
	}
	return m
}

// Validate checks every code.
func (m CardDeclined) Validate() error {
	var errs []error
	for i, c := range m.Codes {
		if !isCode(c) {
			errs = append(errs, &FieldError{Field: fmt.Sprintf("codes[%d]", i), Msg: fmt.Sprintf("must be lowercase letters, digits and \"_\", got %q", c), Hint: "e.g. insufficient_funds, do_not_honor, try_again_later"})
		}
	}
	return joinErrs(errs...)
}

func isCode(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// Apply returns a decline with a code drawn from r.
func (m CardDeclined) Apply(c Call, r *rand.Rand) Effect {
	return m.bind(binding{}).apply(c, orFallback(r))
}

func (m CardDeclined) bind(binding) applier {
	m = m.WithDefaults()
	d := &declines{effs: make([]Effect, len(m.Codes))}
	for i, code := range m.Codes {
		d.effs[i] = errEffect(&failure.CardError{Code: "card_declined", Decline: code, Message: declineMessage(code)}, declineClass(code))
	}
	return d
}

type declines struct{ effs []Effect }

func (d *declines) apply(_ Call, r *rand.Rand) Effect {
	if len(d.effs) == 1 {
		return d.effs[0]
	}
	return d.effs[r.IntN(len(d.effs))]
}

// declineClass is the true class of a decline code.
func declineClass(code string) classify.Class {
	if slices.Contains(classify.RetryableDeclineCodes, code) {
		return classify.Transient
	}
	return classify.Permanent
}

// declineMessage is the processor's message for a decline code, as a
// Stripe-like processor words it.
func declineMessage(code string) string {
	switch code {
	case "insufficient_funds":
		return "Your card has insufficient funds."
	case "lost_card", "stolen_card", "fraudulent", "pickup_card":
		return "Your card was declined."
	case "expired_card":
		return "Your card has expired."
	case "incorrect_cvc":
		return "Your card's security code is incorrect."
	case "processing_error":
		return "An error occurred while processing your card. Try again in a little bit."
	case "try_again_later", "issuer_not_available", "reenter_transaction":
		return "Your card was declined. Try again later."
	}
	return "Your card was declined."
}

// ---------------------------------------------------------------------------

// RateLimit is a dependency refusing calls for a while: an HTTP 429 answer
// with a Retry-After header (whole seconds, rounded up) and a
// failure.WithRetryAfter hint carrying the exact duration. RateLimited.
type RateLimit struct {
	// RetryAfter is the dependency's hint; 0 means DefaultRetryAfter.
	RetryAfter time.Duration
}

// Name returns "rate-limit".
func (RateLimit) Name() string { return "rate-limit" }

// Class returns RateLimited.
func (RateLimit) Class() classify.Class { return classify.RateLimited }

// Targets returns Dependency and AlertSink.
func (RateLimit) Targets() []TargetKind { return []TargetKind{Dependency, AlertSink} }

// WithDefaults returns the model with its zero parameters set to their
// defaults.
func (m RateLimit) WithDefaults() RateLimit {
	if m.RetryAfter == 0 {
		m.RetryAfter = DefaultRetryAfter
	}
	return m
}

// Validate checks RetryAfter.
func (m RateLimit) Validate() error { return checkDuration("retryAfter", m.RetryAfter) }

// Apply returns the 429.
func (m RateLimit) Apply(c Call, r *rand.Rand) Effect { return m.bind(binding{}).apply(c, r) }

func (m RateLimit) bind(binding) applier {
	m = m.WithDefaults()
	return &fixed{errEffect(httpError(http.StatusTooManyRequests, "", m.RetryAfter, nil), classify.RateLimited)}
}

// ---------------------------------------------------------------------------

// Indeterminate5xx is a 5xx answer after which the request's outcome is
// unknown: a proxy lost the answer of a charge that went through. Its true
// class is Indeterminate; Charged says whether the charge took effect. The
// default classifier says indeterminate for a 500, 502 or 504 from the
// payment gateway and transient otherwise, so other codes and other
// dependencies test whether a classifier knows better.
type Indeterminate5xx struct {
	// Code is the status, 500..599; 0 means DefaultIndeterminateStatus
	// (502).
	Code int
	// ChargedProbability is the chance that the request took effect, in
	// [0,1]; 0 means 1 (the charge went through, the answer was lost). Use
	// NotCharged for a request that never does.
	ChargedProbability float64
	// NotCharged says the request never took effect (ChargedProbability
	// must then be 0).
	NotCharged bool
}

// Name returns "indeterminate-5xx".
func (Indeterminate5xx) Name() string { return "indeterminate-5xx" }

// Class returns Indeterminate.
func (Indeterminate5xx) Class() classify.Class { return classify.Indeterminate }

// Targets returns Dependency.
func (Indeterminate5xx) Targets() []TargetKind { return []TargetKind{Dependency} }

// WithDefaults returns the model with its zero parameters set to their
// defaults.
func (m Indeterminate5xx) WithDefaults() Indeterminate5xx {
	if m.Code == 0 {
		m.Code = DefaultIndeterminateStatus
	}
	if m.ChargedProbability == 0 && !m.NotCharged {
		m.ChargedProbability = 1
	}
	return m
}

// Validate checks the status and the probability.
func (m Indeterminate5xx) Validate() error {
	var code, both error
	if m.Code != 0 {
		code = checkStatus("code", m.Code, 500, 599)
	}
	if m.NotCharged && m.ChargedProbability != 0 {
		both = &FieldError{Field: "chargedProbability", Msg: "must be 0 with notCharged, got " + formatFloat(m.ChargedProbability)}
	}
	return joinErrs(code, checkProbability("chargedProbability", m.ChargedProbability), both)
}

// Apply returns the answer, Charged drawn from r.
func (m Indeterminate5xx) Apply(c Call, r *rand.Rand) Effect {
	return m.bind(binding{}).apply(c, orFallback(r))
}

func (m Indeterminate5xx) bind(binding) applier {
	m = m.WithDefaults()
	return &charged{eff: errEffect(&failure.HTTPError{Code: m.Code}, classify.Indeterminate), p: m.ChargedProbability}
}

// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------

// WorkerCrash is a worker process dying: the simulator crashes the worker at
// the start of each of the fault's windows (a call through the Injector says
// Crash while the fault is active), and a new one starts RestartAfter later.
// Its in-flight jobs are found again by lease recovery.
type WorkerCrash struct {
	// RestartAfter is how long until the worker is back; 0 means at once.
	RestartAfter time.Duration
}

// Name returns "worker-crash".
func (WorkerCrash) Name() string { return "worker-crash" }

// Class returns classify.None: a crash is not an error a job sees.
func (WorkerCrash) Class() classify.Class { return classify.None }

// Targets returns Worker.
func (WorkerCrash) Targets() []TargetKind { return []TargetKind{Worker} }

// Validate checks RestartAfter.
func (m WorkerCrash) Validate() error { return checkDuration("restartAfter", m.RestartAfter) }

// Apply returns the crash.
func (m WorkerCrash) Apply(c Call, r *rand.Rand) Effect { return m.bind(binding{}).apply(c, r) }

func (m WorkerCrash) bind(binding) applier {
	return &fixed{Effect{Crash: true, RestartAfter: max(m.RestartAfter, 0)}}
}

// ---------------------------------------------------------------------------

// WorkerStall is a worker process freezing (a long GC pause, a stuck
// syscall): its in-flight completions arrive For later, possibly after their
// leases ran out.
type WorkerStall struct {
	// For is how long the worker freezes; 0 means DefaultStall.
	For time.Duration
}

// Name returns "worker-stall".
func (WorkerStall) Name() string { return "worker-stall" }

// Class returns classify.None.
func (WorkerStall) Class() classify.Class { return classify.None }

// Targets returns Worker.
func (WorkerStall) Targets() []TargetKind { return []TargetKind{Worker} }

// WithDefaults returns the model with its zero parameters set to their
// defaults.
func (m WorkerStall) WithDefaults() WorkerStall {
	if m.For == 0 {
		m.For = DefaultStall
	}
	return m
}

// Validate checks For.
func (m WorkerStall) Validate() error { return checkDuration("for", m.For) }

// Apply returns the stall.
func (m WorkerStall) Apply(c Call, r *rand.Rand) Effect { return m.bind(binding{}).apply(c, r) }

func (m WorkerStall) bind(binding) applier {
	return &fixed{Effect{StallFor: max(m.WithDefaults().For, 0)}}
}

// ---------------------------------------------------------------------------

// SlowStore is the queue store or the DLQ store answering slowly: every call
// takes Latency more, and succeeds.
type SlowStore struct {
	// Latency is the added time per call; 0 means DefaultSlowStoreLatency.
	Latency time.Duration
}

// Name returns "slow-store".
func (SlowStore) Name() string { return "slow-store" }

// Class returns classify.None.
func (SlowStore) Class() classify.Class { return classify.None }

// Targets returns Store and DLQStore.
func (SlowStore) Targets() []TargetKind { return []TargetKind{Store, DLQStore} }

// WithDefaults returns the model with its zero parameters set to their
// defaults.
func (m SlowStore) WithDefaults() SlowStore {
	if m.Latency == 0 {
		m.Latency = DefaultSlowStoreLatency
	}
	return m
}

// Validate checks Latency.
func (m SlowStore) Validate() error { return checkDuration("latency", m.Latency) }

// Apply returns the latency.
func (m SlowStore) Apply(c Call, r *rand.Rand) Effect { return m.bind(binding{}).apply(c, r) }

func (m SlowStore) bind(binding) applier {
	return &fixed{Effect{Latency: max(m.WithDefaults().Latency, 0)}}
}
