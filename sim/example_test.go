package sim_test

import (
	"context"
	"fmt"
	"time"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/worker"
	"github.com/faultline/faultline/sim"
)

// A revoked API key on the payment gateway: every charge fails with a 401
// for a minute. The expectations: nothing lost, not one auth failure
// retried, a page within a minute.
func ExampleRun() {
	sc := sim.Scenario{
		Name:     "revoked-key",
		Seed:     42,
		Duration: 5 * time.Minute,
		Workload: sim.Workload{
			Tasks:    []sim.Task{{Name: "charge", Dependency: classify.PaymentGateway, IdempotencyKey: true, Service: 50 * time.Millisecond}},
			Arrivals: sim.Arrivals{Kind: sim.Poisson, Rate: 5},
		},
		Dependencies: []sim.Dependency{{Name: classify.PaymentGateway, Payment: true}},
		Faults: []faults.Fault{{
			Name:     "revoked-key",
			Target:   faults.Target{Kind: faults.Dependency, Name: classify.PaymentGateway},
			Model:    faults.AuthFailure{Code: 401},
			Schedule: faults.During(time.Minute, 2*time.Minute),
		}},
		Expect: []sim.Expectation{
			sim.Count{Metric: sim.Lost, Op: sim.Exactly, N: 0},
			sim.Confusion{True: classify.Critical, Route: worker.Retry, Op: sim.Exactly, N: 0},
			sim.PageWithin{Within: time.Minute},
		},
	}
	res, err := sim.Run(context.Background(), sc)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Verdict)
	for _, e := range res.Expectations {
		fmt.Printf("%s: %s\n", e.Name, e.Verdict)
	}
	// Output:
	// passed
	// lost = 0: passed
	// critical failures routed to retry = 0: passed
	// a page within 1m0s of the first critical failure: passed
}
