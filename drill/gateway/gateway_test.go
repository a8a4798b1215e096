package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/drill/gateway"
	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/failure"
)

const pay = classify.PaymentGateway

var _ = Describe("Config", func() {
	It("names the bad field", func() {
		in := gateway.NewLocked(injector())
		now := func() time.Duration { return 0 }
		for cfg, field := range map[*gateway.Config]string{
			{Faults: in, Now: now}:                        "name",
			{Name: "x", Now: now}:                         "faults",
			{Name: "x", Faults: in}:                       "now",
			{Name: "x", Faults: in, Now: now, Scale: 0.5}: "scale",
		} {
			_, err := gateway.New(*cfg)
			Expect(err).To(MatchError(ContainSubstring(field + ":")))
		}
	})

	It("listens on loopback on a free port, once", func() {
		g, err := gateway.New(gateway.Config{Name: "x", Faults: gateway.NewLocked(injector()), Now: func() time.Duration { return 0 }})
		Expect(err).NotTo(HaveOccurred())
		Expect(g.URL()).To(BeEmpty())
		Expect(g.Start()).To(Succeed())
		DeferCleanup(func() { Expect(g.Close(context.Background())).To(Succeed()) })
		Expect(g.URL()).To(MatchRegexp(`^http://127\.0\.0\.1:\d+$`))
		Expect(g.Start()).To(MatchError(ContainSubstring("already started")))
	})
})

