package scenarios_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/scenarios"
)

// twoTasks is a scenario whose tasks call two dependencies.
const twoTasks = scenarioHead + "workload:\n  tasks: [{name: charge, dependency: gateway}, {name: receipt, dependency: smtp}]\n  arrivals: {rate: 1/s}\n"

var _ = Describe("Faults aimed at tasks and attempts, and calls per window (issue 15)", func() {
	DescribeTable("are refused at load with the file's position, and a suggestion where one is near",
		func(keys string, lines ...string) {
			_, err := scenarios.LoadFS(mapFS("s.yaml", keys), "s.yaml")
			Expect(err).To(reportExactly(lines...))
		},
		Entry("an unknown task, and one that does not call the fault's dependency",
			twoTasks+"faults: [{name: f, target: dependency/gateway, model: outage, schedule: {tasks: [chrage, receipt, charge]}}]\n",
			`s.yaml:8:82: faults[0].schedule.tasks[0]: "chrage" is not a task of the workload (the tasks are charge, receipt), so the fault never fires for it; did you mean "charge"?`,
			`s.yaml:8:90: faults[0].schedule.tasks[1]: task "receipt" calls "smtp", not "gateway", so the fault never fires for it`),
		Entry("a repeated task, an attempt below 1 and a repeated one",
			twoTasks+"faults: [{name: f, target: dependency/gateway, model: outage, schedule: {tasks: [charge, charge], attempts: [0, 2, 2]}}]\n",
			`s.yaml:8:90: faults[0].schedule.tasks[1]: duplicate task "charge"`,
			`s.yaml:8:110: faults[0].schedule.attempts[0]: must be ≥ 1, got 0; 1 is a job's first attempt, 2 its first retry`,
			`s.yaml:8:116: faults[0].schedule.attempts[2]: duplicate attempt 2`),
		Entry("tasks and attempts on a target no job calls",
			twoTasks+"faults: [{name: f, target: worker/w1, model: worker-crash, schedule: {tasks: [charge], attempts: [1]}}]\n",
			`s.yaml:8:78: faults[0].schedule.tasks: worker faults cannot be limited to tasks: no job makes their calls; only dependency and dlq-store faults take tasks; use from/until to aim it`,
			`s.yaml:8:98: faults[0].schedule.attempts: worker faults cannot be limited to attempts: no job makes their calls; only dependency and dlq-store faults take attempts; use from/until to aim it`),
		Entry("calls without a window, a span that ends before it begins, a misspelt count",
			twoTasks+"expect: [{count: calls, equals: 1}, {count: calls, dependency: smtp, from: 30s, until: 10s, window: 1s, atMost: 3}, {count: cals, dependency: smtp, window: 1s, atMost: 3}]\n",
			`s.yaml:8:18: expect[0].count: count calls reads the calls made to a dependency per window: add dependency, from and window (e.g. window: 1s)`,
			`s.yaml:8:88: expect[1].until: expected an offset after from (30s), got 10s`,
			`s.yaml:8:125: expect[2].count: expected one of created, succeeded, dead-lettered, dead-letters, requeued, retried, in-fallback, diverted, pending, pages, notifications, lost, fenced, held, evicted, charges, refused, lease-expiries, alerts-refused, budget-delayed, budget-exceeded, alerts, got "cals"; did you mean "calls"?`),
	)

	It("carries tasks, attempts and the calls per window to the simulator, and writes them back", func() {
		text := twoTasks + "faults: [{name: f, target: dependency/gateway, model: outage, schedule: {tasks: [charge], attempts: [1, 3]}}, {name: g, target: dlq-store, model: store-outage, schedule: {attempts: [2]}}]\n" +
			"expect: [{count: calls, dependency: gateway, from: 10s, until: 40s, window: 1s, atMost: 5}]\n"
		l, err := scenarios.LoadFS(mapFS("s.yaml", text), "s.yaml")
		Expect(err).NotTo(HaveOccurred())
		Expect(l.Scenario.Faults[0].Schedule).To(Equal(faults.Schedule{Tasks: []string{"charge"}, Attempts: []int{1, 3}}))
		Expect(l.Scenario.Faults[1].Schedule).To(Equal(faults.Schedule{Attempts: []int{2}}))
		Expect(l.Scenario.Expect).To(Equal([]scenarios.Expectation{scenarios.RetryRate{Dependency: "gateway", From: 10 * time.Second, Until: 40 * time.Second, Window: time.Second, Op: scenarios.AtMost, N: 5, Calls: true}}))
		out, err := scenarios.Marshal(l.Document)
		Expect(err).NotTo(HaveOccurred())
		again, err := scenarios.Parse("s.yaml", out)
		Expect(err).NotTo(HaveOccurred())
		Expect(again.Faults[0].Schedule.Tasks).To(Equal([]string{"charge"}))
		Expect(again.Faults[0].Schedule.Attempts).To(Equal([]int{1, 3}))
		Expect(again.Expect[0].Until).To(Equal(scenarios.Duration(40 * time.Second)))
	})
})
