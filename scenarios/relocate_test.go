package scenarios_test

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/scenarios"
)

var _ = Describe("Relocate: a document written elsewhere resolves its paths as its scenario did", func() {
	It("rewrites the rules file relative to the new folder when both are relative, absolute otherwise", func() {
		l, err := scenarios.Load("testdata/valid/payments.yaml")
		Expect(err).NotTo(HaveOccurred())
		Expect(l.Document.System.RulesFile).To(Equal("rules/payment-rules.yaml"))

		Expect(l.Relocate(l.Document, "testdata").System.RulesFile).To(Equal("valid/rules/payment-rules.yaml"))
		Expect(l.Relocate(l.Document, ".").System.RulesFile).To(Equal("testdata/valid/rules/payment-rules.yaml"))
		Expect(l.Relocate(l.Document, "testdata/valid").System.RulesFile).To(Equal("rules/payment-rules.yaml"))
		abs, err := filepath.Abs("testdata/valid/rules/payment-rules.yaml")
		Expect(err).NotTo(HaveOccurred())
		Expect(l.Relocate(l.Document, GinkgoT().TempDir()).System.RulesFile).To(Equal(abs))
		Expect(l.Document.System.RulesFile).To(Equal("rules/payment-rules.yaml"), "the loaded document is left as it was")
	})

	It("gives a document that loads from the new folder to the same scenario", func() {
		l, err := scenarios.Load("testdata/valid/payments.yaml")
		Expect(err).NotTo(HaveOccurred())
		out := GinkgoT().TempDir()
		b, err := scenarios.Marshal(l.Relocate(l.Document, out))
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(filepath.Join(out, "moved.yaml"), b, 0o600)).To(Succeed())
		moved, err := scenarios.Load(filepath.Join(out, "moved.yaml"))
		Expect(err).NotTo(HaveOccurred())
		names := func(l *scenarios.Loaded) []string {
			var out []string
			for _, r := range l.Scenario.System.Rules {
				out = append(out, r.Name)
			}
			return out
		}
		Expect(names(moved)).To(Equal(names(l)))
		Expect(names(moved)).To(ContainElement("gateway-504-transient"))
	})

	It("rewrites a black box's program and working directory, and gives a command without one the scenario's folder", func() {
		l, err := scenarios.Load("testdata/valid/external.yaml")
		Expect(err).NotTo(HaveOccurred())
		d := l.Relocate(l.Document, ".")
		Expect(d.System.External.Command.Path).To(Equal("testdata/valid/blackbox/worker.sh"))
		Expect(d.System.External.Command.Dir).To(Equal("testdata/valid/blackbox"))
		Expect(d.System.External.Command.Args).To(Equal([]string{"--queue", "{namespace}:default"}))
		Expect(l.Document.System.External.Command.Path).To(Equal("blackbox/worker.sh"), "the loaded document is left as it was")

		noDir := *l.Document
		ext := *l.Document.System.External
		cmd := *ext.Command
		cmd.Dir = ""
		ext.Command = &cmd
		noDir.System.External = &ext
		Expect(l.Relocate(&noDir, ".").System.External.Command.Dir).To(Equal("testdata/valid"))
		Expect(l.Relocate(&noDir, "testdata/valid").System.External.Command.Dir).To(BeEmpty())
	})

	It("leaves a scenario of an fs.FS as it is: it has no folder on the OS", func() {
		l, err := scenarios.LoadFS(os.DirFS("testdata/valid"), "payments.yaml")
		Expect(err).NotTo(HaveOccurred())
		Expect(l.Relocate(l.Document, "/elsewhere").System.RulesFile).To(Equal("rules/payment-rules.yaml"))
	})
})
