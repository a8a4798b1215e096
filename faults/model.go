package faults

import (
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/failure"
)

// Call is one call a fault may hit.
type Call struct {
	// At is the call's offset from the scenario start (virtual time in the
	// simulator).
	At time.Duration
	// JobID is the job making the call, "" for infrastructure calls.
	JobID string
	// Task is the task of the job making the call, "" when the call does
	// not say (Schedule.Tasks then never selects it).
	Task string
	// Attempt is the number of the job's attempt making the call: 1 + the
	// attempts that used the retry budget before it (job.Job.Attempts + 1
	// as the attempt begins; a released or lease-lost attempt does not
	// count). 0 when the call does not say (Schedule.Attempts then never
	// selects it).
	Attempt int
}

// Effect is what happens to one call. The zero Effect is "nothing happens".
// Err values may be shared between calls (the Injector builds them once per
// fault): callers must not modify them.
type Effect struct {
	// Err is the error the call returns; nil means the call succeeds (after
	// Latency).
	Err error
	// Latency is the extra time the call takes before it returns: a
	// timeout's wait, a latency draw, a slow store.
	Latency time.Duration
	// Class is the true class of Err, what a perfect classifier would say;
	// zero when Err is nil. Scoring a classifier compares its verdict with
	// this.
	Class classify.Class
	// Charged says the call took effect although it reported an error (an
	// indeterminate 5xx or timeout after the charge went through).
	Charged bool
	// Fault names the fault that produced Err (or, without an error, the
	// crash, the stall or the last latency); "" if none. Set by the
	// Injector; a model's Apply leaves it empty.
	Fault string
	// Crash says the worker crashes now (Worker targets).
	Crash bool
	// RestartAfter is, with Crash or Stop, how long until the worker is
	// back.
	RestartAfter time.Duration
	// Stop says the worker is stopped gracefully now (Worker targets): its
	// attempt in flight is canceled as a shutdown.
	Stop bool
	// StallFor is how long the worker freezes (Worker targets): its
	// in-flight completions arrive this much later.
	StallFor time.Duration
}

// Model says what happens to a call hit by a fault. Implementations are plain
// values whose zero parameters take documented defaults; the catalogue's
// models are in this package, and a team may add its own.
type Model interface {
	// Name is the model's catalogue name, e.g. "gateway-timeout".
	Name() string
	// Class is the true class of the errors the model injects (zero for
	// pure latency, crashes and stalls).
	Class() classify.Class
	// Targets lists the target kinds the model may be applied to.
	Targets() []TargetKind
	// Validate checks the parameters, each problem a *FieldError naming
	// the parameter as written in scenario files ("chargedProbability").
	Validate() error
	// Apply says what happens to call c; r is the fault's own random
	// stream. Apply never panics on a valid model.
	Apply(c Call, r *rand.Rand) Effect
}

// binding is what a fault knows about itself once placed in an Injector.
type binding struct {
	seed   uint64
	fault  string
	key    uint64 // NameHash(fault)
	target Target
}

// applier is a model prepared for one fault: its error values built once, so
// that applying it costs no allocation.
type applier interface {
	apply(c Call, r *rand.Rand) Effect
}

// binder is implemented by models that can prepare themselves for a fault.
// The Injector uses a model's plain Apply when it is not one.
type binder interface {
	bind(b binding) applier
}

// gater is implemented by models whose effect comes and goes with time on
// their own (a flapping primary): outside their windows the fault is not
// active, exactly as outside its schedule.
type gater interface {
	gate(b binding) *periodic
}

// modelApplier adapts a model without a binder.
type modelApplier struct{ m Model }

func (a modelApplier) apply(c Call, r *rand.Rand) Effect { return a.m.Apply(c, r) }

// fixed is an applier whose effect never varies.
type fixed struct{ eff Effect }

func (f *fixed) apply(Call, *rand.Rand) Effect { return f.eff }

// charged is a fixed error effect whose Charged flag is drawn.
type charged struct {
	eff Effect
	p   float64
}

func (f *charged) apply(_ Call, r *rand.Rand) Effect {
	e := f.eff
	e.Charged = draw(r, f.p)
	return e
}

// draw reports true with probability p, drawing only when 0 < p < 1.
func draw(r *rand.Rand, p float64) bool {
	switch {
	case p >= 1:
		return true
	case p <= 0:
		return false
	}
	return r.Float64() < p
}

// httpError builds an HTTP error answer, with a Retry-After header in whole
// seconds (rounded up) and a failure.WithRetryAfter hint when after > 0.
func httpError(code int, body string, after time.Duration, cause error) error {
	e := &failure.HTTPError{Code: code, Body: body, Err: cause}
	if after <= 0 {
		return e
	}
	secs := int64((after + time.Second - 1) / time.Second)
	e.Header = http.Header{"Retry-After": {strconv.FormatInt(secs, 10)}}
	return failure.WithRetryAfter(e, after)
}

// refused builds the error a dial to a dead host returns: a *net.OpError
// wrapping syscall.ECONNREFUSED, as the net package would.
func refused(t Target) error {
	var addr net.Addr
	if t.Name != "" {
		addr = hostAddr(t.Name)
	} else if t.Kind.valid() {
		addr = hostAddr(t.Kind.String())
	}
	return &net.OpError{Op: "dial", Net: "tcp", Addr: addr, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
}

// hostAddr names the refusing host in a refused error.
type hostAddr string

// Network returns "tcp".
func (a hostAddr) Network() string { return "tcp" }

// String returns the host's name.
func (a hostAddr) String() string { return string(a) }

// statusClass is the true class of an HTTP error status: what the default
// classifier says of it away from the payment gateway.
func statusClass(code int) classify.Class {
	switch {
	case code == http.StatusTooManyRequests:
		return classify.RateLimited
	case code == http.StatusUnauthorized, code == http.StatusForbidden, code == http.StatusProxyAuthRequired:
		return classify.Critical
	case code == http.StatusRequestTimeout, code >= 500:
		return classify.Transient
	}
	return classify.Permanent
}

// errEffect is an error effect of the given class.
func errEffect(err error, class classify.Class) Effect {
	return Effect{Err: err, Class: class}
}
