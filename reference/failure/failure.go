// Package failure defines the errors that a job's dependencies return — an
// HTTP error answer, a card decline, a timeout — and the sentinels for the
// seed's error families (authentication, bad input, a missing key).
//
// They carry their meaning in small methods (StatusCode, DeclineCode,
// RetryAfterHeader, Timeout) that the classifier reads without importing this
// package, so a team's own error types classify the same way when they
// implement the same methods. The simulator's fault models return these.
package failure

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The seed's error families, for handlers to wrap with %w.
var (
	// ErrAuthentication means the credentials were refused: an expired token,
	// a revoked key (the seed's AuthenticationError). It needs a person.
	ErrAuthentication = errors.New("authentication failed")
	// ErrInvalidInput means the job's data cannot be processed as it is (the
	// seed's ValueError and TypeError). Retrying cannot help.
	ErrInvalidInput = errors.New("invalid input")
	// ErrMissingKey means data the job refers to does not exist (the seed's
	// KeyError). Retrying cannot help.
	ErrMissingKey = errors.New("missing key")
)

// HTTPError is an error answer from an HTTP dependency.
type HTTPError struct {
	// Code is the HTTP status code.
	Code int
	// Header holds the answer's headers; Retry-After is read from it.
	Header http.Header
	// Body is a short excerpt of the answer's body, if any.
	Body string
	// Err is an underlying cause, if any.
	Err error
}

// Error returns e.g. "http 503 Service Unavailable: maintenance".
func (e *HTTPError) Error() string {
	if e == nil {
		return "http error <nil>"
	}
	if e.Body == "" && e.Err == nil {
		if s, ok := statusTexts[e.Code]; ok {
			return s // no allocation: a failure storm builds this for every attempt
		}
	}
	// One allocation.
	var b strings.Builder
	text := http.StatusText(e.Code)
	b.Grow(16 + len(text) + len(e.Body))
	b.WriteString("http ")
	b.WriteString(strconv.Itoa(e.Code))
	b.WriteByte(' ')
	b.WriteString(text)
	if e.Body != "" {
		b.WriteString(": ")
		b.WriteString(e.Body)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// statusTexts holds the texts of bodyless HTTP errors of every status code
// net/http names, "http 503 Service Unavailable", built once.
var statusTexts = func() map[int]string {
	m := make(map[int]string)
	for code := 100; code < 600; code++ {
		if text := http.StatusText(code); text != "" {
			m[code] = "http " + strconv.Itoa(code) + " " + text
		}
	}
	return m
}()

// StatusCode returns the HTTP status code.
func (e *HTTPError) StatusCode() int {
	if e == nil {
		return 0
	}
	return e.Code
}

// RetryAfterHeader returns the Retry-After header as sent: delay-seconds or
// an HTTP date, or "" when absent.
func (e *HTTPError) RetryAfterHeader() string {
	if e == nil || e.Header == nil {
		return ""
	}
	return e.Header.Get("Retry-After")
}

// Unwrap returns the underlying cause.
func (e *HTTPError) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// CardError is a card processor's refusal, shaped like Stripe's card errors:
// a code ("card_declined", "expired_card", "incorrect_cvc",
// "processing_error"), and for declines the issuer's decline code
// ("insufficient_funds", "do_not_honor", "try_again_later", ...).
type CardError struct {
	// Code is the processor's error code.
	Code string
	// Decline is the issuer's decline code, when Code is "card_declined".
	Decline string
	// Message is the processor's human-readable message.
	Message string
	// Status is the HTTP status of the answer; 0 means 402 Payment Required.
	Status int
}

// Error returns e.g. "card_declined (insufficient_funds): Your card has
// insufficient funds."
func (e *CardError) Error() string {
	if e == nil {
		return "card error <nil>"
	}
	s := e.Code
	if e.Decline != "" {
		s += " (" + e.Decline + ")"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// StatusCode returns the answer's HTTP status, 402 by default.
func (e *CardError) StatusCode() int {
	if e == nil || e.Status == 0 {
		return http.StatusPaymentRequired
	}
	return e.Status
}

// DeclineCode returns the most specific code: the issuer's decline code when
// there is one, else the processor's error code.
func (e *CardError) DeclineCode() string {
	if e == nil {
		return ""
	}
	if e.Decline != "" {
		return e.Decline
	}
	return e.Code
}

// TimeoutError is a call that got no answer in time. It reports Timeout() ==
// true, like net.Error timeouts do.
type TimeoutError struct {
	// Op names what timed out, e.g. "POST /v1/charges".
	Op string
	// After is how long the caller waited.
	After time.Duration
}

// Error returns e.g. "POST /v1/charges: timed out after 30s".
func (e *TimeoutError) Error() string {
	if e == nil {
		return "timeout <nil>"
	}
	return fmt.Sprintf("%s: timed out after %s", e.Op, e.After)
}

// Timeout reports true.
func (e *TimeoutError) Timeout() bool { return true }

// retryAfterError attaches a Retry-After hint to an error.
type retryAfterError struct {
	err   error
	after time.Duration
}

func (e *retryAfterError) Error() string             { return e.err.Error() }
func (e *retryAfterError) Unwrap() error             { return e.err }
func (e *retryAfterError) RetryAfter() time.Duration { return e.after }

// WithRetryAfter wraps err with a hint that the operation may be tried again
// after d, read by the classifier through a RetryAfter() method.
func WithRetryAfter(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &retryAfterError{err: err, after: d}
}
