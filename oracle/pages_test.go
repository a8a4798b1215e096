package oracle_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/classify"
)

// The pages checker, on a clock of its own: the engine and the ledger's
// judge both feed it.
var _ = Describe("The pages checker (oracle.Pages)", func() {
	var (
		now   time.Duration
		due   []func()
		dueAt []time.Duration
		led   *oracle.Ledger
		pg    *oracle.Pages
	)
	at := func(d time.Duration, f func()) { dueAt, due = append(dueAt, d), append(due, f) }
	runUntil := func(t time.Duration) {
		for i, d := range dueAt {
			if d <= t && due[i] != nil {
				now = d
				due[i]()
				due[i] = nil
			}
		}
		now = t
	}
	page := func(fp string, sev classify.Severity) alert.Notification {
		return alert.Notification{Alerts: []alert.Alert{{Fingerprint: fp, Severity: sev, Status: alert.Firing, Summary: "s"}}}
	}
	BeforeEach(func() {
		now, due, dueAt = 0, nil, nil
		led = oracle.NewLedger(1, time.Unix(0, 0), func() time.Duration { return now }, 3, nil)
		pg = oracle.NewPages(led, time.Minute, 10*time.Minute, at)
	})

	It("fails a critical failure no page followed within the deadline, naming the job and the fingerprint", func() {
		pg.Critical(5*time.Second, "pay-1", "fp-auth")
		runUntil(2 * time.Minute)
		Expect(led.ViolationCount(oracle.InvCriticalPaged)).To(BeEquivalentTo(1))
		Expect(led.Violations()[0].Message).To(ContainSubstring(`job pay-1 failed critically at +5s, and no high-severity alert for fingerprint "fp-auth" reached a receiver within 1m0s`))
	})

	It("passes one paged in time, reads when, and fails a second page of it within the repeat interval", func() {
		pg.Critical(5*time.Second, "pay-1", "fp-auth")
		pg.Deliver(35*time.Second, "on-call", page("fp-auth", classify.High))
		runUntil(2 * time.Minute)
		Expect(led.ViolationCount(oracle.InvCriticalPaged)).To(BeZero())
		var o oracle.Observation
		pg.Observe(&o)
		Expect(o.FirstCriticalPage - o.FirstCritical).To(Equal(30 * time.Second))
		Expect(pg.Alerts.Pages).To(BeEquivalentTo(1))

		pg.Deliver(3*time.Minute, "on-call", page("fp-auth", classify.High))
		Expect(led.ViolationCount(oracle.InvOnePage)).To(BeEquivalentTo(1))
		pg.Deliver(14*time.Minute, "on-call", page("fp-auth", classify.High))
		Expect(led.ViolationCount(oracle.InvOnePage)).To(BeEquivalentTo(1), "after the repeat interval, a page again is due")
	})

	It("asks nothing when the deadline is off, and counts a refused send", func() {
		pg = oracle.NewPages(led, -1, 10*time.Minute, at)
		pg.Critical(5*time.Second, "pay-1", "fp-auth")
		runUntil(time.Hour)
		Expect(led.ViolationCount(oracle.InvCriticalPaged)).To(BeZero())
		pg.Refused()
		Expect(pg.Alerts.Rejected).To(BeEquivalentTo(1))
	})
})
