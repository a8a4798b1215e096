package redact_test

import (
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"pgregory.net/rapid"

	"github.com/faultline/faultline/reference/redact"
)

var _ = Describe("Keyed", func() {
	newKeyed := func(keep ...string) *redact.Keyed {
		GinkgoHelper()
		k, err := redact.NewKeyed(redact.Config{}, keep)
		Expect(err).NotTo(HaveOccurred())
		return k
	}

	It("masks what the Redactor masks with a keyed hash: equal secrets equal, others not, the key its own", func() {
		k := newKeyed()
		a := k.String("dial redis://app:hunter2hunter@db:6379/0: refused; Authorization: Bearer abcdefghijklmnop1234")
		Expect(a).NotTo(ContainSubstring("hunter2hunter"))
		Expect(a).NotTo(ContainSubstring("abcdefghijklmnop1234"))
		Expect(a).To(MatchRegexp(`^dial redis://app:redacted-[0-9a-f]{12}@db:6379/0: refused; Authorization: Bearer redacted-[0-9a-f]{12}$`))
		b := k.String("retry: redis://app:hunter2hunter@db:6379/0")
		Expect(maskOf(b)).To(Equal(maskOf(a)), "one secret, one mask")
		c := k.String("retry: redis://app:other-password@db:6379/0")
		Expect(maskOf(c)).NotTo(Equal(maskOf(a)))
		Expect(maskOf(newKeyed().String("retry: redis://app:hunter2hunter@db:6379/0"))).NotTo(Equal(maskOf(b)), "another key")
	})

	It("leaves text without a secret as it is, and a card number as the Redactor masks it", func() {
		k := newKeyed()
		Expect(k.String("job charge-7 failed: http 503 from gateway")).To(Equal("job charge-7 failed: http 503 from gateway"))
		Expect(k.String("card 4242 4242 4242 4242 declined")).To(Equal(redact.Default().String("card 4242 4242 4242 4242 declined")))
	})

	It("keeps the kept texts (a scenario's planted secrets) as they are, even where a rule would mask them", func() {
		k := newKeyed("sk_live_PLANTEDsecret123", "planted-pass-99")
		got := k.String(`charge failed: key sk_live_PLANTEDsecret123; {"password":"planted-pass-99"}; token=realsecretvalue123`)
		Expect(got).To(ContainSubstring("sk_live_PLANTEDsecret123"))
		Expect(got).To(ContainSubstring(`"password":"planted-pass-99"`))
		Expect(got).NotTo(ContainSubstring("realsecretvalue123"))
		// A kept text inside a longer secret keeps itself, not the rest.
		k = newKeyed("hunter2")
		for _, s := range []string{"Bearer hunter2realsecretXYZ", "https://u:hunter2zzzREALSECRET@host", "token=hunter2REALsecret"} {
			got := k.String(s)
			Expect(got).NotTo(ContainSubstring("REAL"), s)
			Expect(got).NotTo(ContainSubstring("realsecret"), s)
			Expect(got).To(ContainSubstring("hunter2"), s)
		}
	})

	It("masks exactly what the Redactor masks: with its keyed masks read as the mask, it is the Redactor's output (property)", func() {
		keyedRe := regexp.MustCompile(`redacted-[0-9a-f]{12}`)
		rapid.Check(GinkgoT(), func(t *rapid.T) {
			secret := rapid.StringMatching(`[a-z0-9]{12,20}`).Draw(t, "secret")
			pre := rapid.StringMatching(`[ a-zA-Z:=;,]{0,12}`).Draw(t, "pre")
			post := rapid.StringMatching(`[ a-zA-Z:=;,]{0,12}`).Draw(t, "post")
			shape := rapid.SampledFrom([]string{"password=%s", " Bearer %s", "redis://u:%s@h", `"token":"%s"`, "%s"}).Draw(t, "shape")
			s := pre + strings.Replace(shape, "%s", secret, 1) + post
			got := newKeyed().String(s)
			want := redact.Default().String(s)
			if keyedRe.ReplaceAllString(got, redact.DefaultMask) != want {
				t.Fatalf("%q: keyed %q, the Redactor %q", s, got, want)
			}
		})
	})
})

// maskOf returns the first keyed mask in s.
func maskOf(s string) string {
	i := strings.Index(s, redact.KeyedPrefix)
	if i < 0 {
		return ""
	}
	return s[i : i+len(redact.KeyedPrefix)+12]
}
