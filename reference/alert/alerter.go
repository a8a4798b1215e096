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
)

// Alert names raised by the Alerter itself.
const (
	NameJobFailed            = "job-failed"
	NameBreakerOpen          = "breaker-open"
	NameBreakerFlapping      = "breaker-flapping"
	NameReceiverMisconfigure = "receiver-misconfigured"
	NameOutboxOverflow       = "alert-outbox-overflow"
)

// Failure is one job failure reported to the alerter.
type Failure struct {
	JobID, Task, Dependency string
	Class                   classify.Class
	Severity                classify.Severity
	Source                  classify.Source
	Attempts                int
	// Err is the error text; it is redacted before it is kept.
	Err string
	// Fields is a short summary of the job's payload; it is redacted before
	// it is kept.
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
	// Pending is the number of notifications waiting in outboxes, Held those
	// held for misconfigured receivers.
	Pending, Held int
}

// Alerter raises, groups, deduplicates, inhibits and delivers alerts. It is a
// synchronous state machine on its clock: it starts no goroutine; group
// flushes, repeats, resolutions and delivery attempts run on clock timers,
// and Sink.Send is called from those callbacks without the lock held. It is
// safe for concurrent use.
type Alerter struct {
	cfg       Config
	clk       clock.Clock
	log       *slog.Logger
	receivers map[string]*Receiver

	mu      sync.Mutex
	rng     *rand.Rand
	alerts  map[string]*alertState
	groups  map[string]*group
	open    map[string]bool
	flaps   map[string]*flapState
	outbox  map[string]*outbox
	bad     map[string]bool
	nextID  uint64
	stats   Stats
	pending int
}

type alertState struct {
	a      Alert
	event  bool // a job-failure alert, resolved by DedupWindow without occurrences
	groups []*group
	// lastDelivered is when a sink last accepted this alert firing, per
	// receiver: a waiting duplicate of a page just delivered is dropped.
	lastDelivered map[string]time.Time
	resolveTimer  clock.Timer
	// lastJob and deadLettered describe a job-failure alert's latest
	// failure; its summary is rendered from them when it goes out.
	lastJob      JobRef
	deadLettered bool
	// outsideOutage says some occurrence came while the alert's dependency
	// had no open breaker.
	outsideOutage bool
}

type member struct {
	al           *alertState
	notified     bool
	lastNotified time.Time
}

type group struct {
	key, receiver string
	timing        Timing
	members       map[string]*member
	createdAt     time.Time
	flushed       bool
	lastFlush     time.Time
	timer         clock.Timer
	timerAt       time.Time
}

type flapState struct {
	opens  []time.Time
	active bool
	timer  clock.Timer
}

type outbox struct {
	name string
	// sending says a Send is in flight; timer is the next attempt.
	sending bool
	timer   clock.Timer
	items   []*item
	// byFP indexes the waiting (not in flight) items by the fingerprints
	// they carry, for coalescing.
	byFP map[string]*item
}

type item struct {
	n          Notification
	repeat     time.Duration
	queuedAt   time.Time
	failover   clock.Timer
	inFlight   bool
	done       bool
	failedOver bool
	isCopy     bool
}

// New returns an alerter for cfg (defaults applied) on clk, drawing delivery
// jitter from rng. It fails with a *ConfigError naming an invalid field.
func New(cfg Config, clk clock.Clock, rng *rand.Rand) (*Alerter, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if clk == nil || rng == nil {
		return nil, &ConfigError{Field: "clock/rng", Reason: "an alerter needs a clock and a random source"}
	}
	a := &Alerter{
		cfg: cfg, clk: clk, rng: rng, log: cfg.Logger,
		receivers: map[string]*Receiver{},
		alerts:    map[string]*alertState{},
		groups:    map[string]*group{},
		open:      map[string]bool{},
		flaps:     map[string]*flapState{},
		outbox:    map[string]*outbox{},
		bad:       map[string]bool{},
	}
	if a.log == nil {
		a.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	for i := range cfg.Receivers {
		r := cfg.Receivers[i]
		a.receivers[r.Name] = &r
		a.outbox[r.Name] = &outbox{name: r.Name, byFP: map[string]*item{}}
	}
	return a, nil
}

// JobFailed reports a job failure. Failures of one fingerprint (by default
// task, class and dependency) are one alert, counted, with a sample of its
// latest jobs; it resolves after DedupWindow without a new failure.
func (a *Alerter) JobFailed(f Failure) {
	now := a.clk.Now()
	job := JobRef{ID: f.JobID, Task: f.Task, Attempts: f.Attempts, Class: f.Class, At: now,
		Error: a.cfg.Redactor.String(f.Err), Fields: a.cfg.Redactor.Fields(f.Fields)}

	a.mu.Lock()
	defer a.mu.Unlock()
	// The labels map is built only for a new alert: a repeat occurrence, the
	// common case in a failure storm, costs a fingerprint and a lookup.
	var b strings.Builder
	for i, k := range a.cfg.FingerprintLabels {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(failureLabel(&f, k))
	}
	fp := b.String()
	var labels Labels
	if a.alerts[fp] == nil {
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
				labels[k] = v
			}
		}
	}
	al := a.occurLocked(fp, NameJobFailed, f.Severity, labels, "", now)
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
}

