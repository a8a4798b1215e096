package scenarios_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing/fstest"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"pgregory.net/rapid"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
	"github.com/faultline/faultline/sim"
)

// chargeScenario is a scenario calling the dependency "gateway"; a spec
// appends its keys.
const chargeScenario = scenarioHead + "workload:\n  tasks: [{name: charge, dependency: gateway}]\n  arrivals: {rate: 1/s}\n"

// runs reports the error sim.Run gives a loaded scenario before it runs
// (its context is canceled: the run stops at once), other than the
// cancelation: what `faultline run` would exit 3 on.
func runs(l *scenarios.Loaded) error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := sim.Run(ctx, l.Scenario)
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

var _ = Describe("validate runs every check run runs (issue 11 item 7)", func() {
	DescribeTable("refuses at load, at file:line:col, what the simulator would refuse to run",
		func(keys string, lines ...string) {
			text := chargeScenario + keys
			_, err := scenarios.LoadFS(mapFS("s.yaml", text), "s.yaml")
			Expect(err).To(reportExactly(lines...))
		},
		Entry("a negative DLQ capacity", "system: {dlq: {capacity: -1}}\n",
			"s.yaml:8:26: system.dlq.capacity: must be at least 1"),
		Entry("a negative monitor depth", "system: {monitor: {maxDepth: -1}}\n",
			"s.yaml:8:30: system.monitor.maxDepth: must not be negative (0 turns the check off)"),
		Entry("an alerts block without a default receiver", "system: {alerts: {receivers: [pager, team]}}\n",
			"s.yaml:8:10: system.alerts.defaultReceiver: expected the receiver of the alerts no route takes, one of pager, team"),
		Entry("a route to an unknown receiver", "system: {alerts: {receivers: [pager], defaultReceiver: pager, routes: [{receiver: pagr}]}}\n",
			`s.yaml:8:83: system.alerts.routes[0].receiver: "pagr" is not a receiver (the receivers are pager); did you mean "pager"?`),
		Entry("maxOpenDuration below openDuration", "system: {breakers: [{dependency: gateway, openDuration: 10s, maxOpenDuration: 5s}]}\n",
			"s.yaml:8:79: system.breakers[0].maxOpenDuration: must be at least OpenDuration (got 5s)"),
		Entry("a failure rate of 250 %", "system: {breakers: [{dependency: gateway, failureRatePercent: 250}]}\n",
			"s.yaml:8:63: system.breakers[0].failureRatePercent: must be between 1 and 100 (got 250)"),
		Entry("an auto-retry window at 25h", "system: {autoRetry: {windowStart: 25h, windowEnd: 6h}}\n",
			"s.yaml:8:35: system.autoRetry.windowStart: must be a time of day in [0, 24h)"),
		Entry("a planted secret too short to mean anything", "invariants: {secrets: [\"4242 4242 4242 4242\", abc]}\n",
			`s.yaml:8:47: invariants.secrets[1]: expected a planted secret of at least 8 characters (a shorter one would match ordinary text), got "abc"`),
		Entry("a history of an unknown class", "expect: [{job: charge-1, state: dead-lettered, history: [transient, permanant]}]\n",
			`s.yaml:8:69: expect[0].history[1]: expected one of transient, rate-limited, indeterminate, permanent, critical, canceled, got "permanant"; did you mean "permanent"?`),
		Entry("a history on a count", "expect: [{count: lost, equals: 0, history: [transient]}]\n",
			"s.yaml:8:44: expect[0].history: a count expectation does not read history; it takes task, severity, class, receiver, fingerprint, dependency, from, until, window, equals, atLeast, atMost"),
		Entry("a job's attempts with its state", "expect: [{job: charge-1, state: succeeded, attempts: 2}]\n",
			"s.yaml:8:33: expect[0].state: a job expectation reads where the job ended (state, route, severity, history) or its attempts (attempts, atLeast, atMost, attemptGapsAtLeast), not both: write two expectations"),
		Entry("a job's attempts both exactly and at most", "expect: [{job: charge-1, attempts: 2, atMost: 3}]\n",
			"s.yaml:8:10: expect[0]: expected one of attempts, atLeast, atMost; got attempts and atMost"),
		Entry("a retry rate without a window, on an unknown dependency", "expect: [{count: retried, dependency: gatewy, from: 10s, atMost: 5}]\n",
			"s.yaml:8:10: expect[0].window: expected the length of the window the retries are counted in, like 1s",
			`s.yaml:8:39: expect[0].dependency: expected one of the scenario's dependencies (gateway), got "gatewy"; did you mean "gateway"?`),
		Entry("a retry rate of another count", "expect: [{count: pages, dependency: gateway, window: 1s, atMost: 5}]\n",
			`s.yaml:8:18: expect[0].count: dependency, from and window read the retries due or the calls made per window: expected count retried or calls, got "pages"`),
		Entry("a drainedBy of an unknown queue", "expect: [{drainedBy: 30s, queue: fallbak}]\n",
			`s.yaml:8:34: expect[0].queue: expected dlq or fallback, got "fallbak"; did you mean "fallback"?`),
		Entry("breakerTransitions without a comparison", "system: {breakers: [{dependency: gateway}]}\nexpect: [{breakerTransitions: gateway}]\n",
			"s.yaml:9:10: expect[0]: expected one of equals, atLeast, atMost with breakerTransitions"),
		Entry("an attempt count on a count", "expect: [{count: lost, equals: 0, attempts: 1}]\n",
			"s.yaml:8:45: expect[0].attempts: a count expectation does not read attempts; it takes task, severity, class, receiver, fingerprint, dependency, from, until, window, equals, atLeast, atMost"),
		Entry("maxAlerts: 1", "system: {alerts: {maxAlerts: 1}}\n",
			"s.yaml:8:30: system.alerts.maxAlerts: must be at least 2"),
		Entry("a dedupWindow shorter than groupWait", "system: {alerts: {dedupWindow: 10s, timing: {groupWait: 30s}}}\n",
			"s.yaml:8:32: system.alerts.dedupWindow: must be at least Timing.GroupWait (30s), or a failure resolves before it is paged"),
		Entry("a latency model on the DLQ store, which the schema allows and the simulator does not apply",
			"faults: [{name: f, target: dlq-store, model: latency}]\n",
			`s.yaml:8:46: faults[0].model: fault "f": not simulated: the DLQ store can only refuse writes (store-outage, outage); model latency only adds latency`),
		Entry("an outage model on the queue store, likewise", "faults: [{name: f, target: store, model: outage}]\n",
			`s.yaml:8:42: faults[0].model: fault "f": not simulated: the queue store can only be slowed (slow-store, latency); model outage makes it fail: target dlq-store for DLQ outages`),
	)

	It("reports every problem of every component in one pass, each at its place", func() {
		text := chargeScenario + `system:
  dlq: {capacity: -1}
  alerts:
    receivers: [pager, team]
    routes: [{receiver: pagr}]
    maxAlerts: 1
    dedupWindow: 1s
    timing: {groupWait: 30s}
  breakers:
    - {dependency: gateway, openDuration: 10s, maxOpenDuration: 5s, failureRatePercent: 250}
  autoRetry: {windowStart: 25h, windowEnd: 6h}
  monitor: {maxDepth: -3}
faults:
  - {name: a, target: dlq-store, model: latency}
  - {name: b, target: store, model: outage}
`
		_, err := scenarios.LoadFS(mapFS("s.yaml", text), "s.yaml")
		Expect(err).To(reportExactly(
			"s.yaml:9:19: system.dlq.capacity: must be at least 1",
			"s.yaml:10:3: system.alerts.defaultReceiver: expected the receiver of the alerts no route takes, one of pager, team",
			`s.yaml:12:25: system.alerts.routes[0].receiver: "pagr" is not a receiver (the receivers are pager, team); did you mean "pager"?`,
			"s.yaml:13:16: system.alerts.maxAlerts: must be at least 2",
			"s.yaml:14:18: system.alerts.dedupWindow: must be at least Timing.GroupWait (30s), or a failure resolves before it is paged",
			"s.yaml:17:65: system.breakers[0].maxOpenDuration: must be at least OpenDuration (got 5s)",
			"s.yaml:17:89: system.breakers[0].failureRatePercent: must be between 1 and 100 (got 250)",
			"s.yaml:18:28: system.autoRetry.windowStart: must be a time of day in [0, 24h)",
			"s.yaml:19:23: system.monitor.maxDepth: must not be negative (0 turns the check off)",
			`s.yaml:21:41: faults[0].model: fault "a": not simulated: the DLQ store can only refuse writes (store-outage, outage); model latency only adds latency`,
			`s.yaml:22:37: faults[1].model: fault "b": not simulated: the queue store can only be slowed (slow-store, latency); model outage makes it fail: target dlq-store for DLQ outages`,
		))
	})

	It("loads nothing that the simulator then refuses: the built-ins, the examples, the fuzz corpus", func() {
		checked := 0
		for _, b := range scenarios.Builtins() {
			l, err := scenarios.LoadBuiltin(b.Name)
			Expect(err).NotTo(HaveOccurred())
			Expect(runs(l)).To(Succeed(), b.Name)
			checked++
		}
		files, err := filepath.Glob("testdata/valid/*.yaml")
		Expect(err).NotTo(HaveOccurred())
		for _, f := range files {
			l, err := scenarios.Load(f)
			Expect(err).NotTo(HaveOccurred())
			Expect(runs(l)).To(Succeed(), f)
			checked++
		}
		corpus, err := filepath.Glob("testdata/fuzz/FuzzLoad/*")
		Expect(err).NotTo(HaveOccurred())
		Expect(corpus).NotTo(BeEmpty())
		for _, f := range corpus {
			data := fuzzInput(f)
			l, err := scenarios.LoadFS(fstest.MapFS{"s.yaml": {Data: data}}, "s.yaml")
			if err != nil {
				continue
			}
			Expect(runs(l)).To(Succeed(), f)
			checked++
		}
		Expect(checked).To(BeNumerically(">=", 20))
	})

	It("has no scenario of these families that loads and that the simulator refuses to run (property)", func() {
		rapid.Check(GinkgoT(), func(t *rapid.T) {
			text := randomScenario(t)
			l, err := scenarios.LoadFS(mapFS("s.yaml", text), "s.yaml")
			if err != nil {
				var le *scenarios.LoadError
				if !errors.As(err, &le) {
					t.Fatalf("not a *LoadError: %v", err)
				}
				for _, d := range le.Diagnostics {
					if d.File != "s.yaml" || d.Line < 1 || d.Col < 1 {
						t.Fatalf("a problem without its position: %+v\n%s", d, text)
					}
				}
				return
			}
			if err := runs(l); err != nil {
				t.Fatalf("validate passed and run failed: %v\n%s", err, text)
			}
		})
	})
})

