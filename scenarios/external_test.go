package scenarios_test

import (
	"os"
	"path/filepath"
	"testing/fstest"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/layout"
	"github.com/faultline/faultline/scenarios"
)

// externalHead is a scenario with one task calling dependency gw, its
// system.external block to follow at line 10, indented four spaces.
const externalHead = scenarioHead + "workload:\n  tasks: [{name: charge, dependency: gw}]\n  arrivals: {rate: 1/s}\nsystem:\n  external:\n"

// seedLayout is a valid inject and dlq, indented for externalHead.
const seedLayout = "    inject: {preset: seed, prefix: \"{namespace}:\"}\n    dlq: {preset: seed, prefix: \"{namespace}:\"}\n"

var _ = Describe("A black-box system (system.external)", func() {
	It("loads, converts and resolves its command relative to the file", func() {
		l, err := scenarios.Load("testdata/valid/external.yaml")
		Expect(err).NotTo(HaveOccurred())
		folder, err := filepath.Abs("testdata/valid/blackbox")
		Expect(err).NotTo(HaveOccurred())

		e := l.Scenario.System.External
		Expect(e).NotTo(BeNil())
		Expect(e.Command).To(Equal(&layout.Command{Path: filepath.Join(folder, "worker.sh"), Args: []string{"--queue", "{namespace}:default"},
			Env: map[string]string{"PAYMENT_URL": "{dependency:payment-gateway}", "SLACK_URL": "{receiver:slack}"}, Dir: folder}))
		Expect(e.Copies).To(Equal(2))
		Expect(e.Running).To(BeFalse())
		Expect(e.Inject).To(Equal(layout.Inject{Preset: layout.PresetSeed, Prefix: "{namespace}:"}))
		Expect(e.DLQ).To(Equal(layout.DLQ{Preset: layout.PresetSeed, Prefix: "{namespace}:"}))
		Expect(e.Drain).To(Equal(time.Minute))
		Expect(e.Startup).To(Equal(2 * time.Second))
		Expect(e.DLQShrinks).To(Equal([]string{scenarios.ShrinkOperator, scenarios.ShrinkEviction}))

		By("keeping the paths as written in the document, which the hash covers")
		Expect(l.Document.System.External.Command.Path).To(Equal("blackbox/worker.sh"))
		Expect(l.Document.System.External.Command.Dir).To(Equal("blackbox"))

		By("being a scenario the simulator runs, the reference in the black box's place")
		Expect(l.Scenario.WithDefaults().Validate()).To(Succeed())
		Expect(runs(l)).To(Succeed())
	})

	It("looks a bare name up on PATH, leaves it bare, and runs it in the file's folder", func() {
		dir := GinkgoT().TempDir()
		file := filepath.Join(dir, "s.yaml")
		Expect(os.WriteFile(file, []byte(externalHead+"    command: {path: sh, args: [-c, 'exec sleep 60']}\n"+seedLayout), 0o644)).To(Succeed())
		l, err := scenarios.Load(file)
		Expect(err).NotTo(HaveOccurred())
		Expect(l.Scenario.System.External.Command.Path).To(Equal("sh"))
		Expect(l.Scenario.System.External.Command.Dir).To(Equal(dir))
		Expect(l.Scenario.System.External.Copies).To(BeZero(), "defaults not yet applied")
	})

	It("takes a running system, with adapter commands resolved too", func() {
		dir := GinkgoT().TempDir()
		Expect(os.WriteFile(filepath.Join(dir, "dlq.sh"), []byte("#!/bin/sh\n"), 0o755)).To(Succeed())
		text := externalHead + "    running: true\n    inject: {http: {url: \"http://127.0.0.1:8080/enqueue\"}, template: '{\"job\": {\"id\": \"{id}\"}}', idPath: job.id}\n" +
			"    dlq: {command: {path: ./dlq.sh}, fields: {id: job.id}}\n    noAlerts: true\n"
		Expect(os.WriteFile(filepath.Join(dir, "s.yaml"), []byte(text), 0o644)).To(Succeed())
		l, err := scenarios.Load(filepath.Join(dir, "s.yaml"))
		Expect(err).NotTo(HaveOccurred())
		e := l.Scenario.System.External
		Expect(e.Command).To(BeNil())
		Expect(e.Running).To(BeTrue())
		Expect(e.NoAlerts).To(BeTrue())
		Expect(e.Inject.HTTP).To(Equal(&layout.HTTPInject{URL: "http://127.0.0.1:8080/enqueue"}))
		Expect(e.Inject.IDPath).To(Equal("job.id"))
		Expect(e.DLQ.Command).To(Equal(&layout.Command{Path: filepath.Join(dir, "dlq.sh"), Dir: dir}))
		Expect(e.DLQ.Fields.ID).To(Equal("job.id"))
	})

	It("rebases a fragment's command on the including file, its arguments staying relative to the fragment", func() {
		fsys := mapFS("s.yaml", scenarioHead+"include: [parts/system.yaml]\nworkload:\n  tasks: [{name: charge, dependency: gw}]\n  arrivals: {rate: 1/s}\n",
			"parts/system.yaml", fragmentHead+"system:\n  external:\n    command: {path: ./worker.sh, args: [worker.py]}\n"+seedLayout)
		fsys["parts/worker.sh"] = &fstest.MapFile{Data: []byte("#!/bin/sh\n"), Mode: 0o755}
		l, err := scenarios.LoadFS(fsys, "s.yaml")
		Expect(err).NotTo(HaveOccurred())
		Expect(l.Document.System.External.Command).To(Equal(&scenarios.Command{Path: "parts/worker.sh", Args: []string{"worker.py"}, Dir: "parts"}))
		Expect(l.Scenario.System.External.Command.Path).To(Equal("parts/worker.sh"))
	})

	It("fills in its defaults, and none of the reference's, in the effective document", func() {
		l, err := scenarios.Load("testdata/valid/external.yaml")
		Expect(err).NotTo(HaveOccurred())
		l.Document.System.External.Copies = 0
		l.Scenario.System.External.Copies = 0
		d := scenarios.Effective(l)
		Expect(d.System.External.Copies).To(Equal(3), "workers.count")
		Expect(d.System.External.Drain.D()).To(Equal(time.Minute))
		Expect(d.System.External.Startup.D()).To(Equal(2 * time.Second))
		Expect(d.System.Retry).To(BeNil())
		Expect(d.System.DLQ).To(BeNil())
		Expect(d.System.Alerts.Receivers).To(Equal([]string{"slack"}))
		out, err := scenarios.Marshal(d)
		Expect(err).NotTo(HaveOccurred())
		_, err = scenarios.LoadFS(fstest.MapFS{"s.yaml": {Data: out}, "blackbox/worker.sh": {Data: []byte("#!/bin/sh\n")}}, "s.yaml")
		Expect(err).NotTo(HaveOccurred(), "the effective document loads\n%s", out)
	})

	It("loads the fuzz corpus's black box (a stream to inject into, a sorted set of dead letters), which the simulator runs", func() {
		l, err := scenarios.LoadFS(fstest.MapFS{"s.yaml": {Data: fuzzInput("testdata/fuzz/FuzzLoad/external-stream-zset")}}, "s.yaml")
		Expect(err).NotTo(HaveOccurred())
		e := l.Scenario.System.External
		Expect(e.Inject.RedisStream).To(Equal(&layout.RedisStreamInject{Key: "{namespace}:jobs"}))
		Expect(e.DLQ.RedisZSet).To(Equal(&layout.RedisKeys{Keys: []string{"{namespace}:dead"}}))
		Expect(e.DLQ.Fields).To(Equal(layout.Fields{ID: "job.id", Severity: "sev", Inactive: []string{"gone"}}))
		Expect(runs(l)).To(Succeed())
	})

	It("writes what Parse reads back", func() {
		l, err := scenarios.Load("testdata/valid/external.yaml")
		Expect(err).NotTo(HaveOccurred())
		out, err := scenarios.Marshal(l.Document)
		Expect(err).NotTo(HaveOccurred())
		back, err := scenarios.Parse("external.yaml", out)
		Expect(err).NotTo(HaveOccurred(), string(out))
		Expect(back).To(Equal(l.Document))
	})

	It("refuses a program that is not executable, and a working directory that is not a folder", func() {
		dir := GinkgoT().TempDir()
		Expect(os.WriteFile(filepath.Join(dir, "worker.py"), []byte("print()\n"), 0o644)).To(Succeed())
		file := filepath.Join(dir, "s.yaml")
		Expect(os.WriteFile(file, []byte(externalHead+"    command: {path: ./worker.py, dir: worker.py}\n"+seedLayout), 0o644)).To(Succeed())
		_, err := scenarios.Load(file)
		Expect(err).To(reportExactly(
			file+`:10:21: system.external.command.path: "./worker.py" is not executable; make it so (chmod +x) or run it with its interpreter (path: python3, args: [./worker.py])`,
			file+`:10:39: system.external.command.dir: "worker.py" is not a folder; expected the command's working directory`,
		))
	})

	DescribeTable("reports each bad field at file:line:col with what was expected",
		func(keys string, lines ...string) {
			_, err := scenarios.LoadFS(mapFS("s.yaml", externalHead+keys), "s.yaml")
			Expect(err).To(reportExactly(lines...))
		},
		Entry("a program not on PATH", "    command: {path: no-such-program-faultline}\n"+seedLayout,
			`s.yaml:10:21: system.external.command.path: "no-such-program-faultline" is not on PATH; expected a program on PATH or a path to one (a relative path with a slash is relative to this file's folder)`),
		Entry("a program path that names nothing", "    command: {path: bin/worker}\n"+seedLayout,
			`s.yaml:10:21: system.external.command.path: "bin/worker": no such file; expected a program (a relative path is relative to this file's folder)`),
		Entry("a working directory that names nothing", "    command: {path: sh, dir: work}\n"+seedLayout,
			`s.yaml:10:30: system.external.command.dir: "work": no such folder; expected the command's working directory (relative to this file's folder)`),
		Entry("an adapter's program that names nothing", "    running: true\n    inject: {command: {path: ./inject.sh}}\n    dlq: {preset: seed}\n",
			`s.yaml:11:30: system.external.inject.command.path: "./inject.sh": no such file; expected a program (a relative path is relative to this file's folder)`),
		Entry("neither a command nor running", seedLayout,
			`s.yaml:9:3: system.external.command: expected a command that starts the system, or running: true for a system already running`),
		Entry("both a command and running", "    command: {path: sh}\n    running: true\n"+seedLayout,
			`s.yaml:11:14: system.external.running: a running system is not started: give a command or running: true, not both`),
		Entry("a readiness probe per copy on a running system", "    running: true\n    ready: {redisKey: \"{namespace}:ready:{worker}\"}\n"+seedLayout,
			`s.yaml:11:12: system.external.ready: {worker} names a copy the drill started: a running system has none (probe the system as a whole)`),
		Entry("a readiness probe and a blind startup", "    command: {path: sh}\n    ready: {redisKey: up}\n    startup: 2s\n"+seedLayout,
			`s.yaml:12:14: system.external.startup: a readiness probe (ready) replaces the blind wait: give ready or startup, not both`),
		Entry("copies below 1", "    command: {path: sh}\n    copies: -1\n"+seedLayout,
			`s.yaml:11:13: system.external.copies: must be at least 1 (0 is workers.count), got -1`),
		Entry("copies past the limit", "    command: {path: sh}\n    copies: 20000\n"+seedLayout,
			`s.yaml:11:13: system.external.copies: 20000 copies, more than the limit of 10000; lift the limit with --max-workers`),
		Entry("copies of a running system", "    running: true\n    copies: 2\n"+seedLayout,
			`s.yaml:11:13: system.external.copies: a running system is not started, so the drill starts no copies: remove it`),
		Entry("a negative drain", "    command: {path: sh}\n    drain: -1s\n"+seedLayout,
			`s.yaml:11:12: system.external.drain: expected a duration of at least 0, got "-1s"`),
		Entry("an unknown preset", "    command: {path: sh}\n    inject: {preset: seeds}\n    dlq: {preset: seed}\n",
			`s.yaml:11:22: system.external.inject.preset: "seeds": takes faultline, seed, sidekiq, celery, rq, bullmq`),
		Entry("a list adapter without its key, at the adapter", "    command: {path: sh}\n    inject: {redisList: {push: lpush}}\n    dlq: {preset: seed}\n",
			`s.yaml:11:14: system.external.inject.redisList.key: required`),
		Entry("a preset and an adapter", "    command: {path: sh}\n    inject: {preset: seed}\n    dlq: {preset: seed, redisList: {keys: [dead]}}\n",
			`s.yaml:12:10: system.external.dlq: a preset (seed) and an adapter: give one`),
		Entry("a DLQ URL that is not one", "    command: {path: sh}\n    inject: {preset: seed}\n    dlq: {http: {url: ftp://dlq}, fields: {id: job.id}}\n",
			`s.yaml:12:23: system.external.dlq.http.url: "ftp://dlq": takes an http:// or https:// URL`),
		Entry("a DLQ without the path of a job's ID", "    command: {path: sh}\n    inject: {preset: seed}\n    dlq: {redisList: {keys: [dead]}}\n",
			`s.yaml:12:5: system.external.dlq.fields.id: required: the path of the job's ID in an entry (the seed's is job.id)`),
		Entry("a misspelt shrink, with the nearest", "    command: {path: sh}\n"+seedLayout+"    dlqShrinks: [operator, evicton]\n",
			`s.yaml:13:28: system.external.dlqShrinks[1]: expected one of operator, auto-retry, purge-by-age, eviction, got "evicton"; did you mean "eviction"?`),
		Entry("a policy of no attempts", "    command: {path: sh}\n"+seedLayout+"    policy: {maxAttempts: 0}\n",
			`s.yaml:13:27: system.external.policy.maxAttempts: required: the attempts a job is given, the first one included (at least 1)`),
		Entry("a policy without its attempts", "    command: {path: sh}\n"+seedLayout+"    policy: {minBackoff: 1s}\n",
			`s.yaml:13:5: system.external.policy.maxAttempts: required: the attempts a job is given, the first one included (at least 1)`),
		Entry("a negative backoff", "    command: {path: sh}\n"+seedLayout+"    policy: {maxAttempts: 3, minBackoff: -1s}\n",
			`s.yaml:13:42: system.external.policy.minBackoff: expected a duration of at least 0, got "-1s"`),
		Entry("an unknown key, with the nearest", "    command: {path: sh}\n"+seedLayout+"    copie: 2\n",
			`s.yaml:13:5: unknown key "copie"; did you mean "copies"?`),
	)

	DescribeTable("refuses what a drill from outside cannot do, at its key",
		func(before, after string, lines ...string) {
			text := scenarioHead + "workload:\n  tasks: [{name: charge, dependency: gw}]\n  arrivals: {rate: 1/s}\nsystem:\n" + before +
				"  external:\n    command: {path: sh}\n" + seedLayout + after
			_, err := scenarios.LoadFS(mapFS("s.yaml", text), "s.yaml")
			Expect(err).To(reportExactly(lines...))
		},
		Entry("the reference's configuration, written even with its defaults",
			"  rulesFile: rules.yaml\n  retry: {maxAttempts: 4}\n  dlq: {}\n  breakers: [{dependency: gw}]\n  autoRetry: {windowStart: 22h, windowEnd: 6h}\n  monitor: {maxDepth: 10}\n", "",
			"s.yaml:9:14: system.rulesFile: "+scenarios.ExternalReferenceOnly,
			"s.yaml:10:10: system.retry: "+scenarios.ExternalReferenceOnly,
			"s.yaml:11:8: system.dlq: "+scenarios.ExternalReferenceOnly,
			"s.yaml:12:13: system.breakers: "+scenarios.ExternalReferenceOnly,
			"s.yaml:13:14: system.autoRetry: "+scenarios.ExternalReferenceOnly,
			"s.yaml:14:12: system.monitor: "+scenarios.ExternalReferenceOnly),
		Entry("an operator step", "", "steps: [{at: 10s, action: requeue}]\n",
			"s.yaml:13:27: steps[0].action: "+scenarios.ExternalNoSteps),
		Entry("store and dlq-store faults", "", "faults:\n  - {name: a, target: store, model: slow-store}\n  - {name: b, target: dlq-store, model: outage}\n",
			"s.yaml:14:23: faults[0].target: "+scenarios.ExternalNoStoreFaults,
			"s.yaml:15:23: faults[1].target: "+scenarios.ExternalNoStoreFaults),
	)

	It("refuses a worker fault on a running system, and a task without a dependency", func() {
		text := scenarioHead + "workload:\n  tasks: [{name: charge, dependency: gw}, {name: log}]\n  arrivals: {rate: 1/s}\nsystem:\n  external:\n    running: true\n" + seedLayout +
			"faults: [{name: crash, target: worker/w1, model: worker-crash}]\n"
		_, err := scenarios.LoadFS(mapFS("s.yaml", text), "s.yaml")
		Expect(err).To(reportExactly(
			"s.yaml:6:43: workload.tasks[1].dependency: "+scenarios.ExternalNeedsDependency,
			"s.yaml:13:32: faults[0].target: the drill did not start a running system's workers and cannot crash or stall them: remove the fault, or give a command instead of running: true",
		))
	})

	It("refuses a worker fault beyond the copies", func() {
		text := externalHead + "    command: {path: sh}\n    copies: 2\n" + seedLayout + "faults: [{name: crash, target: worker/w3, model: worker-crash}]\n"
		_, err := scenarios.LoadFS(mapFS("s.yaml", text), "s.yaml")
		Expect(err).To(reportLine(`s.yaml:14:32: faults[0].target: worker "w3" does not exist: the run's workers are w1..w2, so the fault never fires`))
	})
})
