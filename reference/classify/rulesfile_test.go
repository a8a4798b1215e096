package classify_test

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/failure"
)

var _ = Describe("ParseRules", func() {
	It("loads a rule file whose rules take precedence over the defaults", func() {
		data, err := os.ReadFile("testdata/payment-rules.yaml")
		Expect(err).NotTo(HaveOccurred())
		rs, err := classify.ParseRules("testdata/payment-rules.yaml", data, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(rs.Rules).To(HaveLen(6 + len(classify.DefaultRules())))
		c, err := rs.Classifier()
		Expect(err).NotTo(HaveOccurred())

		Expect(c.Classify(httpErr(504, ""), classify.Scope{Dependency: "smtp"})).To(And(
			HaveField("Rule", "smtp-504-transient"), HaveField("Severity", classify.Low), HaveField("Source", classify.Network)))
		Expect(c.Classify(httpErr(503, ""), classify.Scope{Dependency: "acquirer-eu", Task: "charge"}).Class).To(Equal(classify.Indeterminate))
		Expect(c.Classify(httpErr(503, ""), classify.Scope{Dependency: "acquirer-eu", Task: "refund"}).Class).To(Equal(classify.Transient))
		Expect(c.Classify(httpErr(429, "9"), classify.Scope{}).Rule).To(Equal("quota-429"))
		Expect(c.Classify(httpErr(429, ""), classify.Scope{}).Rule).To(Equal("rate-limited"), "without a hint the default rule applies")
		Expect(c.Classify(&failure.CardError{Code: "card_declined", Decline: "insufficient_funds"}, classify.Scope{}).Class).To(Equal(classify.Transient))
		Expect(c.Classify(errors.New("Error 1205: Lock wait timeout exceeded"), classify.Scope{Task: "ledger-post"}).Rule).To(Equal("ledger-locked"))
		timeoutOp := &url.Error{Op: "Get", URL: "http://r", Err: &net.OpError{Op: "read", Err: context.DeadlineExceeded}}
		Expect(c.Classify(timeoutOp, classify.Scope{Task: "report"}).Rule).To(Equal("deadline-on-reports"))
	})

	It("leaves the defaults out when asked, with its own fallback", func() {
		rs, err := classify.ParseRules("x.yaml", []byte("defaults: false\nfallback: {class: permanent, severity: high, source: system}\n"), nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(rs.Rules).To(BeEmpty())
		c, err := rs.Classifier()
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Classify(context.DeadlineExceeded, classify.Scope{})).To(Equal(classify.Classification{
			Class: classify.Permanent, Severity: classify.High, Source: classify.System, Rule: "fallback"}))
	})

	It("treats an empty file as the defaults", func() {
		rs, err := classify.ParseRules("empty.yaml", nil, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(rs.Rules).To(HaveLen(len(classify.DefaultRules())))
	})

	DescribeTable("reports a malformed file with its position and what was expected",
		func(src string, want ...string) {
			_, err := classify.ParseRules("rules.yaml", []byte(src), nil)
			Expect(err).To(HaveOccurred())
			for _, w := range want {
				Expect(err.Error()).To(ContainSubstring(w))
			}
			var re *classify.RuleError
			Expect(errors.As(err, &re)).To(BeTrue(), "a *RuleError, for tools to read")
			Expect(re.File).To(Equal("rules.yaml"))
			Expect(re.Line).To(BeNumerically(">", 0))
		},
		Entry("an unknown class, with a suggestion",
			"rules:\n  - name: r\n    class: transiant\n    severity: low\n    source: data\n",
			`rules.yaml:3:12: rules[0].class: unknown class "transiant"; did you mean "transient"?`),
		Entry("an unknown key, with a suggestion",
			"rules:\n  - name: r\n    clas: transient\n    severity: low\n    source: data\n",
			`rules.yaml:3:5: rules[0].clas: unknown key "clas"; did you mean "class"?`),
		Entry("an unknown key with nothing near it, with its path",
			"rules:\n  - name: r\n    match: {any: true}\n    class: transient\n    severity: low\n    source: data\n  - name: s\n    match: {any: true}\n    class: transient\n    severity: low\n    source: data\n    bogus: 1\n",
			`rules.yaml:12:5: rules[1].bogus: unknown key "bogus"`),
		Entry("an unknown key at the top level",
			"defualts: false\n",
			`rules.yaml:1:1: defualts: unknown key "defualts"; did you mean "defaults"?`),
		Entry("an unknown key in a match",
			"rules:\n  - name: r\n    match:\n      staus: [500]\n    class: transient\n    severity: low\n    source: data\n",
			`rules.yaml:4:7: rules[0].match.staus: unknown key "staus"; did you mean "status"?`),
		Entry("an unknown kind, with a suggestion",
			"rules:\n  - name: r\n    match:\n      kind: [net.OpErr]\n    class: transient\n    severity: low\n    source: data\n",
			`rules.yaml:4:14: rules[0].match.kind[0]: unknown error kind "net.OpErr"; did you mean "net.OpError"?`),
		Entry("an unknown sentinel",
			"rules:\n  - name: r\n    match:\n      is: [my.ErrThing]\n    class: transient\n    severity: low\n    source: data\n",
			`rules[0].match.is[0]: unknown sentinel error "my.ErrThing"; register it with Registry.RegisterSentinel`),
		Entry("a bad status",
			"rules:\n  - name: r\n    match:\n      status: [200-299, 700, abc]\n    class: transient\n    severity: low\n    source: data\n",
			`rules.yaml:4:25: rules[0].match.status[1]: status "700" is not within 100-599`,
			`rules[0].match.status[2]: status "abc" is not a number`),
		Entry("a bad regular expression",
			"rules:\n  - name: r\n    match:\n      message: \"(unclosed\"\n    class: transient\n    severity: low\n    source: data\n",
			`rules.yaml:4:16: rules[0].match.message: bad regular expression`),
		Entry("a missing name and verdict, each reported",
			"rules:\n  - match: {timeout: true}\n",
			`rules.yaml:2:5: rules[0]: missing name`, `rules[0]: missing class`, `missing severity`, `missing source`),
		Entry("a rule without a match",
			"rules:\n  - name: r\n    class: transient\n    severity: low\n    source: data\n",
			`rules.yaml:2:5: rules[0].match: a rule needs a match; give at least one criterion, or `+"`any: true`"),
		Entry("any beside other criteria",
			"rules:\n  - name: r\n    match: {any: true, timeout: true}\n    class: transient\n    severity: low\n    source: data\n",
			"rules.yaml:3:18: rules[0].match.any: `any: true` matches every error"),
		Entry("a rule named like a default one",
			"rules:\n  - name: timeout\n    match: {timeout: true}\n    class: permanent\n    severity: low\n    source: data\n",
			`rules.yaml:2:11: rules[0].name: rule name "timeout" is a default rule's; pick another name, or say `+"`defaults: false`"),
		Entry("the wrong type",
			"rules:\n  - name: r\n    match:\n      timeout: sometimes\n    class: transient\n    severity: low\n    source: data\n",
			`rules.yaml:4:16:`),
		Entry("rules that are not a list",
			"rules: {name: r}\n",
			`rules.yaml:1:8:`),
		Entry("bad indentation",
			"rules:\n  - name: r\n   class: transient\n",
			`rules.yaml:`),
		Entry("two documents",
			"rules: []\n---\nrules: []\n",
			`expected one YAML document`),
	)

	It("reports every problem in a file, not only the first", func() {
		src := "rules:\n  - name: a\n    class: transiant\n    severity: loud\n    source: data\n  - name: b\n    match: {kind: [nope]}\n    class: permanent\n    severity: low\n    source: dta\n  - name: a\n    match: {any: true}\n    class: permanent\n    severity: low\n    source: data\n"
		_, err := classify.ParseRules("rules.yaml", []byte(src), nil)
		Expect(err).To(HaveOccurred())
		lines := strings.Split(err.Error(), "\n")
		Expect(lines).To(ConsistOf(
			ContainSubstring(`rules.yaml:3:12: rules[0].class: unknown class "transiant"`),
			ContainSubstring(`rules.yaml:4:15: rules[0].severity: unknown severity "loud"`),
			ContainSubstring(`rules.yaml:7:20: rules[1].match.kind[0]: unknown error kind "nope"`),
			ContainSubstring(`rules.yaml:10:13: rules[1].source: unknown source "dta"; did you mean "data"?`),
			ContainSubstring(`rules.yaml:2:5: rules[0].match: a rule needs a match`),
			ContainSubstring(`rules.yaml:11:11: rules[2].name: rule name "a" is also rules[0]'s`),
		))
	})
})

var _ = Describe("ParseRules of a file of the wrong shape", func() {
	It("reports every value of the wrong kind with the other problems, in plain words, in one pass", func() {
		src := "defaults: maybe\nfallback: transient\nrules:\n" +
			"  - name: a\n    match: {timeout: sometimes, status: 503}\n    class: transiant\n    severity: low\n    source: data\n" +
			"  - name: b\n    match: [1, 2]\n    class: permanent\n    severity: low\n    source: data\n" +
			"  - nme: c\n    match: {any: true}\n    class: permanent\n    severity: low\n    source: data\n"
		_, err := classify.ParseRules("rules.yaml", []byte(src), nil)
		Expect(err).To(HaveOccurred())
		Expect(strings.Split(err.Error(), "\n")).To(Equal([]string{
			`rules.yaml:1:11: defaults: expected true or false, got "maybe"`,
			`rules.yaml:2:11: fallback: expected a mapping with class, severity and source, got "transient"`,
			`rules.yaml:5:22: rules[0].match.timeout: expected true or false, got "sometimes"`,
			`rules.yaml:5:41: rules[0].match.status: expected a list, got the number 503; write a list, e.g. [503, 500-599, 5xx], even for one`,
			`rules.yaml:6:12: rules[0].class: unknown class "transiant"; did you mean "transient"?`,
			`rules.yaml:10:12: rules[1].match: expected a mapping of criteria (is, kind, status, timeout, temporary, declineCode, retryAfter, message, any, shuttingDown), got a list`,
			`rules.yaml:14:5: rules[2].nme: unknown key "nme"; did you mean "name"?`,
		}))
	})

	It("never names a Go type", func() {
		for _, src := range []string{"rules: {a: 1}\n", "rules: [[1]]\n", "rules:\n  - name: {x: 1}\n", "fallback: [1]\n", "- a\n- b\n"} {
			_, err := classify.ParseRules("rules.yaml", []byte(src), nil)
			Expect(err).To(HaveOccurred(), src)
			Expect(err.Error()).NotTo(ContainSubstring("interface {}"), src)
			Expect(err.Error()).NotTo(ContainSubstring("Go struct"), src)
			Expect(err.Error()).NotTo(ContainSubstring("unmarshal"), src)
			Expect(err.Error()).NotTo(ContainSubstring("was used where"), src)
		}
	})
})

var _ = Describe("ParseRules with any and shuttingDown", func() {
	It("accepts a scoped catch-all said outright, and a shutdown-only rule", func() {
		src := "rules:\n  - name: legacy-all-permanent\n    dependency: legacy-*\n    match: {any: true}\n    class: permanent\n    severity: low\n    source: dependency\n" +
			"  - name: drain-on-stop\n    match: {is: [context.Canceled], shuttingDown: true}\n    class: canceled\n    severity: low\n    source: system\n"
		rs, err := classify.ParseRules("r.yaml", []byte(src), nil)
		Expect(err).NotTo(HaveOccurred())
		c, err := rs.Classifier()
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Classify(errors.New("x"), classify.Scope{Dependency: "legacy-billing"}).Rule).To(Equal("legacy-all-permanent"))
		Expect(c.Classify(errors.New("x"), classify.Scope{Dependency: "billing"}).Rule).To(Equal("fallback"))
		Expect(c.Classify(context.Canceled, classify.Scope{ShuttingDown: true}).Rule).To(Equal("drain-on-stop"))
		Expect(c.Classify(context.Canceled, classify.Scope{}).Rule).To(Equal("canceled"))
	})
})
