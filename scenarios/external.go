package scenarios

import (
	"slices"
	"strings"
	"time"

	"github.com/faultline/faultline/layout"
)

// The mechanisms a black-box system may declare for removing entries from
// its DLQ (ExternalSpec.DLQShrinks): an entry that leaves the DLQ any other
// way is a violation of dlq-never-shrinks.
const (
	// ShrinkOperator: an operator (or a script) requeues or deletes
	// entries.
	ShrinkOperator = "operator"
	// ShrinkAutoRetry: the system requeues entries itself.
	ShrinkAutoRetry = "auto-retry"
	// ShrinkPurgeByAge: entries older than an age are removed.
	ShrinkPurgeByAge = "purge-by-age"
	// ShrinkEviction: a declared capacity evicts the oldest entries.
	ShrinkEviction = "eviction"
)

// Shrinks are the mechanisms ExternalSpec.DLQShrinks takes.
var Shrinks = []string{ShrinkOperator, ShrinkAutoRetry, ShrinkPurgeByAge, ShrinkEviction}

// Defaults of ExternalSpec.
const (
	// DefaultDrain is how long a black-box drill waits after the
	// scenario's end for its jobs to settle.
	DefaultDrain = 30 * time.Second
	// DefaultStartup is how long it waits, on the wall clock, after
	// starting the system before the first job.
	DefaultStartup = time.Second
	// DefaultReadyTimeout is how long, on the wall clock, a drill asks a
	// readiness probe before it gives up on the system.
	DefaultReadyTimeout = 30 * time.Second
	// DefaultPageWait is how long past its drain, in scenario time, a
	// drill waits for a page still owed whose deadline has not passed.
	DefaultPageWait = time.Minute
)

// ExternalSpec is a black-box system under test: a team's own worker, in any
// language, that a drill starts (or finds running), feeds through its own
// queue and judges from outside — the fault gateways' call logs, the
// receivers' notifications and its DLQ read through a layout. The
// simulator cannot run it: `faultline run` of a scenario with an external
// system simulates the reference worker in its place.
type ExternalSpec struct {
	// Command starts one copy of the system; nil when Running.
	Command *layout.Command
	// Copies is how many copies a drill starts (default workers.count).
	Copies int
	// Running says the system is already running: the drill starts
	// nothing, and worker faults (crash, stall) cannot be drilled.
	Running bool
	// Inject says how a job is put into the system's queue.
	Inject layout.Inject
	// DLQ says where the system keeps its dead letters and how to read
	// them.
	DLQ layout.DLQ
	// Drain is how long, in scenario time, the drill waits after the
	// scenario's end for every job to succeed or reach the DLQ before it
	// calls one lost (default DefaultDrain).
	Drain time.Duration
	// Startup is how long, on the wall clock, the drill waits after
	// starting the system before it injects the first job (default
	// DefaultStartup).
	Startup time.Duration
	// DLQShrinks are the mechanisms by which the system removes entries
	// from its DLQ (Shrinks); any other removal is a violation.
	DLQShrinks []string
	// NoAlerts says the system has no alerting to give the receivers'
	// URLs to: a critical failure's page is then not observable instead
	// of failed.
	NoAlerts bool
	// Policy is the system's retry policy as the team declares it, for
	// the drill to judge from the call log (nil: undeclared, and only the
	// hot-loop rule applies: HotLoop).
	Policy *ExternalPolicy
	// Receivers declares receivers the drill starts besides the alerts'
	// and "slack", and whether each pages: a receiver not declared pages.
	Receivers []ExternalReceiver
	// Ready is the probe a drill asks until the system is ready for its
	// first job, instead of waiting Startup blind (nil: Startup);
	// ReadyTimeout bounds the asking, on the wall clock (default
	// DefaultReadyTimeout).
	Ready        *layout.Ready
	ReadyTimeout time.Duration
	// PageWait is how long past the drain, in scenario time, the drill
	// waits for a page still owed whose deadline has not passed (default
	// DefaultPageWait); a page later than that is not observable.
	PageWait time.Duration
	// MaxTimeScale is the fastest time scale at which the system, which
	// follows the drill's ({timeScale}), still keeps its timing: parts it
	// does not configure (a framework's poller, its boot) do not scale.
	// --time-scale auto picks no faster; a faster --time-scale is
	// refused. 0: no bound but the drill's own.
	MaxTimeScale float64
}

