package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/cmd/faultline/internal/cli"
)

var _ = Describe("report check's reproduce line for a drill's history (issue 28 item 4)", func() {
	// drilled fails in any drill: it makes 10 jobs, and expects more.
	const drilled = `apiVersion: faultline/v1
kind: Scenario
metadata: {name: drilled}
duration: 5s
workload:
  tasks: [{name: ping}]
  arrivals: {rate: 2/s}
expect:
  - {count: created, atLeast: 1000}
`
	var dir, scenario string
	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		scenario = filepath.Join(dir, "s.yaml")
		Expect(os.WriteFile(scenario, []byte(drilled), 0o600)).To(Succeed())
	})
	history := func(extra string) string {
		f := filepath.Join(dir, "h.json")
		Expect(os.WriteFile(f, []byte(`{"historyVersion":1,"scenario":"drilled","source":"`+scenario+`","seed":3,"timeScale":5,"durationMs":5000,"endedMs":5000,"workers":["w1","w2","w3","w4"],"snapshots":[{}]`+extra+`}`), 0o600)).To(Succeed())
		return f
	}

	It("prints the line the drill printed, which its history keeps", func() {
		line := "faultline drill " + scenario + " --seed 3 --redis-url 127.0.0.1:6379 --time-scale 5 (wall clock: a drill is not reproducible to the byte)"
		out, _, code := run("report", "check", history(`,"reproduce":"`+line+`"`))
		Expect(code).To(Equal(cli.ExitFailed))
		Expect(out).To(ContainSubstring("  reproduce: " + line + "\n"))
		Expect(out).NotTo(ContainSubstring("faultline run"))
	})

	It("makes a drill's line of an older history that keeps none, never the simulator's", func() {
		out, _, code := run("report", "check", history(""))
		Expect(code).To(Equal(cli.ExitFailed))
		Expect(out).To(ContainSubstring("  reproduce: faultline drill " + scenario + " --seed 3 --redis-url HOST:PORT --time-scale 5 (wall clock: a drill is not reproducible to the byte)\n"))
		Expect(out).NotTo(ContainSubstring("faultline run"))
	})

	It("keeps the simulator's line for a simulated run's history", func() {
		f := filepath.Join(dir, "sim.json")
		_, _, code := run("run", scenario, "--history", f, "--no-shrink")
		Expect(code).To(Equal(cli.ExitFailed))
		out, _, code := run("report", "check", f)
		Expect(code).To(Equal(cli.ExitFailed))
		Expect(out).To(ContainSubstring("  reproduce: faultline run " + scenario + " --seed 0\n"))
	})

	It("is the line faultline drill printed, read back from the history it wrote", func() {
		srv := startRedis()
		DeferCleanup(srv.Stop)
		reports := filepath.Join(dir, "reports")
		cmd := exec.Command(raceBinary(), "drill", scenario, "--redis-url", "redis://"+srv.Addr+"/0", "--time-scale", "5", "--report-dir", reports, "--progress", "never")
		out, err := cmd.Output()
		var ee *exec.ExitError
		Expect(err).To(BeAssignableToTypeOf(ee), "%s", out)
		m := regexp.MustCompile(`(?m)^  reproduce: (faultline drill .*)$`).FindSubmatch(out)
		Expect(m).NotTo(BeNil(), "%s", out)
		line := string(m[1])
		Expect(line).To(HavePrefix("faultline drill " + scenario + " --seed 0 --redis-url " + srv.Addr + " --time-scale 5"))

		again, errOut, _ := run("report", "check", filepath.Join(reports, "drilled-drill.history.json"))
		Expect(again).To(ContainSubstring("  reproduce: "+line+"\n"), errOut)
		Expect(strings.Count(again, "faultline run")).To(BeZero())
	})
})
