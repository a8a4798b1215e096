package sink_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/alert/sink"
	"github.com/faultline/faultline/reference/alert/sink/sinktest"
	"github.com/faultline/faultline/reference/classify"
)

var _ = Describe("Log", func() {
	var (
		buf *bytes.Buffer
		l   *sink.Log
	)

	BeforeEach(func() {
		buf = &bytes.Buffer{}
		l = sink.NewLog(slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	})

	records := func() []map[string]any {
		GinkgoHelper()
		var out []map[string]any
		for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			var rec map[string]any
			Expect(json.Unmarshal([]byte(line), &rec)).To(Succeed())
			out = append(out, rec)
		}
		return out
	}

	It("writes one record per alert, at a level set by its severity", func() {
		n := sinktest.Notification()
		n.Alerts = append(n.Alerts, n.Alerts[1], resolved(n).Alerts[0])
		n.Alerts[2].Severity = classify.Low
		Expect(l.Send(ctx(), n)).To(Succeed())
		recs := records()
		Expect(recs).To(HaveLen(4))
		var levels []any
		for _, r := range recs {
			levels = append(levels, r[slog.LevelKey])
			Expect(r[slog.MessageKey]).To(Equal(sink.LogMessage))
		}
		Expect(levels).To(Equal([]any{"ERROR", "WARN", "INFO", "INFO"}), "high, medium, low firing; high resolved")
	})

	It("records the alert's fingerprint, status, count and labels", func() {
		Expect(l.Send(ctx(), sinktest.Notification())).To(Succeed())
		r := records()[0]
		Expect(r).To(HaveKeyWithValue(sink.AttrFingerprint, "fp-charge-critical"))
		Expect(r).To(HaveKeyWithValue(sink.AttrStatus, "firing"))
		Expect(r).To(HaveKeyWithValue(sink.AttrSeverity, "high"))
		Expect(r).To(HaveKeyWithValue(sink.AttrCount, BeNumerically("==", 3)))
		Expect(r).To(HaveKeyWithValue(sink.AttrNotificationID, BeNumerically("==", 42)))
		Expect(r).To(HaveKeyWithValue(sink.AttrGroupKey, `{dependency="payment-gateway"}`))
		Expect(r).To(HaveKeyWithValue(sink.AttrReceiver, "payments-oncall"))
		Expect(r).To(HaveKeyWithValue(sink.AttrAlertName, "job-failed"))
		Expect(r).To(HaveKeyWithValue(sink.AttrSummary, "charge failed: authentication failed"))
		Expect(r).To(HaveKeyWithValue(sink.AttrFirstSeen, "2026-03-01T12:00:00Z"))
		Expect(r).To(HaveKeyWithValue(sink.AttrJobs, []any{"job-1", "job-2"}))
		Expect(r).To(HaveKeyWithValue(sink.AttrLabels, map[string]any{
			"alertname": "job-failed", "class": "critical", "dependency": "payment-gateway", "source": "worker", "task": "charge",
		}))
	})

	It("writes labels in key order", func() {
		Expect(l.Send(ctx(), sinktest.Notification())).To(Succeed())
		Expect(buf.String()).To(ContainSubstring(`"labels":{"alertname":"job-failed","class":"critical","dependency":"payment-gateway","source":"worker","task":"charge"}`))
	})

	It("never fails", func() {
		Expect(l.Send(ctx(), alert.Notification{})).To(Succeed())
		Expect(sink.NewLog(nil).Send(ctx(), alert.Notification{})).To(Succeed())
	})
})
