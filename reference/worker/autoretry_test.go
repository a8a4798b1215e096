package worker_test

import (
	"context"
	"fmt"
	"time"
	_ "time/tzdata" // Europe/Berlin on any machine

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/failure"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/worker"
)

var _ = Describe("DLQ auto-retry", func() {
	var berlin *time.Location
	BeforeEach(func() {
		var err error
		berlin, err = time.LoadLocation("Europe/Berlin")
		Expect(err).NotTo(HaveOccurred())
	})

	It("over 48 virtual hours requeues only inside the off-peak window, at the rate, each entry once per window, "+
		"and quarantines the ones that keep dying as poison", func() {
		w := newWorld()
		bad := fmt.Errorf("bad row: %w", failure.ErrInvalidInput)
		// 25 dead reports and 2 dead emails, the emails outside the filter.
		for i := range 25 {
			w.enqueue(newJob(fmt.Sprintf("report-%02d", i), "report", ""))
		}
		w.enqueue(newJob("email-0", "email", "smtp"), newJob("email-1", "email", "smtp"))
		// A worker on the virtual clock: every 30s it runs what is queued,
		// and every job still fails.
		var work func()
		work = func() {
			for {
				j, l, ok, err := w.st.Dequeue(w.ctx, job.DefaultQueue, w.now(), 30*time.Second)
				Expect(err).NotTo(HaveOccurred())
				if !ok {
					break
				}
				a, _, err := w.p.Start(w.ctx, j, l, w.now())
				Expect(err).NotTo(HaveOccurred())
				_, err = w.p.Finish(w.ctx, a, l, bad, w.now())
				Expect(err).NotTo(HaveOccurred())
			}
			w.clk.AfterFunc(30*time.Second, work)
		}
		work()
		Expect(w.led.counts()).To(Equal(map[disposition.State]int{disposition.DeadLettered: 27}))

		var requeues []time.Time
		ids := map[string][]time.Time{}
		w.st = &requeueSpy{backend: w.st, at: func(id string, t time.Time) {
			requeues = append(requeues, t)
			ids[id] = append(ids[id], t)
		}}
		ar, err := worker.NewAutoRetry(worker.AutoRetryConfig{
			Store: w.st, Clock: w.clk,
			Window:         worker.Window{Start: 2 * time.Hour, End: 5 * time.Hour, Location: berlin},
			Filter:         dlq.Filter{Tasks: []string{"report"}},
			Rate:           10,
			MaxAutoRetries: 1,
		})
		Expect(err).NotTo(HaveOccurred())
		ar.Start()
		w.clk.RunUntil(t0.Add(48 * time.Hour))
		ar.Stop()

		// 02:00 in Berlin is 01:00 UTC in March (before the clocks change).
		night1 := time.Date(2026, 3, 3, 1, 0, 0, 0, time.UTC)
		perMinute := map[time.Duration]int{}
		for _, t := range requeues {
			local := t.In(berlin)
			Expect(local.Hour()).To(BeNumerically(">=", 2), "requeued at %s", local)
			Expect(local.Hour()).To(BeNumerically("<", 5), "requeued at %s", local)
			perMinute[t.Sub(night1)]++
		}
		Expect(perMinute).To(Equal(map[time.Duration]int{0: 10, time.Minute: 10, 2 * time.Minute: 5}))
		Expect(ids).To(HaveLen(25))
		for id, ts := range ids {
			Expect(ts).To(HaveLen(1), "%s requeued once in its life", id)
		}

		// Night two: every report died again after its automatic retry.
		st, err := w.st.Stats(w.ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.ByStatus).To(Equal(map[string]int{"quarantined": 25, "failed": 2}))
		e := w.entry("report-07")
		Expect(e.AutoRetries).To(Equal(1))
		Expect(e.History).To(HaveLen(2))
		last := e.Changes[len(e.Changes)-1]
		Expect(last.To).To(Equal(dlq.Quarantined))
		Expect(last.At).To(Equal(night1.Add(24 * time.Hour)))
		Expect(w.entry("email-0").AutoRetries).To(BeZero())
		Expect(ar.Stats()).To(Equal(worker.AutoRetryStats{Ticks: 2 * 180, Requeued: 25, Quarantined: 25}))
	})

	It("requeues at once when started inside its window, the newest failure first, Rate per Interval, until stopped", func() {
		w := newWorld()
		bad := fmt.Errorf("bad row: %w", failure.ErrInvalidInput)
		for _, id := range []string{"r1", "r2", "r3"} {
			w.enqueue(newJob(id, "report", ""))
			_, err := w.attempt(id, bad)
			Expect(err).NotTo(HaveOccurred())
			w.clk.Advance(time.Second)
		}
		ar, err := worker.NewAutoRetry(worker.AutoRetryConfig{
			Store: w.st, Clock: w.clk, Window: worker.Window{Start: 9 * time.Hour, End: 10 * time.Hour}, Rate: 1,
		})
		Expect(err).NotTo(HaveOccurred())
		ar.Start()
		w.clk.Advance(0)
		Expect(w.led.state("r3")).To(Equal(disposition.Queued))
		Expect(w.led.state("r2")).To(Equal(disposition.DeadLettered))
		w.clk.Advance(time.Minute - time.Nanosecond)
		Expect(w.led.state("r2")).To(Equal(disposition.DeadLettered), "one per minute")
		w.clk.Advance(time.Nanosecond)
		Expect(w.led.state("r2")).To(Equal(disposition.Queued))
		ar.Stop()
		w.clk.Advance(time.Hour)
		Expect(w.led.state("r1")).To(Equal(disposition.DeadLettered), "stopped")
		Expect(ar.Stats()).To(Equal(worker.AutoRetryStats{Ticks: 2, Requeued: 2}))
	})

	DescribeTable("finds the window holding a time, or the next one",
		func(start, end time.Duration, at string, wantOpen, wantClose string) {
			win := worker.Window{Start: start, End: end, Location: berlin}
			t, err := time.ParseInLocation(time.DateTime, at, berlin)
			Expect(err).NotTo(HaveOccurred())
			open, close := win.Bounds(t)
			Expect(open.In(berlin).Format(time.DateTime)).To(Equal(wantOpen))
			Expect(close.In(berlin).Format(time.DateTime)).To(Equal(wantClose))
		},
		Entry("before today's", 2*time.Hour, 5*time.Hour, "2026-03-03 01:59:59", "2026-03-03 02:00:00", "2026-03-03 05:00:00"),
		Entry("at its opening", 2*time.Hour, 5*time.Hour, "2026-03-03 02:00:00", "2026-03-03 02:00:00", "2026-03-03 05:00:00"),
		Entry("at its close: the next", 2*time.Hour, 5*time.Hour, "2026-03-03 05:00:00", "2026-03-04 02:00:00", "2026-03-04 05:00:00"),
		Entry("past midnight, opened yesterday", 22*time.Hour, 4*time.Hour, "2026-03-03 01:00:00", "2026-03-02 22:00:00", "2026-03-03 04:00:00"),
		Entry("past midnight, before tonight's", 22*time.Hour, 4*time.Hour, "2026-03-03 12:00:00", "2026-03-03 22:00:00", "2026-03-04 04:00:00"),
		Entry("across the spring change, wall-clock times kept", 1*time.Hour, 5*time.Hour, "2026-03-29 00:30:00", "2026-03-29 01:00:00", "2026-03-29 05:00:00"),
	)

	It("validates its configuration, naming the field", func() {
		w := newWorld()
		_, err := worker.NewAutoRetry(worker.AutoRetryConfig{Store: w.st, Clock: w.clk, Window: worker.Window{Start: time.Hour, End: time.Hour}})
		Expect(err).To(MatchError(ContainSubstring("Window.End")))
		_, err = worker.NewAutoRetry(worker.AutoRetryConfig{Store: w.st, Clock: w.clk, Window: worker.Window{Start: time.Hour, End: 2 * time.Hour}, Rate: -1})
		Expect(err).To(MatchError(worker.ErrInvalidConfig))
	})
})

