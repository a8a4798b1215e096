// Package proxy puts an embedded Toxiproxy (github.com/Shopify/toxiproxy/v2)
// in front of Redis for staging drills: the worker processes reach Redis
// through it, and the drill turns Redis faults on and off by changing the
// proxy — an outage (Disable), a slow store (SetLatency), connection resets
// (ResetPeer) — and back to healthy (Clear).
//
// Toxiproxy's HTTP API is never started: the proxy is driven only through
// this package, in the drill's own process, and listens on 127.0.0.1 on a
// free port. Every change is recorded with its wall time (Timeline), so a
// report can give the fault timeline as it really happened.
package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"

	"github.com/faultline/faultline/reference/clock"
)

// Toxic names this package gives the toxics it adds; Clear removes every
// toxic, these included.
const (
	latencyToxic = "faultline_latency"
	resetToxic   = "faultline_reset_peer"
)

// ErrRemoteUpstream says the upstream is not on loopback and
// Options.AllowRemote was not set.
var ErrRemoteUpstream = errors.New("upstream is not on loopback (a drill touches a remote Redis only when allowed explicitly)")

// ErrClosed says the proxy was closed.
var ErrClosed = errors.New("proxy is closed")

// Options tunes a Proxy. The zero value is ready to use.
type Options struct {
	// AllowRemote lets the upstream be off loopback. Without it New refuses
	// any upstream whose host is not a loopback IP or "localhost", before
	// anything is dialled.
	AllowRemote bool
	// Clock stamps the timeline; nil means clock.Real{}.
	Clock clock.Clock
}

// Change is one entry of the proxy's timeline: what the drill did to it,
// and when.
type Change struct {
	// Time is when the change took effect.
	Time time.Time
	// Action is "disable", "enable", "latency", "reset_peer", "clear" or
	// "close".
	Action string
	// Latency and Jitter are set for "latency"; Latency is the delay before
	// the reset for "reset_peer".
	Latency, Jitter time.Duration
}

// Proxy is one embedded Toxiproxy proxy between the workers and an
// upstream (Redis). Its methods are safe for concurrent use.
type Proxy struct {
	mu       sync.Mutex
	p        *toxiproxy.Proxy
	clk      clock.Clock
	addr     string
	closed   bool
	timeline []Change
}

// New starts a proxy named name (it appears in no API; it names the proxy
// in errors) listening on 127.0.0.1 on a free port and forwarding to
// upstream ("host:port"). Toxiproxy's HTTP API stays off and its log is
// discarded.
func New(name, upstream string, opts Options) (*Proxy, error) {
	if err := checkUpstream(upstream, opts.AllowRemote); err != nil {
		return nil, fmt.Errorf("proxy %s: %w", name, err)
	}
	clk := opts.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	// NewProxy needs an ApiServer for its logger and metrics container; the
	// server's Listen is never called.
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	tp := toxiproxy.NewProxy(server, name, "127.0.0.1:0", upstream)
	if err := tp.Start(); err != nil {
		return nil, fmt.Errorf("proxy %s: start: %w", name, err)
	}
	return &Proxy{p: tp, clk: clk, addr: tp.Listen}, nil
}

// checkUpstream refuses an upstream that is not "host:port" or, unless
// allowRemote, whose host is not on loopback. It resolves nothing.
func checkUpstream(upstream string, allowRemote bool) error {
	host, port, err := net.SplitHostPort(upstream)
	if err != nil {
		return fmt.Errorf("upstream %q: %w", upstream, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
		return fmt.Errorf("upstream %q: port %q is not a number from 1 to 65535", upstream, port)
	}
	if allowRemote {
		return nil
	}
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("upstream %q: %w", upstream, ErrRemoteUpstream)
}

// Addr is the proxy's listen address, "127.0.0.1:PORT": give it to the
// workers instead of Redis's. It stays the same across Disable and Enable.
func (p *Proxy) Addr() string { return p.addr }

// Disable is a store outage: the proxy stops listening, so a new connection
// is refused at once, and every open connection is closed, a blocking
// command in flight included. Disabling a disabled proxy is a no-op.
func (p *Proxy) Disable() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	p.p.Stop()
	p.record(Change{Action: "disable"})
	return nil
}