// failureLabel returns the value of label k for a failure, as JobFailed's
// labels map would hold it.
func failureLabel(f *Failure, k string) string {
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
	return f.Labels[k]
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
	a.clearLocked(signalFingerprint(name, labels), now)
}

// BreakerChanged turns a breaker transition into alerts: an opening raises a
// breaker-open alert for the dependency and mutes its per-job warnings until
// the breaker closes (critical alerts are never muted); Threshold openings
// within the flapping Window raise one breaker-flapping alert instead of one
// per opening. Register it with Breaker.OnStateChange.
func (a *Alerter) BreakerChanged(t degrade.Transition) {
	now := a.clk.Now()
	dep := t.Breaker
	a.mu.Lock()
	defer a.mu.Unlock()
	openLabels := Labels{LabelAlertName: NameBreakerOpen, LabelDependency: dep}
	flapLabels := Labels{LabelAlertName: NameBreakerFlapping, LabelDependency: dep}
	switch t.To {
	case degrade.Open:
		a.open[dep] = true
		fs := a.flaps[dep]
		if fs == nil {
			fs = &flapState{}
			a.flaps[dep] = fs
		}
		cut := now.Add(-a.cfg.Flapping.Window)
		fs.opens = slices.DeleteFunc(append(fs.opens, now), func(at time.Time) bool { return !at.After(cut) })
		if len(fs.opens) >= a.cfg.Flapping.Threshold {
			if !fs.active {
				fs.active = true
				a.clearLocked(signalFingerprint(NameBreakerOpen, openLabels), now)
			}
			a.raiseLocked(Signal{Name: NameBreakerFlapping, Severity: a.cfg.BreakerSeverity, Labels: flapLabels,
				Summary: fmt.Sprintf("circuit breaker for %s opened %d times in %s", dep, len(fs.opens), a.cfg.Flapping.Window)}, "", now)
			if fs.timer != nil {
				fs.timer.Stop()
			}
			fs.timer = a.clk.AfterFunc(a.cfg.Flapping.Window, func() { a.flapQuiet(dep) })
			return
		}
		a.raiseLocked(Signal{Name: NameBreakerOpen, Severity: a.cfg.BreakerSeverity, Labels: openLabels,
			Summary: fmt.Sprintf("circuit breaker for %s is open (%s) for %s", dep, t.Reason, t.OpenFor)}, "", now)
	case degrade.Closed:
		a.open[dep] = false
		a.clearLocked(signalFingerprint(NameBreakerOpen, openLabels), now)
	}
}

// flapQuiet resolves a flapping alert once a whole window passed without an
// opening.
func (a *Alerter) flapQuiet(dep string) {
	now := a.clk.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	fs := a.flaps[dep]
	if fs == nil || !fs.active {
		return
	}
	last := fs.opens[len(fs.opens)-1]
	if wait := last.Add(a.cfg.Flapping.Window).Sub(now); wait > 0 {
		fs.timer = a.clk.AfterFunc(wait, func() { a.flapQuiet(dep) })
		return
	}
	fs.active, fs.opens, fs.timer = false, fs.opens[:0], nil
	a.clearLocked(signalFingerprint(NameBreakerFlapping, Labels{LabelAlertName: NameBreakerFlapping, LabelDependency: dep}), now)
	if a.open[dep] {
		a.raiseLocked(Signal{Name: NameBreakerOpen, Severity: a.cfg.BreakerSeverity,
			Labels:  Labels{LabelAlertName: NameBreakerOpen, LabelDependency: dep},
			Summary: fmt.Sprintf("circuit breaker for %s is open", dep)}, "", now)
	}
}

