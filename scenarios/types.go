package scenarios

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// APIVersion is the version of the scenario format this package reads.
const APIVersion = "faultline/v1"

// The kinds of documents.
const (
	// KindScenario is a runnable scenario.
	KindScenario = "Scenario"
	// KindFragment is a part of a scenario (a fault set, a system config)
	// that scenarios include.
	KindFragment = "Fragment"
)

// Document is a scenario file as written: it maps one to one onto the
// scenario model, Scenario (Convert), with durations as "30s" and rates as
// "100/s".
// A Fragment has the same fields, all optional; a scenario's own values
// win over an included fragment's, and lists (faults, steps, expect, tasks,
// jobs, dependencies, breakers) are concatenated, fragments first.
type Document struct {
	APIVersion string   `yaml:"apiVersion" json:"apiVersion"`
	Kind       string   `yaml:"kind" json:"kind"`
	Metadata   Metadata `yaml:"metadata" json:"metadata"`
	// Include lists fragment files, relative to this file.
	Include []string `yaml:"include,omitempty" json:"include,omitempty"`
	// Seed seeds every random stream; faultline run --seed overrides it.
	Seed *uint64 `yaml:"seed,omitempty" json:"seed,omitempty"`
	// Start is the virtual wall-clock instant the run starts at (RFC 3339;
	// default 2026-01-05T09:00:00Z, a Monday morning).
	Start string `yaml:"start,omitempty" json:"start,omitempty"`
	// Duration is how long the run lasts in virtual time.
	Duration Duration `yaml:"duration,omitempty" json:"duration,omitempty"`
	// Sample is the interval of the report's time series.
	Sample       Duration     `yaml:"sample,omitempty" json:"sample,omitempty"`
	Workload     Workload     `yaml:"workload,omitempty" json:"workload,omitempty"`
	Workers      Workers      `yaml:"workers,omitempty" json:"workers,omitempty"`
	Dependencies []Dependency `yaml:"dependencies,omitempty" json:"dependencies,omitempty"`
	System       System       `yaml:"system,omitempty" json:"system,omitempty"`
	Invariants   Invariants   `yaml:"invariants,omitempty" json:"invariants,omitempty"`
	// AbortIf is a drill's steady-state guard; the simulator ignores it.
	AbortIf *AbortIf `yaml:"abortIf,omitempty" json:"abortIf,omitempty"`
	Faults  []Fault  `yaml:"faults,omitempty" json:"faults,omitempty"`
	Steps   []Step   `yaml:"steps,omitempty" json:"steps,omitempty"`
	Expect  []Expect `yaml:"expect,omitempty" json:"expect,omitempty"`
}

// Metadata names a scenario and says what it proves.
type Metadata struct {
	Name string `yaml:"name" json:"name"`
	// Description says what the scenario proves, in a sentence.
	Description string   `yaml:"description,omitempty" json:"description,omitempty"`
	Tags        []string `yaml:"tags,omitempty" json:"tags,omitempty"`
}

// Workload is the jobs the scenario creates.
type Workload struct {
	Tasks    []Task       `yaml:"tasks,omitempty" json:"tasks,omitempty"`
	Arrivals Arrivals     `yaml:"arrivals,omitempty" json:"arrivals,omitempty"`
	Jobs     []PlannedJob `yaml:"jobs,omitempty" json:"jobs,omitempty"`
}

// Task is one task type.
type Task struct {
	Name string `yaml:"name" json:"name"`
	// Queue defaults to the task's name.
	Queue      string `yaml:"queue,omitempty" json:"queue,omitempty"`
	Dependency string `yaml:"dependency,omitempty" json:"dependency,omitempty"`
	// Weight is the task's share of the arrivals (default 1).
	Weight int `yaml:"weight,omitempty" json:"weight,omitempty"`
	// IdempotencyKey gives each job a key recorded before its first attempt.
	IdempotencyKey bool `yaml:"idempotencyKey,omitempty" json:"idempotencyKey,omitempty"`
	// Payload is the job's payload; {n} and {id} are replaced.
	Payload       string   `yaml:"payload,omitempty" json:"payload,omitempty"`
	Service       Duration `yaml:"service,omitempty" json:"service,omitempty"`
	ServiceJitter Duration `yaml:"serviceJitter,omitempty" json:"serviceJitter,omitempty"`
}

