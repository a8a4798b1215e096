package cli_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/cmd/faultline/internal/cli"
)

const limitsScenario = `apiVersion: faultline/v1
kind: Scenario
metadata: {name: limits}
duration: 1m
workload:
  tasks: [{name: charge, dependency: gateway, service: 1s}]
  arrivals: {rate: 10/s}
`

var _ = Describe("faultline validate and run agree (issue 11 items 7 and 9)", func() {
	It("refuses at validate, with file:line:col, what run would refuse, and run exits 2, never 3", func() {
		f := writeFile("bad.yaml", limitsScenario+"system:\n  dlq: {capacity: -1}\n  breakers: [{dependency: gateway, openDuration: 10s, maxOpenDuration: 5s}]\n"+
			"faults: [{name: f, target: dlq-store, model: latency}]\n")
		_, errOut, code := run("validate", f)
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(errOut).To(ContainSubstring(f + ":9:19: system.dlq.capacity: must be at least 1"))
		Expect(errOut).To(ContainSubstring(f + ":10:72: system.breakers[0].maxOpenDuration: must be at least OpenDuration"))
		Expect(errOut).To(ContainSubstring(f + `:11:46: faults[0].model: fault "f": not simulated`))
		_, _, code = run("run", f, "--progress", "never")
		Expect(code).To(Equal(cli.ExitInvalid))
	})

	It("names the flag that lifts a limit, and the flag lifts it", func() {
		f := writeFile("many.yaml", limitsScenario+"workers: {count: 20000}\n")
		_, errOut, code := run("validate", f)
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(errOut).To(ContainSubstring("workers.count: 20000 workers, more than the limit of 10000; lift the limit with --max-workers"))
		_, _, code = run("validate", f, "--max-workers", "20000")
		Expect(code).To(Equal(cli.ExitOK))

		_, errOut, code = run("validate", f, "--max-workers", "20000", "--max-file-size", "100B")
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(errOut).To(ContainSubstring("the file is larger than the limit of 100 bytes"))
		Expect(errOut).To(ContainSubstring("--max-file-size"))

		deep := writeFile("deep.yaml", limitsScenario+"x: "+strings.Repeat("[", 100)+strings.Repeat("]", 100)+"\n")
		_, errOut, code = run("validate", deep)
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(errOut).To(ContainSubstring("values are nested more than 64 deep; lift the limit with --max-depth"))
	})

	It("interrupts a run past the jobs in flight, naming --max-in-flight", func() {
		f := writeFile("flood.yaml", strings.Replace(limitsScenario, "rate: 10/s", "rate: 100000/s", 1))
		out, _, code := run("run", f, "--max-in-flight", "500", "--progress", "never", "--no-shrink")
		Expect(code).To(Equal(cli.ExitFailed))
		Expect(out).To(ContainSubstring("501 jobs in flight, more than the limit of 500"))
		Expect(out).To(ContainSubstring("--max-in-flight"))
	})

	It("refuses a limit that is not positive as a usage error", func() {
		_, errOut, code := run("validate", "x.yaml", "--max-depth", "0")
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(errOut).To(ContainSubstring("--max-depth: expected at least 1, got 0"))
		_, errOut, code = run("run", "x.yaml", "--max-file-size", "lots")
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(errOut).To(ContainSubstring("expected a size like 10MiB"))
	})
})

var _ = Describe("the limit on a run's duration (issue 28 item 2)", func() {
	It("refuses 292 years at validate, run and drill, with file:line:col and the flag that lifts it; the flag lifts it", func() {
		f := writeFile("long.yaml", strings.Replace(limitsScenario, "duration: 1m", "duration: 2562047h", 1))
		for _, args := range [][]string{{"validate", f}, {"run", f, "--no-shrink"}, {"drill", f, "--redis-url", "127.0.0.1:1", "--dry-run"}} {
			_, errOut, code := run(args...)
			Expect(code).To(Equal(cli.ExitInvalid), "%v", args)
			Expect(errOut).To(ContainSubstring(f+":4:11: duration: a run of 2562047h (106751 days), more than the limit of 9600h (400 days); shorten it or lift the limit with --max-duration"), "%v", args)
		}
		_, errOut, code := run("validate", f, "--max-duration", "2562047h")
		Expect(code).To(Equal(cli.ExitOK), errOut)
		_, errOut, code = run("validate", writeFile("day.yaml", strings.Replace(limitsScenario, "duration: 1m", "duration: 25h", 1)), "--max-duration", "24h")
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(errOut).To(ContainSubstring("a run of 25h (1 day), more than the limit of 24h (1 day)"))
	})

	It("takes a duration with days, and refuses anything else as a usage error", func() {
		for _, v := range []string{"0", "-1h", "lots", "0d"} {
			_, errOut, code := run("validate", "x.yaml", "--max-duration", v)
			Expect(code).To(Equal(cli.ExitInvalid), v)
			Expect(errOut).To(ContainSubstring("--max-duration"), v)
		}
		out, _, _ := run("validate", "--help")
		Expect(out).To(MatchRegexp(`--max-duration duration\s+the longest duration a scenario may have, e\.g\. 30d or 36h \(default 400d\)`))
	})
})