var _ = Describe("Gateway", func() {
	var clk *scenarioClock
	BeforeEach(func() { clk = &scenarioClock{} })

	gw := func(dep string, payment bool, fs ...faults.Fault) *gateway.Gateway {
		GinkgoHelper()
		return start(gateway.Config{Name: dep, Faults: gateway.NewLocked(injector(fs...)), Now: clk.Now, Scale: 1000, Payment: payment})
	}

	It("logs every call: offset, job, key, fault, true class, status, outcome, effect and charge", func() {
		f := dependencyFault("gw-503", pay, faults.HTTPStatus{Code: 503})
		f.Schedule.FirstCalls = 1
		g := gw(pay, true, f)
		c := client(g, 5*time.Second)

		clk.Set(1500 * ms)
		_, err := c.Call(context.Background(), "job-1", "key-1")
		Expect(err).To(MatchError(ContainSubstring("http 503")))
		clk.Set(2500 * ms)
		ans, err := c.Call(context.Background(), "job-1", "key-1")
		Expect(err).NotTo(HaveOccurred())
		Expect(ans).To(Equal(gateway.Answer{Status: 200, Charge: "ch_1"}))

		calls := g.Calls()
		Expect(calls).To(HaveLen(2))
		Expect(calls[0]).To(beCall(gateway.Call{Seq: 1, At: 1500 * ms, Job: "job-1", Key: "key-1", Fault: "gw-503", Class: classify.Transient, Status: 503, Outcome: gateway.OutcomeError}))
		Expect(calls[1]).To(beCall(gateway.Call{Seq: 2, At: 2500 * ms, Job: "job-1", Key: "key-1", Status: 200, Outcome: gateway.OutcomeOK, TookEffect: true, Charge: 1}))
		Expect(calls[0].Wall).NotTo(BeZero())
		Expect(calls[1].Wall).NotTo(BeTemporally("<", calls[0].Wall))
	})

	It("takes the job and the key from a JSON body too", func() {
		g := gw("inventory", false)
		resp, err := http.Post(g.URL()+gateway.CallPath, "application/json", bytes.NewBufferString(`{"job":"job-7","idempotencyKey":"k-7"}`))
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(200))
		Expect(g.Calls()).To(ConsistOf(HaveField("Job", "job-7")))
		Expect(g.Calls()[0].Key).To(Equal("k-7"))
	})

	It("answers a decline as a Stripe-like card error with status 402", func() {
		g := gw(pay, true, dependencyFault("declines", pay, faults.CardDeclined{Codes: []string{"do_not_honor"}}))
		resp, err := http.Post(g.URL()+gateway.CallPath, "application/json", nil)
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusPaymentRequired))
		Expect(resp.Header.Get(gateway.HeaderFault)).To(Equal("declines"))
		Expect(resp.Header.Get(gateway.HeaderClass)).To(Equal("permanent"))
		var body map[string]map[string]string
		Expect(json.NewDecoder(resp.Body).Decode(&body)).To(Succeed())
		Expect(body["error"]).To(Equal(map[string]string{"type": "card_error", "code": "card_declined", "decline_code": "do_not_honor", "message": "Your card was declined."}))
		Expect(g.Calls()[0].TookEffect).To(BeFalse())
	})

	It("sends Retry-After in whole seconds of scenario time, rounded up, and logs the rounding", func() {
		f1 := dependencyFault("limit", "api", faults.RateLimit{RetryAfter: 1500 * ms})
		f1.Schedule.FirstCalls = 1
		f2 := dependencyFault("limit-2s", "api", faults.RateLimit{RetryAfter: 2 * time.Second})
		g := gw("api", false, f1, f2)
		for range 2 {
			resp, err := http.Post(g.URL()+gateway.CallPath, "application/json", nil)
			Expect(err).NotTo(HaveOccurred())
			resp.Body.Close()
			Expect(resp.StatusCode).To(Equal(429))
			Expect(resp.Header.Get("Retry-After")).To(Equal("2"))
		}
		calls := g.Calls()
		Expect(calls[0].RetryAfter).To(Equal("2"))
		Expect(calls[0].RetryAfterRounded).To(BeTrue())
		Expect(calls[1].RetryAfter).To(Equal("2"))
		Expect(calls[1].RetryAfterRounded).To(BeFalse())
	})

	It("carries the authentication sentinel", func() {
		g := gw("api", false, dependencyFault("revoked", "api", faults.AuthFailure{}))
		_, err := client(g, 5*time.Second).Call(context.Background(), "job-1", "")
		Expect(err).To(MatchError(failure.ErrAuthentication))
		Expect(err).To(MatchError(ContainSubstring("http 401 Unauthorized")))
	})

	Describe("payments", func() {
		It("replays a key already charged instead of charging it again", func() {
			g := gw(pay, true)
			c := client(g, 5*time.Second)
			first, err := c.Call(context.Background(), "job-1", "key-1")
			Expect(err).NotTo(HaveOccurred())
			again, err := c.Call(context.Background(), "job-1", "key-1")
			Expect(err).NotTo(HaveOccurred())
			Expect(again.Replayed).To(BeTrue())
			Expect(again.Charge).To(Equal(first.Charge))
			other, err := c.Call(context.Background(), "job-2", "key-2")
			Expect(err).NotTo(HaveOccurred())
			Expect(other.Charge).NotTo(Equal(first.Charge))

			calls := g.Calls()
			Expect(calls[1]).To(beCall(gateway.Call{Seq: 2, Job: "job-1", Key: "key-1", Status: 200, Outcome: gateway.OutcomeReplayed, TookEffect: true, Replayed: true}))
			Expect([]int{calls[0].Charge, calls[1].Charge, calls[2].Charge}).To(Equal([]int{1, 0, 1}))
		})

		It("charges again when the dependency ignores keys, and per job without a key", func() {
			g := start(gateway.Config{Name: pay, Faults: gateway.NewLocked(injector()), Now: clk.Now, Payment: true, IgnoresIdempotencyKeys: true})
			c := client(g, 5*time.Second)
			for _, key := range []string{"key-1", "key-1", "", ""} {
				_, err := c.Call(context.Background(), "job-1", key)
				Expect(err).NotTo(HaveOccurred())
			}
			var charges []int
			for _, call := range g.Calls() {
				charges = append(charges, call.Charge)
			}
			Expect(charges).To(Equal([]int{1, 2, 1, 2}))
		})

		It("counts a charged 5xx as a charge, and replays it on the retry", func() {
			f := dependencyFault("lost-answer", pay, faults.Indeterminate5xx{})
			f.Schedule.FirstCalls = 1
			g := gw(pay, true, f)
			c := client(g, 5*time.Second)
			_, err := c.Call(context.Background(), "job-1", "key-1")
			Expect(err).To(MatchError(ContainSubstring("http 502")))
			ans, err := c.Call(context.Background(), "job-1", "key-1")
			Expect(err).NotTo(HaveOccurred())
			Expect(ans.Replayed).To(BeTrue())
			calls := g.Calls()
			Expect(calls[0]).To(beCall(gateway.Call{Seq: 1, Job: "job-1", Key: "key-1", Fault: "lost-answer", Class: classify.Indeterminate, Status: 502, Outcome: gateway.OutcomeError, TookEffect: true, Charge: 1}))
			Expect(calls[1].Outcome).To(Equal(gateway.OutcomeReplayed))
			Expect(calls[1].Charge).To(BeZero())
		})

		It("records a charged timeout as taking effect, then drops the connection", func() {
			f := dependencyFault("slow-charge", pay, faults.GatewayTimeout{After: 30 * time.Second, ChargedProbability: 1})
			f.Schedule.FirstCalls = 1
			g := gw(pay, true, f) // the hang is 30s/1000 = 30ms, under the client's deadline
			c := client(g, 5*time.Second)
			began := time.Now()
			ans, err := c.Call(context.Background(), "job-1", "key-1")
			Expect(time.Since(began)).To(BeNumerically(">=", 30*ms))
			var te *failure.TimeoutError
			Expect(errors.As(err, &te)).To(BeTrue(), "got %v", err)
			Expect(te.Op).To(Equal(pay))
			Expect(ans).To(Equal(gateway.Answer{Fault: "slow-charge", Class: "indeterminate"}))

			calls := g.Calls()
			Expect(calls[0]).To(beCall(gateway.Call{Seq: 1, Job: "job-1", Key: "key-1", Fault: "slow-charge", Class: classify.Indeterminate, Latency: 30 * time.Second, Outcome: gateway.OutcomeDropped, TookEffect: true, Charge: 1}))

			_, err = c.Call(context.Background(), "job-1", "key-1")
			Expect(err).NotTo(HaveOccurred())
			Expect(g.Calls()[1].Outcome).To(Equal(gateway.OutcomeReplayed))
		})

		It("logs a timeout when the caller gives up first, the charge still taken", func() {
			g := start(gateway.Config{Name: pay, Faults: gateway.NewLocked(injector(dependencyFault("hang", pay, faults.GatewayTimeout{After: time.Hour, ChargedProbability: 1}))), Now: clk.Now, Payment: true})
			_, err := client(g, 100*ms).Call(context.Background(), "job-1", "key-1")
			Expect(err).To(BeAssignableToTypeOf(&failure.TimeoutError{}))
			Eventually(g.Calls).WithTimeout(5 * time.Second).Should(ConsistOf(And(
				HaveField("Outcome", gateway.OutcomeTimeout), HaveField("TookEffect", true), HaveField("Charge", 1), HaveField("Status", 0))))
		})
	})

	Describe("schedules on scaled time", func() {
		// faulted lists which of the gateway's calls got a fault.
		faulted := func(g *gateway.Gateway) []bool {
			var out []bool
			for _, c := range g.Calls() {
				out = append(out, c.Fault != "")
			}
			return out
		}

		It("hits the first N calls only", func() {
			f := dependencyFault("first-3", "api", faults.HTTPStatus{Code: 500})
			f.Schedule.FirstCalls = 3
			g := gw("api", false, f)
			c := client(g, 5*time.Second)
			var errs []bool
			for range 5 {
				_, err := c.Call(context.Background(), "job", "")
				errs = append(errs, err != nil)
			}
			Expect(errs).To(Equal([]bool{true, true, true, false, false}))
			Expect(faulted(g)).To(Equal(errs))
		})

		It("draws a probability's hits as the injector does", func() {
			f := dependencyFault("coin", "api", faults.HTTPStatus{Code: 503})
			f.Schedule.Probability = 0.3
			twin := injector(f)
			g := gw("api", false, f)
			c := client(g, 5*time.Second)
			var want, got []bool
			for i := range 40 {
				at := time.Duration(i) * 100 * ms
				clk.Set(at)
				want = append(want, twin.Call(f.Target, faults.Call{At: at, JobID: "job"}).Err != nil)
				_, err := c.Call(context.Background(), "job", "")
				got = append(got, err != nil)
			}
			Expect(got).To(Equal(want))
			Expect(got).To(ContainElement(true))
			Expect(got).To(ContainElement(false))
		})

		It("follows a flapping primary's duty cycle on the drill's scaled clock", func() {
			m := faults.Flapping{Period: time.Second, Duty: 0.4, Jitter: 100 * ms}
			f := dependencyFault("flap", "primary", m)
			began := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			var wallNanos atomic.Int64
			wall := func() time.Time { return began.Add(time.Duration(wallNanos.Load())) }
			g := start(gateway.Config{Name: "primary", Faults: gateway.NewLocked(injector(f)), Now: gateway.ScaledNow(began, 10, wall), Scale: 10})
			c := client(g, 5*time.Second)
			var want, got []bool
			for range 80 {
				wallNanos.Add(int64(5 * ms)) // 50ms of scenario time
				want = append(want, m.DownAt(seed, "flap", time.Duration(wallNanos.Load())*10))
				_, err := c.Call(context.Background(), "job", "")
				got = append(got, err != nil)
			}
			Expect(got).To(Equal(want))
			down := 0
			for _, d := range got {
				if d {
					down++
				}
			}
			Expect(down).To(BeNumerically("~", 32, 6), "down for about 40%% of 4s")
			Expect(g.Calls()[79].At).To(Equal(4 * time.Second))
		})
	})

	It("delays an answer by the latency over the scale", func() {
		g := start(gateway.Config{Name: "api", Faults: gateway.NewLocked(injector(dependencyFault("slow", "api", faults.Latency{Mean: 2 * time.Second}))), Now: clk.Now, Scale: 10})
		began := time.Now()
		ans, err := client(g, 5*time.Second).Call(context.Background(), "job", "")
		Expect(err).NotTo(HaveOccurred())
		Expect(time.Since(began)).To(BeNumerically(">=", 200*ms))
		Expect(ans.Fault).To(Equal("slow"))
		Expect(g.Calls()[0].Latency).To(Equal(2 * time.Second))
		Expect(g.Calls()[0].Outcome).To(Equal(gateway.OutcomeOK))
	})

	It("closes without hanging while calls hang in flight, and the callers see timeouts", func() {
		g, err := gateway.New(gateway.Config{Name: pay, Faults: gateway.NewLocked(injector(dependencyFault("hang", pay, faults.GatewayTimeout{After: time.Hour}))), Now: clk.Now, Payment: true})
		Expect(err).NotTo(HaveOccurred())
		Expect(g.Start()).To(Succeed())
		c := client(g, 0)
		var wg sync.WaitGroup
		errs := make([]error, 3)
		for i := range errs {
			wg.Go(func() { _, errs[i] = c.Call(context.Background(), "job", "") })
		}
		Eventually(g.Calls).WithTimeout(5 * time.Second).Should(HaveLen(3))

		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		began := time.Now()
		Expect(g.Close(ctx)).To(Succeed())
		Expect(time.Since(began)).To(BeNumerically("<", 2*time.Second))
		wg.Wait()
		for _, err := range errs {
			Expect(err).To(BeAssignableToTypeOf(&failure.TimeoutError{}))
		}
		Expect(g.Calls()).To(HaveEach(HaveField("Outcome", gateway.OutcomeDropped)))
	})

	It("leaves a caller's own cancellation as context.Canceled, for a worker's shutdown rule", func() {
		g := gw(pay, true, dependencyFault("hang", pay, faults.GatewayTimeout{After: time.Hour}))
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			defer GinkgoRecover()
			Eventually(g.Calls).WithTimeout(5 * time.Second).Should(HaveLen(1))
			cancel()
		}()
		_, err := client(g, 0).Call(ctx, "job", "key")
		Expect(err).To(MatchError(context.Canceled))
		v := classifier.Classify(err, classify.Scope{Dependency: pay, ShuttingDown: true})
		Expect(v.Class).To(Equal(classify.Indeterminate), "canceled mid-charge: the request may be out")
	})

	It("gives a refused dial once the gateway is closed", func() {
		g, err := gateway.New(gateway.Config{Name: pay, Faults: gateway.NewLocked(injector()), Now: clk.Now, Payment: true})
		Expect(err).NotTo(HaveOccurred())
		Expect(g.Start()).To(Succeed())
		c := client(g, 5*time.Second)
		Expect(g.Close(context.Background())).To(Succeed())
		_, err = c.Call(context.Background(), "job", "key")
		Expect(classifier.Classify(err, classify.Scope{Dependency: pay}).Rule).To(Equal("payment-dial-failed"))
	})

	Describe("SetHealthy", func() {
		It("answers every call OK with no fault while healthy, and logs it", func() {
			g := gw("api", false, dependencyFault("down", "api", faults.Outage{}))
			c := client(g, 5*time.Second)
			_, err := c.Call(context.Background(), "job", "")
			Expect(err).To(MatchError(ContainSubstring("dial tcp api: connect: connection refused")))

			g.SetHealthy(true)
			ans, err := c.Call(context.Background(), "job", "")
			Expect(err).NotTo(HaveOccurred())
			Expect(ans.Fault).To(BeEmpty())

			g.SetHealthy(false)
			_, err = c.Call(context.Background(), "job", "")
			Expect(err).To(HaveOccurred())

			calls := g.Calls()
			Expect([]gateway.Outcome{calls[0].Outcome, calls[1].Outcome, calls[2].Outcome}).To(Equal([]gateway.Outcome{gateway.OutcomeRefused, gateway.OutcomeOK, gateway.OutcomeRefused}))
			Expect([]bool{calls[0].Healthy, calls[1].Healthy, calls[2].Healthy}).To(Equal([]bool{false, true, false}))
			Expect(calls[1].Fault).To(BeEmpty())
		})

		It("releases a hang in flight", func() {
			g := gw(pay, true, dependencyFault("hang", pay, faults.GatewayTimeout{After: 10 * time.Hour}))
			done := make(chan error, 1)
			go func() {
				_, err := client(g, 0).Call(context.Background(), "job", "key")
				done <- err
			}()
			Eventually(g.Calls).WithTimeout(5 * time.Second).Should(HaveLen(1))
			g.SetHealthy(true)
			var err error
			Eventually(done).WithTimeout(5 * time.Second).Should(Receive(&err))
			Expect(err).To(BeAssignableToTypeOf(&failure.TimeoutError{}))
			Expect(g.Calls()[0].Outcome).To(Equal(gateway.OutcomeDropped))
		})
	})
})

// beCall matches a logged call on every field but its wall-clock ones
// (Wall, Took), which a spec cannot know.
func beCall(want gateway.Call) OmegaMatcher {
	return WithTransform(func(c gateway.Call) gateway.Call {
		c.Wall, c.Took = time.Time{}, 0
		return c
	}, Equal(want))
}