// Arrivals say when jobs arrive.
type Arrivals struct {
	// Kind is none, constant or poisson (default: poisson when a rate is
	// given, else none).
	Kind  string   `yaml:"kind,omitempty" json:"kind,omitempty"`
	Rate  Rate     `yaml:"rate,omitempty" json:"rate,omitempty"`
	From  Duration `yaml:"from,omitempty" json:"from,omitempty"`
	Until Duration `yaml:"until,omitempty" json:"until,omitempty"`
	// Bursts add count jobs at once.
	Bursts []Burst `yaml:"bursts,omitempty" json:"bursts,omitempty"`
}

// Burst is a number of jobs arriving at one instant.
type Burst struct {
	At    Duration `yaml:"at" json:"at"`
	Count int      `yaml:"count" json:"count"`
	Task  string   `yaml:"task,omitempty" json:"task,omitempty"`
}

// PlannedJob is one explicit job.
type PlannedJob struct {
	At             Duration `yaml:"at" json:"at"`
	ID             string   `yaml:"id,omitempty" json:"id,omitempty"`
	Task           string   `yaml:"task" json:"task"`
	IdempotencyKey string   `yaml:"idempotencyKey,omitempty" json:"idempotencyKey,omitempty"`
	Payload        string   `yaml:"payload,omitempty" json:"payload,omitempty"`
}

// Workers are the worker slots.
type Workers struct {
	Count     int      `yaml:"count,omitempty" json:"count,omitempty"`
	Processes int      `yaml:"processes,omitempty" json:"processes,omitempty"`
	LeaseTTL  Duration `yaml:"leaseTTL,omitempty" json:"leaseTTL,omitempty"`
}

// Dependency is a service jobs call.
type Dependency struct {
	Name string `yaml:"name" json:"name"`
	// Payment: every call that goes through charges the job's payment.
	Payment bool `yaml:"payment,omitempty" json:"payment,omitempty"`
	// IgnoresIdempotencyKeys makes the gateway charge again for a key it
	// has seen (a broken gateway).
	IgnoresIdempotencyKeys bool `yaml:"ignoresIdempotencyKeys,omitempty" json:"ignoresIdempotencyKeys,omitempty"`
}

// System is the configuration of the system under test.
type System struct {
	// RulesFile is a classifier rule file (reference/classify format),
	// relative to this file; none means the default rules.
	RulesFile string     `yaml:"rulesFile,omitempty" json:"rulesFile,omitempty"`
	Retry     *Retry     `yaml:"retry,omitempty" json:"retry,omitempty"`
	DLQ       *DLQ       `yaml:"dlq,omitempty" json:"dlq,omitempty"`
	Alerts    *Alerts    `yaml:"alerts,omitempty" json:"alerts,omitempty"`
	Breakers  []Breaker  `yaml:"breakers,omitempty" json:"breakers,omitempty"`
	AutoRetry *AutoRetry `yaml:"autoRetry,omitempty" json:"autoRetry,omitempty"`
	Monitor   *Monitor   `yaml:"monitor,omitempty" json:"monitor,omitempty"`
	// External makes the system a black box (ExternalSpec): a team's own
	// worker that a drill starts, feeds through its own queue and judges
	// from outside. The simulator runs the reference in its place.
	External *External `yaml:"external,omitempty" json:"external,omitempty"`
}

// External is a black-box system under test (ExternalSpec). Exactly one
// of Command and Running is given.
type External struct {
	// Command starts one copy of the system.
	Command *Command `yaml:"command,omitempty" json:"command,omitempty"`
	// Copies is how many copies a drill starts (default workers.count).
	Copies int `yaml:"copies,omitempty" json:"copies,omitempty"`
	// Running says the system is already running: the drill starts
	// nothing, and worker faults cannot be drilled.
	Running bool `yaml:"running,omitempty" json:"running,omitempty"`
	// Inject says how a job is put into the system's queue.
	Inject Inject `yaml:"inject" json:"inject"`
	// DLQ says where the system keeps its dead letters.
	DLQ ExternalDLQ `yaml:"dlq" json:"dlq"`
	// Drain is how long, in scenario time, the drill waits after the end
	// for every job to settle (default DefaultDrain).
	Drain Duration `yaml:"drain,omitempty" json:"drain,omitempty"`
	// Startup is how long, on the wall clock, the drill waits after
	// starting the system (default DefaultStartup).
	Startup Duration `yaml:"startup,omitempty" json:"startup,omitempty"`
	// Ready is a readiness probe asked instead of waiting Startup.
	Ready *ExternalReady `yaml:"ready,omitempty" json:"ready,omitempty"`
	// PageWait bounds the wait past the drain for a page still owed
	// (default DefaultPageWait).
	PageWait Duration `yaml:"pageWait,omitempty" json:"pageWait,omitempty"`
	// DLQShrinks are the ways the system removes DLQ entries (Shrinks).
	DLQShrinks []string `yaml:"dlqShrinks,omitempty" json:"dlqShrinks,omitempty"`
	// Policy is the system's own retry policy, declared for the drill to
	// judge (ExternalPolicy).
	Policy *ExternalPolicyDoc `yaml:"policy,omitempty" json:"policy,omitempty"`
	// NoAlerts says the system has no alerting: a page is then not
	// observable instead of failed.
	NoAlerts bool `yaml:"noAlerts,omitempty" json:"noAlerts,omitempty"`
	// Receivers declares receivers and whether each pages
	// (ExternalReceiver).
	Receivers []ExternalReceiverDoc `yaml:"receivers,omitempty" json:"receivers,omitempty"`
	// MaxTimeScale is the fastest time scale the system follows
	// (ExternalSpec.MaxTimeScale).
	MaxTimeScale float64 `yaml:"maxTimeScale,omitempty" json:"maxTimeScale,omitempty"`
}

