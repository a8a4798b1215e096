package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/internal/mutant"
)

// Window is a daily stretch of time in a location, e.g. 02:00-05:00 in
// Europe/Berlin: off-peak hours. Start and End are times of day, as
// durations since midnight; an End before Start wraps past midnight
// (22:00-04:00). The times are wall-clock times of the location, so the
// window stays at 02:00 across a daylight-saving change.
type Window struct {
	Start, End time.Duration
	// Location defaults to UTC.
	Location *time.Location
}

// Validate reports whether w is a window.
func (w Window) Validate() error {
	switch {
	case w.Start < 0 || w.Start >= 24*time.Hour:
		return &ConfigError{"Window.Start", "must be a time of day in [0, 24h)"}
	case w.End < 0 || w.End >= 24*time.Hour:
		return &ConfigError{"Window.End", "must be a time of day in [0, 24h)"}
	case w.Start == w.End:
		return &ConfigError{"Window.End", "must differ from Window.Start"}
	}
	return nil
}

// Bounds returns the window holding t, or if t is outside every window, the
// next one: open ≤ t < close when t is inside.
func (w Window) Bounds(t time.Time) (open, close time.Time) {
	loc := w.Location
	if loc == nil {
		loc = time.UTC
	}
	lt := t.In(loc)
	y, m, d := lt.Date()
	at := func(day int, of time.Duration) time.Time {
		h, mi, s := int(of/time.Hour), int(of%time.Hour/time.Minute), int(of%time.Minute/time.Second)
		return time.Date(y, m, day, h, mi, s, int(of%time.Second), loc)
	}
	// The window opening yesterday may still be open (one that wraps past
	// midnight); else today's; else tomorrow's.
	for day := d - 1; ; day++ {
		open = at(day, w.Start)
		closeDay := day
		if w.End <= w.Start {
			closeDay++
		}
		close = at(closeDay, w.End)
		if t.Before(close) && close.After(open) {
			return open, close
		}
	}
}

// Defaults for AutoRetryConfig.
const (
	DefaultAutoRetryRate     = 10
	DefaultAutoRetryInterval = time.Minute
	DefaultMaxAutoRetries    = 3
	DefaultAutoRetryPageSize = 100
)

// maxTickPages bounds the List calls of one auto-retry tick.
const maxTickPages = 10

// ByAutoRetry names the auto-retry in a DLQ entry's status history.
const ByAutoRetry = "auto-retry"

// RetryStore is what AutoRetry needs of a DLQ. dlq.Store implements it.
type RetryStore interface {
	List(ctx context.Context, f dlq.Filter, cursor string, limit int) (dlq.Page, error)
	Requeue(ctx context.Context, id string, opts dlq.RequeueOptions, now time.Time) (dlq.RequeueOutcome, error)
	Quarantine(ctx context.Context, id, reason string, now time.Time) error
}

var _ RetryStore = dlq.Store(nil)

// AutoRetryConfig configures an AutoRetry.
type AutoRetryConfig struct {
	// Store and Clock are required; Window is required and valid.
	Store  RetryStore
	Clock  clock.Clock
	Window Window
	// Filter selects the entries retried (its Statuses are ignored: only
	// Failed entries are).
	Filter dlq.Filter
	// Rate requeues at most, per Interval, made at the start of each
	// interval inside the window (default 10 per minute).
	Rate     int
	Interval time.Duration
	// MaxAutoRetries is how many times one entry is requeued automatically
	// (default 3). An entry that has used them and failed again is
	// quarantined as poison; only an operator may requeue it.
	MaxAutoRetries int
	// Budget is the attempt budget of an automatic requeue (default
	// dlq.OneMoreAttempt); Queue the queue it sends the job to ("" is the
	// entry's source queue).
	Budget dlq.Budget
	Queue  string
	// PageSize bounds one List call (default 100).
	PageSize int
	// CallTimeout bounds the store calls of one tick (default 10s).
	CallTimeout time.Duration
	// Logger receives store errors; nil discards them.
	Logger *slog.Logger
}

