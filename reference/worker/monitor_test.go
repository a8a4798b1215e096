package worker_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/failure"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/worker"
)

// signals records what the monitor raises and clears, as "raise NAME
// severity" and "clear NAME".
type signals struct {
	mu  sync.Mutex
	log []string
}

func (s *signals) Raise(sig alert.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, fmt.Sprintf("raise %s %s ns=%s", sig.Name, sig.Severity, sig.Labels[worker.LabelNamespace]))
}

func (s *signals) Clear(name string, labels alert.Labels) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, fmt.Sprintf("clear %s ns=%s", name, labels[worker.LabelNamespace]))
}

// take returns what was recorded since the last take.
func (s *signals) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.log
	s.log = nil
	return out
}

var _ = Describe("The DLQ monitor", func() {
	var (
		w   *world
		sig *signals
		m   *worker.Monitor
	)
	BeforeEach(func() {
		sig = &signals{}
		w = newWorld(func(c *worldConfig) {
			c.store = store.Config{Namespace: "payments", DLQCapacity: 3, Overflow: store.Reject}
		})
		var err error
		m, err = worker.NewMonitor(worker.MonitorConfig{Store: w.st, Alerter: sig, Clock: w.clk, Namespace: "payments",
			MaxDepth: 2, MaxAge: time.Hour, Interval: time.Minute})
		Expect(err).NotTo(HaveOccurred())
	})

	die := func(ids ...string) {
		GinkgoHelper()
		for _, id := range ids {
			w.enqueue(newJob(id, "report", ""))
			_, err := w.attempt(id, fmt.Errorf("bad: %w", failure.ErrInvalidInput))
			Expect(err).NotTo(HaveOccurred())
		}
	}

	It("raises the depth and age alerts when they start to hold, and clears them when they stop", func() {
		die("a", "b")
		h, err := m.Check(w.ctx, w.now())
		Expect(err).NotTo(HaveOccurred())
		Expect(h.Depth).To(Equal(2))
		Expect(sig.take()).To(BeEmpty(), "at the threshold is not over it")

		w.clk.Advance(time.Minute)
		die("c")
		h, err = m.Check(w.ctx, w.now())
		Expect(err).NotTo(HaveOccurred())
		Expect(h.Firing).To(Equal([]string{worker.AlertDLQDepth}))
		Expect(sig.take()).To(Equal([]string{"raise dlq-depth medium ns=payments"}))

		w.clk.Advance(time.Hour)
		h, err = m.Check(w.ctx, w.now())
		Expect(err).NotTo(HaveOccurred())
		Expect(h.Oldest).To(Equal(t0))
		Expect(h.Firing).To(Equal([]string{worker.AlertDLQAge, worker.AlertDLQDepth}))
		Expect(sig.take()).To(Equal([]string{"raise dlq-depth medium ns=payments", "raise dlq-oldest-age medium ns=payments"}))

		// An operator requeues the two oldest: depth back to 1, and the
		// oldest failed entry is c, an hour old exactly.
		for _, id := range []string{"a", "b"} {
			Expect(w.st.Requeue(w.ctx, id, dlq.RequeueOptions{Budget: dlq.ResetAttempts, By: "ops"}, w.now())).To(Equal(dlq.OutcomeRequeued))
		}
		h, err = m.Check(w.ctx, w.now())
		Expect(err).NotTo(HaveOccurred())
		Expect(h.Depth).To(Equal(1))
		Expect(h.Firing).To(BeEmpty())
		Expect(sig.take()).To(Equal([]string{"clear dlq-depth ns=payments", "clear dlq-oldest-age ns=payments"}))
	})

	It("turns the store's overflow report into a High alert at once, cleared at the first check with no new overflow", func() {
		var mon *worker.Monitor
		w = newWorld(func(c *worldConfig) {
			c.store = store.Config{Namespace: "payments", DLQCapacity: 1, Overflow: store.Reject,
				OnOverflow: func(o store.Overflow) { mon.Overflow(o) }}
		})
		var err error
		mon, err = worker.NewMonitor(worker.MonitorConfig{Store: w.st, Alerter: sig, Clock: w.clk, Namespace: "payments"})
		Expect(err).NotTo(HaveOccurred())

		die("a")
		w.enqueue(newJob("b", "report", ""))
		_, err = w.attempt("b", fmt.Errorf("bad: %w", failure.ErrInvalidInput))
		Expect(err).NotTo(HaveOccurred(), "b does not fit: it is held")
		Expect(sig.take()).To(Equal([]string{"raise dlq-overflow high ns=payments"}))
		h, err := mon.Check(w.ctx, w.now())
		Expect(err).NotTo(HaveOccurred())
		Expect(h.Held).To(Equal(1))
		Expect(h.Firing).To(Equal([]string{worker.AlertDLQHeld, worker.AlertDLQOverflow}))
		Expect(sig.take()).To(Equal([]string{"raise dlq-held medium ns=payments"}))
		Expect(w.st.Delete(w.ctx, "a", "ops", w.now())).To(Succeed())
		_, err = w.p.FlushHeld(w.ctx, w.now(), 10)
		Expect(err).NotTo(HaveOccurred())
		_, err = mon.Check(w.ctx, w.now())
		Expect(err).NotTo(HaveOccurred())
		Expect(sig.take()).To(Equal([]string{"clear dlq-overflow ns=payments", "clear dlq-held ns=payments"}))
	})

	It("raises dlq-kept at once when a dead letter is kept in memory, holds it while any is kept, and clears it when none is", func() {
		kept := 0
		mon, err := worker.NewMonitor(worker.MonitorConfig{Store: w.st, Alerter: sig, Clock: w.clk, Namespace: "payments",
			Kept: func() int { return kept }})
		Expect(err).NotTo(HaveOccurred())
		kept = 1
		mon.Kept(newJob("a", "report", ""), dlq.ErrHeldFull)
		Expect(sig.take()).To(Equal([]string{"raise dlq-kept high ns=payments"}))
		h, err := mon.Check(w.ctx, w.now())
		Expect(err).NotTo(HaveOccurred())
		Expect(h.Firing).To(Equal([]string{worker.AlertDLQKept}))
		Expect(sig.take()).To(Equal([]string{"raise dlq-kept high ns=payments"}), "still kept: raised again with the count")
		kept = 0
		_, err = mon.Check(w.ctx, w.now())
		Expect(err).NotTo(HaveOccurred())
		Expect(sig.take()).To(Equal([]string{"clear dlq-kept ns=payments"}))
	})

	It("raises the overflow alert for an overflow another process caused, from the store's own counters", func() {
		w = newWorld(func(c *worldConfig) {
			// No OnOverflow here: the overflow happens in "another worker".
			c.store = store.Config{Namespace: "payments", DLQCapacity: 1, Overflow: store.Reject}
		})
		mon, err := worker.NewMonitor(worker.MonitorConfig{Store: w.st, Alerter: sig, Clock: w.clk, Namespace: "payments"})
		Expect(err).NotTo(HaveOccurred())
		_, err = mon.Check(w.ctx, w.now()) // the baseline
		Expect(err).NotTo(HaveOccurred())
		die("a")
		w.enqueue(newJob("b", "report", ""))
		_, err = w.attempt("b", fmt.Errorf("bad: %w", failure.ErrInvalidInput))
		Expect(err).NotTo(HaveOccurred())
		Expect(sig.take()).To(BeEmpty(), "nobody told this monitor")
		h, err := mon.Check(w.ctx, w.now())
		Expect(err).NotTo(HaveOccurred())
		Expect(h.Firing).To(ContainElement(worker.AlertDLQOverflow))
		Expect(sig.take()).To(ContainElement("raise dlq-overflow high ns=payments"))
		_, err = mon.Check(w.ctx, w.now())
		Expect(err).NotTo(HaveOccurred())
		Expect(sig.take()).To(ContainElement("clear dlq-overflow ns=payments"))
	})

	It("alerts on an overflow another process caused before its first check: Start takes the baseline", func() {
		w = newWorld(func(c *worldConfig) {
			c.store = store.Config{Namespace: "payments", DLQCapacity: 1, Overflow: store.EvictOldest}
		})
		mon, err := worker.NewMonitor(worker.MonitorConfig{Store: w.st, Alerter: sig, Clock: w.clk, Namespace: "payments", Interval: time.Minute})
		Expect(err).NotTo(HaveOccurred())
		mon.Start()
		DeferCleanup(mon.Stop)
		die("a", "b") // b evicts a, seconds after the start: before the first check
		Expect(sig.take()).To(BeEmpty(), "nobody told this monitor")
		w.clk.Advance(time.Minute)
		Expect(sig.take()).To(Equal([]string{"raise dlq-overflow high ns=payments"}))
		w.clk.Advance(time.Minute)
		Expect(sig.take()).To(Equal([]string{"clear dlq-overflow ns=payments"}), "once")
	})

	It("raises dlq-unavailable while the DLQ cannot be read, and clears it when it can", func() {
		down := &flakyStats{StatsReader: w.st, err: errors.New("connection refused")}
		m, err := worker.NewMonitor(worker.MonitorConfig{Store: down, Alerter: sig, Clock: w.clk, Namespace: "payments"})
		Expect(err).NotTo(HaveOccurred())
		_, err = m.Check(w.ctx, w.now())
		Expect(err).To(MatchError(ContainSubstring("connection refused")))
		Expect(sig.take()).To(Equal([]string{"raise dlq-unavailable high ns=payments"}))
		down.err = nil
		_, err = m.Check(w.ctx, w.now())
		Expect(err).NotTo(HaveOccurred())
		Expect(sig.take()).To(Equal([]string{"clear dlq-unavailable ns=payments"}))
	})

	It("checks every Interval on the clock once started, and not after Stop", func() {
		die("a", "b", "c")
		m.Start()
		w.clk.Advance(59 * time.Second)
		Expect(sig.take()).To(BeEmpty())
		w.clk.Advance(time.Second)
		Expect(sig.take()).To(Equal([]string{"raise dlq-depth medium ns=payments"}))
		w.clk.Advance(time.Minute)
		Expect(sig.take()).To(Equal([]string{"raise dlq-depth medium ns=payments"}))
		m.Stop()
		w.clk.Advance(time.Hour)
		Expect(sig.take()).To(BeEmpty())
	})

	It("validates its configuration", func() {
		_, err := worker.NewMonitor(worker.MonitorConfig{Store: w.st, Clock: w.clk})
		Expect(err).To(MatchError(ContainSubstring("Alerter")))
		_, err = worker.NewMonitor(worker.MonitorConfig{Store: w.st, Alerter: sig, Clock: w.clk, Severity: classify.Severity(9)})
		Expect(err).To(MatchError(worker.ErrInvalidConfig))
	})
})

// flakyStats fails Stats with err while it is set.
type flakyStats struct {
	worker.StatsReader
	err error
}

func (f *flakyStats) Stats(ctx context.Context) (dlq.Stats, error) {
	if f.err != nil {
		return dlq.Stats{}, f.err
	}
	return f.StatsReader.Stats(ctx)
}
