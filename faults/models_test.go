package faults_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/failure"
	"github.com/faultline/faultline/reference/redact"
)

// hit applies m to one call on t through an Injector, as the simulator does.
func hit(m faults.Model, t faults.Target) faults.Effect {
	GinkgoHelper()
	in := mustInjector(1, faults.Fault{Name: "f", Target: t, Model: m})
	e := in.Call(t, faults.Call{At: time.Second})
	Expect(e.Fault).To(Equal("f"))
	return e
}

// sample applies m to n calls on t, through an Injector.
func sample(m faults.Model, t faults.Target, n int) []faults.Effect {
	GinkgoHelper()
	in := mustInjector(7, faults.Fault{Name: "f", Target: t, Model: m})
	out := make([]faults.Effect, n)
	for i := range out {
		out[i] = in.Call(t, faults.Call{At: time.Duration(i) * ms})
	}
	return out
}

func chargedShare(es []faults.Effect) float64 {
	n := 0
	for _, e := range es {
		if e.Charged {
			n++
		}
	}
	return float64(n) / float64(len(es))
}

var _ = Describe("Models", func() {
	// Each model's injected error, its true class, and what the default
	// classifier says of it on a plain dependency and on the payment
	// gateway. Where they differ the row says why: the default classifier
	// is conservative (it does not know that a plain dependency's request
	// may have taken effect, nor that a gateway's 5xx did not).
	DescribeTable("inject errors of their true class, which the default classifier recognises",
		func(m faults.Model, trueClass, onPlain, onGateway classify.Class) {
			Expect(m.Validate()).To(Succeed())
			for _, t := range []faults.Target{inventory, gateway} {
				e := hit(m, t)
				Expect(e.Err).To(HaveOccurred())
				Expect(e.Class).To(Equal(trueClass))
				Expect(m.Class()).To(Equal(trueClass))
			}
			Expect(classOn(hit(m, inventory).Err, "inventory")).To(Equal(onPlain), "plain dependency")
			Expect(classOn(hit(m, gateway).Err, classify.PaymentGateway)).To(Equal(onGateway), "payment gateway")
			// The plain Apply injects the same class.
			Expect(m.Apply(faults.Call{}, rand.New(rand.NewPCG(1, 2))).Class).To(Equal(trueClass))
		},
		Entry("gateway-timeout: indeterminate; a plain dependency's timeout looks transient", faults.GatewayTimeout{}, classify.Indeterminate, classify.Transient, classify.Indeterminate),
		Entry("http-status 503", faults.HTTPStatus{}, classify.Transient, classify.Transient, classify.Transient),
		Entry("http-status 500: the gateway's is indeterminate to the classifier", faults.HTTPStatus{Code: 500}, classify.Transient, classify.Transient, classify.Indeterminate),
		Entry("http-status 502", faults.HTTPStatus{Code: 502}, classify.Transient, classify.Transient, classify.Indeterminate),
		Entry("http-status 504", faults.HTTPStatus{Code: 504}, classify.Transient, classify.Transient, classify.Indeterminate),
		Entry("http-status 501", faults.HTTPStatus{Code: 501}, classify.Transient, classify.Transient, classify.Transient),
		Entry("http-status 429", faults.HTTPStatus{Code: 429}, classify.RateLimited, classify.RateLimited, classify.RateLimited),
		Entry("http-status 401", faults.HTTPStatus{Code: 401}, classify.Critical, classify.Critical, classify.Critical),
		Entry("http-status 403", faults.HTTPStatus{Code: 403}, classify.Critical, classify.Critical, classify.Critical),
		Entry("http-status 407", faults.HTTPStatus{Code: 407}, classify.Critical, classify.Critical, classify.Critical),
		Entry("http-status 408", faults.HTTPStatus{Code: 408}, classify.Transient, classify.Transient, classify.Transient),
		Entry("http-status 400", faults.HTTPStatus{Code: 400}, classify.Permanent, classify.Permanent, classify.Permanent),
		Entry("http-status 402", faults.HTTPStatus{Code: 402}, classify.Permanent, classify.Permanent, classify.Permanent),
		Entry("http-status 404", faults.HTTPStatus{Code: 404}, classify.Permanent, classify.Permanent, classify.Permanent),
		Entry("http-status 422", faults.HTTPStatus{Code: 422}, classify.Permanent, classify.Permanent, classify.Permanent),
		Entry("auth-failure 401", faults.AuthFailure{}, classify.Critical, classify.Critical, classify.Critical),
		Entry("auth-failure 403", faults.AuthFailure{Code: 403}, classify.Critical, classify.Critical, classify.Critical),
		Entry("card-declined", faults.CardDeclined{}, classify.Permanent, classify.Permanent, classify.Permanent),
		Entry("card-declined, a retryable code", faults.CardDeclined{Codes: []string{"try_again_later"}}, classify.Transient, classify.Transient, classify.Transient),
		Entry("rate-limit", faults.RateLimit{}, classify.RateLimited, classify.RateLimited, classify.RateLimited),
		Entry("indeterminate-5xx: a plain dependency's 502 looks transient", faults.Indeterminate5xx{}, classify.Indeterminate, classify.Transient, classify.Indeterminate),
		Entry("indeterminate-5xx 500", faults.Indeterminate5xx{Code: 500}, classify.Indeterminate, classify.Transient, classify.Indeterminate),
		Entry("indeterminate-5xx 504", faults.Indeterminate5xx{Code: 504}, classify.Indeterminate, classify.Transient, classify.Indeterminate),
		Entry("outage: connection refused", faults.Outage{}, classify.Transient, classify.Transient, classify.Transient),
		Entry("outage 503", faults.Outage{Code: 503}, classify.Transient, classify.Transient, classify.Transient),
		Entry("flapping (while down)", faults.Flapping{Duty: 1}, classify.Transient, classify.Transient, classify.Transient),
	)

	DescribeTable("infrastructure outages inject errors of their true class",
		func(m faults.Model, t faults.Target, trueClass classify.Class) {
			e := hit(m, t)
			Expect(e.Class).To(Equal(trueClass))
			Expect(m.Class()).To(Equal(trueClass))
			Expect(classOn(e.Err, "")).To(Equal(trueClass))
		},
		Entry("store-outage on the store", faults.StoreOutage{}, faults.Target{Kind: faults.Store}, classify.Transient),
		Entry("store-outage on the DLQ store", faults.StoreOutage{}, faults.Target{Kind: faults.DLQStore}, classify.Transient),
		Entry("outage on the DLQ store", faults.Outage{}, faults.Target{Kind: faults.DLQStore}, classify.Transient),
		Entry("sink-outage refused", faults.SinkOutage{}, faults.Target{Kind: faults.AlertSink, Name: "on-call"}, classify.Transient),
		Entry("sink-outage 429", faults.SinkOutage{Code: 429}, faults.Target{Kind: faults.AlertSink}, classify.RateLimited),
		Entry("sink-outage 503", faults.SinkOutage{Code: 503}, faults.Target{Kind: faults.AlertSink}, classify.Transient),
		Entry("http-status 410 on a receiver", faults.HTTPStatus{Code: 410}, faults.Target{Kind: faults.AlertSink}, classify.Permanent),
	)

	Describe("gateway-timeout", func() {
		It("makes the caller wait After and returns a timeout naming the call", func() {
			e := hit(faults.GatewayTimeout{}, gateway)
			Expect(e.Latency).To(Equal(30 * time.Second))
			Expect(e.Charged).To(BeFalse())
			te, ok := errors.AsType[*failure.TimeoutError](e.Err)
			Expect(ok).To(BeTrue())
			Expect(*te).To(Equal(failure.TimeoutError{Op: "payment-gateway", After: 30 * time.Second}))

			e = hit(faults.GatewayTimeout{Op: "POST /v1/charges", After: 10 * time.Second}, gateway)
			Expect(e.Err).To(MatchError("POST /v1/charges: timed out after 10s"))
			Expect(e.Latency).To(Equal(10 * time.Second))
		})

		It("says the charge went through with ChargedProbability", func() {
			Expect(chargedShare(sample(faults.GatewayTimeout{ChargedProbability: 1}, gateway, 100))).To(Equal(1.0))
			Expect(chargedShare(sample(faults.GatewayTimeout{ChargedProbability: 0.3}, gateway, 10_000))).To(BeNumerically("~", 0.3, 0.02))
		})
	})

	Describe("latency", func() {
		mean := func(es []faults.Effect) time.Duration {
			var sum time.Duration
			for _, e := range es {
				Expect(e.Err).NotTo(HaveOccurred())
				Expect(e.Latency).To(BeNumerically(">=", 0))
				Expect(e.Latency%ms).To(BeZero(), "whole milliseconds")
				sum += e.Latency
			}
			return sum / time.Duration(len(es))
		}

		DescribeTable("draws whole-millisecond latencies of the distribution's mean",
			func(m faults.Latency, want, tolerance time.Duration) {
				Expect(m.Validate()).To(Succeed())
				Expect(m.Class()).To(Equal(classify.None))
				Expect(mean(sample(m, inventory, 20_000))).To(BeNumerically("~", want, tolerance))
			},
			Entry("constant by default", faults.Latency{}, 100*ms, time.Duration(0)),
			Entry("constant", faults.Latency{Mean: 40 * ms}, 40*ms, time.Duration(0)),
			Entry("uniform", faults.Latency{Distribution: "uniform", Min: 100 * ms, Max: 300 * ms}, 200*ms, 3*ms),
			Entry("uniform, max defaulting to 2×mean", faults.Latency{Distribution: "uniform", Mean: 50 * ms}, 50*ms, 2*ms),
			Entry("exponential", faults.Latency{Distribution: "exponential", Mean: 200 * ms}, 200*ms, 8*ms),
			Entry("normal", faults.Latency{Distribution: "normal", Mean: 200 * ms, StdDev: 20 * ms}, 200*ms, 2*ms),
			Entry("lognormal", faults.Latency{Distribution: "lognormal", Mean: 200 * ms, StdDev: 100 * ms}, 200*ms, 6*ms),
		)

		It("clamps draws to [Min, Max]", func() {
			for _, d := range []string{"uniform", "exponential", "normal", "lognormal"} {
				for _, e := range sample(faults.Latency{Distribution: d, Mean: 100 * ms, Min: 80 * ms, Max: 120 * ms, StdDev: 50 * ms}, inventory, 2000) {
					Expect(e.Latency).To(BeNumerically(">=", 80*ms), d)
					Expect(e.Latency).To(BeNumerically("<=", 120*ms), d)
				}
			}
		})

		It("targets dependencies and stores, and fails nothing", func() {
			Expect(faults.Latency{}.Targets()).To(ConsistOf(faults.Dependency, faults.Store, faults.DLQStore))
			e := hit(faults.Latency{}, faults.Target{Kind: faults.Store})
			Expect(e).To(Equal(faults.Effect{Latency: 100 * ms, Fault: "f"}))
		})
	})

	Describe("http-status and rate-limit", func() {
		It("send a Retry-After header in whole seconds and the exact hint", func() {
			e := hit(faults.RateLimit{}, gateway)
			he, ok := errors.AsType[*failure.HTTPError](e.Err)
			Expect(ok).To(BeTrue())
			Expect(he.Code).To(Equal(http.StatusTooManyRequests))
			Expect(he.RetryAfterHeader()).To(Equal("1"))
			Expect(classifier.Classify(e.Err, classify.Scope{Dependency: "inventory"}).RetryAfter).To(Equal(time.Second))

			e = hit(faults.RateLimit{RetryAfter: 1500 * ms}, gateway)
			he, _ = errors.AsType[*failure.HTTPError](e.Err)
			Expect(he.RetryAfterHeader()).To(Equal("2"))
			Expect(classifier.Classify(e.Err, classify.Scope{Dependency: "inventory"}).RetryAfter).To(Equal(1500 * ms))

			e = hit(faults.HTTPStatus{Code: 503, Body: "maintenance", RetryAfter: 30 * time.Second}, inventory)
			Expect(e.Err).To(MatchError("http 503 Service Unavailable: maintenance"))
			Expect(classifier.Classify(e.Err, classify.Scope{Dependency: "inventory"}).RetryAfter).To(Equal(30 * time.Second))
			he, _ = errors.AsType[*failure.HTTPError](hit(faults.HTTPStatus{Code: 500}, inventory).Err)
			Expect(he.Header).To(BeNil())
		})
	})

	Describe("auth-failure", func() {
		It("refuses the credentials with a body that reads like it and holds no secret", func() {
			e := hit(faults.AuthFailure{}, gateway)
			Expect(e.Err).To(MatchError(failure.ErrAuthentication))
			Expect(e.Err).To(MatchError("http 401 Unauthorized: API key revoked or expired: authentication failed"))
			Expect(redact.Default().String(e.Err.Error())).To(Equal(e.Err.Error()), "nothing to redact")
			he, _ := errors.AsType[*failure.HTTPError](hit(faults.AuthFailure{Code: 403, Body: "forbidden"}, gateway).Err)
			Expect(he.Code).To(Equal(403))
		})
	})

	Describe("card-declined", func() {
		It("declines like a card processor, with the code drawn uniformly from Codes", func() {
			e := hit(faults.CardDeclined{}, gateway)
			Expect(e.Err).To(MatchError("card_declined (insufficient_funds): Your card has insufficient funds."))

			codes := []string{"insufficient_funds", "do_not_honor", "try_again_later", "processing_error"}
			count := map[string]int{}
			for _, e := range sample(faults.CardDeclined{Codes: codes}, gateway, 8000) {
				ce, ok := errors.AsType[*failure.CardError](e.Err)
				Expect(ok).To(BeTrue())
				Expect(ce.Code).To(Equal("card_declined"))
				count[ce.Decline]++
				want := classify.Permanent
				if ce.Decline == "try_again_later" || ce.Decline == "processing_error" {
					want = classify.Transient
				}
				Expect(e.Class).To(Equal(want), ce.Decline)
				Expect(classOn(e.Err, classify.PaymentGateway)).To(Equal(want), ce.Decline)
			}
			for _, c := range codes {
				Expect(count[c]).To(BeNumerically("~", 2000, 150), c)
			}
			Expect(faults.CardDeclined{Codes: codes}.Class()).To(Equal(classify.Permanent))
		})
	})

	Describe("indeterminate-5xx", func() {
		It("says the charge went through, unless told otherwise", func() {
			Expect(chargedShare(sample(faults.Indeterminate5xx{}, gateway, 100))).To(Equal(1.0))
			Expect(chargedShare(sample(faults.Indeterminate5xx{NotCharged: true}, gateway, 100))).To(Equal(0.0))
			Expect(chargedShare(sample(faults.Indeterminate5xx{ChargedProbability: 0.25}, gateway, 10_000))).To(BeNumerically("~", 0.25, 0.02))
			Expect(hit(faults.Indeterminate5xx{}, gateway).Err).To(MatchError("http 502 Bad Gateway"))
		})
	})

	Describe("flapping", func() {
		It("is down for Duty of every Period and has no effect while up", func() {
			m := faults.Flapping{Period: 10 * time.Second, Duty: 0.3}
			in := mustInjector(3, faults.Fault{Name: "flap", Target: gateway, Model: m})
			down := 0
			for t := time.Duration(0); t < 100*time.Second; t += 100 * ms {
				e := in.Call(gateway, faults.Call{At: t})
				Expect(e.Err != nil).To(Equal(m.DownAt(3, "flap", t)), "at %s", t)
				if e.Err != nil {
					down++
					Expect(e.Err).To(MatchError("http 503 Service Unavailable"))
				} else {
					Expect(e).To(Equal(faults.Effect{}))
				}
			}
			Expect(down).To(Equal(300))
			Expect(hitsOf(in, "flap")).To(BeEquivalentTo(300), "only calls while down are hits")
		})

		It("shifts each down-phase by its own jitter, and the fault's windows are the down-phases", func() {
			f := faults.FlappingPrimary("flap", classify.PaymentGateway, 10*time.Second, 0.5, 2*time.Second)
			in := mustInjector(11, f)
			ws := in.Windows(time.Hour, 1000)[0]
			Expect(ws.Truncated).To(BeFalse())
			Expect(len(ws.Windows)).To(BeNumerically(">=", 300))
			shifted := false
			for _, w := range ws.Windows[:len(ws.Windows)-1] { // the last may end at the horizon
				Expect(w.Until - w.From).To(BeNumerically("<=", 10*time.Second))
				if w.From%(10*time.Second) != 0 {
					shifted = true
				}
				Expect(f.Model.(faults.Flapping).DownAt(11, "flap", w.From)).To(BeTrue())
				Expect(f.Model.(faults.Flapping).DownAt(11, "flap", w.Until)).To(BeFalse())
				Expect(f.Model.(faults.Flapping).DownAt(11, "flap", w.From-ms)).To(BeFalse())
			}
			Expect(shifted).To(BeTrue())
		})
	})

	Describe("outages", func() {
		It("refuse connections the way a dial does", func() {
			e := hit(faults.Outage{}, gateway)
			Expect(errors.Is(e.Err, syscall.ECONNREFUSED)).To(BeTrue())
			oe, ok := errors.AsType[*net.OpError](e.Err)
			Expect(ok).To(BeTrue())
			Expect(oe.Op).To(Equal("dial"))
			Expect(e.Err).To(MatchError("dial tcp payment-gateway: connect: connection refused"))
			Expect(hit(faults.StoreOutage{}, faults.Target{Kind: faults.Store}).Err).To(MatchError("dial tcp store: connect: connection refused"))
			Expect(errors.Is(hit(faults.SinkOutage{}, faults.Target{Kind: faults.AlertSink, Name: "slack"}).Err, syscall.ECONNREFUSED)).To(BeTrue())
		})

		It("answer a sink's 429 with a Retry-After", func() {
			e := hit(faults.SinkOutage{Code: 429, RetryAfter: 20 * time.Second}, faults.Target{Kind: faults.AlertSink})
			he, _ := errors.AsType[*failure.HTTPError](e.Err)
			Expect(he.RetryAfterHeader()).To(Equal("20"))
			Expect(classifier.Classify(e.Err, classify.Scope{}).RetryAfter).To(Equal(20 * time.Second))
			he, _ = errors.AsType[*failure.HTTPError](hit(faults.SinkOutage{Code: 429}, faults.Target{Kind: faults.AlertSink}).Err)
			Expect(he.RetryAfterHeader()).To(Equal("1"))
		})
	})

	Describe("workers and stores", func() {
		It("crash, stall and slow down without errors", func() {
			w := faults.Target{Kind: faults.Worker, Name: "w1"}
			Expect(hit(faults.WorkerCrash{RestartAfter: 5 * time.Second}, w)).To(Equal(faults.Effect{Crash: true, RestartAfter: 5 * time.Second, Fault: "f"}))
			Expect(hit(faults.WorkerCrash{}, w)).To(Equal(faults.Effect{Crash: true, Fault: "f"}))
			Expect(hit(faults.WorkerStall{}, w)).To(Equal(faults.Effect{StallFor: 30 * time.Second, Fault: "f"}))
			Expect(hit(faults.WorkerStall{For: 2 * time.Second}, w)).To(Equal(faults.Effect{StallFor: 2 * time.Second, Fault: "f"}))
			Expect(hit(faults.SlowStore{}, faults.Target{Kind: faults.DLQStore})).To(Equal(faults.Effect{Latency: 250 * ms, Fault: "f"}))
			Expect(hit(faults.SlowStore{Latency: 40 * ms}, faults.Target{Kind: faults.Store})).To(Equal(faults.Effect{Latency: 40 * ms, Fault: "f"}))
		})
	})

	DescribeTable("Validate names the bad parameter",
		func(m faults.Model, field, msg string) {
			err := m.Validate()
			Expect(err).To(HaveOccurred())
			var fe *faults.FieldError
			Expect(errors.As(err, &fe)).To(BeTrue())
			Expect(fe.Field).To(Equal(field))
			Expect(err.Error()).To(ContainSubstring(field + ": " + msg))
		},
		Entry(nil, faults.GatewayTimeout{After: -time.Second}, "after", "must be ≥ 0, got -1s"),
		Entry(nil, faults.GatewayTimeout{After: 1500 * time.Microsecond}, "after", "must be a whole number of milliseconds, got 1.5ms"),
		Entry(nil, faults.GatewayTimeout{ChargedProbability: 1.5}, "chargedProbability", "must be in [0,1], got 1.5"),
		Entry(nil, faults.GatewayTimeout{ChargedProbability: math.NaN()}, "chargedProbability", "must be in [0,1], got NaN"),
		Entry(nil, faults.Latency{Distribution: "gaussian"}, "distribution", `unknown distribution "gaussian"`),
		Entry(nil, faults.Latency{Distribution: "normall"}, "distribution", `unknown distribution "normall"; did you mean "normal"?`),
		Entry(nil, faults.Latency{Min: 300 * ms, Max: 200 * ms}, "max", "must be ≥ min (300ms), got 200ms"),
		Entry(nil, faults.Latency{Distribution: "uniform", Min: 300 * ms}, "max", "must be ≥ min (300ms), got 200ms"),
		Entry(nil, faults.Latency{StdDev: -ms}, "stdDev", "must be ≥ 0"),
		Entry(nil, faults.HTTPStatus{Code: 302}, "code", "must be in 400..599, got 302"),
		Entry(nil, faults.HTTPStatus{RetryAfter: -time.Second}, "retryAfter", "must be ≥ 0"),
		Entry(nil, faults.AuthFailure{Code: 500}, "code", "must be 401 or 403, got 500"),
		Entry(nil, faults.CardDeclined{Codes: []string{"ok", "Not A Code"}}, "codes[1]", `must be lowercase letters, digits and "_", got "Not A Code"`),
		Entry(nil, faults.RateLimit{RetryAfter: time.Microsecond}, "retryAfter", "must be a whole number of milliseconds, got 1µs"),
		Entry(nil, faults.Indeterminate5xx{Code: 404}, "code", "must be in 500..599, got 404"),
		Entry(nil, faults.Indeterminate5xx{ChargedProbability: 0.5, NotCharged: true}, "chargedProbability", "must be 0 with notCharged"),
		Entry(nil, faults.Flapping{Duty: 1.5}, "duty", "must be in (0,1], got 1.5"),
		Entry(nil, faults.Flapping{Period: -time.Second}, "period", "must be > 0, got -1s"),
		Entry(nil, faults.Flapping{Period: 10 * time.Second, Jitter: 6 * time.Second}, "jitter", "must be at most half the period (5s), got 6s"),
		Entry(nil, faults.Flapping{Code: 404}, "code", "must be in 500..599, got 404"),
		Entry(nil, faults.Outage{Code: 404}, "code", "must be in 500..599, got 404"),
		Entry(nil, faults.SinkOutage{Code: 404}, "code", "must be 0 (connection refused), 429 or in 500..599, got 404"),
		Entry(nil, faults.WorkerCrash{RestartAfter: -time.Second}, "restartAfter", "must be ≥ 0"),
		Entry(nil, faults.WorkerStall{For: time.Nanosecond}, "for", "must be a whole number of milliseconds, got 1ns"),
		Entry(nil, faults.SlowStore{Latency: -ms}, "latency", "must be ≥ 0"),
	)

	It("apply without a stream or with odd parameters without panicking", func() {
		for _, e := range faults.Catalogue() {
			m, err := faults.New(e.Name)
			Expect(err).NotTo(HaveOccurred())
			Expect(func() { m.Apply(faults.Call{At: -time.Hour}, nil) }).NotTo(Panic(), e.Name)
		}
		odd := []faults.Model{
			faults.Latency{Distribution: "uniform", Min: 5 * ms, Max: ms},
			faults.Latency{Distribution: "normal", Mean: time.Duration(math.MaxInt64), StdDev: time.Duration(math.MaxInt64)},
			faults.Latency{Distribution: "lognormal", Mean: -ms},
			faults.Latency{Distribution: "exponential", Min: -ms, Max: -ms},
			faults.Flapping{Period: -1},
			faults.CardDeclined{Codes: []string{"", ""}},
		}
		for _, m := range odd {
			Expect(func() { m.Apply(faults.Call{}, rand.New(rand.NewPCG(1, 1))) }).NotTo(Panic())
			e := m.Apply(faults.Call{}, rand.New(rand.NewPCG(1, 1)))
			Expect(e.Latency).To(BeNumerically(">=", 0))
		}
	})
})
