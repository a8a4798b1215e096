package worker_test

import (
	"errors"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/failure"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/worker"
)

var _ = Describe("A worker killed mid-job", func() {
	DescribeTable("loses nothing: the job comes back when its lease expires, and the dead worker's late completion is fenced off and changes nothing",
		func(late error) {
			w := newWorld()
			w.enqueue(newJob("k1", "email", "smtp"))
			j, l := w.lease(job.DefaultQueue, "k1")
			zombie, ok, err := w.p.Start(w.ctx, j, l, w.now())
			Expect(err).NotTo(HaveOccurred())
			Expect(ok).To(BeTrue())
			// The worker dies here: nothing completes its lease.

			w.clk.Advance(29 * time.Second)
			n, err := w.st.RecoverExpired(w.ctx, w.now(), 10)
			Expect(err).NotTo(HaveOccurred())
			Expect(n).To(BeZero(), "not before the lease expires")
			w.clk.Advance(time.Second)
			n, err = w.st.RecoverExpired(w.ctx, w.now(), 10)
			Expect(err).NotTo(HaveOccurred())
			Expect(n).To(Equal(1))
			Expect(w.led.state("k1")).To(Equal(disposition.Queued))

			// Another worker runs it; the lost attempt did not count.
			j2, l2 := w.lease(job.DefaultQueue, "k1")
			Expect(j2.Attempts).To(BeZero())
			a2, _, err := w.p.Start(w.ctx, j2, l2, w.now())
			Expect(err).NotTo(HaveOccurred())
			o, err := w.p.Finish(w.ctx, a2, l2, nil, w.now())
			Expect(err).NotTo(HaveOccurred())
			Expect(o.Action).To(Equal(worker.Succeed))
			Expect(o.Job.Attempts).To(Equal(1))

			// The dead worker wakes up and completes with its old lease.
			before := w.led.events("k1")
			w.clk.Advance(time.Minute)
			_, err = w.p.Finish(w.ctx, zombie, l, late, w.now())
			Expect(err).To(MatchError(queue.ErrLeaseLost))
			Expect(w.led.events("k1")).To(Equal(before), "no move")
			Expect(w.led.state("k1")).To(Equal(disposition.Succeeded))
			_, err = w.st.Get(w.ctx, "k1")
			Expect(err).To(MatchError(dlq.ErrNotFound))
			Expect(w.deadIDs()).To(BeEmpty())
			Expect(w.p.History().Failures("k1")).To(BeEmpty(), "a fenced failure is not part of the job's history")
			Expect(w.p.Stats().Fenced).To(Equal(uint64(1)))
			w.expectConserved(1)
		},
		Entry("late success", nil),
		Entry("late transient failure (would retry)", &failure.TimeoutError{Op: "SMTP send", After: time.Second}),
		Entry("late permanent failure (would dead-letter)", fmt.Errorf("bad address: %w", failure.ErrInvalidInput)),
	)

	It("fences off a late completion while the job is leased again by another worker", func() {
		w := newWorld()
		w.enqueue(newJob("k2", "email", "smtp"))
		j, l := w.lease(job.DefaultQueue, "k2")
		zombie, _, err := w.p.Start(w.ctx, j, l, w.now())
		Expect(err).NotTo(HaveOccurred())
		w.clk.Advance(30 * time.Second)
		_, err = w.st.RecoverExpired(w.ctx, w.now(), 10)
		Expect(err).NotTo(HaveOccurred())
		j2, l2 := w.lease(job.DefaultQueue, "k2")

		_, err = w.p.Finish(w.ctx, zombie, l, nil, w.now())
		Expect(err).To(MatchError(queue.ErrLeaseLost))
		Expect(w.led.state("k2")).To(Equal(disposition.InFlight))

		a2, _, err := w.p.Start(w.ctx, j2, l2, w.now())
		Expect(err).NotTo(HaveOccurred())
		_, err = w.p.Finish(w.ctx, a2, l2, nil, w.now())
		Expect(err).NotTo(HaveOccurred())
		Expect(w.led.state("k2")).To(Equal(disposition.Succeeded))
	})
})

