package receiver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/reference/failure"
)

// Defaults and limits of a Receiver.
const (
	// DefaultListen is the address a Receiver listens on when its config
	// names none: loopback, a free port.
	DefaultListen = "127.0.0.1:0"
	// DefaultScale is the time scale when the config names none: scenario
	// time runs at wall-clock speed.
	DefaultScale = 1.0
	// MaxBody is the largest payload a Receiver takes; a larger one is
	// answered 413 and recorded without its body.
	MaxBody = 1 << 20
	// readHeaderTimeout bounds how long a client may take to send its
	// request headers.
	readHeaderTimeout = 10 * time.Second
)

// Injector says what an alert-sink fault does to one delivery. A
// *faults.Injector is one, but it is not safe for concurrent use: the drill
// hands every Receiver (and every gateway) a wrapper that serialises its
// calls. A Receiver calls it once per delivery, while holding its own lock,
// so the order of its calls is the order of Seq.
type Injector interface {
	// Call returns what happens to call c on target t.
	Call(t faults.Target, c faults.Call) faults.Effect
}

var _ Injector = (*faults.Injector)(nil)

// Kind is the shape of payload a Receiver takes and answers like.
type Kind int

// The kinds. The zero value is no kind, which Validate refuses.
const (
	// Slack is a Slack incoming webhook: a slack-go WebhookMessage (text,
	// blocks, attachments), answered 200 "ok".
	Slack Kind = iota + 1
	// Webhook is the PagerDuty-shaped JSON of sink.Webhook (a
	// sink.WebhookBody), answered 202 with an Events v2 style success.
	Webhook
)

// String returns "slack" or "webhook".
func (k Kind) String() string {
	switch k {
	case Slack:
		return "slack"
	case Webhook:
		return "webhook"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// ParseKind reads a kind's name: "slack", or "webhook" (also "pagerduty"),
// case-insensitive.
func ParseKind(s string) (Kind, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "slack":
		return Slack, nil
	case "webhook", "pagerduty":
		return Webhook, nil
	}
	return 0, fmt.Errorf("receiver kind %q: %w", s, ErrUnknownKind)
}

// Config configures a Receiver.
type Config struct {
	// Name is the receiver's name, as the alerter's routes name it: faults
	// aimed at faults.Target{Kind: faults.AlertSink, Name: Name} (or at
	// every alert sink) hit it. Required.
	Name string
	// Kind is the payload shape. Required.
	Kind Kind
	// Faults decides each delivery's fate. Optional: nil accepts
	// everything.
	Faults Injector
	// Now returns the scenario offset of the present instant, the time
	// the faults' schedules read and Notification.AtMs records. Optional:
	// nil means the wall-clock time since Start, times Scale.
	Now func() time.Duration
	// Scale is how many times faster than the wall clock scenario time
	// runs (a drill's --time-scale): a fault's Latency, in scenario time,
	// is held for Latency/Scale of wall time. Zero means DefaultScale.
	Scale float64
	// Listen is the address to listen on. Zero means DefaultListen; a
	// drill keeps its receivers on loopback.
	Listen string
}

// WithDefaults returns the config with its zero fields set to the
// defaults.
func (c Config) WithDefaults() Config {
	if c.Scale == 0 {
		c.Scale = DefaultScale
	}
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	return c
}

// ConfigError is a Config that cannot work; it names the field.
type ConfigError struct {
	// Field is the config field, e.g. "Kind".
	Field string
	// Reason says what is wrong with it.
	Reason string
}

// Error returns e.g. "receiver config: Kind: is required".
func (e *ConfigError) Error() string { return "receiver config: " + e.Field + ": " + e.Reason }

// Validate returns a *ConfigError naming the first bad field, or nil.
func (c Config) Validate() error {
	switch {
	case c.Name == "":
		return &ConfigError{Field: "Name", Reason: "is required (the alert-sink target name)"}
	case c.Kind != Slack && c.Kind != Webhook:
		return &ConfigError{Field: "Kind", Reason: fmt.Sprintf("must be Slack or Webhook, got %s", c.Kind)}
	case c.Scale < 0 || c.Scale != c.Scale:
		return &ConfigError{Field: "Scale", Reason: fmt.Sprintf("must be positive, got %v", c.Scale)}
	}
	return nil
}

// Errors of a Receiver's life cycle.
var (
	// ErrStarted is returned by Start on a Receiver already started.
	ErrStarted = errors.New("receiver already started")
	// ErrClosed is returned by Start on a Receiver already closed.
	ErrClosed = errors.New("receiver closed")
	// ErrUnknownKind is returned by ParseKind for a name that is not
	// "slack", "webhook" or "pagerduty".
	ErrUnknownKind = errors.New("unknown kind (want slack or webhook)")
)

// Receiver is one local alert receiver. Its methods are safe for
// concurrent use.
type Receiver struct {
	cfg  Config
	done chan struct{} // closed by Close: releases every held request

	mu       sync.Mutex
	ln       net.Listener
	srv      *http.Server
	serveErr chan error
	started  time.Time
	closed   bool
	healthy  bool
	recs     []Notification
	attempts map[uint64]int // arrivals per notification ID
}

// New returns a Receiver for cfg, with its defaults applied; it does not
// listen until Start.
func New(cfg Config) (*Receiver, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("new receiver: %w", err)
	}
	return &Receiver{cfg: cfg, done: make(chan struct{}), attempts: map[uint64]int{}}, nil
}

