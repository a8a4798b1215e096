package degrade_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/reference/degrade"
)

func TestDegrade(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "degrade")
}

// t0 is where every virtual clock in these specs starts.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// newBreaker builds a breaker named "gateway" on clk, failing the spec on a
// configuration error.
func newBreaker(cfg degrade.BreakerConfig, clk clock.Clock) *degrade.Breaker {
	GinkgoHelper()
	if cfg.Name == "" {
		cfg.Name = "gateway"
	}
	b, err := degrade.NewBreaker(cfg, clk)
	Expect(err).NotTo(HaveOccurred())
	return b
}

// call makes one call through b with outcome o; it reports whether the call
// was admitted.
func call(b *degrade.Breaker, o degrade.Outcome) bool {
	GinkgoHelper()
	p, err := b.Allow()
	if err != nil {
		return false
	}
	b.Record(p, o)
	return true
}

// fail makes n admitted calls that fail with class c.
func fail(b *degrade.Breaker, n int, c classify.Class) {
	GinkgoHelper()
	for i := range n {
		p, err := b.Allow()
		Expect(err).NotTo(HaveOccurred(), "call %d", i)
		b.Record(p, degrade.Failure(c))
	}
}

// recorder collects the transitions a breaker delivers to it.
type recorder struct{ got []degrade.Transition }

func (r *recorder) listen(t degrade.Transition) { r.got = append(r.got, t) }

// path returns the target states of the recorded transitions.
func (r *recorder) path() []degrade.State {
	s := make([]degrade.State, len(r.got))
	for i, t := range r.got {
		s[i] = t.To
	}
	return s
}

// untilHalfOpen advances clk to the moment b's open duration elapses.
func untilHalfOpen(b *degrade.Breaker, clk *clock.Virtual) {
	GinkgoHelper()
	Expect(b.State()).To(Equal(degrade.Open))
	clk.RunUntil(b.OpenUntil())
	Expect(b.State()).To(Equal(degrade.HalfOpen))
}

// probeSucceed makes n successful probe calls.
func probeSucceed(b *degrade.Breaker, n int) {
	GinkgoHelper()
	for i := range n {
		p, err := b.Allow()
		Expect(err).NotTo(HaveOccurred(), "probe %d", i)
		Expect(p.IsProbe()).To(BeTrue())
		b.Record(p, degrade.Success())
	}
}

// legal reports whether a breaker may go from one state to another.
func legal(from, to degrade.State) bool {
	switch {
	case from == degrade.Closed && to == degrade.Open,
		from == degrade.Open && to == degrade.HalfOpen,
		from == degrade.HalfOpen && to == degrade.Open,
		from == degrade.HalfOpen && to == degrade.Closed:
		return true
	}
	return false
}