func (a *Alerter) raiseLocked(s Signal, receiver string, now time.Time) {
	labels := Labels{LabelAlertName: s.Name, LabelSeverity: s.Severity.String()}
	for k, v := range s.Labels {
		labels[k] = v
	}
	a.occurLockedTo(signalFingerprint(s.Name, s.Labels), s.Name, s.Severity, labels, a.cfg.Redactor.String(s.Summary), receiver, now)
}

// occurLocked records one occurrence of fingerprint fp and returns its alert.
func (a *Alerter) occurLocked(fp, name string, sev classify.Severity, labels Labels, summary string, now time.Time) *alertState {
	return a.occurLockedTo(fp, name, sev, labels, summary, "", now)
}

// occurLockedTo is occurLocked with the receiver forced (config alerts go to
// a receiver's fallback, bypassing the routes) when receiver is set.
func (a *Alerter) occurLockedTo(fp, name string, sev classify.Severity, labels Labels, summary, receiver string, now time.Time) *alertState {
	a.stats.Occurrences++
	al := a.alerts[fp]
	defer func() {
		if !a.open[al.a.Labels[LabelDependency]] {
			al.outsideOutage = true
		}
	}()
	if al != nil {
		a.stats.Deduplicated++
		al.a.Count++
		al.a.LastSeen = now
		if summary != "" {
			al.a.Summary = summary
		}
		al.a.Severity = max(al.a.Severity, sev)
		if al.a.Status == Resolved {
			// Resolved and back before anyone was told: one alert.
			al.a.Status, al.a.ResolvedAt = Firing, time.Time{}
		}
		for _, g := range al.groups {
			if m := g.members[fp]; m != nil && !m.notified {
				a.scheduleLocked(g, now, al.a.Severity == classify.High)
			}
		}
		return al
	}
	a.stats.Raised++
	al = &alertState{a: Alert{Fingerprint: fp, Name: name, Severity: sev, Labels: labels, Summary: summary,
		Status: Firing, Count: 1, FirstSeen: now, LastSeen: now}}
	a.alerts[fp] = al
	for _, rt := range a.routesLocked(labels, sev, receiver) {
		key := rt.receiver + groupKey(labels, rt.groupBy)
		g := a.groups[key]
		if g == nil {
			g = &group{key: groupKey(labels, rt.groupBy), receiver: rt.receiver, timing: rt.timing, members: map[string]*member{}, createdAt: now}
			a.groups[key] = g
		} else if len(g.members) > 0 {
			a.stats.Grouped++
		}
		g.members[fp] = &member{al: al}
		al.groups = append(al.groups, g)
		a.scheduleLocked(g, now, sev == classify.High)
	}
	return al
}

func (a *Alerter) clearLocked(fp string, now time.Time) {
	al := a.alerts[fp]
	if al == nil || al.a.Status == Resolved {
		return
	}
	a.resolveLocked(al, now)
}

func (a *Alerter) resolveLocked(al *alertState, now time.Time) {
	a.stats.Resolved++
	al.a.Status, al.a.ResolvedAt = Resolved, now
	if al.resolveTimer != nil {
		al.resolveTimer.Stop()
		al.resolveTimer = nil
	}
	for _, g := range al.groups {
		a.scheduleLocked(g, now, false)
	}
}

