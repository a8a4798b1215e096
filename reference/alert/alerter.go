package alert

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/reference/degrade"
	"github.com/faultline/faultline/reference/failure"
	"github.com/faultline/faultline/reference/internal/mutant"
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

// Failure is one job failure reported to the alerter.
type Failure struct {
	JobID, Task, Dependency string
	Class                   classify.Class
	Severity                classify.Severity
	Source                  classify.Source
	Attempts                int
	// Err is the error text; it is redacted whenever it goes out.
	Err string
	// Fields is a short summary of the job's payload; it is redacted
	// whenever it goes out.
	Fields map[string]any
	// DeadLettered says the job went to the DLQ with this failure.
	DeadLettered bool
	// Labels are extra labels for routing and grouping.
	Labels Labels
}

// Signal is a condition that holds until it is cleared: a DLQ over its depth
// threshold, a store outage. Its fingerprint is its name and all its labels.
type Signal struct {
	Name     string
	Severity classify.Severity
	Labels   Labels
	Summary  string
}

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

// member is an alert's place in one group: what that group's receiver was
// told of it.
type member struct {
	al            *alertState
	g             *group
	notified      bool // queued in a firing notification
	delivered     bool // ... and accepted by the receiver
	lastDelivered time.Time
}

type group struct {
	key, receiver string
	timing        Timing
	members       map[uint64]*member
	createdAt     time.Time
	flushed       bool
	lastFlush     time.Time
	timer         clock.Timer
	timerAt       time.Time
}

// pageMark is a receiver's last acceptance of an alert firing.
type pageMark struct {
	instance uint64
	at       time.Time
	severity classify.Severity
}

type flapState struct {
	opens  []time.Time
	active bool
	timer  clock.Timer
}

// outbox is one receiver's queue of notifications, sent one at a time in
// order.
type outbox struct {
	name        string
	sending     bool
	timer       clock.Timer
	items       []*item
	overflowing bool
	// byFP indexes the waiting (not in flight) items by the fingerprints
	// they carry, for coalescing.
	byFP map[string]*item
}

type item struct {
	n        Notification
	queuedAt time.Time
	deadline clock.Timer
	inFlight bool
	done     bool
	// copiedTo names the receiver that got a copy (the secondary, or the
	// stand-in of a receiver that refuses); "" if none did.
	copiedTo string
	isCopy   bool
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

// JobFailed reports a job failure and returns the fingerprint of its alert.
// Failures of one fingerprint (by default task, class and dependency) are one
// alert, counted, with a sample of its latest jobs; it resolves after
// DedupWindow without a new failure. The error text and payload are kept as
// given and redacted only when they go out, so a storm of failures costs no
// redaction.
func (a *Alerter) JobFailed(f Failure) string {
	if mutant.On("alert/high-as-medium") && f.Severity == classify.High {
		f.Severity = classify.Medium
	}
	now := a.clk.Now()
	job := JobRef{ID: f.JobID, Task: f.Task, Attempts: f.Attempts, Class: f.Class, At: now, Error: f.Err, Fields: f.Fields}

	a.mu.Lock()
	defer a.mu.Unlock()
	// The labels map is built only for a new alert: a repeat occurrence, the
	// common case in a failure storm, costs a fingerprint and a lookup. The
	// fingerprint is built on the stack and looked up without a copy; a
	// repeat returns its alert's own (equal) string, so only a new alert
	// allocates one.
	var buf [128]byte
	b := a.appendFingerprint(buf[:0], &f)
	live := a.alerts[string(b)]
	var fp string
	if live != nil {
		fp = live.a.Fingerprint
	} else {
		fp = string(b)
	}
	var labels Labels
	if live == nil {
		labels = Labels{
			LabelAlertName:  NameJobFailed,
			LabelTask:       f.Task,
			LabelClass:      f.Class.String(),
			LabelDependency: f.Dependency,
			LabelSource:     f.Source.String(),
			LabelSeverity:   f.Severity.String(),
		}
		for k, v := range f.Labels {
			if _, builtin := labels[k]; !builtin {
				labels[k] = a.redactLabel(k, v)
			}
		}
	}
	al := a.occurOfLocked(live, fp, NameJobFailed, f.Severity, labels, "", "", now)
	if al == nil {
		return fp
	}
	al.event = true
	al.lastJob = job
	al.deadLettered = f.DeadLettered
	if len(al.a.Jobs) == a.cfg.MaxJobsPerAlert {
		copy(al.a.Jobs, al.a.Jobs[1:])
		al.a.Jobs[len(al.a.Jobs)-1] = job
	} else {
		al.a.Jobs = append(al.a.Jobs, job)
	}
	if al.resolveTimer == nil {
		a.armResolveLocked(al, now)
	}
	return fp
}

// MaxGroupWait is the longest any of the alerter's routes holds a new
// alert before its first notification: how long a failure it heard may
// wait to be paged (fleet.DrainConfig.Hold).
func (a *Alerter) MaxGroupWait() time.Duration {
	w := a.cfg.Timing.GroupWait
	for _, r := range a.cfg.Routes {
		w = max(w, r.Timing.GroupWait)
	}
	return w
}

// Fingerprint returns the fingerprint JobFailed gives f, recording
// nothing: a process that relays its failures to another's alerter
// (fleet.Relay) stamps its DLQ entries with it.
func (a *Alerter) Fingerprint(f Failure) string {
	var buf [128]byte
	return string(a.appendFingerprint(buf[:0], &f))
}

// appendFingerprint appends f's fingerprint (its FingerprintLabels, as
// k=v,…) to b.
func (a *Alerter) appendFingerprint(b []byte, f *Failure) []byte {
	for i, k := range a.cfg.FingerprintLabels {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, k...)
		b = append(b, '=')
		b = append(b, a.failureLabel(f, k)...)
	}
	return b
}

