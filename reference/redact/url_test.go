package redact_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/redact"
)

// webhook is a Slack incoming-webhook URL; its last three path segments are
// the credential.
const webhook = "https://hooks.slack.com/services/T000/B000/XXXXSECRET"

// alertConfig holds a SecretURL every way a config struct might.
type alertConfig struct {
	Channel string
	Webhook redact.SecretURL
	Backup  *redact.SecretURL
	hidden  redact.SecretURL
}

var _ = Describe("URL", func() {
	var r *redact.Redactor
	BeforeEach(func() { r = redact.Default() })

	DescribeTable("keeps the scheme, host and first path segment",
		func(in, want string) {
			Expect(r.URL(in)).To(Equal(want))
			Expect(r.URL(want)).To(Equal(want), "URL is idempotent")
		},
		Entry("Slack webhook", webhook, "https://hooks.slack.com/services/****"),
		Entry("userinfo, query and fragment", "postgres://app:pw@db:5432/orders?sslmode=disable&password=x#frag",
			"postgres://app@db:5432/orders?sslmode=****&password=****#****"),
		Entry("no path", "https://example.com", "https://example.com/"),
		Entry("one segment and a slash", "https://api.example.com/v1/", "https://api.example.com/v1/"),
		Entry("deeper path", "https://api.example.com/v1/charges/ch_123", "https://api.example.com/v1/****"),
		Entry("token as user name", "https://ghp_abcdefghijklmnopqrstuvwxyz0123456789@github.com/org/repo.git",
			"https://****@github.com/org/****"),
		Entry("token as first segment", "https://api.example.com/sk_live_abc/x", "https://api.example.com/****/****"),
		Entry("keys without values", "https://x.com/?flag&empty=&k=v", "https://x.com/?flag&empty=&k=****"),
		Entry("surrounding blanks", "  https://x.com/a/b\n", "https://x.com/a/****"),
	)

	DescribeTable("turns anything else into [REDACTED URL]",
		func(in string) { Expect(r.URL(in)).To(Equal(redact.RedactedURL)) },
		Entry("empty", ""),
		Entry("no scheme", "hooks.slack.com/services/T000/B000/XXXXSECRET"),
		Entry("relative", "/services/T000"),
		Entry("missing host", "https:///T000/SECRET"),
		Entry("opaque", "mailto:ops@example.com"),
		Entry("unparseable", "http://[::1/SECRET"),
		Entry("bad escape", "https://x.com/%zz/SECRET"),
	)
})

