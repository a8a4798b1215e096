package gateway

import (
	"encoding/json"
	"errors"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/failure"
)

// The wire protocol's path and headers.
const (
	// CallPath is the path a call is POSTed to.
	CallPath = "/call"
	// HeaderJob carries the calling job's ID.
	HeaderJob = "X-Faultline-Job"
	// HeaderTask carries the calling job's task, for faults whose
	// schedule names tasks; a call without it is never hit by them.
	HeaderTask = "X-Faultline-Task"
	// HeaderAttempt carries the number of the calling job's attempt (1 is
	// its first: the attempts that used the retry budget before it, plus
	// one), for faults whose schedule names attempts; a call without it
	// is never hit by them.
	HeaderAttempt = "X-Faultline-Attempt"
	// HeaderWorker carries the name of the worker process making the call
	// (w1..wN), so that the gateway knows which worker has a call in
	// flight (Gateway.InFlight): a worker fault aimed at a state
	// (schedule.when) waits for it. A call without it is no worker's.
	HeaderWorker = "X-Faultline-Worker"
	// HeaderIdempotencyKey carries the call's idempotency key.
	HeaderIdempotencyKey = "Idempotency-Key"
	// HeaderFault names the fault that decided the answer ("" or absent:
	// none).
	HeaderFault = "X-Faultline-Fault"
	// HeaderClass is the true class of the answer's error, as
	// classify.Class names it; absent for a success.
	HeaderClass = "X-Faultline-Class"
	// HeaderDependency names the dependency that answered.
	HeaderDependency = "X-Faultline-Dependency"
	// HeaderRetryAfter is the exact Retry-After hint, a Go duration of
	// scenario time ("1.5s"); Retry-After carries it in whole seconds.
	HeaderRetryAfter = "X-Faultline-Retry-After"
	// HeaderError names a sentinel of package failure the error wraps:
	// "authentication", "invalid-input" or "missing-key".
	HeaderError = "X-Faultline-Error"
	// HeaderOutcome, in a 103 hint, says what will become of a call that
	// gets no answer: "timeout" (the gateway hangs) or "refused".
	HeaderOutcome = "X-Faultline-Outcome"
	// HeaderOp, in a timeout's 103 hint, names what timed out (the
	// failure.TimeoutError's Op).
	HeaderOp = "X-Faultline-Op"
	// HeaderHints, sent as "1" by a caller that reads 103 Early Hints (the
	// Client does), asks for a hint before an answer that never comes. A
	// caller that does not ask gets none: many HTTP clients (Python's
	// http.client among them) take a 103 for the final answer.
	HeaderHints = "X-Faultline-Hints"
	// HeaderReplayed is set to "true" on an answer replayed for an
	// idempotency key already charged (Stripe's name for it).
	HeaderReplayed = "Idempotent-Replayed"
)

// sentinels are the errors of package failure carried by HeaderError.
var sentinels = []struct {
	name string
	err  error
}{
	{"authentication", failure.ErrAuthentication},
	{"invalid-input", failure.ErrInvalidInput},
	{"missing-key", failure.ErrMissingKey},
}

// action is what the gateway does with a call.
type action uint8

const (
	actAnswer action = iota // send status, header and body
	actHang                 // 103 hint, wait, drop
	actRefuse               // 103 hint, drop
)

// plan is the HTTP form of an Effect's error.
type plan struct {
	act     action
	status  int
	header  http.Header
	body    []byte
	op      string // a timeout's Op
	rounded bool   // the Retry-After header was rounded up from the hint
}

// cardBody is the Stripe-like body of a card error.
type cardBody struct {
	Error cardDetail `json:"error"`
}

type cardDetail struct {
	Type        string `json:"type"`
	Code        string `json:"code"`
	DeclineCode string `json:"decline_code,omitempty"`
	Message     string `json:"message,omitempty"`
}

