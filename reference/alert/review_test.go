package alert_test

import (
	"net/http"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/degrade"
	"github.com/faultline/faultline/reference/failure"
)

// Specs for the cases a review found: each once lost or misdelivered a page.
var _ = Describe("Alerter edge cases", func() {
	summary := func(ds []delivery) []any {
		var out []any
		for _, d := range ds {
			out = append(out, d.At, d.fingerprints())
		}
		return out
	}
	auth := fp("auth", "critical", "gw")

	It("pages again on every route when a resolved alert fires anew, whatever the routes' intervals", func() {
		h := newHarness(alert.Config{
			DefaultReceiver: "pager",
			Routes: []alert.Route{
				{Receiver: "pager", Timing: alert.Timing{GroupInterval: mn}, Continue: true},
				{Receiver: "team", Timing: alert.Timing{GroupInterval: 10 * mn}},
			},
		}, "pager", "team")
		h.at(0)
		h.a.JobFailed(jobFailure("auth", "gw", classify.Critical, classify.High, "a1"))
		for t := 7 * mn; t <= 40*mn; t += mn {
			h.at(t)
			h.a.JobFailed(jobFailure("auth", "gw", classify.Critical, classify.High, "a2"))
		}
		h.at(41 * mn)
		Expect(summary(h.sinks["pager"].deliveries())).To(Equal([]any{
			30 * s, []string{auth + ":firing"},
			5 * mn, []string{auth + ":resolved"},
			7*mn + 30*s, []string{auth + ":firing"},
		}))
		Expect(summary(h.sinks["team"].deliveries())).To(Equal([]any{
			30 * s, []string{auth + ":firing"},
			7*mn + 30*s, []string{auth + ":resolved", auth + ":firing"},
		}), "a new critical alert waits at most the group wait, even in a slow group")
	})

	It("routes and pages an alert that turns critical, even when it was already told as a warning", func() {
		h := newHarness(alert.Config{
			FingerprintLabels: []string{alert.LabelAlertName, alert.LabelDependency},
			DefaultReceiver:   "log",
			Routes:            []alert.Route{{Receiver: "pager", Severities: []classify.Severity{classify.High}, Continue: true}},
		}, "log", "pager")
		for t := time.Duration(0); t <= 3*mn; t += 10 * s {
			h.at(t)
			sev, class := classify.Medium, classify.Transient
			if t >= 2*mn {
				sev, class = classify.High, classify.Critical
			}
			h.a.JobFailed(jobFailure("charge", "gw", class, sev, "j"))
		}
		h.at(4 * mn)
		dep := "alertname=job-failed,dependency=gw"
		Expect(summary(h.sinks["pager"].deliveries())).To(Equal([]any{2*mn + 30*s, []string{dep + ":firing"}}))
		Expect(h.sinks["pager"].deliveries()[0].N.Alerts[0].Severity).To(Equal(classify.High))
		Expect(summary(h.sinks["log"].deliveries())).To(Equal([]any{
			30 * s, []string{dep + ":firing"},
			2*mn + 30*s, []string{dep + ":firing"},
		}), "the warning, then the escalation")
	})

	It("repeats RepeatInterval after the receiver accepted the page, not after it was queued", func() {
		h := newHarness(alert.Config{})
		once := true
		h.sinks["pager"].answer = func(alert.Notification) error {
			if once {
				once = false
				return &failure.HTTPError{Code: 429, Header: http.Header{"Retry-After": {"30"}}}
			}
			return nil
		}
		for t := time.Duration(0); t <= 5*time.Hour; t += mn {
			h.at(t)
			h.a.JobFailed(jobFailure("auth", "gw", classify.Critical, classify.High, "a"))
		}
		h.at(6 * time.Hour)
		Expect(summary(h.sinks["pager"].deliveries())).To(Equal([]any{
			60 * s, []string{auth + ":firing"},
			4*time.Hour + 60*s, []string{auth + ":firing"},
			5*time.Hour + 5*mn, []string{auth + ":resolved"},
		}))
		Expect(h.a.Stats().Repeats).To(Equal(uint64(1)))
	})

	It("does not call a dependency that stays down flapping: failed probes are not flips", func() {
		h := newHarness(alert.Config{})
		h.at(0)
		h.a.BreakerChanged(degrade.Transition{Breaker: "gw", From: degrade.Closed, To: degrade.Open})
		for t := 5 * s; t < 20*mn; t += 10 * s {
			h.at(t)
			h.a.BreakerChanged(degrade.Transition{Breaker: "gw", From: degrade.Open, To: degrade.HalfOpen})
			h.a.BreakerChanged(degrade.Transition{Breaker: "gw", From: degrade.HalfOpen, To: degrade.Open})
		}
		h.at(21 * mn)
		Expect(summary(h.sinks["pager"].deliveries())).To(Equal([]any{30 * s, []string{"alertname=breaker-open,dependency=gw:firing"}}))
		Expect(h.a.Alerts()).To(ConsistOf(HaveField("Name", alert.NameBreakerOpen)))
	})

	It("mutes warnings that began just before the breaker opened, as part of its outage", func() {
		h := newHarness(alert.Config{})
		for t := time.Duration(0); t <= 2*mn; t += 5 * s {
			h.at(t)
			if t == 20*s {
				h.a.BreakerChanged(degrade.Transition{Breaker: "gw", From: degrade.Closed, To: degrade.Open})
			}
			h.a.JobFailed(jobFailure("charge", "gw", classify.Transient, classify.Medium, "c"))
		}
		h.at(3 * mn)
		h.a.BreakerChanged(degrade.Transition{Breaker: "gw", From: degrade.HalfOpen, To: degrade.Closed})
		h.at(30 * mn)
		Expect(summary(h.sinks["pager"].deliveries())).To(Equal([]any{
			30 * s, []string{"alertname=breaker-open,dependency=gw:firing"},
			5*mn + 30*s, []string{"alertname=breaker-open,dependency=gw:resolved"},
		}), "the group began with the warnings at 0s; the breaker's alert joins it")
		Expect(h.a.Stats().Inhibited).To(Equal(uint64(2)), "held back at 30s and at 5m30s, dropped unsent when it resolved")
	})

	It("tells the fallback when a receiver misses the delivery deadline, and clears it once it delivers", func() {
		h := newHarness(alert.Config{Receivers: []alert.Receiver{{Name: "pager", Fallback: "ops"}}}, "pager", "ops")
		down := true
		h.sinks["pager"].answer = func(alert.Notification) error {
			if down {
				return &failure.HTTPError{Code: 503}
			}
			return nil
		}
		h.at(0)
		h.a.JobFailed(jobFailure("auth", "gw", classify.Critical, classify.High, "a"))
		h.at(20 * mn)
		down = false
		h.at(40 * mn)
		ops := h.sinks["ops"].deliveries()
		Expect(ops).To(HaveLen(2))
		Expect(ops[0].At).To(Equal(2*mn+30*s), "the deadline: the group wait and FailoverAfter, and nothing more")
		Expect(ops[0].fingerprints()).To(Equal([]string{"alertname=alert-delivery-late,receiver=pager:firing"}))
		Expect(ops[1].fingerprints()).To(Equal([]string{"alertname=alert-delivery-late,receiver=pager:resolved"}))
		Expect(summary(h.sinks["pager"].deliveries())[1]).To(Equal([]string{auth + ":firing"}), "the page itself is delivered late, not lost")
	})

	It("clears the overflow alert once the outbox has room again", func() {
		h := newHarness(alert.Config{Outbox: alert.OutboxConfig{Capacity: 1}, Receivers: []alert.Receiver{{Name: "pager", Fallback: "ops"}}}, "pager", "ops")
		down := true
		h.sinks["pager"].answer = func(alert.Notification) error {
			if down {
				return &failure.HTTPError{Code: 503}
			}
			return nil
		}
		for i, dep := range []string{"a", "b", "c"} {
			h.at(time.Duration(i) * s)
			h.a.JobFailed(jobFailure("t", dep, classify.Critical, classify.High, "j"))
		}
		h.at(mn)
		pending := h.a.Pending()
		Expect(pending).To(HaveLen(1))
		Expect(pending[0].Alerts).To(HaveLen(3), "three groups folded into the one waiting notification")
		down = false
		h.at(time.Hour)
		var names []string
		for _, d := range h.sinks["ops"].deliveries() {
			names = append(names, d.fingerprints()...)
		}
		Expect(names).To(ContainElements(
			"alertname=alert-outbox-overflow,receiver=pager:firing",
			"alertname=alert-outbox-overflow,receiver=pager:resolved",
		))
	})

	It("redacts label values, in fingerprints too", func() {
		h := newHarness(alert.Config{FingerprintLabels: []string{alert.LabelAlertName, "customer"}})
		h.at(0)
		f := jobFailure("charge", "gw", classify.Critical, classify.High, "j")
		f.Labels = alert.Labels{"customer": "secret-co"}
		Expect(h.a.JobFailed(f)).To(Equal("alertname=job-failed,customer=[REDACTED]-co"))
		h.at(mn)
		Expect(h.sinks["pager"].deliveries()[0].N.Alerts[0].Labels["customer"]).To(Equal("[REDACTED]-co"))
	})

	It("counts fingerprints past MaxAlerts in one alert-limit alert", func() {
		h := newHarness(alert.Config{MaxAlerts: 3})
		h.at(0)
		for _, task := range []string{"a", "b", "c", "d", "e"} {
			h.a.JobFailed(jobFailure(task, "gw", classify.Transient, classify.Medium, "j"))
		}
		Expect(h.a.Stats().Limited).To(Equal(uint64(2)), "d and e")
		h.at(mn)
		var names []string
		for _, d := range h.sinks["pager"].deliveries() {
			names = append(names, d.fingerprints()...)
		}
		Expect(names).To(ContainElement("alertname=alert-limit:firing"))
	})

	It("tells OnDelivered of every accepted notification, outside its lock", func() {
		var mu sync.Mutex
		var heard []uint64
		var h *harness
		h = newHarness(alert.Config{OnDelivered: func(n alert.Notification, at time.Time) {
			_ = h.a.Stats() // would deadlock if called under the lock
			mu.Lock()
			heard = append(heard, n.ID)
			mu.Unlock()
		}})
		h.at(0)
		h.a.JobFailed(jobFailure("auth", "gw", classify.Critical, classify.High, "a"))
		h.at(10 * mn)
		Expect(heard).To(Equal([]uint64{1, 2}))
	})
})
