package drill_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/store/redisstore/redistest"
	"github.com/faultline/faultline/reports"
)

// frameworks are the job-framework examples (examples/FRAMEWORK), each
// drilled with the preset of its framework (issue 29).
var frameworks = []string{"sidekiq", "celery", "rq", "bullmq"}

// frameworkDrill is one drill file of a framework example and what its
// verdict must be: the default configuration caught for its named reason,
// the fixed one passing, a short-lived default (a small dead-set cap, a
// short TTL) caught dropping dead letters.
type frameworkDrill struct {
	framework, file string
	// pass: the drill must PASS (exit 0).
	pass bool
	// failed are rules (invariants, or expectations by name) the drill
	// must fail; output are texts its output must hold (the reason named).
	failed []string
	output []string
}

// frameworkDrills are the drills CI runs, with the verdict each must give.
var frameworkDrills = []frameworkDrill{
	// Basic fetch (BRPOP): the jobs the killed process held are gone;
	// every failure is retried, a declined card too.
	{framework: "sidekiq", file: "drill-default.yaml", failed: []string{"lost = 0", oracle.InvConservation, oracle.InvNoRetryOfFinal}, output: []string{"was lost"}},
	{framework: "sidekiq", file: "drill-fixed.yaml", pass: true},
	{framework: "sidekiq", file: "drill-dead-cap.yaml", failed: []string{oracle.InvDLQNeverShrinks}},
	// No DLQ, no retries, the killed worker's task acknowledged.
	{framework: "celery", file: "drill-default.yaml", failed: []string{"lost = 0", "dead-lettered = 3", oracle.InvConservation}, output: []string{"was lost"}},
	{framework: "celery", file: "drill-fixed.yaml", pass: true},
	{framework: "celery", file: "drill-result-expires.yaml", failed: []string{oracle.InvDLQNeverShrinks}},
	// No Retry: the outage's charges dead-lettered untried; the killed
	// work horse's job stranded in the started registry.
	{framework: "rq", file: "drill-default.yaml", failed: []string{"dead-lettered = 3", "lost = 0"}, output: []string{"was lost"}},
	{framework: "rq", file: "drill-fixed.yaml", pass: true},
	{framework: "rq", file: "drill-failure-ttl.yaml", failed: []string{oracle.InvDLQNeverShrinks}},
	// attempts defaults to 1: the outage's charges failed at once.
	{framework: "bullmq", file: "drill-default.yaml", failed: []string{"dead-lettered = 3"}},
	{framework: "bullmq", file: "drill-fixed.yaml", pass: true},
	{framework: "bullmq", file: "drill-remove-on-fail.yaml", failed: []string{oracle.InvDLQNeverShrinks}},
}

// sharedScenario is the scenario body of a framework example's drill
// file: the text from its seed: line to its system: line.
func sharedScenario(file string) string {
	GinkgoHelper()
	b, err := os.ReadFile(file)
	Expect(err).NotTo(HaveOccurred())
	s := string(b)
	from, until := strings.Index(s, "\nseed: "), strings.Index(s, "\nsystem:\n")
	Expect(from).To(BeNumerically(">", 0), "%s has a seed: line", file)
	Expect(until).To(BeNumerically(">", from), "%s has its system: after its scenario", file)
	return s[from:until]
}