// ExternalReady is a readiness probe (layout.Ready) and how long to ask
// it.
type ExternalReady struct {
	Command  *Command  `yaml:"command,omitempty" json:"command,omitempty"`
	HTTP     *HTTPRead `yaml:"http,omitempty" json:"http,omitempty"`
	RedisKey string    `yaml:"redisKey,omitempty" json:"redisKey,omitempty"`
	Timeout  Duration  `yaml:"timeout,omitempty" json:"timeout,omitempty"`
}

// ExternalReceiverDoc is a receiver a black-box system is given, as a
// scenario declares it.
type ExternalReceiverDoc struct {
	Name string `yaml:"name" json:"name"`
	// Paging defaults to true.
	Paging *bool `yaml:"paging,omitempty" json:"paging,omitempty"`
}

// Command is a program to run (layout.Command). A path with a slash and
// Dir are relative to the file that writes them; a bare name is looked up
// on PATH.
type Command struct {
	Path string            `yaml:"path" json:"path"`
	Args []string          `yaml:"args,omitempty" json:"args,omitempty"`
	Env  map[string]string `yaml:"env,omitempty" json:"env,omitempty"`
	Dir  string            `yaml:"dir,omitempty" json:"dir,omitempty"`
}

// Inject says how a job is put into the system's queue (layout.Inject): a
// preset, or exactly one adapter.
type Inject struct {
	Preset      string             `yaml:"preset,omitempty" json:"preset,omitempty"`
	Prefix      string             `yaml:"prefix,omitempty" json:"prefix,omitempty"`
	RedisList   *InjectRedisList   `yaml:"redisList,omitempty" json:"redisList,omitempty"`
	RedisStream *InjectRedisStream `yaml:"redisStream,omitempty" json:"redisStream,omitempty"`
	RedisHash   *InjectRedisHash   `yaml:"redisHash,omitempty" json:"redisHash,omitempty"`
	RedisZSet   *InjectRedisZSet   `yaml:"redisZSet,omitempty" json:"redisZSet,omitempty"`
	HTTP        *InjectHTTP        `yaml:"http,omitempty" json:"http,omitempty"`
	Command     *Command           `yaml:"command,omitempty" json:"command,omitempty"`
	Template    string             `yaml:"template,omitempty" json:"template,omitempty"`
	IDPath      string             `yaml:"idPath,omitempty" json:"idPath,omitempty"`
	// Queue, Job, Options, Runtime and Dir are a framework preset's
	// (layout.Inject).
	Queue   string         `yaml:"queue,omitempty" json:"queue,omitempty"`
	Job     string         `yaml:"job,omitempty" json:"job,omitempty"`
	Options map[string]any `yaml:"options,omitempty" json:"options,omitempty"`
	Runtime string         `yaml:"runtime,omitempty" json:"runtime,omitempty"`
	Dir     string         `yaml:"dir,omitempty" json:"dir,omitempty"`
}

// InjectRedisList pushes a job's document onto a Redis list.
type InjectRedisList struct {
	Key  string `yaml:"key" json:"key"`
	Push string `yaml:"push,omitempty" json:"push,omitempty"`
}

// InjectRedisStream adds a job's document to a Redis stream that the
// system reads with a consumer group.
type InjectRedisStream struct {
	Key   string `yaml:"key" json:"key"`
	Field string `yaml:"field,omitempty" json:"field,omitempty"`
	Group string `yaml:"group,omitempty" json:"group,omitempty"`
}

// InjectRedisHash sets a job's document in a hash under its ID.
type InjectRedisHash struct {
	Key   string      `yaml:"key" json:"key"`
	State *QueueState `yaml:"state" json:"state"`
}

