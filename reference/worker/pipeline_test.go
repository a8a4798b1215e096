package worker_test

import (
	"context"
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
			Expect(w.p.History().Failures(context.Background(), "k1")).To(BeEmpty(), "a fenced failure is not part of the job's history")
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
	It("parks the dead job with its entry in the held set and reports the overflow; the job never runs again, "+
		"and its entry is written with its failure's time once there is room", func() {
		w := newWorld(func(c *worldConfig) { c.store = store.Config{DLQCapacity: 1, Overflow: store.Reject} })
		bad := fmt.Errorf("bad row: %w", failure.ErrInvalidInput)
		w.enqueue(newJob("d1", "report", ""), newJob("d2", "report", ""))
		_, err := w.attempt("d1", bad)
		Expect(err).NotTo(HaveOccurred())

		failedAt := w.now()
		o, err := w.attempt("d2", bad)
		Expect(err).NotTo(HaveOccurred(), "its fate is decided: parked, not left leased")
		Expect(o.Action).To(Equal(worker.DeadLetter))
		Expect(w.led.state("d2")).To(Equal(disposition.Held))
		Expect(w.overflow).To(HaveLen(1))
		Expect(w.overflow[0].JobID).To(Equal("d2"))
		Expect(w.overflow[0].Held).To(BeTrue())
		Expect(w.deadIDs()).To(Equal([]string{"d1", "d2"}), "a held dead letter is a death")
		Expect(w.p.Stats().Held).To(Equal(uint64(1)))
		w.expectConserved(2)

		By("the lease it had runs out: nothing comes back to run again")
		w.clk.Advance(time.Hour)
		n, err := w.st.RecoverExpired(w.ctx, w.now(), 10)
		Expect(err).NotTo(HaveOccurred())
		Expect(n).To(BeZero())
		_, _, ok, err := w.st.Dequeue(w.ctx, job.DefaultQueue, w.now(), time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeFalse())
		res, err := w.p.FlushHeld(w.ctx, w.now(), 10)
		Expect(err).NotTo(HaveOccurred())
		Expect(res).To(Equal(dlq.FlushResult{Left: 1, Full: true}))

		By("an operator makes room, and the held entry is written")
		Expect(w.st.Delete(w.ctx, "d1", "ops", w.now())).To(Succeed())
		res, err = w.p.FlushHeld(w.ctx, w.now(), 10)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Written).To(Equal([]string{"d2"}))
		Expect(w.led.state("d2")).To(Equal(disposition.DeadLettered))
		e := w.entry("d2")
		Expect(e.History).To(HaveLen(1), "one attempt: the handler ran once")
		Expect(e.LastFailedAt).To(Equal(failedAt), "the failure's time, not the write's")
		Expect(w.overflow).To(HaveLen(1), "a held entry still refused is not another overflow")
		w.expectConserved(2)
	})

	It("keeps a dead letter in memory, its lease heartbeated, when the held set is full too, and parks it once it has room", func() {
		w := newWorld(func(c *worldConfig) { c.store = store.Config{DLQCapacity: 1, HeldCapacity: 1, Overflow: store.Reject} })
		bad := fmt.Errorf("bad row: %w", failure.ErrInvalidInput)
		w.enqueue(newJob("d1", "report", ""), newJob("d2", "report", ""), newJob("d3", "report", ""))
		for _, id := range []string{"d1", "d2"} {
			_, err := w.attempt(id, bad)
			Expect(err).NotTo(HaveOccurred())
		}
		_, err := w.attempt("d3", bad)
		Expect(err).To(MatchError(worker.ErrKept))
		Expect(err).To(MatchError(dlq.ErrHeldFull))
		Expect(w.led.state("d3")).To(Equal(disposition.InFlight))
		Expect(w.p.Kept()).To(Equal(1))
		Expect(w.overflow).To(HaveLen(2))
		Expect(w.overflow[1].Held).To(BeFalse())

		By("its lease is kept alive, round after round, so it is never recovered")
		for range 10 {
			w.clk.Advance(10 * time.Second)
			Expect(w.p.RetryKept(w.ctx, w.now())).To(BeEmpty())
			n, err := w.st.RecoverExpired(w.ctx, w.now(), 10)
			Expect(err).NotTo(HaveOccurred())
			Expect(n).To(BeZero())
		}
		Expect(w.overflow).To(HaveLen(2), "a kept dead letter waits for the held set, not refused again every round")

		By("room in the DLQ: the held one is written, then the kept one parked, then written")
		Expect(w.st.Delete(w.ctx, "d1", "ops", w.now())).To(Succeed())
		res, err := w.p.FlushHeld(w.ctx, w.now(), 10)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Written).To(Equal([]string{"d2"}))
		got := w.p.RetryKept(w.ctx, w.now())
		Expect(got).To(HaveLen(1))
		Expect(got[0].State).To(Equal(worker.KeptHeld))
		Expect(w.p.Kept()).To(BeZero())
		Expect(w.led.state("d3")).To(Equal(disposition.Held))
		Expect(w.deadIDs()).To(Equal([]string{"d1", "d2", "d3"}))
		w.expectConserved(3)
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
