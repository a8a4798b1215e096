package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/reference/classify"
)

// Injector says what happens to a call: a *faults.Injector, made safe for
// concurrent use. A Gateway calls it from its handlers concurrently; a
// drill shares one *faults.Injector between its gateways through one
// Locked.
type Injector interface {
	Call(t faults.Target, c faults.Call) faults.Effect
}

// Locked serialises the calls to one *faults.Injector, which is not safe
// for concurrent use.
type Locked struct {
	mu sync.Mutex
	in *faults.Injector
}

var _ Injector = (*Locked)(nil)

// NewLocked returns in behind a mutex.
func NewLocked(in *faults.Injector) *Locked { return &Locked{in: in} }

// Call is in.Call under the lock.
func (l *Locked) Call(t faults.Target, c faults.Call) faults.Effect {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.in.Call(t, c)
}

// Do runs f with the injector under the lock (for CallFault, Stats, ...).
func (l *Locked) Do(f func(in *faults.Injector)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f(l.in)
}

// ScaledNow returns a scenario clock for Config.Now: the scenario offset of
// wall instant wall() is (wall() − start) × scale.
func ScaledNow(start time.Time, scale float64, wall func() time.Time) func() time.Duration {
	return func() time.Duration {
		return time.Duration(float64(wall().Sub(start)) * scale)
	}
}

// DefaultListen is the address a gateway listens on by default: loopback, a
// free port.
const DefaultListen = "127.0.0.1:0"

// Config configures one gateway.
type Config struct {
	// Name is the dependency's name; the gateway's calls are the target
	// faults.Target{Kind: faults.Dependency, Name: Name}. Required.
	Name string
	// Faults says what happens to each call. Required; called
	// concurrently.
	Faults Injector
	// Now returns the scenario offset of the current instant (the drill's
	// scaled clock). Required.
	Now func() time.Duration
	// Scale is scenario seconds per wall second, ≥ 1 (0 means 1): a latency
	// of D scenario time is slept for D/Scale.
	Scale float64
	// Payment makes every call that takes effect charge the payment of its
	// idempotency key (of its job when it has no key).
	Payment bool
	// IgnoresIdempotencyKeys makes the gateway charge again for a key
	// already charged (a broken gateway); by default it replays the first
	// charge.
	IgnoresIdempotencyKeys bool
	// Listen is the address to listen on; "" means DefaultListen.
	Listen string
}

// WithDefaults returns the config with its zero fields set to their
// defaults.
func (c Config) WithDefaults() Config {
	if c.Scale == 0 {
		c.Scale = 1
	}
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	return c
}

// Validate names the first bad field.
func (c Config) Validate() error {
	switch {
	case c.Name == "":
		return errors.New("gateway config: name: required")
	case c.Faults == nil:
		return fmt.Errorf("gateway config %s: faults: required", c.Name)
	case c.Now == nil:
		return fmt.Errorf("gateway config %s: now: required", c.Name)
	case !(c.Scale >= 1) || c.Scale > 1e9:
		return fmt.Errorf("gateway config %s: scale: must be in [1, 1e9], got %g", c.Name, c.Scale)
	}
	return nil
}

// Gateway is one dependency's fault gateway: an HTTP server with a call
// log. Its methods are safe for concurrent use.
type Gateway struct {
	cfg    Config
	target faults.Target
	srv    *http.Server

	mu       sync.Mutex
	ln       net.Listener
	log      []Call
	charges  map[string]charge // by key, or "job:"+ID without one
	nCharges int
	healthy  bool
	healed   chan struct{} // closed when SetHealthy(true) ends the faults in flight
	started  bool

	closing   chan struct{}
	closeOnce sync.Once
	inflight  sync.WaitGroup

	// busy counts each worker's calls in flight (received, their answer
	// not yet sent); hooks are OnCall's armed hooks, by worker.
	busy  map[string]int
	hooks map[string][]*hook
	// held counts HoldInFlight's holds, by worker: while a worker has one,
	// the answers of its calls in flight wait (released signals them).
	held     map[string]int
	released *sync.Cond
}

