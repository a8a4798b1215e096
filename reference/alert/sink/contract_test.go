package sink_test

import (
	"time"

	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/alert/sink"
	"github.com/faultline/faultline/reference/alert/sink/sinktest"
)

var _ = sinktest.DescribeHTTPSink("Slack", func(url string, timeout time.Duration) (alert.Sink, error) {
	return sink.NewSlack(sink.SlackConfig{URL: url, Timeout: timeout, Channel: "#payments"})
})

var _ = sinktest.DescribeHTTPSink("Webhook", func(url string, timeout time.Duration) (alert.Sink, error) {
	return sink.NewWebhook(sink.WebhookConfig{
		URL:        url,
		Timeout:    timeout,
		RoutingKey: "R0UTINGKEY",
		Headers:    map[string]string{"Authorization": "Bearer T0KEN"},
	})
})