// fuzzInput reads a file of Go's fuzz corpus format holding one []byte.
func fuzzInput(name string) []byte {
	GinkgoHelper()
	data, err := os.ReadFile(name)
	Expect(err).NotTo(HaveOccurred())
	_, rest, ok := bytes.Cut(data, []byte("\n"))
	Expect(ok).To(BeTrue(), name)
	lit := strings.TrimSpace(string(rest))
	lit = strings.TrimSuffix(strings.TrimPrefix(lit, "[]byte("), ")")
	s, err := strconv.Unquote(lit)
	Expect(err).NotTo(HaveOccurred(), name)
	return []byte(s)
}

// randomScenario draws a scenario over the keys whose values the
// components and the simulator constrain: sometimes valid, often not.
func randomScenario(t *rapid.T) string {
	pick := func(label string, xs ...string) string { return rapid.SampledFrom(xs).Draw(t, label) }
	dur := func(label string) string {
		return pick(label, "0", "1ms", "500ms", "1s", "5s", "30s", "1m", "5m", "1h", "23h", "25h")
	}
	num := func(label string) string { return strconv.Itoa(rapid.IntRange(-2, 120).Draw(t, label)) }
	var b strings.Builder
	b.WriteString(scenarioHead)
	deps := []string{"gateway", "smtp"}
	fmt.Fprintf(&b, "workload:\n  tasks: [{name: charge, dependency: %s}, {name: mail, dependency: %s}]\n  arrivals: {rate: 2/s}\n",
		pick("dep1", deps...), pick("dep2", append(deps, "gatway")...))
	if rapid.Bool().Draw(t, "jobs") {
		fmt.Fprintf(&b, "  jobs: [{at: %s, id: j1, task: charge}]\n", dur("jobAt"))
	}
	fmt.Fprintf(&b, "workers: {count: %s}\n", pick("workers", "0", "1", "3", "-1", "10001"))
	b.WriteString("system:\n")
	fmt.Fprintf(&b, "  dlq: {capacity: %s, overflow: %s}\n", num("capacity"), pick("overflow", "reject", "evict-oldest"))
	if rapid.Bool().Draw(t, "alerts") {
		recv := []string{"pager", "team", "pagr", ""}
		fmt.Fprintf(&b, "  alerts: {receivers: [pager, team], defaultReceiver: %q, routes: [{receiver: %q, severities: [high]}], maxAlerts: %s, dedupWindow: %s, timing: {groupWait: %s}}\n",
			pick("default", recv...), pick("route", recv...), num("maxAlerts"), dur("dedup"), dur("groupWait"))
	}
	if rapid.Bool().Draw(t, "breaker") {
		fmt.Fprintf(&b, "  breakers: [{dependency: %s, openDuration: %s, maxOpenDuration: %s, failureRatePercent: %s, rampStartPercent: %s, consecutiveFailures: %s, halfOpenProbes: %s, fallback: {batchSize: %s}}]\n",
			pick("breakerDep", append(deps, "gatway")...), dur("open"), dur("maxOpen"), pick("rate", "0", "1", "50", "100", "101", "250", "-5"),
			pick("ramp", "0", "10", "100", "101"), num("consec"), num("probes"), num("batch"))
	}
	if rapid.Bool().Draw(t, "autoRetry") {
		fmt.Fprintf(&b, "  autoRetry: {windowStart: %s, windowEnd: %s, rate: %s, maxAutoRetries: %s}\n", dur("ws"), dur("we"), num("arRate"), num("arMax"))
	}
	if rapid.Bool().Draw(t, "monitor") {
		fmt.Fprintf(&b, "  monitor: {maxDepth: %s, maxAge: %s, interval: %s}\n", num("depth"), dur("age"), dur("interval"))
	}
	if rapid.Bool().Draw(t, "retry") {
		fmt.Fprintf(&b, "  retry: {maxAttempts: %s, baseDelay: %s, maxDelay: %s, budget: {burst: %s}}\n", num("attempts"), dur("base"), dur("max"), num("burst"))
	}
	b.WriteString("faults:\n")
	targets := []string{"dependency/gateway", "dependency/smtp", "dependency/gatway", "dlq-store", "store", "alert-sink", "alert-sink/pager", "alert-sink/on-call", "worker", "worker/w1", "worker/w3", "worker/w9"}
	for i := range rapid.IntRange(0, 3).Draw(t, "faults") {
		model := pick(fmt.Sprintf("model%d", i), "outage", "latency", "store-outage", "slow-store", "sink-outage", "worker-crash", "worker-stall", "gateway-timeout", "http-status")
		fmt.Fprintf(&b, "  - {name: f%d, target: %s, model: %s, schedule: {from: %s}}\n", i, pick(fmt.Sprintf("target%d", i), targets...), model, dur(fmt.Sprintf("from%d", i)))
	}
	if rapid.Bool().Draw(t, "step") {
		fmt.Fprintf(&b, "steps: [{at: %s, action: %s, workers: %s}]\n", dur("stepAt"), pick("action", "requeue", "set-workers"), pick("stepWorkers", "0", "2", "9", "20000"))
	}
	if rapid.Bool().Draw(t, "abortIf") {
		fmt.Fprintf(&b, "abortIf: {dlqDepth: %s, errorRate: %s, errorWindow: %s, maxActiveFaults: %s}\n",
			num("abortDepth"), pick("abortRate", "0", "0.5", "1", "1.5", "-1"), dur("abortWindow"), num("abortFaults"))
	}
	if rapid.Bool().Draw(t, "expect") {
		fmt.Fprintf(&b, "expect: [{job: %s, state: succeeded}, {breakerOpened: %s, atLeast: 1}]\n", pick("job", "j1", "charge-3", "chrage-1", "mail-0"), pick("eb", deps...))
	}
	return b.String()
}

