package drill_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/store/redisstore/redistest"
	"github.com/faultline/faultline/reports"
)

// layoutInjects are the inject blocks of the four Redis queue layouts
// testdata/layouts/worker.py runs on.
var layoutInjects = map[string]string{
	"list":   `{redisList: {key: "{namespace}:q"}}`,
	"stream": `{redisStream: {key: "{namespace}:q", group: "{namespace}-workers"}}`,
	"hash":   `{template: '{"id": "{id}", "task": "{task}", "status": "queued"}', redisHash: {key: "{namespace}:q", state: {field: status, queued: [queued]}}}`,
	"zset":   `{redisZSet: {key: "{namespace}:q"}}`,
}

// readHistory reads a drill's history file.
func readHistory(e *exampleDrill) *oracle.History {
	GinkgoHelper()
	files, err := filepath.Glob(filepath.Join(e.dir, "*.history.json"))
	Expect(err).NotTo(HaveOccurred())
	Expect(files).To(HaveLen(1), "the drill wrote one history:\n%s", e.out.String())
	f, err := os.Open(files[0])
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	h, err := oracle.Read(f)
	Expect(err).NotTo(HaveOccurred())
	return h
}

// layoutScenario is a 4-second drill of testdata/layouts/worker.py on a
// layout, dropping every dropEvery-th job it takes (0: none).
func layoutScenario(layout string, dropEvery int) string {
	return workerScenario(fmt.Sprintf("layout-%s-drop%d", layout, dropEvery), layoutInjects[layout], fmt.Sprintf("LAYOUT: %s, DROP_EVERY: \"%d\"", layout, dropEvery), "3s", "")
}

// pageScenario is a 4-second drill of testdata/layouts/worker.py on a
// list whose job auth-1 is answered 401 at +1s: the worker dead-letters it,
// notes it at once to a chat receiver declared not paging, and pages
// pageDelay seconds later (deadline +9s).
func pageScenario(name string, pageDelay int, drain string) string {
	return workerScenario(name, layoutInjects["list"], fmt.Sprintf(`LAYOUT: list, PAGE_URL: "{receiver:slack}", CHAT_URL: "{receiver:team-chat}", PAGE_DELAY: "%d"`, pageDelay), drain, `
  jobs: [{at: 1s, id: auth-1, task: ping}]
faults:
  - {name: key-revoked, target: dependency/api, requireHits: true, model: auth-failure, schedule: {jobs: [auth-1]}}
invariants: {pageWithin: 8s}
`)
}

// readyScenario is a 4-second drill of testdata/layouts/worker.py on a
// list, the worker ready readyDelay seconds after it starts, its readiness
// probe a Redis key per copy asked for at most timeout.
func readyScenario(name string, readyDelay int, timeout string) string {
	src := workerScenario(name, layoutInjects["list"], fmt.Sprintf(`LAYOUT: list, READY_KEY: "{namespace}:ready:{worker}", READY_DELAY: "%d"`, readyDelay), "3s", "")
	return strings.Replace(src, "    drain: 3s\n", fmt.Sprintf("    drain: 3s\n    ready: {redisKey: \"{namespace}:ready:{worker}\", timeout: %s}\n", timeout), 1)
}

// workerScenario is a 4-second drill of testdata/layouts/worker.py, its
// environment and inject block given, the rest of the scenario appended
// after the workload's arrivals (jobs, faults, invariants).
func workerScenario(name, inject, env, drain, rest string) string {
	worker, err := filepath.Abs(filepath.Join("testdata", "layouts", "worker.py"))
	Expect(err).NotTo(HaveOccurred())
	alerts := "noAlerts: true"
	if strings.Contains(env, "{receiver:") {
		alerts = "receivers: [{name: team-chat, paging: false}]"
	}
	return fmt.Sprintf(`apiVersion: faultline/v1
kind: Scenario
metadata: {name: %[1]s, description: "testdata/layouts/worker.py, drilled."}
seed: 1
duration: 4s
sample: 200ms
system:
  external:
    command:
      path: /usr/bin/python3
      args: [-u, %[2]s]
      env: {REDIS_URL: "{redis}", QUEUE_KEY: "{namespace}:q", DLQ_KEY: "{namespace}:dead_letter",
            GROUP: "{namespace}-workers", PAYMENT_URL: "{dependency:api}", %[3]s}
    inject: %[4]s
    dlq: {preset: seed, prefix: "{namespace}:"}
    drain: %[5]s
    pageWait: 1s
    %[6]s
expect:
  - {count: lost, equals: 0}
workers: {count: 1}
dependencies: [{name: api}]
workload:
  tasks: [{name: ping, dependency: api}]
  arrivals: {kind: constant, rate: 5/s, until: 3s}%[7]s`, name, worker, env, inject, drain, alerts, rest)
}

