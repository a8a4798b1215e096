package scenarios_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing/fstest"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gcustom"
	gs "github.com/onsi/gomega/gstruct"
	"github.com/onsi/gomega/types"

	"github.com/faultline/faultline/scenarios"
)

// diagnosticLines returns an error's diagnostics as "file:line:col:
// message", or nil when it is not a *LoadError.
func diagnosticLines(err error) []string {
	var le *scenarios.LoadError
	if !errors.As(err, &le) {
		return nil
	}
	out := make([]string, len(le.Diagnostics))
	for i, d := range le.Diagnostics {
		out[i] = d.String()
	}
	return out
}

// reportExactly succeeds when err is a *LoadError, matched by ErrInvalid,
// listing exactly these diagnostics in this order.
func reportExactly(lines ...string) types.GomegaMatcher {
	return gcustom.MakeMatcher(func(err error) (bool, error) {
		if !errors.Is(err, scenarios.ErrInvalid) {
			return false, nil
		}
		got := diagnosticLines(err)
		if len(got) != len(lines) {
			return false, nil
		}
		for i := range got {
			if got[i] != lines[i] {
				return false, nil
			}
		}
		return true, nil
	}).WithTemplate("Expected the loader to report exactly\n{{range .Data}}  {{.}}\n{{end}}but it reported\n  {{.Actual}}", lines)
}

// reportLine succeeds when err is a *LoadError with this diagnostic among
// others.
func reportLine(line string) types.GomegaMatcher {
	return WithTransform(diagnosticLines, ContainElement(line))
}

// mapFS builds a file system of YAML files from name, text pairs.
func mapFS(files ...string) fstest.MapFS {
	GinkgoHelper()
	Expect(len(files)%2).To(BeZero(), "name, text pairs")
	fsys := fstest.MapFS{}
	for i := 0; i < len(files); i += 2 {
		fsys[files[i]] = &fstest.MapFile{Data: []byte(files[i+1])}
	}
	return fsys
}

const scenarioHead = "apiVersion: faultline/v1\nkind: Scenario\nmetadata: {name: s}\nduration: 1m\n"

const fragmentHead = "apiVersion: faultline/v1\nkind: Fragment\n"

const pingWorkload = "workload:\n  tasks: [{name: ping}]\n  arrivals: {rate: 1/s}\n"