// FollowsScale says the system declares that it follows the drill's time
// scale: {timeScale} in its command's path, arguments or environment.
func (e *ExternalSpec) FollowsScale() bool {
	c := e.Command
	if c == nil {
		return false
	}
	if strings.Contains(c.Path, "{timeScale}") || slices.ContainsFunc(c.Args, func(a string) bool { return strings.Contains(a, "{timeScale}") }) {
		return true
	}
	for _, v := range c.Env {
		if strings.Contains(v, "{timeScale}") {
			return true
		}
	}
	return false
}

// PresetReady says the drill asks the framework preset's readiness probe
// (the framework's worker processes consuming the queue) before the first
// job: an inject framework preset, a system the drill starts, and neither
// a probe nor a startup wait declared. Valid after WithDefaults.
func (e *ExternalSpec) PresetReady() bool {
	return e.Ready == nil && e.Startup == 0 && !e.Running && layout.IsFramework(e.Inject.Preset)
}

// ExternalReceiver is a receiver a black-box system is given the URL of
// ({receiver:NAME}), and whether a notification it accepts is a page (a
// chat channel the team reads by day is not).
type ExternalReceiver struct {
	Name   string
	Paging bool
}

// NotPaging returns the names of the receivers declared not paging.
func (e *ExternalSpec) NotPaging() []string {
	var out []string
	for _, r := range e.Receivers {
		if !r.Paging {
			out = append(out, r.Name)
		}
	}
	return out
}

// HotLoop is the closest two calls of one job may follow each other, the
// first one failed, when the system declares no retry policy: closer is a
// retry without backoff.
const HotLoop = 100 * time.Millisecond

// ExternalPolicy is a black-box system's retry policy, declared for the
// drill to judge from the call log.
type ExternalPolicy struct {
	// MaxAttempts is how many attempts a job is given, the first one
	// included: a transient failure is tried this many times before it
	// is dead-lettered, and never more.
	MaxAttempts int
	// MinBackoff is the least wait, in scenario time, between a failed
	// attempt and the next (0 for full jitter).
	MinBackoff time.Duration
	// Jitter says retries are spread: jobs that failed at one instant are
	// not all tried again at one instant.
	Jitter bool
	// HonoursRetryAfter says a dependency's Retry-After is waited out.
	HonoursRetryAfter bool
}

// WithDefaults returns e with its zero fields set to the defaults: Copies
// to workers (the scenario's worker count, defaults applied), Drain to
// DefaultDrain, Startup to DefaultStartup. A running system's Copies stay
// 0: the drill starts nothing.
func (e ExternalSpec) WithDefaults(workers int) ExternalSpec {
	if e.Copies == 0 && !e.Running {
		e.Copies = workers
	}
	if e.Drain == 0 {
		e.Drain = DefaultDrain
	}
	preset := e.Ready == nil && e.Startup == 0 && !e.Running && layout.IsFramework(e.Inject.Preset)
	if e.Startup == 0 && e.Ready == nil && !preset {
		e.Startup = DefaultStartup
	}
	if e.ReadyTimeout == 0 && (e.Ready != nil || preset) {
		e.ReadyTimeout = DefaultReadyTimeout
	}

	if e.PageWait == 0 {
		e.PageWait = DefaultPageWait
	}
	return e
}

// The reasons a black-box drill refuses a part of a scenario, shared with
// the scenario format's own checks of what a file writes.
const (
	// ExternalReferenceOnly: a system key that configures the reference
	// worker.
	ExternalReferenceOnly = "configures the reference worker; a black-box drill drills the system's own: remove it"
	// ExternalNoStoreFaults: a store or dlq-store fault.
	ExternalNoStoreFaults = "the drill has no proxy in front of the system's Redis: a black-box drill cannot fault its store; remove the fault or target a dependency"
	// ExternalNoSteps: an operator step.
	ExternalNoSteps = "a black-box drill cannot act on a foreign DLQ or set the system's workers or retry policy: remove the step"
	// ExternalNeedsDependency: a task without a dependency.
	ExternalNeedsDependency = "a black-box drill sees a job succeed only through its dependency's call: give the task a dependency"
)
