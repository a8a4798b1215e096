package cli_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/cmd/faultline/internal/cli"
)

var _ = Describe("faultline demo", func() {
	It("plays the payment challenge and accounts for every job", func() {
		out, errOut, code := run("demo")
		Expect(code).To(Equal(cli.ExitOK), errOut)
		Expect(out).To(MatchRegexp(`every job accounted for: 13 created = .* ✓`))
	})

	It("says which backends exist when given another", func() {
		_, errOut, code := run("demo", "--backend", "postgres")
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(errOut).To(ContainSubstring(`unknown --backend "postgres" (allowed: `))
		Expect(errOut).To(ContainSubstring("Try: faultline demo --help"))
	})
})
