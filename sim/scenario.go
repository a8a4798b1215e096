package sim

import (
	"fmt"
	"time"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/degrade"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/retry"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/worker"
)

// DefaultStart is the virtual instant a scenario starts at unless it says
// otherwise: a Monday, 09:00 UTC.
var DefaultStart = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

// Scenario is one fault drill as Go values: the world (workload, workers,
// dependencies), the system under test's configuration, the faults, the
// operator's steps and what must hold at the end. The scenario file format
// (issue 6) maps one to one onto it. Every duration is a whole number of
// milliseconds.
type Scenario struct {
	// Name identifies the scenario in reports; Description says what it
	// proves.
	Name        string
	Description string
	Tags        []string
	// Seed seeds every random stream; Run's WithSeed overrides it.
	Seed uint64
	// Start is the virtual wall-clock instant of offset 0 (DefaultStart
	// when zero): it matters for time-of-day windows (off-peak retries).
	Start time.Time
	// Duration is how long the run lasts in virtual time.
	Duration time.Duration
	Workload Workload
	Workers  Workers
	// Dependencies describe the services jobs call. A job's dependency
	// that is not listed is a plain one (no charges).
	Dependencies []Dependency
	System       System
	Faults       []faults.Fault
	Steps        []Step
	Expect       []Expectation
	// Sample is the interval of the time series (default: Duration/500,
	// at least one second).
	Sample time.Duration
	// Invariants tunes the invariants that need a figure.
	Invariants Invariants
	// AbortIf is a drill's steady-state guard (nil: none). The simulator
	// harms nothing real and ignores it; a drill stops every fault the
	// moment a bound is crossed, and reports it.
	AbortIf *AbortIf
	// Limits bound what the run may use (zero: the defaults); they are
	// not part of the scenario file.
	Limits Limits
}

// Workload is the jobs the scenario creates.
type Workload struct {
	// Tasks are the task types, chosen by weight for each arrival.
	Tasks    []Task
	Arrivals Arrivals
	// Jobs are explicit jobs at given offsets, besides the arrivals.
	Jobs []PlannedJob
}

// Task is one task type.
type Task struct {
	// Name is the job's task; Queue its queue ("" = the task's name);
	// Dependency the service its handler calls ("" = none).
	Name, Queue, Dependency string
	// Weight is its share of the arrivals (default 1).
	Weight int
	// IdempotencyKey gives each job a key recorded before its first
	// attempt (payments).
	IdempotencyKey bool
	// Payload is the job's payload; "{n}" and "{id}" are replaced by the
	// job's number and ID.
	Payload string
	// Service is how long the handler works, besides its dependency's
	// latency; ServiceJitter spreads it uniformly by ± that much.
	Service, ServiceJitter time.Duration
}

// ArrivalKind is how jobs arrive.
type ArrivalKind uint8

// The arrival kinds.
const (
	// NoArrivals: only the explicit jobs and bursts.
	NoArrivals ArrivalKind = iota
	// Constant: Rate jobs a second, evenly spaced.
	Constant
	// Poisson: Rate jobs a second on average, exponential gaps.
	Poisson
)

var arrivalNames = [...]string{"none", "constant", "poisson"}

// String returns "none", "constant" or "poisson".
func (k ArrivalKind) String() string {
	if int(k) < len(arrivalNames) {
		return arrivalNames[k]
	}
	return fmt.Sprintf("arrivals(%d)", uint8(k))
}

// Arrivals say when jobs arrive.
type Arrivals struct {
	Kind ArrivalKind
	// Rate is in jobs per second.
	Rate float64
	// From and Until bound the arrivals (Until 0 = the scenario's end).
	From, Until time.Duration
	// Bursts add Count jobs at once at At (of Task, or chosen by weight).
	Bursts []Burst
}

// Burst is a number of jobs arriving at one instant.
type Burst struct {
	At    time.Duration
	Count int
	Task  string
}

// PlannedJob is one explicit job.
type PlannedJob struct {
	At time.Duration
	// ID is the job's ID ("" = generated); Task one of the workload's.
	ID, Task string
	// IdempotencyKey overrides the task's: "" = as the task says.
	IdempotencyKey string
	Payload        string
}

// Workers are the worker slots that run jobs.
type Workers struct {
	// Count is the number of slots, named w1..wN (default 4).
	Count int
	// LeaseTTL is how long a dequeued job is leased (default 30s).
	LeaseTTL time.Duration
}