// failureLabel returns the value of label k for a failure, as JobFailed's
// labels map would hold it.
func (a *Alerter) failureLabel(f *Failure, k string) string {
	switch k {
	case LabelAlertName:
		return NameJobFailed
	case LabelTask:
		return f.Task
	case LabelClass:
		return f.Class.String()
	case LabelDependency:
		return f.Dependency
	case LabelSource:
		return f.Source.String()
	case LabelSeverity:
		return f.Severity.String()
	}
	return a.redactLabel(k, f.Labels[k])
}

// redactLabel masks a label value, knowing its key: a value is secret by
// what it is called ("customer_token") as much as by what it looks like.
func (a *Alerter) redactLabel(k, v string) string {
	if v == "" {
		return v
	}
	if s, ok := a.cfg.Redactor.Fields(map[string]any{k: v})[k].(string); ok {
		return s
	}
	return a.cfg.Redactor.String(v)
}

// Raise reports that a condition holds. Raising a firing condition again only
// counts it.
func (a *Alerter) Raise(s Signal) {
	now := a.clk.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.raiseLocked(s, "", now)
}

// Clear reports that a condition no longer holds; its alert resolves.
func (a *Alerter) Clear(name string, labels Labels) {
	now := a.clk.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.clearLocked(a.signalFingerprint(name, labels), now)
}

// BreakerChanged turns a breaker transition into alerts: an opening raises a
// breaker-open alert for the dependency and mutes its per-job warnings until
// the breaker closes (critical alerts are never muted); Threshold openings
// from Closed within the flapping Window raise one breaker-flapping alert
// instead, which stands for the dependency until a whole Window passes
// without an opening. A failed half-open probe re-opens the breaker but is
// not a flip: a dependency that stays down is down, not flapping. Register it
// with Breaker.OnStateChange.
func (a *Alerter) BreakerChanged(t degrade.Transition) {
	now := a.clk.Now()
	dep := t.Breaker
	a.mu.Lock()
	defer a.mu.Unlock()
	switch t.To {
	case degrade.Open:
		if !a.open[dep] {
			a.open[dep] = true
			// Warnings not yet paged are part of the outage now.
			for _, al := range a.alerts {
				if a.mutable(al) && al.a.Labels[LabelDependency] == dep && !al.anyNotified() {
					al.outsideOutage = false
				}
			}
		}
		fs := a.flaps[dep]
		if fs == nil {
			fs = &flapState{}
			a.flaps[dep] = fs
		}
		if t.From == degrade.Closed {
			cut := now.Add(-a.cfg.Flapping.Window)
			fs.opens = slices.DeleteFunc(append(fs.opens, now), func(at time.Time) bool { return !at.After(cut) })
			if len(fs.opens) >= a.cfg.Flapping.Threshold || fs.active {
				if !fs.active {
					fs.active = true
					a.clearLocked(a.signalFingerprint(NameBreakerOpen, Labels{LabelDependency: dep}), now)
				}
				a.raiseLocked(Signal{Name: NameBreakerFlapping, Severity: a.cfg.BreakerSeverity, Labels: Labels{LabelDependency: dep},
					Summary: fmt.Sprintf("circuit breaker for %s opened %d times in %s", dep, len(fs.opens), a.cfg.Flapping.Window)}, "", now)
				if fs.timer != nil {
					fs.timer.Stop()
				}
				fs.timer = a.clk.AfterFunc(a.cfg.Flapping.Window, func() { a.flapQuiet(dep) })
			}
		}
		if !fs.active {
			a.raiseLocked(Signal{Name: NameBreakerOpen, Severity: a.cfg.BreakerSeverity, Labels: Labels{LabelDependency: dep},
				Summary: fmt.Sprintf("circuit breaker for %s is open (%s)", dep, t.Reason)}, "", now)
		}
	case degrade.Closed:
		a.open[dep] = false
		a.clearLocked(a.signalFingerprint(NameBreakerOpen, Labels{LabelDependency: dep}), now)
	}
}

// flapQuiet resolves a flapping alert once a whole window passed without an
// opening; if the breaker is open then, its breaker-open alert takes over.
func (a *Alerter) flapQuiet(dep string) {
	now := a.clk.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	fs := a.flaps[dep]
	if fs == nil || !fs.active {
		return
	}
	if wait := fs.opens[len(fs.opens)-1].Add(a.cfg.Flapping.Window).Sub(now); wait > 0 {
		fs.timer = a.clk.AfterFunc(wait, func() { a.flapQuiet(dep) })
		return
	}
	delete(a.flaps, dep)
	a.clearLocked(a.signalFingerprint(NameBreakerFlapping, Labels{LabelDependency: dep}), now)
	if a.open[dep] {
		a.raiseLocked(Signal{Name: NameBreakerOpen, Severity: a.cfg.BreakerSeverity, Labels: Labels{LabelDependency: dep},
			Summary: fmt.Sprintf("circuit breaker for %s is open", dep)}, "", now)
	}
}

