package scenarios

import (
	"fmt"
	"slices"
	"time"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/reference/degrade"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/redact"
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
	// Seed seeds every random stream; sim.WithSeed overrides it.
	Seed uint64
	// Start is the virtual wall-clock instant of offset 0 (DefaultStart
	// when zero): it matters for time-of-day windows (off-peak retries).
	Start time.Time
	// Duration is how long the run lasts in virtual time.
	Duration time.Duration
	Workload WorkloadSpec
	Workers  WorkersSpec
	// Dependencies describe the services jobs call. A job's dependency
	// that is not listed is a plain one (no charges).
	Dependencies []DependencySpec
	System       SystemSpec
	Faults       []faults.Fault
	Steps        []StepSpec
	Expect       []Expectation
	// Sample is the interval of the time series (default: Duration/500,
	// at least one second).
	Sample time.Duration
	// Invariants tunes the invariants that need a figure.
	Invariants InvariantsSpec
	// AbortIf is a drill's steady-state guard (nil: none). The simulator
	// harms nothing real and ignores it; a drill stops every fault the
	// moment a bound is crossed, and reports it.
	AbortIf *AbortIfSpec
	// Limits bound what the run may use (zero: the defaults); they are
	// not part of the scenario file.
	Limits RunLimits
}

// WorkloadSpec is the jobs the scenario creates.
type WorkloadSpec struct {
	// Tasks are the task types, chosen by weight for each arrival.
	Tasks    []TaskSpec
	Arrivals ArrivalsSpec
	// Jobs are explicit jobs at given offsets, besides the arrivals.
	Jobs []PlannedJobSpec
}

