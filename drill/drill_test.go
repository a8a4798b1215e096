package drill_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/drill"
	"github.com/faultline/faultline/metrics"
	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/reference/store/redisstore/redistest"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
	"github.com/faultline/faultline/sim"
)

// ciScale is the time scale of the drill specs: it keeps the lane within
// its CI budget (FAULTLINE_DRILL_SCALE overrides it).
func ciScale() float64 {
	if v, err := strconv.ParseFloat(os.Getenv("FAULTLINE_DRILL_SCALE"), 64); err == nil && v >= 1 {
		return v
	}
	return 20
}

// summary is a drill's result in a few lines, for a failure's message.
func summary(res *reports.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s; ledger %+v\n", res.Scenario, res.Verdict, res.Ledger)
	if res.Error != "" {
		fmt.Fprintf(&b, "  %s\n", res.Error)
	}
	for _, e := range res.Expectations {
		if e.Verdict != reports.Passed {
			fmt.Fprintf(&b, "  expectation %s: expected %s, got %s\n", e.Name, e.Expected, e.Actual)
		}
	}
	for i, v := range res.Violations {
		if i == 10 {
			break
		}
		fmt.Fprintf(&b, "  violation %s: %s\n", v.Invariant, v.Message)
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(&b, "  warning: %s\n", w)
	}
	return b.String()
}

func load(source string) *scenarios.Loaded {
	GinkgoHelper()
	var l *scenarios.Loaded
	var err error
	if name, ok := strings.CutPrefix(source, "builtin:"); ok {
		l, err = scenarios.LoadBuiltin(name)
	} else {
		l, err = scenarios.Load(source)
	}
	Expect(err).NotTo(HaveOccurred())
	return l
}

func options(redisURL, source string) drill.Options {
	return drill.Options{RedisURL: redisURL, Scale: ciScale(), WorkerPath: faultlineBin, WorkerArgs: []string{"worker"}, Source: source}
}

// namespaceKeys counts the keys left under a namespace.
func namespaceKeys(url, ns string) int {
	GinkgoHelper()
	c := redisstore.NewClient(url)
	defer c.Close()
	keys, err := c.Keys(context.Background(), redisstore.Prefix(ns)+"*").Result()
	Expect(err).NotTo(HaveOccurred())
	return len(keys)
}

// verdictBuiltins are the built-ins whose drill must PASS — the verdict,
// not only the invariants — on any machine: the drill picks the scale the
// machine holds (--time-scale auto), settles before its last look and
// judges only what it saw. The fleet's five (payment-challenge,
// flapping-primary, retry-storm-on-recovery, gateway-timeout-storm,
// fleet-retry-budget) drill
// the fleet the simulator runs, their budget and breakers shared where
// the scenario says: their verdicts are required too. invariantBuiltins
// would be drilled for their invariants only: none is, today.
var (
	verdictBuiltins = []string{"dlq-store-outage", "worker-crash", "graceful-shutdown", "dlq-basics", "auth-failure-burst", "classification-and-alerting", "stale-answer-fenced", "retry-after-respected",
		"payment-challenge", "flapping-primary", "retry-storm-on-recovery", "gateway-timeout-storm", "fleet-retry-budget"}
	invariantBuiltins = []string{}
	// rotatingBuiltins take turns, one a commit (rotating), so that over
	// a week of commits CI has required PASS of each: the built-ins
	// outside the eight and the fleet's, whose drill takes under a minute
	// at auto scale here (off-peak-auto-retry and auto-retry-once-a-night,
	// a night each, would take two; dlq-past-ten-thousand's and
	// retry-wave-jitter's bursts slow auto to scale 1 on a loaded machine,
	// 2 and 5 minutes — see docs/drills.md).
	rotatingBuiltins = []string{"alert-sink-outage", "breaker-discipline", "dlq-full-reject", "dlq-overflow", "graceful-degradation",
		"manual-reprocessing", "mini-project", "misconfigured-pager", "requeue-drill", "requeue-reset-attempts", "secrets-stay-inside"}
)

