package alert_test

import (
	"errors"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/degrade"
	"github.com/faultline/faultline/reference/failure"
)

const (
	s  = time.Second
	mn = time.Minute
)

func jobFailure(task, dep string, class classify.Class, sev classify.Severity, job string) alert.Failure {
	return alert.Failure{JobID: job, Task: task, Dependency: dep, Class: class, Severity: sev, Source: classify.Dependency, Attempts: 1, Err: "boom"}
}

func fp(task, class, dep string) string {
	return "alertname=job-failed,task=" + task + ",class=" + class + ",dependency=" + dep
}

var _ = Describe("Alerter", func() {
	var h *harness
	BeforeEach(func() { h = newHarness(alert.Config{}) })

	fail := func(at time.Duration, task, dep string, class classify.Class, sev classify.Severity, job string) {
		GinkgoHelper()
		Expect(h.clk.Now()).To(BeTemporally("<=", t0.Add(at)), "a spec's events must be in time order")
		h.at(at)
		h.a.JobFailed(jobFailure(task, dep, class, sev, job))
	}
	pager := func() []delivery { return h.sinks["pager"].deliveries() }
	summary := func(ds []delivery) []any {
		var out []any
		for _, d := range ds {
			out = append(out, d.At, d.fingerprints())
		}
		return out
	}

	It("deduplicates a fingerprint and groups one incident into one message per group", func() {
		for i := range 20 {
			fail(time.Duration(i)*s, "charge", "gw", classify.Transient, classify.Medium, "j"+string(rune('a'+i)))
			switch i {
			case 5:
				fail(5*s, "refund", "gw", classify.Permanent, classify.Low, "r1")
			case 10:
				fail(10*s, "email", "smtp", classify.Transient, classify.Medium, "e1")
			}
		}
		h.at(2 * mn)
		Expect(summary(pager())).To(Equal([]any{
			30 * s, []string{fp("charge", "transient", "gw") + ":firing", fp("refund", "permanent", "gw") + ":firing"},
			40 * s, []string{fp("email", "transient", "smtp") + ":firing"},
		}))
		first := pager()[0].N
		Expect(first.GroupKey).To(Equal(`{dependency="gw"}`))
		Expect(first.Alerts[0].Count).To(Equal(20))
		Expect(first.Alerts[0].Jobs).To(HaveLen(alert.DefaultMaxJobsPerAlert), "a bounded sample of the latest jobs")
		Expect(first.Alerts[0].Jobs[4].ID).To(Equal("jt"))
		st := h.a.Stats()
		Expect(st.Raised).To(Equal(uint64(3)))
		Expect(st.Occurrences).To(Equal(uint64(22)))
		Expect(st.Deduplicated).To(Equal(uint64(19)))
		Expect(st.Grouped).To(Equal(uint64(1)))
		Expect(st.Sent).To(Equal(uint64(2)))
	})

	It("waits the group interval for news, but never holds a new critical alert longer than the group wait", func() {
		fail(0, "charge", "gw", classify.Transient, classify.Medium, "c1")
		fail(60*s, "refund", "gw", classify.Transient, classify.Medium, "r1")
		fail(90*s, "auth", "gw", classify.Critical, classify.High, "a1")
		h.at(20 * mn)
		Expect(summary(pager())).To(Equal([]any{
			30 * s, []string{fp("charge", "transient", "gw") + ":firing"},
			2 * mn, []string{fp("auth", "critical", "gw") + ":firing", fp("refund", "transient", "gw") + ":firing"},
			7 * mn, []string{fp("auth", "critical", "gw") + ":resolved", fp("charge", "transient", "gw") + ":resolved", fp("refund", "transient", "gw") + ":resolved"},
		}))
	})

	It("repeats a firing alert every repeat interval, and says when it resolves", func() {
		for m := time.Duration(0); m <= 5*time.Hour; m += mn {
			fail(m, "charge", "gw", classify.Transient, classify.Medium, "c")
		}
		h.at(6 * time.Hour)
		Expect(summary(pager())).To(Equal([]any{
			30 * s, []string{fp("charge", "transient", "gw") + ":firing"},
			4*time.Hour + 30*s, []string{fp("charge", "transient", "gw") + ":firing"},
			5*time.Hour + 5*mn, []string{fp("charge", "transient", "gw") + ":resolved"},
		}))
		Expect(pager()[1].N.Alerts[0].Count).To(Equal(241))
		Expect(h.a.Stats().Repeats).To(Equal(uint64(1)))
	})

	It("says how many other alerts of the group are still firing", func() {
		for m := time.Duration(0); m <= 10*mn; m += mn {
			fail(m, "charge", "gw", classify.Transient, classify.Medium, "c")
			if m == 3*mn {
				fail(m, "refund", "gw", classify.Transient, classify.Medium, "r")
			}
		}
		h.at(6 * mn)
		ds := pager()
		Expect(ds).To(HaveLen(2))
		Expect(ds[1].At).To(Equal(5*mn + 30*s))
		Expect(ds[1].fingerprints()).To(Equal([]string{fp("refund", "transient", "gw") + ":firing"}))
		Expect(ds[1].N.StillFiring).To(Equal(1))
	})

	Describe("inhibition by an open breaker", func() {
		open := func(at time.Duration) {
			h.at(at)
			h.a.BreakerChanged(degrade.Transition{Breaker: "gw", From: degrade.Closed, To: degrade.Open, Reason: "consecutive-failures", OpenFor: 5 * s})
		}
		closeAt := func(at time.Duration) {
			h.at(at)
			h.a.BreakerChanged(degrade.Transition{Breaker: "gw", From: degrade.HalfOpen, To: degrade.Closed})
		}

		It("mutes the dependency's per-job warnings, raises one alert of its own, and never mutes a critical one", func() {
			open(0)
			for t := time.Duration(0); t <= 2*mn; t += 10 * s {
				fail(t, "charge", "gw", classify.Transient, classify.Medium, "c")
				if t == 20*s {
					fail(t, "auth", "gw", classify.Critical, classify.High, "a1")
				}
			}
			closeAt(3 * mn)
			h.at(30 * mn)
			Expect(summary(pager())).To(Equal([]any{
				30 * s, []string{"alertname=breaker-open,dependency=gw:firing", fp("auth", "critical", "gw") + ":firing"},
				5*mn + 30*s, []string{"alertname=breaker-open,dependency=gw:resolved", fp("auth", "critical", "gw") + ":resolved"},
			}), "the warnings that stopped with the outage are never sent")
			Expect(h.a.Stats().Inhibited).To(Equal(uint64(2)), "held back at 30s and 5m30s; resolved unsent at 7m")
		})

		It("lets a warning through once it goes on after the breaker closed", func() {
			open(0)
			fail(10*s, "charge", "gw", classify.Transient, classify.Medium, "c1")
			closeAt(3 * mn)
			fail(4*mn, "charge", "gw", classify.Transient, classify.Medium, "c2")
			h.at(6 * mn)
			Expect(summary(pager())).To(Equal([]any{
				30 * s, []string{"alertname=breaker-open,dependency=gw:firing"},
				5*mn + 30*s, []string{"alertname=breaker-open,dependency=gw:resolved", fp("charge", "transient", "gw") + ":firing"},
			}))
		})

		It("raises one flapping alert for a breaker that keeps flipping, not one per flip", func() {
			for t := time.Duration(0); t < 5*mn; t += 40 * s {
				open(t)
				closeAt(t + 20*s)
			}
			h.at(time.Hour)
			Expect(summary(pager())).To(Equal([]any{
				150 * s, []string{"alertname=breaker-flapping,dependency=gw:firing"},
				14*mn + 40*s, []string{"alertname=breaker-flapping,dependency=gw:resolved"},
			}))
			Expect(pager()[0].N.Alerts[0].Summary).To(Equal("circuit breaker for gw opened 4 times in 10m0s"))
		})
	})

	Describe("delivery", func() {
		critical := func() { fail(0, "auth", "gw", classify.Critical, classify.High, "a1") }
		answers := func(name string, errs ...error) {
			sink := h.sinks[name]
			sink.answer = func(alert.Notification) error {
				if len(errs) == 0 {
					return nil
				}
				err := errs[0]
				errs = errs[1:]
				return err
			}
		}
		status := func(code int, retryAfter string) error {
			hd := http.Header{}
			if retryAfter != "" {
				hd.Set("Retry-After", retryAfter)
			}
			return &failure.HTTPError{Code: code, Header: hd}
		}

		It("redelivers after a 429, honouring Retry-After in seconds", func() {
			answers("pager", status(429, "30"))
			critical()
			h.at(5 * mn)
			Expect(summary(pager())).To(Equal([]any{60 * s, []string{fp("auth", "critical", "gw") + ":firing"}}))
			Expect(pager()[0].N.Attempt).To(Equal(2))
			st := h.a.Stats()
			Expect(st.FailedRetryable).To(Equal(uint64(1)))
			Expect(st.Retried).To(Equal(uint64(1)))
		})

		It("redelivers after a 429, honouring Retry-After as an HTTP date", func() {
			answers("pager", status(429, t0.Add(90*s).Format(http.TimeFormat)))
			critical()
			h.at(5 * mn)
			Expect(pager()).To(HaveLen(1))
			Expect(pager()[0].At).To(Equal(90 * s))
		})

		It("redelivers after 5xx and timeouts with full-jitter backoff", func() {
			answers("pager", status(500, ""), status(503, ""), errors.New("context deadline exceeded"))
			critical()
			h.at(5 * mn)
			Expect(pager()).To(HaveLen(1))
			// Attempt n waits at most RetryBase·2^(n-1): 1s + 2s + 4s.
			Expect(pager()[0].At).To(BeNumerically("<=", 30*s+7*s))
			Expect(pager()[0].N.Attempt).To(Equal(4))
		})

		It("holds the messages of a misconfigured receiver, copies them to its fallback at once, tells it why, and delivers once it is fixed", func() {
			h = newHarness(alert.Config{Receivers: []alert.Receiver{{Name: "slack", Fallback: "ops"}}}, "slack", "ops")
			broken := true
			h.sinks["slack"].answer = func(alert.Notification) error {
				if broken {
					return &failure.HTTPError{Code: 403, Body: "invalid_token"}
				}
				return nil
			}
			h.at(0)
			h.a.JobFailed(jobFailure("auth", "gw", classify.Critical, classify.High, "a1"))
			h.at(7 * mn)
			Expect(h.sinks["slack"].deliveries()).To(BeEmpty())
			Expect(h.a.Stats().Held).To(Equal(2), "the page and, since 5m, its resolution")
			calls := h.sinks["slack"].calls
			broken = false
			h.at(30 * mn)
			ops := h.sinks["ops"].deliveries()
			Expect(summary(ops)[:6]).To(Equal([]any{
				30 * s, []string{fp("auth", "critical", "gw") + ":firing"},
				30 * s, []string{"alertname=receiver-misconfigured,receiver=slack:firing"},
				5*mn + 30*s, []string{fp("auth", "critical", "gw") + ":resolved"},
			}), "the page's copy and the refusal at once, then the resolution's copy")
			Expect(ops).To(HaveLen(4))
			Expect(ops[3].fingerprints()).To(Equal([]string{"alertname=receiver-misconfigured,receiver=slack:resolved"}), "once slack took a message")
			Expect(ops[3].At).To(BeNumerically(">", 7*mn))
			Expect(ops[1].N.Alerts[0].Summary).To(ContainSubstring("receiver slack refuses notifications (HTTP 403 invalid_token)"))
			Expect(ops[1].N.Alerts[0].Summary).To(ContainSubstring("copied to ops"))
			got := h.sinks["slack"].deliveries()
			Expect(got).To(HaveLen(2))
			Expect(got[0].fingerprints()).To(Equal([]string{fp("auth", "critical", "gw") + ":firing"}))
			Expect(got[1].fingerprints()).To(Equal([]string{fp("auth", "critical", "gw") + ":resolved"}),
				"held, then delivered in order: the page, then its resolution, which came meanwhile")
			Expect(got[0].At).To(BeNumerically("<=", 7*mn+alert.DefaultHeldRetry), "retried at most HeldRetry apart")
			Expect(calls).To(BeNumerically(">", 2), "a refusing receiver is retried with backoff, not left alone for HeldRetry")
			Expect(h.a.Stats().Held).To(BeZero())
		})

		DescribeTable("treats the statuses of a misconfigured receiver as such",
			func(code int) {
				h.sinks["pager"].answer = func(alert.Notification) error { return status(code, "") }
				critical()
				h.at(mn)
				Expect(h.a.Stats().FailedMisconfigured).To(BeNumerically(">=", 1))
				Expect(h.a.Stats().FailedRetryable).To(BeZero())
				// The page and the config alert about the receiver itself
				// (with no other receiver there is no one else to tell):
				// both kept.
				Expect(h.a.Stats().Held).To(Equal(2))
				Expect(h.a.Pending()).To(HaveLen(2))
			},
			Entry("400", 400), Entry("401", 401), Entry("403", 403), Entry("404", 404), Entry("410", 410),
		)

		It("fails over to the secondary receiver when the primary has not accepted within FailoverAfter", func() {
			h = newHarness(alert.Config{Receivers: []alert.Receiver{{Name: "pager", Secondary: "sms"}}}, "pager", "sms")
			h.sinks["pager"].answer = func(alert.Notification) error { return status(503, "") }
			h.at(0)
			h.a.JobFailed(jobFailure("auth", "gw", classify.Critical, classify.High, "a1"))
			h.at(10 * mn)
			Expect(summary(h.sinks["sms"].deliveries())).To(Equal([]any{
				30*s + alert.DefaultFailoverAfter, []string{fp("auth", "critical", "gw") + ":firing"},
				// The delivery-late alert (no fallback: told to the
				// secondary, at once, never to the late pager).
				30*s + alert.DefaultFailoverAfter, []string{"alertname=alert-delivery-late,receiver=pager:firing"},
				// The page resolved: the secondary that took it hears so
				// at once.
				5*mn + 30*s, []string{fp("auth", "critical", "gw") + ":resolved"},
			}))
			Expect(h.a.Stats().FailedOver).To(Equal(uint64(1)), "the page")
			Expect(h.a.Pending()).To(HaveLen(2), "the primary's copies are kept and retried")
		})

		It("never loses a fingerprint when the outbox overflows: it coalesces and raises an overflow alert", func() {
			h = newHarness(alert.Config{Outbox: alert.OutboxConfig{Capacity: 2}})
			down := true
			h.sinks["pager"].answer = func(alert.Notification) error {
				if down {
					return status(500, "")
				}
				return nil
			}
			for i, dep := range []string{"a", "b", "c", "d", "e", "f"} {
				h.at(time.Duration(i) * s)
				h.a.JobFailed(jobFailure("t-"+dep, dep, classify.Critical, classify.High, "j"))
			}
			h.at(2 * mn)
			pending := h.a.Pending()
			Expect(pending).To(HaveLen(2), "the capacity, never more")
			var fps []string
			for _, n := range pending {
				for _, x := range n.Alerts {
					fps = append(fps, x.Fingerprint)
				}
			}
			for _, dep := range []string{"a", "b", "c", "d", "e", "f"} {
				Expect(fps).To(ContainElement(fp("t-"+dep, "critical", dep)))
			}
			Expect(fps).To(ContainElement("alertname=alert-outbox-overflow,receiver=pager"))
			Expect(h.a.Stats().Overflows).To(Equal(uint64(5)), "c, d, e, f, then the overflow alert itself")

			down = false
			h.at(time.Hour)
			var delivered []string
			for _, d := range pager() {
				delivered = append(delivered, d.fingerprints()...)
			}
			for _, dep := range []string{"a", "b", "c", "d", "e", "f"} {
				Expect(delivered).To(ContainElement(fp("t-"+dep, "critical", dep)+":firing"), "paged firing, not only resolved")
			}
			Expect(h.a.Pending()).To(BeEmpty())
		})
	})

	It("redacts error texts, payloads and summaries before they leave", func() {
		h.at(0)
		f := jobFailure("charge", "gw", classify.Critical, classify.High, "c1")
		f.Err = "gateway said: secret"
		f.Fields = map[string]any{"note": "a secret note", "amount": 100}
		h.a.JobFailed(f)
		h.at(mn)
		job := pager()[0].N.Alerts[0].Jobs[0]
		Expect(job.Error).To(Equal("gateway said: [REDACTED]"))
		Expect(job.Fields).To(Equal(map[string]any{"note": "a [REDACTED] note", "amount": 100}))
		Expect(pager()[0].N.Alerts[0].Summary).NotTo(ContainSubstring("secret"))
	})

	It("raises and clears conditions", func() {
		h.at(0)
		sig := alert.Signal{Name: "dlq-depth", Severity: classify.High, Labels: alert.Labels{"queue": "payments"}, Summary: "DLQ depth 12000 over 10000"}
		h.a.Raise(sig)
		h.a.Raise(sig)
		h.at(mn)
		h.a.Clear("dlq-depth", alert.Labels{"queue": "payments"})
		h.at(10 * mn)
		Expect(summary(pager())).To(Equal([]any{
			30 * s, []string{"alertname=dlq-depth,queue=payments:firing"},
			5*mn + 30*s, []string{"alertname=dlq-depth,queue=payments:resolved"},
		}))
		Expect(pager()[0].N.Alerts[0].Count).To(Equal(2))
	})

	It("routes by severity and labels, with Continue", func() {
		h = newHarness(alert.Config{
			DefaultReceiver: "log",
			Routes: []alert.Route{
				{Receiver: "pager", Severities: []classify.Severity{classify.High}, Continue: true},
				{Receiver: "payments-team", Match: alert.Labels{"dependency": "gw"}},
			},
		}, "log", "pager", "payments-team")
		fail(0, "auth", "gw", classify.Critical, classify.High, "a")
		fail(0, "charge", "gw", classify.Transient, classify.Medium, "c")
		fail(0, "email", "smtp", classify.Transient, classify.Low, "e")
		h.at(mn)
		names := func(r string) []string {
			var out []string
			for _, d := range h.sinks[r].deliveries() {
				out = append(out, d.fingerprints()...)
			}
			return out
		}
		Expect(names("pager")).To(Equal([]string{fp("auth", "critical", "gw") + ":firing"}))
		Expect(names("payments-team")).To(Equal([]string{fp("auth", "critical", "gw") + ":firing", fp("charge", "transient", "gw") + ":firing"}))
		Expect(names("log")).To(Equal([]string{fp("email", "transient", "smtp") + ":firing"}))
	})
})
