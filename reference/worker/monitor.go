package worker

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/store"
)

// The alerts a Monitor raises, each labelled with the namespace.
const (
	// AlertDLQDepth: more entries wait for a decision (failed or
	// quarantined) than MaxDepth.
	AlertDLQDepth = "dlq-depth"
	// AlertDLQAge: the oldest failed entry is older than MaxAge.
	AlertDLQAge = "dlq-oldest-age"
	// AlertDLQOverflow: the DLQ overflowed (an entry rejected, or older
	// ones evicted); cleared at the first check with no new overflow.
	AlertDLQOverflow = "dlq-overflow"
	// AlertDLQUnavailable: the DLQ's stats could not be read.
	AlertDLQUnavailable = "dlq-unavailable"
	// AlertDLQHeld: dead letters wait in the held set for room in the DLQ
	// (or for the DLQ store); their handlers do not run again. Cleared when
	// the held set is empty.
	AlertDLQHeld = "dlq-held"
	// AlertDLQKept: dead letters are kept in this process's memory (the
	// held set full, or the store unreachable), their leases heartbeated:
	// if the process stops, the leases expire and the jobs run again.
	// High; raised at once through Kept, and cleared at the first check
	// that finds none kept (MonitorConfig.Kept).
	AlertDLQKept = "dlq-kept"
)

// LabelNamespace is the label naming the DLQ's namespace.
const LabelNamespace = "namespace"

// Signaler raises and clears conditions: *alert.Alerter.
type Signaler interface {
	Raise(s alert.Signal)
	Clear(name string, labels alert.Labels)
}

// StatsReader is what Monitor needs of a DLQ. dlq.Store implements it.
type StatsReader interface {
	Stats(ctx context.Context) (dlq.Stats, error)
}

var _ StatsReader = dlq.Store(nil)

// Defaults for MonitorConfig.
const DefaultMonitorInterval = time.Minute

// MonitorConfig configures a Monitor.
type MonitorConfig struct {
	// Store, Alerter and Clock are required.
	Store   StatsReader
	Alerter Signaler
	Clock   clock.Clock
	// Namespace labels the alerts (default store.DefaultNamespace).
	Namespace string
	// MaxDepth raises AlertDLQDepth above it; 0 turns the check off.
	MaxDepth int
	// MaxAge raises AlertDLQAge when the oldest failed entry is older; 0
	// turns the check off.
	MaxAge time.Duration
	// Interval is how often Start's timers check (default 1m).
	Interval time.Duration
	// Severity is the depth and age alerts' (default Medium); overflows
	// and an unreadable DLQ are High.
	Severity classify.Severity
	// CallTimeout bounds one Stats call (default 10s).
	CallTimeout time.Duration
	// Kept, if set, counts the dead letters this process keeps in memory
	// (Pipeline.Kept): while above 0 at a check, AlertDLQKept holds.
	Kept func() int
	// Logger receives store errors; nil discards them.
	Logger *slog.Logger
}

