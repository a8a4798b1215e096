package redact_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/redact"
)

var _ = Describe("String", func() {
	var r *redact.Redactor
	BeforeEach(func() { r = redact.Default() })

	// expectRedaction checks one input's exact output, and that the output
	// is a fixed point.
	expectRedaction := func(in, want string) {
		Expect(in).To(RedactTo(r, want))
		Expect(want).To(RedactTo(r, want), "the output is redacted again")
	}

	DescribeTable("card numbers that pass the Luhn check become [CARD ****last4]", expectRedaction,
		Entry("spaced", "card 4242 4242 4242 4242 declined", "card [CARD ****4242] declined"),
		Entry("dashed", "4242-4242-4242-4242", "[CARD ****4242]"),
		Entry("contiguous", "pan=4242424242424242;", "pan=[CARD ****4242];"),
		Entry("Amex, 15 digits, 4-6-5", "amex 3782 822463 10005.", "amex [CARD ****0005]."),
		Entry("13 digits", "visa 4222222222222", "visa [CARD ****2222]"),
		Entry("19 digits", "pan 4000000000000000006", "pan [CARD ****0006]"),
		Entry("mixed separators", "4111-1111 1111-1111", "[CARD ****1111]"),
		Entry("two cards", "4111111111111111, 5555-5555-5555-4444", "[CARD ****1111], [CARD ****4444]"),
		Entry("two cards one space apart", "4242424242424242 4111111111111111", "[CARD ****4242] [CARD ****1111]"),
		Entry("in JSON", `{"number":"4242424242424242","exp":"12/30"}`, `{"number":"[CARD ****4242]","exp":"12/30"}`),
		Entry("after an unrelated group", "order 12 4242 4242 4242 4242", "order 12 [CARD ****4242]"),
		Entry("last group shorter than four", "4242 4242 4242 424 2", "[CARD ****4242]"),
	)

	DescribeTable("digit runs that are not card numbers are left alone", expectRedaction,
		Entry("order id failing Luhn", "order 1234567890123 failed", "order 1234567890123 failed"),
		Entry("millisecond timestamp", "ts=1700000000000", "ts=1700000000000"),
		Entry("card with a wrong check digit", "4242 4242 4242 4241", "4242 4242 4242 4241"),
		Entry("date-time", "at 20260301120000", "at 20260301120000"),
		Entry("twelve digits", "424242424242", "424242424242"),
		Entry("twenty contiguous digits", "42424242424242424242", "42424242424242424242"),
		Entry("glued to letters", "ref ab4242424242424242cd", "ref ab4242424242424242cd"),
		Entry("inside a UUID", "job 123e4567-e89b-12d3-a456-426614174000", "job 123e4567-e89b-12d3-a456-426614174000"),
		Entry("double space splits groups", "4242  4242  4242  4242", "4242  4242  4242  4242"),
	)

	DescribeTable("identifiers are left alone, whatever their digits' Luhn sum", expectRedaction,
		Entry("a Redis stream ID", "entry 1796456271893-0 acked", "entry 1796456271893-0 acked"),
		Entry("a Redis stream ID with a sequence", "XACK q g 1796456271893-12", "XACK q g 1796456271893-12"),
		Entry("an epoch-ms timestamp that passes Luhn", "at 1796456271800", "at 1796456271800"),
		Entry("an epoch-ms timestamp in JSON", `{"failed_at":1796456271800}`, `{"failed_at":1796456271800}`),
		Entry("a UUID of digits", "task 12345678-0009-3456-7890-123456789012", "task 12345678-0009-3456-7890-123456789012"),
		Entry("an asynq task ID", "asynq:{default}:t:0c1b0f4e-2b61-4a4b-9d5c-4c4c1d6f7e20", "asynq:{default}:t:0c1b0f4e-2b61-4a4b-9d5c-4c4c1d6f7e20"),
		Entry("a ULID", "01HV7Z8Q3K4M5N6P7R8S9T0V1W", "01HV7Z8Q3K4M5N6P7R8S9T0V1W"),
		Entry("a Sidekiq jid", "jid b4a577edbccf1d805744efa9", "jid b4a577edbccf1d805744efa9"),
		Entry("a Sidekiq jid of digits", "jid 424242424242424242424242", "jid 424242424242424242424242"),
		Entry("a Celery task ID", "celery-task-meta-d9c6d3a8-6a8e-4b0f-9d34-2f1e8c1b7a55", "celery-task-meta-d9c6d3a8-6a8e-4b0f-9d34-2f1e8c1b7a55"),
		Entry("a BullMQ job key", "bull:{ns}:payments:1796456271800", "bull:{ns}:payments:1796456271800"),
	)

	DescribeTable("authentication schemes keep the word and mask the credential", expectRedaction,
		Entry("Bearer", "got 401 for Bearer abc123.def", "got 401 for Bearer [REDACTED]"),
		Entry("bearer, lower case", "bearer abc123 rejected", "bearer [REDACTED] rejected"),
		Entry("Basic", "Basic dXNlcjpwYXNz", "Basic [REDACTED]"),
		Entry("Token, upper case", "TOKEN 9f8e7d6c", "TOKEN [REDACTED]"),
		Entry("long plain word", "Token abcdefghijklmnopqrstuvwxyz", "Token [REDACTED]"),
		Entry("a full stop stays", "sent Bearer abc123.", "sent Bearer [REDACTED]."),
		Entry("prose: token expired", "oauth2: token expired and refresh token is not set", "oauth2: token expired and refresh token is not set"),
		Entry("prose: basic auth", "basic auth failed", "basic auth failed"),
		Entry("prose: comparison", "assert token == nil", "assert token == nil"),
	)

	DescribeTable("values of sensitive keys are masked", expectRedaction,
		Entry("key=value", "password=hunter2", "password=[REDACTED]"),
		Entry("among other pairs", "login failed: password=hunter2 user=bob", "login failed: password=[REDACTED] user=bob"),
		Entry(`"key": "value"`, `"token": "abc"`, `"token": "[REDACTED]"`),
		Entry("compact JSON", `{"token":"abc","user":"bob"}`, `{"token":"[REDACTED]","user":"bob"}`),
		Entry("escaped JSON", `{\"password\":\"hunter2\"}`, `{\"password\":\"[REDACTED]\"}`),
		Entry("key: value", "api_key: xyz", "api_key: [REDACTED]"),
		Entry("key: value to the end of the line", "API-Key: correct horse battery staple\nnext", "API-Key: [REDACTED]\nnext"),
		Entry("key: value up to the next pair", "token: abc, user: bob", "token: [REDACTED], user: bob"),
		Entry("key fragment secret", "stripe_secret_key=abc", "stripe_secret_key=[REDACTED]"),
		Entry("key fragment token", "GITHUB_TOKEN=abc", "GITHUB_TOKEN=[REDACTED]"),
		Entry("Ruby hash", "client_secret => 'abc'", "client_secret => '[REDACTED]'"),
		Entry("query string", "GET /cb?code=1&access_token=abc&state=x", "GET /cb?code=1&access_token=[REDACTED]&state=x"),
		Entry("Go map", "map[password:hunter2 token:abc user:bob]", "map[password:[REDACTED] token:[REDACTED] user:bob]"),
		Entry("Go http.Header", "map[Accept:[*/*] Authorization:[Bearer xyz]]", "map[Accept:[*/*] Authorization:[REDACTED]]"),
		Entry("Authorization keeps the scheme", "Authorization: Bearer xyz", "Authorization: Bearer [REDACTED]"),
		Entry("Authorization inside quotes", "curl -H 'Authorization: Bearer xyz' https://x", "curl -H 'Authorization: Bearer [REDACTED]' https://x"),
		Entry("Cookie to the end of the line", "Cookie: session=abc; csrf=def", "Cookie: [REDACTED]"),
		Entry("object value", `"secret":{"a":1,"b":[2]},"x":1`, `"secret":[REDACTED],"x":1`),
		Entry("exact key pin", "user=bob pin=1234", "user=bob pin=[REDACTED]"),
		Entry("pin is not a fragment", "spinning=true", "spinning=true"),
		Entry("empty value", `password= "token": ""`, `password= "token": ""`),
		Entry("a card as the value", "pin: 4242 4242 4242 4242 exp 12/30", "pin: [REDACTED]"),
		Entry("a card and more as the value", "password=4242-4242-4242-4242!", "password=[REDACTED]"),
		Entry("unclosed quote", `{"password": "hunt`, `{"password": "[REDACTED]`),
	)

	DescribeTable("URL passwords and Slack webhooks are masked", expectRedaction,
		Entry("userinfo password", "dial postgres://app:s3cr3t@db:5432/orders: refused", "dial postgres://app:[REDACTED]@db:5432/orders: refused"),
		Entry("no user name", "redis://:pw@cache:6379/0", "redis://:[REDACTED]@cache:6379/0"),
		Entry("@ inside the password", "amqp://app:p@ss@mq/", "amqp://app:[REDACTED]@mq/"),
		Entry("user name only", "https://bob@example.com/x", "https://bob@example.com/x"),
		Entry("Slack webhook", "post https://hooks.slack.com/services/T000/B000/XXXXSECRET: 404", "post https://hooks.slack.com/services/[REDACTED]: 404"),
	)

	DescribeTable("well-known token shapes are masked whole", expectRedaction,
		Entry("Slack bot token", "slack xoxb-1234567890-abcdefABCDEF failed", "slack [REDACTED] failed"),
		Entry("Slack user token", "xoxp-1-2-3-abc", "[REDACTED]"),
		Entry("Stripe live key", "stripe sk_live_51H8abcDEF", "stripe [REDACTED]"),
		Entry("Stripe test key", "(sk_test_4eC39HqLyjWDarjtT1zdp7dc)", "([REDACTED])"),
		Entry("Stripe restricted key", "rk_live_abc123", "[REDACTED]"),
		Entry("GitHub classic token", "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "[REDACTED]"),
		Entry("GitHub fine-grained token", "github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "[REDACTED]"),
		Entry("AWS access key id", "key AKIAIOSFODNN7EXAMPLE denied", "key [REDACTED] denied"),
		Entry("not an AWS key: too long", "AKIAIOSFODNN7EXAMPLEX", "AKIAIOSFODNN7EXAMPLEX"),
		Entry("JWT", "jwt eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U ok",
			"jwt [REDACTED] ok"),
	)

	DescribeTable("text without secrets comes back unchanged", expectRedaction,
		Entry("empty", "", ""),
		Entry("a gateway error", "charge ch_3MqLlq2eZvKYlo2C: POST https://api.stripe.com/v1/charges: 504 Gateway Timeout after 30s",
			"charge ch_3MqLlq2eZvKYlo2C: POST https://api.stripe.com/v1/charges: 504 Gateway Timeout after 30s"),
		Entry("non-ASCII", "Zahlung fehlgeschlagen: Karte abgelehnt ✗", "Zahlung fehlgeschlagen: Karte abgelehnt ✗"),
	)

	It("masks what several rules find in one message", func() {
		in := "charge failed: card 4242 4242 4242 4242, Authorization: Bearer sk_live_abc123, password=hunter2 " +
			"(retry via https://hooks.slack.com/services/T0/B0/XYZ)"
		Expect(in).To(RedactTo(r, "charge failed: card [CARD ****4242], Authorization: Bearer [REDACTED], password=[REDACTED] "+
			"(retry via https://hooks.slack.com/services/[REDACTED])"))
	})

	Context("with Config.Patterns and a custom Mask", func() {
		BeforeEach(func() {
			r = newRedactor(redact.Config{Patterns: []string{`\bcus_[A-Za-z0-9]+`, `(?i)ssn \d{3}-\d{2}-\d{4}`}, Mask: "***"})
		})

		DescribeTable("masks pattern matches with the mask", expectRedaction,
			Entry("first pattern", "customer cus_Nf9X2 failed", "customer *** failed"),
			Entry("second pattern", "SSN 123-45-6789 on file", "*** on file"),
			Entry("built-in rules use the mask too", "password=hunter2", "password=***"),
			Entry("card numbers keep their own format", "4242424242424242", "[CARD ****4242]"),
		)
	})

	Context("when a pattern's mask exposes a card number", func() {
		BeforeEach(func() {
			r = newRedactor(redact.Config{Mask: "***", Patterns: []string{`acct_[a-z]+`}})
		})

		It("applies the rules again until the text settles", func() {
			// Glued to "acct_abc" the digits are no card; once the pattern
			// has masked the prefix, they are.
			expectRedaction("ref acct_abc4242424242424242", "ref ***[CARD ****4242]")
		})
	})

	Context("with custom Keys", func() {
		BeforeEach(func() {
			r = newRedactor(redact.Config{Keys: append(redact.DefaultKeys(), "Account-Number"), KeyFragments: []string{"secret"}})
		})

		DescribeTable("matches keys ignoring case, '-', '_' and spaces", expectRedaction,
			Entry("added key", "account_number=DE89370400440532013000", "account_number=[REDACTED]"),
			Entry("default key", "PASSWD=x", "PASSWD=[REDACTED]"),
			Entry("remaining fragment", "my_secret=x", "my_secret=[REDACTED]"),
			Entry("dropped fragment", "github_token=x", "github_token=x"),
		)
	})
})
