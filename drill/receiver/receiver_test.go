package receiver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"

	"github.com/faultline/faultline/drill/receiver"
	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/alert/sink"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/failure"
)

// Timeouts of the specs.
const (
	sendTimeout  = 5 * time.Second
	hangTimeout  = 200 * time.Millisecond
	promptly     = 2 * time.Second
	eventuallyAt = 5 * time.Second
)

// lockedInjector serialises a *faults.Injector, as the drill does.
type lockedInjector struct {
	mu  sync.Mutex
	inj *faults.Injector
}

func (l *lockedInjector) Call(t faults.Target, c faults.Call) faults.Effect {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inj.Call(t, c)
}

func (l *lockedInjector) hits() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for _, s := range l.inj.Stats() {
		n += s.Hits
	}
	return n
}

// fixedInjector answers every call with one effect and counts the calls.
type fixedInjector struct {
	eff   faults.Effect
	calls atomic.Int64
}

func (f *fixedInjector) Call(faults.Target, faults.Call) faults.Effect {
	f.calls.Add(1)
	return f.eff
}

// manualClock is a scenario offset the spec moves.
type manualClock struct{ at atomic.Int64 }

func (c *manualClock) now() time.Duration        { return time.Duration(c.at.Load()) }
func (c *manualClock) set(d time.Duration)       { c.at.Store(int64(d)) }
func (c *manualClock) Now() func() time.Duration { return c.now }

func injector(fs ...faults.Fault) *lockedInjector {
	GinkgoHelper()
	inj, err := faults.NewInjector(1, fs)
	Expect(err).NotTo(HaveOccurred())
	return &lockedInjector{inj: inj}
}

func sinkFault(name string, m faults.Model, s faults.Schedule) faults.Fault {
	return faults.Fault{Name: name, Target: faults.Target{Kind: faults.AlertSink, Name: "on-call"}, Model: m, Schedule: s}
}

func start(cfg receiver.Config) *receiver.Receiver {
	GinkgoHelper()
	if cfg.Name == "" {
		cfg.Name = "on-call"
	}
	r, err := receiver.New(cfg)
	Expect(err).NotTo(HaveOccurred())
	Expect(r.Start()).To(Succeed())
	Expect(r.URL()).To(HavePrefix("http://127.0.0.1:"))
	DeferCleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), promptly)
		defer cancel()
		Expect(r.Close(ctx)).To(Succeed())
	})
	return r
}

func slackSink(r *receiver.Receiver, timeout time.Duration) alert.Sink {
	GinkgoHelper()
	s, err := sink.NewSlack(sink.SlackConfig{URL: r.URL(), Timeout: timeout})
	Expect(err).NotTo(HaveOccurred())
	return s
}