// TaskSpec is one task type.
type TaskSpec struct {
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

// ArrivalsSpec say when jobs arrive.
type ArrivalsSpec struct {
	Kind ArrivalKind
	// Rate is in jobs per second.
	Rate float64
	// From and Until bound the arrivals (Until 0 = the scenario's end).
	From, Until time.Duration
	// Bursts add Count jobs at once at At (of Task, or chosen by weight).
	Bursts []BurstSpec
}

// BurstSpec is a number of jobs arriving at one instant.
type BurstSpec struct {
	At    time.Duration
	Count int
	Task  string
}

// PlannedJobSpec is one explicit job.
type PlannedJobSpec struct {
	At time.Duration
	// ID is the job's ID ("" = generated); Task one of the workload's.
	ID, Task string
	// IdempotencyKey overrides the task's: "" = as the task says.
	IdempotencyKey string
	Payload        string
}

// MaxDefaultProcesses is the most worker processes a scenario that does
// not say runs: its slots are spread over min(count, MaxDefaultProcesses).
const MaxDefaultProcesses = 8

// DefaultProcesses is the fleet of a scenario with count worker slots that
// does not say how many processes run them: one process per slot, up to
// MaxDefaultProcesses.
func DefaultProcesses(count int) int { return max(min(count, MaxDefaultProcesses), 1) }

// WorkersSpec are the worker slots that run jobs.
type WorkersSpec struct {
	// Count is the number of slots, named w1..wN (default 4).
	Count int
	// Processes is the number of worker processes the slots are spread
	// over, round robin (slot wN runs in process (N-1) mod Processes): each
	// process has its own retry policy, breakers and fallbacks (and lanes:
	// worker.Lanes), and keeps its own dead letters in memory; the store,
	// its leases and the DLQ, the fleet-scoped retry budget and the
	// alerter are the fleet's. A worker fault strikes a process: every
	// slot it runs. Default DefaultProcesses(Count), min(Count, 8); a
	// scenario written before the field keeps its meaning with
	// processes: 1.
	Processes int
	// LeaseTTL is how long a dequeued job is leased (default 30s).
	LeaseTTL time.Duration
}

// DependencySpec is a service jobs call.
type DependencySpec struct {
	Name string
	// Payment: every call that goes through charges the job's payment (a
	// success, or an error that took effect anyway). A payment charged
	// twice is an invariant violation.
	Payment bool
	// IgnoresIdempotencyKeys makes the gateway charge again for a key it
	// has seen (a broken gateway); by default a repeated key is a replay.
	IgnoresIdempotencyKeys bool
}

// SystemSpec is the configuration of the system under test (the reference
// implementation, or the team's components given to sim.Run).
type SystemSpec struct {
	// Rules are the classifier's rules (nil = classify.DefaultRules()).
	Rules []classify.Rule
	Retry retry.Config
	DLQ   DLQSpec
	// Alerts configures the alerter; a receiver's Sink is ignored (the
	// simulator records deliveries). No receivers means two: "on-call"
	// paged for high severity, "team" for the rest.
	Alerts   alert.Config
	Breakers []BreakerSpec
	// AutoRetry, if set, runs the off-peak auto-retry of DLQ entries.
	AutoRetry *AutoRetrySpec
	// Monitor, if set, watches the DLQ's depth and age.
	Monitor *MonitorSpec
	// External, if set, is a black-box system a drill judges from
	// outside (the simulator runs the reference in its place).
	External *ExternalSpec
}

// DLQSpec configures the store's dead letter queue.
type DLQSpec struct {
	Capacity             int
	Overflow             store.OverflowPolicy
	LostLeaseUsesAttempt bool
}

// BreakerSpec guards one dependency with a circuit breaker, and a fallback
// queue drained on recovery.
type BreakerSpec struct {
	Config degrade.BreakerConfig
	// Fleet says the fleet's processes share the breaker's edges through
	// the store (scope: fleet; degrade.WithFleet).
	Fleet bool
	// Fallback configures the batch queue's draining (zero = defaults).
	Fallback degrade.FallbackConfig
}

// AutoRetrySpec configures worker.AutoRetry (its Store and Clock are the
// simulator's).
type AutoRetrySpec struct {
	Window         worker.Window
	Filter         dlq.Filter
	Rate           int
	Interval       time.Duration
	MaxAutoRetries int
	Budget         dlq.Budget
}

// MonitorSpec configures worker.Monitor.
type MonitorSpec struct {
	MaxDepth int
	MaxAge   time.Duration
	Interval time.Duration
	Severity classify.Severity
}

// AbortIfSpec bounds what a drill may do to a real system: when one is
// crossed, every fault stops at once (proxies restored, gateways and
// receivers healthy, stalled workers resumed), the drill runs on to its
// end so the system can recover, and its verdict is "interrupted" with
// the bound that was crossed. Zero fields are no bound.
type AbortIfSpec struct {
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

// InvariantsSpec tune the invariants that need a figure.
type InvariantsSpec struct {
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

// StepSpec is one operator action at a given offset.
type StepSpec struct {
	At     time.Duration
	Kind   StepKind
	Filter dlq.Filter
	Budget dlq.Budget
	// OlderThan is Purge's age.
	OlderThan time.Duration
	Workers   int
	Retry     retry.Config
}

// WithDefaults returns sc with the zero fields a run needs filled in: the
// start, the workers, the sample interval, the page deadline, the retry
// policy's defaults, task weights, the default receivers and redactor, the
// limits.
func (sc Scenario) WithDefaults() Scenario {
	if sc.Start.IsZero() {
		sc.Start = DefaultStart
	}
	sc.Start = sc.Start.UTC()
	if sc.Workers.Count == 0 {
		sc.Workers.Count = 4
	}
	if sc.Workers.LeaseTTL == 0 {
		sc.Workers.LeaseTTL = 30 * time.Second
	}
	if sc.Workers.Processes == 0 {
		sc.Workers.Processes = DefaultProcesses(sc.Workers.Count)
	}
	if sc.Sample == 0 {
		sc.Sample = max((sc.Duration / 500).Truncate(time.Second), time.Second)
	}
	if sc.Invariants.PageWithin == 0 {
		sc.Invariants.PageWithin = 5 * time.Minute
	}
	sc.System.Retry = sc.System.Retry.WithDefaults()
	tasks := make([]TaskSpec, len(sc.Workload.Tasks))
	for i, t := range sc.Workload.Tasks {
		if t.Weight == 0 {
			t.Weight = 1
		}
		tasks[i] = t
	}
	sc.Workload.Tasks = tasks
	if len(sc.System.Alerts.Receivers) == 0 {
		sc.System.Alerts.Receivers = []alert.Receiver{{Name: "on-call"}, {Name: "team"}}
		sc.System.Alerts.Routes = []alert.Route{{Receiver: "on-call", Severities: []classify.Severity{classify.High}}}
		sc.System.Alerts.DefaultReceiver = "team"
	}
	if sc.System.Alerts.Redactor == nil {
		sc.System.Alerts.Redactor = redact.Default()
	}
	sc.Limits = sc.Limits.WithDefaults()
	return sc
}

// The configurations sim.Run gives the reference components, built in one
// place so that Validate checks exactly what sim.Run constructs.

// QueueDependencies returns, for each queue of sc's tasks, the dependency
// each task in it calls ("" for a task that calls none): what a worker
// process's lanes (worker.NewLanes) are built from.
func (sc *Scenario) QueueDependencies() map[string][]string {
	out := map[string][]string{}
	for _, t := range sc.Workload.Tasks {
		q := t.Queue
		if q == "" {
			q = t.Name
		}
		out[q] = append(out[q], t.Dependency)
	}
	return out
}

// StoreConfig is the store configuration sc runs with (the caller adds the
// namespace it uses, its Observer and its OnOverflow).
func (sc *Scenario) StoreConfig() store.Config {
	return store.Config{Namespace: "sim", DLQCapacity: sc.System.DLQ.Capacity, Overflow: sc.System.DLQ.Overflow,
		LostLeaseUsesAttempt: sc.System.DLQ.LostLeaseUsesAttempt}
}

// AlertConfig is the alerter configuration sc runs with, each receiver
// delivering to sink(name).
func (sc *Scenario) AlertConfig(sink func(name string) alert.Sink) alert.Config {
	acfg := sc.System.Alerts
	acfg.Receivers = slices.Clone(acfg.Receivers)
	for i := range acfg.Receivers {
		acfg.Receivers[i].Sink = sink(acfg.Receivers[i].Name)
	}
	return acfg
}

// MonitorConfig is the DLQ monitor's configuration, when sc has a monitor
// (System.Monitor set), on namespace's store.
func (sc *Scenario) MonitorConfig(st worker.StatsReader, sig worker.Signaler, namespace string, clk clock.Clock) worker.MonitorConfig {
	m := sc.System.Monitor
	return worker.MonitorConfig{Store: st, Alerter: sig, Clock: clk, Namespace: namespace,
		MaxDepth: m.MaxDepth, MaxAge: m.MaxAge, Interval: m.Interval, Severity: m.Severity}
}

// AutoRetryConfig is the off-peak auto-retry's configuration, when sc has
// one (System.AutoRetry set).
func (sc *Scenario) AutoRetryConfig(st worker.RetryStore, clk clock.Clock) worker.AutoRetryConfig {
	a := sc.System.AutoRetry
	return worker.AutoRetryConfig{Store: st, Clock: clk, Window: a.Window, Filter: a.Filter,
		Rate: a.Rate, Interval: a.Interval, MaxAutoRetries: a.MaxAutoRetries, Budget: a.Budget}
}
