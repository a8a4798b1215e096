package sim_test

import (
	"time"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/degrade"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/retry"
	"github.com/faultline/faultline/reference/worker"
	"github.com/faultline/faultline/scenarios"
)

const gateway = classify.PaymentGateway

// payments is the seed's payment challenge as a scenario: charges through
// a payment gateway (with idempotency keys) and receipts by SMTP, a card
// declined, gateway timeouts, an auth failure, a primary outage with the
// batch fallback, and an operator reprocessing the DLQ.
func payments() scenarios.Scenario {
	return scenarios.Scenario{
		Name:        "payment-challenge",
		Description: "the seed's payment service: declines dead-lettered, timeouts retried with keys, auth pages, outage diverted and drained",
		Seed:        1,
		Duration:    10 * time.Minute,
		Workload: scenarios.WorkloadSpec{
			Tasks: []scenarios.TaskSpec{
				{Name: "charge", Queue: "payments", Dependency: gateway, Weight: 3, IdempotencyKey: true, Service: 50 * time.Millisecond, ServiceJitter: 20 * time.Millisecond},
				{Name: "send-receipt", Queue: "emails", Dependency: "smtp", Weight: 1, Service: 20 * time.Millisecond},
			},
			Arrivals: scenarios.ArrivalsSpec{Kind: scenarios.Poisson, Rate: 20, Until: 8 * time.Minute},
			Jobs: []scenarios.PlannedJobSpec{
				{At: 30 * time.Second, ID: "pay-declined", Task: "charge"},
				{At: 3 * time.Minute, ID: "pay-auth", Task: "charge"},
			},
		},
		Workers:      scenarios.WorkersSpec{Count: 8, LeaseTTL: 30 * time.Second},
		Dependencies: []scenarios.DependencySpec{{Name: gateway, Payment: true}, {Name: "smtp"}},
		System: scenarios.SystemSpec{
			Retry: retry.Config{MaxAttempts: 4, BaseDelay: time.Second, MaxDelay: 20 * time.Second},
			DLQ:   scenarios.DLQSpec{Capacity: 10_000},
			Breakers: []scenarios.BreakerSpec{{
				Config:   degrade.BreakerConfig{Name: gateway, ConsecutiveFailures: 5, OpenDuration: 10 * time.Second, SuccessesToClose: 2},
				Fallback: degrade.FallbackConfig{BatchSize: 50, DrainInterval: time.Second},
			}},
		},
		Faults: []faults.Fault{
			{Name: "gateway-timeouts", Target: faults.Target{Kind: faults.Dependency, Name: gateway},
				Model: faults.GatewayTimeout{After: 5 * time.Second}, Schedule: faults.Schedule{From: time.Minute, Until: 2 * time.Minute, Probability: 0.2}},
			{Name: "declined", Target: faults.Target{Kind: faults.Dependency, Name: gateway},
				Model: faults.CardDeclined{Codes: []string{"insufficient_funds"}}, Schedule: faults.Schedule{From: 30 * time.Second, Until: 30*time.Second + time.Millisecond}},
			{Name: "revoked-key", Target: faults.Target{Kind: faults.Dependency, Name: gateway},
				Model: faults.AuthFailure{Code: 401}, Schedule: faults.Schedule{From: 3 * time.Minute, FirstCalls: 1}},
			{Name: "primary-down", Target: faults.Target{Kind: faults.Dependency, Name: gateway},
				Model: faults.Outage{Code: 503}, Schedule: faults.Schedule{From: 4 * time.Minute, Until: 4*time.Minute + 30*time.Second}},
			{Name: "smtp-flaky", Target: faults.Target{Kind: faults.Dependency, Name: "smtp"},
				Model: faults.HTTPStatus{Code: 504}, Schedule: faults.Schedule{Probability: 0.3}},
		},
		Steps: []scenarios.StepSpec{{At: 9 * time.Minute, Kind: scenarios.Requeue, Filter: dlq.Filter{Severities: []classify.Severity{classify.Medium}}}},
		Expect: []scenarios.Expectation{
			scenarios.Count{Metric: scenarios.Lost, Op: scenarios.Exactly, N: 0},
			scenarios.JobFate{JobID: "pay-declined", State: disposition.DeadLettered, Severity: classify.Low},
			scenarios.JobFate{JobID: "pay-auth", State: disposition.DeadLettered, Severity: classify.High},
			scenarios.PageWithin{Within: time.Minute},
			scenarios.BreakerOpened{Breaker: gateway, AtLeast: 1},
			scenarios.BreakerClosedBy{Breaker: gateway, At: 6 * time.Minute},
			scenarios.Confusion{True: classify.Critical, Route: worker.Retry, Op: scenarios.Exactly, N: 0},
			scenarios.Confusion{True: classify.Permanent, Route: worker.Retry, Op: scenarios.Exactly, N: 0},
			scenarios.Count{Metric: scenarios.InFallback, Op: scenarios.Exactly, N: 0},
		},
	}
}
