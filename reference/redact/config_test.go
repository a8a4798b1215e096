package redact_test

import (
	"errors"
	"regexp/syntax"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/redact"
)

var _ = Describe("Config", func() {
	It("fills the zero fields with the defaults, and only those", func() {
		c := redact.Config{}.WithDefaults()
		Expect(c.Keys).To(Equal(redact.DefaultKeys()))
		Expect(c.KeyFragments).To(Equal([]string{"password", "secret", "token", "apikey"}))
		Expect(c.Mask).To(Equal("[REDACTED]"))
		Expect(c.Patterns).To(BeNil())

		set := redact.Config{Keys: []string{}, KeyFragments: []string{"x"}, Mask: "***"}.WithDefaults()
		Expect(set.Keys).To(BeEmpty())
		Expect(set.Keys).NotTo(BeNil())
		Expect(set.KeyFragments).To(Equal([]string{"x"}))
		Expect(set.Mask).To(Equal("***"))
	})

	It("lists every default key of the brief, normalised", func() {
		Expect(redact.DefaultKeys()).To(ConsistOf(
			"password", "passwd", "pwd", "secret", "token", "accesstoken", "refreshtoken", "idtoken", "apikey",
			"apisecret", "authorization", "proxyauthorization", "cookie", "setcookie", "session", "sessionid",
			"cvv", "cvc", "cvv2", "cvc2", "securitycode", "pin", "privatekey", "clientsecret", "webhookurl", "dsn",
			"connectionstring"))
		keys := redact.DefaultKeys()
		keys[0] = "changed"
		Expect(redact.DefaultKeys()[0]).To(Equal("password"), "each call returns a fresh slice")
	})

	It("accepts the zero value", func() {
		Expect(redact.Config{}.Validate()).To(Succeed())
		Expect(redact.Default().Mask()).To(Equal(redact.DefaultMask))
		Expect(newRedactor(redact.Config{Mask: "<hidden>"}).Mask()).To(Equal("<hidden>"))
	})

	DescribeTable("Validate names the bad field",
		func(c redact.Config, field string, value any, reason string) {
			err := c.Validate()
			var ce *redact.ConfigError
			Expect(errors.As(err, &ce)).To(BeTrue(), "got %v", err)
			Expect(ce.Field).To(Equal(field))
			Expect(ce.Value).To(Equal(value))
			Expect(ce.Reason).To(ContainSubstring(reason))
			Expect(err).To(MatchError(redact.ErrInvalidConfig))
			Expect(err.Error()).To(HavePrefix("redact: invalid " + field + " "))

			_, newErr := redact.New(c)
			Expect(newErr).To(MatchError(err.Error()), "New rejects it the same way")
		},
		Entry("pattern that does not compile", redact.Config{Patterns: []string{`cus_\w+`, `\d{4}`, `(`}},
			"Patterns[2]", "(", "not a valid RE2 regular expression"),
		Entry("pattern matching the empty string", redact.Config{Patterns: []string{`a*`}},
			"Patterns[0]", "a*", "matches the empty string"),
		Entry("pattern matching the mask", redact.Config{Patterns: []string{`x`, `[A-Z]{8}`}},
			"Patterns[1]", "[A-Z]{8}", `matches inside the mask "[REDACTED]"`),
		Entry("empty key", redact.Config{Keys: []string{"password", "-_ "}},
			"Keys[1]", "-_ ", "is empty once case"),
		Entry("empty fragment", redact.Config{KeyFragments: []string{""}},
			"KeyFragments[0]", "", "would match every key"),
		Entry("mask with a quote", redact.Config{Mask: `"gone"`},
			"Mask", `"gone"`, "must not contain quotes"),
		Entry("mask the rules redact", redact.Config{Mask: "4242424242424242"},
			"Mask", "4242424242424242", `is itself redacted (to "[CARD ****4242]")`),
	)

	It("keeps the regexp error for errors.As", func() {
		err := redact.Config{Patterns: []string{`(`}}.Validate()
		var se *syntax.Error
		Expect(errors.As(err, &se)).To(BeTrue())
		Expect(se.Code).To(Equal(syntax.ErrMissingParen))
	})
})
