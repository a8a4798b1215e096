package cli_test

import (
	"strings"

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

	It("tells the same story on miniredis (the Lua scripts) as in memory: one semantics", func() {
		mini, errOut, code := run("demo", "--backend", "miniredis")
		Expect(code).To(Equal(cli.ExitOK), errOut)
		mem, errOut, code := run("demo", "--backend", "memory")
		Expect(code).To(Equal(cli.ExitOK), errOut)
		body := func(s string) string { return s[strings.Index(s, "\n"):] } // past the header naming the store
		Expect(body(mini)).To(Equal(body(mem)))
	})

	It("refuses a --redis-url whose port is not a port as invalid input (exit 2), bare host:port as well as a URL", func() {
		for _, u := range []string{"127.0.0.1:notaport", "localhost:70000", "redis://127.0.0.1:notaport"} {
			_, errOut, code := run("demo", "--backend", "redis", "--redis-url", u)
			Expect(code).To(Equal(cli.ExitInvalid), u+": "+errOut)
			Expect(errOut).To(ContainSubstring("--redis-url"), u)
		}
	})

	It("says which backends exist when given another", func() {
		_, errOut, code := run("demo", "--backend", "postgres")
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(errOut).To(ContainSubstring(`unknown --backend "postgres" (allowed: `))
		Expect(errOut).To(ContainSubstring("Try: faultline demo --help"))
	})
})
