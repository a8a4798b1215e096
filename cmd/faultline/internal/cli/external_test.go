package cli_test

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/cmd/faultline/internal/cli"
)

// blackBox writes an --external file (text) beside an executable
// worker.sh and returns the file's path.
func blackBox(text string) string {
	GinkgoHelper()
	dir := GinkgoT().TempDir()
	Expect(os.WriteFile(filepath.Join(dir, "worker.sh"), []byte("#!/bin/sh\nexec sleep 60\n"), 0o755)).To(Succeed())
	p := filepath.Join(dir, "system.yaml")
	Expect(os.WriteFile(p, []byte(text), 0o600)).To(Succeed())
	return p
}

// goodSystem is a bare mapping of system.external's keys, its program
// relative to the file.
const goodSystem = "command: {path: ./worker.sh}\ninject: {preset: seed, prefix: \"{namespace}:\"}\ndlq: {preset: seed, prefix: \"{namespace}:\"}\n"

var _ = Describe("faultline drill --external", func() {
	It("dry-runs a built-in against your own system, its program found beside the file", func() {
		ext := blackBox(goodSystem)
		stdout, stderr, code := run("drill", "misconfigured-pager", "--external", ext, "--redis-url", "127.0.0.1:1", "--dry-run")
		Expect(code).To(Equal(cli.ExitOK), stderr)
		Expect(stdout).To(MatchRegexp(`drill misconfigured-pager \(seed 1, \S+ at time scale 1 = \S+ on the wall clock\): fault timeline`))
		Expect(stdout).To(MatchRegexp(`revoked-key\s+`))
	})

	It("takes a Fragment holding system.external too", func() {
		ext := blackBox("apiVersion: faultline/v1\nkind: Fragment\nsystem:\n  external:\n" +
			"    command: {path: ./worker.sh}\n    inject: {preset: seed}\n    dlq: {preset: seed}\n")
		_, stderr, code := run("drill", "misconfigured-pager", "--external", ext, "--redis-url", "127.0.0.1:1", "--dry-run")
		Expect(code).To(Equal(cli.ExitOK), stderr)
	})

	It("refuses a worker fault aimed at a state (schedule.when) for a black box, which need not name its worker to the gateway", func() {
		ext := blackBox(goodSystem)
		_, stderr, code := run("drill", "worker-crash", "--external", ext, "--redis-url", "127.0.0.1:1", "--dry-run")
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(stderr).To(ContainSubstring("X-Faultline-Worker"))
	})

	It("refuses a bad file (exit 2) at its file:line:col, touching nothing", func() {
		ext := blackBox("apiVersion: faultline/v1\nkind: Fragment\nsystem:\n  external:\n" +
			"    comand: {path: ./worker.sh}\n    inject: {preset: seed}\n    dlq: {preset: seed}\n")
		stdout, stderr, code := run("drill", "worker-crash", "--external", ext, "--redis-url", "127.0.0.1:1", "--dry-run")
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(stderr).To(ContainSubstring(ext + `:5:5: unknown key "comand"; did you mean "command"?`))
		Expect(stdout).NotTo(ContainSubstring("fault timeline"))
	})

	It("refuses a program that is not beside the file", func() {
		ext := blackBox("command: {path: ./nothing.sh}\ninject: {preset: seed}\ndlq: {preset: seed}\n")
		_, stderr, code := run("drill", "worker-crash", "--external", ext, "--redis-url", "127.0.0.1:1", "--dry-run")
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(stderr).To(ContainSubstring(ext + `:1:17: system.external.command.path: "./nothing.sh": no such file`))
	})

	It("refuses a built-in a black box cannot run, naming each part and why", func() {
		ext := blackBox(goodSystem)
		_, stderr, code := run("drill", "worker-crash", "poison-message", "--external", ext, "--redis-url", "127.0.0.1:1", "--dry-run")
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(stderr).To(ContainSubstring("poison-message with --external " + ext + ":\n"))
		Expect(stderr).To(ContainSubstring("builtin/poison-message.yaml:32:5: system.retry: configures the reference worker; a black-box drill drills the system's own: remove it"))
		Expect(stderr).To(ContainSubstring("builtin/poison-message.yaml:37:5: system.autoRetry: configures the reference worker"))
		Expect(stderr).NotTo(ContainSubstring("worker-crash with --external"))
		Expect(stderr).To(ContainSubstring("docs/scenario-format.md"))
	})

	It("refuses a file it cannot read", func() {
		missing := filepath.Join(GinkgoT().TempDir(), "none.yaml")
		_, stderr, code := run("drill", "worker-crash", "--external", missing, "--redis-url", "127.0.0.1:1", "--dry-run")
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(stderr).To(ContainSubstring(missing + ": cannot read the file: no such file"))
	})
})
