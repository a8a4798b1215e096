package scenarios_test

import (
	"fmt"
	"testing/fstest"

	"github.com/faultline/faultline/scenarios"
)

// A scenario file with two mistakes: both are reported, each at its
// position, with what was expected.
func ExampleParse() {
	_, err := scenarios.Parse("drill.yaml", []byte(`apiVersion: faultline/v1
kind: Scenario
metadata: {name: drill}
duration: 10x
system:
  retires: {maxAttempts: 3}
`))
	fmt.Println(err)
	// Output:
	// drill.yaml:4:11: duration: expected a duration like 30s, 2m or 250ms, got "10x"
	// drill.yaml:6:3: unknown key "retires"; did you mean "retry"?
}

// A scenario that includes a fragment: the fragment's faults come first,
// and the scenario's own retry policy wins over the fragment's.
func ExampleLoadFS() {
	fsys := fstest.MapFS{
		"drills/timeouts.yaml": {Data: []byte(`apiVersion: faultline/v1
kind: Scenario
metadata: {name: timeouts}
include: [../shared/payments.yaml]
duration: 5m
workload:
  tasks: [{name: charge, dependency: payment-gateway, idempotencyKey: true}]
  arrivals: {rate: 2/s}
system:
  retry: {maxAttempts: 5}
`)},
		"shared/payments.yaml": {Data: []byte(`apiVersion: faultline/v1
kind: Fragment
dependencies: [{name: payment-gateway, payment: true}]
system:
  retry: {maxAttempts: 3, baseDelay: 500ms}
faults:
  - {name: timeouts, target: dependency/payment-gateway, model: gateway-timeout, params: {after: 2s}}
`)},
	}
	l, err := scenarios.LoadFS(fsys, "drills/timeouts.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(l.Scenario.Name, l.Scenario.Faults[0].Name, l.Scenario.System.Retry.MaxAttempts, l.Scenario.System.Retry.BaseDelay)
	// Output: timeouts timeouts 5 500ms
}
