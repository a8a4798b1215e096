package sim

import (
	"time"

	"github.com/faultline/faultline/layout"
)

// The mechanisms a black-box system may declare for removing entries from
// its DLQ (External.DLQShrinks): an entry that leaves the DLQ any other
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

// Shrinks are the mechanisms External.DLQShrinks takes.
var Shrinks = []string{ShrinkOperator, ShrinkAutoRetry, ShrinkPurgeByAge, ShrinkEviction}

// Defaults of External.
const (
	// DefaultDrain is how long a black-box drill waits after the
	// scenario's end for its jobs to settle.
	DefaultDrain = 30 * time.Second
	// DefaultStartup is how long it waits, on the wall clock, after
	// starting the system before the first job.
	DefaultStartup = time.Second
)

// External is a black-box system under test: a team's own worker, in any
// language, that a drill starts (or finds running), feeds through its own
// queue and judges from outside — the fault gateways' call logs, the
// receivers' notifications and its DLQ read through a layout. The
// simulator cannot run it: `faultline run` of a scenario with an external
// system simulates the reference worker in its place.
type External struct {
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
}
