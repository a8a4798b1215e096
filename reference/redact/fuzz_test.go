package redact_test

import (
	"testing"

	"github.com/faultline/faultline/reference/redact"
)

// fuzzSeeds are inputs that sit on the edges of String's rules: masks next
// to more text, unclosed quotes and brackets, separators glued to cards.
var fuzzSeeds = []string{
	"",
	"card 4242 4242 4242 4242 declined",
	"4242-4242-4242-4242 4242 4242 4242 4242",
	"2 4242 4242 4242 4242 9",
	"order 1234567890123",
	"password=hunter2 user=bob",
	`{"token": "abc", "headers": {"Authorization": "Bearer xyz"}}`,
	`{\"password\":\"hunter2\"}`,
	"Authorization: Bearer abc.def.ghi",
	"curl -H 'Authorization: Bearer xyz' -H 'Cookie: a=1; b=2'",
	"map[Authorization:[Bearer xyz] password:[hunter2]]",
	"api_key: correct horse battery staple, user: bob",
	"postgres://app:p@ss@db:5432/orders?password=x&y=2",
	"https://hooks.slack.com/services/T000/B000/XXXXSECRET",
	"xoxb-1234567890123-abcdef sk_live_abc ghp_abcdefghijklmnopqrstuvwxyz0123 AKIAIOSFODNN7EXAMPLE",
	"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig",
	"password=[REDACTED]x [CARD ****4242] token: [REDACTED]] secret=\"",
	"pin: [CARD ****4242] exp 12/30",
	"token == nil; Token expired; Basic dXNlcjpwYXNz",
	"secret={[[[\"}]]",
	"password: 'it''s' \"x\\\"y\"",
}

// FuzzString checks that String never panics, is idempotent, and that
// Fields agrees with it on a one-field payload. Run it longer with:
//
//	go test ./reference/redact -run '^$' -fuzz FuzzString -fuzztime 30s
func FuzzString(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	r := redact.Default()
	f.Fuzz(func(t *testing.T, s string) {
		once := r.String(s)
		if twice := r.String(once); twice != once {
			t.Fatalf("not idempotent:\n  in:    %q\n  once:  %q\n  twice: %q", s, once, twice)
		}
		if got := r.Fields(map[string]any{"note": s})["note"]; got != once {
			t.Fatalf("Fields disagrees with String: %q != %q", got, once)
		}
		_ = r.URL(s)
	})
}
