package alert

import (
	"fmt"
	"time"

	"github.com/faultline/faultline/reference/classify"
)

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
