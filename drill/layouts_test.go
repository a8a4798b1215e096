package drill_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"

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

// layoutScenario is a 4-second drill of testdata/layouts/worker.py on a
// layout, dropping every dropEvery-th job it takes (0: none).
func layoutScenario(layout string, dropEvery int) string {
	worker, err := filepath.Abs(filepath.Join("testdata", "layouts", "worker.py"))
	Expect(err).NotTo(HaveOccurred())
	return fmt.Sprintf(`apiVersion: faultline/v1
kind: Scenario
metadata: {name: layout-%[1]s-drop%[2]d, description: "A worker on a %[1]s queue that drops every %[2]d-th job it takes (0: none)."}
seed: 1
duration: 4s
workload:
  tasks: [{name: ping, dependency: api}]
  arrivals: {kind: constant, rate: 5/s, until: 3s}
workers: {count: 1}
dependencies: [{name: api}]
system:
  external:
    command:
      path: /usr/bin/python3
      args: [-u, %[3]s]
      env: {REDIS_URL: "{redis}", LAYOUT: %[1]s, QUEUE_KEY: "{namespace}:q", DLQ_KEY: "{namespace}:dead_letter",
            GROUP: "{namespace}-workers", PAYMENT_URL: "{dependency:api}", DROP_EVERY: "%[2]d"}
    inject: %[4]s
    dlq: {preset: seed, prefix: "{namespace}:"}
    drain: 3s
    noAlerts: true
expect:
  - {count: lost, equals: 0}
`, layout, dropEvery, worker, layoutInjects[layout])
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
		for layout := range layoutInjects {
			for _, drop := range []int{0, 4} {
				name := fmt.Sprintf("%s-drop%d", layout, drop)
				file := filepath.Join(dir, name+".yaml")
				Expect(os.WriteFile(file, []byte(layoutScenario(layout, drop)), 0o644)).To(Succeed())
				drills[name] = startDrill(name, file, srv.Addr, os.Environ(), "--time-scale", "1")
			}
		}
	})
	AfterAll(func() {
		for _, e := range drills {
			if e.cmd.ProcessState == nil && e.cmd.Process != nil {
				_ = e.cmd.Process.Kill()
			}
			e.wait()
		}
		if srv != nil {
			_ = srv.Stop()
		}
	})

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
})