// InjectRedisZSet adds a job's document to a sorted set.
type InjectRedisZSet struct {
	Key   string      `yaml:"key" json:"key"`
	State *QueueState `yaml:"state,omitempty" json:"state,omitempty"`
}

// QueueState names the field of a job's document that says its state and
// the values meaning queued (layout.QueueState).
type QueueState struct {
	Field  string   `yaml:"field" json:"field"`
	Queued []string `yaml:"queued" json:"queued"`
}

// RedisStream is a Redis stream whose entries' Field holds a JSON document.
type RedisStream struct {
	Key   string `yaml:"key" json:"key"`
	Field string `yaml:"field,omitempty" json:"field,omitempty"`
}

// InjectHTTP POSTs a job's document to URL.
type InjectHTTP struct {
	URL    string            `yaml:"url" json:"url"`
	Header map[string]string `yaml:"header,omitempty" json:"header,omitempty"`
}

// ExternalPolicyDoc is a black-box system's retry policy as a scenario
// declares it (ExternalPolicy).
type ExternalPolicyDoc struct {
	MaxAttempts       int      `yaml:"maxAttempts" json:"maxAttempts"`
	MinBackoff        Duration `yaml:"minBackoff,omitempty" json:"minBackoff,omitempty"`
	Jitter            bool     `yaml:"jitter,omitempty" json:"jitter,omitempty"`
	HonoursRetryAfter bool     `yaml:"honoursRetryAfter,omitempty" json:"honoursRetryAfter,omitempty"`
}

// ExternalDLQ says where a black-box system keeps its dead letters and
// how to read them (layout.DLQ): a preset, or exactly one adapter.
type ExternalDLQ struct {
	Preset      string       `yaml:"preset,omitempty" json:"preset,omitempty"`
	Prefix      string       `yaml:"prefix,omitempty" json:"prefix,omitempty"`
	RedisList   *RedisKeys   `yaml:"redisList,omitempty" json:"redisList,omitempty"`
	RedisZSet   *RedisKeys   `yaml:"redisZSet,omitempty" json:"redisZSet,omitempty"`
	RedisStream *RedisStream `yaml:"redisStream,omitempty" json:"redisStream,omitempty"`
	HTTP        *HTTPRead    `yaml:"http,omitempty" json:"http,omitempty"`
	Command     *Command     `yaml:"command,omitempty" json:"command,omitempty"`
	Fields      DLQFields    `yaml:"fields,omitempty" json:"fields,omitempty"`
	// Queue, Runtime and Dir are a framework preset's (layout.DLQ).
	Queue   string `yaml:"queue,omitempty" json:"queue,omitempty"`
	Runtime string `yaml:"runtime,omitempty" json:"runtime,omitempty"`
	Dir     string `yaml:"dir,omitempty" json:"dir,omitempty"`
}

// RedisKeys names Redis keys.
type RedisKeys struct {
	Keys []string `yaml:"keys" json:"keys"`
}

// HTTPRead GETs URL.
type HTTPRead struct {
	URL    string            `yaml:"url" json:"url"`
	Header map[string]string `yaml:"header,omitempty" json:"header,omitempty"`
}

// DLQFields are dotted paths into a DLQ entry (layout.Fields).
type DLQFields struct {
	ID       string   `yaml:"id,omitempty" json:"id,omitempty"`
	Severity string   `yaml:"severity,omitempty" json:"severity,omitempty"`
	Error    string   `yaml:"error,omitempty" json:"error,omitempty"`
	Class    string   `yaml:"class,omitempty" json:"class,omitempty"`
	Retries  string   `yaml:"retries,omitempty" json:"retries,omitempty"`
	Status   string   `yaml:"status,omitempty" json:"status,omitempty"`
	FailedAt string   `yaml:"failedAt,omitempty" json:"failedAt,omitempty"`
	Inactive []string `yaml:"inactive,omitempty" json:"inactive,omitempty"`
}

// Retry is the retry policy (reference/retry.Config).
type Retry struct {
	MaxAttempts   int      `yaml:"maxAttempts,omitempty" json:"maxAttempts,omitempty"`
	BaseDelay     Duration `yaml:"baseDelay,omitempty" json:"baseDelay,omitempty"`
	MaxDelay      Duration `yaml:"maxDelay,omitempty" json:"maxDelay,omitempty"`
	MaxRetryAfter Duration `yaml:"maxRetryAfter,omitempty" json:"maxRetryAfter,omitempty"`
	Budget        *Budget  `yaml:"budget,omitempty" json:"budget,omitempty"`
}

