package scenarios_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/layout"
	"github.com/faultline/faultline/scenarios"
)

// blackBoxable is a scenario a black-box drill can run: one task calling
// dependency gw, no steps, no store faults, no reference configuration.
const blackBoxable = scenarioHead + "workload:\n  tasks: [{name: charge, dependency: gw}]\n  arrivals: {rate: 1/s}\n"

// externalFragment is an --external file: a Fragment holding only
// system.external, its program bin/worker.sh relative to the file.
const externalFragment = fragmentHead + "system:\n  external:\n    command: {path: bin/worker.sh, args: [--fast]}\n" +
	"    inject: {preset: seed, prefix: \"{namespace}:\"}\n    dlq: {preset: seed, prefix: \"{namespace}:\"}\n"

// writeFiles writes name, text pairs under dir (a name ending in .sh
// executable) and returns dir.
func writeFiles(dir string, files ...string) string {
	GinkgoHelper()
	for i := 0; i < len(files); i += 2 {
		p := filepath.Join(dir, files[i])
		Expect(os.MkdirAll(filepath.Dir(p), 0o755)).To(Succeed())
		mode := os.FileMode(0o644)
		if filepath.Ext(p) == ".sh" {
			mode = 0o755
		}
		Expect(os.WriteFile(p, []byte(files[i+1]), mode)).To(Succeed())
	}
	return dir
}