// hook is one OnCall: f, and whether a call took it or cancel disarmed it.
type hook struct {
	f                func()
	taken, cancelled bool
	done             chan struct{} // closed when f has returned
}

// charge is one payment's state.
type charge struct {
	n  int    // how many times it was charged
	id string // the first charge's id
}

// New returns a gateway for cfg, not yet listening.
func New(cfg Config) (*Gateway, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	g := &Gateway{
		cfg:     cfg,
		target:  faults.Target{Kind: faults.Dependency, Name: cfg.Name},
		charges: map[string]charge{},
		healed:  make(chan struct{}),
		closing: make(chan struct{}),
		busy:    map[string]int{},
		hooks:   map[string][]*hook{},
		held:    map[string]int{},
	}
	g.released = sync.NewCond(&g.mu)
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+CallPath, g.serveCall)
	g.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	return g, nil
}

// Start listens on cfg.Listen and serves in the background.
func (g *Gateway) Start() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.started {
		return fmt.Errorf("gateway %s: already started", g.cfg.Name)
	}
	ln, err := net.Listen("tcp", g.cfg.Listen)
	if err != nil {
		return fmt.Errorf("gateway %s: listen on %s: %w", g.cfg.Name, g.cfg.Listen, err)
	}
	g.ln, g.started = ln, true
	go func() { _ = g.srv.Serve(ln) }() // ends with ErrServerClosed at Close
	return nil
}

// URL returns the gateway's base URL, e.g. "http://127.0.0.1:41234"; ""
// before Start.
func (g *Gateway) URL() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ln == nil {
		return ""
	}
	return "http://" + g.ln.Addr().String()
}

// Name returns the dependency's name.
func (g *Gateway) Name() string { return g.cfg.Name }

// Close stops the gateway: calls hanging or delayed are dropped at once
// (their outcome "dropped"), then the server shuts down; ctx bounds the
// wait. The call log stays readable.
func (g *Gateway) Close(ctx context.Context) error {
	g.closeOnce.Do(func() { close(g.closing) })
	err := g.srv.Shutdown(ctx)
	if err != nil {
		_ = g.srv.Close()
	}
	done := make(chan struct{})
	go func() { g.inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		if err == nil {
			err = ctx.Err()
		}
	}
	if err != nil {
		return fmt.Errorf("close gateway %s: %w", g.cfg.Name, err)
	}
	return nil
}

// SetHealthy turns the faults off (true: every call is answered OK with no
// fault, and still logged; the calls hanging or delayed by a fault are
// released at once, a hang dropped, a delay answered) or back on (false).
// The abort guard and the cleanup of a drill use it.
func (g *Gateway) SetHealthy(healthy bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if healthy == g.healthy {
		return
	}
	g.healthy = healthy
	if healthy {
		close(g.healed)
	} else {
		g.healed = make(chan struct{})
	}
}

// Calls returns a copy of the call log, in arrival order. A call still in
// flight has Outcome "".
func (g *Gateway) Calls() []Call {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]Call(nil), g.log...)
}

// InFlight reports whether worker (a worker process's name, as its calls
// say in X-Faultline-Worker) has a call in flight at the gateway: received,
// its answer not yet sent. A worker fault aimed at a state (schedule.when:
// mid-call) asks it.
func (g *Gateway) InFlight(worker string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return worker != "" && g.busy[worker] > 0
}

// HoldInFlight holds the answers of worker's calls in flight until the
// release it returns is called (ok false, and nothing held, when worker has
// no call in flight): a fault aimed at a worker mid-call that found the
// call already in flight strikes while its answer waits, as OnCall's hook
// does for a call yet to come — never just after the answer left.
func (g *Gateway) HoldInFlight(worker string) (release func(), ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if worker == "" || g.busy[worker] == 0 {
		return nil, false
	}
	g.held[worker]++
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			if g.held[worker]--; g.held[worker] <= 0 {
				delete(g.held, worker)
			}
			g.released.Broadcast()
			g.mu.Unlock()
		})
	}, true
}