// rotating picks this commit's turn of rotatingBuiltins: by the commit's
// hash (git rev-parse HEAD; FAULTLINE_DRILL_ROTATE names one instead), so
// a rerun of one commit drills the same one.
func rotating() string {
	if n := os.Getenv("FAULTLINE_DRILL_ROTATE"); n != "" {
		return n
	}
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil || len(out) < 8 {
		return rotatingBuiltins[0]
	}
	v, err := strconv.ParseUint(string(out[:8]), 16, 64)
	if err != nil {
		return rotatingBuiltins[0]
	}
	return rotatingBuiltins[v%uint64(len(rotatingBuiltins))]
}

var _ = Describe("a drill of the built-ins on a real Redis, with real worker processes", Ordered, func() {
	for _, name := range append(slices.Clone(invariantBuiltins), append(slices.Clone(verdictBuiltins), rotating())...) {
		verdict := !slices.Contains(invariantBuiltins, name)
		It("holds every invariant of "+name+", loses and doubles nothing, and gives the explicit jobs the simulator's dispositions"+map[bool]string{true: "; its verdict is PASS"}[verdict], func(ctx SpecContext) {
			url := redistest.Real()
			l := load("builtin:" + name)
			opts := options(url, "builtin:"+name)
			opts.Namespace = "spec-" + name
			if verdict && os.Getenv("FAULTLINE_DRILL_SCALE") == "" {
				opts.AutoScale = true
			}
			res, h, err := drill.Run(ctx, l, opts)
			Expect(err).NotTo(HaveOccurred())
			switch {
			case verdict && name == rotating() && !slices.Contains(verdictBuiltins, name):
				// The rotating one must never FAIL; a drill that could not
				// keep pace on a loaded runner may say so (inconclusive).
				Expect(res.Verdict).To(BeElementOf(reports.Passed, reports.Inconclusive), summary(res))
			case verdict:
				Expect(res.Verdict).To(Equal(reports.Passed), summary(res))
			}
			// Every invariant holds (checked to the end, none skipped but
			// the ones the scenario turns off), nothing is lost or
			// charged twice. The expectations are bounds written for the
			// simulator; which may read differently live, and why, is in
			// docs/drills.md — they are printed, not asserted.
			Expect(res.Violations).To(BeEmpty(), summary(res))
			for _, inv := range res.Invariants {
				Expect(inv.Verdict).NotTo(Equal(reports.Failed), "%s: %s", inv.Name, summary(res))
				Expect(inv.Note).NotTo(ContainSubstring("not checked to the end"), inv.Name)
			}
			Expect(res.Ledger.Lost).To(BeZero())
			Expect(res.Verdict).NotTo(Equal(reports.Interrupted))
			fmt.Fprintln(GinkgoWriter, summary(res))
			if name == "dlq-basics" {
				// Its dead letters are dated by the wall clock (the
				// scenario pins no start): a kept namespace's DLQ reads
				// today, not the simulator's default Monday (issue 28).
				Expect(h.ScenarioStart).To(BeTemporally("~", time.Now(), 10*time.Minute), "the history keeps the start the drill ran from")
				again, err := oracle.Judge(ctx, l.Scenario, h)
				Expect(err).NotTo(HaveOccurred())
				Expect(again.Verdict).To(Equal(res.Verdict), "report check judges it from that start")
				Expect(again.DLQ).To(Equal(res.DLQ))
				Expect(h.DLQ).NotTo(BeEmpty())
				for _, raw := range h.DLQ {
					var e dlq.Entry
					Expect(json.Unmarshal(raw, &e)).To(Succeed())
					Expect(e.LastFailedAt).To(BeTemporally("~", time.Now(), 10*time.Minute), string(raw))
				}
			}
			if name == "dlq-store-outage" {
				// The live Runner held the dead letters it decided while
				// the DLQ's proxy was cut (the pipeline parked them in
				// the held set through the queue's connection), and wrote
				// every one when the DLQ came back.
				Expect(res.Ledger.Held).To(BeNumerically(">", 0), summary(res))
				Expect(res.Ledger.HeldAtEnd).To(BeZero(), "every held dead letter written")
				// A park that itself times out (a loaded machine: a store
				// call is bounded by a third of the lease's wall time)
				// leaves the dead letter in the worker's memory, its lease
				// heartbeated, parked on a later try: kept, then written,
				// never run again (no-rerun-after-dead-letter held above).
				Expect(res.Ledger.Queued+res.Ledger.InFlight+res.Ledger.Scheduled).To(BeZero(), "every job done")
			}
			if name == "graceful-shutdown" {
				// SIGTERM, not SIGKILL: every worker process exited on its
				// own, as told, and each attempt it canceled released its
				// job without spending an attempt (nothing retried), as on
				// the simulator; the two new invariants were judged.
				Expect(res.Ledger.Released).To(BeNumerically(">", 0), summary(res))
				Expect(res.Ledger.Retries).To(BeZero(), summary(res))
				Expect(res.Ledger.DeadLettered).To(BeZero(), summary(res))
				kinds := map[string]int{}
				for _, p := range h.Processes {
					if p.AtMs <= h.FrozenMs { // the drill's own stop at the end aside
						kinds[p.Kind]++
					}
				}
				Expect(kinds).To(And(HaveKeyWithValue("terminated", 18), HaveKeyWithValue("restarted", 18)), "three stops of six workers, each replaced")
				Expect(kinds).NotTo(HaveKey("killed"), "no worker needed a SIGKILL")
				Expect(h.Notes).NotTo(ContainElement(ContainSubstring("exit(s) the drill did not cause")))
				for _, inv := range res.Invariants {
					if inv.Name == oracle.InvOutcomeIsMove || inv.Name == oracle.InvNoLeaseLeftExpired {
						Expect(inv.Verdict).To(Equal(reports.Passed), inv.Name)
						Expect(inv.Note).To(HavePrefix("judged from the history"), inv.Name)
					}
				}
			}
			Expect(h.Events).NotTo(BeEmpty())
			Expect(h.EventsLost).To(BeFalse())

			// The explicit jobs' fates are the simulator's: their faults
			// are deterministic (they name the job), so the wall clock
			// cannot change them.
			simRes, err := sim.Run(ctx, l.Scenario)
			Expect(err).NotTo(HaveOccurred())
			want := map[string]reports.JobFate{}
			for _, f := range simRes.Fates {
				want[f.JobID] = f
			}
			for _, pj := range l.Scenario.Workload.Jobs {
				got := fateOf(res, pj.ID)
				Expect(got.State).To(Equal(want[pj.ID].State), "job %s", pj.ID)
				Expect(got.Severity).To(Equal(want[pj.ID].Severity), "job %s", pj.ID)
				Expect(got.Class).To(Equal(want[pj.ID].Class), "job %s", pj.ID)
			}
			// The drill removes its keys.
			Expect(namespaceKeys(url, opts.Namespace)).To(BeZero())

			// The history judges the same again.
			again, err := oracle.Judge(ctx, l.Scenario.WithDefaults(), h)
			Expect(err).NotTo(HaveOccurred())
			Expect(again.Verdict).To(Equal(res.Verdict))
			Expect(again.Ledger).To(Equal(res.Ledger))
		}, SpecTimeout(5*time.Minute))
	}
})

