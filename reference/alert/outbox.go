package alert

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/reference/failure"
	"github.com/faultline/faultline/reference/internal/mutant"
)

// pageMark is a receiver's last acceptance of an alert firing.
type pageMark struct {
	instance uint64
	at       time.Time
	severity classify.Severity
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