// Enable ends an outage: the proxy listens again on the same address.
// Toxics added before stay in place. Enabling an enabled proxy is a no-op.
// It fails if the port was taken while the proxy was disabled.
func (p *Proxy) Enable() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	if err := p.enable(); err != nil {
		return err
	}
	p.record(Change{Action: "enable"})
	return nil
}

// enable starts the proxy unless it runs; p.mu is held.
func (p *Proxy) enable() error {
	p.p.Lock()
	running := p.p.Enabled
	p.p.Unlock()
	if running {
		return nil
	}
	if err := p.p.Start(); err != nil && !errors.Is(err, toxiproxy.ErrProxyAlreadyStarted) {
		return fmt.Errorf("proxy %s: enable on %s: %w", p.p.Name, p.addr, err)
	}
	return nil
}

// SetLatency makes the store slow: every reply from the upstream is held d
// (± jitter, drawn by Toxiproxy from the global math/rand) of wall time
// before it reaches the client, on open connections and new ones alike. It
// replaces a latency set before; d is rounded down to whole milliseconds.
func (p *Proxy) SetLatency(d, jitter time.Duration) error {
	if d < 0 || jitter < 0 || jitter > d {
		return fmt.Errorf("proxy %s: latency %v ± %v: want 0 ≤ jitter ≤ latency", p.p.Name, d, jitter)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	body := fmt.Sprintf(`{"name":%q,"type":"latency","stream":"downstream","toxicity":1,"attributes":{"latency":%d,"jitter":%d}}`,
		latencyToxic, d.Milliseconds(), jitter.Milliseconds())
	if err := p.replaceToxic(latencyToxic, body); err != nil {
		return err
	}
	p.record(Change{Action: "latency", Latency: d, Jitter: jitter})
	return nil
}

// ResetPeer makes connections reset: on every connection, the first
// command the client sends after this call is dropped (it never reaches
// the upstream) and the connection is closed after the delay. Connections
// opened after the call are closed with a TCP RST (linger 0); ones open
// before it get a plain close. It replaces a reset set before; after is
// rounded down to whole milliseconds.
func (p *Proxy) ResetPeer(after time.Duration) error {
	if after < 0 {
		return fmt.Errorf("proxy %s: reset after %v: want a delay ≥ 0", p.p.Name, after)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	body := fmt.Sprintf(`{"name":%q,"type":"reset_peer","stream":"upstream","toxicity":1,"attributes":{"timeout":%d}}`,
		resetToxic, after.Milliseconds())
	if err := p.replaceToxic(resetToxic, body); err != nil {
		return err
	}
	p.record(Change{Action: "reset_peer", Latency: after})
	return nil
}

// replaceToxic removes the toxic named name if present and adds the one
// body describes (Toxiproxy's JSON form); p.mu is held.
func (p *Proxy) replaceToxic(name, body string) error {
	err := p.p.Toxics.RemoveToxic(context.Background(), name)
	if err != nil && !errors.Is(err, toxiproxy.ErrToxicNotFound) {
		return fmt.Errorf("proxy %s: remove toxic %s: %w", p.p.Name, name, err)
	}
	if _, err := p.p.Toxics.AddToxicJson(strings.NewReader(body)); err != nil {
		return fmt.Errorf("proxy %s: add toxic %s: %w", p.p.Name, name, err)
	}
	return nil
}

// Clear returns the proxy to health: every toxic removed and the proxy
// enabled.
func (p *Proxy) Clear() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	p.p.Toxics.ResetToxics(context.Background())
	if err := p.enable(); err != nil {
		return err
	}
	p.record(Change{Action: "clear"})
	return nil
}

// Close stops the proxy for good: its listener and every connection are
// closed and its accept loop has returned. Closing twice is a no-op.
func (p *Proxy) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	p.p.Stop()
	p.record(Change{Action: "close"})
	return nil
}

// Timeline returns every change made to the proxy, oldest first.
func (p *Proxy) Timeline() []Change {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Change(nil), p.timeline...)
}

// record appends c stamped with the clock's time; p.mu is held.
func (p *Proxy) record(c Change) {
	c.Time = p.clk.Now()
	p.timeline = append(p.timeline, c)
}
