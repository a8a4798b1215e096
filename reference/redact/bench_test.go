package redact_test

import (
	"testing"

	"github.com/faultline/faultline/reference/redact"
)

// BenchmarkString measures String on 200-byte error messages, one with a
// secret for most rules and one with none (the common case):
//
//	go test ./reference/redact -run '^$' -bench . -benchmem
func BenchmarkString(b *testing.B) {
	cases := []struct{ name, msg string }{
		{"secrets-200B", "charge failed: card 4242 4242 4242 4242, Authorization: Bearer sk_live_abc123XYZ, " +
			"password=hunter2 via postgres://app:s3cr3t@db:5432/orders; order 1234567890123 retried 3x, next in 8s (half-open, EUR)"},
		{"clean-200B", "charge ch_3MqLlq2eZvKYlo2C for order 1234567890123 failed: POST https://api.stripe.com/v1/charges: " +
			"504 Gateway Timeout after 30s (attempt 3 of 4, next in 8s, breaker half-open, queue payments-eu-0001)"},
	}
	r := redact.Default()
	for _, tc := range cases {
		if len(tc.msg) != 200 {
			b.Fatalf("%s is %d bytes, not 200", tc.name, len(tc.msg))
		}
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.msg)))
			b.ReportAllocs()
			for b.Loop() {
				_ = r.String(tc.msg)
			}
		})
	}
}

// BenchmarkFields measures Fields on a 10-field job payload with a nested
// header map and a list.
func BenchmarkFields(b *testing.B) {
	payload := map[string]any{
		"job_id":      "job_01HV6Z8R6Q",
		"customer_id": "cus_Nf9X2",
		"amount":      4999,
		"currency":    "eur",
		"card":        "4242 4242 4242 4242",
		"api_key":     "sk_live_abc123XYZ",
		"email":       "ops@example.com",
		"headers":     map[string]any{"Authorization": "Bearer xyz", "Content-Type": "application/json"},
		"items":       []any{"sku-1", "sku-2", 3},
		"last_error":  "gateway: 504 Gateway Timeout after 30s (password=hunter2)",
	}
	r := redact.Default()
	b.ReportAllocs()
	for b.Loop() {
		_ = r.Fields(payload)
	}
}
