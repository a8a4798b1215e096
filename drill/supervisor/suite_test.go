package supervisor_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"

	"github.com/faultline/faultline/drill/supervisor"
)

func TestSupervisor(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "drill/supervisor")
}

// drillEnv makes the test binary a drill of its own: it starts one worker
// (/bin/sleep), prints the worker's pid and waits to be killed.
const drillEnv = "FAULTLINE_SUPERVISOR_TEST_DRILL"

func TestMain(m *testing.M) {
	if os.Getenv(drillEnv) != "" {
		os.Exit(drillMain())
	}
	os.Exit(m.Run())
}

// drillMain is the test binary run as a drill.
func drillMain() int {
	s, err := supervisor.New([]supervisor.Spec{{Name: "w1", Path: "/bin/sleep", Args: []string{"60"}}}, supervisor.Options{})
	if err == nil {
		err = s.Start(context.Background())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(s.PIDs()["w1"])
	select {}
}

// Named timeouts and delays of the specs.
const (
	// settle bounds waiting for what happens at once on an idle machine.
	settle = 5 * time.Second
	// restartDelay is the supervisor's delay after an unexpected exit.
	restartDelay = 100 * time.Millisecond
	// grace is Stop's grace in the specs.
	grace = 2 * time.Second
)

// proc is one process as /proc shows it.
type proc struct {
	pid, pgrp int
	state     byte
}

// readProc reads /proc/PID/stat; ok is false when the process is gone.
func readProc(pid int) (proc, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return proc{}, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces
	if i < 0 {
		return proc{}, false
	}
	f := strings.Fields(s[i+1:]) // state ppid pgrp ...
	if len(f) < 3 {
		return proc{}, false
	}
	pgrp, _ := strconv.Atoi(f[2])
	return proc{pid: pid, pgrp: pgrp, state: f[0][0]}, true
}

// group returns the live processes of process group pgid. A zombie is
// dead: an orphan is reparented to PID 1, whose reaping the drill does not
// control.
func group(pgid int) []proc {
	ents, err := os.ReadDir("/proc")
	Expect(err).NotTo(HaveOccurred())
	var out []proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok && p.pgrp == pgid && p.state != 'Z' {
			out = append(out, p)
		}
	}
	return out
}

// states returns the states of group pgid's processes.
func states(pgid int) func() []byte {
	return func() []byte {
		var out []byte
		for _, p := range group(pgid) {
			out = append(out, p.state)
		}
		return out
	}
}

// sh returns a spec running script under /bin/sh.
func sh(name, script string) supervisor.Spec {
	GinkgoHelper()
	path, err := exec.LookPath("sh")
	Expect(err).NotTo(HaveOccurred())
	return supervisor.Spec{Name: name, Path: path, Args: []string{"-c", script}}
}

// sleeper runs a shell with two sleeping children: a process group of
// three.
func sleeper(name string) supervisor.Spec {
	return sh(name, "sleep 60 & sleep 60 & wait")
}

// event matches an event of worker of kind.
func event(worker string, kind supervisor.EventKind) types.GomegaMatcher {
	return And(HaveField("Worker", worker), HaveField("Kind", kind))
}

// start starts a supervisor of specs and stops it when the spec ends.
func start(specs ...supervisor.Spec) *supervisor.Supervisor {
	GinkgoHelper()
	s, err := supervisor.New(specs, supervisor.Options{RestartDelay: restartDelay, Logger: nil})
	Expect(err).NotTo(HaveOccurred())
	Expect(s.Start(context.Background())).To(Succeed())
	DeferCleanup(func() { Expect(s.Stop(context.Background(), grace)).To(Succeed()) })
	return s
}

// newPID waits until worker has a live process other than old and returns
// it.
func newPID(s *supervisor.Supervisor, worker string, old int) int {
	GinkgoHelper()
	var pid int
	Eventually(func() int { pid = s.PIDs()[worker]; return pid }).WithTimeout(settle).
		Should(And(Not(BeZero()), Not(Equal(old))), "a replacement of %s", worker)
	return pid
}

