package faults_test

import (
	"fmt"
	"time"

	"github.com/faultline/faultline/faults"
)

// A payment gateway that times out for a minute and declines a tenth of the
// cards all along; the injector says what happens to each call.
func Example() {
	gw := faults.Target{Kind: faults.Dependency, Name: "payment-gateway"}
	in, err := faults.NewInjector(42, []faults.Fault{
		{Name: "gw-timeouts", Target: gw, Model: faults.GatewayTimeout{After: 10 * time.Second}, Schedule: faults.During(time.Minute, 2*time.Minute)},
		{Name: "declines", Target: gw, Model: faults.CardDeclined{}, Schedule: faults.Schedule{Probability: 0.1}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	e := in.Call(gw, faults.Call{At: 90 * time.Second, JobID: "order-1"})
	fmt.Println(e.Err, "|", e.Class, "|", e.Latency, "|", e.Fault)
	for _, w := range in.Windows(time.Hour, 10) {
		fmt.Println(w.Fault, w.Target, w.Windows)
	}
	// Output:
	// payment-gateway: timed out after 10s | indeterminate | 10s | gw-timeouts
	// gw-timeouts dependency/payment-gateway [[1m0s, 2m0s)]
	// declines dependency/payment-gateway [[0s, 1h0m0s)]
}

// Validation names the fault and the field.
func ExampleNewInjector() {
	_, err := faults.NewInjector(1, []faults.Fault{{
		Name:     "gw-timeouts",
		Target:   faults.Target{Kind: faults.Dependency, Name: "payment-gateway"},
		Model:    faults.GatewayTimeout{},
		Schedule: faults.Schedule{Every: &faults.Periodic{Period: time.Minute, Duty: 1.5}},
	}})
	fmt.Println(err)
	// Output:
	// fault "gw-timeouts": schedule.every.duty: must be in (0,1], got 1.5
}
