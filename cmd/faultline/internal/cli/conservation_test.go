package cli_test

import (
	"regexp"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/cmd/faultline/internal/cli"
	"github.com/faultline/faultline/scenarios"
)

var _ = Describe("faultline run --all, the main job", func() {
	It("says, per scenario, what it proved, and accounts for every job in a sum that adds up", func() {
		out, errOut, code := run("run", "--all", "--no-shrink", "--progress", "never")
		// Whether every built-in passes is for their own specs; this one is
		// about what the output says of each.
		Expect(code).To(BeElementOf(cli.ExitOK, cli.ExitFailed), out+errOut)

		head := regexp.MustCompile(`(?m)^(PASS|FAIL|ERROR)  (\S+)  seed \d+`)
		accounted := regexp.MustCompile(`^  accounted for: (\d+) created = (.+)$`)
		term := regexp.MustCompile(`^(\d+) (\D.*)$`)
		blocks := head.FindAllStringSubmatchIndex(out, -1)
		Expect(blocks).To(HaveLen(len(scenarios.Builtins())), "one block per built-in")
		for i, b := range blocks {
			end := len(out)
			if i+1 < len(blocks) {
				end = blocks[i+1][0]
			}
			name := out[b[4]:b[5]]
			lines := strings.Split(out[b[0]:end], "\n")
			Expect(len(lines)).To(BeNumerically(">=", 4), name)
			builtin, err := scenarios.LoadBuiltin(name)
			Expect(err).NotTo(HaveOccurred())
			claim := strings.Join(strings.Fields(builtin.Scenario.Description), " ")
			if strings.HasPrefix(lines[0], "PASS") {
				Expect(lines[2]).To(Equal("  proved: "+claim), "%s says what it proved", name)
			} else {
				Expect(lines[2]).To(Equal("  not proved: "+claim), "%s says what it failed to prove", name)
			}

			m := accounted.FindStringSubmatch(lines[3])
			Expect(m).NotTo(BeNil(), "%s has a conservation line: %q", name, lines[3])
			created, _ := strconv.ParseInt(m[1], 10, 64)
			var sum int64
			for _, t := range strings.Split(m[2], " + ") {
				tm := term.FindStringSubmatch(t)
				Expect(tm).NotTo(BeNil(), "%s: term %q", name, t)
				n, _ := strconv.ParseInt(tm[1], 10, 64)
				sum += n
			}
			Expect(sum).To(Equal(created), "%s: %s", name, lines[3])
		}
		Expect(out).To(ContainSubstring("accounted for: 400 created = 100 succeeded + 100 in the DLQ + 200 evicted from the full DLQ"),
			"dlq-overflow names the evicted jobs")
	})

	It("prints the claim and the sum right under the totals of a scenario file's run", func() {
		f := writeFile("steady.yaml", passing)
		out, _, code := run("run", f)
		Expect(code).To(Equal(cli.ExitOK))
		Expect(out).To(ContainSubstring("  600 jobs: 600 succeeded, 0 dead-lettered, 0 pending, 0 in fallback, 0 lost; 0 notifications, 0 pages; 2 expectations held\n" +
			"  proved: nothing fails, everything succeeds\n" +
			"  accounted for: 600 created = 600 succeeded + 0 in the DLQ\n"))
		Expect(out).NotTo(ContainSubstring("✗"))
	})
})