func webhookSink(r *receiver.Receiver, timeout time.Duration) alert.Sink {
	GinkgoHelper()
	s, err := sink.NewWebhook(sink.WebhookConfig{URL: r.URL(), Timeout: timeout, RoutingKey: "rk"})
	Expect(err).NotTo(HaveOccurred())
	return s
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// firing is a notification of two firing alerts about the payment gateway:
// a page and a warning.
func firing() alert.Notification {
	return alert.Notification{
		ID: 7, Receiver: "on-call", GroupKey: `{dependency="payment-gateway"}`, StillFiring: 1, CreatedAt: t0, Attempt: 1,
		Alerts: []alert.Alert{{
			Fingerprint: "fp-charge", Name: "job-failed", Severity: classify.High, Status: alert.Firing, Count: 3,
			Summary: "charge <j-1> failed & was dead-lettered", FirstSeen: t0, LastSeen: t0.Add(time.Minute),
			Labels: alert.Labels{alert.LabelDependency: "payment-gateway", alert.LabelTask: "charge", alert.LabelClass: "critical"},
			Jobs: []alert.JobRef{
				{ID: "j-1", Task: "charge", Attempts: 5, Class: classify.Critical, Error: "http 401", At: t0},
				{ID: "j-2", Task: "charge", Attempts: 1, Class: classify.Critical, At: t0},
			},
		}, {
			Fingerprint: "fp-auth", Name: "breaker-open", Severity: classify.Medium, Status: alert.Firing, Count: 1,
			Summary: "breaker open", FirstSeen: t0, LastSeen: t0,
			Labels: alert.Labels{alert.LabelDependency: "payment-gateway", alert.LabelTask: "auth"},
			Jobs:   []alert.JobRef{{ID: "j-1", Task: "auth", Attempts: 2, At: t0}},
		}},
	}
}

// resolved is the resolution of the page.
func resolved() alert.Notification {
	n := firing()
	n.ID, n.StillFiring = 8, 0
	a := n.Alerts[0]
	a.Status, a.ResolvedAt = alert.Resolved, t0.Add(2*time.Minute)
	n.Alerts = []alert.Alert{a}
	return n
}

func send(s alert.Sink, n alert.Notification) error {
	ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
	defer cancel()
	return s.Send(ctx, n)
}

// acceptedWith matches a delivery accepted with the given status.
func acceptedWith(status int) types.GomegaMatcher {
	return And(HaveField("Status", status), HaveField("Accepted", true), HaveField("Outcome", receiver.Accepted), HaveField("Fault", ""))
}

// httpStatus is the status of a sink's *failure.HTTPError, or 0.
func httpStatus(err error) int {
	var he *failure.HTTPError
	if errors.As(err, &he) {
		return he.Code
	}
	return 0
}

var _ = Describe("Receiver", func() {
	DescribeTable("decodes what the real sink delivers, firing then resolved",
		func(kind receiver.Kind, mk func(*receiver.Receiver, time.Duration) alert.Sink, okStatus int) {
			clock := &manualClock{}
			r := start(receiver.Config{Kind: kind, Now: clock.Now()})
			s := mk(r, sendTimeout)

			clock.set(1500 * time.Millisecond)
			Expect(send(s, firing())).To(Succeed())
			clock.set(4 * time.Second)
			Expect(send(s, resolved())).To(Succeed())

			got := r.Received()
			Expect(got).To(HaveLen(2))
			f, res := got[0], got[1]
			Expect(f).To(acceptedWith(okStatus))
			Expect(f.Seq).To(Equal(1))
			Expect(f.AtMs).To(Equal(int64(1500)))
			Expect(f.Receiver).To(Equal("on-call"))
			Expect(f.Kind).To(Equal(kind.String()))
			Expect(f.Title).To(Equal("payment-gateway"))
			Expect(f.Severity).To(Equal("high"))
			Expect(f.Firing).To(BeTrue())
			Expect(f.GroupKey).To(Equal(`{dependency="payment-gateway"}`))
			Expect(f.NotificationID).To(Equal(uint64(7)))
			Expect(f.StillFiring).To(Equal(1))
			Expect(f.Attempt).To(Equal(1))
			Expect(f.Fingerprints).To(Equal([]string{"fp-charge", "fp-auth"}))
			Expect(f.Jobs).To(Equal([]string{"j-1", "j-2"}))
			Expect(f.Text).NotTo(BeEmpty())
			Expect(f.Alerts).To(Equal([]receiver.Alert{
				{Fingerprint: "fp-charge", Name: "job-failed", Severity: "high", Firing: true, Summary: "charge <j-1> failed & was dead-lettered", Count: 3, Jobs: []string{"j-1", "j-2"}},
				{Fingerprint: "fp-auth", Name: "breaker-open", Severity: "medium", Firing: true, Summary: "breaker open", Count: 1, Jobs: []string{"j-1"}},
			}))
			Expect(json.Valid(f.Raw)).To(BeTrue())
			Expect(f.DecodeError).To(BeEmpty())

			Expect(res).To(acceptedWith(okStatus))
			Expect(res.Seq).To(Equal(2))
			Expect(res.AtMs).To(Equal(int64(4000)))
			Expect(res.Firing).To(BeFalse())
			Expect(res.Severity).To(Equal("high"))
			Expect(res.Fingerprints).To(Equal([]string{"fp-charge"}))
			Expect(res.Alerts).To(HaveExactElements(HaveField("Firing", BeFalse())))

			ds := f.Deliveries()
			Expect(ds).To(HaveLen(2))
			Expect(ds[0].IsPage()).To(BeTrue())
			Expect(ds[0].Summary).To(Equal("charge <j-1> failed & was dead-lettered"))
			Expect(ds[1].IsPage()).To(BeFalse())
			Expect(res.Deliveries()).To(HaveExactElements(HaveField("Status", "resolved")))
		},
		Entry("Slack through slack-go", receiver.Slack, slackSink, http.StatusOK),
		Entry("PagerDuty-shaped webhook", receiver.Webhook, webhookSink, http.StatusAccepted),
	)

	It("keeps the Slack fallback text, unescaped", func() {
		r := start(receiver.Config{Kind: receiver.Slack})
		Expect(send(slackSink(r, sendTimeout), firing())).To(Succeed())
		Expect(r.Received()[0].Text).To(HavePrefix("[FIRING:2] high — payment-gateway: 2 alerts"))
	})

	It("keeps a long title whole, though Slack's header cuts it", func() {
		long := strings.Repeat("dependency-", 20)
		n := firing()
		for i := range n.Alerts {
			n.Alerts[i].Labels[alert.LabelDependency] = long
		}
		r := start(receiver.Config{Kind: receiver.Slack})
		Expect(send(slackSink(r, sendTimeout), n)).To(Succeed())
		Expect(r.Received()[0].Title).To(Equal(long))
	})

	It("counts the attempts of one notification", func() {
		clock := &manualClock{}
		inj := injector(sinkFault("down", faults.SinkOutage{Code: 503}, faults.Schedule{Until: 10 * time.Second}))
		r := start(receiver.Config{Kind: receiver.Webhook, Faults: inj, Now: clock.Now()})
		s := webhookSink(r, sendTimeout)
		Expect(httpStatus(send(s, firing()))).To(Equal(http.StatusServiceUnavailable))
		clock.set(10 * time.Second)
		Expect(send(s, firing())).To(Succeed())
		Expect(r.Received()).To(HaveExactElements(
			And(HaveField("Attempt", 1), HaveField("Accepted", false), HaveField("Fault", "down")),
			And(HaveField("Attempt", 2), HaveField("Accepted", true), HaveField("Fault", "")),
		))
		Expect(r.Received()[0].Deliveries()).To(BeEmpty())
		Expect(r.Received()[1].Deliveries()).To(HaveExactElements(HaveField("Attempt", 2), HaveField("Attempt", 2)))
	})

	Describe("under alert-sink faults", func() {
		It("answers 500 through a sink-outage window, then accepts", func() {
			clock := &manualClock{}
			inj := injector(sinkFault("sink-down", faults.SinkOutage{Code: 500}, faults.Schedule{From: time.Second, Until: 10 * time.Second}))
			r := start(receiver.Config{Kind: receiver.Slack, Faults: inj, Now: clock.Now()})
			s := slackSink(r, sendTimeout)

			Expect(send(s, firing())).To(Succeed())
			clock.set(5 * time.Second)
			err := send(s, firing())
			Expect(httpStatus(err)).To(Equal(http.StatusInternalServerError))
			clock.set(10 * time.Second)
			Expect(send(s, resolved())).To(Succeed())

			Expect(r.Received()).To(HaveExactElements(
				And(HaveField("Status", 200), HaveField("Outcome", receiver.Accepted)),
				And(HaveField("Status", 500), HaveField("Outcome", receiver.Refused), HaveField("Accepted", false),
					HaveField("Fault", "sink-down"), HaveField("AtMs", int64(5000)), HaveField("Fingerprints", []string{"fp-charge", "fp-auth"})),
				And(HaveField("Status", 200), HaveField("Accepted", true), HaveField("Firing", false)),
			))
			Expect(inj.hits()).To(Equal(int64(1)))
		})

		It("reads the window on scaled wall-clock time when given no clock", func() {
			// Scale 10: the window's 10 scenario seconds last one wall second.
			inj := injector(sinkFault("sink-down", faults.SinkOutage{Code: 502}, faults.Schedule{Until: 10 * time.Second}))
			r := start(receiver.Config{Kind: receiver.Webhook, Faults: inj, Scale: 10})
			s := webhookSink(r, sendTimeout)

			Expect(httpStatus(send(s, firing()))).To(Equal(http.StatusBadGateway))
			Eventually(func() error { return send(s, firing()) }).WithTimeout(eventuallyAt).WithPolling(50 * time.Millisecond).Should(Succeed())

			got := r.Received()
			first, last := got[0], got[len(got)-1]
			Expect(first.AtMs).To(BeNumerically("<", 10000))
			Expect(last.AtMs).To(BeNumerically(">=", 10000))
			Expect(last.Accepted).To(BeTrue())
		})

		DescribeTable("answers 429 with Retry-After in whole scenario seconds, rounded up",
			func(m faults.Model, header string) {
				inj := injector(sinkFault("throttle", m, faults.Schedule{}))
				// A time scale changes nothing: the header is scenario time,
				// which the alerter's clock reads.
				r := start(receiver.Config{Kind: receiver.Slack, Faults: inj, Scale: 10})
				err := send(slackSink(r, sendTimeout), firing())
				var he *failure.HTTPError
				Expect(errors.As(err, &he)).To(BeTrue(), "got %v", err)
				Expect(he.Code).To(Equal(http.StatusTooManyRequests))
				Expect(he.RetryAfterHeader()).To(Equal(header))
				Expect(r.Received()).To(HaveExactElements(And(HaveField("Status", 429), HaveField("Fault", "throttle"), HaveField("Outcome", receiver.Refused))))
			},
			Entry("rate-limit of 1.5s", faults.RateLimit{RetryAfter: 1500 * time.Millisecond}, "2"),
			Entry("rate-limit's default", faults.RateLimit{}, "1"),
			Entry("sink-outage 429 of 3s", faults.SinkOutage{Code: 429, RetryAfter: 3 * time.Second}, "3"),
		)

		It("answers 401 with the model's body under auth-failure", func() {
			inj := injector(sinkFault("revoked", faults.AuthFailure{}, faults.Schedule{}))
			r := start(receiver.Config{Kind: receiver.Webhook, Faults: inj})
			err := send(webhookSink(r, sendTimeout), firing())
			var he *failure.HTTPError
			Expect(errors.As(err, &he)).To(BeTrue(), "got %v", err)
			Expect(he.Code).To(Equal(http.StatusUnauthorized))
			Expect(he.Body).To(ContainSubstring(faults.DefaultAuthBody))
			Expect(r.Received()[0].Status).To(Equal(http.StatusUnauthorized))
		})

		It("answers the status of http-status", func() {
			inj := injector(sinkFault("teapot", faults.HTTPStatus{Code: 418}, faults.Schedule{}))
			r := start(receiver.Config{Kind: receiver.Slack, Faults: inj})
			Expect(httpStatus(send(slackSink(r, sendTimeout), firing()))).To(Equal(418))
		})

		It("drops the connection without an answer for a refused-connection outage", func() {
			inj := injector(sinkFault("gone", faults.Outage{}, faults.Schedule{}))
			r := start(receiver.Config{Kind: receiver.Webhook, Faults: inj})
			err := send(webhookSink(r, sendTimeout), firing())
			Expect(err).To(HaveOccurred())
			Expect(httpStatus(err)).To(BeZero())
			Eventually(r.Received).WithTimeout(eventuallyAt).Should(HaveExactElements(
				And(HaveField("Status", 0), HaveField("Outcome", receiver.Reset), HaveField("Accepted", false), HaveField("Fault", "gone"))))
		})

		It("hangs past the sink's timeout, and Close does not wait on a hang", func() {
			inj := &fixedInjector{eff: faults.Effect{Err: &failure.TimeoutError{Op: "POST", After: time.Hour}, Fault: "hang"}}
			r, err := receiver.New(receiver.Config{Name: "on-call", Kind: receiver.Slack, Faults: inj})
			Expect(err).NotTo(HaveOccurred())
			Expect(r.Start()).To(Succeed())

			began := time.Now()
			err = send(slackSink(r, hangTimeout), firing())
			Expect(err).To(HaveOccurred())
			Expect(httpStatus(err)).To(BeZero())
			var to interface{ Timeout() bool }
			Expect(errors.As(err, &to) && to.Timeout()).To(BeTrue(), "the sink's own timeout fired: %v", err)
			Expect(time.Since(began)).To(BeNumerically("<", promptly))
			Eventually(r.Received).WithTimeout(eventuallyAt).Should(HaveExactElements(
				And(HaveField("Outcome", receiver.Hung), HaveField("Status", 0), HaveField("Fault", "hang"))))

			// A hang in flight with a patient client: Close releases it.
			done := make(chan error, 1)
			go func() { done <- send(slackSink(r, time.Minute), resolved()) }()
			Eventually(r.Received).WithTimeout(eventuallyAt).Should(HaveLen(2))
			Expect(r.Received()[1].Outcome).To(Equal(receiver.Pending))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			began = time.Now()
			Expect(r.Close(ctx)).To(Succeed())
			Expect(time.Since(began)).To(BeNumerically("<", promptly))
			Eventually(done).WithTimeout(promptly).Should(Receive(HaveOccurred()))
			// The handler records the hang's end as Close releases it: the
			// client may hear of it first.
			Eventually(func() receiver.Outcome { return r.Received()[1].Outcome }).WithTimeout(promptly).Should(Equal(receiver.Hung))
			Expect(r.Close(ctx)).To(Succeed(), "closing twice")
		})

		DescribeTable("holds a latency for its scaled wall-clock time",
			func(scale float64, timeout time.Duration, accepted bool) {
				inj := &fixedInjector{eff: faults.Effect{Latency: 10 * time.Second, Fault: "slow"}}
				r := start(receiver.Config{Kind: receiver.Webhook, Faults: inj, Scale: scale})
				err := send(webhookSink(r, timeout), firing())
				if accepted {
					Expect(err).NotTo(HaveOccurred())
					Expect(r.Received()).To(HaveExactElements(And(HaveField("Accepted", true), HaveField("Fault", "slow"))))
					return
				}
				Expect(err).To(HaveOccurred())
				Eventually(r.Received).WithTimeout(eventuallyAt).Should(HaveExactElements(HaveField("Outcome", receiver.Hung)))
			},
			Entry("10s at scale 1 outlasts a 200ms client", 1.0, hangTimeout, false),
			Entry("10s at scale 200 is 50ms", 200.0, sendTimeout, true),
		)

		It("accepts everything while healthy, without asking the faults", func() {
			inj := injector(sinkFault("down", faults.SinkOutage{Code: 500}, faults.Schedule{}))
			r := start(receiver.Config{Kind: receiver.Slack, Faults: inj})
			s := slackSink(r, sendTimeout)
			r.SetHealthy(true)
			for range 3 {
				Expect(send(s, firing())).To(Succeed())
			}
			Expect(inj.hits()).To(BeZero())
			r.SetHealthy(false)
			Expect(httpStatus(send(s, firing()))).To(Equal(500))
			Expect(r.Received()).To(HaveLen(4))
			Expect(r.Received()[3].Fault).To(Equal("down"))
		})
	})

	Describe("payloads", func() {
		post := func(r *receiver.Receiver, body []byte) *http.Response {
			GinkgoHelper()
			resp, err := http.Post(r.URL(), "application/json", bytes.NewReader(body))
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(resp.Body.Close)
			return resp
		}

		It("refuses a payload over 1 MiB with 413 and records it", func() {
			r := start(receiver.Config{Kind: receiver.Webhook})
			big := []byte(`{"status":"firing","x":"` + strings.Repeat("a", receiver.MaxBody) + `"}`)
			Expect(post(r, big).StatusCode).To(Equal(http.StatusRequestEntityTooLarge))
			Expect(r.Received()).To(HaveExactElements(And(HaveField("Status", 413), HaveField("Outcome", receiver.TooLarge),
				HaveField("Accepted", false), HaveField("Raw", BeNil()))))
		})

		DescribeTable("refuses what is not its kind of message with 400",
			func(kind receiver.Kind, body string) {
				r := start(receiver.Config{Kind: kind})
				Expect(post(r, []byte(body)).StatusCode).To(Equal(http.StatusBadRequest))
				Expect(r.Received()).To(HaveExactElements(And(HaveField("Outcome", receiver.Invalid), HaveField("DecodeError", Not(BeEmpty())))))
			},
			Entry("Slack, not JSON", receiver.Slack, "text=hello"),
			Entry("Slack, no text", receiver.Slack, `{"channel":"#x"}`),
			Entry("webhook, not a body", receiver.Webhook, `{"foo":1}`),
		)

		It("takes a plain Slack text message", func() {
			r := start(receiver.Config{Kind: receiver.Slack})
			resp := post(r, []byte(`{"text":"[RESOLVED:1] low — nightly: 1 alert"}`))
			Expect(resp.StatusCode).To(Equal(http.StatusOK))
			Expect(r.Received()).To(HaveExactElements(And(HaveField("Title", "nightly"), HaveField("Severity", "low"), HaveField("Firing", false))))
		})

		It("hands out copies and a record that survives JSON", func() {
			r := start(receiver.Config{Kind: receiver.Slack})
			Expect(send(slackSink(r, sendTimeout), firing())).To(Succeed())
			got := r.Received()
			got[0].Fingerprints[0] = "changed"
			got[0].Alerts[0].Jobs[0] = "changed"
			again := r.Received()
			Expect(again[0].Fingerprints[0]).To(Equal("fp-charge"))
			Expect(again[0].Alerts[0].Jobs[0]).To(Equal("j-1"))

			b, err := json.Marshal(again[0])
			Expect(err).NotTo(HaveOccurred())
			var back receiver.Notification
			Expect(json.Unmarshal(b, &back)).To(Succeed())
			Expect(back.Alerts).To(Equal(again[0].Alerts))
			Expect(back.Fingerprints).To(Equal(again[0].Fingerprints))
		})
	})

	Describe("configuration", func() {
		DescribeTable("names the bad field",
			func(cfg receiver.Config, field string) {
				_, err := receiver.New(cfg)
				var ce *receiver.ConfigError
				Expect(errors.As(err, &ce)).To(BeTrue(), "got %v", err)
				Expect(ce.Field).To(Equal(field))
			},
			Entry("no name", receiver.Config{Kind: receiver.Slack}, "Name"),
			Entry("no kind", receiver.Config{Name: "x"}, "Kind"),
			Entry("negative scale", receiver.Config{Name: "x", Kind: receiver.Slack, Scale: -1}, "Scale"),
		)

		It("parses kind names", func() {
			Expect(receiver.ParseKind("Slack")).To(Equal(receiver.Slack))
			Expect(receiver.ParseKind("pagerduty")).To(Equal(receiver.Webhook))
			_, err := receiver.ParseKind("teams")
			Expect(err).To(MatchError(receiver.ErrUnknownKind))
		})

		It("refuses a second Start and a Start after Close", func() {
			r, err := receiver.New(receiver.Config{Name: "x", Kind: receiver.Slack})
			Expect(err).NotTo(HaveOccurred())
			Expect(r.URL()).To(BeEmpty())
			Expect(r.Start()).To(Succeed())
			Expect(r.Start()).To(MatchError(receiver.ErrStarted))
			Expect(r.Close(context.Background())).To(Succeed())
			Expect(r.Start()).To(MatchError(receiver.ErrClosed))
		})
	})
})