// OnCall arms a one-shot hook on worker's calls: f runs on the first call
// of worker the gateway receives from now on, after the call is logged and
// before its answer is sent, and the answer waits for f to return — so
// that f acts while the worker waits for its answer, however quickly the
// gateway would answer. A call already in flight does not run it (InFlight
// tells of those). The cancel it returns disarms the hook and reports true
// when f will never run; false means f ran, or runs now, and cancel has
// waited for it to return.
func (g *Gateway) OnCall(worker string, f func()) (cancel func() bool) {
	k := &hook{f: f, done: make(chan struct{})}
	g.mu.Lock()
	g.hooks[worker] = append(g.hooks[worker], k)
	g.mu.Unlock()
	return func() bool {
		g.mu.Lock()
		switch {
		case k.cancelled:
			g.mu.Unlock()
			return true
		case !k.taken:
			hs := g.hooks[worker]
			for j, h := range hs {
				if h == k {
					g.hooks[worker] = append(hs[:j:j], hs[j+1:]...)
					break
				}
			}
			if len(g.hooks[worker]) == 0 {
				delete(g.hooks, worker)
			}
			k.cancelled = true
			g.mu.Unlock()
			return true
		}
		g.mu.Unlock()
		<-k.done
		return false
	}
}

// request is a call's JSON body (optional).
type request struct {
	Job            string `json:"job"`
	IdempotencyKey string `json:"idempotencyKey"`
	Task           string `json:"task,omitempty"`
	Attempt        int    `json:"attempt,omitempty"`
	Worker         string `json:"worker,omitempty"`
}