// Budget is the per-dependency retry budget.
type Budget struct {
	Disabled bool     `yaml:"disabled,omitempty" json:"disabled,omitempty"`
	Burst    int      `yaml:"burst,omitempty" json:"burst,omitempty"`
	Refill   Duration `yaml:"refill,omitempty" json:"refill,omitempty"`
	MaxWait  Duration `yaml:"maxWait,omitempty" json:"maxWait,omitempty"`
	// Scope is whose budget it is: fleet (default), one budget for every
	// worker process, kept in the store; or process, one per process.
	Scope string `yaml:"scope,omitempty" json:"scope,omitempty"`
}

// DLQ configures the dead letter queue.
type DLQ struct {
	Capacity int `yaml:"capacity,omitempty" json:"capacity,omitempty"`
	// Overflow is reject (default) or evict-oldest.
	Overflow             string `yaml:"overflow,omitempty" json:"overflow,omitempty"`
	LostLeaseUsesAttempt bool   `yaml:"lostLeaseUsesAttempt,omitempty" json:"lostLeaseUsesAttempt,omitempty"`
}

// Alerts configures the alerter; the receivers are recorded by the
// simulator. None means two: on-call (paged for high severity) and team.
type Alerts struct {
	Receivers       []string `yaml:"receivers,omitempty" json:"receivers,omitempty"`
	Routes          []Route  `yaml:"routes,omitempty" json:"routes,omitempty"`
	DefaultReceiver string   `yaml:"defaultReceiver,omitempty" json:"defaultReceiver,omitempty"`
	GroupBy         []string `yaml:"groupBy,omitempty" json:"groupBy,omitempty"`
	Timing          *Timing  `yaml:"timing,omitempty" json:"timing,omitempty"`
	DedupWindow     Duration `yaml:"dedupWindow,omitempty" json:"dedupWindow,omitempty"`
	MaxAlerts       int      `yaml:"maxAlerts,omitempty" json:"maxAlerts,omitempty"`
}

// Route sends matching alerts to a receiver.
type Route struct {
	Receiver   string            `yaml:"receiver" json:"receiver"`
	Severities []string          `yaml:"severities,omitempty" json:"severities,omitempty"`
	Match      map[string]string `yaml:"match,omitempty" json:"match,omitempty"`
	GroupBy    []string          `yaml:"groupBy,omitempty" json:"groupBy,omitempty"`
	Timing     *Timing           `yaml:"timing,omitempty" json:"timing,omitempty"`
	Continue   bool              `yaml:"continue,omitempty" json:"continue,omitempty"`
}

// Timing is an alert route's grouping and repeat timing.
type Timing struct {
	GroupWait      Duration `yaml:"groupWait,omitempty" json:"groupWait,omitempty"`
	GroupInterval  Duration `yaml:"groupInterval,omitempty" json:"groupInterval,omitempty"`
	RepeatInterval Duration `yaml:"repeatInterval,omitempty" json:"repeatInterval,omitempty"`
}

// Breaker guards one dependency with a circuit breaker and a fallback
// (batch) queue drained on recovery (reference/degrade).
type Breaker struct {
	Dependency          string   `yaml:"dependency" json:"dependency"`
	ConsecutiveFailures int      `yaml:"consecutiveFailures,omitempty" json:"consecutiveFailures,omitempty"`
	FailureRatePercent  int      `yaml:"failureRatePercent,omitempty" json:"failureRatePercent,omitempty"`
	MinThroughput       int      `yaml:"minThroughput,omitempty" json:"minThroughput,omitempty"`
	Window              Duration `yaml:"window,omitempty" json:"window,omitempty"`
	OpenDuration        Duration `yaml:"openDuration,omitempty" json:"openDuration,omitempty"`
	MaxOpenDuration     Duration `yaml:"maxOpenDuration,omitempty" json:"maxOpenDuration,omitempty"`
	BackoffFactor       int      `yaml:"backoffFactor,omitempty" json:"backoffFactor,omitempty"`
	StablePeriod        Duration `yaml:"stablePeriod,omitempty" json:"stablePeriod,omitempty"`
	HalfOpenProbes      int      `yaml:"halfOpenProbes,omitempty" json:"halfOpenProbes,omitempty"`
	SuccessesToClose    int      `yaml:"successesToClose,omitempty" json:"successesToClose,omitempty"`
	ProbeTimeout        Duration `yaml:"probeTimeout,omitempty" json:"probeTimeout,omitempty"`
	// RampUp is the time to ramp traffic back up after closing; "none"
	// (NoRampUp) turns it off.
	RampUp           string `yaml:"rampUp,omitempty" json:"rampUp,omitempty"`
	RampStartPercent int    `yaml:"rampStartPercent,omitempty" json:"rampStartPercent,omitempty"`
	// Scope is whose breaker it is: process (default), one per worker
	// process; or fleet, each process's breaker sharing its edges with
	// the others' through the store (degrade.WithFleet).
	Scope string `yaml:"scope,omitempty" json:"scope,omitempty"`
	// SyncInterval is how often a fleet's breaker loads the fleet's state
	// when asked for calls (default 250ms).
	SyncInterval Duration  `yaml:"syncInterval,omitempty" json:"syncInterval,omitempty"`
	Fallback     *Fallback `yaml:"fallback,omitempty" json:"fallback,omitempty"`
}