var _ = Describe("abortIf, a drill's guard (issue 12)", func() {
	DescribeTable("refuses each bad bound at its place, naming the key",
		func(keys string, lines ...string) {
			_, err := scenarios.LoadFS(mapFS("s.yaml", chargeScenario+keys), "s.yaml")
			Expect(err).To(reportExactly(lines...))
		},
		Entry("no bound at all", "abortIf: {}\n", "s.yaml:8:10: abortIf: give at least one bound"),
		Entry("only a window: no bound either", "abortIf: {errorWindow: 30s}\n", "s.yaml:8:10: abortIf: give at least one bound"),
		Entry("a DLQ depth of 0, which would silently be none", "abortIf: {dlqDepth: 0}\n",
			"s.yaml:8:21: abortIf.dlqDepth: expected a depth of at least 1, got 0 (leave the key out for no bound)"),
		Entry("a negative DLQ depth", "abortIf: {dlqDepth: -5}\n",
			"s.yaml:8:21: abortIf.dlqDepth: must not be negative (0 is no bound), got -5"),
		Entry("an error rate of 0", "abortIf: {errorRate: 0}\n",
			"s.yaml:8:22: abortIf.errorRate: expected a share in (0,1], got 0 (leave the key out for no bound)"),
		Entry("an error rate as a percentage", "abortIf: {errorRate: 50}\n",
			"s.yaml:8:22: abortIf.errorRate: must be a share in (0,1] (0 is no bound), got 50"),
		Entry("a negative error rate", "abortIf: {errorRate: -0.1}\n",
			"s.yaml:8:22: abortIf.errorRate: must be a share in (0,1] (0 is no bound), got -0.1"),
		Entry("an error rate of 0 with a window: the rate's problem only", "abortIf: {errorRate: 0, errorWindow: 30s}\n",
			"s.yaml:8:22: abortIf.errorRate: expected a share in (0,1], got 0 (leave the key out for no bound)"),
		Entry("an error rate that is not a number: the decoder's word only, not a guard without a bound", "abortIf: {errorRate: .nan}\n",
			"s.yaml:8:22: abortIf.errorRate: expected a number, got .nan"),
		Entry("a misspelt key: the suggestion only, not a guard without a bound", "abortIf: {dlqDepht: 10}\n",
			`s.yaml:8:11: unknown key "dlqDepht"; did you mean "dlqDepth"?`),
		Entry("a misspelt key beside a bound: the suggestion and the bound's own problem", "abortIf:\n  maxActiveFault: 3\n  errorRate: 1.5\n",
			`s.yaml:9:3: unknown key "maxActiveFault"; did you mean "maxActiveFaults"?`,
			"s.yaml:10:14: abortIf.errorRate: must be a share in (0,1] (0 is no bound), got 1.5"),
		Entry("an error window without an error rate", "abortIf: {dlqDepth: 10, errorWindow: 30s}\n",
			"s.yaml:8:38: abortIf.errorWindow: is only used with an error rate, and none is given"),
		Entry("an error window under 1s", "abortIf: {errorRate: 0.5, errorWindow: 500ms}\n",
			"s.yaml:8:40: abortIf.errorWindow: must be at least 1s, got 500ms"),
		Entry("an error window longer than the run", "abortIf: {errorRate: 0.5, errorWindow: 2m}\n",
			"s.yaml:8:40: abortIf.errorWindow: must not be longer than the run (1m0s), got 2m0s"),
		Entry("at most 0 faults active", "abortIf: {maxActiveFaults: 0}\n",
			"s.yaml:8:28: abortIf.maxActiveFaults: expected at least 1, got 0 (leave the key out for no bound)"),
		Entry("a negative number of faults", "abortIf: {maxActiveFaults: -1}\n",
			"s.yaml:8:28: abortIf.maxActiveFaults: must be at least 1 (0 is no bound), got -1"),
		Entry("every bad bound at once, in position order", "abortIf:\n  dlqDepth: -1\n  errorRate: 2\n  errorWindow: 1h\n  maxActiveFaults: 0\n",
			"s.yaml:9:13: abortIf.dlqDepth: must not be negative (0 is no bound), got -1",
			"s.yaml:10:14: abortIf.errorRate: must be a share in (0,1] (0 is no bound), got 2",
			"s.yaml:11:16: abortIf.errorWindow: must not be longer than the run (1m0s), got 1h0m0s",
			"s.yaml:12:20: abortIf.maxActiveFaults: expected at least 1, got 0 (leave the key out for no bound)"),
	)

	It("refuses a default window longer than a short run where abortIf is", func() {
		text := strings.Replace(chargeScenario, "duration: 1m", "duration: 30s", 1) + "abortIf: {errorRate: 0.5}\n"
		_, err := scenarios.LoadFS(mapFS("s.yaml", text), "s.yaml")
		Expect(err).To(reportExactly("s.yaml:8:1: abortIf.errorWindow: must not be longer than the run (30s), got 1m0s"))
	})

	It("converts the bounds, the error window defaulting to 1m with a rate, and leaves the simulator's run alone", func() {
		l, err := scenarios.LoadFS(mapFS("s.yaml", chargeScenario+"abortIf:\n  dlqDepth: 5000\n  errorRate: 0.5\n  maxActiveFaults: 3\n"), "s.yaml")
		Expect(err).NotTo(HaveOccurred())
		Expect(l.Scenario.AbortIf).To(Equal(&scenarios.AbortIfSpec{DLQDepth: 5000, ErrorRate: 0.5, ErrorWindow: time.Minute, MaxActiveFaults: 3}))
		Expect(runs(l)).To(Succeed())

		l, err = scenarios.LoadFS(mapFS("s.yaml", chargeScenario+"abortIf: {errorRate: 1, errorWindow: 1s}\n"), "s.yaml")
		Expect(err).NotTo(HaveOccurred())
		Expect(l.Scenario.AbortIf).To(Equal(&scenarios.AbortIfSpec{ErrorRate: 1, ErrorWindow: time.Second}))

		l, err = scenarios.LoadFS(mapFS("s.yaml", chargeScenario+"abortIf: {maxActiveFaults: 1}\n"), "s.yaml")
		Expect(err).NotTo(HaveOccurred())
		Expect(l.Scenario.AbortIf).To(Equal(&scenarios.AbortIfSpec{MaxActiveFaults: 1}), "no window without a rate")

		l, err = scenarios.LoadFS(mapFS("s.yaml", chargeScenario), "s.yaml")
		Expect(err).NotTo(HaveOccurred())
		Expect(l.Scenario.AbortIf).To(BeNil())
	})

	It("takes a fragment's abortIf, the scenario's own keys winning", func() {
		fsys := mapFS(
			"s.yaml", chargeScenario+"include: [f.yaml]\nabortIf: {dlqDepth: 10}\n",
			"f.yaml", fragmentHead+"abortIf: {dlqDepth: 99, maxActiveFaults: 2}\n",
		)
		l, err := scenarios.LoadFS(fsys, "s.yaml")
		Expect(err).NotTo(HaveOccurred())
		Expect(l.Scenario.AbortIf).To(Equal(&scenarios.AbortIfSpec{DLQDepth: 10, MaxActiveFaults: 2}))
	})

	It("shows the defaulted error window in the effective document", func() {
		l, err := scenarios.LoadFS(mapFS("s.yaml", chargeScenario+"abortIf: {errorRate: 0.25}\n"), "s.yaml")
		Expect(err).NotTo(HaveOccurred())
		eff := scenarios.Effective(l)
		Expect(eff.AbortIf.ErrorWindow).To(Equal(scenarios.Duration(time.Minute)))
		Expect(*eff.AbortIf.ErrorRate).To(Equal(0.25))
		Expect(l.Document.AbortIf.ErrorWindow).To(BeZero(), "the loaded document is left as written")
		Expect(scenarios.Effective(&scenarios.Loaded{Document: l.Document, Scenario: scenarios.Scenario{Name: "s"}}).AbortIf.ErrorWindow).To(BeZero())
	})

	It("is checked by sim.Scenario.Validate for a scenario built in Go, each problem naming its field", func() {
		l, err := scenarios.LoadFS(mapFS("s.yaml", chargeScenario), "s.yaml")
		Expect(err).NotTo(HaveOccurred())
		fields := func(a scenarios.AbortIfSpec) []string {
			sc := l.Scenario
			sc.AbortIf = &a
			var out []string
			for _, e := range flattenErrors(sc.WithDefaults().Validate()) {
				var se *scenarios.ScenarioError
				Expect(errors.As(e, &se)).To(BeTrue(), e.Error())
				Expect(e).To(MatchError(scenarios.ErrInvalidScenario))
				out = append(out, se.Field+": "+se.Reason)
			}
			return out
		}
		Expect(fields(scenarios.AbortIfSpec{ErrorRate: 0.5})).To(BeEmpty(), "a zero window is the default")
		Expect(fields(scenarios.AbortIfSpec{DLQDepth: 1, ErrorRate: 1, ErrorWindow: time.Minute, MaxActiveFaults: 1})).To(BeEmpty())
		Expect(fields(scenarios.AbortIfSpec{})).To(Equal([]string{"AbortIf: give at least one bound"}))
		Expect(fields(scenarios.AbortIfSpec{ErrorWindow: time.Minute})).To(Equal([]string{"AbortIf: give at least one bound"}))
		Expect(fields(scenarios.AbortIfSpec{ErrorRate: math.NaN()})).To(Equal([]string{"AbortIf.ErrorRate: must be a share in (0,1] (0 is no bound), got NaN"}))
		Expect(fields(scenarios.AbortIfSpec{DLQDepth: 3, ErrorWindow: time.Minute})).To(Equal([]string{"AbortIf.ErrorWindow: is only used with an error rate, and none is given"}))
		Expect(fields(scenarios.AbortIfSpec{DLQDepth: -1, ErrorRate: 1.01, ErrorWindow: -time.Second, MaxActiveFaults: -3})).To(Equal([]string{
			"AbortIf.DLQDepth: must not be negative (0 is no bound), got -1",
			"AbortIf.ErrorRate: must be a share in (0,1] (0 is no bound), got 1.01",
			"AbortIf.ErrorWindow: must be at least 1s, got -1s",
			"AbortIf.MaxActiveFaults: must be at least 1 (0 is no bound), got -3",
		}))
		Expect(fields(scenarios.AbortIfSpec{ErrorRate: 0.5, ErrorWindow: 1500500 * time.Microsecond})).To(Equal([]string{
			"AbortIf.ErrorWindow: must be a whole, non-negative number of milliseconds, got 1.5005s",
		}))
	})
})