var _ = Describe("The job-framework examples (examples/{sidekiq,celery,rq,bullmq})", Label("drill", "slow", "frameworks"), func() {
	It("drill one shared scenario, byte for byte, in every drill file", func() {
		files, err := filepath.Glob(filepath.Join("..", "examples", "*", "drill-*.yaml"))
		Expect(err).NotTo(HaveOccurred())
		var want, first string
		n := 0
		for _, f := range files {
			fw := filepath.Base(filepath.Dir(f))
			if !strings.Contains(" "+strings.Join(frameworks, " ")+" ", " "+fw+" ") {
				continue
			}
			n++
			if want == "" {
				want, first = sharedScenario(f), f
				continue
			}
			Expect(sharedScenario(f)).To(Equal(want), "%s drills another scenario than %s", f, first)
		}
		Expect(n).To(BeNumerically(">=", 2*len(frameworks)), "two drill files per framework")
	})

	Context("refused before the drill", func() {
		var srv *redistest.Server
		BeforeEach(func() {
			srv = drillRedis()
			DeferCleanup(srv.Stop)
		})
		// drill runs the Sidekiq example's default drill, its system block
		// edited, and returns the exit code and output.
		drill := func(edit func(string) string, extra ...string) (int, string) {
			src, err := os.ReadFile(filepath.Join("..", "examples", "sidekiq", "drill-default.yaml"))
			Expect(err).NotTo(HaveOccurred())
			file := filepath.Join("..", "examples", "sidekiq", ".refused-"+strings.ReplaceAll(CurrentSpecReport().LeafNodeText, " ", "-")[:20]+".yaml")
			Expect(os.WriteFile(file, []byte(edit(string(src))), 0o644)).To(Succeed())
			DeferCleanup(os.Remove, file)
			args := append([]string{"drill", file, "--redis-url", "redis://" + srv.Addr + "/0"}, extra...)
			cmd := exec.Command(faultlineBin, args...)
			out, _ := cmd.CombinedOutput()
			return cmd.ProcessState.ExitCode(), string(out)
		}

		It("refuses a preset whose runtime is not installed, with the install line (exit 2)", func() {
			code, out := drill(func(s string) string {
				return strings.Replace(s, "inject: {preset: sidekiq,", "inject: {preset: sidekiq, runtime: /no/such/ruby,", 1)
			})
			Expect(code).To(Equal(2), out)
			Expect(out).To(And(ContainSubstring("system.external.inject.preset"), ContainSubstring("/no/such/ruby"),
				ContainSubstring("install: apt-get install ruby-sidekiq")))
		})

		It("refuses a Redis where the framework's keys hold another layout, saying what it found (exit 2)", func() {
			rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
			DeferCleanup(rdb.Close)
			Expect(rdb.HSet(context.Background(), "queue:staging-1", "x", "1").Err()).To(Succeed())
			code, out := drill(func(s string) string { return s }, "--namespace", "staging-1")
			Expect(code).To(Equal(2), out)
			Expect(out).To(ContainSubstring("key queue:staging-1 is a hash, where Sidekiq 6.4.1 keeps the queue"))
			n, err := rdb.Exists(context.Background(), "queue:staging-1").Result()
			Expect(err).NotTo(HaveOccurred())
			Expect(n).To(Equal(int64(1)), "a refused drill deletes nothing")
		})
	})

	Context("drilled at once, each on a database of its own", Ordered, ContinueOnFailure, func() {
		drills := map[string]*exampleDrill{}
		var srv *redistest.Server

		BeforeAll(func() {
			srv = drillRedis()
			for _, fw := range frameworks {
				// What CI runs first: the framework's runtime, if missing,
				// and the example's own installs (idempotent).
				setup := exec.Command("./setup.sh")
				setup.Dir = filepath.Join("..", "examples", fw)
				out, err := setup.CombinedOutput()
				Expect(err).NotTo(HaveOccurred(), "examples/%s/setup.sh:\n%s", fw, out)
			}
			for i, d := range frameworkDrills {
				file, err := filepath.Abs(filepath.Join("..", "examples", d.framework, d.file))
				Expect(err).NotTo(HaveOccurred())
				// Sidekiq's retry, schedule and dead sets and Celery's
				// unacked hash are every queue's: a database per drill.
				addr := fmt.Sprintf("%s/%d", srv.Addr, i+1)
				drills[d.framework+"/"+d.file] = startDrill(d.framework+"-"+d.file, file, addr, os.Environ())
			}
		})
		AfterAll(func() { stopDrills(drills, srv) })

		for _, d := range frameworkDrills {
			verdict := "is caught: " + strings.Join(d.failed, ", ")
			if d.pass {
				verdict = "passes"
			}
			It(fmt.Sprintf("%s %s %s", d.framework, d.file, verdict), func() {
				e := drills[d.framework+"/"+d.file]
				e.wait()
				Expect(e.result).NotTo(BeNil(), "the drill of examples/%s/%s wrote no JSON report; its output:\n%s", d.framework, d.file, e.out.String())
				if d.pass {
					Expect(e.code).To(Equal(0), e.out.String())
					Expect(e.result.Verdict).To(Equal(reports.Passed), e.out.String())
					Expect(e.result.Ledger.Lost).To(BeZero())
					return
				}
				Expect(e.code).To(Equal(1), e.out.String())
				Expect(e.result.Verdict).To(Equal(reports.Failed), e.out.String())
				Expect(failedRules(e.result)).To(ContainElements(d.failed), e.out.String())
				for _, o := range d.output {
					Expect(e.out.String()).To(ContainSubstring(o))
				}
			})
		}
	})
})

// drillRedis starts a redis-server of the spec's own for drills, skipping
// the spec off Linux or (unless required) without redis-server.
func drillRedis() *redistest.Server {
	GinkgoHelper()
	if runtime.GOOS != "linux" {
		Skip("drills run on Linux only")
	}
	srv, err := redistest.StartServer()
	if err != nil && !redistest.Required() {
		Skip("redis-server is not on PATH")
	}
	Expect(err).NotTo(HaveOccurred())
	return srv
}

// failedRules are the invariants and expectations a report failed, by name.
func failedRules(r *reports.Result) []string {
	var out []string
	for _, inv := range r.Invariants {
		if inv.Verdict == reports.Failed {
			out = append(out, inv.Name)
		}
	}
	for _, e := range r.Expectations {
		if e.Verdict == reports.Failed {
			out = append(out, e.Name)
		}
	}
	return out
}