var _ = Describe("SecretURL", func() {
	var s redact.SecretURL
	BeforeEach(func() {
		var err error
		s, err = redact.NewSecretURL(webhook + "\n")
		Expect(err).NotTo(HaveOccurred())
	})

	It("reveals the real URL, trimmed, and prints the redacted one", func() {
		Expect(s.Reveal()).To(Equal(webhook))
		Expect(s.String()).To(Equal("https://hooks.slack.com/services/****"))
		Expect(s.IsZero()).To(BeFalse())
	})

	It("never prints the secret with any fmt verb", func() {
		out := fmt.Sprintf("%v|%s|%+v|%#v|%q|%x|%30s|%-40v|%d", s, s, s, s, s, s, s, s, s)
		Expect(out).NotTo(ContainSubstring("XXXXSECRET"))
		Expect(out).NotTo(ContainSubstring("T000"))
		Expect(fmt.Sprintf("%v", s)).To(Equal("https://hooks.slack.com/services/****"))
		Expect(fmt.Sprintf("%q", s)).To(Equal(`"https://hooks.slack.com/services/****"`))
		Expect(fmt.Sprintf("%#v", s)).To(Equal(`redact.SecretURL("https://hooks.slack.com/services/****")`))
		Expect(fmt.Sprintf("%-40s|", s)).To(Equal("https://hooks.slack.com/services/****   |"))
		Expect(fmt.Sprint(&s)).To(Equal("https://hooks.slack.com/services/****"))
	})

	It("never prints the secret from inside a struct, exported or not", func() {
		c := alertConfig{Channel: "#ops", Webhook: s, Backup: &s, hidden: s}
		out := fmt.Sprintf("%v|%+v|%#v|%v", c, c, c, &c)
		Expect(out).NotTo(ContainSubstring("XXXXSECRET"))
		Expect(out).To(ContainSubstring("https://hooks.slack.com/services/****"))
	})

	It("marshals to JSON and text redacted", func() {
		b, err := json.Marshal(alertConfig{Channel: "#ops", Webhook: s, Backup: &s, hidden: s})
		Expect(err).NotTo(HaveOccurred())
		Expect(string(b)).To(Equal(`{"Channel":"#ops","Webhook":"https://hooks.slack.com/services/****","Backup":"https://hooks.slack.com/services/****"}`))
		text, err := s.MarshalText()
		Expect(err).NotTo(HaveOccurred())
		Expect(string(text)).To(Equal("https://hooks.slack.com/services/****"))
	})

	It("logs redacted through slog", func() {
		var buf bytes.Buffer
		slog.New(slog.NewJSONHandler(&buf, nil)).Info("alert", "webhook", s)
		Expect(buf.String()).To(ContainSubstring(`"webhook":"https://hooks.slack.com/services/****"`))
		Expect(buf.String()).NotTo(ContainSubstring("XXXXSECRET"))
	})

	It("reads from a config file, and refuses its own redacted form", func() {
		var c alertConfig
		Expect(json.Unmarshal([]byte(`{"Webhook":"`+webhook+`"}`), &c)).To(Succeed())
		Expect(c.Webhook.Reveal()).To(Equal(webhook))

		Expect(json.Unmarshal([]byte(`{"Webhook":""}`), &c)).To(Succeed())
		Expect(c.Webhook.IsZero()).To(BeTrue())

		err := json.Unmarshal([]byte(`{"Webhook":"https://hooks.slack.com/services/****"}`), &c)
		Expect(err).To(MatchError(redact.ErrInvalidSecretURL))
	})

	It("is absent when zero", func() {
		var z redact.SecretURL
		Expect(z.IsZero()).To(BeTrue())
		Expect(z.Reveal()).To(BeEmpty())
		Expect(fmt.Sprintf("%v|%q", z, z)).To(Equal(`|""`))
	})

	DescribeTable("rejects what is not an absolute http(s) URL, without quoting it",
		func(raw, reason string) {
			_, err := redact.NewSecretURL(raw)
			Expect(err).To(MatchError(redact.ErrInvalidSecretURL))
			Expect(err.Error()).To(Equal("redact: invalid secret URL: " + reason))
			Expect(err.Error()).NotTo(ContainSubstring("SECRET"))
			var c alertConfig
			quoted, _ := json.Marshal(raw)
			err = json.Unmarshal([]byte(`{"Webhook":`+string(quoted)+`}`), &c)
			if raw != "" && raw != "   " {
				Expect(err).To(MatchError(redact.ErrInvalidSecretURL))
				Expect(err.Error()).NotTo(ContainSubstring("SECRET"))
			}
		},
		Entry("empty", "", "empty"),
		Entry("blank", "   ", "empty"),
		Entry("no scheme", "hooks.slack.com/services/T000/B000/SECRET", "must be an absolute http or https URL"),
		Entry("other scheme", "ftp://hooks.slack.com/SECRET", "must be an absolute http or https URL"),
		Entry("no host", "https:///services/SECRET", "has no host"),
		Entry("bad escape", "https://hooks.slack.com/services/SECRET%zz", "not a valid URL"),
		Entry("bad host", "http://[::1/SECRET", "not a valid URL"),
		Entry("control character", "https://hooks.slack.com/ser\x7fvices/SECRET", "not a valid URL"),
		Entry("already redacted", "https://hooks.slack.com/services/****", `is already redacted (contains "****"); give the real URL`),
	)

	It("wraps a sentinel errors.Is finds", func() {
		_, err := redact.NewSecretURL("nope")
		Expect(errors.Is(err, redact.ErrInvalidSecretURL)).To(BeTrue())
	})
})
