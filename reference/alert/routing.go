package alert

import (
	"slices"
	"time"

	"github.com/faultline/faultline/reference/classify"
)

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
