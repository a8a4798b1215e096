package redact_test

import (
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"pgregory.net/rapid"

	"github.com/faultline/faultline/reference/redact"
)

var fileNameChars = regexp.MustCompile(`^[A-Za-z0-9._-]*$`)

var _ = Describe("FileName", func() {
	r := redact.Default()

	DescribeTable("masks first, then keeps only file-name characters, a mask in a readable form",
		func(in, want string) {
			Expect(r.FileName(in)).To(Equal(want))
		},
		Entry("a plain name is kept", "dlq-overflow_2.v1", "dlq-overflow_2.v1"),
		Entry("a card number: its mask, not its digits joined by '_'",
			"leaky 4111 1111 1111 1111", "leaky_CARD-1111"),
		Entry("a bearer token and a card", "leaky Bearer h6BearerTok3n0123456789 4111-1111-1111-1111",
			"leaky_Bearer_REDACTED_CARD-1111"),
		Entry("a password pair", "db password=h6Hunter2pw", "db_password_REDACTED"),
		Entry("a URL's password", "redis://:h6RedisPw@cache:6379", "redis____REDACTED_cache_6379"),
		Entry("a Slack webhook URL", "hook https://hooks.slack.com/services/T0/B0/h6SlackHookSecret99",
			"hook_https___hooks.slack.com_services_REDACTED"),
		Entry("other characters, one '_' per character", "a/b\\c:d é", "a_b_c_d__"),
	)

	It("turns a configured mask into file-name characters", func() {
		Expect(newRedactor(redact.Config{Mask: "<hidden secret>"}).FileName("password=x")).To(Equal("password_hidden-secret"))
		Expect(newRedactor(redact.Config{Mask: "***"}).FileName("password=x")).To(Equal("password_REDACTED"))
	})

	It("holds only file-name characters, whatever the input", func() {
		rapid.Check(GinkgoT(), func(t *rapid.T) {
			s := rapid.String().Draw(t, "s")
			if got := r.FileName(s); !fileNameChars.MatchString(got) {
				t.Fatalf("FileName(%q) = %q holds other characters", s, got)
			}
		})
	})

	It("never holds the digits of a card number in the input, however they were separated", func() {
		rapid.Check(GinkgoT(), func(t *rapid.T) {
			card := drawCard(t)
			s := rapid.StringMatching(`[a-z ]{0,12}`).Draw(t, "before") + " " + drawSeparated(t, card) + " " +
				rapid.StringMatching(`[a-z ]{0,12}`).Draw(t, "after")
			got := r.FileName(s)
			if joined := strings.NewReplacer("_", "", "-", "").Replace(got); strings.Contains(joined, card) {
				t.Fatalf("FileName(%q) = %q holds the card number", s, got)
			}
			if !strings.Contains(got, "CARD-"+card[len(card)-4:]) {
				t.Fatalf("FileName(%q) = %q does not show the card's mask", s, got)
			}
		})
	})
})
