package redact_test

import (
	"maps"
	"regexp"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"pgregory.net/rapid"

	"github.com/faultline/faultline/reference/redact"
)

// brands are the card numbers issued: a prefix and the lengths its
// numbers have (ISO/IEC 7812 issuer identification numbers).
var brands = []struct {
	prefix  string
	lengths []int
}{
	{"4", []int{13, 16, 19}},             // Visa
	{"51", []int{16}}, {"55", []int{16}}, // Mastercard
	{"2221", []int{16}}, {"2720", []int{16}},
	{"34", []int{15}}, {"37", []int{15}}, // American Express
	{"6011", []int{16, 19}}, {"65", []int{16, 19}}, // Discover
	{"3528", []int{16, 19}}, {"3589", []int{16}}, // JCB
	{"36", []int{14}},     // Diners Club
	{"62", []int{16, 19}}, // UnionPay
}

// drawCard draws a Luhn-valid card number of a brand's prefix and length
// (13 to 19 digits).
func drawCard(t *rapid.T) string {
	b := rapid.SampledFrom(brands).Draw(t, "brand")
	n := rapid.SampledFrom(b.lengths).Draw(t, "length")
	body := b.prefix + rapid.StringOfN(rapid.RuneFrom([]rune("0123456789")), n-1-len(b.prefix), n-1-len(b.prefix), -1).Draw(t, "body")
	return body + string(rune('0'+luhnCheckDigit(body)))
}

// identifierShape matches the written forms a card never takes and an
// identifier does, which the redactor leaves alone: a Redis stream ID (a
// millisecond time, a dash, a sequence) and a UUID of digits.
var identifierShape = regexp.MustCompile(`^([1-3][0-9]{12}-[0-9]+|[0-9]{8}-[0-9]{4}-[0-9]{4}-[0-9]{4}-[0-9]{12})$`)

