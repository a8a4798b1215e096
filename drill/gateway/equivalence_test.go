package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/drill/gateway"
	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/reference/classify"
)

// equivalence cases: every dependency model of the catalogue, with the
// parameters that change how its error classifies.
var equivalence = []struct {
	desc  string
	model faults.Model
}{
	{"gateway-timeout", faults.GatewayTimeout{After: 30 * time.Second}},
	{"gateway-timeout charged", faults.GatewayTimeout{After: 30 * time.Second, ChargedProbability: 1}},
	{"gateway-timeout op", faults.GatewayTimeout{Op: "POST /v1/charges", After: 20 * time.Second}},
	{"latency", faults.Latency{Mean: 100 * ms}},
	{"http-status 503", faults.HTTPStatus{}},
	{"http-status 400 body", faults.HTTPStatus{Code: 400, Body: "sku not found"}},
	{"http-status 404", faults.HTTPStatus{Code: 404}},
	{"http-status 408", faults.HTTPStatus{Code: 408}},
	{"http-status 429 retryAfter 1.5s", faults.HTTPStatus{Code: 429, RetryAfter: 1500 * ms}},
	{"http-status 500", faults.HTTPStatus{Code: 500}},
	{"http-status 502", faults.HTTPStatus{Code: 502}},
	{"http-status 503 retryAfter 2s", faults.HTTPStatus{Code: 503, RetryAfter: 2 * time.Second}},
	{"http-status 504", faults.HTTPStatus{Code: 504}},
	{"http-status 401", faults.HTTPStatus{Code: 401}},
	{"http-status 403", faults.HTTPStatus{Code: 403}},
	{"http-status 407", faults.HTTPStatus{Code: 407}},
	{"auth-failure 401", faults.AuthFailure{}},
	{"auth-failure 403", faults.AuthFailure{Code: 403, Body: "key lacks scope"}},
	{"card-declined insufficient_funds", faults.CardDeclined{}},
	{"card-declined try_again_later", faults.CardDeclined{Codes: []string{"try_again_later"}}},
	{"card-declined expired_card", faults.CardDeclined{Codes: []string{"expired_card"}}},
	{"card-declined processing_error", faults.CardDeclined{Codes: []string{"processing_error"}}},
	{"rate-limit", faults.RateLimit{}},
	{"rate-limit 1.5s", faults.RateLimit{RetryAfter: 1500 * ms}},
	{"rate-limit 250ms", faults.RateLimit{RetryAfter: 250 * ms}},
	{"indeterminate-5xx", faults.Indeterminate5xx{}},
	{"indeterminate-5xx 500", faults.Indeterminate5xx{Code: 500}},
	{"indeterminate-5xx 503", faults.Indeterminate5xx{Code: 503}},
	{"indeterminate-5xx 504 not charged", faults.Indeterminate5xx{Code: 504, NotCharged: true}},
	{"flapping", faults.Flapping{Duty: 1}},
	{"flapping 502", faults.Flapping{Duty: 1, Code: 502}},
	{"outage refused", faults.Outage{}},
	{"outage 502", faults.Outage{Code: 502}},
	{"outage 503", faults.Outage{Code: 503}},
}

// verdict is what the equivalence compares.
type verdict struct {
	Class      classify.Class
	Severity   classify.Severity
	Source     classify.Source
	Rule       string
	Status     int
	RetryAfter time.Duration
	Decline    string
}

func verdictOf(err error, dep string) verdict {
	c := classifier.Classify(err, classify.Scope{Dependency: dep})
	v := verdict{Class: c.Class, Severity: c.Severity, Source: c.Source, Rule: c.Rule, Status: c.Status, RetryAfter: c.RetryAfter}
	if d, ok := errors.AsType[classify.DeclineCoder](err); ok {
		v.Decline = d.DeclineCode()
	}
	return v
}

func isTimeout(err error) bool {
	t, ok := errors.AsType[classify.Timeouter](err)
	return ok && t.Timeout()
}

func className(c classify.Class) string {
	if c == classify.None {
		return ""
	}
	return c.String()
}

var _ = Describe("Classification equivalence with the simulator", func() {
	It("has a case for every model of the catalogue that targets a dependency", func() {
		var covered []string
		for _, c := range equivalence {
			covered = append(covered, c.model.Name())
		}
		for _, e := range faults.Catalogue() {
			if slices.Contains(e.Targets, faults.Dependency) {
				Expect(covered).To(ContainElement(e.Name), "no equivalence case for the dependency model %s", e.Name)
			}
		}
	})

	for _, dep := range []string{classify.PaymentGateway, "inventory"} {
		var entries []TableEntry
		for _, c := range equivalence {
			entries = append(entries, Entry(c.desc, c.model))
		}
		DescribeTable("on "+dep+": the client's error classifies as the simulator's Effect.Err",
			func(m faults.Model) {
				f := dependencyFault("f", dep, m)
				sim := injector(f).Call(f.Target, faults.Call{At: 0, JobID: "job-1"})

				clk := &scenarioClock{}
				g := start(gateway.Config{Name: dep, Faults: gateway.NewLocked(injector(f)), Now: clk.Now, Scale: 100, Payment: dep == classify.PaymentGateway})
				timeout := 5 * time.Second
				if isTimeout(sim.Err) {
					timeout = 100 * ms // the hang lasts After/100 = 200ms or more
				}
				ans, err := client(g, timeout).Call(context.Background(), "job-1", "key-1")

				want, got := verdictOf(sim.Err, dep), verdictOf(err, dep)
				Expect(got).To(Equal(want), "sim error %v, client error %v", sim.Err, err)
				Expect(ans.Fault).To(Equal(sim.Fault))
				Expect(ans.Class).To(Equal(className(sim.Class)))
				if sim.Err == nil {
					Expect(err).NotTo(HaveOccurred())
				} else if !isTimeout(sim.Err) {
					// Same text too; a timeout's says how long the client waited.
					Expect(err.Error()).To(Equal(sim.Err.Error()))
				} else {
					Expect(err).To(BeAssignableToTypeOf(sim.Err))
				}
				Expect(g.Calls()).To(HaveLen(1))
				Expect(g.Calls()[0].TookEffect).To(Equal(sim.Err == nil || sim.Charged))
				fmt.Fprintf(GinkgoWriter, "EQUIV %-17s %-34s sim=%-42s client=%-42s ra=%v\n", dep, m.Name()+" "+fmt.Sprint(m),
					fmt.Sprintf("%s/%s/%s", want.Class, want.Severity, want.Rule), fmt.Sprintf("%s/%s/%s", got.Class, got.Severity, got.Rule), got.RetryAfter)
			},
			entries,
		)
	}
})