// WithDefaults returns c with zero fields set to their defaults.
func (c AutoRetryConfig) WithDefaults() AutoRetryConfig {
	if c.Window.Location == nil {
		c.Window.Location = time.UTC
	}
	if c.Rate == 0 {
		c.Rate = DefaultAutoRetryRate
	}
	if c.Interval == 0 {
		c.Interval = DefaultAutoRetryInterval
	}
	if c.MaxAutoRetries == 0 {
		c.MaxAutoRetries = DefaultMaxAutoRetries
	}
	if c.Budget == 0 {
		c.Budget = dlq.OneMoreAttempt
	}
	if c.PageSize == 0 {
		c.PageSize = DefaultAutoRetryPageSize
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = DefaultStoreTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports the first invalid field of c with defaults applied.
func (c AutoRetryConfig) Validate() error {
	c = c.WithDefaults()
	switch {
	case c.Store == nil:
		return &ConfigError{"Store", "is required"}
	case c.Clock == nil:
		return &ConfigError{"Clock", "is required"}
	case c.Rate < 1:
		return &ConfigError{"Rate", "must be at least 1"}
	case c.Interval <= 0:
		return &ConfigError{"Interval", "must be positive"}
	case c.MaxAutoRetries < 1:
		return &ConfigError{"MaxAutoRetries", "must be at least 1"}
	case c.Budget != dlq.OneMoreAttempt && c.Budget != dlq.ResetAttempts:
		return &ConfigError{"Budget", "must be dlq.OneMoreAttempt or dlq.ResetAttempts"}
	case c.PageSize < 1:
		return &ConfigError{"PageSize", "must be at least 1"}
	case c.CallTimeout <= 0:
		return &ConfigError{"CallTimeout", "must be positive"}
	}
	return c.Window.Validate()
}

// AutoRetryStats are an auto-retry's counters; they only grow.
type AutoRetryStats struct {
	// Ticks counts the ticks run inside a window; Requeued the entries
	// requeued; Quarantined the poison entries quarantined; Skipped the
	// entries the store would not requeue (their job is busy, or they
	// changed under the tick); Errors the failed store calls.
	Ticks, Requeued, Quarantined, Skipped, Errors uint64
}

// AutoRetry requeues dead jobs automatically in an off-peak window (the
// seed's "automatically retries at off-peak hours"): at the start of each
// Interval inside the window, at most Rate Failed entries matching the
// filter that failed before the window's first tick, each at most MaxAutoRetries
// times in its life; an entry that has used them and is Failed again is
// quarantined as poison.
//
// Each window is one sweep: an entry is requeued at most once per window,
// and a job that fails again during the window waits for the next one.
//
// It runs on clock timers and starts no goroutine: Start schedules the
// first tick, at the window's opening (or at once, inside it), and each
// tick schedules the next, so the simulator drives it in virtual time. It
// is safe for concurrent use.
type AutoRetry struct {
	cfg AutoRetryConfig

	mu      sync.Mutex
	started bool
	gen     uint64
	timer   clock.Timer
	// The current window's sweep: the window's opening, the sweep's
	// cut-off (its first tick) and the entries skipped in it.
	open, cutoff time.Time
	skipped      map[string]bool
	stats        AutoRetryStats
}

// NewAutoRetry returns an auto-retry for cfg (defaults applied), or a
// *ConfigError. It schedules nothing until Start.
func NewAutoRetry(cfg AutoRetryConfig) (*AutoRetry, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &AutoRetry{cfg: cfg}, nil
}

// Start schedules the auto-retry's first tick. Starting a started
// auto-retry does nothing.
func (a *AutoRetry) Start() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.started {
		return
	}
	a.started = true
	a.gen++
	a.scheduleLocked(a.cfg.Clock.Now(), false)
}

// Stop cancels the pending tick; a tick running now finishes.
func (a *AutoRetry) Stop() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.started = false
	a.gen++
	if a.timer != nil {
		a.timer.Stop()
		a.timer = nil
	}
}

// Stats returns a snapshot of the counters.
func (a *AutoRetry) Stats() AutoRetryStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stats
}

// scheduleLocked schedules the next tick: at once when now is inside a
// window and no tick has just run, Interval after a tick while that stays
// inside the window, else at the next window's opening.
func (a *AutoRetry) scheduleLocked(now time.Time, ticked bool) {
	open, close := a.cfg.Window.Bounds(now)
	at := open
	if !now.Before(open) {
		at = now
		if ticked {
			at = now.Add(a.cfg.Interval)
			if !at.Before(close) {
				at, _ = a.cfg.Window.Bounds(close)
			}
		}
	}
	gen := a.gen
	a.timer = a.cfg.Clock.AfterFunc(at.Sub(now), func() { a.fire(gen) })
}

