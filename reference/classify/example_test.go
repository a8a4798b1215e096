package classify_test

import (
	"fmt"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/failure"
)

// The same 504 means different things from different dependencies.
func ExampleClassifier_Classify() {
	c := classify.Default()
	gatewayTimeout := fmt.Errorf("charge order 42: %w", &failure.HTTPError{Code: 504})

	fmt.Println(c.Classify(gatewayTimeout, classify.Scope{Dependency: classify.PaymentGateway}))
	fmt.Println(c.Classify(gatewayTimeout, classify.Scope{Dependency: "smtp"}))
	fmt.Println(c.Classify(&failure.CardError{Code: "card_declined", Decline: "insufficient_funds"}, classify.Scope{}))
	fmt.Println(c.Classify(fmt.Errorf("refresh token: %w", failure.ErrAuthentication), classify.Scope{}))
	// Output:
	// indeterminate/medium/dependency
	// transient/medium/dependency
	// permanent/low/data
	// critical/high/auth
}

func ExampleParseRules() {
	src := []byte(`
rules:
  - name: smtp-quota
    dependency: smtp
    match: {status: [421, 452]}
    class: rate-limited
    severity: low
    source: dependency
`)
	rs, err := classify.ParseRules("rules.yaml", src, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	c, _ := rs.Classifier()
	got := c.Classify(&failure.HTTPError{Code: 452}, classify.Scope{Dependency: "smtp"})
	fmt.Println(got.Rule, got)

	_, err = classify.ParseRules("rules.yaml", []byte("rules:\n  - name: x\n    match: {status: [401]}\n    class: fatal\n    severity: high\n    source: auth\n"), nil)
	fmt.Println(err)
	// Output:
	// smtp-quota rate-limited/low/dependency
	// rules.yaml:4:12: rules[0].class: unknown class "fatal"; expected one of transient, rate-limited, indeterminate, permanent, critical, canceled
}