var _ = Describe("Loading broken scenario files", func() {
	const dir = "testdata/broken/"

	DescribeTable("reports every problem with its position, what was expected and a suggestion",
		func(file string, lines ...string) {
			_, err := scenarios.Load(dir + file)
			Expect(err).To(reportExactly(lines...))
		},
		Entry("bad indentation: goccy's message at the misindented key", "bad-indentation.yaml",
			dir+"bad-indentation.yaml:5:4: bad YAML: mapping value is not allowed in this context; check this line's indentation"),
		Entry("an unknown key, with the nearest key valid at that place", "unknown-key.yaml",
			dir+`unknown-key.yaml:10:3: unknown key "retires"; did you mean "retry"?`),
		Entry("a value of the wrong type, at the value", "wrong-type.yaml",
			dir+`wrong-type.yaml:10:10: workers.count: expected a whole number, got "ten"`),
		Entry("a bad duration", "bad-duration.yaml",
			dir+`bad-duration.yaml:5:11: duration: expected a duration like 30s, 2m or 250ms, got "10x"`),
		Entry("a bad rate", "bad-rate.yaml",
			dir+`bad-rate.yaml:10:11: workload.arrivals.rate: expected a rate like 100/s, 6000/m or 2/h, got "100/sec"`),
		Entry("a missing include, at its entry, naming the file", "missing-include.yaml",
			dir+"missing-include.yaml:7:5: include[1]: fragment "+dir+"fragments/nowhere.yaml not found"),
		Entry("an include cycle, naming the cycle, at the entry that closes it", "include-cycle.yaml",
			dir+"cycle/b.yaml:6:5: include[0]: include cycle: "+dir+"cycle/a.yaml → "+dir+"cycle/b.yaml → "+dir+"cycle/a.yaml"),
		Entry("a Fragment loaded directly", "fragment.yaml",
			dir+"fragment.yaml:2:7: kind: this file is a Fragment, which cannot be run on its own; include it from a Scenario (kind: Scenario)"),
		Entry("an unknown fault model, with the nearest model", "unknown-model.yaml",
			dir+`unknown-model.yaml:12:12: faults[0].model: unknown fault model "gatway-timeout"; did you mean "gateway-timeout"? `+
				"(known: gateway-timeout, latency, http-status, auth-failure, card-declined, rate-limit, indeterminate-5xx, flapping, "+
				"outage, store-outage, sink-outage, worker-crash, worker-stall, slow-store, interleave, graceful-stop)"),
		Entry("an unknown fault parameter, at its name, with the model's parameters", "unknown-param.yaml",
			dir+`unknown-param.yaml:15:7: faults[0].params.afterr: unknown parameter of model gateway-timeout; expected one of op, after, chargedProbability; did you mean "after"?`),
		Entry("a fault's parameter and schedule out of range, and a target its model cannot hit, each at its value", "bad-param-value.yaml",
			dir+"bad-param-value.yaml:14:13: faults[0].params.code: must be in 400..599, got 999",
			dir+"bad-param-value.yaml:16:33: faults[0].schedule.every.duty: must be in (0,1], got 1.5",
			dir+`bad-param-value.yaml:18:13: faults[1].target: model "worker-crash" cannot target dependency; it targets worker`),
		Entry("a Scenario included as a fragment, and the included file's own problems", "include-scenario.yaml",
			dir+"include-scenario.yaml:5:11: include[0]: "+dir+"unknown-key.yaml is a Scenario; only a Fragment (kind: Fragment) may be included",
			dir+`unknown-key.yaml:10:3: unknown key "retires"; did you mean "retry"?`),
		Entry("a bad rules file: its problems in it, and where the scenario names it", "bad-rules.yaml",
			dir+"bad-rules.yaml:10:14: system.rulesFile: "+dir+"rules.yaml is not a valid rule file (1 problem, reported in it)",
			dir+`rules.yaml:4:12: rules[0].class: unknown class "transint"; did you mean "transient"?`),
		Entry("the simulator's own check, at the field it names", "sim-invalid.yaml",
			dir+`sim-invalid.yaml:9:14: workload.tasks[1].name: duplicate task "ping"`),
		Entry("several problems in one file: every one, in position order, none twice", "many-errors.yaml",
			dir+`many-errors.yaml:2:7: kind: expected Scenario or Fragment, got "Scenaro"; did you mean "Scenario"?`,
			dir+`many-errors.yaml:3:1: metadata.name: expected a name`,
			dir+`many-errors.yaml:4:3: unknown key "nme"; did you mean "name"?`,
			dir+`many-errors.yaml:5:11: duration: expected a duration like 30s, 2m or 250ms, got "10x"`,
			dir+`many-errors.yaml:9:15: workload.tasks[0].weight: expected a whole number, got "heavy"`,
			dir+`many-errors.yaml:11:20: workload.arrivals.kind: expected none, constant or poisson, got "constnt"; did you mean "constant"?`,
			dir+`many-errors.yaml:11:35: workload.arrivals.rate: expected a rate like 100/s, 6000/m or 2/h, got "100/sec"`,
			dir+`many-errors.yaml:12:31: workers.leaseTTL: expected a duration like 30s, 2m or 250ms, got 30 (a number needs a unit)`,
			dir+`many-errors.yaml:17:21: faults[0].params.after: expected a duration like 30s, 2m or 250ms, got "2 seconds"`,
			dir+`many-errors.yaml:18:39: faults[0].schedule.probability: expected a number, got "often"`,
			dir+`many-errors.yaml:20:13: expect[0].count: expected one of created, succeeded, dead-lettered, dead-letters, requeued, retried, `+
				`in-fallback, diverted, pending, pages, notifications, lost, fenced, held, evicted, charges, refused, lease-expiries, alerts-refused, `+
				`budget-delayed, budget-exceeded, alerts, got "lots"; did you mean "lost"?`),
	)

	It("reports a file that cannot be read as the file's problem", func() {
		_, err := scenarios.Load(dir + "no-such-file.yaml")
		Expect(err).To(reportExactly(dir + "no-such-file.yaml: cannot read the file: no such file"))
	})

	It("keeps the file names as given, relative to the file system's root for LoadFS", func() {
		_, err := scenarios.LoadFS(os.DirFS(dir), "include-cycle.yaml")
		Expect(err).To(reportExactly("cycle/b.yaml:6:5: include[0]: include cycle: cycle/a.yaml → cycle/b.yaml → cycle/a.yaml"))
	})

	It("refuses a fragment or a rule file that is not a regular file instead of blocking on it (a named pipe)", func() {
		tmp := GinkgoT().TempDir()
		Expect(syscall.Mkfifo(filepath.Join(tmp, "pipe.yaml"), 0o600)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(tmp, "s.yaml"), []byte(scenarioHead+"include: [pipe.yaml]\n"+pingWorkload), 0o600)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(tmp, "r.yaml"), []byte(scenarioHead+pingWorkload+"system: {rulesFile: pipe.yaml}\n"), 0o600)).To(Succeed())
		for _, f := range []string{"s.yaml", "r.yaml"} {
			done := make(chan error, 1)
			go func() { _, err := scenarios.Load(filepath.Join(tmp, f)); done <- err }()
			var err error
			Eventually(done, 5*time.Second).Should(Receive(&err), "loading %s blocked on the pipe", f)
			Expect(err).To(MatchError(ContainSubstring("not a regular file")), f)
		}
	})

	It("says what went wrong in one line per problem", func() {
		_, err := scenarios.Load(dir + "bad-rules.yaml")
		Expect(strings.Split(err.Error(), "\n")).To(Equal(diagnosticLines(err)))
		Expect(err).To(MatchError(scenarios.ErrInvalid))
	})
})