var _ = Describe("Supervisor", func() {
	It("starts every worker in a process group of its own", func() {
		s := start(sleeper("w1"), sleeper("w2"))
		pids := s.PIDs()
		Expect(pids).To(HaveLen(2))
		for name, pid := range pids {
			Expect(pid).NotTo(Equal(os.Getpid()))
			Eventually(states(pid)).WithTimeout(settle).Should(HaveLen(3), name)
			Expect(s.Events()).To(ContainElement(And(event(name, supervisor.Started), HaveField("PID", pid))))
		}
	})

	It("kills a worker's whole group and starts a replacement with a new pid after the delay", func() {
		s := start(sleeper("w1"))
		old := s.PIDs()["w1"]
		Eventually(states(old)).WithTimeout(settle).Should(HaveLen(3))
		const after = 300 * time.Millisecond
		Expect(s.Kill("w1", after)).To(Succeed())
		Expect(s.Kill("w1", after)).To(MatchError(supervisor.ErrNotRunning), "a killed worker is not killed twice")
		Eventually(states(old)).WithTimeout(settle).Should(BeEmpty(), "no process of the old group")

		pid := newPID(s, "w1", old)
		evs := s.Events()
		Expect(evs).To(ContainElement(And(event("w1", supervisor.Exited), HaveField("PID", old),
			HaveField("Signal", "killed"), HaveField("ExitCode", -1), HaveField("Unexpected", false))))
		var killed, restarted supervisor.Event
		for _, ev := range evs {
			switch ev.Kind {
			case supervisor.Killed:
				killed = ev
			case supervisor.Restarted:
				restarted = ev
			}
		}
		Expect(restarted.PID).To(Equal(pid))
		Expect(restarted.Time.Sub(killed.Time)).To(BeNumerically(">=", after))
		Expect(s.Unexpected()).To(BeZero())
	})

	It("kills with the worker the processes below it that left its group (setsid), as ending a container would", func() {
		pidFile := filepath.Join(GinkgoT().TempDir(), "horse.pid")
		// A work horse in a session of its own, as RQ forks one per job.
		s := start(sh("w1", "setsid sh -c 'echo $$ > "+pidFile+"; exec sleep 60' & wait"))
		var horse int
		Eventually(func() error {
			b, err := os.ReadFile(pidFile)
			if err == nil {
				horse, err = strconv.Atoi(strings.TrimSpace(string(b)))
			}
			return err
		}).WithTimeout(settle).Should(Succeed())
		Expect(syscall.Kill(horse, 0)).To(Succeed(), "the horse runs")
		Expect(s.Kill("w1", -1)).To(Succeed())
		// Dead: gone, or a zombie its new parent has not reaped yet.
		dead := func() bool {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", horse))
			if err != nil {
				return true
			}
			k := strings.LastIndexByte(string(b), ')')
			return k >= 0 && k+2 < len(b) && b[k+2] == 'Z'
		}
		Eventually(dead).WithTimeout(settle).Should(BeTrue(), "the horse died with its worker")
	})

	It("terminates a worker (SIGTERM to its group), records its exit as expected and restarts it after the delay", func() {
		s := start(sh("w1", "trap 'exit 0' TERM; sleep 60 & sleep 60 & wait"))
		old := s.PIDs()["w1"]
		Eventually(states(old)).WithTimeout(settle).Should(HaveLen(3))
		const after = 300 * time.Millisecond
		Expect(s.Terminate("w1", after)).To(Succeed())
		Expect(s.Terminate("w1", after)).To(MatchError(supervisor.ErrNotRunning), "a worker stopping is not told twice")
		Expect(s.Kill("w1", after)).To(MatchError(supervisor.ErrNotRunning), "nor killed while it stops")
		Eventually(states(old)).WithTimeout(settle).Should(BeEmpty(), "no process of the old group")

		pid := newPID(s, "w1", old)
		evs := s.Events()
		Expect(evs).To(ContainElement(And(event("w1", supervisor.Exited), HaveField("PID", old),
			HaveField("ExitCode", 0), HaveField("Signal", ""), HaveField("Unexpected", false))), "it exited on its own, as told")
		Expect(evs).NotTo(ContainElement(event("w1", supervisor.Killed)), "nothing was killed")
		var termed, restarted supervisor.Event
		for _, ev := range evs {
			switch ev.Kind {
			case supervisor.Terminated:
				termed = ev
			case supervisor.Restarted:
				restarted = ev
			}
		}
		Expect(termed.PID).To(Equal(old))
		Expect(restarted.PID).To(Equal(pid))
		Expect(restarted.Time.Sub(termed.Time)).To(BeNumerically(">=", after))
		Expect(s.Unexpected()).To(BeZero())
	})

	It("kills a terminated worker that does not exit within the bound, and restarts it", func() {
		s := start(sh("w1", "trap '' TERM; sleep 60 & sleep 60 & wait"))
		old := s.PIDs()["w1"]
		Eventually(states(old)).WithTimeout(settle).Should(HaveLen(3))
		Expect(s.Terminate("w1", 0)).To(Succeed())
		Consistently(states(old)).WithTimeout(supervisor.TerminateBound/2).Should(HaveLen(3), "it ignores the SIGTERM")
		pid := newPID(s, "w1", old)
		Expect(pid).NotTo(Equal(old))
		Expect(s.Events()).To(ContainElements(
			And(event("w1", supervisor.Killed), HaveField("PID", old)),
			And(event("w1", supervisor.Exited), HaveField("PID", old), HaveField("Signal", "killed"), HaveField("Unexpected", false))))
		Expect(s.Unexpected()).To(BeZero())
	})

	It("leaves a worker down when killed with a negative restart delay", func() {
		s := start(sleeper("w1"), sleeper("w2"))
		Expect(s.Kill("w1", -1)).To(Succeed())
		Eventually(s.PIDs).WithTimeout(settle).ShouldNot(HaveKey("w1"))
		Consistently(s.PIDs).WithTimeout(5 * restartDelay).ShouldNot(HaveKey("w1"))
		Expect(s.PIDs()).To(HaveKey("w2"))
		Expect(s.Stall("w1", time.Second)).To(MatchError(supervisor.ErrNotRunning))
	})

	It("freezes every worker and cancels the restart of one killed, until Stop, which leaves no stopped process", func() {
		s, err := supervisor.New([]supervisor.Spec{sleeper("w1"), sleeper("w2")}, supervisor.Options{RestartDelay: restartDelay})
		Expect(err).NotTo(HaveOccurred())
		Expect(s.Start(context.Background())).To(Succeed())
		w2 := s.PIDs()["w2"]
		Eventually(states(w2)).WithTimeout(settle).Should(HaveLen(3))
		Expect(s.Kill("w1", 500*time.Millisecond)).To(Succeed())
		Eventually(s.PIDs).WithTimeout(settle).ShouldNot(HaveKey("w1"), "w1 reaped; its restart pending")
		s.Freeze()
		Eventually(states(w2)).WithTimeout(settle).Should(HaveEach(BeEquivalentTo('T')), "w2 stopped")
		Consistently(s.PIDs).WithTimeout(time.Second).ShouldNot(HaveKey("w1"), "no restart after a freeze")
		Expect(s.Stop(context.Background(), grace)).To(Succeed())
		Expect(states(w2)()).NotTo(ContainElement(BeEquivalentTo('T')), "no stopped process left behind")
		// The group's children get SIGKILL; they may take a moment to go.
		Eventually(states(w2)).WithTimeout(settle).Should(BeEmpty(), "no process left")
	})

	It("stalls a worker's whole group and resumes it when the stall ends", func() {
		s := start(sleeper("w1"))
		pid := s.PIDs()["w1"]
		Eventually(states(pid)).WithTimeout(settle).Should(HaveLen(3))
		Expect(s.Stall("w1", 500*time.Millisecond)).To(Succeed())
		Eventually(states(pid)).WithTimeout(settle).Should(HaveEach(BeEquivalentTo('T')), "every process stopped")
		Eventually(states(pid)).WithTimeout(settle).Should(And(HaveLen(3), HaveEach(BeEquivalentTo('S'))), "every process sleeping again")
		Expect(s.PIDs()["w1"]).To(Equal(pid), "a stall is no restart")
		Expect(s.Events()).To(ContainElements(event("w1", supervisor.Stalled), event("w1", supervisor.Resumed)))
	})

	It("extends a stall when stalled again", func() {
		s := start(sleeper("w1"))
		pid := s.PIDs()["w1"]
		Expect(s.Stall("w1", 200*time.Millisecond)).To(Succeed())
		Expect(s.Stall("w1", time.Hour)).To(Succeed())
		Eventually(states(pid)).WithTimeout(settle).Should(HaveEach(BeEquivalentTo('T')))
		Consistently(states(pid)).WithTimeout(time.Second).Should(HaveEach(BeEquivalentTo('T')), "the first stall's end does not resume it")
	})

	It("kills a stalled worker and restarts it running", func() {
		s := start(sleeper("w1"))
		old := s.PIDs()["w1"]
		Expect(s.Stall("w1", time.Hour)).To(Succeed())
		Expect(s.Kill("w1", 0)).To(Succeed())
		Eventually(states(old)).WithTimeout(settle).Should(BeEmpty())
		pid := newPID(s, "w1", old)
		Eventually(states(pid)).WithTimeout(settle).Should(And(HaveLen(3), HaveEach(BeEquivalentTo('S'))))
	})

	It("resumes a stalled worker before terminating it on Stop, leaving no process behind", func() {
		s, err := supervisor.New([]supervisor.Spec{sleeper("w1"), sleeper("w2")}, supervisor.Options{RestartDelay: restartDelay})
		Expect(err).NotTo(HaveOccurred())
		Expect(s.Start(context.Background())).To(Succeed())
		pids := s.PIDs()
		Expect(s.Stall("w1", time.Hour)).To(Succeed())
		Eventually(states(pids["w1"])).WithTimeout(settle).Should(HaveEach(BeEquivalentTo('T')))

		Expect(s.Stop(context.Background(), grace)).To(Succeed())
		for _, pid := range pids {
			_, ok := readProc(pid)
			Expect(ok).To(BeFalse(), "the leader %d is reaped when Stop returns", pid)
			Eventually(states(pid)).WithTimeout(settle).Should(BeEmpty(), "no process of group %d", pid)
		}
		Expect(s.PIDs()).To(BeEmpty())
		var kinds []supervisor.EventKind
		for _, ev := range s.Events() {
			if ev.Worker == "w1" {
				kinds = append(kinds, ev.Kind)
			}
		}
		Expect(kinds).To(Equal([]supervisor.EventKind{supervisor.Started, supervisor.Stalled,
			supervisor.Resumed, supervisor.Terminated, supervisor.Exited}))
		Expect(s.Unexpected()).To(BeZero())
		Expect(s.Stop(context.Background(), grace)).To(Succeed(), "stopping twice is a no-op")
		Expect(s.Stall("w2", time.Second)).To(MatchError(supervisor.ErrStopped))
	})

	It("restarts a worker that exits on its own after the restart delay, and counts it", func() {
		s := start(sleeper("w1"))
		old := s.PIDs()["w1"]
		Expect(syscall.Kill(old, syscall.SIGKILL)).To(Succeed()) // not the supervisor's doing
		pid := newPID(s, "w1", old)
		Expect(s.Events()).To(ContainElements(
			And(event("w1", supervisor.Exited), HaveField("PID", old), HaveField("Unexpected", true)),
			And(event("w1", supervisor.Restarted), HaveField("PID", pid))))
		Expect(s.Unexpected()).To(Equal(1))
		Eventually(states(old)).WithTimeout(settle).Should(BeEmpty(), "the dead leader's children are gone too")
	})

	It("records an exit code and restarts a worker that crashes", func() {
		s := start(sh("w1", "sleep 0.2; exit 3"))
		Eventually(s.Unexpected).WithTimeout(settle).Should(BeNumerically(">=", 2))
		Expect(s.Events()).To(ContainElement(And(event("w1", supervisor.Exited),
			HaveField("ExitCode", 3), HaveField("Signal", ""), HaveField("Unexpected", true))))
	})

	It("does not restart a worker that crashes during Stop", func() {
		s, err := supervisor.New([]supervisor.Spec{sh("w1", "trap 'exit 7' TERM; sleep 60 & wait")},
			supervisor.Options{RestartDelay: restartDelay})
		Expect(err).NotTo(HaveOccurred())
		Expect(s.Start(context.Background())).To(Succeed())
		pid := s.PIDs()["w1"]
		Eventually(states(pid)).WithTimeout(settle).Should(HaveLen(2))
		Expect(s.Stop(context.Background(), grace)).To(Succeed())
		Eventually(states(pid)).WithTimeout(settle).Should(BeEmpty(), "its background sleep too")
		Consistently(s.PIDs).WithTimeout(5 * restartDelay).Should(BeEmpty())
		Expect(s.Events()).To(ContainElement(And(event("w1", supervisor.Exited),
			HaveField("ExitCode", 7), HaveField("Unexpected", false))))
		Expect(s.Events()).NotTo(ContainElement(event("w1", supervisor.Restarted)))
		Expect(s.Unexpected()).To(BeZero())
	})

	It("kills a worker that ignores SIGTERM once the grace is over", func() {
		s, err := supervisor.New([]supervisor.Spec{sh("w1", "trap '' TERM; sleep 60 & wait")},
			supervisor.Options{RestartDelay: restartDelay})
		Expect(err).NotTo(HaveOccurred())
		Expect(s.Start(context.Background())).To(Succeed())
		pid := s.PIDs()["w1"]
		Eventually(states(pid)).WithTimeout(settle).Should(HaveLen(2))
		const short = 300 * time.Millisecond
		began := time.Now()
		Expect(s.Stop(context.Background(), short)).To(Succeed())
		Expect(time.Since(began)).To(BeNumerically(">=", short))
		Eventually(states(pid)).WithTimeout(settle).Should(BeEmpty())
		Expect(s.Events()).To(ContainElements(event("w1", supervisor.Terminated), event("w1", supervisor.Killed),
			And(event("w1", supervisor.Exited), HaveField("Signal", "killed"))))
	})

	It("cancels a pending restart on Stop", func() {
		s, err := supervisor.New([]supervisor.Spec{sleeper("w1")}, supervisor.Options{RestartDelay: restartDelay})
		Expect(err).NotTo(HaveOccurred())
		Expect(s.Start(context.Background())).To(Succeed())
		Expect(s.Kill("w1", time.Second)).To(Succeed())
		Eventually(s.PIDs).WithTimeout(settle).Should(BeEmpty())
		Expect(s.Stop(context.Background(), grace)).To(Succeed())
		Consistently(s.PIDs).WithTimeout(1500 * time.Millisecond).Should(BeEmpty())
		Expect(s.Events()).NotTo(ContainElement(event("w1", supervisor.Restarted)))
	})

	It("passes the spec's environment, directory and output to the process", func() {
		dir := GinkgoT().TempDir()
		var out strings.Builder
		w := &syncWriter{b: &out}
		spec := sh("w1", `echo "$FAULTLINE_WORKER in $(pwd)"; sleep 60`)
		spec.Env, spec.Dir, spec.Stdout = []string{"FAULTLINE_WORKER=w1", "PATH=" + os.Getenv("PATH")}, dir, w
		s, err := supervisor.New([]supervisor.Spec{spec}, supervisor.Options{RestartDelay: restartDelay})
		Expect(err).NotTo(HaveOccurred())
		Expect(s.Start(context.Background())).To(Succeed())
		Eventually(func() int { w.mu.Lock(); defer w.mu.Unlock(); return out.Len() }).WithTimeout(settle).ShouldNot(BeZero())
		Expect(s.Stop(context.Background(), grace)).To(Succeed())
		real, err := filepath.EvalSymlinks(dir)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.String()).To(Equal("w1 in " + real + "\n"))
	})

	It("fails Start when a worker cannot start, leaving none running", func() {
		s, err := supervisor.New([]supervisor.Spec{sleeper("w1"), {Name: "w2", Path: "/nonexistent/worker"}},
			supervisor.Options{RestartDelay: restartDelay})
		Expect(err).NotTo(HaveOccurred())
		err = s.Start(context.Background())
		Expect(err).To(MatchError(ContainSubstring("start w2")))
		Expect(errors.Is(err, os.ErrNotExist)).To(BeTrue())
		Expect(s.PIDs()).To(BeEmpty())
		Expect(s.Events()).To(ContainElement(event("w2", supervisor.StartFailed)))
	})

	It("names an unknown worker", func() {
		s := start(sleeper("w1"))
		Expect(s.Kill("w9", 0)).To(MatchError(supervisor.ErrUnknownWorker))
		Expect(s.Stall("w9", time.Second)).To(MatchError(supervisor.ErrUnknownWorker))
	})
})