// flattenErrors unjoins an errors.Join.
func flattenErrors(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

var _ = Describe("A fault that can never fire, and other references to nothing (issue 11 item 8)", func() {
	DescribeTable("are refused at load, with a suggestion where one is near",
		func(keys string, lines ...string) {
			_, err := scenarios.LoadFS(mapFS("s.yaml", keys), "s.yaml")
			Expect(err).To(reportExactly(lines...))
		},
		Entry("a target worker beyond the worker count", chargeScenario+"workers: {count: 2}\nfaults: [{name: f, target: worker/w3, model: worker-crash}]\n",
			`s.yaml:9:28: faults[0].target: worker "w3" does not exist: the run's workers are w1..w2, so the fault never fires`),
		Entry("an unknown dependency", chargeScenario+"faults: [{name: f, target: dependency/gatway, model: gateway-timeout}]\n",
			`s.yaml:8:28: faults[0].target: no task calls dependency "gatway", so the fault never fires; did you mean "gateway"?`),
		Entry("an unknown receiver", chargeScenario+"faults: [{name: f, target: alert-sink/on-cal, model: sink-outage}]\n",
			`s.yaml:8:28: faults[0].target: "on-cal" is not a receiver (the receivers are on-call, team), so the fault never fires; did you mean "on-call"?`),
		Entry("a task whose dependency is misspelt", scenarioHead+"workload:\n  tasks: [{name: charge, dependency: gatewy}]\n  arrivals: {rate: 1/s}\ndependencies: [{name: gateway, payment: true}]\n",
			`s.yaml:6:38: workload.tasks[0].dependency: "gatewy" is not a listed dependency (a plain one, never charged); did you mean "gateway"?`,
			`s.yaml:8:23: dependencies[0].name: no task calls dependency "gateway"; did you mean "gatewy"?`),
		Entry("a job and a burst at or after the end of the run",
			scenarioHead+"workload:\n  tasks: [{name: charge, dependency: gateway}]\n  jobs: [{at: 2m, id: late, task: charge}]\n  arrivals: {rate: 1/s, bursts: [{at: 1m, count: 5}]}\n",
			"s.yaml:7:15: workload.jobs[0].at: a job at 2m0s never happens: the run ends at 1m0s",
			"s.yaml:8:39: workload.arrivals.bursts[0].at: a burst at 1m0s never happens: the run ends at 1m0s"),
		Entry("a fault after the end", chargeScenario+"faults: [{name: f, target: dependency/gateway, model: outage, schedule: {from: 90s}}]\n",
			"s.yaml:8:80: faults[0].schedule.from: a fault starting at 1m30s never happens: the run ends at 1m0s"),
		Entry("a step at the end", chargeScenario+"steps: [{at: 1m, action: requeue}]\n",
			"s.yaml:8:14: steps[0].at: a step at 1m0s never happens: the run ends at 1m0s"),
		Entry("an expectation about a job ID that does not exist", chargeScenario+"expect: [{job: chrage-1, state: succeeded}]\n",
			`s.yaml:8:16: expect[0].job: "chrage-1": no job of the run has this ID: explicit jobs have theirs (workload.jobs[].id), generated ones TASK-N; did you mean "charge-1"?`),
		Entry("a breaker on a dependency no task calls", chargeScenario+"system: {breakers: [{dependency: gatewya}]}\n",
			`s.yaml:8:34: system.breakers[0].dependency: no task calls dependency "gatewya", so the breaker never sees a call; did you mean "gateway"?`),
		Entry("an expectation about a breaker there is not", chargeScenario+"expect: [{breakerOpened: gateway, atLeast: 1}]\n",
			`s.yaml:8:26: expect[0].breakerOpened: no breaker guards "gateway"`),
		Entry("a fault aimed at a job that is not an explicit job", chargeScenario+"  jobs: [{at: 5s, id: pay-auth, task: charge}, {at: 6s, task: charge}]\n"+
			"faults: [{name: f, target: dependency/gateway, model: auth-failure, schedule: {jobs: [pay-auth, pay-ath, charge-1]}}]\n",
			`s.yaml:9:97: faults[0].schedule.jobs[1]: "pay-ath" is not an explicit job of the workload, so the fault never fires; aim it at an explicit job of the workload (workload.jobs[].id); did you mean "pay-auth"?`,
			`s.yaml:9:106: faults[0].schedule.jobs[2]: "charge-1" is not an explicit job of the workload, so the fault never fires; aim it at an explicit job of the workload (workload.jobs[].id)`),
		Entry("a fault aimed at a job in a workload without explicit jobs", chargeScenario+"faults: [{name: f, target: dependency/gateway, model: outage, schedule: {jobs: [pay-auth]}}]\n",
			`s.yaml:8:81: faults[0].schedule.jobs[0]: "pay-auth" is not an explicit job of the workload, so the fault never fires; the workload has no explicit job with an ID; add one (workload.jobs[].id)`),
		Entry("a fault aimed at a job on a target no job calls", chargeScenario+"  jobs: [{at: 5s, id: j1, task: charge}]\n"+
			"faults: [{name: f, target: worker/w1, model: worker-crash, schedule: {jobs: [j1]}}, {name: g, target: store, model: slow-store, schedule: {jobs: [j1]}}, {name: h, target: alert-sink, model: sink-outage, schedule: {jobs: [j1]}}]\n",
			`s.yaml:9:77: faults[0].schedule.jobs: worker faults cannot be limited to jobs: no job makes their calls; only dependency and dlq-store faults take jobs; use from/until to aim it`,
			`s.yaml:9:146: faults[1].schedule.jobs: store faults cannot be limited to jobs: no job makes their calls; only dependency and dlq-store faults take jobs; use from/until to aim it`,
			`s.yaml:9:221: faults[2].schedule.jobs: alert-sink faults cannot be limited to jobs: no job makes their calls; only dependency and dlq-store faults take jobs; use from/until to aim it`),
		Entry("counts filtered by a receiver or task there is not", chargeScenario+"expect: [{count: pages, receiver: oncall, equals: 0}, {count: dead-letters, task: chrge, equals: 0}]\n",
			`s.yaml:8:35: expect[0].receiver: "oncall" is not a receiver (the receivers are on-call, team); did you mean "on-call"?`,
			`s.yaml:8:83: expect[1].task: unknown task "chrge", so the count is always 0; did you mean "charge"?`),
	)

	It("accepts the references a run can meet: a worker a set-workers step adds, a generated job's ID, an explicit one's", func() {
		text := chargeScenario + "  jobs: [{at: 5s, id: j1, task: charge}]\nworkers: {count: 2}\nsteps: [{at: 10s, action: set-workers, workers: 4}]\n" +
			"faults: [{name: f, target: worker/w4, model: worker-crash}]\nexpect: [{job: charge-3, state: succeeded}, {job: j1, state: succeeded}]\n"
		_, err := scenarios.LoadFS(mapFS("s.yaml", text), "s.yaml")
		Expect(err).NotTo(HaveOccurred())
	})

	It("accepts a fault aimed at explicit jobs on a dependency or the DLQ store, and carries the jobs to the simulator's fault", func() {
		text := chargeScenario + "  jobs: [{at: 5s, id: j1, task: charge}, {at: 6s, id: j2, task: charge}]\n" +
			"faults: [{name: f, target: dependency/gateway, model: card-declined, schedule: {from: 1s, jobs: [j2, j1], firstCalls: 1}}, {name: g, target: dlq-store, model: store-outage, schedule: {jobs: [j1]}}]\n"
		l, err := scenarios.LoadFS(mapFS("s.yaml", text), "s.yaml")
		Expect(err).NotTo(HaveOccurred())
		Expect(l.Document.Faults[0].Schedule.Jobs).To(Equal([]string{"j2", "j1"}))
		Expect(l.Scenario.Faults[0].Schedule).To(Equal(faults.Schedule{From: time.Second, Jobs: []string{"j2", "j1"}, FirstCalls: 1}))
		Expect(l.Scenario.Faults[1].Schedule.Jobs).To(Equal([]string{"j1"}))
		out, err := scenarios.Marshal(l.Document)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(out)).To(ContainSubstring("jobs:"))
		again, err := scenarios.Parse("s.yaml", out)
		Expect(err).NotTo(HaveOccurred())
		Expect(again.Faults[0].Schedule.Jobs).To(Equal([]string{"j2", "j1"}))
	})

	It("carries requireHits to the simulator's fault", func() {
		l, err := scenarios.LoadFS(mapFS("s.yaml", chargeScenario+"faults: [{name: f, target: dependency/gateway, model: outage, requireHits: true}, {name: g, target: dependency/gateway, model: outage}]\n"), "s.yaml")
		Expect(err).NotTo(HaveOccurred())
		Expect(l.Scenario.Faults[0].RequireHits).To(BeTrue())
		Expect(l.Scenario.Faults[1].RequireHits).To(BeFalse())
	})
})