func fateOf(res *reports.Result, id string) reports.JobFate {
	for _, f := range res.Fates {
		if f.JobID == id {
			return f
		}
	}
	return reports.JobFate{JobID: id, State: "not in the report"}
}

var _ = Describe("a broken worker", func() {
	It("that acks a decided dead letter instead of writing it is caught by the oracle, which names the job and the rule", func(ctx SpecContext) {
		url := redistest.Real()
		l := load("testdata/declines.yaml")
		opts := options(url, "testdata/declines.yaml")
		opts.Broken = "ack-before-dlq"
		res, _, err := drill.Run(ctx, l, opts)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Verdict).To(Equal(reports.Failed))
		Expect(res.Violations).NotTo(BeEmpty())
		v := res.Violations[0]
		Expect(v.Invariant).To(Equal(oracle.InvConservation))
		Expect(v.Message).To(MatchRegexp(`job charge-\d+: worker w\d decided its dead letter \(permanent, rule "[^"]+"\) .* in-flight → succeeded .*: the dead letter was dropped`))

		By("and the same scenario with the reference worker passes, at a scale the machine holds")
		opts.Broken = ""
		opts.AutoScale = os.Getenv("FAULTLINE_DRILL_SCALE") == ""
		res, _, err = drill.Run(ctx, l, opts)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Verdict).To(Equal(reports.Passed), summary(res))
	}, SpecTimeout(2*time.Minute))
})

