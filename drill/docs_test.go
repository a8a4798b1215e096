package drill_test

import (
	"os"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/drill"
	"github.com/faultline/faultline/scenarios"
)

var _ = Describe("docs/drills.md", func() {
	It("has a row for every built-in that says what a drill does with it, as drill.Live says", func() {
		b, err := os.ReadFile("../docs/drills.md")
		Expect(err).NotTo(HaveOccurred())
		_, table, ok := strings.Cut(string(b), "## Built-ins, live")
		Expect(ok).To(BeTrue(), "the section of built-ins")
		row := regexp.MustCompile("(?m)^\\| `([a-z0-9-]+)` \\| (runs live|refused: .+) \\|$")
		rows := map[string]string{}
		for _, m := range row.FindAllStringSubmatch(table, -1) {
			rows[m[1]] = m[2]
		}
		for _, bi := range scenarios.Builtins() {
			l, err := scenarios.LoadBuiltin(bi.Name)
			Expect(err).NotTo(HaveOccurred())
			sc := l.Scenario.WithDefaults()
			got, ok := rows[bi.Name]
			Expect(ok).To(BeTrue(), "docs/drills.md has no row for built-in %s", bi.Name)
			if err := drill.Live(&sc); err != nil {
				Expect(got).To(HavePrefix("refused: "), "built-in %s is refused (%v), but the table says %q", bi.Name, err, got)
			} else {
				Expect(got).To(Equal("runs live"), "built-in %s runs live, but the table says %q", bi.Name, got)
			}
			delete(rows, bi.Name)
		}
		Expect(rows).To(BeEmpty(), "rows for scenarios that are not built-ins")
	})
})
