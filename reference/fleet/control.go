package fleet

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/faultline/faultline/reference/clock"
)

// Duty is what only the leader runs: *worker.Monitor and *worker.AutoRetry
// schedule themselves on their clock from Start until Stop.
type Duty interface {
	Start()
	Stop()
}

// ControlConfig configures a Control.
type ControlConfig struct {
	// Elector and Relay are required; Drain feeds the leader's alerter
	// (nil: no alerter).
	Elector *Elector
	Relay   *Relay
	Drain   *Drain
	// Duties run while this process leads.
	Duties []Duty
	// Clock is required; Interval is the tick (default a third of the
	// elector's TTL).
	Clock    clock.Clock
	Interval time.Duration
	// StoreTimeout bounds a tick's store calls, in wall time (default
	// 1s).
	StoreTimeout time.Duration
	// Logger gets the errors of a tick (default slog.Default()).
	Logger *slog.Logger
}

// Control is what a process of a fleet runs beside its worker: each tick
// claims or renews the leadership, relays what the process heard, and —
// while it leads — drains the relay log into its alerter and runs the
// duties (started when leadership begins, stopped when it ends).
type Control struct {
	cfg ControlConfig

	mu      sync.Mutex
	leading bool
}

// NewControl returns a Control for cfg.
func NewControl(cfg ControlConfig) (*Control, error) {
	if cfg.Elector == nil || cfg.Relay == nil || cfg.Clock == nil {
		return nil, errors.New("fleet: a control needs an elector, a relay and a clock")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = cfg.Elector.cfg.TTL / 3
	}
	if cfg.StoreTimeout <= 0 {
		cfg.StoreTimeout = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Control{cfg: cfg}, nil
}

// Tick runs one tick: claim, relay, and while leading drain and keep the
// duties running. It returns the errors of its store calls, joined.
func (c *Control) Tick(ctx context.Context) error {
	tctx, cancel := context.WithTimeout(ctx, c.cfg.StoreTimeout)
	defer cancel()
	_, err1 := c.cfg.Elector.Tick(tctx)
	err2 := c.cfg.Relay.Flush(tctx)
	_, leads := c.cfg.Elector.Leading()
	c.setLeading(leads)
	var err3 error
	if leads && c.cfg.Drain != nil {
		_, err3 = c.cfg.Drain.Tick(tctx, 8)
	}
	return errors.Join(err1, err2, err3)
}

// setLeading starts the duties when leadership begins and stops them when
// it ends.
func (c *Control) setLeading(leads bool) {
	c.mu.Lock()
	was := c.leading
	c.leading = leads
	c.mu.Unlock()
	switch {
	case leads && !was:
		for _, d := range c.cfg.Duties {
			d.Start()
		}
	case !leads && was:
		for _, d := range c.cfg.Duties {
			d.Stop()
		}
	}
}

// Run ticks at once and every Interval until ctx is done; then it stops the
// duties, relays what is left and resigns (bounded by StoreTimeout), so
// another process leads at its next tick.
func (c *Control) Run(ctx context.Context) error {
	for {
		if err := c.Tick(ctx); err != nil && ctx.Err() == nil {
			c.cfg.Logger.Warn("fleet control: tick", "err", err)
		}
		done := make(chan struct{})
		t := c.cfg.Clock.AfterFunc(c.cfg.Interval, func() { close(done) })
		select {
		case <-done:
		case <-ctx.Done():
			t.Stop()
			c.setLeading(false)
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.StoreTimeout)
			defer cancel()
			return errors.Join(c.cfg.Relay.Flush(sctx), c.cfg.Elector.Resign(sctx))
		}
	}
}