var _ = Describe("the abortIf guard", func() {
	It("stops every fault once a bound is crossed, runs on to the end, and says so; the metrics saw it all", func(ctx SpecContext) {
		url := redistest.Real()
		l := load("testdata/abort.yaml")
		opts := options(url, "testdata/abort.yaml")
		opts.Metrics = metrics.New(metrics.Labels{Namespace: "spec-abort", Scenario: "drill-abort"})
		res, h, err := drill.Run(ctx, l, opts)
		Expect(err).NotTo(HaveOccurred())
		Expect(h.Aborted).To(MatchRegexp(`^abortIf.dlqDepth 5 crossed at \+\d.*: \d+ failed entries in the DLQ$`))
		Expect(res.Verdict).To(Equal(reports.Interrupted), summary(res))
		Expect(res.Error).To(ContainSubstring("abortIf.dlqDepth 5 crossed"))
		Expect(res.Violations).To(BeEmpty(), summary(res))
		// After the guard tripped, no call was answered with the fault.
		var abortedAt int64 = -1
		for _, c := range h.Calls {
			if c.Fault == "" && c.AtMs > 10_000 && abortedAt < 0 {
				abortedAt = c.AtMs
			}
			if abortedAt >= 0 && c.AtMs > abortedAt+1000 {
				Expect(c.Fault).To(BeEmpty(), "a call at %dms after the guard stopped the faults", c.AtMs)
			}
		}
		Expect(abortedAt).To(BeNumerically(">", 10_000))
		Expect(h.EndedMs).To(Equal(int64(60_000)), "the drill ran on to its end")

		families, err := opts.Metrics.Registry().Gather()
		Expect(err).NotTo(HaveOccurred())
		seen := map[string]float64{}
		for _, f := range families {
			for _, m := range f.GetMetric() {
				v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
				seen[f.GetName()] += v
			}
		}
		Expect(seen["faultline_job_moves_total"]).To(BeNumerically(">", 100))
		Expect(seen["faultline_fault_hits_total"]).To(BeNumerically(">", 0))
		Expect(seen).To(HaveKey("faultline_retry_budget_booked"), "the fleet's retry budget, read from Redis at each snapshot")
	}, SpecTimeout(time.Minute))
})

var _ = Describe("a namespace that holds keys", func() {
	It("is refused, and left as it was", func(ctx SpecContext) {
		url := redistest.Real()
		c := redisstore.NewClient(url)
		defer c.Close()
		key := redisstore.Prefix("spec-busy") + ":someone-elses"
		Expect(c.Set(ctx, key, "data", 0).Err()).To(Succeed())
		opts := options(url, "testdata/declines.yaml")
		opts.Namespace = "spec-busy"
		_, _, err := drill.Run(ctx, load("testdata/declines.yaml"), opts)
		Expect(err).To(MatchError(drill.ErrSteadyState))
		Expect(err.Error()).To(ContainSubstring(`namespace "spec-busy" already holds keys`))
		Expect(c.Get(ctx, key).Val()).To(Equal("data"), "the drill deleted a namespace it did not claim")
	})
})