// requeueSpy tells of every requeue that happened.
type requeueSpy struct {
	backend
	at func(id string, t time.Time)
}

func (s *requeueSpy) Requeue(ctx context.Context, id string, opts dlq.RequeueOptions, now time.Time) (dlq.RequeueOutcome, error) {
	out, err := s.backend.Requeue(ctx, id, opts, now)
	if err == nil && out == dlq.OutcomeRequeued {
		s.at(id, now)
	}
	return out, err
}

// stubRetryStore lists fixed entries and answers requeues with busy until
// freed.
type stubRetryStore struct {
	entries  []dlq.Entry
	busy     map[string]bool
	requeued []string
}

func (s *stubRetryStore) List(_ context.Context, f dlq.Filter, _ string, _ int) (dlq.Page, error) {
	var p dlq.Page
	for _, e := range s.entries {
		if e.Status == dlq.Failed && e.LastFailedAt.Before(f.Until) {
			p.Entries = append(p.Entries, e)
		}
	}
	return p, nil
}

func (s *stubRetryStore) Requeue(_ context.Context, id string, _ dlq.RequeueOptions, _ time.Time) (dlq.RequeueOutcome, error) {
	if s.busy[id] {
		return dlq.OutcomeBusy, nil
	}
	for i := range s.entries {
		if s.entries[i].Job.ID == id {
			s.entries[i].Status = dlq.Requeued
		}
	}
	s.requeued = append(s.requeued, id)
	return dlq.OutcomeRequeued, nil
}

