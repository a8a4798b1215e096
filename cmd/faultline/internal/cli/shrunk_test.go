package cli_test

import (
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/cmd/faultline/internal/cli"
)

var _ = Describe("the shrunk reproduction (issue 28 item 3)", func() {
	const scenario = `apiVersion: faultline/v1
kind: Scenario
metadata: {name: shrinkme}
duration: 2m
workload:
  tasks: [{name: charge, dependency: gw}]
  arrivals: {rate: 2/s}
system:
  rulesFile: rules/mine.yaml
faults:
  - {name: down, target: dependency/gw, model: outage, schedule: {from: 10s, until: 1m}}
  - {name: slow, target: dependency/gw, model: latency, params: {mean: 10ms}}
expect:
  - {count: dead-letters, equals: 0}
`
	const rules = "rules:\n  - {name: mine, dependency: gw, match: {any: true}, class: transient, severity: low, source: dependency}\n"

	It("runs where it is written, its relative paths rewritten: the failure again (exit 1), not invalid input (exit 2)", func() {
		a, b := GinkgoT().TempDir(), GinkgoT().TempDir()
		Expect(os.Mkdir(filepath.Join(a, "rules"), 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(a, "rules", "mine.yaml"), []byte(rules), 0o600)).To(Succeed())
		s := filepath.Join(a, "s.yaml")
		Expect(os.WriteFile(s, []byte(scenario), 0o600)).To(Succeed())
		out := filepath.Join(b, "out.yaml")
		printed, errOut, code := run("run", s, "--shrunk-out", out)
		Expect(code).To(Equal(cli.ExitFailed), errOut)
		Expect(printed).To(ContainSubstring("smallest failing fault schedule for shrinkme"))

		again, errOut, code := run("run", out, "--no-shrink")
		Expect(code).To(Equal(cli.ExitFailed), errOut)
		Expect(again).To(ContainSubstring("FAIL  shrinkme-shrunk  seed 0"))
		written, err := os.ReadFile(out)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(written)).To(ContainSubstring("rulesFile: " + filepath.Join(a, "rules", "mine.yaml") + "\n"))

		By("the printed one, saved where its message says (it resolves from the current folder), and anywhere else")
		Expect(printed).To(ContainSubstring("save it as shrinkme-shrunk.yaml and run: faultline run shrinkme-shrunk.yaml"))
		doc := printed[strings.Index(printed, "---\n")+4 : strings.LastIndex(printed, "---\n")]
		Expect(doc).To(ContainSubstring("rulesFile: " + filepath.Join(a, "rules", "mine.yaml") + "\n"))
		c := filepath.Join(GinkgoT().TempDir(), "shrinkme-shrunk.yaml")
		Expect(os.WriteFile(c, []byte(doc), 0o600)).To(Succeed())
		_, errOut, code = run("run", c, "--no-shrink")
		Expect(code).To(Equal(cli.ExitFailed), errOut)
	})
})
