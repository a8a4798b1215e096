package sim_test

import (
	"fmt"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
)

// Specs for what a page is and when one must arrive (issue 11, items 4
// and 13).
var _ = Describe("Pages", func() {
	const (
		authPage = "alertname=job-failed,task=charge,class=critical,dependency=payment-gateway"
		refused  = "alertname=receiver-misconfigured,receiver=on-call"
	)
	// pagesTo counts the pages of fingerprint fp receiver accepted, and
	// returns the first one's offset.
	pagesTo := func(res *reports.Result, receiver, fp string) (n int, first time.Duration) {
		for _, d := range res.Alerts.Deliveries {
			if d.Receiver == receiver && d.Fingerprint == fp && d.Status == "firing" && d.Severity == "high" {
				if n == 0 {
					first = time.Duration(d.AtMs) * time.Millisecond
				}
				n++
			}
		}
		return n, first
	}

	DescribeTable("a pager that refuses with a 403 does not hold a critical page past the page deadline, and its refusal is told to a receiver that works",
		func(schedule faults.Schedule, pagerLater bool) {
			sc := payments() // on-call takes the high-severity alerts, team the rest; pay-auth fails critically at 3m
			sc.Faults = append(sc.Faults, faults.Fault{Name: "pager-403", Target: faults.Target{Kind: faults.AlertSink, Name: "on-call"},
				Model: faults.AuthFailure{Code: 403}, Schedule: schedule})
			sc.Expect = nil
			res := run(sc)
			failedAt := 3*time.Minute + 40*time.Millisecond // pay-auth's one attempt
			Expect(res.Violations).To(BeEmpty(), "the default page deadline (5m) is an invariant")

			n, at := pagesTo(res, "team", authPage)
			Expect(n).To(Equal(1), "the default receiver stands in for the refusing pager")
			Expect(at).To(BeNumerically("<=", failedAt+5*time.Minute), "within the default page deadline")
			Expect(at).To(Equal(failedAt+30*time.Second), "at once: the group wait, nothing more")

			n, at = pagesTo(res, "team", refused)
			Expect(n).To(Equal(1), "the refusal is told")
			Expect(at).To(Equal(failedAt+30*time.Second), "at once")
			n, _ = pagesTo(res, "on-call", refused)
			Expect(n).To(BeZero(), "never to the receiver that refuses")

			n, at = pagesTo(res, "on-call", authPage)
			if pagerLater {
				Expect(n).To(Equal(1), "a pager that refused once gets the page on a quick retry")
				Expect(at).To(BeNumerically("<=", failedAt+31*time.Second))
			} else {
				Expect(n).To(BeZero())
			}
		},
		Entry("once", faults.Schedule{From: 3 * time.Minute, FirstCalls: 1}, true),
		Entry("always", faults.Schedule{}, false),
	)

	It("counts one page per firing critical alert a receiver accepted: the run's summary and the pages expectation agree", func() {
		sc := payments()
		// Two critical fingerprints of one dependency at once: one
		// notification carrying two pages.
		sc.Workload.Tasks = append(sc.Workload.Tasks, sc.Workload.Tasks[0])
		sc.Workload.Tasks[2].Name, sc.Workload.Tasks[2].Weight = "refund", 1
		sc.Workload.Jobs = append(sc.Workload.Jobs, scenarios.PlannedJobSpec{At: 3 * time.Minute, ID: "refund-auth", Task: "refund"})
		sc.Faults[2].Schedule.FirstCalls = 2
		sc.Expect = []scenarios.Expectation{scenarios.Count{Metric: scenarios.Pages, Op: scenarios.AtLeast, N: 0}}
		res := run(sc)
		Expect(res.Violations).To(BeEmpty())
		n, _ := pagesTo(res, "on-call", authPage)
		m, _ := pagesTo(res, "on-call", "alertname=job-failed,task=refund,class=critical,dependency=payment-gateway")
		Expect([]int{n, m}).To(Equal([]int{1, 1}), "both critical alerts paged")
		Expect(res.Expectations[0].Actual).To(Equal(fmt.Sprint(res.Alerts.Pages)))
		var byFP int64
		for _, c := range res.Alerts.PagesByFingerprint {
			byFP += c
		}
		Expect(res.Alerts.Pages).To(Equal(byFP))
	})

	It("agrees on the number of pages in every built-in scenario (the scale built-ins excepted: their lane is scenarios/builtin_test.go, kept out of the race detector's): the summary's, the pages expectation's, the per-fingerprint counts' and the deliveries'", func() {
		for _, b := range scenarios.Builtins() {
			if slices.Contains(b.Tags, "scale") {
				continue
			}
			l, err := scenarios.LoadBuiltin(b.Name)
			Expect(err).NotTo(HaveOccurred())
			sc := l.Scenario
			sc.Expect = []scenarios.Expectation{scenarios.Count{Metric: scenarios.Pages, Op: scenarios.AtLeast, N: 0}}
			res := run(sc)
			Expect(res.Expectations[0].Actual).To(Equal(fmt.Sprint(res.Alerts.Pages)), b.Name)
			var byFP int64
			for _, c := range res.Alerts.PagesByFingerprint {
				byFP += c
			}
			Expect(res.Alerts.Pages).To(Equal(byFP), b.Name)
			if !res.Alerts.Truncated {
				var listed int64
				for _, d := range res.Alerts.Deliveries {
					if d.Status == "firing" && d.Severity == "high" {
						listed++
					}
				}
				Expect(res.Alerts.Pages).To(Equal(listed), b.Name)
			}
		}
	})
})
