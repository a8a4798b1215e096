package drill_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/store/redisstore/redistest"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/sim"
)

// exampleDrill is one `faultline drill examples/NAME/drill.yaml` run in the
// background: the same command a team runs on its own worker.
type exampleDrill struct {
	name   string
	dir    string
	cmd    *exec.Cmd
	out    bytes.Buffer
	done   chan struct{}
	code   int
	result *reports.Result
}

func (e *exampleDrill) wait() {
	<-e.done
}

// The black-box examples, drilled at once (each takes most of a minute of
// wall clock, mostly waiting): the naive Python worker must fail for the
// right, named reasons; the fixed one and the reference worker seen from
// outside must pass; asynq's archive must be caught dropping dead letters.
var _ = Describe("The black-box examples (examples/*/drill.yaml)", Ordered, Label("drill", "slow"), func() {
	drills := map[string]*exampleDrill{}
	var srv *redistest.Server

	BeforeAll(func() {
		if runtime.GOOS != "linux" {
			Skip("drills run on Linux only")
		}
		if _, err := os.Stat("/usr/bin/python3"); err != nil {
			Fail("/usr/bin/python3 is needed by examples/python-*: install Debian's python3 and python3-redis")
		}
		if err := exec.Command("/usr/bin/python3", "-c", "import redis").Run(); err != nil {
			Fail("examples/python-* need redis-py for /usr/bin/python3: apt-get install python3-redis")
		}
		var err error
		srv, err = redistest.StartServer()
		if errors.Is(err, redistest.ErrNoServer) && !redistest.Required() {
			Skip("redis-server is not on PATH")
		}
		Expect(err).NotTo(HaveOccurred())
		// The asynq example is its own module: build its worker and
		// adapters (go vet first), as .ci/run does.
		build := exec.Command("./build.sh")
		build.Dir = filepath.Join("..", "examples", "asynq")
		out, err := build.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "examples/asynq/build.sh:\n%s", out)

		// The reference example's command is `faultline` on PATH.
		path := filepath.Dir(faultlineBin) + string(os.PathListSeparator) + os.Getenv("PATH")
		for _, name := range []string{"python-naive", "python-fixed", "reference", "asynq"} {
			e := &exampleDrill{name: name, dir: GinkgoT().TempDir(), done: make(chan struct{})}
			file, err := filepath.Abs(filepath.Join("..", "examples", name, "drill.yaml"))
			Expect(err).NotTo(HaveOccurred())
			e.cmd = exec.Command(faultlineBin, "drill", file, "--redis-url", "redis://"+srv.Addr+"/0", "--report", "json", "--report-dir", e.dir)
			e.cmd.Env = append(os.Environ(), "PATH="+path)
			e.cmd.Stdout, e.cmd.Stderr = &e.out, &e.out
			Expect(e.cmd.Start()).To(Succeed())
			drills[name] = e
			go func() {
				defer close(e.done)
				err := e.cmd.Wait()
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					e.code = ee.ExitCode()
				}
				files, _ := filepath.Glob(filepath.Join(e.dir, "*.json"))
				for _, f := range files {
					if strings.HasSuffix(f, ".history.json") {
						continue
					}
					if b, err := os.ReadFile(f); err == nil {
						var r reports.Result
						if json.Unmarshal(b, &r) == nil {
							e.result = &r
						}
					}
				}
			}()
		}
	})
	AfterAll(func() {
		for _, e := range drills {
			if e.cmd.ProcessState == nil && e.cmd.Process != nil {
				_ = e.cmd.Process.Kill()
			}
		}
		if srv != nil {
			_ = srv.Stop()
		}
	})

	failed := func(r *reports.Result) []string {
		var out []string
		for _, inv := range r.Invariants {
			if inv.Verdict == reports.Failed {
				out = append(out, inv.Name)
			}
		}
		return out
	}
	get := func(name string) *exampleDrill {
		e := drills[name]
		e.wait()
		Expect(e.result).NotTo(BeNil(), "the drill of examples/%s wrote no JSON report; its output:\n%s", name, e.out.String())
		return e
	}

	It("fails the naive Python worker, naming what is wrong: trimmed dead letters, lost jobs, declines and 401s retried, double charges, no page", func() {
		e := get("python-naive")
		Expect(e.code).To(Equal(1), e.out.String())
		r := e.result
		Expect(r.Verdict).To(Equal(reports.Failed))
		Expect(failed(r)).To(ContainElements(sim.InvConservation, sim.InvDLQNeverShrinks, sim.InvNoRetryOfFinal, sim.InvNoDoubleCharge, sim.InvCriticalPaged), e.out.String())
		Expect(r.Live.External.Trimmed).NotTo(BeEmpty(), "the jobs LTRIM dropped from the DLQ are named")
		Expect(r.Ledger.Lost).To(BeNumerically(">", 0))
		Expect(e.out.String()).To(And(ContainSubstring("left the DLQ"), ContainSubstring("was lost"), ContainSubstring("declined"),
			ContainSubstring("never paged"), ContainSubstring("no idempotency key sent")))
	})

	It("passes the fixed Python worker: every invariant judged from outside holds", func() {
		e := get("python-fixed")
		Expect(e.code).To(Equal(0), e.out.String())
		Expect(e.result.Verdict).To(Equal(reports.Passed))
		Expect(failed(e.result)).To(BeEmpty())
		Expect(e.result.Ledger.Lost).To(BeZero())
	})

	It("passes the reference worker drilled from outside through the faultline layout", func() {
		e := get("reference")
		Expect(e.code).To(Equal(0), e.out.String())
		Expect(e.result.Verdict).To(Equal(reports.Passed))
		Expect(e.result.Alerts.Pages).To(BeNumerically(">=", 1), "its 401 incident is paged")
	})

	It("catches asynq's archive dropping dead letters past its cap, naming the jobs", func() {
		e := get("asynq")
		Expect(e.code).To(Equal(1), e.out.String())
		r := e.result
		Expect(failed(r)).To(ContainElements(sim.InvConservation, sim.InvDLQNeverShrinks), e.out.String())
		Expect(r.Ledger.DeadLettered).To(BeNumerically("<=", 10_000))
		Expect(r.Ledger.Lost).To(BeNumerically(">=", 300))
		Expect(r.Live.External.Lost).NotTo(BeEmpty())
	})
})