// serveCall answers one call.
func (g *Gateway) serveCall(w http.ResponseWriter, r *http.Request) {
	g.inflight.Add(1)
	defer g.inflight.Done()

	var body request
	if b, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10)); len(b) > 0 {
		_ = json.Unmarshal(b, &body) // the headers are enough
	}
	job, key := r.Header.Get(HeaderJob), r.Header.Get(HeaderIdempotencyKey)
	if job == "" {
		job = body.Job
	}
	if key == "" {
		key = body.IdempotencyKey
	}
	task, attempt := callerOf(r.Header, body)
	worker := workerOf(r.Header, body)

	// Decide and book under the lock, so the log's order is the order the
	// injector saw.
	g.mu.Lock()
	at := g.cfg.Now()
	var eff faults.Effect
	healthy, healed := g.healthy, g.healed
	if !healthy {
		eff = g.cfg.Faults.Call(g.target, faults.Call{At: at, JobID: job, Task: task, Attempt: attempt})
	}
	i := len(g.log)
	c := Call{
		Seq: int64(i + 1), At: at, Wall: time.Now(), Job: job, Key: key, Worker: worker,
		Fault: eff.Fault, Class: eff.Class, Latency: eff.Latency, Healthy: healthy,
		TookEffect: eff.Err == nil || eff.Charged,
	}
	var chargeID string
	if c.TookEffect && g.cfg.Payment {
		chargeID, c.Charge, c.Replayed = g.chargeLocked(job, key)
	}
	var p plan
	if eff.Err != nil {
		p = planFor(eff.Err)
		c.RetryAfter, c.RetryAfterRounded = p.header.Get("Retry-After"), p.rounded
	}
	g.log = append(g.log, c)
	var hooks []*hook
	if worker != "" {
		g.busy[worker]++
		hooks = g.hooks[worker]
		delete(g.hooks, worker)
		for _, k := range hooks {
			k.taken = true
		}
	}
	g.mu.Unlock()
	// The hooks armed on the worker act now, while its call is in flight:
	// the answer waits for them.
	for _, k := range hooks {
		k.f()
		close(k.done)
	}

	h := w.Header()
	h.Set(HeaderDependency, g.cfg.Name)
	if eff.Fault != "" {
		h.Set(HeaderFault, eff.Fault)
	}
	if eff.Class != classify.None {
		h.Set(HeaderClass, eff.Class.String())
	}
	wait := g.wall(eff.Latency)

	// finish logs the outcome before it is sent, so that a caller who has
	// its answer finds it in the log.
	finish := func(o Outcome, status int) {
		g.mu.Lock()
		for worker != "" && g.held[worker] > 0 { // HoldInFlight: the answer waits
			g.released.Wait()
		}
		g.log[i].Outcome, g.log[i].Status, g.log[i].Took = o, status, time.Since(c.Wall)
		if worker != "" {
			if g.busy[worker]--; g.busy[worker] <= 0 {
				delete(g.busy, worker)
			}
		}
		g.mu.Unlock()
	}
	switch {
	case eff.Err != nil && (p.act == actHang || p.act == actRefuse):
		outcome := OutcomeRefused
		if p.act == actHang {
			outcome = OutcomeDropped
			h.Set(HeaderOutcome, string(OutcomeTimeout))
			if p.op != "" {
				h.Set(HeaderOp, p.op)
			}
		} else {
			h.Set(HeaderOutcome, string(OutcomeRefused))
		}
		if r.Header.Get(HeaderHints) == "1" {
			w.WriteHeader(http.StatusEarlyHints)
		}
		if g.sleep(r.Context(), healed, wait) == errGaveUp {
			finish(OutcomeTimeout, 0)
			return
		}
		finish(outcome, 0)
		drop(w)
		return
	}
	switch err := g.sleep(r.Context(), healed, wait); err {
	case errGaveUp:
		finish(OutcomeTimeout, 0)
		return
	case errClosing:
		finish(OutcomeDropped, 0)
		drop(w)
		return
	}
	if eff.Err != nil {
		for k, vs := range p.header {
			h[k] = vs
		}
		finish(OutcomeError, p.status)
		w.WriteHeader(p.status)
		_, _ = w.Write(p.body)
		return
	}
	h.Set("Content-Type", "application/json")
	var out any = map[string]any{"ok": true}
	if g.cfg.Payment {
		out = map[string]any{"id": chargeID, "object": "charge", "status": "succeeded", "idempotency_key": key}
	}
	outcome := OutcomeOK
	if c.Replayed {
		outcome = OutcomeReplayed
		h.Set(HeaderReplayed, "true")
	}
	finish(outcome, http.StatusOK)
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(out)
}

// chargeLocked books a call that took effect on a payment: a new charge, or
// a replay of the first for a key already charged. It returns the charge's
// id, the charge's number for its payment (0 for a replay) and whether it
// was a replay.
func (g *Gateway) chargeLocked(job, key string) (id string, n int, replayed bool) {
	bucket := key
	if bucket == "" {
		bucket = "job:" + job
	}
	ch := g.charges[bucket]
	if ch.n > 0 && key != "" && !g.cfg.IgnoresIdempotencyKeys {
		return ch.id, 0, true
	}
	g.nCharges++
	ch.n++
	id = "ch_" + strconv.Itoa(g.nCharges)
	if ch.id == "" {
		ch.id = id
	}
	g.charges[bucket] = ch
	return id, ch.n, false
}

// wall is scenario duration d in wall time.
func (g *Gateway) wall(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return time.Duration(float64(d) / g.cfg.Scale)
}

var (
	errGaveUp  = errors.New("the caller gave up")
	errClosing = errors.New("the gateway is closing")
)

// sleep waits d; it returns errGaveUp when the caller went away first,
// errClosing when the gateway closes first, and nil when d passed or the
// gateway was made healthy.
func (g *Gateway) sleep(ctx context.Context, healed <-chan struct{}, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-healed:
		return nil
	case <-ctx.Done():
		return errGaveUp
	case <-g.closing:
		return errClosing
	}
}

// drop closes the call's connection without an answer.
func drop(w http.ResponseWriter) {
	if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
		_ = conn.Close()
		return
	}
	panic(http.ErrAbortHandler) // no hijacking (HTTP/2): abort the stream
}
