package gateway_test

import (
	"bytes"
	"context"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/drill/gateway"
	"github.com/faultline/faultline/faults"
)

var _ = Describe("Gateway task and attempt selectors", func() {
	var (
		g *gateway.Gateway
		c *gateway.Client
	)
	BeforeEach(func() {
		clk := &scenarioClock{}
		first := dependencyFault("first-attempt", pay, faults.HTTPStatus{Code: 503})
		first.Schedule.Attempts = []int{1}
		refunds := dependencyFault("refunds", pay, faults.HTTPStatus{Code: 502})
		refunds.Schedule.Tasks = []string{"refund"}
		g = start(gateway.Config{Name: pay, Faults: gateway.NewLocked(injector(first, refunds)), Now: clk.Now, Scale: 1000})
		c = client(g, 5*time.Second)
	})

	It("hits a call by the attempt and task the Client sends, and only those", func() {
		_, err := c.CallFor(context.Background(), gateway.Caller{Job: "j1", Task: "charge", Attempt: 1})
		Expect(err).To(HaveOccurred())
		_, err = c.CallFor(context.Background(), gateway.Caller{Job: "j1", Task: "charge", Attempt: 2})
		Expect(err).NotTo(HaveOccurred(), "the retry")
		_, err = c.CallFor(context.Background(), gateway.Caller{Job: "j2", Task: "refund", Attempt: 3})
		Expect(err).To(HaveOccurred())
		Expect(g.Calls()).To(HaveLen(3))
		Expect([]string{g.Calls()[0].Fault, g.Calls()[1].Fault, g.Calls()[2].Fault}).To(Equal([]string{"first-attempt", "", "refunds"}))
	})

	It("never hits a call that does not say its task or attempt (a black box that sends only the job)", func() {
		_, err := c.Call(context.Background(), "j1", "k1")
		Expect(err).NotTo(HaveOccurred())
		Expect(g.Calls()[0].Fault).To(BeEmpty())
	})

	It("reads them from the JSON body too, the headers winning", func() {
		post := func(body, attempt string) string {
			GinkgoHelper()
			req, err := http.NewRequest(http.MethodPost, g.URL()+gateway.CallPath, bytes.NewBufferString(body))
			Expect(err).NotTo(HaveOccurred())
			if attempt != "" {
				req.Header.Set(gateway.HeaderAttempt, attempt)
			}
			resp, err := http.DefaultClient.Do(req)
			Expect(err).NotTo(HaveOccurred())
			resp.Body.Close()
			return resp.Header.Get(gateway.HeaderFault)
		}
		Expect(post(`{"job": "j1", "task": "refund", "attempt": 2}`, "")).To(Equal("refunds"))
		Expect(post(`{"job": "j1", "task": "charge", "attempt": 1}`, "")).To(Equal("first-attempt"))
		Expect(post(`{"job": "j1", "task": "charge", "attempt": 1}`, "2")).To(BeEmpty(), "the header's attempt wins")
		Expect(post(`{"job": "j1"}`, "x")).To(BeEmpty(), "an attempt that is no number is none")
	})
})
