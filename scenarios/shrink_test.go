package scenarios_test

import (
	"context"
	"strings"
	"testing/fstest"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
	"github.com/faultline/faultline/sim"
)

// fiveFaults fails only because of one of its five fault windows: the
// revoked key dead-letters a charge, and the scenario expects none.
const fiveFaults = `apiVersion: faultline/v1
kind: Scenario
metadata:
  name: five-faults
  description: one of five fault windows breaks the expectation
seed: 3
duration: 5m
workload:
  tasks:
    - {name: charge, dependency: payment-gateway, idempotencyKey: true, service: 50ms}
  arrivals: {kind: constant, rate: 5/s, until: 4m}
dependencies:
  - {name: payment-gateway, payment: true}
system:
  retry: {maxAttempts: 10, baseDelay: 100ms, maxDelay: 2s}
faults:
  - name: slow-1
    target: dependency/payment-gateway
    model: latency
    params: {distribution: constant, mean: 200ms}
    schedule: {from: 10s, until: 40s}
  - name: blip-503
    target: dependency/payment-gateway
    model: http-status
    params: {code: 503}
    schedule: {from: 50s, until: 60s, probability: 0.3}
  - name: revoked-key
    target: dependency/payment-gateway
    model: auth-failure
    schedule: {from: 90s, until: 150s}
  - name: slow-2
    target: dependency/payment-gateway
    model: latency
    params: {distribution: constant, mean: 100ms}
    schedule: {from: 160s, until: 200s}
  - name: rate-limited
    target: dependency/payment-gateway
    model: rate-limit
    params: {retryAfter: 1s}
    schedule: {from: 210s, until: 220s, probability: 0.2}
expect:
  - count: lost
    equals: 0
  - count: dead-lettered
    equals: 0
`

var _ = Describe("Shrink", func() {
	run := func(ctx context.Context, sc scenarios.Scenario, seed uint64) (*reports.Result, error) {
		return sim.Run(ctx, sc, sim.WithSeed(seed))
	}

	It("never presents a fault that did not hit as the cause: it is dropped from the shrunk schedule", func() {
		// A sixth fault, on after the last arrival: nothing calls the
		// gateway while it is on.
		idle := strings.Replace(fiveFaults, "expect:\n", `  - name: late-outage
    target: dependency/payment-gateway
    model: outage
    schedule: {from: 290s}
expect:
`, 1)
		l, err := scenarios.LoadFS(fstest.MapFS{"six.yaml": {Data: []byte(idle)}}, "six.yaml")
		Expect(err).NotTo(HaveOccurred())
		for _, budget := range []int{1, 200} {
			res, err := scenarios.Shrink(context.Background(), l, 3, run, budget)
			Expect(err).NotTo(HaveOccurred())
			Expect(res.Signature).To(Equal("expectation dead-lettered = 0"))
			Expect(res.Document.Faults).NotTo(ContainElement(HaveField("Name", "late-outage")), "budget %d", budget)
			for _, f := range res.Result.Faults {
				Expect(f.Hits).To(BeNumerically(">", 0), "fault %s in the shrunk run (budget %d)", f.Name, budget)
			}
			if budget == 1 {
				// The budget was spent on the original run: only the
				// clean-up removed the idle fault, in one more run.
				Expect(res.Exhausted).To(BeTrue())
				Expect(res.Idle).To(Equal([]string{"late-outage"}))
				Expect(res.Document.Faults).To(HaveLen(5))
				Expect(res.Runs).To(Equal(2))
			}
		}
	})

	It("shrinks five fault windows to the one that causes the failure", func() {
		l, err := scenarios.LoadFS(fstest.MapFS{"five.yaml": {Data: []byte(fiveFaults)}}, "five.yaml")
		Expect(err).NotTo(HaveOccurred())
		res, err := scenarios.Shrink(context.Background(), l, 3, run, 200)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Signature).To(Equal("expectation dead-lettered = 0"))
		Expect(res.Document.Faults).To(HaveLen(1))
		f := res.Document.Faults[0]
		Expect(f.Name).To(Equal("revoked-key"))
		Expect(res.Removed).To(Equal(4))
		Expect(res.Exhausted).To(BeFalse())
		// Its window shrank too: one call is enough to fail.
		Expect(f.Schedule.Until - f.Schedule.From).To(BeNumerically("<", 60e9))
		Expect(res.Result.Failed()).To(BeTrue())

		// The printed file loads and fails the same way.
		b, err := scenarios.Marshal(res.Document)
		Expect(err).NotTo(HaveOccurred())
		l2, err := scenarios.LoadFS(fstest.MapFS{"s.yaml": {Data: b}}, "s.yaml")
		Expect(err).NotTo(HaveOccurred())
		again, err := sim.Run(context.Background(), l2.Scenario, sim.WithSeed(3))
		Expect(err).NotTo(HaveOccurred())
		Expect(scenarios.Signature(again)).To(Equal(res.Signature))
	})

	It("says when there is nothing to shrink", func() {
		l, err := scenarios.LoadFS(fstest.MapFS{"five.yaml": {Data: []byte(fiveFaults)}}, "five.yaml")
		Expect(err).NotTo(HaveOccurred())
		l.Document.Expect = l.Document.Expect[:1]
		l.Scenario.Expect = l.Scenario.Expect[:1]
		_, err = scenarios.Shrink(context.Background(), l, 3, run, 200)
		Expect(err).To(MatchError(scenarios.ErrPasses))
	})
})