// Fallback configures the batch queue's draining.
type Fallback struct {
	BatchSize     int      `yaml:"batchSize,omitempty" json:"batchSize,omitempty"`
	DrainInterval Duration `yaml:"drainInterval,omitempty" json:"drainInterval,omitempty"`
}

// AutoRetry is the off-peak auto-retry of DLQ entries.
type AutoRetry struct {
	// WindowStart and WindowEnd are times of day (UTC) as durations since
	// midnight, e.g. 22h and 6h.
	WindowStart    Duration `yaml:"windowStart" json:"windowStart"`
	WindowEnd      Duration `yaml:"windowEnd" json:"windowEnd"`
	Filter         *Filter  `yaml:"filter,omitempty" json:"filter,omitempty"`
	Rate           int      `yaml:"rate,omitempty" json:"rate,omitempty"`
	Interval       Duration `yaml:"interval,omitempty" json:"interval,omitempty"`
	MaxAutoRetries int      `yaml:"maxAutoRetries,omitempty" json:"maxAutoRetries,omitempty"`
	// Budget is one-more-attempt (default) or reset-attempts.
	Budget string `yaml:"budget,omitempty" json:"budget,omitempty"`
}

// Monitor watches the DLQ's depth and age.
type Monitor struct {
	MaxDepth int      `yaml:"maxDepth,omitempty" json:"maxDepth,omitempty"`
	MaxAge   Duration `yaml:"maxAge,omitempty" json:"maxAge,omitempty"`
	Interval Duration `yaml:"interval,omitempty" json:"interval,omitempty"`
	Severity string   `yaml:"severity,omitempty" json:"severity,omitempty"`
}

// Invariants tune the invariants that need a figure.
type Invariants struct {
	// PageWithin is how soon a critical failure must page (default 5m;
	// "off" turns the check off).
	PageWithin string `yaml:"pageWithin,omitempty" json:"pageWithin,omitempty"`
	// Secrets are texts the scenario plants (in a fault's body, a job's
	// payload) that must never leave the process: no notification, and no
	// field of the report, may carry one, while a stored payload keeps it
	// (invariant no-planted-secret-leaves; with none, it is skipped).
	Secrets []string `yaml:"secrets,omitempty" json:"secrets,omitempty"`
}

// AbortIf bounds what a drill may do to a real system (AbortIfSpec): when
// one is crossed, every fault stops. A key left out is no bound; a key
// written must give one (a written 0 is refused, not read as "none").
type AbortIf struct {
	// DLQDepth: more failed entries in the DLQ than this.
	DLQDepth *int `yaml:"dlqDepth,omitempty" json:"dlqDepth,omitempty"`
	// ErrorRate: more than this share, in (0,1], of the dependencies'
	// calls failed over the last ErrorWindow (default 1m).
	ErrorRate   *float64 `yaml:"errorRate,omitempty" json:"errorRate,omitempty"`
	ErrorWindow Duration `yaml:"errorWindow,omitempty" json:"errorWindow,omitempty"`
	// MaxActiveFaults: more faults active at once than this.
	MaxActiveFaults *int `yaml:"maxActiveFaults,omitempty" json:"maxActiveFaults,omitempty"`
}

// Fault is one fault: a model from the catalogue (faults.Catalogue) with
// its parameters, a target and a schedule.
type Fault struct {
	Name string `yaml:"name" json:"name"`
	// Target is "dependency/NAME", "dlq-store", "alert-sink[/RECEIVER]",
	// "worker[/NAME]" or "store".
	Target string `yaml:"target" json:"target"`
	// Model is a catalogue name, e.g. "gateway-timeout".
	Model string `yaml:"model" json:"model"`
	// Params are the model's parameters by name (see the catalogue).
	Params   map[string]any `yaml:"params,omitempty" json:"params,omitempty"`
	Schedule Schedule       `yaml:"schedule,omitempty" json:"schedule,omitempty"`
	// RequireHits makes a run in which the fault never hit a failure
	// (default: a warning; a probabilistic fault may draw no hit).
	RequireHits bool `yaml:"requireHits,omitempty" json:"requireHits,omitempty"`
}

