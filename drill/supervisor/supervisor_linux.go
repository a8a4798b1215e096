//go:build linux

package supervisor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/faultline/faultline/reference/clock"
)

// waitDelay bounds how long a process's exit waits for its output pipes
// (held open by a grandchild) before they are closed.
const waitDelay = time.Second

// reapBound bounds Stop's wait for processes it sent SIGKILL.
const reapBound = 5 * time.Second

// cause says why a worker's current process is expected to end.
type cause int

const (
	causeNone cause = iota // an exit would be unexpected
	causeKill              // Kill sent SIGKILL
	causeStop              // Stop is ending it
	causeTerm              // Terminate sent SIGTERM
)

// child is one worker and its current process.
type child struct {
	spec    Spec
	cmd     *exec.Cmd
	pid     int
	running bool
	done    chan struct{} // closed once the current process is reaped

	cause        cause
	killedAt     time.Time
	restartAfter time.Duration

	stalled     bool
	stallUntil  time.Time
	stallSeq    int // tells a resume timer it is stale
	resumeTimer clock.Timer

	restartTimer clock.Timer
	starts       int
}

// Supervisor runs worker processes and applies process faults to them. Its
// methods are safe for concurrent use.
type Supervisor struct {
	opts Options

	mu         sync.Mutex
	children   []*child
	byName     map[string]*child
	events     []Event
	unexpected int
	started    bool
	stopping   bool
	// frozen: Freeze was called; no restart happens any more.
	frozen bool

	spawn chan spawnReq
}

// spawnReq asks the spawning thread to start cmd.
type spawnReq struct {
	cmd   *exec.Cmd
	reply chan error
}

// New returns a Supervisor of one worker per spec; Start starts them.
func New(specs []Spec, opts Options) (*Supervisor, error) {
	if err := validate(specs, opts); err != nil {
		return nil, err
	}
	s := &Supervisor{opts: opts.withDefaults(), byName: make(map[string]*child, len(specs))}
	for _, sp := range specs {
		c := &child{spec: sp}
		s.children = append(s.children, c)
		s.byName[sp.Name] = c
	}
	return s, nil
}

// spawnLoop starts processes from one OS thread, locked while the
// supervisor runs: the parent-death signal fires when the thread that
// started a child exits, so that thread must not exit while its children
// live. When Stop closes s.spawn (every child is stopped by then) the
// thread is unlocked and goes back to Go's pool — never ended: it may be a
// thread that started other processes with a parent-death signal before
// (a test's redis-server), which its end would kill.
func (s *Supervisor) spawnLoop() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for req := range s.spawn {
		req.reply <- req.cmd.Start()
	}
}

// Start starts every worker. If one fails to start, the ones started are
// stopped and the error returned.
func (s *Supervisor) Start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("supervisor: start: %w", err)
	}
	s.mu.Lock()
	if s.started || s.stopping {
		s.mu.Unlock()
		return errors.New("supervisor: Start called twice, or after Stop")
	}
	s.started = true
	s.spawn = make(chan spawnReq)
	go s.spawnLoop()
	var err error
	for _, c := range s.children {
		if err = s.launch(c, Started); err != nil {
			break
		}
	}
	s.mu.Unlock()
	if err != nil {
		_ = s.Stop(ctx, 0)
		return err
	}
	return nil
}

// launch starts a process for c and records kind (Started or Restarted);
// s.mu is held and s.stopping is false.
func (s *Supervisor) launch(c *child, kind EventKind) error {
	cmd := exec.Command(c.spec.Path, c.spec.Args...)
	cmd.Env = c.spec.Env
	cmd.Dir = c.spec.Dir
	cmd.Stdout = c.spec.Stdout
	cmd.Stderr = c.spec.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = waitDelay
	reply := make(chan error, 1)
	s.spawn <- spawnReq{cmd: cmd, reply: reply}
	if err := <-reply; err != nil {
		err = fmt.Errorf("supervisor: start %s: %w", c.spec.Name, err)
		s.record(Event{Worker: c.spec.Name, Kind: StartFailed, Err: err.Error()})
		return err
	}
	c.cmd, c.pid, c.running, c.cause = cmd, cmd.Process.Pid, true, causeNone
	c.done = make(chan struct{})
	c.starts++
	s.record(Event{Worker: c.spec.Name, Kind: kind, PID: c.pid})
	go s.reap(c, cmd, c.done)
	return nil
}