// WithDefaults returns c with zero fields set to their defaults.
func (c MonitorConfig) WithDefaults() MonitorConfig {
	if c.Namespace == "" {
		c.Namespace = store.DefaultNamespace
	}
	if c.Interval == 0 {
		c.Interval = DefaultMonitorInterval
	}
	if c.Severity == classify.SeverityNone {
		c.Severity = classify.Medium
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
func (c MonitorConfig) Validate() error {
	c = c.WithDefaults()
	switch {
	case c.Store == nil:
		return &ConfigError{"Store", "is required"}
	case c.Alerter == nil:
		return &ConfigError{"Alerter", "is required"}
	case c.Clock == nil:
		return &ConfigError{"Clock", "is required"}
	case c.MaxDepth < 0:
		return &ConfigError{"MaxDepth", "must not be negative (0 turns the check off)"}
	case c.MaxAge < 0:
		return &ConfigError{"MaxAge", "must not be negative (0 turns the check off)"}
	case c.Interval <= 0:
		return &ConfigError{"Interval", "must be positive"}
	case c.Severity > classify.High:
		return &ConfigError{"Severity", "is not a severity"}
	case c.CallTimeout <= 0:
		return &ConfigError{"CallTimeout", "must be positive"}
	}
	return nil
}

// Health is what one check found.
type Health struct {
	// Depth counts the entries waiting for a decision (failed and
	// quarantined); Oldest is the oldest failed entry's last failure.
	Depth  int
	Oldest time.Time
	// Held counts the dead letters parked in the held set, waiting for
	// room in the DLQ; HeldOldest is when the oldest was parked.
	Held       int
	HeldOldest time.Time
	// Firing lists the monitor's alerts that hold after the check, sorted.
	Firing []string
}

// Monitor watches a DLQ and turns what it sees into alerts: depth and
// oldest-entry age over their thresholds, overflows, and a DLQ whose stats
// cannot be read. Each is raised when it starts to hold and cleared when it
// stops. Start runs Check on clock timers (no goroutine of its own);
// Overflow is the store's OnOverflow callback. It is safe for concurrent
// use, and calls the alerter without its own lock held.
type Monitor struct {
	cfg    MonitorConfig
	labels alert.Labels

	mu      sync.Mutex
	started bool
	gen     uint64
	timer   clock.Timer
	firing  map[string]bool
	// overflowed says an overflow was reported since the last check.
	overflowed bool
	// kept says a dead letter was kept (Kept) since the last check.
	kept bool
	// seenEvicted and seenRejected are the store's overflow counters at
	// the last check (-1 before the first): an increase is an overflow
	// another process caused, which this one never heard of.
	seenEvicted, seenRejected int
}

// NewMonitor returns a monitor for cfg (defaults applied), or a
// *ConfigError. It schedules nothing until Start.
func NewMonitor(cfg MonitorConfig) (*Monitor, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Monitor{
		cfg:         cfg,
		labels:      alert.Labels{LabelNamespace: cfg.Namespace},
		firing:      make(map[string]bool),
		seenEvicted: -1, seenRejected: -1,
	}, nil
}

// Start reads the store's overflow counters at once, as the baseline an
// overflow by another process is measured from, and schedules a check every
// Interval, the first one Interval from now. (An overflow this process's
// store reports reaches Overflow at once, whenever it happens.)
func (m *Monitor) Start() {
	m.mu.Lock()
	if m.started {
		m.mu.Unlock()
		return
	}
	m.started = true
	m.gen++
	m.scheduleLocked()
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.CallTimeout)
	defer cancel()
	st, err := m.cfg.Store.Stats(ctx)
	if err != nil {
		m.cfg.Logger.Error("dlq monitor: baseline read failed; the first check takes it", logErr, err)
		return
	}
	m.mu.Lock()
	if m.seenEvicted < 0 {
		m.seenEvicted, m.seenRejected = st.Evicted, st.Rejected
	}
	m.mu.Unlock()
}

// Stop cancels the pending check.
func (m *Monitor) Stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.started = false
	m.gen++
	if m.timer != nil {
		m.timer.Stop()
		m.timer = nil
	}
}

