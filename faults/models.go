package faults

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"
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