// reap waits for cmd's process to end, kills what is left of its process
// group, records the exit and schedules a replacement when one is due.
func (s *Supervisor) reap(c *child, cmd *exec.Cmd, done chan struct{}) {
	_ = cmd.Wait() // the exit is read from ProcessState below
	pid := cmd.Process.Pid
	// Grandchildren outlive the leader in its group: end them too, as a
	// supervisor ending a control group would. The group's ID cannot be
	// reused while any of them lives.
	_ = signalGroup(pid, syscall.SIGKILL)

	s.mu.Lock()
	defer s.mu.Unlock()
	defer close(done)
	ev := Event{Worker: c.spec.Name, Kind: Exited, PID: pid, ExitCode: cmd.ProcessState.ExitCode()}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		ev.Signal = ws.Signal().String()
	}
	ev.Unexpected = c.cause == causeNone && !s.stopping
	s.record(ev)
	c.running, c.stalled = false, false
	c.stallSeq++
	if c.resumeTimer != nil {
		c.resumeTimer.Stop()
		c.resumeTimer = nil
	}
	if s.stopping {
		return
	}
	switch {
	case ev.Unexpected:
		s.unexpected++
		s.scheduleRestart(c, s.opts.RestartDelay)
	case (c.cause == causeKill || c.cause == causeTerm) && c.restartAfter >= 0:
		s.scheduleRestart(c, c.killedAt.Add(c.restartAfter).Sub(s.opts.Clock.Now()))
	}
}

// scheduleRestart starts a replacement for c after d; a failed start is
// tried again after RestartDelay. s.mu is held.
func (s *Supervisor) scheduleRestart(c *child, d time.Duration) {
	c.restartTimer = s.opts.Clock.AfterFunc(d, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		c.restartTimer = nil
		if s.stopping || s.frozen || c.running {
			return
		}
		if err := s.launch(c, Restarted); err != nil {
			s.scheduleRestart(c, s.opts.RestartDelay)
		}
	})
}

// running returns the worker named name if it has a live process; s.mu is
// held.
func (s *Supervisor) running(name string) (*child, error) {
	c, ok := s.byName[name]
	switch {
	case !ok:
		return nil, fmt.Errorf("supervisor: %q: %w", name, ErrUnknownWorker)
	case !s.started || s.stopping:
		return nil, fmt.Errorf("supervisor: %s: %w", name, ErrStopped)
	case !c.running || c.cause != causeNone:
		return nil, fmt.Errorf("supervisor: %s: %w", name, ErrNotRunning)
	}
	return c, nil
}

// Kill crashes the worker: SIGKILL to its process group and to every
// process below it, a descendant that left the group included (killTree;
// a stalled one included). Its replacement starts restartAfter after the kill, or once
// the process is reaped if that is later; a negative restartAfter leaves
// the worker down for the rest of the drill.
func (s *Supervisor) Kill(name string, restartAfter time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.running(name)
	if err != nil {
		return err
	}
	if err := killTree(c.pid); err != nil {
		return fmt.Errorf("supervisor: kill %s (pid %d): %w", name, c.pid, err)
	}
	c.cause, c.killedAt, c.restartAfter = causeKill, s.opts.Clock.Now(), restartAfter
	s.record(Event{Worker: name, Kind: Killed, PID: c.pid})
	return nil
}

// Terminate tells the worker to stop, as a deploy or a scale-in does:
// SIGTERM to its process group. The worker shuts down on its own (the
// reference worker cancels its attempts in flight as a shutdown, so their
// jobs are released without using an attempt) and its exit is expected;
// its replacement starts restartAfter after the SIGTERM, or once the
// process is reaped if that is later. A process still alive when its
// replacement is due — or TerminateBound after the SIGTERM, when that is
// later — is killed (SIGKILL, recorded), as a supervisor's stop timeout
// does. A stalled worker gets the SIGTERM when its stall ends (and the
// bound runs from then). A negative
// restartAfter leaves the worker down for the rest of the drill.
func (s *Supervisor) Terminate(name string, restartAfter time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.running(name)
	if err != nil {
		return err
	}
	if err := signalGroup(c.pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("supervisor: terminate %s (pid %d): %w", name, c.pid, err)
	}
	c.cause, c.killedAt, c.restartAfter = causeTerm, s.opts.Clock.Now(), restartAfter
	s.record(Event{Worker: name, Kind: Terminated, PID: c.pid})
	s.killLate(c, c.pid, c.done, max(restartAfter, TerminateBound))
	return nil
}