// armResolveLocked schedules the check that resolves an event alert after
// DedupWindow without occurrences. One timer per alert, re-armed lazily, so
// an occurrence costs no timer operation.
func (a *Alerter) armResolveLocked(al *alertState, now time.Time) {
	wait := al.a.LastSeen.Add(a.cfg.DedupWindow).Sub(now)
	fp := al.a.Fingerprint
	al.resolveTimer = a.clk.AfterFunc(max(wait, 0), func() {
		now := a.clk.Now()
		a.mu.Lock()
		defer a.mu.Unlock()
		cur := a.alerts[fp]
		if cur != al || al.a.Status == Resolved {
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
		return []routeMatch{{receiver: forced, groupBy: []string{LabelAlertName}, timing: a.cfg.Timing}}
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
		if !slices.ContainsFunc(out, func(x routeMatch) bool { return x.receiver == m.receiver && slices.Equal(x.groupBy, m.groupBy) }) {
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
	var out []Alert
	still := 0
	var nextRepeat time.Time
	for _, fp := range sortedKeys(g.members) {
		m := g.members[fp]
		al := m.al
		switch {
		case al.a.Status == Firing && a.inhibitedLocked(al, m):
			a.stats.Inhibited++
		case al.a.Status == Firing && !m.notified:
			m.notified, m.lastNotified = true, now
			out = append(out, al.snapshot())
		case al.a.Status == Firing && !now.Before(m.lastNotified.Add(g.timing.RepeatInterval)):
			m.lastNotified = now
			a.stats.Repeats++
			out = append(out, al.snapshot())
		case al.a.Status == Firing:
			still++
		default: // resolved
			delete(g.members, fp)
			al.groups = slices.DeleteFunc(al.groups, func(x *group) bool { return x == g })
			if len(al.groups) == 0 && a.alerts[fp] == al {
				delete(a.alerts, fp)
			}
			switch {
			case m.notified:
			case !al.event:
				// A condition that cleared before its group waited out:
				// a blip, which grouping exists to absorb.
				continue
			case a.mutableLocked(al) && !al.outsideOutage:
				// Muted for its whole life by an open breaker: the
				// breaker's own alert told the story.
				continue
			}
			// A job failure that resolved before it was notified still goes
			// out, resolved: it happened, and a critical one must page.
			out = append(out, al.snapshot())
		}
		if m.notified && al.a.Status == Firing {
			r := m.lastNotified.Add(g.timing.RepeatInterval)
			if nextRepeat.IsZero() || r.Before(nextRepeat) {
				nextRepeat = r
			}
		}
	}
	g.flushed, g.lastFlush = true, now
	if len(out) > 0 {
		a.enqueueLocked(g.receiver, g.key, out, still, g.timing.RepeatInterval, false, now)
	}
	switch {
	case len(g.members) == 0:
		delete(a.groups, g.receiver+g.key)
	case !nextRepeat.IsZero():
		a.flushAtLocked(g, maxTime(nextRepeat, now.Add(g.timing.GroupInterval)), now)
	}
}

// inhibitedLocked reports whether a firing alert is muted: a job-failure
// warning (below High) about a dependency whose breaker is open, or one never
// notified whose every failure happened while it was open — a warning that
// stopped with the outage is not news once it is over. Critical alerts are
// never muted.
func (a *Alerter) inhibitedLocked(al *alertState, m *member) bool {
	if !a.mutableLocked(al) {
		return false
	}
	return a.open[al.a.Labels[LabelDependency]] || (!m.notified && !al.outsideOutage)
}

// mutableLocked reports whether an alert is a warning an open breaker mutes:
// a job failure below High.
func (a *Alerter) mutableLocked(al *alertState) bool {
	return al.a.Name == NameJobFailed && al.a.Severity < classify.High
}

func (al *alertState) snapshot() Alert {
	s := al.a
	s.Jobs = slices.Clone(al.a.Jobs)
	if al.event {
		verb := "failed"
		if al.deadLettered {
			verb = "dead-lettered"
		}
		j := al.lastJob
		s.Summary = fmt.Sprintf("%s job %s %s on %s: %s", j.Task, j.ID, verb, orNone(al.a.Labels[LabelDependency]), j.Error)
	}
	return s
}

// enqueueLocked puts a notification in the receiver's outbox. An alert whose
// fingerprint already waits there updates the waiting notification instead
// of being sent twice; a full outbox folds the rest into its newest waiting
// notification, so that no fingerprint is ever dropped, and raises an
// overflow alert.
func (a *Alerter) enqueueLocked(receiver, gkey string, alerts []Alert, still int, repeat time.Duration, isCopy bool, now time.Time) {
	ob := a.outbox[receiver]
	fresh := alerts[:0:0]
	for _, x := range alerts {
		if it := ob.byFP[x.Fingerprint]; it != nil && !supersedes(it, x) {
			for i := range it.n.Alerts {
				if it.n.Alerts[i].Fingerprint == x.Fingerprint {
					it.n.Alerts[i] = x
				}
			}
			a.stats.Coalesced++
			continue
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
				a.overflowAlertLocked(receiver, now)
				return
			}
		}
		// Every waiting notification is in flight: exceed the bound by one
		// rather than lose the alerts.
		defer a.overflowAlertLocked(receiver, now)
	}
	a.nextID++
	it := &item{n: Notification{ID: a.nextID, Receiver: receiver, GroupKey: gkey, Alerts: fresh, StillFiring: still, CreatedAt: now},
		repeat: repeat, queuedAt: now, isCopy: isCopy}
	ob.items = append(ob.items, it)
	for _, x := range fresh {
		ob.byFP[x.Fingerprint] = it
	}
	a.stats.Notifications++
	a.pending++
	a.kickLocked(ob, 0)
	if r := a.receivers[receiver]; r.Secondary != "" && !isCopy {
		if a.bad[receiver] {
			a.failoverLocked(it, now)
		} else {
			it.failover = a.clk.AfterFunc(a.cfg.Outbox.FailoverAfter, func() { a.failoverDue(it) })
		}
	}
}

// supersedes reports whether x, firing, would overwrite a waiting resolved
// notice of its fingerprint: a new firing after a resolution must not erase
// the resolution, so it is queued on its own.
func supersedes(it *item, x Alert) bool {
	if x.Status != Firing {
		return false
	}
	for i := range it.n.Alerts {
		if it.n.Alerts[i].Fingerprint == x.Fingerprint {
			return it.n.Alerts[i].Status == Resolved
		}
	}
	return false
}

func (a *Alerter) overflowAlertLocked(receiver string, now time.Time) {
	s := Signal{Name: NameOutboxOverflow, Severity: classify.High, Labels: Labels{LabelReceiver: receiver},
		Summary: fmt.Sprintf("the outbox of receiver %s is full (%d notifications); alerts are being coalesced", receiver, a.cfg.Outbox.Capacity)}
	a.raiseLocked(s, a.receivers[receiver].Fallback, now)
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
// all of them. Send runs without the lock held.
func (a *Alerter) deliverNext(recv string) {
	a.mu.Lock()
	ob := a.outbox[recv]
	ob.timer = nil
	if ob.sending {
		a.mu.Unlock()
		return
	}
	now := a.clk.Now()
	var it *item
	for len(ob.items) > 0 {
		head := ob.items[0]
		a.dropDeliveredLocked(head, now)
		if len(head.n.Alerts) > 0 {
			it = head
			break
		}
		a.removeLocked(head)
	}
	if it == nil {
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
	defer a.mu.Unlock()
	now = a.clk.Now()
	it.inFlight, ob.sending = false, false
	if err == nil {
		a.deliveredLocked(it, n, now)
		a.kickLocked(ob, 0)
		return
	}
	for _, x := range it.n.Alerts {
		if ob.byFP[x.Fingerprint] == nil {
			ob.byFP[x.Fingerprint] = it
		}
	}
	a.log.Warn("alert delivery failed", "receiver", recv, "notification", n.ID, "attempt", n.Attempt, "error", err.Error())
	r := a.receivers[recv]
	var he *failure.HTTPError
	if errors.As(err, &he) && misconfigured(he.Code) {
		a.stats.FailedMisconfigured++
		if !a.bad[recv] {
			a.bad[recv] = true
			a.raiseLocked(Signal{Name: NameReceiverMisconfigure, Severity: classify.High, Labels: Labels{LabelReceiver: recv},
				Summary: fmt.Sprintf("receiver %s refuses notifications (HTTP %d %s); they are held until it is fixed", recv, he.Code, a.cfg.Redactor.String(he.Body))}, r.Fallback, now)
			if r.Secondary != "" {
				for _, x := range ob.items {
					if !x.failedOver && !x.isCopy {
						a.failoverLocked(x, now)
					}
				}
			}
		}
		a.kickLocked(ob, a.cfg.Outbox.HeldRetry)
		return
	}
	a.stats.FailedRetryable++
	a.stats.Retried++
	delay := a.backoffLocked(n.Attempt)
	if he != nil {
		if hint, ok := classify.ParseRetryAfter(he.RetryAfterHeader(), now); ok && hint > 0 {
			delay = min(hint, a.cfg.Outbox.MaxRetryAfter)
		}
	}
	a.kickLocked(ob, delay)
}

// dropDeliveredLocked removes from a waiting notification the firing alerts
// its receiver accepted within their repeat interval: a repeat queued while
// the page was still on its way is not sent twice.
func (a *Alerter) dropDeliveredLocked(it *item, now time.Time) {
	ob := a.outbox[it.n.Receiver]
	it.n.Alerts = slices.DeleteFunc(it.n.Alerts, func(x Alert) bool {
		if x.Status != Firing {
			return false
		}
		al := a.alerts[x.Fingerprint]
		if al == nil {
			return false
		}
		at, ok := al.lastDelivered[it.n.Receiver]
		if !ok || !now.Before(at.Add(it.repeat)) {
			return false
		}
		a.stats.Coalesced++
		if ob.byFP[x.Fingerprint] == it {
			delete(ob.byFP, x.Fingerprint)
		}
		return true
	})
}

// deliveredLocked records an accepted notification.
func (a *Alerter) deliveredLocked(it *item, n Notification, now time.Time) {
	recv := n.Receiver
	a.stats.Sent++
	a.stats.AlertsSent += uint64(len(n.Alerts))
	for _, x := range n.Alerts {
		al := a.alerts[x.Fingerprint]
		switch {
		case al == nil:
		case x.Status == Firing:
			if al.lastDelivered == nil {
				al.lastDelivered = map[string]time.Time{}
			}
			al.lastDelivered[recv] = now
		default:
			// Told resolved: a new firing is a new page.
			delete(al.lastDelivered, recv)
		}
	}
	a.removeLocked(it)
	if a.bad[recv] {
		a.bad[recv] = false
		a.clearLocked(signalFingerprint(NameReceiverMisconfigure, Labels{LabelReceiver: recv}), now)
	}
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

// backoffLocked draws a full-jitter delay for the attempt-th retry.
func (a *Alerter) backoffLocked(attempt int) time.Duration {
	ceiling := a.cfg.Outbox.RetryMax
	if shift := attempt - 1; shift < 62 {
		if d := a.cfg.Outbox.RetryBase << shift; d > 0 && d < ceiling {
			ceiling = d
		}
	}
	return time.Duration(a.rng.Int64N(int64(ceiling) + 1))
}

func (a *Alerter) failoverDue(it *item) {
	now := a.clk.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	it.failover = nil
	if it.done || it.failedOver {
		return
	}
	a.failoverLocked(it, now)
}

func (a *Alerter) failoverLocked(it *item, now time.Time) {
	it.failedOver = true
	a.stats.FailedOver++
	sec := a.receivers[it.n.Receiver].Secondary
	a.enqueueLocked(sec, it.n.GroupKey, slices.Clone(it.n.Alerts), it.n.StillFiring, it.repeat, true, now)
}

func (a *Alerter) removeLocked(it *item) {
	it.done = true
	ob := a.outbox[it.n.Receiver]
	ob.items = slices.DeleteFunc(ob.items, func(x *item) bool { return x == it })
	for fp, x := range ob.byFP {
		if x == it {
			delete(ob.byFP, fp)
		}
	}
	if it.failover != nil {
		it.failover.Stop()
		it.failover = nil
	}
	a.pending--
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

// Alerts returns the alerts currently known, firing or resolved and not yet
// notified, sorted by fingerprint.
func (a *Alerter) Alerts() []Alert {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]Alert, 0, len(a.alerts))
	for _, fp := range sortedKeys(a.alerts) {
		out = append(out, a.alerts[fp].snapshot())
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
	slices.SortFunc(out, func(x, y Notification) int { return int64Cmp(x.ID, y.ID) })
	return out
}

func int64Cmp(x, y uint64) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// fingerprint joins the values of keys: "alertname=job-failed,task=charge,...".
func fingerprint(labels Labels, keys []string) string {
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(labels[k])
	}
	return b.String()
}

func signalFingerprint(name string, labels Labels) string {
	var b strings.Builder
	b.WriteString(LabelAlertName + "=" + name)
	for _, k := range labels.Keys() {
		if k == LabelAlertName {
			continue
		}
		b.WriteString("," + k + "=" + labels[k])
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
