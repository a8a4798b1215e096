package classify_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/failure"
)

// BenchmarkClassify measures the default table on the errors a simulated
// payment workload produces most:
//
//	go test ./reference/classify -run '^$' -bench Classify -benchmem
func BenchmarkClassify(b *testing.B) {
	c := classify.Default()
	cases := []struct {
		name  string
		err   error
		scope classify.Scope
	}{
		{"api-503", &failure.HTTPError{Code: 503}, classify.Scope{Dependency: "api"}},
		{"gateway-504", fmt.Errorf("charge: %w", &failure.HTTPError{Code: 504}), classify.Scope{Dependency: classify.PaymentGateway}},
		{"card-declined", fmt.Errorf("charge: %w", &failure.CardError{Code: "card_declined", Decline: "insufficient_funds"}), classify.Scope{Dependency: classify.PaymentGateway}},
		{"auth", fmt.Errorf("charge: %w", failure.ErrAuthentication), classify.Scope{Dependency: classify.PaymentGateway}},
		{"smtp-timeout", fmt.Errorf("send: %w", &failure.TimeoutError{Op: "DATA"}), classify.Scope{Dependency: "smtp"}},
		{"unknown-text", errors.New("flux capacitor misaligned"), classify.Scope{Dependency: "smtp"}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = c.Classify(tc.err, tc.scope)
			}
		})
	}
}