// Dependency is a service jobs call.
type Dependency struct {
	Name string
	// Payment: every call that goes through charges the job's payment (a
	// success, or an error that took effect anyway). A payment charged
	// twice is an invariant violation.
	Payment bool
	// IgnoresIdempotencyKeys makes the gateway charge again for a key it
	// has seen (a broken gateway); by default a repeated key is a replay.
	IgnoresIdempotencyKeys bool
}

// System is the configuration of the system under test (the reference
// implementation, or the team's components given to Run).
type System struct {
	// Rules are the classifier's rules (nil = classify.DefaultRules()).
	Rules []classify.Rule
	Retry retry.Config
	DLQ   DLQ
	// Alerts configures the alerter; a receiver's Sink is ignored (the
	// simulator records deliveries). No receivers means two: "on-call"
	// paged for high severity, "team" for the rest.
	Alerts   alert.Config
	Breakers []BreakerSpec
	// AutoRetry, if set, runs the off-peak auto-retry of DLQ entries.
	AutoRetry *AutoRetry
	// Monitor, if set, watches the DLQ's depth and age.
	Monitor *Monitor
	// External, if set, is a black-box system a drill judges from
	// outside (the simulator runs the reference in its place).
	External *External
}

// DLQ configures the store's dead letter queue.
type DLQ struct {
	Capacity             int
	Overflow             store.OverflowPolicy
	LostLeaseUsesAttempt bool
}

// BreakerSpec guards one dependency with a circuit breaker, and a fallback
// queue drained on recovery.
type BreakerSpec struct {
	Config degrade.BreakerConfig
	// Fallback configures the batch queue's draining (zero = defaults).
	Fallback degrade.FallbackConfig
}

// AutoRetry configures worker.AutoRetry (its Store and Clock are the
// simulator's).
type AutoRetry struct {
	Window         worker.Window
	Filter         dlq.Filter
	Rate           int
	Interval       time.Duration
	MaxAutoRetries int
	Budget         dlq.Budget
}

// Monitor configures worker.Monitor.
type Monitor struct {
	MaxDepth int
	MaxAge   time.Duration
	Interval time.Duration
	Severity classify.Severity
}

// AbortIf bounds what a drill may do to a real system: when one is
// crossed, every fault stops at once (proxies restored, gateways and
// receivers healthy, stalled workers resumed), the drill runs on to its
// end so the system can recover, and its verdict is "interrupted" with
// the bound that was crossed. Zero fields are no bound.
type AbortIf struct {
	// DLQDepth: more failed entries in the DLQ than this.
	DLQDepth int
	// ErrorRate: more than this share of the dependencies' calls
	// answered with an error over the last ErrorWindow (default 1m of
	// scenario time), once at least 20 calls were made in it.
	ErrorRate   float64
	ErrorWindow time.Duration
	// MaxActiveFaults: more faults active at once than this (a fault is
	// active while its schedule's time conditions hold).
	MaxActiveFaults int
}

// Invariants tune the invariants that need a figure.
type Invariants struct {
	// PageWithin is how soon a critical failure must reach a person as a
	// high-severity alert (default 5m; negative turns the check off).
	PageWithin time.Duration
	// Secrets are texts the scenario planted (in a fault's body, a job's
	// payload) that must never leave the process: no delivered
	// notification and no field of the report (its effective configuration
	// aside, which is the scenario's own text) may carry one, while the
	// DLQ's stored payload of a job created with one keeps it, to requeue
	// it as it was (InvNoSecretLeaves; none: skipped).
	Secrets []string
}

// StepKind is what an operator does.
type StepKind uint8

// The operator steps.
const (
	// Requeue requeues the DLQ entries matching Filter with Budget.
	Requeue StepKind = iota + 1
	// Delete deletes the DLQ entries matching Filter.
	Delete
	// Purge removes DLQ entries that failed more than OlderThan ago.
	Purge
	// SetWorkers changes the number of worker slots to Workers.
	SetWorkers
	// SetRetry replaces the retry policy's configuration with Retry (the
	// reference policy only).
	SetRetry
)

var stepNames = [...]string{"", "requeue", "delete", "purge", "set-workers", "set-retry"}

// String returns the step's name, e.g. "requeue".
func (k StepKind) String() string {
	if int(k) < len(stepNames) && k != 0 {
		return stepNames[k]
	}
	return fmt.Sprintf("step(%d)", uint8(k))
}

// Step is one operator action at a given offset.
type Step struct {
	At     time.Duration
	Kind   StepKind
	Filter dlq.Filter
	Budget dlq.Budget
	// OlderThan is Purge's age.
	OlderThan time.Duration
	Workers   int
	Retry     retry.Config
}
