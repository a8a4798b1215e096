// Package supervisor runs a drill's worker processes and applies process
// faults to them: a crash is a real SIGKILL of the worker's process group
// and of every process below it (one that left the group with setsid, as
// RQ's work horse does, included: as ending a container would), followed by a replacement as a supervisor would start one; a graceful
// stop is SIGTERM of the group, and a replacement once it is due; a stall
// is SIGSTOP of the group and SIGCONT when it ends.
//
// It needs Linux (signals, process groups, the parent-death signal); on
// other systems New returns ErrNeedsLinux. Each worker runs in a process
// group of its own, and the kernel kills it if the drill dies. A worker that
// exits without the supervisor having caused it is recorded, counted
// (Unexpected) and restarted after Options.RestartDelay. Stop never leaves
// a stopped process behind: it resumes every worker before terminating it.
package supervisor

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/faultline/faultline/reference/clock"
)

// TerminateBound is the least time Terminate gives a worker to exit on its
// own before it kills it.
const TerminateBound = 5 * time.Second

// DefaultRestartDelay is Options.RestartDelay when it is zero.
const DefaultRestartDelay = time.Second

// ErrNeedsLinux is what New returns on a system other than Linux.
var ErrNeedsLinux = fmt.Errorf("drills need Linux for signals and process groups: %w", errors.ErrUnsupported)

// ErrUnknownWorker says no spec has the name given.
var ErrUnknownWorker = errors.New("no worker of that name")

// ErrNotRunning says the worker has no process at the moment (it is being
// restarted, or was killed without a replacement).
var ErrNotRunning = errors.New("worker is not running")

// ErrStopped says Stop has been called (or Start was not).
var ErrStopped = errors.New("supervisor is not running")

// Spec describes one worker process.
type Spec struct {
	// Name identifies the worker in calls and events ("w1"); unique.
	Name string
	// Path is the executable; Args its arguments (without argv[0]).
	Path string
	Args []string
	// Env is the environment; nil means the drill's own.
	Env []string
	// Dir is the working directory; empty means the drill's.
	Dir string
	// Stdout and Stderr receive the process's output; nil discards it.
	Stdout, Stderr io.Writer
}

// Options tunes a Supervisor. The zero value is ready to use.
type Options struct {
	// RestartDelay is how long after an unexpected exit (or a failed
	// restart) the replacement is started; zero means DefaultRestartDelay.
	RestartDelay time.Duration
	// Logger receives one record per event; nil discards them.
	Logger *slog.Logger
	// Clock stamps events and runs the restart and resume timers; nil
	// means clock.Real{}.
	Clock clock.Clock
}

// withDefaults fills the zero fields of o.
func (o Options) withDefaults() Options {
	if o.RestartDelay == 0 {
		o.RestartDelay = DefaultRestartDelay
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	return o
}

// validate checks the specs: at least a name and a path each, names
// unique.
func validate(specs []Spec, o Options) error {
	if o.RestartDelay < 0 {
		return fmt.Errorf("supervisor: RestartDelay %v is negative", o.RestartDelay)
	}
	seen := make(map[string]bool, len(specs))
	for i, sp := range specs {
		switch {
		case sp.Name == "":
			return fmt.Errorf("supervisor: spec %d: Name is empty", i)
		case sp.Path == "":
			return fmt.Errorf("supervisor: spec %s: Path is empty", sp.Name)
		case seen[sp.Name]:
			return fmt.Errorf("supervisor: spec %s: Name is used twice", sp.Name)
		}
		seen[sp.Name] = true
	}
	return nil
}

// EventKind says what happened to a worker.
type EventKind string

// The kinds of Event.
const (
	// Started: the first process of the worker started (PID).
	Started EventKind = "started"
	// Restarted: a replacement process started (PID).
	Restarted EventKind = "restarted"
	// StartFailed: a start or restart failed (Err); a restart is tried
	// again after RestartDelay.
	StartFailed EventKind = "start_failed"
	// Killed: the supervisor sent SIGKILL to the process group and the
	// processes below the worker, by Kill or to a straggler at the end of
	// Stop's grace.
	Killed EventKind = "killed"
	// Stalled: SIGSTOP sent to the process group (or a stall extended).
	Stalled EventKind = "stalled"
	// Resumed: SIGCONT sent to the process group.
	Resumed EventKind = "resumed"
	// Terminated: SIGTERM sent to the process group, by Terminate (its
	// exit expected, a replacement due) or by Stop.
	Terminated EventKind = "terminated"
	// Exited: the process ended (ExitCode or Signal; Unexpected when the
	// supervisor did not cause it).
	Exited EventKind = "exited"
)

// Event is one thing that happened to a worker, with its wall time.
type Event struct {
	// Time is when it happened, on Options.Clock.
	Time time.Time
	// Worker is the spec's Name.
	Worker string
	// Kind says what happened.
	Kind EventKind
	// PID is the process concerned.
	PID int
	// ExitCode is the exit status of an Exited process, -1 when a signal
	// ended it.
	ExitCode int
	// Signal names the signal that ended an Exited process ("killed").
	Signal string
	// Unexpected marks an Exited event the supervisor did not cause: not a
	// Kill or a Terminate, not during Stop.
	Unexpected bool
	// Err is the error of a StartFailed event.
	Err string
	// Until is when a Stalled worker is due to resume.
	Until time.Time
}
