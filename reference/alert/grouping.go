package alert

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/reference/internal/mutant"
)

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