// Each Redis queue layout read right: a worker that drops jobs is caught
// with the jobs named as lost on every layout (a stream's acknowledged
// entries, a hash's records marked taken are not "still queued"), and the
// same worker that drops nothing passes.
var _ = Describe("Black-box drills on each queue layout", Ordered, Label("drill", "slow"), func() {
	drills := map[string]*exampleDrill{}
	var srv *redistest.Server

	BeforeAll(func() {
		if runtime.GOOS != "linux" {
			Skip("drills run on Linux only")
		}
		if err := exec.Command("/usr/bin/python3", "-c", "import redis").Run(); err != nil {
			Fail("drill/testdata/layouts/worker.py needs /usr/bin/python3 with redis-py: apt-get install python3-redis")
		}
		var err error
		srv, err = redistest.StartServer()
		if errors.Is(err, redistest.ErrNoServer) && !redistest.Required() {
			Skip("redis-server is not on PATH")
		}
		Expect(err).NotTo(HaveOccurred())
		dir := GinkgoT().TempDir()
		files := map[string]string{
			// The page comes at about +7s, after every job settled (+4s)
			// and a quiet second: the drain waits for it. Then one whose
			// deadline (+9s) is past a drain that ends at about +6s, and
			// which comes at about +8s.
			"page-awaited":     pageScenario("page-awaited", 6, "8s"),
			"page-after-drain": pageScenario("page-after-drain", 7, "2s"),
			// A worker that takes 2s to be ready; then one never ready.
			"ready":     readyScenario("ready", 2, "10s"),
			"not-ready": readyScenario("not-ready", 60, "2s"),
		}
		for layout := range layoutInjects {
			for _, drop := range []int{0, 4} {
				files[fmt.Sprintf("%s-drop%d", layout, drop)] = layoutScenario(layout, drop)
			}
		}
		for name, src := range files {
			file := filepath.Join(dir, name+".yaml")
			Expect(os.WriteFile(file, []byte(src), 0o644)).To(Succeed())
			drills[name] = startDrill(name, file, srv.Addr, os.Environ(), "--time-scale", "1")
		}
	})
	AfterAll(func() { stopDrills(drills, srv) })

	for _, layout := range []string{"list", "stream", "hash", "zset"} {
		It("on a "+layout+" queue, names the jobs a dropping worker lost and passes the worker that drops nothing", func() {
			bad, good := drills[layout+"-drop4"], drills[layout+"-drop0"]
			bad.wait()
			good.wait()
			Expect(bad.result).NotTo(BeNil(), "no report; the drill said:\n%s", bad.out.String())
			Expect(good.result).NotTo(BeNil(), "no report; the drill said:\n%s", good.out.String())

			Expect(good.code).To(Equal(0), good.out.String())
			Expect(good.result.Verdict).To(Equal(reports.Passed), good.out.String())
			Expect(good.result.Ledger.Lost).To(BeZero())

			// 15 jobs, every 4th taken dropped (its ID is the worker's to
			// pick on a hash, which it scans).
			dropped := bad.result.Live.External.Lost
			Expect(dropped).To(HaveLen(3), bad.out.String())
			Expect(bad.code).To(Equal(1), bad.out.String())
			Expect(bad.result.Verdict).To(Equal(reports.Failed))
			Expect(bad.result.Ledger.Lost).To(BeEquivalentTo(len(dropped)), bad.out.String())
			var msgs []string
			for _, v := range bad.result.Violations {
				if v.Invariant == oracle.InvConservation {
					msgs = append(msgs, v.Message)
				}
			}
			Expect(msgs).To(HaveLen(len(dropped)))
			Expect(msgs).To(HaveEach(And(ContainSubstring("was lost"), ContainSubstring("never called its dependency"),
				ContainSubstring("not in the queue at the end"))))
		})
	}

	invariant := func(r *reports.Result, name string) reports.InvariantResult {
		GinkgoHelper()
		for _, inv := range r.Invariants {
			if inv.Name == name {
				return inv
			}
		}
		Fail("no invariant " + name)
		return reports.InvariantResult{}
	}

	It("waits, within the drain, for a page owed after every job settled, and says so; counts no note to a receiver declared not paging", func() {
		e := drills["page-awaited"]
		e.wait()
		Expect(e.result).NotTo(BeNil(), "no report; the drill said:\n%s", e.out.String())
		Expect(e.code).To(Equal(0), e.out.String())
		Expect(invariant(e.result, oracle.InvCriticalPaged).Verdict).To(Equal(reports.Passed), e.out.String())
		Expect(e.result.Alerts.Pages).To(BeEquivalentTo(1), "the chat note is no page")
		Expect(e.result.Alerts.Notifications).To(BeEquivalentTo(2))
		w := e.result.Live.External.PageWait
		Expect(w).NotTo(BeNil(), e.out.String())
		Expect(w.PagedMs).To(BeNumerically(">", w.FromMs))
		Expect(w.PagedMs).To(BeNumerically("<=", w.DeadlineMs))
		Expect(e.result.Live.External.SettledAtMs).To(BeNumerically("<=", w.FromMs), "the jobs settled before the wait, not when the page came")
		Expect(e.out.String()).To(MatchRegexp(`every job settled at \+[0-9.]+m?s; then waited from \+[0-9.]+m?s for the page owed for the critical failure of api at \+[0-9.]+m?s \(deadline \+[0-9.]+m?s\): paged at`))
	})

	It("starts the scenario's clock once the system's readiness probe says ready, not after a blind sleep, and refuses a system never ready", func() {
		e := drills["ready"]
		e.wait()
		Expect(e.result).NotTo(BeNil(), "no report; the drill said:\n%s", e.out.String())
		Expect(e.code).To(Equal(0), e.out.String())
		m := regexp.MustCompile(`^EXISTS \{namespace\}:ready:\{worker\}: ready (\S+) after the system started$`).FindStringSubmatch(e.result.Live.External.Ready)
		Expect(m).NotTo(BeNil(), e.result.Live.External.Ready)
		took, err := time.ParseDuration(m[1])
		Expect(err).NotTo(HaveOccurred())
		Expect(took).To(BeNumerically(">=", 2*time.Second), "the worker sets its key 2s after it starts")
		// Ready before the clock started, the worker ran each job at once.
		h := readHistory(e)
		first := map[string]int64{}
		for _, c := range h.Calls {
			if _, ok := first[c.JobID]; !ok {
				first[c.JobID] = c.AtMs
			}
		}
		Expect(h.Jobs).NotTo(BeEmpty())
		for _, j := range h.Jobs {
			Expect(first).To(HaveKey(j.ID))
			Expect(first[j.ID]-j.AtMs).To(BeNumerically("<", 500), "job %s injected at +%dms, first called at +%dms", j.ID, j.AtMs, first[j.ID])
		}

		never := drills["not-ready"]
		never.wait()
		Expect(never.code).NotTo(BeZero())
		Expect(never.out.String()).To(And(ContainSubstring("the system was not ready 2s after it started (system.external.ready.timeout)"),
			MatchRegexp(`key drill-not-ready-\w+:ready:w1: not ready: it does not exist yet \(copy w1\)`)), never.out.String())
	})

	It("calls a page whose deadline is past the end of watching not observable, with the drain that would judge it — never 'never paged'", func() {
		e := drills["page-after-drain"]
		e.wait()
		Expect(e.result).NotTo(BeNil(), "no report; the drill said:\n%s", e.out.String())
		inv := invariant(e.result, oracle.InvCriticalPaged)
		Expect(inv.Verdict).To(Equal(reports.NotObservable), e.out.String())
		Expect(inv.Note).To(And(ContainSubstring("when the drill stopped watching"), ContainSubstring("a system.external.drain of at least")))
		Expect(e.out.String()).NotTo(ContainSubstring("never paged"))
		Expect(e.out.String()).To(ContainSubstring("not paged by"))
	})
})