// durableRedis is a redis-server of the spec's own that writes every
// command to its append-only file before answering, so that it can be
// killed and restarted on the same port without losing what it
// acknowledged.
type durableRedis struct {
	port int
	dir  string
	cmd  *exec.Cmd
}

func (r *durableRedis) start() {
	GinkgoHelper()
	r.cmd = exec.Command("redis-server", "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--dir", r.dir,
		"--appendonly", "yes", "--appendfsync", "always", "--save", "")
	r.cmd.Stdout, r.cmd.Stderr = GinkgoWriter, GinkgoWriter
	Expect(r.cmd.Start()).To(Succeed())
	c := redis.NewClient(&redis.Options{Addr: r.addr(), MaxRetries: -1})
	defer c.Close()
	Eventually(func() error { return c.Ping(context.Background()).Err() }).WithTimeout(10 * time.Second).Should(Succeed())
}

func (r *durableRedis) kill() {
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
}

func (r *durableRedis) addr() string { return "127.0.0.1:" + strconv.Itoa(r.port) }

var _ = Describe("Redis killed and restarted mid-drill", func() {
	It("lets the workers recover when it is back; the drill ends, reports, and loses nothing Redis acknowledged", func(ctx SpecContext) {
		redistest.Real() // skips, or fails under FAULTLINE_REQUIRE_REDIS=1, without redis-server
		port := freePort()
		r := &durableRedis{port: port, dir: GinkgoT().TempDir()}
		r.start()
		DeferCleanup(r.kill)
		l := load("testdata/restart.yaml")
		opts := options("redis://"+r.addr()+"/0", "testdata/restart.yaml")
		opts.Dir = GinkgoT().TempDir()
		opts.Keep = true // the logs are read below
		opts.Namespace = "spec-restart"
		done := make(chan struct{})
		var res *reports.Result
		var err error
		go func() {
			defer close(done)
			res, _, err = drill.Run(ctx, l, opts)
		}()
		// Killed once jobs flow (a few hundred moves in the stream, some
		// 30s of scenario time in), back after 20s of scenario time: the
		// outage's length is the timer.
		c := redis.NewClient(&redis.Options{Addr: r.addr(), MaxRetries: -1})
		defer c.Close()
		Eventually(func() int64 { return c.XLen(ctx, redisstore.EventStreamKey(opts.Namespace)).Val() }).
			WithTimeout(30 * time.Second).Should(BeNumerically(">=", 300))
		r.kill()
		<-time.After(time.Duration(float64(20*time.Second) / opts.Scale))
		r.start()
		Eventually(done).WithTimeout(90 * time.Second).Should(BeClosed())
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Ledger.Lost).To(BeZero(), summary(res))
		Expect(res.Violations).To(BeEmpty(), summary(res))
		// The outage is a fault the scenario does not name, at a fixed
		// scale: a drill whose producer waited out the outage may have
		// fallen behind (inconclusive), never failed.
		Expect(res.Verdict).To(BeElementOf(reports.Passed, reports.Inconclusive), summary(res))
		// No worker panicked.
		logs, _ := filepath.Glob(filepath.Join(opts.Dir, "w*.log"))
		Expect(logs).NotTo(BeEmpty())
		for _, f := range logs {
			b, err := os.ReadFile(f)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(b)).NotTo(ContainSubstring("goroutine "), f)
			Expect(string(b)).NotTo(ContainSubstring("panic"), f)
		}
	}, SpecTimeout(2*time.Minute))
})

func freePort() int {
	GinkgoHelper()
	l, err := netListen()
	Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func netListen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }
