package drill_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/drill/workerproc"
	"github.com/faultline/faultline/reference/store/redisstore/redistest"
	"github.com/faultline/faultline/reports"
)

// The black-box mutation suite: the reference worker drilled from outside
// (faultline worker --scenario, testdata/mutations/drill.yaml, 30s at time
// scale 10), clean and with each defect of workerproc.Defects switched on
// by FAULTLINE_DEFECT, all at once. The clean worker passes; each defect
// fails the drill by the rule it breaks.
var _ = Describe("The black-box mutation suite (testdata/mutations: the reference worker with one defect at a time)", Ordered, Label("drill", "slow"), func() {
	drills := map[string]*exampleDrill{}
	var srv *redistest.Server

	BeforeAll(func() {
		if runtime.GOOS != "linux" {
			Skip("drills run on Linux only")
		}
		var err error
		srv, err = redistest.StartServer()
		if errors.Is(err, redistest.ErrNoServer) && !redistest.Required() {
			Skip("redis-server is not on PATH")
		}
		Expect(err).NotTo(HaveOccurred())
		file, err := filepath.Abs(filepath.Join("testdata", "mutations", "drill.yaml"))
		Expect(err).NotTo(HaveOccurred())
		// The scenario's command is `faultline` on PATH.
		path := "PATH=" + filepath.Dir(faultlineBin) + string(os.PathListSeparator) + os.Getenv("PATH")
		names := []string{"clean"}
		for _, d := range workerproc.Defects {
			names = append(names, d.Name)
		}
		for _, name := range names {
			defect := name
			if name == "clean" {
				defect = ""
			}
			drills[name] = startDrill(name, file, srv.Addr, append(os.Environ(), path, workerproc.EnvDefect+"="+defect), "--time-scale", "10")
		}
		// The same worker with its leader killed (testdata/leader).
		leader, err := filepath.Abs(filepath.Join("testdata", "leader", "drill.yaml"))
		Expect(err).NotTo(HaveOccurred())
		drills["leader-death"] = startDrill("leader-death", leader, srv.Addr, append(os.Environ(), path, workerproc.EnvDefect+"="), "--time-scale", "10")
	})
	AfterAll(func() { stopDrills(drills, srv) })

	failedRules := func(r *reports.Result) []string {
		var out []string
		for _, inv := range r.Invariants {
			if inv.Verdict == reports.Failed {
				out = append(out, inv.Name)
			}
		}
		return out
	}

	It("passes the clean reference worker: every invariant judged from outside holds", func() {
		e := drills["clean"]
		e.wait()
		Expect(e.result).NotTo(BeNil(), "no report; the drill said:\n%s", e.out.String())
		Expect(e.code).To(Equal(0), e.out.String())
		Expect(e.result.Verdict).To(Equal(reports.Passed), e.out.String())
	})

	It("passes two copies whose leader is killed: the next leader pages what waited in the store's log, once", func() {
		e := drills["leader-death"]
		e.wait()
		Expect(e.result).NotTo(BeNil(), "no report; the drill said:\n%s", e.out.String())
		Expect(e.result.Verdict).To(Equal(reports.Passed), e.out.String())
		Expect(e.code).To(Equal(0), e.out.String())
		Expect(e.out.String()).To(ContainSubstring("2 killed"), "both copies were killed -9 once")
	})

	for _, d := range workerproc.Defects {
		It("fails the worker that "+d.What+", by "+d.Rule, func() {
			e := drills[d.Name]
			e.wait()
			Expect(e.result).NotTo(BeNil(), "no report; the drill said:\n%s", e.out.String())
			Expect(e.code).To(Equal(1), e.out.String())
			Expect(e.result.Verdict).To(Equal(reports.Failed))
			Expect(failedRules(e.result)).To(ContainElement(d.Rule), e.out.String())
		})
	}

	It("is listed in docs/promises.md: each defect in the row of the rule that catches it", func() {
		b, err := os.ReadFile(filepath.Join("..", "docs", "promises.md"))
		Expect(err).NotTo(HaveOccurred())
		rows := map[string]string{}
		for _, line := range strings.Split(string(b), "\n") {
			if rule, rest, ok := strings.Cut(strings.TrimPrefix(line, "| `"), "` |"); ok && strings.HasPrefix(line, "| `") {
				rows[rule] = rest
			}
		}
		for _, d := range workerproc.Defects {
			Expect(rows).To(HaveKeyWithValue(d.Rule, ContainSubstring("`"+d.Name+"`")), "defect %s under rule %s", d.Name, d.Rule)
		}
	})

	It("refuses a defect it does not know, naming those it does", func() {
		cmd := exec.Command(faultlineBin, "worker", "--scenario", filepath.Join("testdata", "mutations", "drill.yaml"))
		cmd.Env = append(os.Environ(), "FAULTLINE_REDIS_URL=redis://"+srv.Addr+"/0", "FAULTLINE_NAMESPACE=mutations", workerproc.EnvDefect+"=slow-ack")
		out, err := cmd.CombinedOutput()
		Expect(err).To(HaveOccurred())
		Expect(string(out)).To(ContainSubstring(`FAULTLINE_DEFECT="slow-ack": takes one of ack-before-dlq, drop, rerun, hot-loop, no-retry-after, no-retry, retry-final, bare-dlq, trim-dlq, no-page, two-leaders`))
	})
})