var _ = Describe("WithExternal (faultline drill --external FILE)", func() {
	It("drills a scenario file as a black box, the file's commands relative to the file's folder", func() {
		dir := writeFiles(GinkgoT().TempDir(), "s.yaml", blackBoxable, "sys/ext.yaml", externalFragment,
			"sys/bin/worker.sh", "#!/bin/sh\n")
		l, err := scenarios.Load(filepath.Join(dir, "s.yaml"))
		Expect(err).NotTo(HaveOccurred())
		before := *l

		x, err := scenarios.WithExternal(l, filepath.Join(dir, "sys/ext.yaml"))
		Expect(err).NotTo(HaveOccurred())
		e := x.Scenario.System.External
		Expect(e).NotTo(BeNil())
		Expect(e.Command).To(Equal(&layout.Command{Path: filepath.Join(dir, "sys/bin/worker.sh"), Args: []string{"--fast"}, Dir: filepath.Join(dir, "sys")}))
		Expect(e.Inject).To(Equal(layout.Inject{Preset: layout.PresetSeed, Prefix: "{namespace}:"}))
		Expect(x.Scenario.WithDefaults().Validate()).To(Succeed())

		By("keeping the path, and naming the effective document in the hash")
		Expect(x.Path).To(Equal(l.Path))
		out, err := scenarios.Marshal(x.Document)
		Expect(err).NotTo(HaveOccurred())
		sum := sha256.Sum256(out)
		Expect(x.Hash).To(Equal("sha256:" + hex.EncodeToString(sum[:])))
		Expect(x.Hash).NotTo(Equal(l.Hash))

		By("rebasing the document's paths on the scenario's folder, so that the effective document loads there")
		Expect(x.Document.System.External.Command).To(Equal(&scenarios.Command{Path: "sys/bin/worker.sh", Args: []string{"--fast"}, Dir: "sys"}))
		Expect(os.WriteFile(filepath.Join(dir, "effective.yaml"), out, 0o644)).To(Succeed())
		back, err := scenarios.Load(filepath.Join(dir, "effective.yaml"))
		Expect(err).NotTo(HaveOccurred(), "%s", out)
		Expect(back.Scenario.System.External).To(Equal(e))

		By("leaving the scenario it was given as it was")
		Expect(*l).To(Equal(before))
		Expect(l.Document.System.External).To(BeNil())
		Expect(l.Scenario.System.External).To(BeNil())
	})

	It("takes a bare mapping of system.external's keys as well", func() {
		dir := writeFiles(GinkgoT().TempDir(), "s.yaml", blackBoxable,
			"ext.yaml", "command: {path: sh, args: [-c, 'exec sleep 60']}\ninject: {preset: seed}\ndlq: {preset: seed}\nnoAlerts: true\n")
		l, err := scenarios.Load(filepath.Join(dir, "s.yaml"))
		Expect(err).NotTo(HaveOccurred())
		x, err := scenarios.WithExternal(l, filepath.Join(dir, "ext.yaml"))
		Expect(err).NotTo(HaveOccurred())
		e := x.Scenario.System.External
		Expect(e.Command).To(Equal(&layout.Command{Path: "sh", Args: []string{"-c", "exec sleep 60"}, Dir: dir}))
		Expect(e.NoAlerts).To(BeTrue())
		Expect(e.DLQ).To(Equal(layout.DLQ{Preset: layout.PresetSeed}))
	})

	It("replaces the scenario's own black box instead of merging into it", func() {
		dir := writeFiles(GinkgoT().TempDir(), "ext.yaml", "command: {path: sh}\ninject: {preset: faultline}\ndlq: {preset: faultline}\n")
		l, err := scenarios.Load("testdata/valid/external.yaml")
		Expect(err).NotTo(HaveOccurred())
		Expect(l.Scenario.System.External.Copies).To(Equal(2))
		x, err := scenarios.WithExternal(l, filepath.Join(dir, "ext.yaml"))
		Expect(err).NotTo(HaveOccurred())
		e := x.Scenario.System.External
		Expect(e.Command).To(Equal(&layout.Command{Path: "sh", Dir: dir}))
		Expect(e.Copies).To(BeZero(), "the scenario's copies: 2 is not kept")
		Expect(e.DLQShrinks).To(BeEmpty())
		Expect(e.Inject).To(Equal(layout.Inject{Preset: layout.PresetFaultline}))
	})

	It("drills a built-in that a black box can run (no steps, no store faults, no reference configuration)", func() {
		dir := writeFiles(GinkgoT().TempDir(), "ext.yaml", externalFragment, "bin/worker.sh", "#!/bin/sh\n")
		l, err := scenarios.LoadBuiltin("worker-crash")
		Expect(err).NotTo(HaveOccurred())
		x, err := scenarios.WithExternal(l, filepath.Join(dir, "ext.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(x.Path).To(Equal("builtin/worker-crash.yaml"))
		Expect(x.Scenario.System.External.Command.Path).To(Equal(filepath.Join(dir, "bin/worker.sh")))
		Expect(x.Scenario.Faults).To(HaveLen(len(l.Scenario.Faults)))
		Expect(x.Scenario.WithDefaults().Validate()).To(Succeed())
		By("its document's paths relative to the working directory: a built-in has no folder")
		Expect(x.Document.System.External.Command.Path).To(Equal(filepath.ToSlash(filepath.Join(dir, "bin/worker.sh"))))
	})

	It("refuses a built-in that a black box cannot run, naming each part and why", func() {
		dir := writeFiles(GinkgoT().TempDir(), "ext.yaml", externalFragment, "bin/worker.sh", "#!/bin/sh\n")
		for _, name := range []string{"poison-message", "dlq-basics", "dlq-store-outage"} {
			l, err := scenarios.LoadBuiltin(name)
			Expect(err).NotTo(HaveOccurred())
			_, err = scenarios.WithExternal(l, filepath.Join(dir, "ext.yaml"))
			switch name {
			case "poison-message":
				Expect(err).To(reportExactly(
					"builtin/poison-message.yaml:32:5: system.retry: "+scenarios.ExternalReferenceOnly,
					"builtin/poison-message.yaml:37:5: system.autoRetry: "+scenarios.ExternalReferenceOnly))
			case "dlq-basics":
				Expect(err).To(reportLine("builtin/dlq-basics.yaml:72:13: steps[0].action: " + scenarios.ExternalNoSteps))
			case "dlq-store-outage":
				Expect(err).To(reportExactly("builtin/dlq-store-outage.yaml:45:13: faults[2].target: " + scenarios.ExternalNoStoreFaults))
			}
		}
	})

	It("refuses a scenario file's parts at their file:line:col, and a task without a dependency", func() {
		text := scenarioHead + "workload:\n  tasks: [{name: charge, dependency: gw}, {name: log}]\n  arrivals: {rate: 1/s}\nsteps: [{at: 10s, action: requeue}]\n"
		dir := writeFiles(GinkgoT().TempDir(), "s.yaml", text, "ext.yaml", "command: {path: sh}\ninject: {preset: seed}\ndlq: {preset: seed}\n")
		l, err := scenarios.Load(filepath.Join(dir, "s.yaml"))
		Expect(err).NotTo(HaveOccurred(), "the reference runs it")
		_, err = scenarios.WithExternal(l, filepath.Join(dir, "ext.yaml"))
		Expect(err).To(reportExactly(
			filepath.Join(dir, "s.yaml")+":6:43: workload.tasks[1].dependency: "+scenarios.ExternalNeedsDependency,
			filepath.Join(dir, "s.yaml")+":8:27: steps[0].action: "+scenarios.ExternalNoSteps))
	})

	DescribeTable("reports a bad file at its file:line:col",
		func(text string, lines ...string) {
			dir := writeFiles(GinkgoT().TempDir(), "s.yaml", blackBoxable, "ext.yaml", text)
			l, err := scenarios.Load(filepath.Join(dir, "s.yaml"))
			Expect(err).NotTo(HaveOccurred())
			_, err = scenarios.WithExternal(l, filepath.Join(dir, "ext.yaml"))
			for i := range lines {
				lines[i] = filepath.Join(dir, "ext.yaml") + ":" + lines[i]
			}
			Expect(err).To(reportExactly(lines...))
		},
		Entry("an unknown key in a fragment, with the nearest", fragmentHead+"system:\n  external:\n    comand: {path: sh}\n    inject: {preset: seed}\n    dlq: {preset: seed}\n",
			`5:5: unknown key "comand"; did you mean "command"?`),
		Entry("an unknown key in a bare mapping, with the nearest", "command: {path: sh}\ninject: {preset: seed}\ndlq: {preset: seed}\ncopie: 2\n",
			`4:1: unknown key "copie"; did you mean "copies"?`),
		Entry("a value of the wrong type in a bare mapping", "command: {path: sh}\ninject: {preset: seed}\ndlq: {preset: seed}\nnoAlerts: maybe\n",
			`4:11: system.external.noAlerts: expected true or false, got "maybe"`),
		Entry("a program that is not there, relative to the file", "command: {path: ./worker.sh}\ninject: {preset: seed}\ndlq: {preset: seed}\n",
			`1:17: system.external.command.path: "./worker.sh": no such file; expected a program (a relative path is relative to this file's folder)`),
		Entry("a black box missing its DLQ", "command: {path: sh}\ninject: {preset: seed}\n",
			`1:1: system.external.dlq: no adapter: give a preset (faultline, seed, sidekiq, celery, rq, bullmq) or one of redisList, redisZSet, redisStream, http, command`),
		Entry("a fragment holding more than system.external", fragmentHead+"duration: 5m\nsystem:\n  retry: {maxAttempts: 3}\n  external:\n    command: {path: sh}\n    inject: {preset: seed}\n    dlq: {preset: seed}\nfaults: []\n",
			"3:1: duration: an external system's file gives system.external and nothing else (the scenario gives the rest): remove it",
			"5:3: system.retry: an external system's file gives system.external and nothing else (the scenario gives the rest): remove it",
			"10:1: faults: an external system's file gives system.external and nothing else (the scenario gives the rest): remove it"),
		Entry("a fragment without system.external", fragmentHead+"system:\n  alerts: {receivers: [slack]}\n",
			"3:1: expected system.external: the black-box system to drill (command or running, inject, dlq)",
			"4:3: system.alerts: an external system's file gives system.external and nothing else (the scenario gives the rest): remove it"),
		Entry("a scenario instead of a fragment", blackBoxable+"system:\n  external: {command: {path: sh}, inject: {preset: seed}, dlq: {preset: seed}}\n",
			"2:7: kind: expected Fragment: an external system's file is a Fragment holding only system.external (or a bare mapping of its keys: command, inject, dlq, …), not a Scenario"),
		Entry("a document without its header", "system:\n  external: {command: {path: sh}}\n",
			"1:1: missing apiVersion; expected apiVersion: faultline/v1",
			"1:1: missing kind; expected kind: Scenario or kind: Fragment"),
		Entry("YAML that is not", "command: [sh\n", "1:10: bad YAML: sequence end token ']' not found"),
	)

	It("says why a file it cannot read is not used", func() {
		l, err := scenarios.LoadFS(mapFS("s.yaml", blackBoxable), "s.yaml")
		Expect(err).NotTo(HaveOccurred())
		missing := filepath.Join(GinkgoT().TempDir(), "nothing.yaml")
		_, err = scenarios.WithExternal(l, missing)
		Expect(err).To(reportExactly(missing + ": cannot read the file: no such file"))
	})
})
