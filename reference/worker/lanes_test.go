package worker_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/reference/degrade"
	"github.com/faultline/faultline/reference/worker"
)

var _ = Describe("Lanes", func() {
	var (
		clk            *clock.Virtual
		gateway, email *degrade.Breaker
		lanes          *worker.Lanes
	)
	trip := func(b *degrade.Breaker) {
		GinkgoHelper()
		p, err := b.Allow()
		Expect(err).NotTo(HaveOccurred())
		b.Record(p, degrade.Failure(classify.Classification{Class: classify.Transient, Severity: classify.Medium, Source: classify.Network}))
		Expect(b.State()).To(Equal(degrade.Open))
	}
	BeforeEach(func() {
		clk = clock.NewVirtual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		var err error
		gateway, err = degrade.NewBreaker(degrade.BreakerConfig{Name: "gateway", ConsecutiveFailures: 1, OpenDuration: 10 * time.Second}, clk)
		Expect(err).NotTo(HaveOccurred())
		email, err = degrade.NewBreaker(degrade.BreakerConfig{Name: "smtp", ConsecutiveFailures: 1, OpenDuration: 10 * time.Second}, clk)
		Expect(err).NotTo(HaveOccurred())
		lanes = worker.NewLanes(map[string][]string{
			"payments": {"gateway"},
			"mixed":    {"gateway", "smtp"},
			"reports":  {"gateway", ""}, // a task that calls nothing
			"ledger":   {"ledger"},      // no breaker guards it
		}, map[string]worker.StateReader{"gateway": gateway, "smtp": email})
	})

	It("closes a lane while every dependency of its tasks has an open breaker, and only then", func() {
		for _, q := range []string{"payments", "mixed", "reports", "ledger", "unknown"} {
			Expect(lanes.Open(q)).To(BeTrue(), q)
		}
		trip(gateway)
		Expect(lanes.Open("payments")).To(BeFalse(), "its one dependency's breaker is open")
		Expect(lanes.Open("mixed")).To(BeTrue(), "smtp still runs")
		Expect(lanes.Open("reports")).To(BeTrue(), "a task with no dependency runs whatever the breakers")
		Expect(lanes.Open("ledger")).To(BeTrue())
		trip(email)
		Expect(lanes.Open("mixed")).To(BeFalse())
	})

	It("opens the lane again when the breaker goes half-open, for its probes: a lane is never starved past the open duration", func() {
		trip(gateway)
		Expect(lanes.Open("payments")).To(BeFalse())
		clk.Advance(10 * time.Second)
		Expect(gateway.State()).To(Equal(degrade.HalfOpen))
		Expect(lanes.Open("payments")).To(BeTrue())
	})

	It("opens every lane when there are none (a nil Lanes)", func() {
		var none *worker.Lanes
		Expect(none.Open("payments")).To(BeTrue())
	})
})
