package worker_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/degrade"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/failure"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/retry"
	"github.com/faultline/faultline/reference/worker"
)

// The seed document's snippets, each played through the reference
// pipeline on virtual time.
var _ = Describe("The seed's snippets through the pipeline", func() {
	var w *world
	BeforeEach(func() { w = newWorld() })

	It("alerts the critical auth failure and dead-letters it at once ('ALERT: Invalid token (CRITICAL)', 'DLQ: auth after 1 retries'), "+
		"not after 3 retries: bad credentials fail the same way on every attempt, and retrying them only hammers the provider "+
		"(and may lock the account) while a person is needed", func() {
		w.enqueue(newJob("auth-1", "auth", ""))

		o, err := w.attempt("auth-1", fmt.Errorf("refresh session: Invalid token: %w", failure.ErrAuthentication))
		Expect(err).NotTo(HaveOccurred())

		Expect(o.Action).To(Equal(worker.DeadLetter))
		Expect(o.Decision.Reason).To(Equal(retry.CriticalError))
		Expect(o.Verdict.String()).To(Equal("critical/high/auth"))
		e := w.entry("auth-1")
		Expect(e.Job.Attempts).To(Equal(1))
		Expect(e.Reason).To(Equal("critical"))
		Expect(e.Severity()).To(Equal(classify.High))
		Expect(e.History).To(HaveLen(1))
		Expect(e.History[0].Error).To(Equal("refresh session: Invalid token: authentication failed"))
		Expect(e.History[0].ErrorType).To(Equal("*errors.errorString"))
		Expect(e.Changes).To(HaveLen(1), "one status change, the store's")
		Expect(w.deadIDs()).To(Equal([]string{"auth-1"}))

		// The critical alert waits only for its group's GroupWait.
		w.clk.Advance(alert.DefaultGroupWait)
		Expect(pages(w.pager)).To(Equal([]string{"job-failed auth/critical/high"}))
		Expect(pages(w.chat)).To(BeEmpty())
		w.expectConserved(1)
	})

	It("dead-letters a permanent bad-data error without a retry ('DLQ: cleanup after 5 retries'): the seed retried "+
		"its ValueError five times, but bad data fails the same way every time, so those retries only delay the "+
		"person who has to fix the data; it is logged (Low), not paged", func() {
		w.enqueue(newJob("cleanup-1", "cleanup", ""))

		o, err := w.attempt("cleanup-1", fmt.Errorf("parse row 17: Bad data: %w", failure.ErrInvalidInput))
		Expect(err).NotTo(HaveOccurred())

		Expect(o.Action).To(Equal(worker.DeadLetter))
		Expect(o.Decision.Reason).To(Equal(retry.PermanentError))
		Expect(o.Verdict.String()).To(Equal("permanent/low/data"))
		Expect(w.entry("cleanup-1").Job.Attempts).To(Equal(1))
		w.clk.Advance(alert.DefaultGroupWait)
		Expect(pages(w.pager)).To(BeEmpty())
		Expect(pages(w.chat)).To(Equal([]string{"job-failed cleanup/permanent/low"}))
		w.expectConserved(1)
	})

	It("retries a transient error 3 times with growing backoff, then dead-letters it with all 4 failures ('route to DLQ after 3 retries')", func() {
		w.enqueue(newJob("email-1", "email", "smtp"))
		smtpTimeout := &failure.TimeoutError{Op: "SMTP send", After: 30 * time.Second}

		var delays []time.Duration
		for attempt := 1; attempt <= 3; attempt++ {
			o, err := w.attempt("email-1", smtpTimeout)
			Expect(err).NotTo(HaveOccurred())
			Expect(o.Action).To(Equal(worker.Retry), "attempt %d", attempt)
			Expect(o.Decision.Reason).To(Equal(retry.BackoffDelay))
			Expect(o.Job.Attempts).To(Equal(attempt))
			Expect(w.led.state("email-1")).To(Equal(disposition.Scheduled))
			delays = append(delays, o.At.Sub(w.now()))
			w.untilDue(o)
		}
		// Full jitter under a ceiling that doubles: 1s, 2s, 4s.
		for i, d := range delays {
			Expect(d).To(BeNumerically("<=", retry.Backoff(retry.Config{}, i)), "retry %d", i+1)
		}

		o, err := w.attempt("email-1", smtpTimeout)
		Expect(err).NotTo(HaveOccurred())
		Expect(o.Action).To(Equal(worker.DeadLetter))
		Expect(o.Decision.Reason).To(Equal(retry.ExhaustedAttempts))

		e := w.entry("email-1")
		Expect(e.Job.Attempts).To(Equal(4))
		Expect(e.Severity()).To(Equal(classify.Medium))
		Expect(e.History).To(HaveLen(4))
		for i, f := range e.History {
			Expect(f.Attempt).To(Equal(i + 1))
			Expect(f.ErrorType).To(Equal("*failure.TimeoutError"))
			Expect(f.Verdict.Class).To(Equal(classify.Transient))
		}
		Expect(e.History[0].At).To(Equal(t0), "the first failure, two retries before the death")
		Expect(e.LastFailedAt).To(Equal(w.now()))
		Expect(w.p.History().Failures(context.Background(), "email-1")).To(BeEmpty(), "the history is in the entry now")
		Expect(w.deadIDs()).To(Equal([]string{"email-1"}))
		Expect(w.errorCalls()).To(HaveLen(4))
		w.expectConserved(1)
	})

	Describe("a payment gateway timeout (the challenge's 'gateway timeout=transient'): the charge may have gone through", func() {
		timeout := &failure.TimeoutError{Op: "POST /v1/charges", After: 30 * time.Second}
		// One job's retries alone must not open the gateway's breaker here.
		BeforeEach(func() { w = newWorld(func(c *worldConfig) { c.breaker.ConsecutiveFailures = 10 }) })

		It("is retried when the job carries an idempotency key recorded before its first attempt, "+
			"the key unchanged on every attempt, in the DLQ entry and after a requeue", func() {
			w.enqueue(paymentJob("pay-1", true))
			for attempt := 1; attempt <= 3; attempt++ {
				o, err := w.attempt("pay-1", timeout)
				Expect(err).NotTo(HaveOccurred())
				Expect(o.Action).To(Equal(worker.Retry))
				Expect(o.Verdict.Class).To(Equal(classify.Indeterminate))
				Expect(o.Job.IdempotencyKey).To(Equal("idem-pay-1"))
				w.untilDue(o)
			}
			o, err := w.attempt("pay-1", timeout)
			Expect(err).NotTo(HaveOccurred())
			Expect(o.Action).To(Equal(worker.DeadLetter))
			Expect(w.entry("pay-1").Job.IdempotencyKey).To(Equal("idem-pay-1"))

			out, err := w.st.Requeue(w.ctx, "pay-1", dlq.RequeueOptions{Budget: dlq.OneMoreAttempt, By: "ops"}, w.now())
			Expect(err).NotTo(HaveOccurred())
			Expect(out).To(Equal(dlq.OutcomeRequeued))
			j, _ := w.lease(job.DefaultQueue, "pay-1")
			Expect(j.IdempotencyKey).To(Equal("idem-pay-1"))
			Expect(j.KeyRecordedAt).To(Equal(t0.Add(-time.Minute)))
		})

		It("is dead-lettered at once without a key: a retry might charge the card twice", func() {
			w.enqueue(paymentJob("pay-2", false))
			o, err := w.attempt("pay-2", timeout)
			Expect(err).NotTo(HaveOccurred())
			Expect(o.Action).To(Equal(worker.DeadLetter))
			Expect(o.Decision.Reason).To(Equal(retry.IndeterminateWithoutKey))
			Expect(w.entry("pay-2").Reason).To(Equal("indeterminate-without-key"))
		})

		It("is dead-lettered when the key came after the first attempt: it cannot protect the charge already sent", func() {
			j := paymentJob("pay-3", false)
			j.FirstAttemptAt = t0.Add(-time.Hour)
			j.Attempts = 1
			j.IdempotencyKey = "added-later"
			w.enqueue(j)
			o, err := w.attempt("pay-3", timeout)
			Expect(err).NotTo(HaveOccurred())
			Expect(o.Decision.Reason).To(Equal(retry.IndeterminateWithoutKey))
			Expect(o.Job.KeyRecordedAt).To(BeZero(), "the core stamps a key only on the first attempt")
		})

		It("stamps a key that came without a time on the first attempt, so it protects the retries", func() {
			j := paymentJob("pay-4", false)
			j.IdempotencyKey = "idem-pay-4"
			w.enqueue(j)
			o, err := w.attempt("pay-4", timeout)
			Expect(err).NotTo(HaveOccurred())
			Expect(o.Action).To(Equal(worker.Retry))
			Expect(o.Job.KeyRecordedAt).To(Equal(t0))
			Expect(o.Job.FirstAttemptAt).To(Equal(t0))
		})
	})

	It("falls back to the batch queue while the primary's breaker is open, and drains it back when the primary recovers "+
		"('Primary: 0 processed', 'Fallback: 2 queued'; the challenge's 'fallback to batch processing on primary failure')", func() {
		unavailable := &failure.HTTPError{Code: http.StatusServiceUnavailable}
		for _, id := range []string{"p0", "p1", "f0", "f1", "f2", "p2", "p3"} {
			w.enqueue(paymentJob(id, true))
		}
		for _, id := range []string{"p0", "p1"} {
			o, err := w.attempt(id, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(o.Action).To(Equal(worker.Succeed))
		}
		// The primary goes down: three failures in a row open its breaker.
		for _, id := range []string{"f0", "f1", "f2"} {
			o, err := w.attempt(id, unavailable)
			Expect(err).NotTo(HaveOccurred())
			Expect(o.Action).To(Equal(worker.Retry))
		}
		Expect(w.breaker.State()).To(Equal(degrade.Open))

		for _, id := range []string{"p2", "p3"} {
			o, err := w.attempt(id, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(o.Action).To(Equal(worker.Divert))
			Expect(o.DivertReason).To(MatchError(degrade.ErrOpen))
			Expect(o.Job.Attempts).To(BeZero(), "a diverted job made no attempt")
			Expect(o.Job.FirstAttemptAt).To(BeZero())
			Expect(w.led.state(id)).To(Equal(disposition.Fallback))
		}
		w.clk.Advance(alert.DefaultGroupWait)
		Expect(pages(w.pager)).To(ContainElement(HavePrefix("breaker-open")))

		// The open duration elapses; one DrainInterval later the fallback
		// sends p2 back as the half-open breaker's probe.
		w.clk.RunUntil(w.breaker.OpenUntil())
		Expect(w.breaker.State()).To(Equal(degrade.HalfOpen))
		w.clk.Advance(time.Second)
		Expect(w.led.state("p2")).To(Equal(disposition.Queued))
		// The due retries of f0..f2 are forwarded behind it.
		_, err := w.st.ForwardDue(w.ctx, w.now(), 100)
		Expect(err).NotTo(HaveOccurred())
		o, err := w.attempt("p2", nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(o.Action).To(Equal(worker.Succeed))
		Expect(w.breaker.State()).To(Equal(degrade.Closed))

		// Closed: the rest of the batch queue drains one interval later.
		w.clk.Advance(time.Second)
		Expect(w.led.state("p3")).To(Equal(disposition.Queued))
		for {
			j, l, ok, err := w.st.Dequeue(w.ctx, job.DefaultQueue, w.now(), 30*time.Second)
			Expect(err).NotTo(HaveOccurred())
			if !ok {
				break
			}
			a, started, err := w.p.Start(w.ctx, j, l, w.now())
			Expect(err).NotTo(HaveOccurred())
			Expect(started).To(BeTrue())
			_, err = w.p.Finish(w.ctx, a, l, nil, w.now())
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(w.led.counts()).To(Equal(map[disposition.State]int{disposition.Succeeded: 7}))
		w.expectConserved(7)
	})

	It("ends the mini project with DLQ stats LOW 1, MEDIUM 1, HIGH 1 and 'Reprocessed 1 medium-severity jobs'; "+
		"unlike the seed, the timeout is retried before it is dead-lettered", func() {
		w.enqueue(newJob("email", "email", "smtp"), newJob("report", "report", ""), newJob("auth", "auth", ""))
		smtp := &failure.TimeoutError{Op: "SMTP timeout", After: time.Minute}
		for attempt := 1; ; attempt++ {
			o, err := w.attempt("email", smtp)
			Expect(err).NotTo(HaveOccurred())
			if o.Action == worker.DeadLetter {
				Expect(attempt).To(Equal(4))
				break
			}
			w.untilDue(o)
			// The other jobs wait behind the retry on the same queue; run
			// them once email is first in line again.
			if attempt == 1 {
				for _, x := range []struct {
					id  string
					err error
				}{
					{"report", fmt.Errorf("Bad data format: %w", failure.ErrInvalidInput)},
					{"auth", fmt.Errorf("open /etc/keys: Access denied: %w", fs.ErrPermission)},
				} {
					o, err := w.attempt(x.id, x.err)
					Expect(err).NotTo(HaveOccurred())
					Expect(o.Action).To(Equal(worker.DeadLetter))
				}
			}
		}
		st, err := w.st.Stats(w.ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.BySeverity).To(Equal(map[string]int{"low": 1, "medium": 1, "high": 1}))

		w.clk.Advance(time.Second)
		res, err := w.st.RequeueMatching(w.ctx, dlq.Filter{Severities: []classify.Severity{classify.Medium}},
			dlq.RequeueOptions{Budget: dlq.ResetAttempts, By: "ops"}, w.now(), false)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Requeued).To(Equal(1))
		Expect(w.led.state("email")).To(Equal(disposition.Queued))
		w.clk.Advance(alert.DefaultGroupWait)
		Expect(pages(w.pager)).To(Equal([]string{"job-failed auth/critical/high"}))
		w.expectConserved(3)
	})
})

var _ = Describe("The core", func() {
	It("refuses a job without an ID or a task", func() {
		w := newWorld()
		_, err := w.core.Begin(job.Job{Task: "x"}, t0)
		Expect(err).To(MatchError(job.ErrInvalid))
		_, err = w.core.Begin(job.Job{ID: "x"}, t0)
		Expect(err).To(MatchError(job.ErrInvalid))
	})

	It("releases a job stopped by a shutdown without counting the attempt, recording it or alerting", func() {
		w := newWorld()
		w.enqueue(newJob("r1", "email", "smtp"))
		j, l := w.lease(job.DefaultQueue, "r1")
		a, ok, err := w.p.Start(w.ctx, j, l, w.now())
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeTrue())
		a.ShuttingDown = true
		o, err := w.p.Finish(w.ctx, a, l, fmt.Errorf("send: %w", context.Canceled), w.now())
		Expect(err).NotTo(HaveOccurred())
		Expect(o.Action).To(Equal(worker.Release))
		Expect(o.Job.Attempts).To(BeZero())
		Expect(o.Fingerprint).To(BeEmpty())
		Expect(w.p.History().Failures(context.Background(), "r1")).To(BeEmpty())
		Expect(w.led.state("r1")).To(Equal(disposition.Queued))
		Expect(w.errorCalls()).To(HaveLen(1), "OnError hears every error, a shutdown's too")
	})

	It("names the most specific error type in a wrapped chain", func() {
		w := newWorld()
		w.enqueue(newJob("t1", "email", "smtp"))
		o, err := w.attempt("t1", fmt.Errorf("deliver: %w", &failure.HTTPError{Code: 503}))
		Expect(err).NotTo(HaveOccurred())
		Expect(o.Failure.ErrorType).To(Equal("*failure.HTTPError"))
		Expect(o.Failure.Error).To(Equal("deliver: http 503 Service Unavailable"))
	})

	It("survives an error whose Error method panics", func() {
		w := newWorld()
		w.enqueue(newJob("t2", "email", "smtp"))
		var boom *panicky // a typed nil in an error interface
		o, err := w.attempt("t2", boom)
		Expect(err).NotTo(HaveOccurred())
		Expect(o.Failure.Error).To(ContainSubstring("Error panicked"))
		Expect(o.Verdict.Rule).To(Equal("panic"))
	})

	It("dead-letters a job when a team's policy answers with an action it does not know, so a person sees it", func() {
		w := newWorld()
		core, err := worker.NewCore(worker.Config{Classifier: classify.Default(), Policy: zeroPolicy{}})
		Expect(err).NotTo(HaveOccurred())
		a, err := core.Begin(newJob("z", "email", "smtp"), w.now())
		Expect(err).NotTo(HaveOccurred())
		o := core.Complete(context.Background(), a, errors.New("odd"), w.now())
		Expect(o.Action).To(Equal(worker.DeadLetter))
		Expect(o.Entry.Reason).To(Equal("unknown-action:action(0)"))
		Expect(o.Entry.History).To(HaveLen(1))
	})

	It("validates its configuration, naming the field", func() {
		_, err := worker.NewCore(worker.Config{})
		Expect(err).To(MatchError(worker.ErrInvalidConfig))
		Expect(err.Error()).To(ContainSubstring("Classifier"))
		_, err = worker.NewCore(worker.Config{Classifier: classify.Default(), Policy: newWorld().policy,
			Guards: map[string]worker.Guard{"smtp": {}}})
		Expect(err).To(MatchError(ContainSubstring(`Guards["smtp"]`)))
		_, err = worker.NewPipeline(worker.PipelineConfig{})
		Expect(err).To(MatchError(worker.ErrInvalidConfig))
	})
})

// panicky is an error whose Error method panics on a nil receiver.
type panicky struct{ msg string }

func (p *panicky) Error() string { return p.msg }

var _ = Describe("A breaker without a fallback", func() {
	It("diverts through BreakerRouter once its breaker opens, and counts the permitted calls", func() {
		w := newWorld()
		b, err := degrade.NewBreaker(degrade.BreakerConfig{Name: "smtp", ConsecutiveFailures: 2}, w.clk)
		Expect(err).NotTo(HaveOccurred())
		core, err := worker.NewCore(worker.Config{Classifier: classify.Default(), Policy: w.policy,
			Guards: map[string]worker.Guard{"smtp": {Router: worker.BreakerRouter{Breaker: b}, Breaker: b}}})
		Expect(err).NotTo(HaveOccurred())
		j := newJob("m1", "email", "smtp")
		for range 2 {
			a, err := core.Begin(j, w.now())
			Expect(err).NotTo(HaveOccurred())
			Expect(a.Diverted).To(BeFalse())
			o := core.Complete(context.Background(), a, &failure.HTTPError{Code: 503}, w.now())
			Expect(o.Action).To(Equal(worker.Retry))
			j = o.Job
		}
		a, err := core.Begin(j, w.now())
		Expect(err).NotTo(HaveOccurred())
		Expect(a.Diverted).To(BeTrue())
		Expect(a.DivertReason).To(MatchError(degrade.ErrOpen))
		o := core.Complete(context.Background(), a, nil, w.now())
		Expect(o.Action).To(Equal(worker.Divert), "completing a diverted attempt is its divert")
		Expect(b.Stats().CountedFailures).To(Equal(uint64(2)))
	})
})

var _ = Describe("Pipeline.Release", func() {
	It("puts a leased job back at the head of its queue without an attempt", func() {
		w := newWorld()
		w.enqueue(newJob("r", "email", "smtp"), newJob("s", "email", "smtp"))
		j, l := w.lease(job.DefaultQueue, "r")
		Expect(w.p.Release(w.ctx, j, l, w.now())).To(Succeed())
		j, _ = w.lease(job.DefaultQueue, "r")
		Expect(j.Attempts).To(BeZero())
		Expect(w.p.Stats().Applied[worker.Release]).To(Equal(uint64(1)))
	})
})

// zeroPolicy answers every failure with the zero decision.
type zeroPolicy struct{}

func (zeroPolicy) Decide(retry.Attempt, classify.Classification, time.Time) retry.Decision {
	return retry.Decision{}
}