var _ = Describe("Parse", func() {
	parse := func(text string) error {
		_, err := scenarios.Parse("s.yaml", []byte(text))
		return err
	}

	It("reads a file that starts with a UTF-8 byte order mark, as editors on Windows write it", func() {
		d, err := scenarios.Parse("s.yaml", []byte("\ufeff"+scenarioHead+pingWorkload))
		Expect(err).NotTo(HaveOccurred())
		Expect(d.Metadata.Name).To(Equal("s"))
	})

	It("decodes a document without following its includes", func() {
		d, err := scenarios.Parse("s.yaml", []byte(scenarioHead+"include: [nowhere.yaml]\n"+pingWorkload))
		Expect(err).NotTo(HaveOccurred())
		Expect(d.Include).To(Equal([]string{"nowhere.yaml"}))
		Expect(d.Duration.D()).To(Equal(time.Minute))
		Expect(d.Workload.Arrivals.Rate).To(BeEquivalentTo(1))
	})

	DescribeTable("refuses what is not one document of the format",
		func(text string, lines ...string) { Expect(parse(text)).To(reportExactly(lines...)) },
		Entry("an empty file", "", "s.yaml:1:1: the file is empty; expected a document starting with apiVersion: faultline/v1 and kind: Scenario"),
		Entry("only a comment", "# nothing\n", "s.yaml:1:1: the file is empty; expected a document starting with apiVersion: faultline/v1 and kind: Scenario"),
		Entry("two documents", scenarioHead+"---\n"+scenarioHead, "s.yaml:6:1: expected one document, found 2 (separated by ---)"),
		Entry("a list", "- a\n- b\n", `s.yaml:1:1: expected a mapping (key: value), got a list`,
			"s.yaml:1:1: missing apiVersion; expected apiVersion: faultline/v1", "s.yaml:1:1: missing kind; expected kind: Scenario or kind: Fragment"),
		Entry("another version", "apiVersion: faultline/v2\nkind: Scenario\n", `s.yaml:1:13: apiVersion: expected faultline/v1, got "faultline/v2"`),
		Entry("another kind", "apiVersion: faultline/v1\nkind: scenario\n", `s.yaml:2:7: kind: expected Scenario or Fragment, got "scenario"; did you mean "Scenario"?`),
		Entry("a tab in the indentation", "apiVersion: faultline/v1\n\tkind: Scenario\n", "s.yaml:2:1: bad YAML: found character '\\t' that cannot start any token"),
		Entry("a duplicate key", scenarioHead+"duration: 2m\n", `s.yaml:5:1: bad YAML: mapping key "duration" already defined at [4:1]`),
	)

	DescribeTable("reports a value of the wrong type at the value",
		func(yaml, line string) { Expect(parse(scenarioHead + yaml)).To(reportExactly(line)) },
		Entry("a string for a number", "workers: {count: ten}\n", `s.yaml:5:18: workers.count: expected a whole number, got "ten"`),
		Entry("a quoted number for a number", "workers: {count: \"4\"}\n", `s.yaml:5:18: workers.count: expected a whole number, got "4"`),
		Entry("a fraction for a whole number", "workers: {count: 1.5}\n", `s.yaml:5:18: workers.count: expected a whole number, got 1.5`),
		Entry("a negative seed", "seed: -1\n", `s.yaml:5:7: seed: expected a whole number of at least 0, got -1`),
		Entry("a number too large", "workers: {count: 99999999999999999999}\n", `s.yaml:5:18: workers.count: expected a smaller whole number, got 99999999999999999999`),
		Entry("yes for true", "dependencies: [{name: gw, payment: yes}]\n", `s.yaml:5:36: dependencies[0].payment: expected true or false, got "yes"`),
		Entry("a list for a string", "dependencies: [{name: [a]}]\n", "s.yaml:5:23: dependencies[0].name: expected a string, got a list"),
		Entry("a string for a list", "include: payments.yaml\n", `s.yaml:5:10: include: expected a list, got "payments.yaml"`),
		Entry("a string for a mapping", "system: {retry: fast}\n", `s.yaml:5:17: system.retry: expected a mapping (key: value), got "fast"`),
		Entry("a number without a unit for a duration", "sample: 10\n", "s.yaml:5:9: sample: expected a duration like 30s, 2m or 250ms, got 10 (a number needs a unit)"),
		Entry("a negative duration", "sample: -1s\n", `s.yaml:5:9: sample: expected a duration of at least 0, got "-1s"`),
		Entry("a fraction of a millisecond", "sample: 1.5ms\n", `s.yaml:5:9: sample: expected a whole number of milliseconds, got "1.5ms"`),
		Entry("a word for a probability", "faults: [{name: f, target: store, model: store-outage, schedule: {probability: high}}]\n",
			`s.yaml:5:80: faults[0].schedule.probability: expected a number, got "high"`),
		Entry("a string for a list of jobs", "faults: [{name: f, target: dependency/gw, model: outage, schedule: {jobs: pay-auth}}]\n",
			`s.yaml:5:75: faults[0].schedule.jobs: expected a list, got "pay-auth"`),
		Entry("a list for a job ID", "faults: [{name: f, target: dependency/gw, model: outage, schedule: {jobs: [[pay-auth]]}}]\n",
			`s.yaml:5:76: faults[0].schedule.jobs[0]: expected a string, got a list`),
		Entry("a misspelt jobs key", "faults: [{name: f, target: dependency/gw, model: outage, schedule: {job: [pay-auth]}}]\n",
			`s.yaml:5:69: unknown key "job"; did you mean "jobs"?`),
		Entry("an unknown key in a list item", "faults: [{name: f, target: store, model: store-outage, shedule: {}}]\n",
			`s.yaml:5:56: unknown key "shedule"; did you mean "schedule"?`),
		Entry("an unknown key with no near one: the keys valid there", "workers: {zzz: 1}\n",
			`s.yaml:5:11: unknown key "zzz"; expected one of count, processes, leaseTTL`),
		Entry("a word for abortIf's DLQ depth", "abortIf: {dlqDepth: lots}\n",
			`s.yaml:5:21: abortIf.dlqDepth: expected a whole number, got "lots"`),
		Entry("a percentage string for abortIf's error rate", "abortIf: {errorRate: 50%}\n",
			`s.yaml:5:22: abortIf.errorRate: expected a number, got "50%"`),
		Entry("a number without a unit for abortIf's error window", "abortIf:\n  errorRate: 0.5\n  errorWindow: 60\n",
			"s.yaml:7:16: abortIf.errorWindow: expected a duration like 30s, 2m or 250ms, got 60 (a number needs a unit)"),
		Entry("a fraction for abortIf's fault count", "abortIf: {maxActiveFaults: 2.5}\n",
			`s.yaml:5:28: abortIf.maxActiveFaults: expected a whole number, got 2.5`),
		Entry("a list for abortIf", "abortIf: [dlqDepth]\n",
			`s.yaml:5:10: abortIf: expected a mapping (key: value), got a list`),
		Entry("a misspelt key in abortIf", "abortIf: {dlqDepht: 10}\n",
			`s.yaml:5:11: unknown key "dlqDepht"; did you mean "dlqDepth"?`),
		Entry("a misspelt key in abortIf, block style", "abortIf:\n  maxActiveFault: 3\n",
			`s.yaml:6:3: unknown key "maxActiveFault"; did you mean "maxActiveFaults"?`),
		Entry("an unknown key in abortIf with no near one: the keys valid there", "abortIf: {latency: 1s}\n",
			`s.yaml:5:11: unknown key "latency"; expected one of dlqDepth, errorRate, errorWindow, maxActiveFaults`),
	)

	It("reads abortIf's bounds, and leaves out the ones not given", func() {
		d, err := scenarios.Parse("s.yaml", []byte(scenarioHead+"abortIf:\n  dlqDepth: 5000\n  errorRate: 0.5 # a share\n  errorWindow: 2m\n  maxActiveFaults: 3\n"))
		Expect(err).NotTo(HaveOccurred())
		Expect(d.AbortIf).To(gs.PointTo(gs.MatchAllFields(gs.Fields{
			"DLQDepth":        gs.PointTo(Equal(5000)),
			"ErrorRate":       gs.PointTo(Equal(0.5)),
			"ErrorWindow":     Equal(scenarios.Duration(2 * time.Minute)),
			"MaxActiveFaults": gs.PointTo(Equal(3)),
		})))
		d, err = scenarios.Parse("s.yaml", []byte(scenarioHead+"abortIf: {errorRate: 1}\n"))
		Expect(err).NotTo(HaveOccurred())
		Expect(d.AbortIf.DLQDepth).To(BeNil())
		Expect(d.AbortIf.ErrorRate).To(gs.PointTo(Equal(1.0)))
		Expect(d.AbortIf.MaxActiveFaults).To(BeNil())
		d, err = scenarios.Parse("s.yaml", []byte(scenarioHead+pingWorkload))
		Expect(err).NotTo(HaveOccurred())
		Expect(d.AbortIf).To(BeNil())
	})

	It("leaves abortIf written as null out, as if the key were not there", func() {
		d, err := scenarios.Parse("s.yaml", []byte(scenarioHead+"abortIf:\n"))
		Expect(err).NotTo(HaveOccurred())
		Expect(d.AbortIf).To(BeNil())
	})

	It("goes on past a bad value: every problem of the file is reported", func() {
		err := parse(scenarioHead + "workers: {count: ten, leaseTTL: 10x}\nsample: never\nsystem: {retires: 3, dlq: {capcity: 1}}\n")
		Expect(err).To(reportExactly(
			`s.yaml:5:18: workers.count: expected a whole number, got "ten"`,
			`s.yaml:5:33: workers.leaseTTL: expected a duration like 30s, 2m or 250ms, got "10x"`,
			`s.yaml:6:9: sample: expected a duration like 30s, 2m or 250ms, got "never"`,
			`s.yaml:7:10: unknown key "retires"; did you mean "retry"?`,
			`s.yaml:7:28: unknown key "capcity"; did you mean "capacity"?`,
		))
	})

	It("reads anchors, aliases, merge keys and !!str", func() {
		d, err := scenarios.Parse("s.yaml", []byte(`apiVersion: faultline/v1
kind: Scenario
metadata: {name: !!str 123}
duration: 1m
workload:
  tasks:
    - &charge {name: charge, dependency: gw, service: 10ms}
    - <<: *charge
      name: refund
    - *charge
`))
		Expect(err).NotTo(HaveOccurred())
		Expect(d.Metadata.Name).To(Equal("123"))
		Expect(d.Workload.Tasks).To(HaveLen(3))
		Expect(d.Workload.Tasks[1].Name).To(Equal("refund"))
		Expect(d.Workload.Tasks[1].Dependency).To(Equal("gw"))
		Expect(d.Workload.Tasks[1].Service.D()).To(Equal(10 * time.Millisecond))
		Expect(d.Workload.Tasks[2]).To(Equal(d.Workload.Tasks[0]))
	})

	It("refuses an alias to a value that contains it, and an unknown alias", func() {
		Expect(parse(scenarioHead + "workload: &w {tasks: [{name: a}], arrivals: {<<: *w}}\n")).To(reportLine(
			"s.yaml:5:50: workload.arrivals: alias *w refers to a value that contains it"))
		Expect(parse(scenarioHead + "workers: *nothing\n")).To(HaveOccurred())
	})

	It("bounds what aliases expand to", func() {
		text := scenarioHead + "faults:\n  - name: f\n    target: store\n    model: store-outage\n    params:\n      a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
		for i := 1; i < 9; i++ {
			text += "      a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [*a" + string(rune('0'+i-1)) + strings.Repeat(", *a"+string(rune('0'+i-1)), 9) + "]\n"
		}
		Expect(diagnosticLines(parse(text))).To(ConsistOf(MatchRegexp(`^s\.yaml:10:\d+: the document is too large: more than 100000 values \(an alias counts its values each time it is used\)$`)))
	})

	It("stops at the value limit: what follows is not checked, so no item past it is reported", func() {
		text := scenarioHead + pingWorkload + "expect:\n" + strings.Repeat("  - {count: lost, equals: 0}\n", 40000)
		_, err := scenarios.LoadFS(mapFS("s.yaml", text), "s.yaml")
		Expect(diagnosticLines(err)).To(ConsistOf(MatchRegexp(`^s\.yaml:\d+:\d+: the document is too large: more than 100000 values`)))
	})

	It("refuses a text of too many values before parsing it (the parser's memory grows with them)", func() {
		text := scenarioHead + "faults: [{name: f, target: store, model: store-outage, params: {p: [" + strings.Repeat("1,", 500_000) + "1]}}]\n"
		Expect(diagnosticLines(parse(text))).To(ConsistOf(MatchRegexp(`^s\.yaml:5:\d+: the document is too large: more than 100000 values$`)))
	})

	It("bounds how deep values nest", func() {
		text := scenarioHead + "faults: [{name: f, target: store, model: store-outage, params: {p: " + strings.Repeat("[", 100) + strings.Repeat("]", 100) + "}}]\n"
		Expect(diagnosticLines(parse(text))).To(ContainElement(ContainSubstring("values are nested more than 64 deep")))
	})

	It("reads 0 as a duration, and a plain number as a rate per second", func() {
		d, err := scenarios.Parse("s.yaml", []byte(scenarioHead+"sample: 0\nworkload: {arrivals: {rate: 2.5}}\n"))
		Expect(err).NotTo(HaveOccurred())
		Expect(d.Sample).To(BeZero())
		Expect(float64(d.Workload.Arrivals.Rate)).To(Equal(2.5))
	})

	It("leaves a value written as null at its default", func() {
		d, err := scenarios.Parse("s.yaml", []byte(scenarioHead+"system:\n  retry:\nworkers: {count: ~}\n"))
		Expect(err).NotTo(HaveOccurred())
		Expect(d.System.Retry).To(BeNil())
		Expect(d.Workers.Count).To(BeZero())
	})

	It("keeps a fault's parameters as YAML typed them", func() {
		d, err := scenarios.Parse("s.yaml", []byte(scenarioHead+
			"faults: [{name: f, target: store, model: latency, params: {mean: 1s, n: 3, big: 18446744073709551615, f: 0.5, b: true, l: [a, 1], m: {k: v}, z: ~}}]\n"))
		Expect(err).NotTo(HaveOccurred())
		Expect(d.Faults[0].Params).To(Equal(map[string]any{
			"mean": "1s", "n": int64(3), "big": uint64(18446744073709551615), "f": 0.5, "b": true,
			"l": []any{"a", int64(1)}, "m": map[string]any{"k": "v"}, "z": nil,
		}))
	})
})

