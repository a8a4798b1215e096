package faults

import (
	"strconv"
	"time"

	"github.com/faultline/faultline/reference/classify"
)

// Entry describes one model of the catalogue, for the reference page, the
// scenario file's JSON Schema and "did you mean" hints.
type Entry struct {
	// Name is the model's catalogue name, as New takes it.
	Name string
	// Summary says in a sentence what the model does to a call.
	Summary string
	// Class is the true class of the errors injected with the default
	// parameters (zero for latency, crashes and stalls).
	Class classify.Class
	// Targets lists the target kinds the model may be applied to.
	Targets []TargetKind
	// Params are the model's parameters, in field order.
	Params []Param
}

// Param describes one parameter of a model.
type Param struct {
	// Name is the parameter as written in scenario files: the Go field's
	// name in lowerCamelCase ("chargedProbability").
	Name string
	// Type is "duration", "float", "int", "bool", "string" or "[]string".
	// Durations are written like "1.5s" and must be whole milliseconds.
	Type string
	// Default is the value the zero parameter takes, as written in a
	// scenario file; "" when there is none or it depends on other
	// parameters (Doc says how).
	Default string
	// Enum lists the allowed values when they are few, else nil.
	Enum []string
	// Doc says what the parameter means and what values it takes.
	Doc string
}

// catalogue is the models' zero values, in catalogue order.
func catalogue() []Model {
	return []Model{
		GatewayTimeout{}, Latency{}, HTTPStatus{}, AuthFailure{}, CardDeclined{}, RateLimit{},
		Indeterminate5xx{}, Flapping{}, Outage{}, StoreOutage{}, SinkOutage{},
		WorkerCrash{}, WorkerStall{}, SlowStore{}, Interleave{},
		GracefulStop{},
	}
}

func modelNames() []string {
	ms := catalogue()
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = m.Name()
	}
	return names
}

// New returns the zero model (every parameter at its default) of the
// catalogue name, e.g. "gateway-timeout" (case-insensitive; "_" may stand
// for "-"). An unknown name is a *NameError listing the known names and
// suggesting the closest.
func New(name string) (Model, error) {
	n := normalize(name)
	for _, m := range catalogue() {
		if m.Name() == n {
			return m, nil
		}
	}
	return nil, newNameError("fault model", name, modelNames())
}

func dur(d time.Duration) string { return d.String() }