// Start listens on the config's address and serves in the background.
func (r *Receiver) Start() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.closed:
		return fmt.Errorf("start receiver %s: %w", r.cfg.Name, ErrClosed)
	case r.ln != nil:
		return fmt.Errorf("start receiver %s: %w", r.cfg.Name, ErrStarted)
	}
	ln, err := net.Listen("tcp", r.cfg.Listen)
	if err != nil {
		return fmt.Errorf("start receiver %s: %w", r.cfg.Name, err)
	}
	r.ln = ln
	r.started = time.Now()
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serveHTTP), ReadHeaderTimeout: readHeaderTimeout}
	r.serveErr = make(chan error, 1)
	go func(srv *http.Server, errc chan<- error) {
		errc <- srv.Serve(ln)
	}(r.srv, r.serveErr)
	return nil
}

// URL returns the URL to give the sink: for Slack a path shaped like an
// incoming webhook's, for Webhook an events path. Every path is served the
// same. It is "" before Start.
func (r *Receiver) URL() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ln == nil {
		return ""
	}
	base := "http://" + r.ln.Addr().String()
	if r.cfg.Kind == Slack {
		return base + "/services/T0DRILL/B0DRILL/" + r.cfg.Name
	}
	return base + "/v2/enqueue/" + r.cfg.Name
}

// Name returns the receiver's name.
func (r *Receiver) Name() string { return r.cfg.Name }

// SetHealthy makes the Receiver accept every delivery without asking its
// Injector (true), or go back to answering as the faults say (false): a
// drill sets it on every exit path, so no fault outlives the drill.
// Requests already held by a fault are not released.
func (r *Receiver) SetHealthy(healthy bool) {
	r.mu.Lock()
	r.healthy = healthy
	r.mu.Unlock()
}

// Received returns a copy of every delivery recorded, in arrival order. A
// delivery still held by a fault shows Outcome Pending.
func (r *Receiver) Received() []Notification {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Notification, len(r.recs))
	for i := range r.recs {
		out[i] = r.recs[i].clone()
	}
	return out
}

// Close releases every request a fault holds, stops the server and waits
// for the requests in progress until ctx is done, then closes their
// connections. It never waits on a hang. Closing twice is a no-op.
func (r *Receiver) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	close(r.done)
	srv, errc := r.srv, r.serveErr
	r.mu.Unlock()
	if srv == nil {
		return nil
	}
	if err := srv.Shutdown(ctx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("close receiver %s: %w", r.cfg.Name, err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("close receiver %s: serve: %w", r.cfg.Name, err)
	}
	return nil
}

// now is the scenario offset of the present instant.
func (r *Receiver) now() time.Duration {
	if r.cfg.Now != nil {
		return r.cfg.Now()
	}
	return time.Duration(float64(time.Since(r.started)) * r.cfg.Scale)
}

// wall converts a scenario duration to wall-clock time.
func (r *Receiver) wall(d time.Duration) time.Duration {
	return time.Duration(float64(d) / r.cfg.Scale)
}

