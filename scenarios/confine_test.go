package scenarios_test

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/scenarios"
)

// The bytes of files that are not scenarios: no error may repeat them.
const (
	secretText  = "root:x:0:0:hunter2-in-the-file:/root:/bin/bash\ndaemon:x:1:1::/usr/sbin:/usr/sbin/nologin\n"
	secretKey   = "db_hunter2_key: s3cr3t-value\n"
	secretBadYA = "key: [unclosed hunter2-bad-yaml\n  - {: : \n"
)

var _ = Describe("includes outside the scenario's folder", func() {
	var tmp, dir string
	// write writes a file under tmp.
	write := func(name, text string) string {
		GinkgoHelper()
		p := filepath.Join(tmp, name)
		Expect(os.MkdirAll(filepath.Dir(p), 0o755)).To(Succeed())
		Expect(os.WriteFile(p, []byte(text), 0o600)).To(Succeed())
		return p
	}
	allow := scenarios.Limits{AllowIncludeOutside: true}

	BeforeEach(func() {
		tmp = GinkgoT().TempDir()
		dir = filepath.Join(tmp, "scenarios")
		write("x.yaml", fragmentHead+"seed: 9\n")
		write("passwd", secretText)
	})

	It("refuses an absolute path and ../, at the entry, saying how to allow it, reading nothing", func() {
		s := write("scenarios/s.yaml", scenarioHead+pingWorkload+"include:\n  - "+filepath.Join(tmp, "passwd")+"\n  - ../x.yaml\n")
		_, err := scenarios.Load(s)
		Expect(err).To(reportExactly(
			s+`:9:5: include[0]: "`+filepath.Join(tmp, "passwd")+`" is outside the scenario's folder: a scenario includes files from its own folder and the folders below it (--allow-include-outside allows any)`,
			s+`:10:5: include[1]: "../x.yaml" is outside the scenario's folder: a scenario includes files from its own folder and the folders below it (--allow-include-outside allows any)`,
		))
		Expect(err.Error()).NotTo(ContainSubstring("hunter2"))
	})

	It("refuses /etc/passwd, at the entry", func() {
		s := write("scenarios/s.yaml", scenarioHead+pingWorkload+"include: [/etc/passwd]\n")
		_, err := scenarios.Load(s)
		Expect(err).To(reportExactly(s + `:8:11: include[0]: "/etc/passwd" is outside the scenario's folder: a scenario includes files from its own folder and the folders below it (--allow-include-outside allows any)`))
		Expect(err.Error()).NotTo(ContainSubstring("root:"))
	})

	It("refuses a fragment that leaves the scenario's folder from a folder below it, and a link inside it to a file outside", func() {
		write("scenarios/parts/f.yaml", fragmentHead+"include: [../../x.yaml]\n")
		Expect(os.Symlink(filepath.Join(tmp, "x.yaml"), filepath.Join(tmp, "scenarios", "link.yaml"))).To(Succeed())
		s := write("scenarios/s.yaml", scenarioHead+pingWorkload+"include: [parts/f.yaml, link.yaml]\n")
		_, err := scenarios.Load(s)
		Expect(err).To(reportExactly(
			s+`:8:25: include[1]: "link.yaml" is a link to a file outside the scenario's folder: a scenario includes files from its own folder and the folders below it (--allow-include-outside allows any)`,
			filepath.Join(dir, "parts", "f.yaml")+`:3:11: include[0]: "../../x.yaml" is outside the scenario's folder: a scenario includes files from its own folder and the folders below it (--allow-include-outside allows any)`,
		))
	})

	It("takes a fragment of a folder below that includes another of the scenario's folder", func() {
		write("scenarios/parts/f.yaml", fragmentHead+"include: [../shared.yaml]\n")
		write("scenarios/shared.yaml", fragmentHead+"seed: 5\n")
		l, err := scenarios.Load(write("scenarios/s.yaml", scenarioHead+pingWorkload+"include: [parts/f.yaml]\n"))
		Expect(err).NotTo(HaveOccurred())
		Expect(*l.Document.Seed).To(Equal(uint64(5)))
	})

	It("takes them with AllowIncludeOutside (faultline --allow-include-outside)", func() {
		s := write("scenarios/s.yaml", scenarioHead+pingWorkload+"include: [../x.yaml, "+filepath.Join(tmp, "x.yaml")+"]\n")
		l, err := allow.Load(s)
		Expect(err).NotTo(HaveOccurred())
		Expect(*l.Document.Seed).To(Equal(uint64(9)))
	})

	DescribeTable("never shows the content of an included file that is not a scenario: its path, line:col and what was expected",
		func(text string) {
			p := write("other/notes.txt", text)
			s := write("scenarios/s.yaml", scenarioHead+pingWorkload+"include: ["+p+"]\n")
			_, err := allow.Load(s)
			Expect(err).To(reportExactly(s + `:8:11: include[0]: ` + p + ` is not a scenario fragment: at its line 1, column 1, expected apiVersion: faultline/v1, then kind: Fragment (what it holds is not shown)`))
			Expect(err.Error()).NotTo(ContainSubstring("hunter2"))
		},
		Entry("a text of lines", secretText),
		Entry("a YAML mapping of other keys", secretKey),
		Entry("a text that is not YAML", secretBadYA),
	)

	It("shows the problems of an included scenario file as before", func() {
		s := write("scenarios/s.yaml", scenarioHead+pingWorkload+"include: [f.yaml]\n")
		write("scenarios/f.yaml", fragmentHead+"seeed: 3\n")
		_, err := scenarios.Load(s)
		Expect(err).To(reportExactly(filepath.Join(dir, "f.yaml") + `:3:1: unknown key "seeed"; did you mean "seed"?`))
	})

	It("never shows the content of a rule file that is not one", func() {
		for _, text := range []string{secretText, secretKey, secretBadYA} {
			p := write("other/rules.yaml", text)
			s := write("scenarios/s.yaml", scenarioHead+pingWorkload+"system: {rulesFile: "+p+"}\n")
			_, err := scenarios.Load(s)
			Expect(err).To(reportExactly(s+`:8:21: system.rulesFile: `+p+` is not a rule file: expected a mapping with the keys defaults, fallback and rules (what it holds is not shown)`), text)
			Expect(err.Error()).NotTo(ContainSubstring("hunter2"))
		}
	})
})
