package faults

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"time"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/failure"
)

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