func (a *Alerter) raiseLocked(s Signal, receiver string, now time.Time) {
	labels := Labels{LabelAlertName: s.Name, LabelSeverity: s.Severity.String()}
	for k, v := range s.Labels {
		if k != LabelAlertName {
			labels[k] = a.redactLabel(k, v)
		}
	}
	a.occurLocked(a.signalFingerprint(s.Name, s.Labels), s.Name, s.Severity, labels, a.cfg.Redactor.String(s.Summary), receiver, now)
}

// occurLocked records one occurrence of fingerprint fp and returns its live
// alert, creating it (with labels) if there is none. A forced receiver (config
// alerts go to a receiver's fallback) bypasses the routes. Past MaxAlerts, a
// new fingerprint is counted in the alert-limit alert and nil is returned.
func (a *Alerter) occurLocked(fp, name string, sev classify.Severity, labels Labels, summary, forced string, now time.Time) *alertState {
	return a.occurOfLocked(a.alerts[fp], fp, name, sev, labels, summary, forced, now)
}

// occurOfLocked is occurLocked for al, the live alert of fp (nil if none),
// looked up already.
func (a *Alerter) occurOfLocked(al *alertState, fp, name string, sev classify.Severity, labels Labels, summary, forced string, now time.Time) *alertState {
	a.stats.Occurrences++
	if al == nil && len(a.alerts) >= a.cfg.MaxAlerts && name != NameAlertLimit {
		a.stats.Limited++
		a.raiseLocked(Signal{Name: NameAlertLimit, Severity: classify.High,
			Summary: fmt.Sprintf("more than %d distinct alerts at once; new ones are only counted here (a label with too many values?)", a.cfg.MaxAlerts)}, "", now)
		return nil
	}
	if al == nil {
		a.stats.Raised++
		a.nextInstance++
		if labels == nil {
			labels = Labels{LabelAlertName: name}
		}
		al = &alertState{id: a.nextInstance, forced: forced, a: Alert{Fingerprint: fp, Name: name, Severity: sev, Labels: labels,
			Summary: summary, Status: Firing, Count: 1, FirstSeen: now, LastSeen: now, instance: a.nextInstance}}
		a.alerts[fp] = al
		a.routeLocked(al, now)
	} else {
		a.stats.Deduplicated++
		al.a.Count++
		al.a.LastSeen = now
		if summary != "" {
			al.a.Summary = summary
		}
		if sev > al.a.Severity {
			a.escalateLocked(al, sev, now)
		} else {
			for _, m := range al.members {
				if !m.notified {
					a.scheduleLocked(m.g, now, al.a.Severity == classify.High)
				}
			}
		}
	}
	if len(a.open) == 0 || !a.open[al.a.Labels[LabelDependency]] { // no breaker ever opened: no lookups
		al.outsideOutage = true
	}
	return al
}

// routeLocked puts the alert in a group of every receiver its routes take
// it to that it is not in yet: one group per receiver, the first matching
// route's, however many routes lead there, so that a receiver is paged
// once per alert.
func (a *Alerter) routeLocked(al *alertState, now time.Time) {
	for _, rt := range a.routesLocked(al.a.Labels, al.a.Severity, al.forced) {
		if slices.ContainsFunc(al.members, func(m *member) bool { return m.g.receiver == rt.receiver }) {
			continue
		}
		key := groupKey(al.a.Labels, rt.groupBy)
		g := a.groups[rt.receiver+key]
		if g == nil {
			g = &group{key: key, receiver: rt.receiver, timing: rt.timing, members: map[uint64]*member{}, createdAt: now}
			a.groups[rt.receiver+key] = g
		} else if len(g.members) > 0 {
			a.stats.Grouped++
		}
		m := &member{al: al, g: g}
		g.members[al.id] = m
		al.members = append(al.members, m)
		if !slices.Contains(al.routedTo, rt.receiver) {
			al.routedTo = append(al.routedTo, rt.receiver)
		}
		a.scheduleLocked(g, now, al.a.Severity == classify.High)
	}
}

// escalateLocked raises a firing alert's severity: routes that take the new
// severity are added, and an alert turning critical (High) is news that every
// receiver hears within the group wait, whatever it was told before.
func (a *Alerter) escalateLocked(al *alertState, sev classify.Severity, now time.Time) {
	al.a.Severity = sev
	al.a.Labels[LabelSeverity] = sev.String()
	if sev == classify.High {
		for _, m := range al.members {
			m.notified = false
		}
	}
	a.routeLocked(al, now)
	for _, m := range al.members {
		a.scheduleLocked(m.g, now, sev == classify.High)
	}
}

func (al *alertState) anyNotified() bool {
	return slices.ContainsFunc(al.members, func(m *member) bool { return m.notified })
}

func (a *Alerter) clearLocked(fp string, now time.Time) {
	if al := a.alerts[fp]; al != nil {
		a.resolveLocked(al, now)
	}
}