// fire is the tick timer's callback.
func (a *AutoRetry) fire(gen uint64) {
	now := a.cfg.Clock.Now()
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.CallTimeout)
	defer cancel()
	if err := a.tick(ctx, now, gen); err != nil {
		a.cfg.Logger.Error("auto-retry tick failed; trying again next tick", logErr, err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.started && a.gen == gen {
		a.scheduleLocked(now, true)
	}
}

// Tick runs one tick at now, when now is inside the window: it quarantines
// the poison entries it meets and requeues up to Rate others. Start's
// timers call it; a driver may too. It returns the first store error; the
// entries done before it stay done.
func (a *AutoRetry) Tick(ctx context.Context, now time.Time) error {
	a.mu.Lock()
	gen := a.gen
	a.mu.Unlock()
	return a.tick(ctx, now, gen)
}

func (a *AutoRetry) tick(ctx context.Context, now time.Time, gen uint64) error {
	open, _ := a.cfg.Window.Bounds(now)
	if now.Before(open) && !mutant.On("worker/autoretry-ignores-window") {
		return nil // outside the window
	}
	a.mu.Lock()
	if gen != a.gen {
		a.mu.Unlock()
		return nil
	}
	if !a.open.Equal(open) {
		a.open, a.cutoff, a.skipped = open, now, make(map[string]bool)
	}
	cutoff := a.cutoff
	a.stats.Ticks++
	a.mu.Unlock()

	// Only entries that failed before the window's sweep began (its first
	// tick): one sweep per window, and the cut-off of a requeue-by-filter,
	// so a job that dies again during the window is not picked up twice.
	f := a.cfg.Filter
	f.Statuses = []dlq.Status{dlq.Failed}
	if (f.Until.IsZero() || f.Until.After(cutoff)) && !mutant.On("worker/autoretry-no-cutoff") {
		f.Until = cutoff
	}

	// Collect first, move after: a cursor need not survive the moves. A
	// tick looks at most maxTickPages pages, so a DLQ full of poison is
	// quarantined in bounded steps too.
	var requeue, poison []dlq.Entry
	cursor := ""
	for range maxTickPages {
		page, err := a.cfg.Store.List(ctx, f, cursor, a.cfg.PageSize)
		if err != nil {
			a.count(func(s *AutoRetryStats) { s.Errors++ })
			return fmt.Errorf("auto-retry: list: %w", err)
		}
		for _, e := range page.Entries {
			switch {
			case e.Corrupt || a.skippedInWindow(e.ID()):
			case e.AutoRetries >= a.cfg.MaxAutoRetries && !mutant.On("worker/autoretry-never-quarantines"):
				poison = append(poison, e)
			case len(requeue) < a.cfg.Rate:
				requeue = append(requeue, e)
			}
		}
		if page.Next == "" || len(requeue) == a.cfg.Rate {
			break
		}
		cursor = page.Next
	}

	var errs []error
	for _, e := range poison {
		reason := fmt.Sprintf("poison: failed again after %d automatic retries", e.AutoRetries)
		switch err := a.cfg.Store.Quarantine(ctx, e.ID(), reason, now); {
		case err == nil:
			a.count(func(s *AutoRetryStats) { s.Quarantined++ })
		case errors.Is(err, dlq.ErrNotFound), errors.Is(err, dlq.ErrWrongStatus):
			a.skip(e.ID())
		default:
			a.count(func(s *AutoRetryStats) { s.Errors++ })
			errs = append(errs, fmt.Errorf("auto-retry: quarantine %s: %w", e.ID(), err))
		}
	}
	opts := dlq.RequeueOptions{Queue: a.cfg.Queue, Budget: a.cfg.Budget, By: ByAutoRetry, Auto: true}
	for _, e := range requeue {
		out, err := a.cfg.Store.Requeue(ctx, e.ID(), opts, now)
		switch {
		case err != nil:
			a.count(func(s *AutoRetryStats) { s.Errors++ })
			errs = append(errs, fmt.Errorf("auto-retry: requeue %s: %w", e.ID(), err))
		case out == dlq.OutcomeRequeued:
			a.count(func(s *AutoRetryStats) { s.Requeued++ })
		default:
			// Busy, already requeued, gone or not requeueable: not again
			// in this window.
			a.skip(e.ID())
		}
	}
	return errors.Join(errs...)
}

func (a *AutoRetry) count(f func(*AutoRetryStats)) {
	a.mu.Lock()
	f(&a.stats)
	a.mu.Unlock()
}

func (a *AutoRetry) skippedInWindow(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.skipped[id]
}

func (a *AutoRetry) skip(id string) {
	a.mu.Lock()
	if a.skipped != nil {
		a.skipped[id] = true
	}
	a.stats.Skipped++
	a.mu.Unlock()
}
