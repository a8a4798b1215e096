package degrade_test

import (
	"fmt"
	"time"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/reference/degrade"
)

func Example() {
	clk := clock.NewVirtual(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	b, err := degrade.NewBreaker(degrade.BreakerConfig{Name: "payment-gateway"}, clk)
	if err != nil {
		panic(err)
	}
	b.OnStateChange(func(t degrade.Transition) {
		fmt.Printf("%s: %s -> %s (%s) open for %v\n", t.Breaker, t.From, t.To, t.Reason, t.OpenFor)
	})

	// The breaker acts on the classifier's whole verdict: what the failure
	// means and where it came from.
	declined := classify.Classification{Class: classify.Permanent, Severity: classify.Low, Source: classify.Data, Rule: "card-declined"}
	localEACCES := classify.Classification{Class: classify.Critical, Severity: classify.High, Source: classify.System, Rule: "permission-denied"}
	timeout := classify.Classification{Class: classify.Transient, Severity: classify.Medium, Source: classify.Network, Rule: "timeout"}

	// A declined card says nothing about the gateway, and neither does a
	// permission error on a file of the worker's own host, critical as it is.
	for _, v := range []classify.Classification{declined, localEACCES} {
		p, _ := b.Allow()
		b.Record(p, degrade.Failure(v))
	}
	fmt.Println(b.State())

	// Five timeouts in a row on the way to the gateway do.
	for range 5 {
		p, _ := b.Allow()
		b.Record(p, degrade.Failure(timeout))
	}
	_, err = b.Allow()
	fmt.Println(err)

	// The open duration elapses on the clock; three probes succeed.
	clk.Advance(5 * time.Second)
	for range 3 {
		p, _ := b.Allow()
		b.Record(p, degrade.Success())
	}
	// Output:
	// closed
	// payment-gateway: closed -> open (consecutive-failures) open for 5s
	// degrade: circuit breaker is open
	// payment-gateway: open -> half-open (open-elapsed) open for 0s
	// payment-gateway: half-open -> closed (probes-succeeded) open for 0s
}
