package redact_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gcustom"
	"github.com/onsi/gomega/types"

	"github.com/faultline/faultline/reference/redact"
)

func TestRedact(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "redact")
}

// RedactTo succeeds for an input string that r.String turns into exactly
// want, and reads as a sentence when it fails.
func RedactTo(r *redact.Redactor, want string) types.GomegaMatcher {
	return gcustom.MakeMatcher(func(in string) (bool, error) {
		return r.String(in) == want, nil
	}).WithTemplate(`Expected String({{printf "%q" .Actual}}) {{.To}} be {{printf "%q" .Data.Want}}, but it is {{printf "%q" (.Data.Got .Actual)}}`,
		redaction{r: r, want: want})
}

// redaction is the data of RedactTo's failure message.
type redaction struct {
	r    *redact.Redactor
	want string
}

// Want is the output the spec expects.
func (d redaction) Want() string { return d.want }

// Got is what the Redactor actually makes of in.
func (d redaction) Got(in any) string {
	s, _ := in.(string)
	return d.r.String(s)
}

// newRedactor builds a Redactor from cfg, failing the spec on a
// configuration error.
func newRedactor(cfg redact.Config) *redact.Redactor {
	GinkgoHelper()
	r, err := redact.New(cfg)
	Expect(err).NotTo(HaveOccurred())
	return r
}
