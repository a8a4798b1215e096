package alert

import (
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/faultline/faultline/reference/clock"
)

// Alert names raised by the Alerter itself.
const (
	NameJobFailed            = "job-failed"
	NameBreakerOpen          = "breaker-open"
	NameBreakerFlapping      = "breaker-flapping"
	NameReceiverMisconfigure = "receiver-misconfigured"
	NameDeliveryLate         = "alert-delivery-late"
	NameOutboxOverflow       = "alert-outbox-overflow"
	NameAlertLimit           = "alert-limit"
)

// Stats is a snapshot of an alerter's counters, for a metrics adapter.
type Stats struct {
	// Raised counts new alerts; Occurrences every failure or signal seen;
	// Deduplicated the occurrences folded into an alert already firing;
	// Resolved the alerts that cleared.
	Raised, Occurrences, Deduplicated, Resolved uint64
	// Inhibited counts the times a firing warning was held back from a
	// notification because its dependency's breaker is open.
	Inhibited uint64
	// Notifications counts notifications made; Grouped the alerts that went
	// out in a notification alongside others; Repeats the alerts sent again
	// after RepeatInterval.
	Notifications, Grouped, Repeats uint64
	// Sent counts notifications a sink accepted; AlertsSent the alerts in
	// them.
	Sent, AlertsSent uint64
	// Retried counts redelivery attempts scheduled; FailedRetryable and
	// FailedMisconfigured the failed sends by reason.
	Retried, FailedRetryable, FailedMisconfigured uint64
	// Coalesced counts alerts merged into a waiting notification instead of
	// a new one; Overflows the times an outbox was full; FailedOver the
	// notifications copied to a secondary receiver.
	Coalesced, Overflows, FailedOver uint64
	// Limited counts occurrences of new fingerprints folded into the
	// alert-limit alert because MaxAlerts alerts were held.
	Limited uint64
	// Suppressed counts firing alerts not sent to a receiver because it had
	// accepted the same alert, at the same or a higher severity, within the
	// repeat interval (by another route, or as a secondary's copy).
	Suppressed uint64
	// Pending is the number of notifications waiting in outboxes, Held those
	// held for misconfigured receivers.
	Pending, Held int
}

// Alerter raises, groups, deduplicates, inhibits and delivers alerts. It is a
// synchronous state machine on its clock: it starts no goroutine; group
// flushes, repeats, resolutions and delivery attempts run on clock timers,
// and Sink.Send is called from those callbacks without the lock held. It is
// safe for concurrent use.
//
// An alert is one instance of a fingerprint: from its first occurrence to its
// resolution. A later occurrence after the resolution is a new alert, paged
// again. Each receiver an alert's routes lead to puts it in one group there
// (the first such route's); a group's notification carries its alerts that
// are new, due for a repeat (RepeatInterval after the receiver accepted the
// last page), or resolved. Whatever the routes and copies, a receiver is
// paged at most once per alert per repeat interval (the shortest one
// configured): a firing alert it accepted already, at the same or a higher
// severity, is taken out of a notification before it is sent.
type Alerter struct {
	cfg       Config
	clk       clock.Clock
	log       *slog.Logger
	receivers map[string]*Receiver

	mu     sync.Mutex
	rngs   map[string]*rand.Rand
	alerts map[string]*alertState // the live alert of each fingerprint
	groups map[string]*group
	open   map[string]bool
	flaps  map[string]*flapState
	outbox map[string]*outbox
	bad    map[string]bool // receivers refusing as misconfigured
	late   map[string]bool // receivers past the delivery deadline
	// paged is what each receiver accepted firing, by fingerprint: one page
	// per receiver per fingerprint per repeat interval, however it came.
	paged        map[string]map[string]pageMark
	sweepAt      int           // the size of paged[r] at which expired marks are swept
	minRepeat    time.Duration // the shortest repeat interval of any route
	nextID       uint64
	nextInstance uint64
	stats        Stats
	pending      int
}

type alertState struct {
	a  Alert // Jobs hold raw texts: redacted when a snapshot goes out
	id uint64
	// event: a job-failure alert, resolved after DedupWindow of quiet.
	event   bool
	forced  string
	members []*member
	// routedTo names every receiver the alert had a group of: a receiver
	// that got it only as a copy is told of its resolution separately.
	routedTo []string
	// lastJob and deadLettered describe a job-failure alert's latest
	// failure; its summary is rendered from them when it goes out.
	lastJob      JobRef
	deadLettered bool
	resolveTimer clock.Timer
	// outsideOutage says an occurrence came while the alert's dependency had
	// no open breaker (reset when a breaker opens: what came before is part
	// of the outage the breaker's own alert reports).
	outsideOutage bool
}

// New returns an alerter for cfg (defaults applied) on clk. Delivery jitter
// is drawn from one stream per receiver, each seeded from rng in the order
// the receivers are configured, so a fault at one receiver does not shift
// another's draws. It fails with a *ConfigError naming an invalid field.
func New(cfg Config, clk clock.Clock, rng *rand.Rand) (*Alerter, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if clk == nil || rng == nil {
		return nil, &ConfigError{Field: "clock/rng", Reason: "an alerter needs a clock and a random source"}
	}
	a := &Alerter{
		cfg: cfg, clk: clk, log: cfg.Logger,
		receivers: map[string]*Receiver{},
		rngs:      map[string]*rand.Rand{},
		alerts:    map[string]*alertState{},
		groups:    map[string]*group{},
		open:      map[string]bool{},
		flaps:     map[string]*flapState{},
		outbox:    map[string]*outbox{},
		bad:       map[string]bool{},
		late:      map[string]bool{},
		paged:     map[string]map[string]pageMark{},
		sweepAt:   64,
		minRepeat: cfg.Timing.RepeatInterval,
	}
	for _, r := range cfg.Routes {
		if t := r.Timing.RepeatInterval; t > 0 && t < a.minRepeat {
			a.minRepeat = t
		}
	}
	if a.log == nil {
		a.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	for i := range cfg.Receivers {
		r := cfg.Receivers[i]
		a.receivers[r.Name] = &r
		a.outbox[r.Name] = &outbox{name: r.Name, byFP: map[string]*item{}}
		a.rngs[r.Name] = rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
	}
	return a, nil
}

// Stats returns a snapshot of the counters.
func (a *Alerter) Stats() Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.stats
	s.Pending = a.pending
	for name, ob := range a.outbox {
		if a.bad[name] {
			s.Held += len(ob.items)
		}
	}
	return s
}

// Alerts returns the live alerts, sorted by fingerprint, texts redacted.
func (a *Alerter) Alerts() []Alert {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]Alert, 0, len(a.alerts))
	for _, fp := range sortedKeys(a.alerts) {
		out = append(out, a.snapshotLocked(a.alerts[fp], &group{}))
	}
	return out
}

// Pending returns the notifications waiting in the outboxes, by ID.
func (a *Alerter) Pending() []Notification {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []Notification
	for _, ob := range a.outbox {
		for _, it := range ob.items {
			n := it.n
			n.Alerts = slices.Clone(it.n.Alerts)
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(x, y Notification) int { return cmpUint(x.ID, y.ID) })
	return out
}

func cmpUint(x, y uint64) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func orNone(s string) string {
	if s == "" {
		return "(no dependency)"
	}
	return s
}
