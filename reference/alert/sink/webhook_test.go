package sink_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"

	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/alert/sink"
	"github.com/faultline/faultline/reference/alert/sink/sinktest"
	"github.com/faultline/faultline/reference/classify"
)

var _ = Describe("Webhook", func() {
	const routingKey = "R0UTINGKEY-SECRET"

	var (
		rec *recorder
		w   *sink.Webhook
	)

	BeforeEach(func() {
		rec = newRecorder()
		var err error
		w, err = sink.NewWebhook(sink.WebhookConfig{
			URL:        rec.url,
			RoutingKey: routingKey,
			Headers:    map[string]string{"authorization": "Bearer T0KEN", "X-Team": "payments"},
		})
		Expect(err).NotTo(HaveOccurred())
	})

	send := func(n alert.Notification) []byte {
		GinkgoHelper()
		Expect(w.Send(ctx(), n)).To(Succeed())
		return rec.body()
	}

	decode := func(b []byte) sink.WebhookBody {
		GinkgoHelper()
		var body sink.WebhookBody
		Expect(json.Unmarshal(b, &body)).To(Succeed())
		return body
	}

	It("posts a PagerDuty-shaped body", func() {
		body := decode(send(sinktest.Notification()))
		Expect(body.Receiver).To(Equal("payments-oncall"))
		Expect(body.GroupKey).To(Equal(`{dependency="payment-gateway"}`))
		Expect(body.NotificationID).To(BeEquivalentTo(42))
		Expect(body.Status).To(Equal("firing"))
		Expect(body.StillFiring).To(Equal(1))
		Expect(body.Events).To(HaveLen(2))

		e := body.Events[0]
		Expect(e.RoutingKey).To(Equal(routingKey))
		Expect(e.DedupKey).To(Equal("fp-charge-critical"))
		Expect(e.EventAction).To(Equal("trigger"))
		Expect(e.Payload).To(MatchFields(IgnoreExtras, Fields{
			"Summary":   Equal("charge failed: authentication failed"),
			"Severity":  Equal("critical"),
			"Source":    Equal("worker"),
			"Component": Equal("payment-gateway"),
			"Group":     Equal("charge"),
			"Class":     Equal("critical"),
			"Timestamp": Equal("2026-03-01T12:02:00Z"),
		}))
		d := e.Payload.CustomDetails
		Expect(d.Count).To(Equal(3))
		Expect(d.FirstSeen).To(Equal("2026-03-01T12:00:00Z"))
		Expect(d.Labels).To(HaveKeyWithValue("task", "charge"))
		Expect(d.Jobs).To(HaveLen(2))
		Expect(d.Jobs[0]).To(MatchFields(IgnoreExtras, Fields{
			"ID":       Equal("job-1"),
			"Attempts": Equal(5),
			"Class":    Equal("critical"),
			"Error":    Equal("http 401 Unauthorized: invalid api key"),
		}))

		Expect(body.Events[1].Payload.Severity).To(Equal("warning"))
		Expect(body.Events[1].Payload.Source).To(Equal("faultline"), "no source label")
	})

	It("uses PagerDuty's JSON names", func() {
		raw := string(send(sinktest.Notification()))
		for _, key := range []string{`"receiver":`, `"group_key":`, `"notification_id":42`, `"status":"firing"`,
			`"events":`, `"dedup_key":"fp-charge-critical"`, `"event_action":"trigger"`, `"routing_key":"` + routingKey + `"`,
			`"payload":`, `"summary":`, `"severity":"critical"`, `"source":`, `"component":`, `"group":`, `"class":`,
			`"timestamp":`, `"custom_details":`, `"count":3`, `"first_seen":`, `"labels":`, `"jobs":`} {
			Expect(raw).To(ContainSubstring(key))
		}
	})

	It("maps severities High→critical, Medium→warning, Low→info", func() {
		n := sinktest.Notification()
		n.Alerts = append(n.Alerts, n.Alerts[1], n.Alerts[1])
		n.Alerts[2].Severity = classify.Low
		n.Alerts[3].Severity = classify.SeverityNone
		var sev []string
		for _, e := range decode(send(n)).Events {
			sev = append(sev, e.Payload.Severity)
		}
		Expect(sev).To(Equal([]string{"critical", "warning", "info", "warning"}))
	})

	It("resolves resolved alerts", func() {
		body := decode(send(resolved(sinktest.Notification())))
		Expect(body.Status).To(Equal("resolved"))
		for _, e := range body.Events {
			Expect(e.EventAction).To(Equal("resolve"))
			Expect(e.Payload.CustomDetails.ResolvedAt).NotTo(BeEmpty())
		}
	})

	It("omits the routing key when none is set", func() {
		plain, err := sink.NewWebhook(sink.WebhookConfig{URL: rec.url})
		Expect(err).NotTo(HaveOccurred())
		Expect(plain.Send(ctx(), sinktest.Notification())).To(Succeed())
		Expect(string(rec.body())).NotTo(ContainSubstring("routing_key"))
	})

	It("sends the extra headers", func() {
		send(sinktest.Notification())
		var h map[string][]string
		Eventually(rec.header).Should(Receive(&h))
		Expect(h).To(HaveKeyWithValue("Authorization", []string{"Bearer T0KEN"}))
		Expect(h).To(HaveKeyWithValue("X-Team", []string{"payments"}))
		Expect(h).To(HaveKeyWithValue("Content-Type", []string{"application/json"}))
	})

	It("sends a job field with no JSON form as its text", func() {
		n := sinktest.Notification()
		n.Alerts[0].Jobs[0].Fields = map[string]any{"amount": 1250, "ch": make(chan int)}
		d := decode(send(n)).Events[0].Payload.CustomDetails
		Expect(string(d.Jobs[0].Fields["amount"])).To(Equal("1250"))
		Expect(string(d.Jobs[0].Fields["ch"])).To(HavePrefix(`"0x`))
	})

	It("is byte-identical for the same notification, whatever the map order", func() {
		n := sinktest.Notification()
		n.Alerts[0].Jobs[0].Fields = map[string]any{}
		for i := range 30 {
			n.Alerts[0].Labels[fmt.Sprintf("k%02d", i)] = fmt.Sprint(i)
			n.Alerts[0].Jobs[0].Fields[fmt.Sprintf("f%02d", i)] = i
		}
		first := send(n)
		for range 5 {
			Expect(send(n)).To(Equal(first))
		}
	})

	It("never prints the routing key, header values or URL", func() {
		cfg := sink.WebhookConfig{URL: rec.url, RoutingKey: routingKey, Headers: map[string]string{"Authorization": "Bearer T0KEN"}}
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%d"} {
			for _, out := range []string{fmt.Sprintf(verb, cfg), fmt.Sprintf(verb, w), fmt.Sprintf(verb, *w)} {
				sinktest.ExpectNoSecret(out)
				Expect(out).NotTo(ContainSubstring("R0UTINGKEY"))
				Expect(out).NotTo(ContainSubstring("T0KEN"))
			}
		}
		Expect(fmt.Sprint(cfg)).To(ContainSubstring("RoutingKey: ****"))
		Expect(fmt.Sprint(cfg)).To(ContainSubstring(`Headers: ["Authorization"]`))
	})

	DescribeTable("Validate names the bad field and never quotes a secret",
		func(cfg sink.WebhookConfig, field string) {
			_, err := sink.NewWebhook(cfg)
			var cerr *sink.ConfigError
			Expect(errors.As(err, &cerr)).To(BeTrue())
			Expect(cerr.Field).To(Equal(field))
			sinktest.ExpectNoSecret(err.Error())
			Expect(err.Error()).NotTo(ContainSubstring("T0KEN"))
		},
		Entry("no URL", sink.WebhookConfig{}, "URL"),
		Entry("a relative URL", sink.WebhookConfig{URL: "hooks/SUPERSECRET"}, "URL"),
		Entry("a bad header name", sink.WebhookConfig{URL: "https://example.com/x", Headers: map[string]string{"Bad Name": "T0KEN"}}, "Headers"),
		Entry("a header value splitting the request", sink.WebhookConfig{URL: "https://example.com/x", Headers: map[string]string{"X-Key": "T0KEN\r\nX-Evil: 1"}}, "Headers"),
	)

	It("keeps long summaries and errors within bounds", func() {
		n := sinktest.Notification()
		n.Alerts[0].Summary = strings.Repeat("s", 5000)
		n.Alerts[0].Jobs[0].Error = strings.Repeat("e", 5000)
		e := decode(send(n)).Events[0]
		Expect(len([]rune(e.Payload.Summary))).To(Equal(1024))
		Expect(len([]rune(e.Payload.CustomDetails.Jobs[0].Error))).To(Equal(1024))
	})
})
