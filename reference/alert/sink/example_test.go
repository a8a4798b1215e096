package sink_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/alert/sink"
	"github.com/faultline/faultline/reference/failure"
)

// A Slack sink shows its webhook URL only redacted.
func ExampleNewSlack() {
	s, err := sink.NewSlack(sink.SlackConfig{URL: "https://hooks.slack.com/services/T000/B000/XXXXXXXX"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s)

	_, err = sink.NewSlack(sink.SlackConfig{URL: "hooks.slack.com/services/T000/B000/XXXXXXXX"})
	fmt.Println(err)
	// Output:
	// slack sink https://hooks.slack.com/services/****
	// new slack sink: sink config: URL: must be an absolute http or https URL
}

// A Memory sink plays a receiver that is rate limited once, then accepts.
func ExampleMemory() {
	limited := true
	m := &sink.Memory{Fail: func(alert.Notification) error {
		if limited {
			limited = false
			return &failure.HTTPError{Code: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"30"}}}
		}
		return nil
	}}
	n := alert.Notification{ID: 1, Receiver: "oncall"}
	fmt.Println(m.Send(context.Background(), n))
	fmt.Println(m.Send(context.Background(), n))
	fmt.Println(len(m.Sent()), "sent in", m.Attempts(), "attempts")
	// Output:
	// memory sink: notification 1: http 429 Too Many Requests
	// <nil>
	// 1 sent in 2 attempts
}

// A Log sink writes one record per alert.
func ExampleLog() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{}
			}
			return a
		},
	}))
	_ = sink.NewLog(logger).Send(context.Background(), alert.Notification{
		ID:     7,
		Alerts: []alert.Alert{{Fingerprint: "fp-1", Name: "job-failed", Labels: alert.Labels{"task": "charge"}, Count: 2}},
	})
	// Output:
	// level=WARN msg="alert notification" notification_id=7 receiver="" group_key="" still_firing=0 attempt=0 fingerprint=fp-1 alertname=job-failed status=firing severity=none summary="" count=2 first_seen=0001-01-01T00:00:00.000Z last_seen=0001-01-01T00:00:00.000Z labels.task=charge jobs=[]
}
