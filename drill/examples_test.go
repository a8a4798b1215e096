package drill_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/store/redisstore/redistest"
	"github.com/faultline/faultline/reports"
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

// stopDrills kills the drills still running, waits for each, and stops
// their Redis.
func stopDrills(drills map[string]*exampleDrill, srv *redistest.Server) {
	for _, e := range drills {
		if e.cmd.ProcessState == nil && e.cmd.Process != nil {
			_ = e.cmd.Process.Kill()
		}
		e.wait()
	}
	if srv != nil {
		_ = srv.Stop()
	}
}

// startDrill starts `faultline drill FILE` against the Redis at addr
// (HOST:PORT, database 0, or HOST:PORT/DB) in the background, its JSON
// report to a folder of its own.
func startDrill(name, file, addr string, env []string, extra ...string) *exampleDrill {
	GinkgoHelper()
	e := &exampleDrill{name: name, dir: GinkgoT().TempDir(), done: make(chan struct{})}
	url := "redis://" + addr
	if !strings.Contains(addr, "/") {
		url += "/0"
	}
	args := append([]string{"drill", file, "--redis-url", url, "--report", "json", "--report-dir", e.dir}, extra...)
	e.cmd = exec.Command(faultlineBin, args...)
	e.cmd.Env = env
	e.cmd.Stdout, e.cmd.Stderr = &e.out, &e.out
	Expect(e.cmd.Start()).To(Succeed())
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
	return e
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
		// The reference example once more, as the reference: the same
		// scenario without its system.external, so that faultline runs its
		// own worker processes and judges them through the store's stream.
		asRef := filepath.Join(GinkgoT().TempDir(), "reference-as-reference.yaml")
		src, err := os.ReadFile(filepath.Join("..", "examples", "reference", "drill.yaml"))
		Expect(err).NotTo(HaveOccurred())
		from, until := bytes.Index(src, []byte("\n  external:\n")), bytes.Index(src, []byte("\ninvariants:\n"))
		Expect(from).To(BeNumerically(">", 0), "examples/reference/drill.yaml has a system.external block")
		Expect(until).To(BeNumerically(">", from))
		Expect(os.WriteFile(asRef, append(slices.Clone(src[:from]), src[until:]...), 0o644)).To(Succeed())

		for _, name := range []string{"python-naive", "python-fixed", "reference", "asynq", "reference-as-reference"} {
			file, err := filepath.Abs(filepath.Join("..", "examples", name, "drill.yaml"))
			Expect(err).NotTo(HaveOccurred())
			var extra []string
			if name == "reference-as-reference" {
				file = asRef
				extra = []string{"--time-scale", "1"} // as the black box runs
			}
			drills[name] = startDrill(name, file, srv.Addr, append(os.Environ(), "PATH="+path), extra...)
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
		Expect(failed(r)).To(ContainElements(oracle.InvConservation, oracle.InvDLQNeverShrinks, oracle.InvNoRetryOfFinal, oracle.InvNoDoubleCharge, oracle.InvCriticalPaged), e.out.String())
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

	It("gives the reference drilled as a black box and as the reference the same verdict on every check both observe", func() {
		bb, ref := get("reference"), get("reference-as-reference")
		Expect(ref.code).To(Equal(0), ref.out.String())
		judged := func(r *reports.Result) map[string]reports.Verdict {
			out := map[string]reports.Verdict{}
			for _, inv := range r.Invariants {
				if inv.Verdict == reports.Passed || inv.Verdict == reports.Failed {
					out["invariant "+inv.Name] = inv.Verdict
				}
			}
			for _, e := range r.Expectations {
				if e.Verdict == reports.Passed || e.Verdict == reports.Failed {
					out["expectation "+e.Name] = e.Verdict
				}
			}
			return out
		}
		a, b := judged(bb.result), judged(ref.result)
		var both []string
		for name, v := range a {
			if w, ok := b[name]; ok {
				both = append(both, name)
				Expect(w).To(Equal(v), "%s: %s as a black box, %s as the reference\nblack box:\n%s\nreference:\n%s", name, v, w, bb.out.String(), ref.out.String())
			}
		}
		// The comparison is not empty: the checks both judges have.
		for _, inv := range []string{oracle.InvConservation, oracle.InvOneDLQEntry, oracle.InvNoDoubleCharge, oracle.InvNoRetryOfFinal, oracle.InvNoRerunAfterDead, oracle.InvCriticalPaged, oracle.InvOnePage} {
			Expect(both).To(ContainElement("invariant "+inv), "both judges judge %s", inv)
		}
		Expect(both).To(ContainElement(HavePrefix("expectation fault ")))
		Expect(ref.result.Ledger.Created).To(Equal(bb.result.Ledger.Created))
		Expect(ref.result.Ledger.Lost).To(Equal(bb.result.Ledger.Lost))
	})

	It("catches asynq's archive dropping dead letters past its cap, naming the jobs", func() {
		e := get("asynq")
		Expect(e.code).To(Equal(1), e.out.String())
		r := e.result
		Expect(failed(r)).To(ContainElements(oracle.InvConservation, oracle.InvDLQNeverShrinks), e.out.String())
		Expect(r.Ledger.DeadLettered).To(BeNumerically("<=", 10_000))
		Expect(r.Ledger.Lost).To(BeNumerically(">=", 300))
		Expect(r.Live.External.Lost).NotTo(BeEmpty())
	})
})
