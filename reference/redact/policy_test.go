package redact_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/redact"
)

var _ = Describe("what leaves the process", func() {
	r := redact.Default()

	DescribeTable("URLs that are credentials keep their host and lose the secret",
		func(in, want string) {
			Expect(in).To(RedactTo(r, want))
			Expect(want).To(RedactTo(r, want), "the output is redacted again")
		},
		Entry("a redis:// URL with only a password", "dial redis://:s3cretPW@10.0.0.1:6379/0 failed",
			"dial redis://:[REDACTED]@10.0.0.1:6379/0 failed"),
		Entry("a rediss:// URL with a user", "rediss://default:s3cretPW@cache:6380", "rediss://default:[REDACTED]@cache:6380"),
		Entry("a Discord webhook", "post https://discord.com/api/webhooks/123456789/abcDEF-ghi_jkl: 404",
			"post https://discord.com/api/webhooks/[REDACTED]: 404"),
		Entry("a Teams webhook", "https://acme.webhook.office.com/webhookb2/1234-abcd@5678/IncomingWebhook/aa/bb",
			"https://acme.webhook.office.com/webhookb2/[REDACTED]"),
		Entry("a PagerDuty integration URL", "https://events.pagerduty.com/integration/0123456789abcdef0123456789abcdef/enqueue",
			"https://events.pagerduty.com/integration/[REDACTED]/enqueue"),
	)

	Describe("Policy", func() {
		const secret = `{"card":"4111 1111 1111 1111","password":"hunter2"}`

		It("masks every field unless a flag said to reveal it", func() {
			var p redact.Policy
			Expect(p.Text(redact.Payload, secret)).To(Equal(`{"card":"[CARD ****1111]","password":"[REDACTED]"}`))
			Expect(p.Fields(redact.Payload, map[string]any{"password": "hunter2"})).To(Equal(map[string]any{"password": "[REDACTED]"}))
		})

		It("reveals only the fields it names", func() {
			p := redact.Policy{Reveal: []redact.Field{redact.Payload}}
			Expect(p.Reveals(redact.Payload)).To(BeTrue())
			Expect(p.Text(redact.Payload, secret)).To(Equal(secret))
			Expect(p.Text(redact.ErrorText, "Bearer abc.def-123")).To(Equal("Bearer [REDACTED]"))
			m := map[string]any{"password": "hunter2"}
			Expect(p.Fields(redact.Payload, m)).To(Equal(m))
		})
	})
})
