package classify_test

import (
	"os"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/classify"
)

// The rule-file reference, docs/rules-format.md, against the parser.
var _ = Describe("The rule-file reference (docs/rules-format.md)", func() {
	var doc string
	BeforeEach(func() {
		data, err := os.ReadFile("../../docs/rules-format.md")
		Expect(err).NotTo(HaveOccurred())
		doc = string(data)
	})

	It("has examples that load", func() {
		blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(doc, -1)
		Expect(blocks).NotTo(BeEmpty())
		for i, b := range blocks {
			rs, err := classify.ParseRules("example.yaml", []byte(b[1]), nil)
			Expect(err).NotTo(HaveOccurred(), "example %d", i+1)
			Expect(rs.Rules).NotTo(BeEmpty())
		}
	})

	It("documents every key, every registered sentinel and kind, and every class, severity and source", func() {
		for _, k := range classify.RuleFileKeys {
			Expect(doc).To(ContainSubstring("| `"+k+"` |"), "the key %s has a row", k)
		}
		reg := classify.DefaultRegistry()
		for _, name := range append(reg.SentinelNames(), reg.KindNames()...) {
			Expect(doc).To(ContainSubstring("`"+name+"`"), name)
		}
		for _, c := range classify.Classes {
			Expect(doc).To(ContainSubstring("`"+c.String()+"`"), c.String())
		}
		for _, s := range classify.Severities {
			Expect(doc).To(ContainSubstring("`"+s.String()+"`"), s.String())
		}
		for _, s := range classify.Sources {
			Expect(doc).To(ContainSubstring("`"+s.String()+"`"), s.String())
		}
	})

	It("shows the errors as the parser reports them", func() {
		bad := "rules:\n  - name: smtp-blips\n    dependency: smtp\n    match:\n      status: [600]\n    class: transiant\n    severity: low\n    source: network\n" +
			"  - name: x\n    match: {kind: [net.OpErr]}\n    class: permanent\n    severity: low\n    source: data\n    dependancy: smtp\n"
		_, err := classify.ParseRules("rules.yaml", []byte(bad), nil)
		Expect(err).To(HaveOccurred())
		for _, line := range strings.Split(err.Error(), "\n") {
			Expect(doc).To(ContainSubstring(line))
		}
	})
})