// killLate kills c's process pid (SIGKILL to its group, recorded) if it
// has not exited d from now — or, while it is stalled, TerminateBound
// after its stall ends. s.mu is held.
func (s *Supervisor) killLate(c *child, pid int, done chan struct{}, d time.Duration) {
	s.opts.Clock.AfterFunc(d, func() {
		select {
		case <-done:
			return
		default:
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if c.pid != pid || !c.running {
			return
		}
		if c.stalled && !c.stallUntil.IsZero() && !s.stopping {
			// It gets the SIGTERM when it resumes, as a stalled worker
			// answers when its stall ends.
			s.killLate(c, pid, done, c.stallUntil.Sub(s.opts.Clock.Now())+TerminateBound)
			return
		}
		_ = signalGroup(pid, syscall.SIGCONT)
		if err := killTree(pid); err == nil {
			s.record(Event{Worker: c.spec.Name, Kind: Killed, PID: pid})
		}
	})
}

// Stall stops the worker: SIGSTOP to its process group, and SIGCONT d
// later. Stalling a stalled worker extends the stall to d from now if that
// ends later.
func (s *Supervisor) Stall(name string, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("supervisor: stall %s for %v: want a duration > 0", name, d)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.running(name)
	if err != nil {
		return err
	}
	until := s.opts.Clock.Now().Add(d)
	if c.stalled && !until.After(c.stallUntil) {
		return nil
	}
	if !c.stalled {
		if err := signalGroup(c.pid, syscall.SIGSTOP); err != nil {
			return fmt.Errorf("supervisor: stall %s (pid %d): %w", name, c.pid, err)
		}
		// The stop lands a little after kill returns: wait for it, so
		// that what the caller does next (an answer it held, released)
		// finds the worker stopped.
		waitStopped(c.pid, stopBound)
	}
	if c.resumeTimer != nil {
		c.resumeTimer.Stop()
	}
	c.stalled, c.stallUntil = true, until
	c.stallSeq++
	seq := c.stallSeq
	c.resumeTimer = s.opts.Clock.AfterFunc(d, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if c.stallSeq != seq || !c.stalled {
			return
		}
		s.resume(c)
	})
	s.record(Event{Worker: name, Kind: Stalled, PID: c.pid, Until: until})
	return nil
}

// resume sends SIGCONT to a stalled c's group; s.mu is held.
func (s *Supervisor) resume(c *child) {
	if err := signalGroup(c.pid, syscall.SIGCONT); err != nil {
		s.opts.Logger.Error("supervisor: resume", "worker", c.spec.Name, "pid", c.pid, "err", err)
	}
	c.stalled = false
	c.stallSeq++
	if c.resumeTimer != nil {
		c.resumeTimer.Stop()
		c.resumeTimer = nil
	}
	s.record(Event{Worker: c.spec.Name, Kind: Resumed, PID: c.pid})
}

// Freeze stops every running worker (SIGSTOP, until Stop) and cancels
// every pending restart, so that nothing moves until Stop: a drill takes
// its last look at the store then. It records a stalled event per worker.
func (s *Supervisor) Freeze() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.frozen = true
	for _, c := range s.children {
		if c.restartTimer != nil {
			c.restartTimer.Stop()
			c.restartTimer = nil
		}
		if !c.running || c.stalled {
			continue
		}
		if err := signalGroup(c.pid, syscall.SIGSTOP); err != nil {
			continue
		}
		if c.resumeTimer != nil {
			c.resumeTimer.Stop()
			c.resumeTimer = nil
		}
		c.stalled, c.stallUntil = true, time.Time{}
		c.stallSeq++
		s.record(Event{Worker: c.spec.Name, Kind: Stalled, PID: c.pid})
	}
}