var _ = Describe("Load", func() {
	It("loads every valid example", func() {
		for _, f := range []string{"minimal.yaml", "payments.yaml", "everything.yaml"} {
			l, err := scenarios.Load("testdata/valid/" + f)
			Expect(err).NotTo(HaveOccurred(), f)
			Expect(l.Scenario.WithDefaults().Validate()).To(Succeed(), f)
		}
	})

	Describe("a scenario built from fragments", func() {
		var l *scenarios.Loaded

		BeforeEach(func() {
			var err error
			l, err = scenarios.Load("testdata/valid/payments.yaml")
			Expect(err).NotTo(HaveOccurred())
		})

		It("keeps its path as given", func() {
			Expect(l.Path).To(Equal("testdata/valid/payments.yaml"))
		})

		It("takes the fragments' values first and lets its own win", func() {
			r := l.Document.System.Retry
			Expect(r.MaxAttempts).To(Equal(4), "the scenario's own")
			Expect(r.BaseDelay.D()).To(Equal(500*time.Millisecond), "the fragment's, which the scenario leaves out")
			Expect(l.Document.System.DLQ.Capacity).To(Equal(1000))
			Expect(l.Scenario.System.Retry.MaxAttempts).To(Equal(4))
		})

		It("concatenates lists, fragments first, nested includes first of all", func() {
			var names []string
			for _, f := range l.Document.Faults {
				names = append(names, f.Name)
			}
			Expect(names).To(Equal([]string{"slow-gateway", "gateway-timeouts", "late-outage"}))
			Expect(l.Document.Dependencies).To(HaveLen(1))
		})

		It("keeps its own metadata, empties include and rebases the fragment's rulesFile", func() {
			Expect(l.Document.Metadata.Name).To(Equal("payments-from-fragments"))
			Expect(l.Document.Metadata.Tags).To(Equal([]string{"payments", "include"}))
			Expect(l.Document.Include).To(BeEmpty())
			Expect(l.Document.System.RulesFile).To(Equal("rules/payment-rules.yaml"))
			Expect(l.Scenario.System.Rules).NotTo(BeEmpty())
			Expect(l.Scenario.System.Rules[0].Name).To(Equal("gateway-504-transient"))
		})

		It("hashes the effective document", func() {
			out, err := scenarios.Marshal(l.Document)
			Expect(err).NotTo(HaveOccurred())
			sum := sha256.Sum256(out)
			Expect(l.Hash).To(Equal("sha256:" + hex.EncodeToString(sum[:])))
			again, err := scenarios.Load("testdata/valid/payments.yaml")
			Expect(err).NotTo(HaveOccurred())
			Expect(again.Hash).To(Equal(l.Hash))
		})

		It("gives the same scenario from an fs.FS", func() {
			fl, err := scenarios.LoadFS(os.DirFS("testdata/valid"), "payments.yaml")
			Expect(err).NotTo(HaveOccurred())
			Expect(fl.Hash).To(Equal(l.Hash))
			Expect(fl.Path).To(Equal("payments.yaml"))
		})

		It("is converted, not yet with defaults", func() {
			Expect(l.Scenario.Workers.Count).To(BeZero())
			Expect(l.Scenario.Name).To(Equal("payments-from-fragments"))
			Expect(l.Scenario.Faults).To(HaveLen(3))
			Expect(l.Scenario.Workload.Arrivals.Kind).To(Equal(scenarios.Constant))
		})
	})

	Describe("includes in an fs.FS", func() {
		It("merges a fragment included twice (a diamond) once", func() {
			fsys := mapFS(
				"s.yaml", scenarioHead+"workload:\n  tasks: [{name: ping, dependency: gw}]\n  arrivals: {rate: 1/s}\n"+"include: [b.yaml, c.yaml]\n",
				"b.yaml", fragmentHead+"include: [d.yaml]\n",
				"c.yaml", fragmentHead+"include: [d.yaml]\n",
				"d.yaml", fragmentHead+"dependencies: [{name: gw}]\n",
			)
			l, err := scenarios.LoadFS(fsys, "s.yaml")
			Expect(err).NotTo(HaveOccurred())
			Expect(l.Document.Dependencies).To(HaveLen(1))
		})

		It("reports a file including itself", func() {
			_, err := scenarios.LoadFS(mapFS("s.yaml", scenarioHead+pingWorkload+"include: [s.yaml]\n"), "s.yaml")
			Expect(err).To(reportExactly("s.yaml:8:11: include[0]: include cycle: s.yaml → s.yaml"))
		})

		It("refuses paths that leave the file system, and absolute ones", func() {
			_, err := scenarios.LoadFS(mapFS("d/s.yaml", scenarioHead+pingWorkload+"include: [../../x.yaml, /etc/x.yaml]\n"), "d/s.yaml")
			Expect(err).To(reportExactly(
				`d/s.yaml:8:11: include[0]: "../../x.yaml" leads outside the scenarios' directory`,
				`d/s.yaml:8:25: include[1]: "/etc/x.yaml" is an absolute path; write it relative to this file`,
			))
		})

		It("resolves includes and rules files relative to the including file", func() {
			fsys := mapFS(
				"scenarios/s.yaml", scenarioHead+pingWorkload+"include: [../shared/system.yaml]\n",
				"shared/system.yaml", fragmentHead+"include: [more/retry.yaml]\nsystem: {rulesFile: rules.yaml}\n",
				"shared/more/retry.yaml", fragmentHead+"system: {retry: {maxAttempts: 2}}\n",
				"shared/rules.yaml", "rules:\n  - {name: r, match: {status: [504]}, class: transient, severity: low, source: dependency}\n",
			)
			l, err := scenarios.LoadFS(fsys, "scenarios/s.yaml")
			Expect(err).NotTo(HaveOccurred())
			Expect(l.Document.System.RulesFile).To(Equal("../shared/rules.yaml"))
			Expect(l.Document.System.Retry.MaxAttempts).To(Equal(2))
			Expect(l.Scenario.System.Rules[0].Name).To(Equal("r"))
		})

		It("reports a fragment's problems in the fragment, at their positions", func() {
			fsys := mapFS(
				"s.yaml", scenarioHead+pingWorkload+"include: [f.yaml]\nfaults:\n  - {name: own, target: dlq-store, model: store-outage}\n",
				"f.yaml", fragmentHead+"faults:\n  - name: shared\n    target: dependency/gw\n    model: gateway-timout\n  - {name: other, target: dlq-store, model: store-outage, schedule: {from: soon}}\n",
			)
			_, err := scenarios.LoadFS(fsys, "s.yaml")
			Expect(err).To(reportExactly(
				`f.yaml:6:12: faults[0].model: unknown fault model "gateway-timout"; did you mean "gateway-timeout"? (known: gateway-timeout, latency, http-status, auth-failure, card-declined, rate-limit, indeterminate-5xx, flapping, outage, store-outage, sink-outage, worker-crash, worker-stall, slow-store, interleave, graceful-stop)`,
				`f.yaml:7:76: faults[1].schedule.from: expected a duration like 30s, 2m or 250ms, got "soon"`,
			))
		})

		It("reports a problem the scenario's own value causes in its file, even where a fragment set the same key", func() {
			fsys := mapFS(
				"s.yaml", scenarioHead+pingWorkload+"include: [f.yaml]\nsystem: {dlq: {overflow: drop}}\n",
				"f.yaml", fragmentHead+"system: {dlq: {overflow: reject, capacity: 5}}\n",
			)
			_, err := scenarios.LoadFS(fsys, "s.yaml")
			Expect(err).To(reportExactly(`s.yaml:9:26: system.dlq.overflow: expected reject or evict-oldest, got "drop"`))
		})

		It("points at the key that holds a missing value", func() {
			fsys := mapFS("s.yaml", "apiVersion: faultline/v1\nkind: Scenario\nmetadata:\n  description: no name\nduration: 1m\n"+pingWorkload)
			_, err := scenarios.LoadFS(fsys, "s.yaml")
			Expect(err).To(reportExactly("s.yaml:3:1: metadata.name: expected a name"))
		})

		It("reports a missing rules file where the scenario names it", func() {
			_, err := scenarios.LoadFS(mapFS("s.yaml", scenarioHead+pingWorkload+"system: {rulesFile: nowhere.yaml}\n"), "s.yaml")
			Expect(err).To(reportExactly("s.yaml:8:21: system.rulesFile: cannot read the rule file nowhere.yaml: no such file"))
		})

		It("does not check a file of another format any further", func() {
			_, err := scenarios.LoadFS(mapFS("s.yaml", "rules: []\n"), "s.yaml")
			Expect(err).To(reportExactly(
				`s.yaml:1:1: unknown key "rules"; expected one of apiVersion, kind, metadata, include, seed, start, duration, sample, workload, workers, dependencies, system, invariants, abortIf, faults, steps, expect`,
				"s.yaml:1:1: missing apiVersion; expected apiVersion: faultline/v1",
				"s.yaml:1:1: missing kind; expected kind: Scenario or kind: Fragment",
			))
		})
	})

	It("loads the reference page's example", func() {
		l, err := scenarios.LoadFS(mapFS("example.yaml", scenarios.ReferenceExample), "example.yaml")
		Expect(err).NotTo(HaveOccurred())
		Expect(l.Scenario.WithDefaults().Validate()).To(Succeed())
	})
})
