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

// Verdicts as the default classifier gives them (rule names from
// classify.DefaultRules), so that each spec's failure reads as what happened.
var (
	// netTimeout: a timeout on the way to the dependency.
	netTimeout = verdict(classify.Transient, classify.Medium, classify.Network, "timeout")
	// serverError: a 5xx answer from the dependency.
	serverError = verdict(classify.Transient, classify.Medium, classify.Dependency, "http-5xx")
	// rateLimited: a 429 from the dependency.
	rateLimited = verdict(classify.RateLimited, classify.Medium, classify.Dependency, "rate-limited")
	// gatewayTimeout: the payment gateway did not answer a charge in time.
	gatewayTimeout = verdict(classify.Indeterminate, classify.Medium, classify.Dependency, "payment-timeout")
	// unauthorized: a 401 from the dependency, our credentials refused.
	unauthorized = verdict(classify.Critical, classify.High, classify.Auth, "auth-status")
	// declined: a declined card, a verdict on the job's data.
	declined = verdict(classify.Permanent, classify.Low, classify.Data, "card-declined")
	// localPermission: EACCES on a file on the worker's own host.
	localPermission = verdict(classify.Critical, classify.High, classify.System, "permission-denied")
	// handlerBug: an error no rule matches, from the worker's own code.
	handlerBug = verdict(classify.Transient, classify.Medium, classify.System, "fallback")
	// shutdown: the job was stopped by a shutdown.
	shutdown = verdict(classify.Canceled, classify.Low, classify.System, "shutdown")
)

func verdict(c classify.Class, sev classify.Severity, src classify.Source, rule string) classify.Classification {
	return classify.Classification{Class: c, Severity: sev, Source: src, Rule: rule}
}

// fail makes n admitted calls that fail with the classifier's verdict v.
func fail(b *degrade.Breaker, n int, v classify.Classification) {
	GinkgoHelper()
	for i := range n {
		p, err := b.Allow()
		Expect(err).NotTo(HaveOccurred(), "call %d", i)
		b.Record(p, degrade.Failure(v))
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