var _ = Describe("A full DLQ", func() {
	It("leaves the dead job leased and reports the overflow; the job comes back and dies properly once there is room, "+
		"its history keeping both failures", func() {
		w := newWorld(func(c *worldConfig) { c.store = store.Config{DLQCapacity: 1, Overflow: store.Reject} })
		bad := fmt.Errorf("bad row: %w", failure.ErrInvalidInput)
		w.enqueue(newJob("d1", "report", ""), newJob("d2", "report", ""))
		_, err := w.attempt("d1", bad)
		Expect(err).NotTo(HaveOccurred())

		o, err := w.attempt("d2", bad)
		Expect(err).To(MatchError(dlq.ErrFull))
		Expect(o.Action).To(Equal(worker.DeadLetter))
		Expect(w.led.state("d2")).To(Equal(disposition.InFlight), "held, not lost")
		Expect(w.overflow).To(HaveLen(1))
		Expect(w.overflow[0].JobID).To(Equal("d2"))
		Expect(w.deadIDs()).To(Equal([]string{"d1"}), "no death until the entry is written")
		Expect(w.p.Stats().Held).To(Equal(uint64(1)))

		// An operator makes room; the lease expires and the job comes back.
		Expect(w.st.Delete(w.ctx, "d1", "ops", w.now())).To(Succeed())
		w.clk.Advance(30 * time.Second)
		_, err = w.st.RecoverExpired(w.ctx, w.now(), 10)
		Expect(err).NotTo(HaveOccurred())
		o, err = w.attempt("d2", bad)
		Expect(err).NotTo(HaveOccurred())
		Expect(o.Action).To(Equal(worker.DeadLetter))
		e := w.entry("d2")
		Expect(e.History).To(HaveLen(2))
		Expect(e.History[0].At).To(Equal(t0))
		Expect(e.History[1].At).To(Equal(t0.Add(30 * time.Second)))
		Expect(w.deadIDs()).To(Equal([]string{"d1", "d2"}))
		w.expectConserved(2)
	})
})

var _ = Describe("The hooks and events", func() {
	It("call OnError once per error and OnDead exactly once per death, a job dying twice dying twice, "+
		"and the observer hears each move the pipeline made, after the store made it", func() {
		w := newWorld()
		w.enqueue(newJob("a", "email", "smtp"), newJob("b", "report", ""), newJob("c", "email", "smtp"))
		smtp := &failure.TimeoutError{Op: "SMTP send", After: time.Second}
		bad := fmt.Errorf("bad: %w", failure.ErrInvalidInput)

		o, err := w.attempt("a", smtp) // a: retry
		Expect(err).NotTo(HaveOccurred())
		_, err = w.attempt("b", bad) // b: dead
		Expect(err).NotTo(HaveOccurred())
		_, err = w.attempt("c", nil) // c: succeeded
		Expect(err).NotTo(HaveOccurred())
		w.untilDue(o)
		_, err = w.attempt("a", bad) // a: dead
		Expect(err).NotTo(HaveOccurred())

		// b is requeued and dies again: a second death, the same entry.
		out, err := w.st.Requeue(w.ctx, "b", dlq.RequeueOptions{Budget: dlq.ResetAttempts, By: "ops"}, w.now())
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(Equal(dlq.OutcomeRequeued))
		_, err = w.attempt("b", bad)
		Expect(err).NotTo(HaveOccurred())

		calls := w.errorCalls()
		ids := make([]string, len(calls))
		for i, c := range calls {
			ids[i] = c.ID
		}
		Expect(ids).To(Equal([]string{"a", "b", "a", "b"}))
		Expect(calls[0].Verdict.Rule).To(Equal("timeout"))
		Expect(calls[1].Err).To(MatchError(failure.ErrInvalidInput))
		Expect(w.deadIDs()).To(Equal([]string{"b", "a", "b"}))
		Expect(w.entry("b").History).To(HaveLen(2), "the second death extends the first's history")

		var moves []string
		for _, e := range w.moves {
			moves = append(moves, fmt.Sprintf("%s %s→%s a%d", e.JobID, e.From, e.To, e.Attempts))
		}
		Expect(moves).To(Equal([]string{
			"a in-flight→scheduled a1",
			"b in-flight→dead-lettered a1",
			"c in-flight→succeeded a1",
			"a in-flight→dead-lettered a2",
			"b in-flight→dead-lettered a1",
		}))
		w.expectConserved(3)
	})

	It("refuses a dead-letter outcome without an entry and writes nothing", func() {
		w := newWorld()
		w.enqueue(newJob("x", "report", ""))
		j, l := w.lease(job.DefaultQueue, "x")
		err := w.p.Apply(w.ctx, l, worker.Outcome{Action: worker.DeadLetter, Job: j}, w.now())
		Expect(err).To(MatchError(worker.ErrNoEntry))
		Expect(w.led.state("x")).To(Equal(disposition.InFlight))
		Expect(errors.Is(err, queue.ErrLeaseLost)).To(BeFalse())
	})
})
