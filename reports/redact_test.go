package reports_test

import (
	"bytes"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reports"
)

var _ = Describe("Redact", func() {
	const (
		token = "Bearer h6BearerTok3n0123456789"
		card  = "4111 1111 1111 1111"
	)
	leaky := func() *reports.Result {
		return &reports.Result{
			ReportVersion: reports.ReportVersion, Scenario: "leaky", Seed: 1, Verdict: reports.Failed,
			Description:  "proves nothing; " + token,
			ScenarioHash: "sha256:4111111111111111aa",
			Violations:   []reports.Violation{{Invariant: "x", Message: "card " + card, Trail: []string{"payload password=h6Hunter2pw"}}},
			DLQ: reports.DLQ{ByStatus: map[string]int{"failed": 1}, Entries: []reports.DLQEntry{{JobID: "j1",
				Error: "http 401: " + token + " via https://hooks.slack.com/services/T0/B0/h6SlackHookSecret99"}}},
			Alerts: reports.Alerts{ByReceiver: map[string]int64{"on-call": 2}},
			Config: map[string]any{"metadata": map[string]any{"description": token}, "password": "h6Hunter2pw"},
		}
	}

	It("masks every free-text string of the model and leaves the result it was given alone", func() {
		r := leaky()
		m := reports.Redact(r)
		Expect(m.Description).To(Equal("proves nothing; Bearer [REDACTED]"))
		Expect(m.Violations[0].Message).To(Equal("card [CARD ****1111]"))
		Expect(m.Violations[0].Trail).To(Equal([]string{"payload password=[REDACTED]"}))
		Expect(m.DLQ.Entries[0].Error).To(Equal("http 401: Bearer [REDACTED] via https://hooks.slack.com/services/[REDACTED]"))
		Expect(m.Config).To(Equal(map[string]any{"metadata": map[string]any{"description": "Bearer [REDACTED]"}, "password": "[REDACTED]"}))
		Expect(m.ScenarioHash).To(Equal(r.ScenarioHash), "an identifier faultline computed is not free text")
		Expect(m.Alerts.ByReceiver).To(Equal(r.Alerts.ByReceiver))
		Expect(reports.Redact(m)).To(Equal(m), "idempotent")
		Expect(r).To(Equal(leaky()), "the stored result is not changed")
	})

	It("is applied by every writer", func() {
		r := leaky()
		var text, js, html, junit, md bytes.Buffer
		Expect(reports.WriteText(&text, r, reports.TextOptions{Verbose: true})).To(Succeed())
		Expect(reports.WriteJSON(&js, r)).To(Succeed())
		Expect(reports.WriteHTML(&html, r)).To(Succeed())
		Expect(reports.WriteJUnit(&junit, []*reports.Result{r})).To(Succeed())
		Expect(reports.WriteMarkdown(&md, []*reports.Result{r})).To(Succeed())
		for name, out := range map[string]string{"text": text.String(), "json": js.String(), "html": html.String(), "junit": junit.String(), "md": md.String()} {
			for _, leak := range []string{"h6BearerTok3n0123456789", card, "h6Hunter2pw", "h6SlackHookSecret99"} {
				Expect(strings.Contains(out, leak)).To(BeFalse(), "the %s report leaks %q", name, leak)
			}
		}
	})
})
