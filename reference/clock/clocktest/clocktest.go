// Package clocktest is the conformance suite for clock.Clock: the behaviour
// every clock must share, whether it runs on virtual or wall-clock time. Run
// it from a Ginkgo container against any Clock implementation:
//
//	var _ = Describe("my clock", func() {
//		clocktest.Exercise(func() clocktest.Harness { ... })
//	})
package clocktest

import (
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive // Ginkgo's DSL reads best dot-imported.
	. "github.com/onsi/gomega"    //nolint:revive // Gomega's DSL reads best dot-imported.

	"github.com/faultline/faultline/reference/clock"
)

// Harness is a clock under test and the means to let its time pass.
type Harness struct {
	// Clock is the clock under test.
	Clock clock.Clock
	// Elapse lets d of the clock's time pass: Advance on a virtual clock,
	// waiting on a real one.
	Elapse func(d time.Duration)
	// Unit is the spacing between the timers the specs schedule: large enough
	// that a real clock orders them reliably, e.g. 25ms, or 1s on a virtual
	// clock.
	Unit time.Duration
	// Settle bounds how long to wait for a callback that is due to show its
	// effect: zero on a virtual clock (callbacks run inside Elapse), a few
	// Units on a real one.
	Settle time.Duration
}

// recorder notes callback names in the order they ran, from any goroutine.
type recorder struct {
	mu    sync.Mutex
	names []string
}

func (r *recorder) note(name string) func() {
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.names = append(r.names, name)
	}
}

func (r *recorder) get() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.names...)
}

// Exercise declares the shared clock specs. Call it inside a Ginkgo
// container; newHarness is called before each spec.
func Exercise(newHarness func() Harness) {
	var (
		h   Harness
		rec *recorder
		u   time.Duration
	)
	BeforeEach(func() {
		h = newHarness()
		rec = &recorder{}
		u = h.Unit
	})
	eventually := func(f func() []string) AsyncAssertion {
		GinkgoHelper()
		return Eventually(f).WithTimeout(h.Settle + 2*time.Second).WithPolling(time.Millisecond)
	}

	It("does not move backwards and moves forward as time elapses", func() {
		start := h.Clock.Now()
		h.Elapse(2 * u)
		Expect(h.Clock.Now().Sub(start)).To(BeNumerically(">=", 2*u))
	})

	It("runs a callback after its duration and not before", func() {
		h.Clock.AfterFunc(3*u, rec.note("a"))
		h.Elapse(u)
		Expect(rec.get()).To(BeEmpty())
		h.Elapse(3 * u)
		eventually(rec.get).Should(Equal([]string{"a"}))
	})

	It("runs callbacks in the order of their times, whatever the order they were scheduled in", func() {
		h.Clock.AfterFunc(3*u, rec.note("third"))
		h.Clock.AfterFunc(u, rec.note("first"))
		h.Clock.AfterFunc(2*u, rec.note("second"))
		h.Elapse(4 * u)
		eventually(rec.get).Should(Equal([]string{"first", "second", "third"}))
	})

	It("does not run a stopped callback, and Stop reports whether it stopped one", func() {
		t := h.Clock.AfterFunc(2*u, rec.note("stopped"))
		h.Clock.AfterFunc(3*u, rec.note("kept"))
		Expect(t.Stop()).To(BeTrue())
		Expect(t.Stop()).To(BeFalse(), "a second Stop has nothing to stop")
		h.Elapse(4 * u)
		eventually(rec.get).Should(Equal([]string{"kept"}))
	})

	It("reports false when stopping a callback that already ran", func() {
		t := h.Clock.AfterFunc(u, rec.note("ran"))
		h.Elapse(2 * u)
		eventually(rec.get).Should(Equal([]string{"ran"}))
		Expect(t.Stop()).To(BeFalse())
	})

	It("lets a callback schedule another", func() {
		h.Clock.AfterFunc(u, func() {
			rec.note("outer")()
			h.Clock.AfterFunc(u, rec.note("inner"))
		})
		h.Elapse(u + u/2)
		eventually(rec.get).Should(Equal([]string{"outer"}))
		h.Elapse(u + u/2)
		eventually(rec.get).Should(Equal([]string{"outer", "inner"}))
	})
}