// planFor turns an Effect's error into an HTTP answer. It reads the error
// the way the classifier does (a Timeout() method, a DeclineCode, a
// StatusCode, a RetryAfter hint), so a team's own models answer sensibly;
// an error carrying none of them is a 500 with its text as the body.
func planFor(err error) plan {
	if t, ok := errors.AsType[classify.Timeouter](err); ok && t.Timeout() {
		p := plan{act: actHang}
		if te, ok := errors.AsType[*failure.TimeoutError](err); ok {
			p.op = te.Op
		}
		return p
	}
	if op, ok := errors.AsType[*net.OpError](err); ok && op.Op == "dial" {
		return plan{act: actRefuse}
	}
	p := plan{act: actAnswer, status: http.StatusInternalServerError, header: http.Header{}}
	if s, ok := errors.AsType[classify.StatusCoder](err); ok && s.StatusCode() >= 400 && s.StatusCode() <= 599 {
		p.status = s.StatusCode()
	}
	switch {
	case hasDecline(err):
		d := cardDetail{Type: "card_error", Code: "card_declined"}
		if ce, ok := errors.AsType[*failure.CardError](err); ok {
			d.Code, d.DeclineCode, d.Message = ce.Code, ce.Decline, ce.Message
			p.status = ce.StatusCode()
		} else if dc, ok := errors.AsType[classify.DeclineCoder](err); ok {
			d.DeclineCode, d.Message = dc.DeclineCode(), dc.Error()
			if _, ok := errors.AsType[classify.StatusCoder](err); !ok {
				p.status = http.StatusPaymentRequired
			}
		}
		p.body, _ = json.Marshal(cardBody{Error: d})
		p.header.Set("Content-Type", "application/json")
	default:
		if he, ok := errors.AsType[*failure.HTTPError](err); ok {
			for k, vs := range he.Header {
				p.header[k] = append([]string(nil), vs...)
			}
			p.body = []byte(he.Body)
		} else {
			p.body = []byte(err.Error())
		}
		p.header.Set("Content-Type", "text/plain; charset=utf-8")
	}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			p.header.Set(HeaderError, s.name)
			break
		}
	}
	if ra, ok := errors.AsType[classify.RetryAfterer](err); ok {
		d := max(ra.RetryAfter(), 0)
		p.header.Set(HeaderRetryAfter, d.String())
		if p.header.Get("Retry-After") == "" {
			p.header.Set("Retry-After", strconv.FormatInt(ceilSeconds(d), 10))
		}
	} else if rh, ok := errors.AsType[classify.RetryAfterHeaderer](err); ok && rh.RetryAfterHeader() != "" {
		p.header.Set("Retry-After", rh.RetryAfterHeader())
	}
	if ra := p.header.Get(HeaderRetryAfter); ra != "" {
		exact, _ := time.ParseDuration(ra)
		secs, err := strconv.ParseInt(p.header.Get("Retry-After"), 10, 64)
		p.rounded = err != nil || time.Duration(secs)*time.Second != exact
	}
	return p
}

func hasDecline(err error) bool {
	_, ok := errors.AsType[classify.DeclineCoder](err)
	return ok
}

// ceilSeconds is d in whole seconds, rounded up.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	s := int64(d / time.Second)
	if d%time.Second != 0 && s < math.MaxInt64 {
		s++
	}
	return s
}

// errorFor rebuilds the error of an answer with status code, header h and
// body b: the error the model would have returned in the simulator.
func errorFor(code int, h http.Header, b []byte) error {
	var err error
	var cb cardBody
	if json.Unmarshal(b, &cb) == nil && cb.Error.Type == "card_error" {
		ce := &failure.CardError{Code: cb.Error.Code, Decline: cb.Error.DeclineCode, Message: cb.Error.Message}
		if code != http.StatusPaymentRequired {
			ce.Status = code
		}
		err = ce
	} else {
		he := &failure.HTTPError{Code: code, Header: h, Body: strings.TrimSpace(string(b))}
		if name := h.Get(HeaderError); name != "" {
			for _, s := range sentinels {
				if s.name == name {
					he.Err = s.err
				}
			}
		}
		err = he
	}
	if ra := h.Get(HeaderRetryAfter); ra != "" {
		if d, perr := time.ParseDuration(ra); perr == nil {
			err = failure.WithRetryAfter(err, d)
		}
	}
	return err
}

// hostAddr names the refusing dependency in a refused dial's error, as the
// simulator's refusal does.
type hostAddr string

// Network returns "tcp".
func (a hostAddr) Network() string { return "tcp" }

// String returns the dependency's name.
func (a hostAddr) String() string { return string(a) }

// callerOf reads the task and attempt a call says it comes from: the
// headers, else the body; an attempt that is not a positive number is 0
// (no attempt), which no attempts-limited fault hits.
func callerOf(h http.Header, body request) (task string, attempt int) {
	task = h.Get(HeaderTask)
	if task == "" {
		task = body.Task
	}
	attempt = body.Attempt
	if v := h.Get(HeaderAttempt); v != "" {
		attempt, _ = strconv.Atoi(strings.TrimSpace(v))
	}
	return task, max(attempt, 0)
}

// workerOf reads the worker a call says it comes from: the header, else
// the body.
func workerOf(h http.Header, body request) string {
	if w := strings.TrimSpace(h.Get(HeaderWorker)); w != "" {
		return w
	}
	return body.Worker
}
