package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/cmd/faultline/internal/cli"
	"github.com/faultline/faultline/drill"
	"github.com/faultline/faultline/reference/store/redisstore"
)

// Named timeouts of the drill-process specs.
const (
	// workersUpTimeout bounds a drill's start: the binary, four worker
	// processes, the canaries, a loaded machine.
	workersUpTimeout = 60 * time.Second
	// deathTimeout bounds the kernel's parent-death signal reaching the
	// workers of a SIGKILLed drill.
	deathTimeout = 5 * time.Second
	// exitTimeout bounds a drill's exit on SIGTERM or SIGINT: faults
	// undone, workers stopped (grace, then SIGKILL), keys removed, report
	// written.
	exitTimeout = 45 * time.Second
)

// lockedBuffer is an io.Writer a process writes to while a spec reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// drillProc is a `faultline drill` process a spec started.
type drillProc struct {
	cmd *exec.Cmd
	// tmp is its TMPDIR: its workers' configurations are there, so a
	// process whose command line names tmp is one of its workers.
	tmp      string
	out      lockedBuffer
	done     chan struct{}
	exitCode int
}

// startDrill starts the faultline binary drilling dlq-basics in namespace
// ns of the Redis at url, and waits until its workers are up and its
// scenario runs (the namespace holds jobs).
func startDrill(url, ns string) *drillProc {
	GinkgoHelper()
	dir := GinkgoT().TempDir()
	p := &drillProc{tmp: filepath.Join(dir, "tmp"), done: make(chan struct{})}
	Expect(os.Mkdir(p.tmp, 0o700)).To(Succeed())
	p.cmd = exec.Command(raceBinary(), "drill", "dlq-basics", "--redis-url", url, "--namespace", ns, "--time-scale", "20",
		"--progress", "never", "--report-dir", filepath.Join(dir, "reports"))
	p.cmd.Env = append(os.Environ(), "TMPDIR="+p.tmp)
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	Expect(p.cmd.Start()).To(Succeed())
	go func() {
		_ = p.cmd.Wait()
		p.exitCode = p.cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	DeferCleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		for _, pid := range p.workers() { // a spec that failed leaves none behind either
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	Eventually(func() []int { return p.workers() }).WithTimeout(workersUpTimeout).WithPolling(100*time.Millisecond).
		Should(HaveLen(4), func() string { return "dlq-basics's 4 workers up; the drill said:\n" + p.out.String() })
	Eventually(func() int { return matching(url, redisstore.Prefix(ns)+"*") }).WithTimeout(workersUpTimeout).
		Should(BeNumerically(">", 1), func() string { return "the scenario's jobs created; the drill said:\n" + p.out.String() })
	return p
}

// workers are the live processes (zombies have no command line) started
// with a worker configuration under p.tmp: p's worker processes.
func (p *drillProc) workers() []int {
	GinkgoHelper()
	entries, err := os.ReadDir("/proc")
	Expect(err).NotTo(HaveOccurred())
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue // gone meanwhile
		}
		args := strings.Split(string(b), "\x00")
		if len(args) > 2 && args[1] == "worker" && strings.Contains(string(b), p.tmp+"/") {
			pids = append(pids, pid)
		}
	}
	return pids
}

// exited waits for p to exit and returns its exit code.
func (p *drillProc) exited() int {
	GinkgoHelper()
	Eventually(p.done).WithTimeout(exitTimeout).Should(BeClosed(), func() string { return "the drill exits; it said:\n" + p.out.String() })
	return p.exitCode
}

// keysOf counts the keys of namespace ns (its canary's included).
func keysOf(url, ns string) int {
	GinkgoHelper()
	return matching(url, redisstore.Prefix(ns)+"*") + matching(url, redisstore.Prefix(ns+"-canary")+"*")
}

// matching counts the keys matching pattern.
func matching(url, pattern string) int {
	GinkgoHelper()
	c := redisstore.NewClient(url)
	defer c.Close()
	keys, err := c.Keys(context.Background(), pattern).Result()
	Expect(err).NotTo(HaveOccurred())
	return len(keys)
}

// claimGone writes namespace ns's claim as a drill that is gone (a
// process started and killed), and a key beside it.
func claimGone(rdb *redis.Client, ns string) drill.Claim {
	GinkgoHelper()
	h, err := drill.LocalHost()
	Expect(err).NotTo(HaveOccurred())
	cmd := exec.Command("sleep", "60")
	Expect(cmd.Start()).To(Succeed())
	c := drill.NewClaim("dlq-basics", h, time.Now())
	c.PID = cmd.Process.Pid
	Expect(cmd.Process.Kill()).To(Succeed())
	_ = cmd.Wait()
	writeClaim(rdb, ns, c)
	return c
}

