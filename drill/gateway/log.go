package gateway

import (
	"time"

	"github.com/faultline/faultline/reference/classify"
)

// Outcome is what became of a call, as the gateway saw it.
type Outcome string

// The outcomes.
const (
	// OutcomeOK is a success answered.
	OutcomeOK Outcome = "ok"
	// OutcomeError is an error answer sent (a status, a decline).
	OutcomeError Outcome = "error"
	// OutcomeDropped is a connection closed without an answer: a timeout's
	// hang that ended (its latency passed, the gateway closed, or it was
	// made healthy) before the caller gave up.
	OutcomeDropped Outcome = "dropped"
	// OutcomeTimeout is a caller that gave up before its answer was sent.
	OutcomeTimeout Outcome = "timeout"
	// OutcomeReplayed is a success replayed for an idempotency key already
	// charged: no new charge.
	OutcomeReplayed Outcome = "replayed"
	// OutcomeRefused is a connection closed as a refused dial (outage with
	// code 0).
	OutcomeRefused Outcome = "refused"
)

// Call is one entry of a gateway's call log.
type Call struct {
	// Seq numbers the calls of one gateway from 1, in arrival order.
	Seq int64 `json:"seq"`
	// At is the call's scenario offset (Config.Now at arrival).
	At time.Duration `json:"at"`
	// Wall is the wall-clock instant of arrival.
	Wall time.Time `json:"wall"`
	// Job and Key are the job's ID and the idempotency key sent.
	Job string `json:"job,omitempty"`
	Key string `json:"key,omitempty"`
	// Worker is the worker process that made the call (X-Faultline-Worker),
	// "" when it did not say.
	Worker string `json:"worker,omitempty"`
	// Fault names the fault that decided the call, "" for none.
	Fault string `json:"fault,omitempty"`
	// Class is the true class of the error injected; None for none.
	Class classify.Class `json:"class"`
	// Latency is the scenario-time latency the fault added (slept for
	// Latency/Scale; a timeout's hang).
	Latency time.Duration `json:"latency,omitempty"`
	// Status is the HTTP status sent; 0 when no answer was (a timeout, a
	// drop, a refusal; a 103 hint does not count).
	Status int `json:"status,omitempty"`
	// Outcome is what became of the call; "" while it is in flight.
	Outcome Outcome `json:"outcome"`
	// TookEffect says the call took effect: a success, or an error whose
	// effect went through (Effect.Charged: a charged timeout or 5xx).
	TookEffect bool `json:"tookEffect"`
	// Charge is, on a payment dependency, the number of this call's charge
	// for its payment (its idempotency key, or its job without one): 1 for
	// the first, 2 for a double charge; 0 when it charged nothing (no
	// effect, or a replay).
	Charge int `json:"charge,omitempty"`
	// Replayed says the call took effect on a key already charged and the
	// gateway replayed the first charge instead of charging again.
	Replayed bool `json:"replayed,omitempty"`
	// RetryAfter is the Retry-After header sent, whole seconds of
	// scenario time; RetryAfterRounded says the hint was not whole seconds
	// and was rounded up.
	RetryAfter        string `json:"retryAfter,omitempty"`
	RetryAfterRounded bool   `json:"retryAfterRounded,omitempty"`
	// Healthy says the gateway was healthy (SetHealthy): no fault asked.
	Healthy bool `json:"healthy,omitempty"`
	// Took is the wall time from arrival to the outcome.
	Took time.Duration `json:"took"`
}
