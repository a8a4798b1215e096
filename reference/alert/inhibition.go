package alert

import (
	"fmt"
	"slices"
	"time"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/reference/degrade"
)

type flapState struct {
	opens  []time.Time
	active bool
	timer  clock.Timer
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
