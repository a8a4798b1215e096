package scenarios_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/scenarios"
)

var _ = Describe("Worker faults aimed at a state: schedule.when (issue 24)", func() {
	DescribeTable("are refused at load with the file's position, what was expected, and a suggestion where one is near",
		func(keys string, lines ...string) {
			_, err := scenarios.LoadFS(mapFS("s.yaml", keys), "s.yaml")
			Expect(err).To(reportExactly(lines...))
		},
		Entry("a state other than mid-call",
			twoTasks+"faults: [{name: f, target: worker/w1, model: worker-stall, schedule: {until: 30s, when: {state: mid-cal, dependency: gateway}}}]\n",
			`s.yaml:8:97: faults[0].schedule.when.state: unknown state "mid-cal"; did you mean "mid-call"? (one of mid-call)`),
		Entry("a dependency no task calls and none listed",
			twoTasks+"faults: [{name: f, target: worker/w1, model: worker-crash, schedule: {until: 30s, when: {state: mid-call, dependency: gatewy}}}]\n",
			`s.yaml:8:119: faults[0].schedule.when.dependency: "gatewy" is not a dependency (the dependencies are gateway, smtp), so no worker is ever mid-call at it and the fault never strikes; did you mean "gateway"?`),
		Entry("a state and a dependency left out",
			twoTasks+"faults: [{name: f, target: worker, model: worker-stall, schedule: {until: 30s, when: {}}}]\n",
			`s.yaml:8:80: faults[0].schedule.when.state: required; one of mid-call`,
			`s.yaml:8:80: faults[0].schedule.when.dependency: required; the dependency the worker's call is in flight at, e.g. payment-gateway`),
		Entry("when on a target that is no worker",
			twoTasks+"faults: [{name: f, target: dependency/gateway, model: outage, schedule: {when: {state: mid-call, dependency: gateway}}}]\n",
			`s.yaml:8:80: faults[0].schedule.when: dependency faults cannot wait for a state: when aims a worker fault at a worker's state (a call in flight), and a dependency is no worker; only worker faults take when; use from/until (and jobs, tasks or attempts on a dependency) to aim it`),
		Entry("a misspelt key of when",
			twoTasks+"faults: [{name: f, target: worker/w1, model: worker-stall, schedule: {when: {state: mid-call, dependncy: gateway}}}]\n",
			`s.yaml:8:95: unknown key "dependncy"; did you mean "dependency"?`),
	)

	It("carries when to the simulator, and writes it back", func() {
		text := twoTasks + "dependencies: [{name: ledger}]\n" +
			"faults: [{name: f, target: worker/w1, model: worker-stall, schedule: {from: 10s, until: 30s, when: {state: mid-call, dependency: smtp}}}, " +
			"{name: g, target: worker, model: graceful-stop, schedule: {until: 30s, when: {state: mid-call, dependency: ledger}}}]\n"
		_, err := scenarios.LoadFS(mapFS("s.yaml", text), "s.yaml")
		Expect(err).To(MatchError(ContainSubstring(`no task calls dependency "ledger"`)), "a listed dependency no task calls is refused on its own")

		text = twoTasks + "faults: [{name: f, target: worker/w1, model: worker-stall, schedule: {from: 10s, until: 30s, when: {state: mid-call, dependency: smtp}}}]\n"
		l, err := scenarios.LoadFS(mapFS("s.yaml", text), "s.yaml")
		Expect(err).NotTo(HaveOccurred())
		Expect(l.Scenario.Faults[0].Schedule).To(Equal(faults.Schedule{From: 10 * time.Second, Until: 30 * time.Second,
			When: &faults.When{State: faults.MidCall, Dependency: "smtp"}}))
		out, err := scenarios.Marshal(l.Document)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(out)).To(ContainSubstring("when:"))
		again, err := scenarios.Parse("s.yaml", out)
		Expect(err).NotTo(HaveOccurred())
		Expect(again.Faults[0].Schedule.When).To(Equal(&scenarios.When{State: "mid-call", Dependency: "smtp"}))
	})

	It("is what the built-ins worker-crash and stale-answer-fenced aim their freezes with", func() {
		for _, name := range []string{"worker-crash", "stale-answer-fenced"} {
			l, err := scenarios.LoadBuiltin(name)
			Expect(err).NotTo(HaveOccurred())
			var when *faults.When
			for _, f := range l.Scenario.Faults {
				if f.Name == "gc-pause" {
					when = f.Schedule.When
				}
			}
			Expect(when).NotTo(BeNil(), name)
			Expect(when.State).To(Equal(faults.MidCall), name)
		}
	})
})