// writeClaim writes c as namespace ns's claim, and a key beside it.
func writeClaim(rdb *redis.Client, ns string, c drill.Claim) {
	GinkgoHelper()
	v, err := drill.EncodeClaim(c)
	Expect(err).NotTo(HaveOccurred())
	ctx := context.Background()
	Expect(rdb.Set(ctx, redisstore.Prefix(ns)+":drill", v, 0).Err()).To(Succeed())
	Expect(rdb.Set(ctx, redisstore.Prefix(ns)+":queue:default", "job", 0).Err()).To(Succeed())
}

var _ = Describe("faultline drill cleanup", func() {
	var (
		url string
		rdb *redis.Client
	)
	BeforeEach(func() {
		srv := startRedis()
		DeferCleanup(srv.Stop)
		url = "redis://" + srv.Addr + "/0"
		rdb = redisstore.NewClient(url)
		DeferCleanup(rdb.Close)
	})

	It("--namespace removes that namespace's keys, if its drill is gone, and leaves another's", func() {
		c := claimGone(rdb, "left")
		claimGone(rdb, "other")
		stdout, stderr, code := run("drill", "cleanup", "--namespace", "left", "--redis-url", url, "--dry-run")
		Expect(code).To(Equal(cli.ExitOK), stderr)
		Expect(stdout).To(HavePrefix("would remove namespace left"))
		Expect(keysOf(url, "left")).To(Equal(2))

		stdout, stderr, code = run("drill", "cleanup", "--namespace", "left", "--redis-url", url)
		Expect(code).To(Equal(cli.ExitOK), stderr)
		Expect(stdout).To(ContainSubstring("removed namespace left on " + strings.TrimSuffix(strings.TrimPrefix(url, "redis://"), "/0") + " (2 keys): its claim names a drill that is gone: drill of dlq-basics, pid " + strconv.Itoa(c.PID)))
		Expect(keysOf(url, "left")).To(BeZero())
		Expect(keysOf(url, "other")).To(Equal(2))
	})

	It("refuses, saying why, a namespace whose drill runs, and unforced one of another host or with no claim", func() {
		h, err := drill.LocalHost()
		Expect(err).NotTo(HaveOccurred())
		writeClaim(rdb, "live", drill.NewClaim("s", h, time.Now()))
		far := drill.NewClaim("s", h, time.Now())
		far.Host = "build-7.example"
		writeClaim(rdb, "far", far)
		Expect(rdb.Set(context.Background(), redisstore.Prefix("bare")+":x", "1", 0).Err()).To(Succeed())

		_, stderr, code := run("drill", "cleanup", "--namespace", "live", "--redis-url", url, "--force")
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(stderr).To(ContainSubstring("still running: drill of s, pid " + strconv.Itoa(os.Getpid()) + " on host " + h.Name))
		_, stderr, code = run("drill", "cleanup", "--namespace", "far", "--redis-url", url)
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(stderr).To(And(ContainSubstring("on another host"), ContainSubstring("build-7.example"), ContainSubstring("--force")))
		_, stderr, code = run("drill", "cleanup", "--namespace", "bare", "--redis-url", url)
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(stderr).To(And(ContainSubstring("no drill claim"), ContainSubstring("faultline drill cleanup --namespace bare --redis-url "+url+" --force")))
		Expect(keysOf(url, "live") + keysOf(url, "far") + keysOf(url, "bare")).To(Equal(5))

		_, stderr, code = run("drill", "cleanup", "--namespace", "far", "--redis-url", url, "--force")
		Expect(code).To(Equal(cli.ExitOK), stderr)
		Expect(keysOf(url, "far")).To(BeZero())
	})

	It("--stale removes each namespace whose drill is gone and keeps the others, one line each", func() {
		h, err := drill.LocalHost()
		Expect(err).NotTo(HaveOccurred())
		claimGone(rdb, "dead")
		writeClaim(rdb, "live", drill.NewClaim("s", h, time.Now()))
		Expect(rdb.Set(context.Background(), redisstore.Prefix("old")+":drill", "faultline drill of s, pid 1", 0).Err()).To(Succeed())

		stdout, stderr, code := run("drill", "cleanup", "--stale", "--redis-url", url)
		Expect(code).To(Equal(cli.ExitOK), stderr)
		Expect(strings.Split(strings.TrimSpace(stdout), "\n")).To(ConsistOf(
			HavePrefix("removed dead (2 keys): its claim names a drill that is gone"),
			HavePrefix("kept live (2 keys): its claim names a drill still running"),
			And(HavePrefix("kept old (1 key): it was claimed by an older faultline"), ContainSubstring("--force"))))
		Expect(keysOf(url, "dead")).To(BeZero())
		Expect(keysOf(url, "live")).To(Equal(2))

		stdout, _, code = run("drill", "cleanup", "--stale", "--redis-url", url, "--dry-run")
		Expect(code).To(Equal(cli.ExitOK))
		Expect(stdout).NotTo(ContainSubstring("dead"))
	})

	It("says what it takes, off loopback too, and is unavailable (exit 4) without Redis", func() {
		for _, args := range [][]string{
			{"--redis-url", url},
			{"--stale", "--namespace", "x", "--redis-url", url},
			{"--stale", "--force", "--redis-url", url},
			{"--namespace", "a b", "--redis-url", url},
			{"--stale", "--redis-url", "redis://:hunter2@192.0.2.1:6379/0"},
			{"--stale", "extra", "--redis-url", url},
		} {
			_, stderr, code := run(append([]string{"drill", "cleanup"}, args...)...)
			Expect(code).To(Equal(cli.ExitInvalid), "%v", args)
			Expect(stderr).To(ContainSubstring("Try: faultline drill cleanup --help"), "%v", args)
			Expect(stderr).NotTo(ContainSubstring("hunter2"))
		}
		_, stderr, code := run("drill", "cleanup", "--stale", "--redis-url", "127.0.0.1:1")
		Expect(code).To(Equal(cli.ExitUnavailable), stderr)
		Expect(stderr).To(ContainSubstring("127.0.0.1:1"))
	})

	It("the refusal of a drill in a namespace that holds keys prints the cleanup command", func() {
		c := claimGone(rdb, "left")
		_, stderr, code := run("drill", "dlq-basics", "--redis-url", url, "--namespace", "left", "--report-dir", GinkgoT().TempDir())
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(stderr).To(And(ContainSubstring(`namespace "left" already holds keys`),
			ContainSubstring("its claim names a drill that is gone: drill of dlq-basics, pid "+strconv.Itoa(c.PID)),
			ContainSubstring("faultline drill cleanup --namespace left --redis-url "+url)))
	})

	Describe("after the drill's worst exits", func() {
		It("SIGKILL of the drill leaves no worker process, and --stale removes its namespace", func() {
			p := startDrill(url, "killed")
			Expect(p.cmd.Process.Signal(syscall.SIGKILL)).To(Succeed())
			Eventually(p.workers).WithTimeout(deathTimeout).WithPolling(50*time.Millisecond).Should(BeEmpty(), "the kernel's parent-death signal ended every worker")
			Expect(p.exited()).To(Equal(-1), "killed by a signal")
			Expect(keysOf(url, "killed")).To(BeNumerically(">", 1), "a SIGKILLed drill cannot remove its keys")
			// Nor its work folder, which its claim names.
			raw, err := rdb.Get(context.Background(), redisstore.Prefix("killed")+":drill").Result()
			Expect(err).NotTo(HaveOccurred())
			var claim drill.Claim
			Expect(json.Unmarshal([]byte(raw), &claim)).To(Succeed())
			Expect(claim.Dir).To(ContainSubstring("faultline-drill-"))
			Expect(claim.Dir).To(BeADirectory())

			stdout, stderr, code := run("drill", "cleanup", "--stale", "--redis-url", url)
			Expect(code).To(Equal(cli.ExitOK), stderr)
			Expect(stdout).To(MatchRegexp(`(?m)^removed killed \(\d+ keys and its work folder \S+faultline-drill-\S+\): its claim names a drill that is gone: drill of dlq-basics, pid ` + strconv.Itoa(p.cmd.Process.Pid) + ` on host `))
			Expect(rdb.DBSize(context.Background()).Val()).To(BeZero(), "nothing of the drill is left")
			Expect(claim.Dir).NotTo(BeAnExistingFile(), "its work folder went with its keys")
		})

		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
			It(sig.String()+" of the drill leaves no process and no key", func() {
				p := startDrill(url, "stopped")
				pids := p.workers()
				Expect(p.cmd.Process.Signal(sig)).To(Succeed())
				Expect(p.exited()).To(Equal(cli.ExitFailed), "interrupted, not a pass: %s", p.out.String())
				Expect(p.out.String()).To(ContainSubstring("interrupted"))
				Expect(p.workers()).To(BeEmpty())
				for _, pid := range pids {
					Expect(syscall.Kill(pid, 0)).To(MatchError(syscall.ESRCH), "worker %d is gone", pid)
				}
				Expect(rdb.DBSize(context.Background()).Val()).To(BeZero(), "the drill removed every key it wrote")
			})
		}
	})
})