// allocatedBy returns the bytes f allocates.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

var _ = Describe("Input limits (issue 11 item 9)", func() {
	const deep = 100_000

	DescribeTable("refuse a document nested 100,000 deep before parsing it: at once, in little memory",
		func(text string) {
			var err error
			start := time.Now()
			alloc := allocatedBy(func() { _, err = scenarios.LoadFS(mapFS("s.yaml", text), "s.yaml") })
			Expect(time.Since(start)).To(BeNumerically("<", 2*time.Second))
			Expect(alloc).To(BeNumerically("<", 16<<20), "bytes allocated")
			Expect(diagnosticLines(err)).To(ConsistOf(MatchRegexp(`^s\.yaml:\d+:\d+: values are nested more than 64 deep; lift the limit with --max-depth$`)))
		},
		Entry("flow sequences", chargeScenario+"faults: [{name: f, target: dlq-store, model: store-outage, params: {p: "+strings.Repeat("[", deep)+strings.Repeat("]", deep)+"}}]\n"),
		Entry("flow mappings", chargeScenario+"x: "+strings.Repeat("{a: ", deep)+"1"+strings.Repeat("}", deep)+"\n"),
		Entry("block sequences on one line", chargeScenario+"x:\n"+strings.Repeat("- ", deep)+"1\n"),
		Entry("block mappings, indented", chargeScenario+deepBlock(600)),
		Entry("sequence entries behind anchors and tags", chargeScenario+"x:\n"+strings.Repeat("- &a !t ", deep)+"1\n"),
		Entry("flow behind an anchor", chargeScenario+"x: &a "+strings.Repeat("[", deep)+strings.Repeat("]", deep)+"\n"),
		Entry("after a plain scalar with an apostrophe and a bracket, which open nothing", chargeScenario+"y: it's a [draft\nx: "+strings.Repeat("[", deep)+strings.Repeat("]", deep)+"\n"),
	)

	It("lets --max-depth lift the depth limit", func() {
		text := chargeScenario + "faults: [{name: f, target: dlq-store, model: store-outage, params: {p: " + strings.Repeat("[", 80) + strings.Repeat("]", 80) + "}}]\n"
		_, err := scenarios.LoadFS(mapFS("s.yaml", text), "s.yaml")
		Expect(diagnosticLines(err)).To(ContainElement(ContainSubstring("nested more than 64 deep")))
		_, err = scenarios.Limits{MaxDepth: 200}.LoadFS(mapFS("s.yaml", text), "s.yaml")
		Expect(diagnosticLines(err)).NotTo(ContainElement(ContainSubstring("nested")))
	})

	It("is not fooled by brackets and indentation in strings, comments and block scalars", func() {
		text := chargeScenario + "metadata:\n  name: s\n  description: |\n" + strings.Repeat("    [[[[[[[[[[[[[[[[[[[[\n", 10) +
			"  tags: [\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\", '{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{''s']\n" +
			"# " + strings.Repeat("[", 100) + "\n"
		text = strings.Replace(text, "metadata: {name: s}\n", "", 1)
		l, err := scenarios.LoadFS(mapFS("s.yaml", text), "s.yaml")
		Expect(err).NotTo(HaveOccurred())
		Expect(l.Document.Metadata.Tags).To(HaveLen(2))
	})

	It("refuses a file over the size limit before reading it, naming --max-file-size, and reads it when lifted", func() {
		dir := GinkgoT().TempDir()
		big := filepath.Join(dir, "big.yaml")
		padding := strings.Repeat("# padding padding padding padding padding padding padding padding\n", (10<<20)/66+1)
		Expect(os.WriteFile(big, []byte(chargeScenario+padding), 0o600)).To(Succeed())
		_, err := scenarios.Load(big)
		Expect(diagnosticLines(err)).To(ConsistOf(MatchRegexp(`^` + regexpQuote(big) + `: cannot read the file: the file is larger than the limit of 10 MiB \(it has 10\.0 MiB\); lift the limit with --max-file-size$`)))
		_, err = scenarios.Limits{MaxFileSize: 11 << 20}.Load(big)
		Expect(err).NotTo(HaveOccurred())
	})

	It("refuses an included fragment over the size limit at its include entry", func() {
		fsys := fstest.MapFS{
			"s.yaml": {Data: []byte(chargeScenario + "include: [f.yaml]\n")},
			"f.yaml": {Data: []byte(fragmentHead + strings.Repeat("#\n", 600))},
		}
		_, err := scenarios.Limits{MaxFileSize: 1000}.LoadFS(fsys, "s.yaml")
		Expect(err).To(reportExactly("s.yaml:8:11: include[0]: cannot read fragment f.yaml: the file is larger than the limit of 1000 bytes (it has 1240 bytes); lift the limit with --max-file-size"))
	})

	It("reads workers.count: 1e9 as a billion workers, and refuses them", func() {
		_, err := scenarios.LoadFS(mapFS("s.yaml", chargeScenario+"workers: {count: 1e9}\n"), "s.yaml")
		Expect(err).To(reportExactly("s.yaml:8:18: workers.count: 1000000000 workers, more than the limit of 10000; lift the limit with --max-workers"))
	})

	It("refuses workers past 10,000, naming --max-workers, and lets the flag lift it", func() {
		text := chargeScenario + "workers: {count: 1000000000}\nsteps: [{at: 10s, action: set-workers, workers: 20000}]\n"
		_, err := scenarios.LoadFS(mapFS("s.yaml", text), "s.yaml")
		Expect(err).To(reportExactly(
			"s.yaml:8:18: workers.count: 1000000000 workers, more than the limit of 10000; lift the limit with --max-workers",
			"s.yaml:9:49: steps[0].workers: 20000 workers, more than the limit of 10000; lift the limit with --max-workers"))
		l, err := scenarios.Limits{Run: scenarios.RunLimits{MaxWorkers: 1_000_000_000}}.LoadFS(mapFS("s.yaml", text), "s.yaml")
		Expect(err).NotTo(HaveOccurred())
		Expect(l.Scenario.Limits.MaxWorkers).To(Equal(1_000_000_000))
	})

	It("refuses more than 100,000 samples a run, saying to coarsen the sampling", func() {
		text := strings.Replace(chargeScenario, "duration: 1m", "duration: 24h", 1) + "sample: 1ms\n"
		_, err := scenarios.LoadFS(mapFS("s.yaml", text), "s.yaml")
		Expect(err).To(reportExactly("s.yaml:8:9: sample: a sample every 1ms over 24h0m0s is 86400001 samples, more than the limit of 100000; " +
			"coarsen the sampling (a sample of 1s gives 86401) or lift the limit with --max-samples"))
		_, err = scenarios.LoadFS(mapFS("s.yaml", strings.Replace(text, "sample: 1ms", "sample: 1s", 1)), "s.yaml")
		Expect(err).NotTo(HaveOccurred())
	})

	It("stops a run past the jobs in flight as interrupted, naming --max-in-flight, with memory bounded", func() {
		text := strings.Replace(strings.Replace(chargeScenario, "rate: 1/s", "rate: 1000000/s", 1), "dependency: gateway}", "dependency: gateway, service: 1s}", 1)
		l, err := scenarios.Limits{Run: scenarios.RunLimits{MaxInFlight: 2_000}}.LoadFS(mapFS("s.yaml", text), "s.yaml")
		Expect(err).NotTo(HaveOccurred())
		var res *reportsResult
		alloc := allocatedBy(func() { res, err = runResult(l) })
		Expect(err).NotTo(HaveOccurred())
		Expect(string(res.Verdict)).To(Equal("interrupted"))
		Expect(res.Error).To(MatchRegexp(`run stopped at \+\S+: 2001 jobs in flight, more than the limit of 2000; lower the arrival rate, shorten the run, or lift the limit with --max-in-flight`))
		Expect(alloc).To(BeNumerically("<", 512<<20))
	})
})