// Catalogue describes every model, in a stable order: gateway-timeout,
// latency, http-status, auth-failure, card-declined, rate-limit,
// indeterminate-5xx, flapping, outage, store-outage, sink-outage,
// worker-crash, worker-stall, slow-store, interleave, graceful-stop.
func Catalogue() []Entry {
	summaries := map[string]struct {
		summary string
		params  []Param
	}{
		"gateway-timeout": {"The dependency does not answer: the caller waits `after` and gets a timeout; the request may have gone through (indeterminate).", []Param{
			{Name: "op", Type: "string", Doc: "What timed out, as the error names it, e.g. \"POST /v1/charges\"; empty means the dependency's name."},
			{Name: "after", Type: "duration", Default: dur(DefaultTimeoutAfter), Doc: "How long the caller waits before the timeout."},
			{Name: "chargedProbability", Type: "float", Default: "0", Doc: "Chance in [0,1] that the request took effect although it timed out."},
		}},
		"latency": {"Calls succeed, slowly: each takes an extra latency drawn from a distribution, rounded to whole milliseconds.", []Param{
			{Name: "distribution", Type: "string", Default: LatencyConstant, Enum: append([]string(nil), distributions...), Doc: "The distribution of the added latency."},
			{Name: "mean", Type: "duration", Default: dur(DefaultLatencyMean), Doc: "The mean (constant: the latency itself)."},
			{Name: "min", Type: "duration", Default: "0s", Doc: "The least latency (uniform: the low end)."},
			{Name: "max", Type: "duration", Doc: "The greatest latency; none by default, except for uniform, where it is 2×mean."},
			{Name: "stdDev", Type: "duration", Doc: "The standard deviation of normal and lognormal; mean/4 (normal) or mean/2 (lognormal) by default."},
		}},
		"http-status": {"The dependency answers with an HTTP error status; the rate is the schedule's probability. The true class follows the status (429 rate-limited, 401/403/407 critical, 408 and 5xx transient, other 4xx permanent).", []Param{
			{Name: "code", Type: "int", Default: strconv.Itoa(DefaultStatus), Doc: "The status, 400..599."},
			{Name: "body", Type: "string", Doc: "An excerpt of the answer's body."},
			{Name: "retryAfter", Type: "duration", Default: "0s", Doc: "When above 0, a Retry-After header (whole seconds, rounded up) and hint."},
		}},
		"auth-failure": {"The dependency refuses the credentials (401 or 403): critical, a person must act.", []Param{
			{Name: "code", Type: "int", Default: "401", Enum: []string{"401", "403"}, Doc: "The status."},
			{Name: "body", Type: "string", Default: DefaultAuthBody, Doc: "The answer's body; never a real credential."},
		}},
		"card-declined": {"The card processor declines the charge with a decline code drawn from `codes`: permanent, except the retryable codes (try_again_later, processing_error, ...), which are transient.", []Param{
			{Name: "codes", Type: "[]string", Default: "[" + DefaultDeclineCode + "]", Doc: "The issuer's decline codes to draw from, uniformly."},
		}},
		"rate-limit": {"The dependency answers 429 with a Retry-After.", []Param{
			{Name: "retryAfter", Type: "duration", Default: dur(DefaultRetryAfter), Doc: "The dependency's hint; the header carries it in whole seconds, rounded up."},
		}},
		"indeterminate-5xx": {"The dependency answers a 5xx after the request may have taken effect (the answer was lost): indeterminate.", []Param{
			{Name: "code", Type: "int", Default: strconv.Itoa(DefaultIndeterminateStatus), Doc: "The status, 500..599."},
			{Name: "chargedProbability", Type: "float", Default: "1", Doc: "Chance in [0,1] that the request took effect; 0 means 1 (see notCharged)."},
			{Name: "notCharged", Type: "bool", Default: "false", Doc: "The request never takes effect (chargedProbability must then be 0)."},
		}},
		"flapping": {"The primary goes down for `duty` of every `period` (each down-phase jittered) and answers 5xx while down: transient.", []Param{
			{Name: "period", Type: "duration", Default: dur(DefaultFlappingPeriod), Doc: "The length of one down-and-up cycle."},
			{Name: "duty", Type: "float", Default: strconv.FormatFloat(DefaultFlappingDuty, 'g', -1, 64), Doc: "The fraction of each period the primary is down, in (0,1]."},
			{Name: "jitter", Type: "duration", Default: "0s", Doc: "Shifts each down-phase by up to ±jitter; at most period/2."},
			{Name: "code", Type: "int", Default: "503", Doc: "The status answered while down, 500..599."},
		}},
		"outage": {"The dependency, store or receiver is down: connections refused, or every call answered with a 5xx. Transient.", []Param{
			{Name: "code", Type: "int", Default: "0", Doc: "0 for connection refused, else the status answered, 500..599."},
		}},
		"store-outage": {"The queue store or the DLQ store is unreachable: connections refused. Transient.", nil},
		"sink-outage": {"The alert receiver cannot take deliveries: connections refused, 429 with a Retry-After, or 5xx.", []Param{
			{Name: "code", Type: "int", Default: "0", Doc: "0 for connection refused, 429, or a status in 500..599."},
			{Name: "retryAfter", Type: "duration", Doc: "When above 0, a Retry-After header and hint; for a 429, 1s by default."},
		}},
		"worker-crash": {"The worker process dies at the start of each of the fault's windows (with `schedule.when`, at the first instant in the window it is in that state, e.g. mid-call at a dependency); a new one starts `restartAfter` later. Its job in flight, and any dead letter it kept in memory (the held set full), come back when their leases expire and run again.", []Param{
			{Name: "restartAfter", Type: "duration", Default: "0s", Doc: "How long until the worker is back; 0 means at once."},
		}},
		"worker-stall": {"The worker process freezes at the start of each of the fault's windows (with `schedule.when`, at the first instant in the window it is in that state, e.g. mid-call at a dependency): its in-flight completions arrive `for` later.", []Param{
			{Name: "for", Type: "duration", Default: dur(DefaultStall), Doc: "How long the worker freezes."},
		}},
		"interleave": {"Another client writes to the DLQ store inside one multi-step operation (a bulk requeue or delete): after its `afterStep`-th step (0: before it picks its entries; n: after its n-th batch) the operation fails (a lost connection: transient) or is canceled, or another client deletes, edits, requeues or dead-letters again the next entry the operation picked. It strikes on every store (the in-memory store and the Redis store through their step hooks; step 0 the simulator plays itself), in the simulator only: a drill's proxy cannot time it. No call outside an operation hits it.", []Param{
			{Name: "operation", Type: "string", Default: OpRequeueMatching, Enum: append([]string(nil), interleaveOps...), Doc: "The operation struck."},
			{Name: "afterStep", Type: "int", Default: "0", Doc: "The step after which the other client writes: 0 before the pick, n after the n-th batch."},
			{Name: "write", Type: "string", Default: WriteFail, Enum: append([]string(nil), interleaveWrites...), Doc: "What happens: the operation fails (a lost connection: transient) or is canceled; or another client deletes, edits the payload of, requeues, or dead-letters again at the operation's own instant the next entry the operation picked (before the pick: the newest it would pick)."},
		}},
		"graceful-stop": {"The worker process is told to stop (a SIGTERM) at the start of each of the fault's windows (with `schedule.when`, at the first instant in the window it is in that state): its attempt in flight is canceled as a shutdown and the job handed back without using an attempt; a new process starts `restartAfter` later.", []Param{
			{Name: "restartAfter", Type: "duration", Default: "0s", Doc: "How long until the worker is back; 0 means at once."},
		}},
		"slow-store": {"The queue store or the DLQ store answers slowly: every call takes `latency` more.", []Param{
			{Name: "latency", Type: "duration", Default: dur(DefaultSlowStoreLatency), Doc: "The added time per call."},
		}},
	}
	ms := catalogue()
	out := make([]Entry, len(ms))
	for i, m := range ms {
		s := summaries[m.Name()]
		out[i] = Entry{Name: m.Name(), Summary: s.summary, Class: m.Class(), Targets: m.Targets(), Params: s.params}
	}
	return out
}