// serveHTTP takes one delivery.
func (r *Receiver) serveHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body, readErr := io.ReadAll(http.MaxBytesReader(w, req.Body, MaxBody))
	var tooLarge *http.MaxBytesError
	if errors.As(readErr, &tooLarge) {
		body = nil
	} else if readErr != nil {
		// The client went away mid-body: no delivery was made.
		return
	}

	n := Notification{Receiver: r.cfg.Name, Kind: r.cfg.Kind.String(), Bytes: len(body)}
	if body != nil {
		if err := decode(r.cfg.Kind, body, &n); err != nil {
			n.DecodeError = err.Error()
		}
		if json.Valid(body) {
			n.Raw = json.RawMessage(body)
		}
	}

	r.mu.Lock()
	n.Seq = len(r.recs) + 1
	at := r.now()
	n.AtMs = at.Milliseconds()
	if n.NotificationID != 0 {
		r.attempts[n.NotificationID]++
		n.Attempt = r.attempts[n.NotificationID]
	}
	var eff faults.Effect
	if !r.healthy && r.cfg.Faults != nil {
		eff = r.cfg.Faults.Call(faults.Target{Kind: faults.AlertSink, Name: r.cfg.Name}, faults.Call{At: at})
	}
	n.Fault = eff.Fault
	n.Outcome = Pending
	r.recs = append(r.recs, n)
	idx := len(r.recs) - 1
	r.mu.Unlock()

	status, outcome := r.answer(w, req, eff, tooLarge != nil, n.DecodeError != "")

	r.mu.Lock()
	r.recs[idx].Status = status
	r.recs[idx].Outcome = outcome
	r.recs[idx].Accepted = outcome == Accepted
	r.mu.Unlock()
}

// answer answers a delivery as eff says, else as its payload deserves, and
// returns the status sent (0 for none) and the outcome.
func (r *Receiver) answer(w http.ResponseWriter, req *http.Request, eff faults.Effect, tooLarge, invalid bool) (int, Outcome) {
	if eff.Latency > 0 {
		t := time.NewTimer(r.wall(eff.Latency))
		defer t.Stop()
		select {
		case <-t.C:
		case <-req.Context().Done():
			reset(w)
			return 0, Hung
		case <-r.done:
			reset(w)
			return 0, Hung
		}
	}
	if eff.Err != nil {
		return r.answerFault(w, req, eff.Err, eff.Latency > 0)
	}
	switch {
	case tooLarge:
		http.Error(w, "payload too large", http.StatusRequestEntityTooLarge)
		return http.StatusRequestEntityTooLarge, TooLarge
	case invalid:
		body := "invalid_payload"
		if r.cfg.Kind == Webhook {
			body = `{"status":"invalid event","message":"Event object is invalid"}`
		}
		writeAnswer(w, http.StatusBadRequest, nil, body)
		return http.StatusBadRequest, Invalid
	}
	if r.cfg.Kind == Slack {
		writeAnswer(w, http.StatusOK, nil, "ok")
		return http.StatusOK, Accepted
	}
	writeAnswer(w, http.StatusAccepted, http.Header{"Content-Type": {"application/json"}},
		`{"status":"success","message":"Event processed"}`)
	return http.StatusAccepted, Accepted
}

// statusCoder is an error carrying an HTTP status (a *failure.HTTPError, a
// *failure.CardError).
type statusCoder interface{ StatusCode() int }

// answerFault answers a fault's error: its status, a hang, or a reset.
// held says the request was already held for the fault's latency.
func (r *Receiver) answerFault(w http.ResponseWriter, req *http.Request, err error, held bool) (int, Outcome) {
	var sc statusCoder
	if errors.As(err, &sc) && sc.StatusCode() >= 400 && sc.StatusCode() <= 599 {
		code := sc.StatusCode()
		header, body := http.Header{}, http.StatusText(code)
		var he *failure.HTTPError
		if errors.As(err, &he) {
			for k, v := range he.Header {
				header[k] = append([]string(nil), v...)
			}
			if he.Body != "" {
				body = he.Body
			}
		}
		var hint interface{ RetryAfter() time.Duration }
		if header.Get("Retry-After") == "" && errors.As(err, &hint) && hint.RetryAfter() > 0 {
			header.Set("Retry-After", strconv.FormatInt(int64((hint.RetryAfter()+time.Second-1)/time.Second), 10))
		}
		writeAnswer(w, code, header, body)
		return code, Refused
	}
	var to interface{ Timeout() bool }
	if errors.As(err, &to) && to.Timeout() && !held {
		select {
		case <-req.Context().Done():
		case <-r.done:
		}
		// Returning would send an empty 200: drop the connection instead.
		reset(w)
		return 0, Hung
	}
	reset(w)
	return 0, Reset
}

// writeAnswer writes a status, headers and a text body.
func writeAnswer(w http.ResponseWriter, code int, header http.Header, body string) {
	for k, v := range header {
		w.Header()[k] = v
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	}
	w.WriteHeader(code)
	_, _ = io.WriteString(w, body)
}

// reset drops the connection without an answer, with a TCP reset when it
// can: a receiver that is down, as seen from a client that was already
// connected.
func reset(w http.ResponseWriter) {
	rc := http.NewResponseController(w)
	conn, _, err := rc.Hijack()
	if err != nil {
		// Not hijackable (HTTP/2): abort the handler, which drops the
		// stream without an answer.
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}
