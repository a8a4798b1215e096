package alert

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/internal/mutant"
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