// Schedule says when a fault is on; every condition given must hold.
type Schedule struct {
	From        Duration  `yaml:"from,omitempty" json:"from,omitempty"`
	Until       Duration  `yaml:"until,omitempty" json:"until,omitempty"`
	Every       *Periodic `yaml:"every,omitempty" json:"every,omitempty"`
	Jobs        []string  `yaml:"jobs,omitempty" json:"jobs,omitempty"`
	Tasks       []string  `yaml:"tasks,omitempty" json:"tasks,omitempty"`
	Attempts    []int     `yaml:"attempts,omitempty" json:"attempts,omitempty"`
	FirstCalls  int       `yaml:"firstCalls,omitempty" json:"firstCalls,omitempty"`
	Probability float64   `yaml:"probability,omitempty" json:"probability,omitempty"`
	// When aims a worker fault at a state: in each window, the first
	// instant a targeted worker is in it (faults.When).
	When *When `yaml:"when,omitempty" json:"when,omitempty"`
}

// When is the state a worker fault waits for within each window: state
// mid-call, a call in flight at dependency.
type When struct {
	State      string `yaml:"state" json:"state"`
	Dependency string `yaml:"dependency" json:"dependency"`
}

// Periodic is on for duty of every period, jittered.
type Periodic struct {
	Period Duration `yaml:"period" json:"period"`
	Duty   float64  `yaml:"duty" json:"duty"`
	Jitter Duration `yaml:"jitter,omitempty" json:"jitter,omitempty"`
	Phase  Duration `yaml:"phase,omitempty" json:"phase,omitempty"`
}

// Step is one operator action.
type Step struct {
	At Duration `yaml:"at" json:"at"`
	// Action is requeue, delete, purge, set-workers or set-retry.
	Action string  `yaml:"action" json:"action"`
	Filter *Filter `yaml:"filter,omitempty" json:"filter,omitempty"`
	// Budget is requeue's: one-more-attempt (default) or reset-attempts.
	Budget    string   `yaml:"budget,omitempty" json:"budget,omitempty"`
	OlderThan Duration `yaml:"olderThan,omitempty" json:"olderThan,omitempty"`
	Workers   int      `yaml:"workers,omitempty" json:"workers,omitempty"`
	Retry     *Retry   `yaml:"retry,omitempty" json:"retry,omitempty"`
}

// Filter selects DLQ entries.
type Filter struct {
	Tasks      []string `yaml:"tasks,omitempty" json:"tasks,omitempty"`
	Severities []string `yaml:"severities,omitempty" json:"severities,omitempty"`
	Classes    []string `yaml:"classes,omitempty" json:"classes,omitempty"`
	Statuses   []string `yaml:"statuses,omitempty" json:"statuses,omitempty"`
}

