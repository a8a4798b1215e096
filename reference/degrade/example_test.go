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

	// A declined card says nothing about the gateway.
	p, _ := b.Allow()
	b.Record(p, degrade.Failure(classify.Permanent))

	// Five timeouts in a row do.
	for range 5 {
		p, _ := b.Allow()
		b.Record(p, degrade.Failure(classify.Transient))
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
	// payment-gateway: closed -> open (consecutive-failures) open for 5s
	// degrade: circuit breaker is open
	// payment-gateway: open -> half-open (open-elapsed) open for 0s
	// payment-gateway: half-open -> closed (probes-succeeded) open for 0s
}