// resolveLocked ends the alert: it leaves the live set at once (a new
// occurrence is a new alert) and stays in its groups until they tell their
// receivers.
func (a *Alerter) resolveLocked(al *alertState, now time.Time) {
	a.stats.Resolved++
	al.a.Status, al.a.ResolvedAt = Resolved, now
	if al.resolveTimer != nil {
		al.resolveTimer.Stop()
		al.resolveTimer = nil
	}
	if a.alerts[al.a.Fingerprint] == al {
		delete(a.alerts, al.a.Fingerprint)
	}
	for _, m := range al.members {
		a.scheduleLocked(m.g, now, false)
	}
}

// armResolveLocked schedules the check that resolves an event alert after
// DedupWindow without occurrences. One timer per alert, re-armed lazily, so
// an occurrence costs no timer operation.
func (a *Alerter) armResolveLocked(al *alertState, now time.Time) {
	wait := al.a.LastSeen.Add(a.cfg.DedupWindow).Sub(now)
	al.resolveTimer = a.clk.AfterFunc(max(wait, 0), func() {
		now := a.clk.Now()
		a.mu.Lock()
		defer a.mu.Unlock()
		if al.a.Status == Resolved {
			return
		}
		al.resolveTimer = nil
		if al.a.LastSeen.Add(a.cfg.DedupWindow).After(now) {
			a.armResolveLocked(al, now)
			return
		}
		a.resolveLocked(al, now)
	})
}

type routeMatch struct {
	receiver string
	groupBy  []string
	timing   Timing
}

