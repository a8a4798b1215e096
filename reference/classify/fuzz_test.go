package classify_test

import (
	"errors"
	"os"
	"testing"

	"github.com/faultline/faultline/reference/classify"
)

// FuzzParseRules checks that no input makes the rule parser panic, and that
// every failure is a *RuleError with a position. Run it longer with:
//
//	go test ./reference/classify -run '^$' -fuzz FuzzParseRules -fuzztime 60s
func FuzzParseRules(f *testing.F) {
	if seed, err := os.ReadFile("testdata/payment-rules.yaml"); err == nil {
		f.Add(seed)
	}
	for _, s := range []string{
		"", "rules: []", "defaults: false", "rules:\n  - name: r\n    class: transiant\n",
		"rules: {name: r}", "fallback: {class: x}", "rules:\n  - match: {status: [5xx, 100-99, 9999999999999999999999]}\n",
		"rules:\n  - name: a\n    match: {message: '(?P<'}\n", "&a [*a]", "rules: !!binary AAAA", "- - - -", "{", "rules:\n - name: &x r\n   class: *x\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, err := classify.ParseRules("fuzz.yaml", data, nil)
		if err != nil {
			var re *classify.RuleError
			if !errors.As(err, &re) {
				t.Fatalf("error is not a *RuleError: %T %v", err, err)
			}
			return
		}
		if _, err := rs.Classifier(); err != nil {
			t.Fatalf("parsed rules do not build a classifier: %v", err)
		}
	})
}
