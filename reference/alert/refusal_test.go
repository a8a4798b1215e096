package alert_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/failure"
)

// pageDeadline is the simulator's default page deadline
// (sim.Invariants.PageWithin): how soon a critical failure must reach a
// person.
const pageDeadline = 5 * time.Minute

// firstFiring returns when receiver r first accepted fingerprint f firing,
// and how many times it did.
func (h *harness) firstFiring(r, f string) (at time.Duration, n int) {
	for _, d := range h.sinks[r].deliveries() {
		for _, x := range d.N.Alerts {
			if x.Fingerprint == f && x.Status == alert.Firing {
				if n == 0 {
					at = d.At
				}
				n++
			}
		}
	}
	return at, n
}

var _ = Describe("A receiver that refuses (issue 11, item 4)", func() {
	auth := fp("auth", "critical", "gw")
	refused := "alertname=receiver-misconfigured,receiver=pager"

	// Each entry: the pager's own configuration, the receivers, the one
	// expected to stand in for it, and whether the pager refuses once or
	// always.
	DescribeTable("never delays a critical page past the page deadline, and tells a receiver that works",
		func(pager alert.Receiver, receivers []string, standIn string, always bool) {
			h := newHarness(alert.Config{
				Receivers:       []alert.Receiver{pager},
				Routes:          []alert.Route{{Receiver: "pager", Severities: []classify.Severity{classify.High}}},
				DefaultReceiver: receivers[len(receivers)-1],
			}, receivers...)
			refusals := 0
			h.sinks["pager"].answer = func(alert.Notification) error {
				if always || refusals == 0 {
					refusals++
					return &failure.HTTPError{Code: 403, Body: "invalid_token"}
				}
				return nil
			}
			h.at(0)
			h.a.JobFailed(jobFailure("auth", "gw", classify.Critical, classify.High, "a1"))
			h.at(20 * mn)

			at, n := h.firstFiring(standIn, auth)
			Expect(n).To(Equal(1), "the page reaches %s, once", standIn)
			Expect(at).To(BeNumerically("<=", pageDeadline))
			Expect(at).To(Equal(30*s), "at once: the group wait and nothing more")

			at, n = h.firstFiring(standIn, refused)
			Expect(n).To(Equal(1), "the refusal is told to %s", standIn)
			Expect(at).To(Equal(30*s), "at once")
			var summaries []string
			for _, d := range h.sinks[standIn].deliveries() {
				for _, x := range d.N.Alerts {
					if x.Fingerprint == refused && x.Status == alert.Firing {
						summaries = append(summaries, x.Summary)
					}
				}
			}
			Expect(summaries).To(ConsistOf(ContainSubstring("receiver pager refuses notifications (HTTP 403 invalid_token)")))
			_, n = h.firstFiring("pager", refused)
			Expect(n).To(BeZero(), "never to the receiver that refuses")

			at, n = h.firstFiring("pager", auth)
			if always {
				Expect(n).To(BeZero())
				Expect(h.a.Stats().Held).To(BeNumerically(">", 0), "held for the pager, not dropped")
			} else {
				Expect(n).To(Equal(1), "a pager that refused once takes the page on a quick retry")
				Expect(at).To(BeNumerically("<=", 30*s+alert.DefaultRetryBase))
			}
		},
		Entry("once, with a fallback", alert.Receiver{Name: "pager", Fallback: "ops"}, []string{"pager", "ops", "log"}, "ops", false),
		Entry("always, with a fallback", alert.Receiver{Name: "pager", Fallback: "ops"}, []string{"pager", "ops", "log"}, "ops", true),
		Entry("once, with a secondary", alert.Receiver{Name: "pager", Secondary: "sms"}, []string{"pager", "sms", "log"}, "sms", false),
		Entry("always, with a secondary", alert.Receiver{Name: "pager", Secondary: "sms"}, []string{"pager", "sms", "log"}, "sms", true),
		Entry("once, with neither: the default receiver", alert.Receiver{Name: "pager"}, []string{"pager", "log"}, "log", false),
		Entry("always, with neither: the default receiver", alert.Receiver{Name: "pager"}, []string{"pager", "log"}, "log", true),
	)

	It("retries a lone receiver that refused once soon enough to page within the deadline", func() {
		h := newHarness(alert.Config{})
		once := true
		h.sinks["pager"].answer = func(alert.Notification) error {
			if once {
				once = false
				return &failure.HTTPError{Code: 403}
			}
			return nil
		}
		h.at(0)
		h.a.JobFailed(jobFailure("auth", "gw", classify.Critical, classify.High, "a1"))
		h.at(20 * mn)
		at, n := h.firstFiring("pager", auth)
		Expect(n).To(Equal(1))
		Expect(at).To(BeNumerically("<=", 30*s+alert.DefaultRetryBase))
	})

	It("backs off from a receiver that keeps refusing up to HeldRetry, not hammering it", func() {
		h := newHarness(alert.Config{})
		h.sinks["pager"].answer = func(alert.Notification) error { return &failure.HTTPError{Code: 403} }
		h.at(0)
		h.a.JobFailed(jobFailure("auth", "gw", classify.Critical, classify.High, "a1"))
		h.at(time.Hour)
		// Full-jitter backoff from RetryBase, doubling, capped at HeldRetry:
		// at least one try per HeldRetry, and nothing like one a second.
		Expect(h.sinks["pager"].calls).To(And(BeNumerically(">=", int(time.Hour/alert.DefaultHeldRetry)), BeNumerically("<=", 60)))
	})
})

var _ = Describe("One page per receiver (issue 11, item 5)", func() {
	auth := fp("auth", "critical", "gw")

	It("pages a receiver once per fingerprint per repeat interval, however many routes take the alert to it", func() {
		h := newHarness(alert.Config{
			DefaultReceiver: "log",
			Routes: []alert.Route{
				{Receiver: "pager", Severities: []classify.Severity{classify.High}, Timing: alert.Timing{GroupWait: 10 * s}, Continue: true},
				{Receiver: "pager", Match: alert.Labels{"dependency": "gw"}, GroupBy: []string{alert.LabelTask}},
			},
		}, "log", "pager")
		for t := time.Duration(0); t <= 20*mn; t += 10 * s {
			h.at(t)
			h.a.JobFailed(jobFailure("auth", "gw", classify.Critical, classify.High, "a"))
		}
		h.at(30 * mn)
		at, n := h.firstFiring("pager", auth)
		Expect(n).To(Equal(1), "the first route's copy was sent at 10s; the second route's group must not page again")
		Expect(at).To(Equal(10 * s))
	})

	It("does not page a receiver again with a copy of a page it already took by its own route", func() {
		h := newHarness(alert.Config{
			Receivers:       []alert.Receiver{{Name: "pager", Secondary: "team"}},
			DefaultReceiver: "log",
			Routes: []alert.Route{
				{Receiver: "team", Timing: alert.Timing{GroupWait: 5 * s}, Continue: true},
				{Receiver: "pager", Severities: []classify.Severity{classify.High}},
			},
		}, "log", "pager", "team")
		h.sinks["pager"].answer = func(alert.Notification) error { return &failure.HTTPError{Code: 503} }
		h.at(0)
		h.a.JobFailed(jobFailure("auth", "gw", classify.Critical, classify.High, "a"))
		h.at(4 * mn) // past FailoverAfter: the pager's page is copied to team
		at, n := h.firstFiring("team", auth)
		Expect(n).To(Equal(1), "team took it at 5s by its own route; the secondary's copy is not a second page")
		Expect(at).To(Equal(5 * s))
	})
})