func (m *Monitor) scheduleLocked() {
	gen := m.gen
	m.timer = m.cfg.Clock.AfterFunc(m.cfg.Interval, func() {
		ctx, cancel := context.WithTimeout(context.Background(), m.cfg.CallTimeout)
		defer cancel()
		if _, err := m.Check(ctx, m.cfg.Clock.Now()); err != nil {
			m.cfg.Logger.Error("dlq monitor: check failed", logErr, err)
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.started && m.gen == gen {
			m.scheduleLocked()
		}
	})
}

// Overflow reports a DLQ overflow: set it as the store's
// store.Config.OnOverflow. It raises AlertDLQOverflow at once.
func (m *Monitor) Overflow(o store.Overflow) {
	summary := fmt.Sprintf("DLQ %s is full (%d entries, policy %s): ", m.cfg.Namespace, o.Capacity, o.Policy)
	if o.Policy == store.EvictOldest {
		summary += fmt.Sprintf("evicted %d entries (%s) for job %s", len(o.Evicted), strings.Join(o.Evicted, ", "), o.JobID)
	} else if o.Held {
		summary += "refused job " + o.JobID + ": its dead letter is held until there is room; its handler does not run again"
	} else {
		summary += "refused job " + o.JobID + ", and the held set is full too: the worker keeps the dead letter, its lease alive and its handler not run again, until there is room (if the worker stops, the lease expires and the job runs again)"
	}
	m.mu.Lock()
	m.overflowed = true
	m.firing[AlertDLQOverflow] = true
	m.mu.Unlock()
	m.cfg.Alerter.Raise(alert.Signal{Name: AlertDLQOverflow, Severity: classify.High, Labels: m.labels, Summary: summary})
}

// Kept reports a decided dead letter kept in memory: set it as the
// pipeline's PipelineConfig.OnKept. It raises AlertDLQKept at once.
func (m *Monitor) Kept(j job.Job, cause error) {
	summary := fmt.Sprintf("DLQ %s: the dead letter of job %s is kept in the worker's memory, its lease heartbeated and its handler not run again, until the store takes it (%v); if the worker stops, the lease expires and the job runs again", m.cfg.Namespace, j.ID, cause)
	if m.cfg.Kept != nil {
		if n := m.cfg.Kept(); n > 1 {
			summary = fmt.Sprintf("DLQ %s: %d dead letters are kept in the worker's memory (the latest: job %s, %v), their leases heartbeated and their handlers not run again, until the store takes them; if the worker stops, the leases expire and the jobs run again", m.cfg.Namespace, n, j.ID, cause)
		}
	}
	m.mu.Lock()
	m.kept = true
	m.firing[AlertDLQKept] = true
	m.mu.Unlock()
	m.cfg.Alerter.Raise(alert.Signal{Name: AlertDLQKept, Severity: classify.High, Labels: m.labels, Summary: summary})
}

// Check reads the DLQ's stats at now and raises or clears the monitor's
// alerts; when the store keeps depth samples (dlq.DepthRecorder), it
// records one at now. A failed read raises AlertDLQUnavailable and changes
// nothing else.
func (m *Monitor) Check(ctx context.Context, now time.Time) (Health, error) {
	st, err := m.cfg.Store.Stats(ctx)
	if err != nil {
		m.apply(map[string]*alert.Signal{AlertDLQUnavailable: {
			Name: AlertDLQUnavailable, Severity: classify.High, Labels: m.labels,
			Summary: "cannot read DLQ " + m.cfg.Namespace + ": " + err.Error(),
		}}, []string{AlertDLQUnavailable})
		return Health{Firing: m.firingNames()}, fmt.Errorf("dlq monitor: stats: %w", err)
	}
	h := Health{Depth: st.ByStatus[dlq.Failed.String()] + st.ByStatus[dlq.Quarantined.String()], Oldest: st.Oldest,
		Held: st.Held, HeldOldest: st.HeldOldest}
	hold := map[string]*alert.Signal{}
	if h.Held > 0 {
		hold[AlertDLQHeld] = &alert.Signal{Name: AlertDLQHeld, Severity: m.cfg.Severity, Labels: m.labels,
			Summary: fmt.Sprintf("DLQ %s: %d dead letters are held waiting for room (the oldest since %s); their handlers do not run again",
				m.cfg.Namespace, h.Held, h.HeldOldest.UTC().Format(time.RFC3339))}
	}
	if m.cfg.MaxDepth > 0 && h.Depth > m.cfg.MaxDepth {
		hold[AlertDLQDepth] = &alert.Signal{Name: AlertDLQDepth, Severity: m.cfg.Severity, Labels: m.labels,
			Summary: "DLQ " + m.cfg.Namespace + " holds " + strconv.Itoa(h.Depth) + " entries waiting for a decision (threshold " + strconv.Itoa(m.cfg.MaxDepth) + ")"}
	}
	if age := now.Sub(h.Oldest); m.cfg.MaxAge > 0 && !h.Oldest.IsZero() && age > m.cfg.MaxAge {
		hold[AlertDLQAge] = &alert.Signal{Name: AlertDLQAge, Severity: m.cfg.Severity, Labels: m.labels,
			Summary: fmt.Sprintf("DLQ %s: job %s has waited %s (threshold %s)", m.cfg.Namespace, st.OldestID, age, m.cfg.MaxAge)}
	}
	m.mu.Lock()
	if m.overflowed {
		hold[AlertDLQOverflow] = nil // still holds; raised by Overflow
	}
	m.overflowed = false
	if m.kept {
		hold[AlertDLQKept] = nil // still holds; raised by Kept
	}
	m.kept = false
	m.mu.Unlock()
	if m.cfg.Kept != nil {
		if n := m.cfg.Kept(); n > 0 {
			hold[AlertDLQKept] = &alert.Signal{Name: AlertDLQKept, Severity: classify.High, Labels: m.labels,
				Summary: fmt.Sprintf("DLQ %s: %d dead letters are kept in the worker's memory, their leases heartbeated and their handlers not run again, until the store takes them; if the worker stops, the leases expire and the jobs run again", m.cfg.Namespace, n)}
		}
	}
	m.mu.Lock()
	// The store's counters see every process's overflows; the callback
	// only this process's.
	if grew := (m.seenEvicted >= 0 && st.Evicted > m.seenEvicted) || (m.seenRejected >= 0 && st.Rejected > m.seenRejected); grew {
		hold[AlertDLQOverflow] = &alert.Signal{Name: AlertDLQOverflow, Severity: classify.High, Labels: m.labels,
			Summary: fmt.Sprintf("DLQ %s overflowed since the last check: %d evicted, %d refused in all", m.cfg.Namespace, st.Evicted, st.Rejected)}
	}
	m.seenEvicted, m.seenRejected = st.Evicted, st.Rejected
	m.mu.Unlock()
	m.apply(hold, []string{AlertDLQDepth, AlertDLQAge, AlertDLQOverflow, AlertDLQUnavailable, AlertDLQHeld, AlertDLQKept})
	h.Firing = m.firingNames()
	m.recordDepth(ctx, now, h, st)
	return h, nil
}

// recordDepth writes the check's depth sample, at now, when the store
// keeps them (dlq.DepthRecorder): the web UI's trend chart. A sample that
// cannot be written is logged; it never fails the check.
func (m *Monitor) recordDepth(ctx context.Context, now time.Time, h Health, st dlq.Stats) {
	r, ok := m.cfg.Store.(dlq.DepthRecorder)
	if !ok {
		return
	}
	s := dlq.DepthSample{At: now, Waiting: h.Depth, BySeverity: st.BySeverity, Oldest: st.Oldest}
	if err := r.RecordDepth(ctx, s); err != nil {
		m.cfg.Logger.Warn("dlq monitor: could not record the depth sample", logErr, err)
	}
}

// apply raises the signals in hold and clears those of names that were
// firing and are not in hold. A nil signal in hold keeps its alert as it is.
func (m *Monitor) apply(hold map[string]*alert.Signal, names []string) {
	var raise []alert.Signal
	var clear []string
	m.mu.Lock()
	for _, name := range names {
		s, holds := hold[name]
		switch {
		case holds && s != nil:
			m.firing[name] = true
			raise = append(raise, *s)
		case holds:
		case m.firing[name]:
			delete(m.firing, name)
			clear = append(clear, name)
		}
	}
	m.mu.Unlock()
	for _, s := range raise {
		m.cfg.Alerter.Raise(s)
	}
	for _, name := range clear {
		m.cfg.Alerter.Clear(name, m.labels)
	}
}

func (m *Monitor) firingNames() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, name := range []string{AlertDLQAge, AlertDLQDepth, AlertDLQHeld, AlertDLQKept, AlertDLQOverflow, AlertDLQUnavailable} {
		if m.firing[name] {
			out = append(out, name)
		}
	}
	return out
}