// Stop ends every worker: pending restarts are cancelled, every process
// group gets SIGCONT (so no stopped process is left behind) and SIGTERM;
// groups still alive after grace, or when ctx ends, get SIGKILL. A worker
// that exits during Stop, for whatever reason, is not restarted. Stop
// returns once every process is reaped (or, for a process that ignores
// even SIGKILL, after a bound). Stopping twice is a no-op.
func (s *Supervisor) Stop(ctx context.Context, grace time.Duration) error {
	s.mu.Lock()
	if !s.started || s.stopping {
		s.stopping = true
		s.mu.Unlock()
		return nil
	}
	s.stopping = true
	var pending []chan struct{}
	for _, c := range s.children {
		if c.restartTimer != nil {
			c.restartTimer.Stop()
			c.restartTimer = nil
		}
		if !c.running {
			continue
		}
		if c.stalled {
			s.resume(c)
		} else {
			_ = signalGroup(c.pid, syscall.SIGCONT) // a stop the supervisor did not send
		}
		if c.cause == causeNone {
			c.cause = causeStop
		}
		if err := signalGroup(c.pid, syscall.SIGTERM); err == nil {
			s.record(Event{Worker: c.spec.Name, Kind: Terminated, PID: c.pid})
		}
		pending = append(pending, c.done)
	}
	s.mu.Unlock()

	graceOver := make(chan struct{})
	t := s.opts.Clock.AfterFunc(grace, func() { close(graceOver) })
	defer t.Stop()
	allDone := waitAll(pending)
	select {
	case <-allDone:
	case <-graceOver:
	case <-ctx.Done():
	}

	s.mu.Lock()
	for _, c := range s.children {
		if !c.running {
			continue
		}
		_ = signalGroup(c.pid, syscall.SIGCONT)
		if err := killTree(c.pid); err == nil {
			s.record(Event{Worker: c.spec.Name, Kind: Killed, PID: c.pid})
		}
	}
	s.mu.Unlock()

	var err error
	select {
	case <-allDone:
	case <-time.After(reapBound):
		err = fmt.Errorf("supervisor: stop: processes not reaped %v after SIGKILL", reapBound)
	}
	s.mu.Lock()
	close(s.spawn) // no launch can follow: s.stopping is set
	s.mu.Unlock()
	return err
}

// waitAll returns a channel closed once every channel of chans is closed.
func waitAll(chans []chan struct{}) <-chan struct{} {
	all := make(chan struct{})
	go func() {
		for _, ch := range chans {
			<-ch
		}
		close(all)
	}()
	return all
}

// signalGroup sends sig to the process group pgid; a group already gone
// is not an error.
// stopBound bounds waitStopped: a process not stopped by then is left to
// stop as it will (a zombie, a process that just exited).
const stopBound = 100 * time.Millisecond

// waitStopped waits, up to bound, until process pid shows as stopped in
// /proc (state T): a SIGSTOP is delivered asynchronously. It reads the
// wall clock, as the signals it waits for are the wall's.
func waitStopped(pid int, bound time.Duration) {
	path := fmt.Sprintf("/proc/%d/stat", pid)
	deadline := time.Now().Add(bound)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(path)
		if err != nil {
			return
		}
		// The state follows the command's closing parenthesis.
		if k := bytes.LastIndexByte(b, ')'); k >= 0 && k+2 < len(b) && (b[k+2] == 'T' || b[k+2] == 't') {
			return
		}
		time.Sleep(50 * time.Microsecond)
	}
}

func signalGroup(pgid int, sig syscall.Signal) error {
	err := syscall.Kill(-pgid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// record appends ev stamped with the clock's time and logs it; s.mu is
// held.
func (s *Supervisor) record(ev Event) {
	ev.Time = s.opts.Clock.Now()
	s.events = append(s.events, ev)
	attrs := []any{"worker", ev.Worker, "pid", ev.PID}
	switch ev.Kind {
	case Exited:
		attrs = append(attrs, "exit_code", ev.ExitCode, "signal", ev.Signal, "unexpected", ev.Unexpected)
	case StartFailed:
		attrs = append(attrs, "err", ev.Err)
	case Stalled:
		attrs = append(attrs, "until", ev.Until)
	}
	level := slog.LevelInfo
	if ev.Unexpected || ev.Kind == StartFailed {
		level = slog.LevelWarn
	}
	s.opts.Logger.Log(context.Background(), level, "worker "+string(ev.Kind), attrs...)
}

// Events returns what happened so far, oldest first.
func (s *Supervisor) Events() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Event(nil), s.events...)
}

// PIDs returns the process ID of every worker that has a live process.
func (s *Supervisor) PIDs() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[string]int, len(s.children))
	for _, c := range s.children {
		if c.running {
			m[c.spec.Name] = c.pid
		}
	}
	return m
}

// Unexpected counts the exits the supervisor did not cause (each one
// restarted); the drill reports it.
func (s *Supervisor) Unexpected() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unexpected
}