func deepBlock(levels int) string {
	var b strings.Builder
	b.WriteString("x:\n")
	for i := 1; i <= levels; i++ {
		b.WriteString(strings.Repeat(" ", i))
		b.WriteString("a:\n")
	}
	return b.String()
}

func regexpQuote(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\.+*?()|[]{}^$`, r) {
			b.WriteRune('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

type reportsResult = reports.Result

// runResult runs a loaded scenario to its end.
func runResult(l *scenarios.Loaded) (*reports.Result, error) {
	return sim.Run(context.Background(), l.Scenario)
}

// ledgerScenario is a 2-minute run of one explicit job, ledger-sync,
// calling ledger-api; a spec appends its system and expect keys.
const ledgerScenario = "apiVersion: faultline/v1\nkind: Scenario\nmetadata: {name: s}\nduration: 2m\n" +
	"workload:\n  tasks: [{name: sync-ledger, dependency: ledger-api}]\n  jobs: [{at: 0s, id: ledger-sync, task: sync-ledger}]\n"

var _ = Describe("Expectations that cannot check anything, or name what cannot be (tester's round 4)", func() {
	DescribeTable("are refused at load, one problem at the key at fault",
		func(keys string, lines ...string) {
			_, err := scenarios.LoadFS(mapFS("s.yaml", ledgerScenario+keys), "s.yaml")
			Expect(err).To(reportExactly(lines...))
		},
		// 1: a zero duration is a value given, refused at its key, saying why.
		Entry("attemptGapsAtLeast: 0s", "expect: [{job: ledger-sync, attemptGapsAtLeast: 0s}]\n",
			"s.yaml:8:49: expect[0].attemptGapsAtLeast: expected a gap longer than 0s, like 10s, got 0s: every gap between attempts is at least 0s, so it would check nothing"),
		Entry("drainedBy: 0s", "expect: [{drainedBy: 0s}]\n",
			"s.yaml:8:22: expect[0].drainedBy: expected an offset after the start, like 1m, got 0s: no job has run at 0s, so the queue is empty then whatever the system does"),
		Entry("window: 0s", "expect: [{count: retried, dependency: ledger-api, window: 0s, atMost: 5}]\n",
			"s.yaml:8:59: expect[0].window: expected the length of the window the retries are counted in, like 1s, got 0s: a window of no length holds nothing to count"),
		// 2: a gap no run this long can hold.
		Entry("a gap between attempts longer than the run", "expect: [{job: ledger-sync, attemptGapsAtLeast: 3h}]\n",
			"s.yaml:8:49: expect[0].attemptGapsAtLeast: a gap of 3h0m0s between attempts never happens: the run ends at 2m0s"),
		// 3: offsets past the run's end, like schedule.from and jobs[].at.
		Entry("a retry window from past the end", "expect: [{count: retried, dependency: ledger-api, from: 5m, window: 1s, atMost: 5}]\n",
			"s.yaml:8:57: expect[0].from: a window starting at 5m0s never happens: the run ends at 2m0s"),
		Entry("drainedBy past the end", "expect: [{drainedBy: 5m}]\n",
			"s.yaml:8:22: expect[0].drainedBy: a check that the queue is drained at 5m0s never happens: the run ends at 2m0s"),
		// 4: a fallback queue no breaker ever fills.
		Entry("a drained fallback queue without breakers", "expect: [{drainedBy: 1m, queue: fallback}]\n",
			"s.yaml:8:33: expect[0].queue: no breaker guards a dependency, so no job is ever diverted to the fallback queue and it is always drained: add system.breakers, or expect the DLQ drained"),
		// 5: one problem, at the key at fault.
		Entry("a job with neither a state nor attempts", "expect: [{job: ledger-sync}]\n",
			"s.yaml:8:10: expect[0].state: expected where the job ends (state: one of queued, in-flight, scheduled, fallback, dead-lettered, succeeded, none) or its attempts (attempts, atLeast, atMost or attemptGapsAtLeast) with job"),
		Entry("a count with a dependency that is no rate", "expect: [{count: alerts, dependency: ledger-api, equals: 0}]\n",
			`s.yaml:8:18: expect[0].count: dependency, from and window read the retries due or the calls made per window: expected count retried or calls, got "alerts"`),
		Entry("a job's attempts with equals", "expect: [{job: ledger-sync, attempts: 2, equals: 2}]\n",
			"s.yaml:8:50: expect[0].equals: a job expectation does not read equals: the exact number of a job's attempts is attempts (e.g. attempts: 2)"),
		Entry("a job's attempts both at least and at most", "expect: [{job: ledger-sync, atLeast: 3, atMost: 1}]\n",
			"s.yaml:8:10: expect[0]: expected one of attempts, atLeast, atMost; got atLeast and atMost"),
		Entry("a job's attempts at least -1", "expect: [{job: ledger-sync, atLeast: -1}]\n",
			"s.yaml:8:38: expect[0].atLeast: expected a count of at least 0, got -1"),
		Entry("an expectation of no kind", "expect: [{queue: fallback}]\n",
			"s.yaml:8:10: expect[0]: expected exactly one of count, job, pageWithin, drainedBy, breakerOpened, breakerClosedBy, breakerTransitions, confusion; got none"),
		Entry("a job's attempts that are no number", "expect: [{job: ledger-sync, attempts: two}]\n",
			`s.yaml:8:39: expect[0].attempts: expected a whole number, got "two"`),
		Entry("a misspelt attempts", "expect: [{job: ledger-sync, attemps: 2}]\n",
			`s.yaml:8:29: unknown key "attemps"; did you mean "attempts"?`),
		Entry("a negative gap", "expect: [{job: ledger-sync, attemptGapsAtLeast: -5s}]\n",
			`s.yaml:8:49: expect[0].attemptGapsAtLeast: expected a duration of at least 0, got "-5s"`),
		Entry("a negative drainedBy", "expect: [{drainedBy: -1m}]\n",
			`s.yaml:8:22: expect[0].drainedBy: expected a duration of at least 0, got "-1m"`),
		Entry("a misspelt breakerTransitions", "expect: [{breakerTransition: ledger-api, atMost: 1}]\n",
			`s.yaml:8:11: unknown key "breakerTransition"; did you mean "breakerTransitions"?`),
		// 7: a generated ID the run cannot make.
		Entry("a generated ID past a fixed burst", "  arrivals: {bursts: [{at: 1s, count: 150, task: sync-ledger}]}\nexpect: [{job: sync-ledger-152, state: succeeded}]\n",
			`s.yaml:9:16: expect[0].job: "sync-ledger-152": the run makes 151 jobs, so generated IDs end at N=151; did you mean "sync-ledger-151"?`),
		Entry("a generated ID with leading zeros", "  arrivals: {bursts: [{at: 1s, count: 150, task: sync-ledger}]}\nexpect: [{job: sync-ledger-007, state: succeeded}]\n",
			`s.yaml:9:16: expect[0].job: "sync-ledger-007": generated IDs are TASK-N with N written without leading zeros; did you mean "sync-ledger-7"?`),
	)

	It("accepts a generated ID the run can make, and any N under arrivals at a rate", func() {
		for _, keys := range []string{
			"  arrivals: {bursts: [{at: 1s, count: 150, task: sync-ledger}]}\nexpect: [{job: sync-ledger-151, state: succeeded}]\n",
			"  arrivals: {rate: 1/s}\nexpect: [{job: sync-ledger-100000, state: succeeded}]\n",
		} {
			_, err := scenarios.LoadFS(mapFS("s.yaml", ledgerScenario+keys), "s.yaml")
			Expect(err).NotTo(HaveOccurred(), keys)
		}
	})

	It("accepts a drained fallback queue behind a breaker, and a drained queue read at the run's end", func() {
		_, err := scenarios.LoadFS(mapFS("s.yaml", ledgerScenario+"system: {breakers: [{dependency: ledger-api}]}\nexpect: [{drainedBy: 1m, queue: fallback}]\n"), "s.yaml")
		Expect(err).NotTo(HaveOccurred())
		l, err := scenarios.LoadFS(mapFS("s.yaml", ledgerScenario+"expect: [{drainedBy: 2m}]\n"), "s.yaml")
		Expect(err).NotTo(HaveOccurred())
		res, err := sim.Run(context.Background(), l.Scenario)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Expectations).To(HaveLen(1))
		Expect(res.Expectations[0].Verdict).To(Equal(reports.Passed), res.Expectations[0].Actual)
	})
})