var _ = Describe("a drill that dies", func() {
	It("takes its workers with it", func() {
		self, err := os.Executable()
		Expect(err).NotTo(HaveOccurred())
		drill := exec.Command(self)
		drill.Env = append(os.Environ(), drillEnv+"=1")
		drill.Stderr = GinkgoWriter
		out, err := drill.StdoutPipe()
		Expect(err).NotTo(HaveOccurred())
		Expect(drill.Start()).To(Succeed())
		DeferCleanup(func() { _ = drill.Process.Kill(); _ = drill.Wait() })
		line, err := bufio.NewReader(out).ReadString('\n')
		Expect(err).NotTo(HaveOccurred())
		worker, err := strconv.Atoi(strings.TrimSpace(line))
		Expect(err).NotTo(HaveOccurred())
		_, alive := readProc(worker)
		Expect(alive).To(BeTrue())

		Expect(drill.Process.Signal(syscall.SIGKILL)).To(Succeed())
		Eventually(states(worker)).WithTimeout(settle).Should(BeEmpty(), "the worker died with the drill")
	})
})

var _ = Describe("New", func() {
	It("refuses specs without a name or a path, or with a name twice", func() {
		for _, specs := range [][]supervisor.Spec{
			{{Name: "", Path: "/bin/sleep"}},
			{{Name: "w1"}},
			{{Name: "w1", Path: "/bin/sleep"}, {Name: "w1", Path: "/bin/sleep"}},
		} {
			_, err := supervisor.New(specs, supervisor.Options{})
			Expect(err).To(HaveOccurred(), "%+v", specs)
		}
		_, err := supervisor.New(nil, supervisor.Options{RestartDelay: -time.Second})
		Expect(err).To(MatchError(ContainSubstring("RestartDelay")))
	})
})

// syncWriter is a strings.Builder safe for the process's output copier.
type syncWriter struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}