// luhnCheckDigit returns the digit that makes body+digit pass the Luhn check.
func luhnCheckDigit(body string) int {
	sum := 0
	for i := len(body) - 1; i >= 0; i-- {
		d := int(body[i] - '0')
		if (len(body)-1-i)%2 == 0 {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return (10 - sum%10) % 10
}

// drawSeparated writes digits with a random single separator (none, a space
// or a dash) between each pair; a written form that has an identifier's
// shape (identifierShape) is written whole instead.
func drawSeparated(t *rapid.T, digits string) string {
	var b strings.Builder
	for i := range len(digits) {
		if i > 0 {
			b.WriteString(rapid.SampledFrom([]string{"", "", "", " ", "-"}).Draw(t, "sep"))
		}
		b.WriteByte(digits[i])
	}
	if identifierShape.MatchString(b.String()) {
		return digits
	}
	return b.String()
}

// vocabulary is what String's rules look for and what they write; text
// drawn from it reaches far more of the rules than random bytes do.
var vocabulary = []string{
	"password", "token", "Authorization", "Cookie", "api_key", "note", "user", "pin", "secret",
	"=", ":", ": ", " ", "  ", "\t", "\n", "'", `"`, `\"`, `\`, "[", "]", "{", "}", "(", ")", ",", ";", "&",
	"==", "=>", "://", "@", "/", "4242", "4242 4242 4242 4242", "4242424242424242", "378282246310005",
	"1", "0", "-", "9", "Bearer ", "Basic ", "Token ", "bearer", "abc", "XyZ", "hunter2", "x.y",
	"[REDACTED]", "[CARD ****4242]", "****", "https://", "postgres://a:b@h/", "hooks.slack.com/services/",
	"T0/B0/X", "xoxb-", "sk_live_", "ghp_", "AKIAIOSFODNN7EXAMPLE", "eyJa", ".eyJb", ".", "_", "map[", "é",
}

// text draws either arbitrary text or text made of the rules' vocabulary.
var text = rapid.OneOf(
	rapid.String(),
	rapid.Map(rapid.SliceOfN(rapid.SampledFrom(vocabulary), 0, 16), func(p []string) string { return strings.Join(p, "") }),
)

// payloadKeys mixes sensitive and ordinary keys.
var payloadKeys = rapid.SampledFrom([]string{"note", "amount", "token", "API-Key", "headers", "items", "card", "password", "id"})

// jsonValue draws a JSON-like value nested at most depth levels.
func jsonValue(depth int) *rapid.Generator[any] {
	leaves := []*rapid.Generator[any]{
		rapid.Just[any](nil),
		rapid.Map(rapid.Bool(), func(b bool) any { return b }),
		rapid.Map(rapid.SampledFrom([]float64{0, 12.5, 1234567890123, 4242424242424242}), func(f float64) any { return f }),
		rapid.Map(text, func(s string) any { return s }),
	}
	if depth == 0 {
		return rapid.OneOf(leaves...)
	}
	inner := jsonValue(depth - 1)
	return rapid.OneOf(append(leaves,
		rapid.Map(rapid.MapOfN(payloadKeys, inner, 0, 4), func(m map[string]any) any { return m }),
		rapid.Map(rapid.SliceOfN(inner, 0, 4), func(s []any) any { return s }),
		rapid.Map(rapid.SliceOfN(text, 0, 3), func(s []string) any { return s }),
	)...)
}

// deepCopy copies the JSON-like values jsonValue draws.
func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		if v == nil {
			return v
		}
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		if v == nil {
			return v
		}
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = deepCopy(e)
		}
		return out
	case []string:
		return slices.Clone(v)
	}
	return v
}

var _ = Describe("Properties", func() {
	r := redact.Default()

	It("never lets a Luhn-valid card number through, wherever it sits and however it is separated", func() {
		rapid.Check(GinkgoT(), func(t *rapid.T) {
			card := drawCard(t)
			written := drawSeparated(t, card)
			// Anything but a letter or digit may touch the card; a letter
			// or digit would make it part of a longer word or number.
			notAlnum := rapid.SampledFrom([]string{" ", "-", ":", "=", "\n", "\t", `"`, "'", ",", "(", ")", "[", "]", "/", "_", "#", "é"})
			s := text.Draw(t, "before") + notAlnum.Draw(t, "left") + written + notAlnum.Draw(t, "right") + text.Draw(t, "after")

			out := r.String(s)
			if strings.Contains(out, written) || strings.Contains(out, card) {
				t.Fatalf("card %s (written %q) survives in %q", card, written, out)
			}
		})
	})

	It("never panics and is idempotent", func() {
		rapid.Check(GinkgoT(), func(t *rapid.T) {
			s := text.Draw(t, "s")
			once := r.String(s)
			if twice := r.String(once); twice != once {
				t.Fatalf("String is not idempotent on %q:\n once:  %q\n twice: %q", s, once, twice)
			}
			if u := r.URL(s); r.URL(u) != u && u != redact.RedactedURL {
				t.Fatalf("URL is not idempotent on %q: %q then %q", s, u, r.URL(u))
			}
		})
	})

	It("settles the built-in rules in a single pass", func() {
		rapid.Check(GinkgoT(), func(t *rapid.T) {
			s := text.Draw(t, "s")
			once := redact.Once(r, s)
			if twice := redact.Once(r, once); twice != once {
				t.Fatalf("one pass does not settle %q:\n once:  %q\n twice: %q", s, once, twice)
			}
		})
	})

	It("is idempotent with a custom mask and patterns", func() {
		custom, err := redact.New(redact.Config{Mask: "<hidden>", Patterns: []string{`cus_[A-Za-z0-9]+`}})
		Expect(err).NotTo(HaveOccurred())
		rapid.Check(GinkgoT(), func(t *rapid.T) {
			s := text.Draw(t, "s") + rapid.SampledFrom([]string{"", "cus_abc", "<hidden>", "password=<hidden>x"}).Draw(t, "extra")
			once := custom.String(s)
			if twice := custom.String(once); twice != once {
				t.Fatalf("String is not idempotent on %q:\n once:  %q\n twice: %q", s, once, twice)
			}
		})
	})

	It("Fields never mutates its input, and redacting its output changes nothing", func() {
		rapid.Check(GinkgoT(), func(t *rapid.T) {
			in := rapid.MapOfN(payloadKeys, jsonValue(3), 0, 6).Draw(t, "payload")
			before := deepCopy(in).(map[string]any)

			out := r.Fields(in)
			Expect(in).To(Equal(before), "Fields mutated its input")
			Expect(slices.Sorted(maps.Keys(out))).To(Equal(slices.Sorted(maps.Keys(in))))
			Expect(r.Fields(out)).To(Equal(out), "Fields is idempotent")
		})
	})
})
