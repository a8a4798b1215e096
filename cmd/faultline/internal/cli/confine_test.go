package cli_test

import (
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/cmd/faultline/internal/cli"
)

var _ = Describe("include outside the scenario's folder", func() {
	const head = "apiVersion: faultline/v1\nkind: Scenario\nmetadata: {name: inc}\nduration: 1m\nworkload:\n  tasks: [{name: ping}]\n  arrivals: {rate: 1/s}\n"
	var tmp string
	write := func(name, text string) string {
		GinkgoHelper()
		p := filepath.Join(tmp, name)
		Expect(os.MkdirAll(filepath.Dir(p), 0o755)).To(Succeed())
		Expect(os.WriteFile(p, []byte(text), 0o600)).To(Succeed())
		return p
	}
	// commands are validate, run and drill (a dry run: nothing is
	// reached) of file, with extra flags.
	commands := func(file string, extra ...string) [][]string {
		return [][]string{
			append([]string{"validate", file}, extra...),
			append([]string{"run", file, "--no-shrink"}, extra...),
			append([]string{"drill", file, "--redis-url", "127.0.0.1:1", "--dry-run"}, extra...),
		}
	}
	BeforeEach(func() {
		tmp = GinkgoT().TempDir()
		write("x.yaml", "apiVersion: faultline/v1\nkind: Fragment\nseed: 3\n")
		write("passwd", "root:x:0:0:hunter2:/root:/bin/bash\n")
	})

	It("refuses /etc/passwd and ../x.yaml at their entries, saying how to allow them, and never shows the file", func() {
		s := write("s/s.yaml", head+"include:\n  - /etc/passwd\n  - ../x.yaml\n")
		for _, args := range commands(s) {
			out, errOut, code := run(args...)
			Expect(code).To(Equal(cli.ExitInvalid), "%v", args)
			Expect(errOut).To(ContainSubstring(s+`:9:5: include[0]: "/etc/passwd" is outside the scenario's folder`), "%v", args)
			Expect(errOut).To(ContainSubstring(s+`:10:5: include[1]: "../x.yaml" is outside the scenario's folder`), "%v", args)
			Expect(errOut).To(ContainSubstring("--allow-include-outside allows any"), "%v", args)
			Expect(out + errOut).NotTo(ContainSubstring("root:"))
			Expect(out + errOut).NotTo(ContainSubstring("[REDACTED]"))
		}
	})

	It("takes them with --allow-include-outside, and still never shows a file that is not a scenario", func() {
		s := write("s/s.yaml", head+"include: [../x.yaml]\n")
		for _, args := range commands(s, "--allow-include-outside") {
			_, errOut, code := run(args...)
			Expect(code).To(Equal(cli.ExitOK), "%v: %s", args, errOut)
		}
		p := filepath.Join(tmp, "passwd")
		s = write("s/t.yaml", head+"include: ["+p+"]\n")
		for _, args := range commands(s, "--allow-include-outside") {
			out, errOut, code := run(args...)
			Expect(code).To(Equal(cli.ExitInvalid), "%v", args)
			Expect(errOut).To(ContainSubstring(s+":8:11: include[0]: "+p+" is not a scenario fragment: at its line 1, column 1, expected apiVersion: faultline/v1"), "%v", args)
			Expect(out + errOut).NotTo(ContainSubstring("hunter2"))
			Expect(out + errOut).NotTo(ContainSubstring("root:"))
		}
	})

	It("is documented in the help of run, validate and drill", func() {
		for _, c := range []string{"run", "validate", "drill"} {
			out, _, code := run(c, "--help")
			Expect(code).To(Equal(cli.ExitOK))
			Expect(strings.Join(strings.Fields(out), " ")).To(ContainSubstring("--allow-include-outside let a scenario include files from anywhere"), c)
		}
	})
})

var _ = Describe("a drill's worker process", func() {
	It("loads the scenario within the limits the drill was given: --allow-include-outside included", func() {
		tmp := GinkgoT().TempDir()
		Expect(os.WriteFile(filepath.Join(tmp, "x.yaml"), []byte("apiVersion: faultline/v1\nkind: Fragment\nseed: 3\n"), 0o600)).To(Succeed())
		Expect(os.Mkdir(filepath.Join(tmp, "s"), 0o755)).To(Succeed())
		s := filepath.Join(tmp, "s", "s.yaml")
		Expect(os.WriteFile(s, []byte("apiVersion: faultline/v1\nkind: Scenario\nmetadata: {name: inc}\nduration: 1m\nworkload:\n  tasks: [{name: ping}]\n  arrivals: {rate: 1/s}\ninclude: [../x.yaml]\n"), 0o600)).To(Succeed())
		// A hash no load gives: a worker that loads the scenario stops
		// there, saying it changed, before it reaches for Redis.
		config := func(limits string) string {
			f := filepath.Join(tmp, "w.json")
			Expect(os.WriteFile(f, []byte(`{"name":"w1","source":"`+s+`","hash":"sha256:none","redisUrl":"redis://127.0.0.1:1","namespace":"ns","feed":"http://127.0.0.1:1/report","scale":1`+limits+`}`), 0o600)).To(Succeed())
			return f
		}
		_, errOut, code := run("worker", "--config", config(""))
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(errOut).To(ContainSubstring(`include[0]: "../x.yaml" is outside the scenario's folder`))
		_, errOut, code = run("worker", "--config", config(`,"limits":{"AllowIncludeOutside":true}`))
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(errOut).To(ContainSubstring("scenario changed since the drill loaded it"))
	})
})