// Expect is one expectation. Exactly one of its kinds is set: count, job,
// pageWithin, drainedBy, breakerOpened, breakerClosedBy,
// breakerTransitions or confusion; the other fields qualify it.
type Expect struct {
	// Count is a metric (Metric): created, succeeded, dead-lettered,
	// dead-letters, requeued, retried, in-fallback, diverted, pending,
	// pages, notifications, lost, fenced, held, evicted, charges, alerts….
	Count string `yaml:"count,omitempty" json:"count,omitempty"`
	// Job expects the job with this ID to end in State (and Route, the
	// reason of its last move, and Severity, when given).
	Job   string `yaml:"job,omitempty" json:"job,omitempty"`
	State string `yaml:"state,omitempty" json:"state,omitempty"`
	Route string `yaml:"route,omitempty" json:"route,omitempty"`
	// History, with job, expects the job's DLQ entry to hold exactly these
	// failures, by class, oldest first (so their count and order too);
	// severity then reads the entry's verdict as well.
	History []string `yaml:"history,omitempty" json:"history,omitempty"`
	// Attempts, with job, expects the job's attempts (each lease of it,
	// a crashed or fenced attempt included) to number exactly this;
	// atLeast or atMost instead bound them. AttemptGapsAtLeast, with job,
	// expects each attempt to begin at least this long after the one
	// before (a retry waits out its backoff and a Retry-After hint).
	Attempts           *int64    `yaml:"attempts,omitempty" json:"attempts,omitempty"`
	AttemptGapsAtLeast *Duration `yaml:"attemptGapsAtLeast,omitempty" json:"attemptGapsAtLeast,omitempty"`
	// PageWithin expects a page within this long of the first critical
	// failure.
	PageWithin Duration `yaml:"pageWithin,omitempty" json:"pageWithin,omitempty"`
	// DrainedBy expects the DLQ empty at this offset; with Queue
	// "fallback", the fallback (batch) queue instead.
	DrainedBy *Duration `yaml:"drainedBy,omitempty" json:"drainedBy,omitempty"`
	Queue     string    `yaml:"queue,omitempty" json:"queue,omitempty"`
	// BreakerOpened, BreakerClosedBy (with At) and BreakerTransitions name
	// a breaker's dependency.
	BreakerOpened      string   `yaml:"breakerOpened,omitempty" json:"breakerOpened,omitempty"`
	BreakerClosedBy    string   `yaml:"breakerClosedBy,omitempty" json:"breakerClosedBy,omitempty"`
	At                 Duration `yaml:"at,omitempty" json:"at,omitempty"`
	BreakerTransitions string   `yaml:"breakerTransitions,omitempty" json:"breakerTransitions,omitempty"`
	// Confusion is an injected (true) class; Said and Route filter the
	// classifier's verdict and the job's route (retry, dead-letter,
	// release, divert).
	Confusion string `yaml:"confusion,omitempty" json:"confusion,omitempty"`
	Said      string `yaml:"said,omitempty" json:"said,omitempty"`
	// Filters of a count.
	Task        string `yaml:"task,omitempty" json:"task,omitempty"`
	Severity    string `yaml:"severity,omitempty" json:"severity,omitempty"`
	Class       string `yaml:"class,omitempty" json:"class,omitempty"`
	Receiver    string `yaml:"receiver,omitempty" json:"receiver,omitempty"`
	Fingerprint string `yaml:"fingerprint,omitempty" json:"fingerprint,omitempty"`
	// Dependency, From and Window turn count retried into a rate: the
	// retries of the dependency's jobs that came due in the busiest
	// window of this length from this offset on (and before Until, when
	// given); count calls reads the calls made to the dependency instead.
	Dependency string    `yaml:"dependency,omitempty" json:"dependency,omitempty"`
	From       Duration  `yaml:"from,omitempty" json:"from,omitempty"`
	Until      Duration  `yaml:"until,omitempty" json:"until,omitempty"`
	Window     *Duration `yaml:"window,omitempty" json:"window,omitempty"`
	// The comparison of a count, breakerOpened (atLeast),
	// breakerTransitions, confusion or a job's attempts: exactly one.
	Equals  *int64 `yaml:"equals,omitempty" json:"equals,omitempty"`
	AtLeast *int64 `yaml:"atLeast,omitempty" json:"atLeast,omitempty"`
	AtMost  *int64 `yaml:"atMost,omitempty" json:"atMost,omitempty"`
}

// Duration is a time.Duration written as "30s", "2m", "1h30m" or "250ms":
// a whole, non-negative number of milliseconds.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String returns e.g. "1m30s", "250ms", "0s".
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText writes d as String does.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads "30s", "2m", "1h30m", "250ms", or "0".
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// ParseDuration reads a Duration, refusing negative values and fractions
// of a millisecond.
func ParseDuration(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	if s == "0" {
		return 0, nil
	}
	v, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return 0, fmt.Errorf("expected a duration like 30s, 2m or 250ms, got %q", s)
	case v < 0:
		return 0, fmt.Errorf("expected a duration of at least 0, got %q", s)
	case v%time.Millisecond != 0:
		return 0, fmt.Errorf("expected a whole number of milliseconds, got %q", s)
	}
	return Duration(v), nil
}

// Rate is a number of jobs per second, written "100/s", "6000/m", "2/h"
// or a plain number (per second).
type Rate float64

// String returns the rate per second, e.g. "100/s".
func (r Rate) String() string { return strconv.FormatFloat(float64(r), 'g', -1, 64) + "/s" }

// MarshalText writes r as String does.
func (r Rate) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads "100/s", "6000/m", "2/h" or "100".
func (r *Rate) UnmarshalText(b []byte) error {
	v, err := ParseRate(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// ParseRate reads a Rate.
func ParseRate(s string) (Rate, error) {
	s = strings.TrimSpace(s)
	num, unit, _ := strings.Cut(s, "/")
	per := 1.0
	switch strings.TrimSpace(unit) {
	case "", "s":
	case "m", "min":
		per = 60
	case "h":
		per = 3600
	default:
		return 0, fmt.Errorf("expected a rate like 100/s, 6000/m or 2/h, got %q", s)
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || v < 0 || v != v || v > 1e12 {
		return 0, fmt.Errorf("expected a rate like 100/s, 6000/m or 2/h, got %q", s)
	}
	return Rate(v / per), nil
}