func (a *Alerter) routesLocked(labels Labels, sev classify.Severity, forced string) []routeMatch {
	if forced != "" {
		// The alerter's own alerts about a receiver (it refuses, it is late,
		// its outbox is full) go out at once: they are why a page is late.
		t := a.cfg.Timing
		t.GroupWait = 0
		return []routeMatch{{receiver: forced, groupBy: []string{LabelAlertName}, timing: t}}
	}
	var out []routeMatch
	for _, r := range a.cfg.Routes {
		if len(r.Severities) > 0 && !slices.Contains(r.Severities, sev) {
			continue
		}
		ok := true
		for k, v := range r.Match {
			if labels[k] != v {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		t := r.Timing
		if t.GroupWait == 0 {
			t.GroupWait = a.cfg.Timing.GroupWait
		}
		if t.GroupInterval == 0 {
			t.GroupInterval = a.cfg.Timing.GroupInterval
		}
		if t.RepeatInterval == 0 {
			t.RepeatInterval = a.cfg.Timing.RepeatInterval
		}
		m := routeMatch{receiver: r.Receiver, groupBy: r.GroupBy, timing: t}
		if !slices.ContainsFunc(out, func(x routeMatch) bool { return x.receiver == m.receiver }) {
			out = append(out, m)
		}
		if !r.Continue {
			return out
		}
	}
	if len(out) == 0 {
		out = append(out, routeMatch{receiver: a.cfg.DefaultReceiver, groupBy: a.cfg.DefaultGroupBy, timing: a.cfg.Timing})
	}
	return out
}

// scheduleLocked asks for a flush of g: a new group waits GroupWait; a group
// that has notified waits until GroupInterval after its last notification.
// An urgent request (a new critical alert) is never made to wait longer than
// GroupWait: critical alerts are grouped, never held back.
func (a *Alerter) scheduleLocked(g *group, now time.Time, urgent bool) {
	at := g.createdAt.Add(g.timing.GroupWait)
	if g.flushed {
		at = g.lastFlush.Add(g.timing.GroupInterval)
	}
	if urgent {
		at = minTime(at, now.Add(g.timing.GroupWait))
	}
	a.flushAtLocked(g, maxTime(at, now), now)
}

func (a *Alerter) flushAtLocked(g *group, at, now time.Time) {
	if g.timer != nil {
		if !g.timerAt.After(at) {
			return
		}
		g.timer.Stop()
	}
	g.timerAt = at
	g.timer = a.clk.AfterFunc(at.Sub(now), func() { a.flush(g) })
}

// flush makes the group's notification: alerts that are new, due for a
// repeat, or resolved since its last one. Muted warnings stay out.
func (a *Alerter) flush(g *group) {
	now := a.clk.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.groups[g.receiver+g.key] != g {
		return
	}
	g.timer = nil
	ids := make([]uint64, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(x, y uint64) int {
		if c := strings.Compare(g.members[x].al.a.Fingerprint, g.members[y].al.a.Fingerprint); c != 0 {
			return c
		}
		return cmpUint(x, y)
	})
	var out []Alert
	still := 0
	for _, id := range ids {
		m := g.members[id]
		al := m.al
		if al.a.Status == Firing {
			switch {
			case a.inhibitedLocked(al, m):
				a.stats.Inhibited++
			case !m.notified:
				m.notified = true
				out = append(out, a.snapshotLocked(al, g))
			case m.delivered && !now.Before(m.lastDelivered.Add(g.timing.RepeatInterval)):
				m.delivered = false // the repeat's own delivery sets it again
				a.stats.Repeats++
				out = append(out, a.snapshotLocked(al, g))
			default:
				still++
			}
			continue
		}
		delete(g.members, id)
		al.members = slices.DeleteFunc(al.members, func(x *member) bool { return x == m })
		if !m.notified && (!al.event || (a.mutable(al) && !al.outsideOutage)) {
			// A condition that cleared before its group waited out is a
			// blip, which grouping exists to absorb; a warning muted for its
			// whole life by an open breaker was told by the breaker's alert.
			continue
		}
		x := a.snapshotLocked(al, g)
		out = append(out, x)
		a.resolvedCopiesLocked(al, x, now)
	}
	g.flushed, g.lastFlush = true, now
	if len(out) > 0 {
		a.enqueueLocked(g.receiver, g.key, out, still, false, now)
	}
	if len(g.members) == 0 {
		delete(a.groups, g.receiver+g.key)
	}
}

// resolvedCopiesLocked sends the resolution x of al to every receiver that
// has al firing only as a copy (a secondary, or the stand-in of a receiver
// that refused: accepted, or waiting in its outbox) and no group of its own
// to tell it: whoever was paged hears that it is over, and a later alert of
// the same fingerprint is news to it, not a second page.
func (a *Alerter) resolvedCopiesLocked(al *alertState, x Alert, now time.Time) {
	for _, r := range a.cfg.Receivers { // configuration order: deterministic
		if !slices.Contains(al.routedTo, r.Name) && a.holdsFiringLocked(r.Name, x) {
			a.enqueueLocked(r.Name, x.group, []Alert{x}, 0, true, now)
		}
	}
}

// inhibitedLocked reports whether a firing alert is muted: a job-failure
// warning (below High) about a dependency whose breaker is open, or one never
// notified whose every failure came during the outage — a warning that
// stopped with the outage is not news once it is over. Critical alerts are
// never muted.
func (a *Alerter) inhibitedLocked(al *alertState, m *member) bool {
	if !a.mutable(al) {
		return false
	}
	return a.open[al.a.Labels[LabelDependency]] || (!m.notified && !al.outsideOutage)
}

// mutable reports whether an alert is a warning an open breaker mutes: a job
// failure below High.
func (a *Alerter) mutable(al *alertState) bool {
	return al.a.Name == NameJobFailed && al.a.Severity < classify.High
}

// snapshotLocked is the alert as it goes out to g's receiver: texts redacted.
func (a *Alerter) snapshotLocked(al *alertState, g *group) Alert {
	s := al.a
	s.group = g.key
	s.Jobs = make([]JobRef, len(al.a.Jobs))
	for i, j := range al.a.Jobs {
		if !mutant.On("alert/unredacted-error") {
			j.Error = a.cfg.Redactor.String(j.Error)
		}
		if j.Fields != nil {
			j.Fields = a.cfg.Redactor.Fields(j.Fields)
		}
		s.Jobs[i] = j
	}
	if al.event {
		verb := "failed"
		if al.deadLettered {
			verb = "dead-lettered"
		}
		j := al.lastJob
		s.Summary = a.cfg.Redactor.String(fmt.Sprintf("%s job %s %s on %s: %s", j.Task, j.ID, verb, orNone(al.a.Labels[LabelDependency]), j.Error))
		if mutant.On("alert/unredacted-error") {
			s.Summary = fmt.Sprintf("%s job %s %s on %s: %s", j.Task, j.ID, verb, orNone(al.a.Labels[LabelDependency]), j.Error)
		}
	}
	s.Labels = make(Labels, len(al.a.Labels))
	for k, v := range al.a.Labels {
		s.Labels[k] = v
	}
	return s
}

// enqueueLocked puts a notification in the receiver's outbox. An alert whose
// same snapshot (same instance, same status) already waits there updates the
// waiting one instead of being sent twice; anything else keeps its place in
// line, so a receiver always hears firing before resolved. A full outbox
// folds the notification into its newest waiting one, so that no
// fingerprint is ever dropped, and raises an overflow alert.
func (a *Alerter) enqueueLocked(receiver, gkey string, alerts []Alert, still int, isCopy bool, now time.Time) {
	ob := a.outbox[receiver]
	var fresh []Alert
	for _, x := range alerts {
		if it := ob.byFP[x.Fingerprint]; it != nil {
			if i := slices.IndexFunc(it.n.Alerts, func(y Alert) bool {
				return y.Fingerprint == x.Fingerprint && y.instance == x.instance && y.Status == x.Status
			}); i >= 0 {
				it.n.Alerts[i] = x
				a.stats.Coalesced++
				continue
			}
		}
		fresh = append(fresh, x)
	}
	if len(fresh) == 0 {
		return
	}
	if len(ob.items) >= a.cfg.Outbox.Capacity {
		a.stats.Overflows++
		for i := len(ob.items) - 1; i >= 0; i-- {
			if it := ob.items[i]; !it.inFlight {
				it.n.Alerts = append(it.n.Alerts, fresh...)
				for _, x := range fresh {
					ob.byFP[x.Fingerprint] = it
				}
				a.stats.Coalesced += uint64(len(fresh))
				if it.copiedTo != "" {
					a.stats.FailedOver++
					a.enqueueLocked(it.copiedTo, gkey, slices.Clone(fresh), still, true, now)
				}
				a.overflowLocked(ob, now)
				return
			}
		}
		// Every waiting notification is in flight: exceed the bound by one
		// rather than lose the alerts.
		defer a.overflowLocked(ob, now)
	}
	a.nextID++
	it := &item{n: Notification{ID: a.nextID, Receiver: receiver, GroupKey: gkey, Alerts: fresh, StillFiring: still, CreatedAt: now},
		queuedAt: now, isCopy: isCopy}
	ob.items = append(ob.items, it)
	for _, x := range fresh {
		ob.byFP[x.Fingerprint] = it
	}
	a.stats.Notifications++
	a.pending++
	a.kickLocked(ob, 0)
	if !isCopy {
		if a.bad[receiver] {
			if to := a.standInLocked(receiver); to != "" {
				a.failoverLocked(it, to, now)
			}
		}
		it.deadline = a.clk.AfterFunc(a.cfg.Outbox.FailoverAfter, func() { a.deadlinePassed(it) })
	}
}

func (a *Alerter) overflowLocked(ob *outbox, now time.Time) {
	ob.overflowing = true
	s := Signal{Name: NameOutboxOverflow, Severity: classify.High, Labels: Labels{LabelReceiver: ob.name},
		Summary: fmt.Sprintf("the outbox of receiver %s is full (%d notifications); alerts are being coalesced", ob.name, a.cfg.Outbox.Capacity)}
	a.raiseLocked(s, a.tellLocked(ob.name), now)
}

// standInLocked names the receiver that takes copies of the notifications a
// refusing receiver holds: its Secondary, else its Fallback, else the
// default receiver, else the first other receiver configured — the first of
// these that is not refusing too. "" if there is none.
func (a *Alerter) standInLocked(recv string) string {
	r := a.receivers[recv]
	return a.firstWorkingLocked(recv, r.Secondary, r.Fallback)
}

// tellLocked names the receiver told of recv's own trouble (it refuses, it
// is late, its outbox is full): its Fallback, else its Secondary, else the
// default receiver, else the first other receiver configured — the first
// that is not refusing, so the news never goes back to the receiver it is
// about. "" (the alert is routed as any other) if there is none.
func (a *Alerter) tellLocked(recv string) string {
	r := a.receivers[recv]
	return a.firstWorkingLocked(recv, r.Fallback, r.Secondary)
}

// firstWorkingLocked returns the first of first, second, the default
// receiver and then every receiver configured that is not recv and not
// refusing; "" if there is none.
func (a *Alerter) firstWorkingLocked(recv, first, second string) string {
	for _, name := range []string{first, second, a.cfg.DefaultReceiver} {
		if name != "" && name != recv && !a.bad[name] {
			return name
		}
	}
	for _, x := range a.cfg.Receivers {
		if x.Name != recv && !a.bad[x.Name] {
			return x.Name
		}
	}
	return ""
}

// kickLocked schedules the receiver's next delivery attempt after delay,
// unless one is in flight or already scheduled.
func (a *Alerter) kickLocked(ob *outbox, delay time.Duration) {
	if ob.sending || ob.timer != nil {
		return
	}
	name := ob.name
	ob.timer = a.clk.AfterFunc(delay, func() { a.deliverNext(name) })
}

// deliverNext sends the receiver's oldest waiting notification, on a clock
// timer. A receiver's notifications go out one at a time, in order: a
// resolution is never overtaken by a later firing of the same alert, and a
// receiver that asked to be left alone (429, Retry-After) is left alone by
// all of them. Send runs without the lock held, and so does OnDelivered.
func (a *Alerter) deliverNext(recv string) {
	a.mu.Lock()
	ob := a.outbox[recv]
	ob.timer = nil
	if ob.sending || len(ob.items) == 0 {
		a.mu.Unlock()
		return
	}
	it := ob.items[0]
	if a.suppressPagedLocked(it, a.clk.Now()) {
		a.removeLocked(it)
		a.kickLocked(ob, 0)
		a.mu.Unlock()
		return
	}
	it.n.Attempt++
	it.inFlight, ob.sending = true, true
	for _, x := range it.n.Alerts {
		if ob.byFP[x.Fingerprint] == it {
			delete(ob.byFP, x.Fingerprint)
		}
	}
	n := it.n
	n.Alerts = slices.Clone(it.n.Alerts)
	sink := a.receivers[recv].Sink
	a.mu.Unlock()

	// A timer callback has no caller and so no caller's context: the send
	// gets a fresh context bounded by SendTimeout (a wall-clock deadline, as
	// every context deadline is; simulated sinks answer at once).
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.Outbox.SendTimeout)
	err := sink.Send(ctx, n)
	cancel()

	a.mu.Lock()
	now := a.clk.Now()
	it.inFlight, ob.sending = false, false
	if err == nil {
		a.deliveredLocked(it, n, now)
		a.kickLocked(ob, 0)
		a.mu.Unlock()
		if a.cfg.OnDelivered != nil {
			a.cfg.OnDelivered(n, now)
		}
		return
	}
	defer a.mu.Unlock()
	for _, x := range it.n.Alerts {
		if ob.byFP[x.Fingerprint] == nil {
			ob.byFP[x.Fingerprint] = it
		}
	}
	msg := a.cfg.Redactor.String(err.Error())
	a.log.Warn("alert delivery failed", "receiver", recv, "notification", n.ID, "attempt", n.Attempt, "error", msg)
	var he *failure.HTTPError
	if errors.As(err, &he) && misconfigured(he.Code) {
		a.stats.FailedMisconfigured++
		if !a.bad[recv] {
			a.bad[recv] = true
			tell, standIn := a.tellLocked(recv), a.standInLocked(recv)
			if tell == "" {
				a.log.Error("alert receiver refuses notifications and there is no other receiver to tell", "receiver", recv, "status", he.Code)
			}
			held := "they are held until it is fixed"
			if standIn != "" {
				held = "they are held until it is fixed, and copied to " + standIn
			}
			a.raiseLocked(Signal{Name: NameReceiverMisconfigure, Severity: classify.High, Labels: Labels{LabelReceiver: recv},
				Summary: fmt.Sprintf("receiver %s refuses notifications (HTTP %d %s); %s", recv, he.Code, he.Body, held)}, tell, now)
			if standIn != "" {
				for _, x := range ob.items {
					if x.copiedTo == "" && !x.isCopy {
						a.failoverLocked(x, standIn, now)
					}
				}
			}
		}
		// A refusal may be a blip (a token rotated and put back): try again
		// soon, backing off to HeldRetry, so that a lone receiver that
		// refused once still pages in time.
		a.kickLocked(ob, min(a.cfg.Outbox.HeldRetry, a.backoffLocked(recv, n.Attempt)))
		return
	}
	if mutant.On("alert/drop-failed-delivery") {
		a.removeLocked(it)
		a.kickLocked(ob, 0)
		return
	}
	a.stats.FailedRetryable++
	a.stats.Retried++
	delay := a.backoffLocked(recv, n.Attempt)
	if he != nil {
		if hint, ok := classify.ParseRetryAfter(he.RetryAfterHeader(), now); ok && hint > 0 {
			delay = min(hint, a.cfg.Outbox.MaxRetryAfter)
		}
	}
	a.kickLocked(ob, delay)
}

// deliveredLocked records an accepted notification: each firing alert's
// member learns it was delivered, and its repeat is due RepeatInterval from
// now.
func (a *Alerter) deliveredLocked(it *item, n Notification, now time.Time) {
	recv := n.Receiver
	a.stats.Sent++
	a.stats.AlertsSent += uint64(len(n.Alerts))
	marks := a.paged[recv]
	if marks == nil {
		marks = map[string]pageMark{}
		a.paged[recv] = marks
	}
	for _, x := range n.Alerts {
		if x.Status != Firing {
			if mk, ok := marks[x.Fingerprint]; ok && mk.instance == x.instance {
				delete(marks, x.Fingerprint)
			}
			continue
		}
		marks[x.Fingerprint] = pageMark{instance: x.instance, at: now, severity: x.Severity}
		a.creditLocked(recv, x, now, now)
	}
	if len(marks) >= a.sweepAt {
		for f, mk := range marks {
			if !now.Before(mk.at.Add(a.minRepeat)) {
				delete(marks, f)
			}
		}
		a.sweepAt = max(64, 2*len(marks))
	}
	a.removeLocked(it)
	if a.bad[recv] {
		a.bad[recv] = false
		a.clearLocked(a.signalFingerprint(NameReceiverMisconfigure, Labels{LabelReceiver: recv}), now)
	}
	if a.late[recv] && !slices.ContainsFunc(a.outbox[recv].items, func(x *item) bool { return !now.Before(x.queuedAt.Add(a.cfg.Outbox.FailoverAfter)) }) {
		a.late[recv] = false
		a.clearLocked(a.signalFingerprint(NameDeliveryLate, Labels{LabelReceiver: recv}), now)
	}
}

// creditLocked tells the member of recv's group that x came from that the
// receiver accepted it at, so that its repeat is due RepeatInterval later.
func (a *Alerter) creditLocked(recv string, x Alert, at, now time.Time) {
	g := a.groups[recv+x.group]
	if g == nil {
		return
	}
	if m := g.members[x.instance]; m != nil && m.notified {
		m.delivered, m.lastDelivered = true, at
		a.flushAtLocked(g, maxTime(maxTime(at.Add(g.timing.RepeatInterval), g.lastFlush.Add(g.timing.GroupInterval)), now), now)
	}
}

// suppressPagedLocked takes out of a notification about to be sent the
// firing alerts its receiver has accepted already — the same alert, at the
// same or a higher severity, within the shortest repeat interval — and
// reports whether nothing is left to send. One page per receiver per
// fingerprint per repeat interval, however many routes (and a secondary's
// copies) bring it there.
func (a *Alerter) suppressPagedLocked(it *item, now time.Time) (empty bool) {
	marks := a.paged[it.n.Receiver]
	if len(marks) == 0 || mutant.On("alert/no-repeat-suppression") {
		return false
	}
	ob := a.outbox[it.n.Receiver]
	kept := it.n.Alerts[:0]
	for _, x := range it.n.Alerts {
		if mk, ok := marks[x.Fingerprint]; ok && x.Status == Firing && mk.instance == x.instance &&
			x.Severity <= mk.severity && now.Before(mk.at.Add(a.minRepeat)) {
			a.stats.Suppressed++
			if ob.byFP[x.Fingerprint] == it {
				delete(ob.byFP, x.Fingerprint)
			}
			a.creditLocked(it.n.Receiver, x, mk.at, now)
			continue
		}
		kept = append(kept, x)
	}
	clear(it.n.Alerts[len(kept):])
	it.n.Alerts = kept
	return len(kept) == 0
}

// misconfigured reports the HTTP statuses that mean the receiver, not the
// moment, is wrong: retrying as usual cannot help.
func misconfigured(code int) bool {
	switch code {
	case 400, 401, 403, 404, 410:
		return true
	}
	return false
}

// backoffLocked draws a full-jitter delay for the attempt-th retry from the
// receiver's own stream.
func (a *Alerter) backoffLocked(recv string, attempt int) time.Duration {
	ceiling := a.cfg.Outbox.RetryMax
	if shift := attempt - 1; shift < 62 {
		if d := a.cfg.Outbox.RetryBase << shift; d > 0 && d < ceiling {
			ceiling = d
		}
	}
	return time.Duration(a.rngs[recv].Int64N(int64(ceiling) + 1))
}

// deadlinePassed runs FailoverAfter after a notification was made, if it is
// still waiting: the secondary receiver gets a copy, and the fallback hears
// that the receiver is late. Independent of the grouping timers.
func (a *Alerter) deadlinePassed(it *item) {
	now := a.clk.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	it.deadline = nil
	if it.done {
		return
	}
	recv := it.n.Receiver
	r := a.receivers[recv]
	if r.Secondary != "" && it.copiedTo == "" {
		a.failoverLocked(it, r.Secondary, now)
	}
	if !a.late[recv] && !a.bad[recv] { // a misconfigured receiver has its own alert
		a.late[recv] = true
		a.raiseLocked(Signal{Name: NameDeliveryLate, Severity: classify.High, Labels: Labels{LabelReceiver: recv},
			Summary: fmt.Sprintf("receiver %s has not accepted notification %d in %s", recv, it.n.ID, a.cfg.Outbox.FailoverAfter)}, a.tellLocked(recv), now)
	}
}

// failoverLocked copies a waiting notification to receiver to, with what
// is still news there: a firing alert that still fires, and a resolution
// for a receiver that has the alert firing (accepted, or waiting in its
// outbox).
func (a *Alerter) failoverLocked(it *item, to string, now time.Time) {
	it.copiedTo = to
	var alerts []Alert
	for _, x := range it.n.Alerts {
		if x.Status == Resolved && !a.holdsFiringLocked(to, x) {
			continue
		}
		if live := a.alerts[x.Fingerprint]; x.Status == Firing && (live == nil || live.id != x.instance) {
			continue
		}
		alerts = append(alerts, x)
	}
	if len(alerts) == 0 {
		return
	}
	a.stats.FailedOver++
	a.enqueueLocked(to, it.n.GroupKey, alerts, it.n.StillFiring, true, now)
}

// holdsFiringLocked reports whether receiver recv has x's alert firing and
// not yet resolved: accepted firing (and no resolution accepted since), or
// firing in its outbox after any resolution waiting there.
func (a *Alerter) holdsFiringLocked(recv string, x Alert) bool {
	mk, firing := a.paged[recv][x.Fingerprint]
	firing = firing && mk.instance == x.instance
	ob := a.outbox[recv]
	if !firing && ob.byFP[x.Fingerprint] == nil && !ob.sending {
		return false // nothing of this fingerprint waits there: no scan
	}
	for _, it := range ob.items {
		for _, y := range it.n.Alerts {
			if y.instance == x.instance {
				firing = y.Status == Firing
			}
		}
	}
	return firing
}

func (a *Alerter) removeLocked(it *item) {
	it.done = true
	ob := a.outbox[it.n.Receiver]
	ob.items = slices.DeleteFunc(ob.items, func(x *item) bool { return x == it })
	for _, x := range it.n.Alerts {
		if ob.byFP[x.Fingerprint] == it {
			delete(ob.byFP, x.Fingerprint)
		}
	}
	if it.deadline != nil {
		it.deadline.Stop()
		it.deadline = nil
	}
	a.pending--
	if ob.overflowing && len(ob.items) < a.cfg.Outbox.Capacity {
		ob.overflowing = false
		a.clearLocked(a.signalFingerprint(NameOutboxOverflow, Labels{LabelReceiver: ob.name}), a.clk.Now())
	}
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

// signalFingerprint is "alertname=NAME,k=v,..." over the label keys in order,
// values redacted: fingerprints leave the process as dedup keys.
func (a *Alerter) signalFingerprint(name string, labels Labels) string {
	var b strings.Builder
	b.WriteString(LabelAlertName + "=" + name)
	for _, k := range labels.Keys() {
		if k == LabelAlertName {
			continue
		}
		b.WriteString("," + k + "=" + a.redactLabel(k, labels[k]))
	}
	return b.String()
}

// groupKey renders the group's labels: `{dependency="payment-gateway"}`.
func groupKey(labels Labels, by []string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range by {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%q", k, labels[k])
	}
	b.WriteByte('}')
	return b.String()
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
