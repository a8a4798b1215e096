package oracle_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/degrade"
)

var _ = Describe("The breakers checker (oracle.Breakers)", func() {
	var (
		led *oracle.Ledger
		b   *oracle.Breakers
	)
	BeforeEach(func() {
		led = oracle.NewLedger(1, time.Unix(0, 0), func() time.Duration { return 0 }, 3, nil)
		b = oracle.NewBreakers(led)
		b.Track("gw")
	})

	It("reads a breaker across processes: open if any is, closed when all are, half-open between", func() {
		Expect(b.Transition(time.Second, "w1", "gw", "closed", "open", "failures")).To(BeTrue())
		Expect(b.State("gw")).To(Equal(degrade.Open))
		b.Transition(2*time.Second, "w1", "gw", "open", "half-open", "cool-down")
		Expect(b.State("gw")).To(Equal(degrade.HalfOpen))
		b.Transition(3*time.Second, "w2", "gw", "closed", "open", "failures")
		Expect(b.State("gw")).To(Equal(degrade.Open))
		b.Restart("w2")
		Expect(b.State("gw")).To(Equal(degrade.HalfOpen), "a restarted process's breaker starts closed")
		Expect(led.ViolationCount(oracle.InvBreakerLegal)).To(BeZero())
		Expect(b.Transitions()).To(HaveLen(3))
		Expect(b.Transition(time.Second, "w1", "other", "closed", "open", "")).To(BeFalse(), "a breaker the run does not have")
	})

	It("fails a move that skips a state or does not leave the state the process's breaker was in, naming the worker", func() {
		b.Transition(time.Second, "w1", "gw", "closed", "half-open", "skipped")
		b.Transition(2*time.Second, "w2", "gw", "open", "half-open", "never opened")
		Expect(led.ViolationCount(oracle.InvBreakerLegal)).To(BeEquivalentTo(2))
		Expect(led.Violations()[1].Message).To(Equal("breaker gw of worker w2 moved open → half-open (never opened) at +2s, but it was closed"))
	})

	It("checks a breaker that starts in another state than closed from that state (the simulator's one process)", func() {
		b.Begin("team", "", degrade.Open)
		b.Transition(time.Second, "", "team", "open", "half-open", "cool-down")
		Expect(led.ViolationCount(oracle.InvBreakerLegal)).To(BeZero())
		b.Transition(2*time.Second, "", "team", "open", "closed", "wrong")
		Expect(led.Violations()[0].Message).To(Equal("breaker team moved open → closed (wrong), but it was half-open"))
	})
})
