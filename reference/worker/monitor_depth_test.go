package worker_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/failure"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/worker"
)

// failingDepth is a store whose depth samples cannot be written.
type failingDepth struct {
	dlq.Store
	calls int
}

func (f *failingDepth) RecordDepth(context.Context, dlq.DepthSample) error {
	f.calls++
	return errors.New("depth stream unreachable")
}

func (f *failingDepth) DepthSamples(context.Context, time.Time, int) ([]dlq.DepthSample, error) {
	return nil, nil
}

// lockedBuffer is a log the specs read.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var _ = Describe("The DLQ monitor's depth samples", func() {
	var (
		w   *world
		sig *signals
	)
	BeforeEach(func() {
		sig = &signals{}
		w = newWorld(func(c *worldConfig) { c.store = store.Config{Namespace: "payments"} })
	})
	die := func(ids ...string) {
		GinkgoHelper()
		for _, id := range ids {
			w.enqueue(newJob(id, "report", ""))
			_, err := w.attempt(id, fmt.Errorf("bad: %w", failure.ErrInvalidInput))
			Expect(err).NotTo(HaveOccurred())
		}
	}

	It("records one sample per check on the monitor's clock, on its timers too", func() {
		rec, ok := w.st.(dlq.DepthRecorder)
		Expect(ok).To(BeTrue(), "the in-memory store keeps depth samples")
		m, err := worker.NewMonitor(worker.MonitorConfig{Store: w.st, Alerter: sig, Clock: w.clk, Namespace: "payments", Interval: time.Minute})
		Expect(err).NotTo(HaveOccurred())

		die("a", "b")
		_, err = m.Check(w.ctx, w.now())
		Expect(err).NotTo(HaveOccurred())
		m.Start()
		DeferCleanup(m.Stop)
		die("c")
		w.clk.Advance(time.Minute) // the timer's check
		Expect(w.st.Requeue(w.ctx, "a", dlq.RequeueOptions{Budget: dlq.ResetAttempts, By: "ops"}, w.now())).To(Equal(dlq.OutcomeRequeued))
		w.clk.Advance(time.Minute)

		got, err := rec.DepthSamples(w.ctx, time.Time{}, 100)
		Expect(err).NotTo(HaveOccurred())
		Expect(got).To(HaveLen(3))
		for i, want := range []struct {
			at      time.Time
			waiting int
		}{{t0, 2}, {t0.Add(time.Minute), 3}, {t0.Add(2 * time.Minute), 2}} {
			Expect(got[i].At).To(BeTemporally("==", want.at), "sample %d's time is the virtual clock's", i)
			Expect(got[i].Waiting).To(Equal(want.waiting), "sample %d", i)
		}
		Expect(got[1].BySeverity).NotTo(BeEmpty())
		Expect(got[2].Oldest).To(BeTemporally("==", t0), "b is the oldest failed entry left")
	})

	It("records nothing when the stats cannot be read", func() {
		m, err := worker.NewMonitor(worker.MonitorConfig{Store: unreadable{}, Alerter: sig, Clock: w.clk})
		Expect(err).NotTo(HaveOccurred())
		_, err = m.Check(w.ctx, w.now())
		Expect(err).To(HaveOccurred())
	})

	It("logs a sample it cannot write and goes on with the check", func() {
		var log lockedBuffer
		fd := &failingDepth{Store: w.st}
		m, err := worker.NewMonitor(worker.MonitorConfig{Store: fd, Alerter: sig, Clock: w.clk, Namespace: "payments", MaxDepth: 1,
			Logger: slog.New(slog.NewTextHandler(&log, nil))})
		Expect(err).NotTo(HaveOccurred())
		die("a", "b")
		h, err := m.Check(w.ctx, w.now())
		Expect(err).NotTo(HaveOccurred(), "a lost sample does not fail the check")
		Expect(h.Firing).To(Equal([]string{worker.AlertDLQDepth}))
		Expect(fd.calls).To(Equal(1))
		Expect(log.String()).To(ContainSubstring("depth stream unreachable"))
	})
})

// unreadable is a DLQ whose stats cannot be read, and which would record
// samples if asked.
type unreadable struct{ failingDepth }

func (unreadable) Stats(context.Context) (dlq.Stats, error) {
	return dlq.Stats{}, errors.New("stats unreachable")
}

func (u unreadable) RecordDepth(context.Context, dlq.DepthSample) error {
	Fail("a check that could not read the stats recorded a sample")
	return nil
}
