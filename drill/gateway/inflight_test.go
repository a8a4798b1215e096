package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/drill/gateway"
	"github.com/faultline/faultline/faults"
)

var _ = Describe("Gateway calls in flight by worker (schedule.when, issue 24)", func() {
	var (
		g   *gateway.Gateway
		c   *gateway.Client
		clk *scenarioClock
	)
	BeforeEach(func() {
		clk = &scenarioClock{}
		// w9's calls hang for 2s of scenario time (20ms at scale 100).
		slow := dependencyFault("slow", pay, faults.Latency{Mean: 2 * time.Second})
		slow.Schedule.Jobs = []string{"slow-job"}
		g = start(gateway.Config{Name: pay, Faults: gateway.NewLocked(injector(slow)), Now: clk.Now, Scale: 100})
		c = client(g, 5*time.Second)
	})

	It("says which worker has a call in flight: from its arrival until its answer, by X-Faultline-Worker", func() {
		Expect(g.InFlight("w1")).To(BeFalse())
		done := make(chan error, 1)
		go func() {
			_, err := c.CallFor(context.Background(), gateway.Caller{Job: "slow-job", Worker: "w1"})
			done <- err
		}()
		Eventually(func() bool { return g.InFlight("w1") }).WithTimeout(5 * time.Second).WithPolling(time.Millisecond).Should(BeTrue())
		Expect(g.InFlight("w2")).To(BeFalse(), "another worker")
		Expect(g.InFlight("")).To(BeFalse(), "no worker")
		Eventually(done).WithTimeout(5 * time.Second).Should(Receive(BeNil()))
		Expect(g.InFlight("w1")).To(BeFalse(), "answered")
		Expect(g.Calls()[0].Worker).To(Equal("w1"))

		By("a call that does not say its worker is no worker's")
		_, err := c.CallFor(context.Background(), gateway.Caller{Job: "j2"})
		Expect(err).NotTo(HaveOccurred())
		Expect(g.Calls()[1].Worker).To(BeEmpty())
	})

	It("runs an OnCall hook on the worker's next call before its answer, however quick, once", func() {
		var ran atomic.Int32
		var inFlightThen atomic.Bool
		cancel := g.OnCall("w2", func() {
			ran.Add(1)
			inFlightThen.Store(g.InFlight("w2"))
			time.Sleep(30 * time.Millisecond) // the answer waits for the hook
		})
		_, err := c.CallFor(context.Background(), gateway.Caller{Job: "j1", Worker: "w1"})
		Expect(err).NotTo(HaveOccurred())
		Expect(ran.Load()).To(BeZero(), "another worker's call")

		start := time.Now()
		_, err = c.CallFor(context.Background(), gateway.Caller{Job: "j2", Worker: "w2"})
		Expect(err).NotTo(HaveOccurred())
		Expect(time.Since(start)).To(BeNumerically(">=", 30*time.Millisecond), "the answer came after the hook")
		Expect(ran.Load()).To(BeEquivalentTo(1))
		Expect(inFlightThen.Load()).To(BeTrue(), "the hook ran while the call was in flight")
		Expect(cancel()).To(BeFalse(), "it ran")

		_, err = c.CallFor(context.Background(), gateway.Caller{Job: "j3", Worker: "w2"})
		Expect(err).NotTo(HaveOccurred())
		Expect(ran.Load()).To(BeEquivalentTo(1), "one-shot")
	})

	It("holds the answer of a call found in flight until released (HoldInFlight), and holds nothing when none is", func() {
		_, ok := g.HoldInFlight("w5")
		Expect(ok).To(BeFalse(), "no call in flight")
		done := make(chan error, 1)
		go func() {
			_, err := c.CallFor(context.Background(), gateway.Caller{Job: "slow-job", Worker: "w5"})
			done <- err
		}()
		var release func()
		Eventually(func() bool {
			var held bool
			release, held = g.HoldInFlight("w5")
			return held
		}).WithTimeout(5 * time.Second).WithPolling(time.Millisecond).Should(BeTrue())
		// The call's own latency (20ms of wall) passes; its answer waits.
		Consistently(done).WithTimeout(200 * time.Millisecond).ShouldNot(Receive())
		Expect(g.InFlight("w5")).To(BeTrue())
		release()
		release() // once is enough
		Eventually(done).WithTimeout(5 * time.Second).Should(Receive(BeNil()))
		Expect(g.InFlight("w5")).To(BeFalse())
		_, err := c.CallFor(context.Background(), gateway.Caller{Job: "j2", Worker: "w5"})
		Expect(err).NotTo(HaveOccurred(), "a released hold holds nothing more")
	})

	It("never runs a hook canceled before the worker called", func() {
		var ran atomic.Int32
		cancel := g.OnCall("w3", func() { ran.Add(1) })
		Expect(cancel()).To(BeTrue())
		Expect(cancel()).To(BeTrue(), "twice")
		_, err := c.CallFor(context.Background(), gateway.Caller{Job: "j1", Worker: "w3"})
		Expect(err).NotTo(HaveOccurred())
		Expect(ran.Load()).To(BeZero())
	})

	It("reads the worker from the JSON body when the header is absent", func() {
		resp, err := http.Post(g.URL()+gateway.CallPath, "application/json", strings.NewReader(`{"job": "j1", "worker": "w4"}`))
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(g.Calls()[0].Worker).To(Equal("w4"))
		Expect(g.InFlight("w4")).To(BeFalse(), "answered")
	})
})
