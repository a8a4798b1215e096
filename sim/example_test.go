package sim_test

import (
	"context"
	"fmt"
	"time"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/worker"
	"github.com/faultline/faultline/scenarios"
	"github.com/faultline/faultline/sim"
)

// A revoked API key on the payment gateway: every charge fails with a 401
// for a minute. The expectations: nothing lost, not one auth failure
// retried, a page within a minute.
func ExampleRun() {
	sc := scenarios.Scenario{
		Name:     "revoked-key",
		Seed:     42,
		Duration: 5 * time.Minute,
		Workload: scenarios.WorkloadSpec{
			Tasks:    []scenarios.TaskSpec{{Name: "charge", Dependency: classify.PaymentGateway, IdempotencyKey: true, Service: 50 * time.Millisecond}},
			Arrivals: scenarios.ArrivalsSpec{Kind: scenarios.Poisson, Rate: 5},
		},
		Dependencies: []scenarios.DependencySpec{{Name: classify.PaymentGateway, Payment: true}},
		Faults: []faults.Fault{{
			Name:     "revoked-key",
			Target:   faults.Target{Kind: faults.Dependency, Name: classify.PaymentGateway},
			Model:    faults.AuthFailure{Code: 401},
			Schedule: faults.During(time.Minute, 2*time.Minute),
		}},
		Expect: []scenarios.Expectation{
			scenarios.Count{Metric: scenarios.Lost, Op: scenarios.Exactly, N: 0},
			scenarios.Confusion{True: classify.Critical, Route: worker.Retry, Op: scenarios.Exactly, N: 0},
			scenarios.PageWithin{Within: time.Minute},
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