func (s *stubRetryStore) Quarantine(context.Context, string, string, time.Time) error { return nil }

var _ = Describe("DLQ auto-retry with a busy job", func() {
	It("skips an entry whose job is busy for the rest of the window, leaving the rate to the others, and tries it in the next window", func() {
		clk := clockAt(t0) // 09:00 UTC
		st := &stubRetryStore{busy: map[string]bool{"busy": true}}
		for i, id := range []string{"busy", "a", "b"} {
			st.entries = append(st.entries, dlq.Entry{Job: job.Job{ID: id, Task: "report"}, Status: dlq.Failed,
				LastFailedAt: t0.Add(-time.Duration(i+1) * time.Minute)})
		}
		ar, err := worker.NewAutoRetry(worker.AutoRetryConfig{Store: st, Clock: clk, Rate: 1,
			Window: worker.Window{Start: 9 * time.Hour, End: 10 * time.Hour}})
		Expect(err).NotTo(HaveOccurred())

		Expect(ar.Tick(context.Background(), clk.Now())).To(Succeed())
		Expect(st.requeued).To(BeEmpty(), "the busy one came first")
		Expect(ar.Tick(context.Background(), clk.Now().Add(time.Minute))).To(Succeed())
		Expect(ar.Tick(context.Background(), clk.Now().Add(2*time.Minute))).To(Succeed())
		Expect(st.requeued).To(Equal([]string{"a", "b"}))
		Expect(ar.Stats().Skipped).To(Equal(uint64(1)))

		// Outside the window nothing happens; in the next one the busy
		// entry's turn comes again.
		Expect(ar.Tick(context.Background(), t0.Add(2*time.Hour))).To(Succeed())
		Expect(ar.Stats().Ticks).To(Equal(uint64(3)))
		st.busy = nil
		Expect(ar.Tick(context.Background(), t0.Add(24*time.Hour))).To(Succeed())
		Expect(st.requeued).To(Equal([]string{"a", "b", "busy"}))
	})
})
