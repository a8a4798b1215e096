package alert_test

import (
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/alert/sink"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/reference/redact"
)

var _ = Describe("What leaves the process", func() {
	It("is masked on the wire, to Slack and to a webhook: card numbers, tokens, Authorization headers", func() {
		slackSrv := newSlackServer()
		hookSrv := newSlackServer() // any 2xx server records the bodies
		slack, err := sink.NewSlack(sink.SlackConfig{URL: slackSrv.URL + "/services/T0/B0/SUPERSECRET"})
		Expect(err).NotTo(HaveOccurred())
		hook, err := sink.NewWebhook(sink.WebhookConfig{URL: hookSrv.URL + "/events"})
		Expect(err).NotTo(HaveOccurred())
		clk := clock.NewVirtual(t0)
		a, err := alert.New(alert.Config{
			Receivers:       []alert.Receiver{{Name: "slack", Sink: slack}, {Name: "pd", Sink: hook}},
			DefaultReceiver: "slack",
			Routes:          []alert.Route{{Receiver: "slack", Continue: true}, {Receiver: "pd"}},
			Redactor:        redact.Default(),
		}, clk, rand.New(rand.NewPCG(5, 6)))
		Expect(err).NotTo(HaveOccurred())

		a.JobFailed(alert.Failure{
			JobID: "pay-42", Task: "charge", Dependency: "payment-gateway",
			Class: classify.Critical, Severity: classify.High, Source: classify.Auth, Attempts: 1,
			Err: "gateway refused card 4242 4242 4242 4242 with token=tok_live_abc123XYZ (Authorization: Bearer sk_live_51Habcdefghijklmnop)",
			Fields: map[string]any{
				"card":    "4242 4242 4242 4242",
				"token":   "tok_live_abc123XYZ",
				"amount":  100,
				"headers": map[string]any{"Authorization": "Bearer sk_live_51Habcdefghijklmnop"},
			},
			Labels: alert.Labels{"customer_token": "tok_live_abc123XYZ"},
		})
		clk.Advance(time.Minute)

		bodies := append(slackSrv.accepted(), hookSrv.accepted()...)
		Expect(bodies).To(HaveLen(2))
		for _, b := range bodies {
			text := string(b)
			Expect(text).To(ContainSubstring("pay-42"), "the job is still identifiable")
			for _, secret := range []string{"4242 4242 4242 4242", "4242424242424242", "tok_live_abc123XYZ", "sk_live_51Habcdefghijklmnop", "SUPERSECRET"} {
				Expect(text).NotTo(ContainSubstring(secret))
			}
			Expect(strings.Contains(text, "4242")).To(BeTrue(), "the last four digits stay, to tell cards apart")
		}
	})

	It("never shows a webhook URL whole in an error", func() {
		srv := newSlackServer(answer(http.StatusForbidden, "invalid_token"))
		slack, err := sink.NewSlack(sink.SlackConfig{URL: srv.URL + "/services/T0/B0/SUPERSECRET"})
		Expect(err).NotTo(HaveOccurred())
		err = slack.Send(GinkgoT().Context(), alert.Notification{ID: 1, Receiver: "slack"})
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).NotTo(ContainSubstring("SUPERSECRET"))
	})
})
