package scenarios

import (
	"reflect"
	"slices"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/layout"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/disposition"
)

// keyDoc says what a key means and constrains its values beyond its Go
// type, for the JSON Schema and the reference page.
type keyDoc struct {
	doc string
	// enum lists the values allowed (of the items, for a list).
	enum []string
	// pattern constrains a string (of the items, for a list).
	pattern string
	// min and max bound a number; exclusiveMin makes min itself invalid;
	// zeroOr allows 0 (the default) besides [min, max].
	min, max     *float64
	exclusiveMin bool
	zeroOr       bool
	// required marks a key a valid document always has (of kind Scenario
	// for Document's keys).
	required bool
	// format is a JSON Schema format, e.g. "date-time".
	format string
}

func bound(f float64) *float64 { return &f }

// Patterns of the format's scalars.
const (
	durationPattern = `^(0|([0-9]+(\.[0-9]+)?(h|m|s|ms|us|µs|ns))+)$`
	ratePattern     = `^[0-9]+(\.[0-9]+)?(/(s|m|min|h))?$`
	// urlPattern is an adapter's URL: http(s), or a placeholder first.
	urlPattern    = `^(https?://|\{)`
	targetPattern = `^(dependency/[^/]+|dlq-store|alert-sink(/[^/]+)?|worker(/[^/]+)?|store)$`
	// timeOfDayPattern is a duration under 24h written in hours, minutes
	// and seconds (22h, 6h30m, 45m).
	timeOfDayPattern = `^(0|(([01]?[0-9]|2[0-3])h)?([0-5]?[0-9]m)?([0-5]?[0-9]s)?)$`
)

// targetPatterns are the alternatives of targetPattern, by kind.
var targetPatterns = map[faults.TargetKind]string{
	faults.Dependency: `dependency/[^/]+`,
	faults.DLQStore:   `dlq-store`,
	faults.AlertSink:  `alert-sink(/[^/]+)?`,
	faults.Worker:     `worker(/[^/]+)?`,
	faults.Store:      `store`,
}

// Enumerations of the format, from the packages that define them.
var (
	arrivalKinds    = []string{"none", "constant", "poisson"}
	overflowNames   = []string{"reject", "evict-oldest"}
	stepActions     = []string{"requeue", "delete", "purge", "set-workers", "set-retry"}
	requeueBudgets  = []string{"one-more-attempt", "reset-attempts"}
	budgetScopes    = []string{"process", "fleet"}
	dlqStatusNames  = []string{"failed", "requeued", "deleted", "quarantined"}
	jobStateNames   = []string{"queued", "in-flight", "scheduled", "fallback", "dead-lettered", "succeeded", "none"}
	confusionRoutes = []string{"retry", "dead-letter", "release", "divert"}
	countMetrics    = append(metricNames(), "calls") // calls: only with dependency, from and window
	// moveReasons are the reasons of a job's last move (disposition),
	// which a job expectation's route names.
	moveReasons = []string{string(disposition.Enqueued), string(disposition.Leased), string(disposition.Acked),
		string(disposition.RetryLater), string(disposition.Released), string(disposition.LeaseExpired), string(disposition.Due),
		string(disposition.Diverted), string(disposition.Drained), string(disposition.DeadLetter), string(disposition.Requeued),
		string(disposition.Evicted), string(disposition.Purged)}
)

func metricNames() []string {
	out := make([]string, len(Metrics))
	for i, m := range Metrics {
		out[i] = string(m)
	}
	return out
}

func severityNames() []string {
	out := make([]string, len(classify.Severities))
	for i, s := range classify.Severities {
		out[i] = s.String()
	}
	return out
}

func classNames() []string {
	out := make([]string, len(classify.Classes))
	for i, c := range classify.Classes {
		out[i] = c.String()
	}
	return out
}

func catalogueNames() []string {
	cat := faults.Catalogue()
	out := make([]string, len(cat))
	for i, e := range cat {
		out[i] = e.Name
	}
	return out
}

// routeNames are the values a route may take: a job's last move, or a
// confusion's route.
func routeNames() []string {
	out := slices.Clone(moveReasons)
	for _, r := range confusionRoutes {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// typeDocs say what each document type is.
var typeDocs = map[string]string{
	"Document":            "A scenario file (kind: Scenario) or a fragment that scenarios include (kind: Fragment). A fragment has the same keys, all optional.",
	"Metadata":            "Names a scenario and says what it proves.",
	"Workload":            "The jobs the scenario creates.",
	"Task":                "One task type.",
	"Arrivals":            "When jobs arrive.",
	"Burst":               "A number of jobs arriving at one instant.",
	"PlannedJob":          "One explicit job.",
	"Workers":             "The worker slots that run jobs.",
	"Dependency":          "A service jobs call.",
	"System":              "The configuration of the system under test.",
	"Retry":               "The retry policy: capped exponential backoff with full jitter, and a per-dependency retry budget.",
	"Budget":              "The per-dependency retry budget: at most burst retries of one dependency run in any slot of burst × refill, across the fleet (scope: fleet, the default) or in each process (scope: process).",
	"DLQ":                 "The dead letter queue.",
	"Alerts":              "The alerter: receivers, routes, grouping and timing.",
	"Route":               "Sends the alerts it matches to a receiver.",
	"Timing":              "An alert route's grouping and repeat timing.",
	"Breaker":             "A circuit breaker guarding one dependency, with a fallback (batch) queue drained on recovery.",
	"Fallback":            "The draining of a breaker's fallback (batch) queue.",
	"AutoRetry":           "The off-peak auto-retry of DLQ entries.",
	"Monitor":             "Watches the DLQ's depth and age and raises alerts.",
	"Invariants":          "Tunes the invariants that need a figure.",
	"AbortIf":             "A drill's steady-state guard: when a bound is crossed, every fault stops at once (proxies restored, gateways and receivers healthy, stalled workers resumed), the drill runs on to its end so the system can recover, and its verdict is interrupted, naming the bound. The simulator harms nothing real and ignores it (see docs/drills.md). Give at least one bound; a key left out is no bound.",
	"Fault":               "One fault: a model from the fault catalogue with its parameters, a target and a schedule.",
	"Schedule":            "When a fault is on; every condition given must hold.",
	"Periodic":            "Turns a fault on for duty of every period, each on-phase jittered.",
	"When":                "The state a worker fault waits for in each of its windows: it strikes a targeted worker at the first instant the worker is in it, at most once per window; a window in which a worker never reached it does not strike that worker, and the report says so.",
	"Step":                "One operator action at an offset.",
	"Filter":              "Selects DLQ entries; every list given must match (an empty list matches all).",
	"External":            "A black-box system: a team's own worker, in any language, that a drill starts (or finds running), feeds jobs through its own queue and judges from outside, through the dependencies' fault gateways, the alert receivers and its DLQ. Exactly one of command and running is given. The simulator cannot run it: `faultline run` simulates the reference worker in its place.",
	"Command":             "A program with its arguments, environment and working directory. Its path, args and env may hold placeholders ({namespace}, {redis}, {worker}, {dependency:NAME}, {receiver:NAME}, {timeScale}).",
	"Inject":              "How a job is put into the system's queue: a preset (faultline, seed), or exactly one adapter (redisList, redisStream, redisHash, redisZSet, http, command).",
	"InjectRedisStream":   "A Redis stream the system reads with a consumer group; the job's document is in a field of each entry.",
	"InjectRedisHash":     "A Redis hash holding each job's document under its ID, its state marked in place.",
	"InjectRedisZSet":     "A Redis sorted set of job documents scored by when they were put in (Unix milliseconds).",
	"QueueState":          "Which jobs of a hash or sorted-set queue are still queued: the field of a job's document that says its state, and the values meaning queued.",
	"InjectRedisList":     "Pushes each job's document onto a Redis list.",
	"RedisStream":         "A Redis stream whose entries hold a JSON document in a field.",
	"InjectHTTP":          "POSTs each job's document to the system's enqueue endpoint; a 2xx answer is success.",
	"ExternalReady":       "A readiness probe the drill asks, after starting the system, until it says the system is ready for its first job: exactly one of command (exits 0), http (a GET answered 2xx) and redisKey (the key exists). A probe holding {worker} is asked of every copy. The scenario's clock — its jobs and faults — starts once every probe said ready.",
	"ExternalReceiverDoc": "A receiver the drill starts for the system ({receiver:NAME} is its URL) and whether what it accepts is a page.",
	"ExternalPolicyDoc":   "A black-box system's own retry policy, declared for the drill to judge from the call log: attempts within maxAttempts and no transient failure dead-lettered before them, waits of at least minBackoff, spread retries when jitter.",
	"ExternalDLQ":         "Where the system keeps its dead letters and how to read them: a preset (faultline, seed), or exactly one adapter (redisList, redisZSet, redisStream, http, command), and the fields of an entry.",
	"RedisKeys":           "Redis keys holding JSON entries.",
	"HTTPRead":            "GETs the DLQ's entries: a JSON array, an object whose entries is one, or JSON lines.",
	"DLQFields":           "Dotted paths into a DLQ entry (e.g. job.id); id is required unless a preset gives it, the others are read when given. Fields given win over the preset's.",
	"Expect":              "One expectation. Exactly one of count, job, pageWithin, drainedBy, breakerOpened, breakerClosedBy, breakerTransitions and confusion is given; the other keys qualify it.",
}

// keyDocs say what each key means, by "Type.key".
var keyDocs = map[string]keyDoc{
	"Document.apiVersion":   {doc: "The version of the format: " + APIVersion + ".", enum: []string{APIVersion}, required: true},
	"Document.kind":         {doc: "Scenario, a runnable drill, or Fragment, a part scenarios include (a fragment cannot be run on its own).", enum: []string{KindScenario, KindFragment}, required: true},
	"Document.metadata":     {doc: "The scenario's name, what it proves and its tags. A fragment's metadata is not merged into the scenarios that include it.", required: true},
	"Document.include":      {doc: "Fragment files (kind: Fragment), relative to this file, merged in order: a fragment's values come first and this file's own values win; lists are concatenated, fragments first. Fragments may include fragments; a cycle is an error, and a fragment included twice is merged once. Only files in the scenario's folder and the folders below it unless `faultline --allow-include-outside`."},
	"Document.seed":         {doc: "Seeds every random stream of the run (default 0); `faultline run --seed` overrides it.", min: bound(0)},
	"Document.start":        {doc: "The virtual wall-clock instant of offset 0, in RFC 3339 (default 2026-01-05T09:00:00Z, a Monday morning); it matters for time-of-day windows.", format: "date-time"},
	"Document.duration":     {doc: "How long the run lasts in virtual time (at most 400 days unless `faultline --max-duration` lifts the limit).", required: true},
	"Document.sample":       {doc: "The interval of the report's time series (default: duration/500, at least 1s)."},
	"Document.workload":     {doc: "The jobs the scenario creates."},
	"Document.workers":      {doc: "The worker slots that run jobs."},
	"Document.dependencies": {doc: "The services jobs call; a task's dependency not listed is a plain one (no charges)."},
	"Document.system":       {doc: "The configuration of the system under test."},
	"Document.invariants":   {doc: "Tunes the invariants that need a figure."},
	"Document.abortIf":      {doc: "A drill's steady-state guard: the bounds past which every fault stops (the simulator ignores it)."},
	"Document.faults":       {doc: "The faults injected."},
	"Document.steps":        {doc: "The operator's actions."},
	"Document.expect":       {doc: "What must hold at the end of the run, besides the invariants."},

	"Metadata.name":        {doc: "Identifies the scenario in reports and on the command line.", required: true},
	"Metadata.description": {doc: "What the scenario proves, in a sentence."},
	"Metadata.tags":        {doc: "Labels for choosing scenarios."},

	"Workload.tasks":    {doc: "The task types; each arrival chooses one by weight."},
	"Workload.arrivals": {doc: "When jobs arrive."},
	"Workload.jobs":     {doc: "Explicit jobs at given offsets, besides the arrivals."},

	"Task.name":           {doc: "The task's name, unique in the workload.", required: true},
	"Task.queue":          {doc: "The task's queue (default: the task's name)."},
	"Task.dependency":     {doc: "The dependency the task's handler calls (default: none)."},
	"Task.weight":         {doc: "The task's share of the arrivals (default 1).", min: bound(0)},
	"Task.idempotencyKey": {doc: "Gives each job an idempotency key, recorded before its first attempt (payments)."},
	"Task.payload":        {doc: "The job's payload; {n} and {id} are replaced by the job's number and ID."},
	"Task.service":        {doc: "How long the handler works, besides its dependency's latency."},
	"Task.serviceJitter":  {doc: "Spreads the service time uniformly by up to ± this much."},

	"Arrivals.kind":   {doc: "How jobs arrive: none, constant (evenly spaced) or poisson (default: poisson when a rate is given, else none).", enum: arrivalKinds},
	"Arrivals.rate":   {doc: "Jobs per unit of time, e.g. 100/s, 6000/m or 2/h; a plain number is per second."},
	"Arrivals.from":   {doc: "The offset arrivals start at (default 0)."},
	"Arrivals.until":  {doc: "The offset arrivals stop at (default: the end of the run)."},
	"Arrivals.bursts": {doc: "Jobs arriving all at once, besides the rate."},

	"Burst.at":    {doc: "The offset of the burst."},
	"Burst.count": {doc: "How many jobs arrive (at most 10,000,000).", min: bound(0), max: bound(10_000_000)},
	"Burst.task":  {doc: "The jobs' task (default: chosen by weight for each job)."},

	"PlannedJob.at":             {doc: "The offset the job is created at."},
	"PlannedJob.id":             {doc: "The job's ID, which job expectations and a fault's schedule.jobs name (default: generated, TASK-N)."},
	"PlannedJob.task":           {doc: "The job's task, one of the workload's.", required: true},
	"PlannedJob.idempotencyKey": {doc: "The job's idempotency key (default: as its task says)."},
	"PlannedJob.payload":        {doc: "The job's payload (default: its task's)."},

	"Workers.count":     {doc: "The number of worker slots, named w1..wN (default 4; at most 10,000 unless `faultline --max-workers` lifts the limit).", min: bound(0), max: bound(DefaultMaxWorkers)},
	"Workers.processes": {doc: "The worker processes the slots are spread over, round robin (slot wN in process (N-1) mod processes), as a drill runs them: each has its own retry policy, breakers and fallbacks, and leases only from the queues its breakers let it run; the store, its leases and the DLQ, the retry budget (scope: fleet) and the alerter are the fleet's. A worker fault strikes the process of the slot it names: every slot that process runs. Default min(count, 8); a scenario written before this field keeps its meaning with processes: 1.", min: bound(0)},
	"Workers.leaseTTL":  {doc: "How long a dequeued job is leased before it counts as lost (default 30s)."},

	"Dependency.name":                   {doc: "The dependency's name, as tasks and fault targets (dependency/NAME) write it.", required: true},
	"Dependency.payment":                {doc: "Every call that goes through charges the job's payment (a success, or an error that took effect anyway); a payment charged twice is an invariant violation."},
	"Dependency.ignoresIdempotencyKeys": {doc: "The gateway charges again for a key it has seen (a broken gateway); by default a repeated key is a replay."},

	"System.rulesFile": {doc: "A classifier rule file (the reference/classify format), relative to this file (default: the default rules)."},
	"System.retry":     {doc: "The retry policy."},
	"System.dlq":       {doc: "The dead letter queue."},
	"System.alerts":    {doc: "The alerter (default: two receivers, on-call paged for high severity and team for the rest)."},
	"System.breakers":  {doc: "Circuit breakers, one per guarded dependency, each with a fallback (batch) queue."},
	"System.autoRetry": {doc: "The off-peak auto-retry of DLQ entries (default: off)."},
	"System.monitor":   {doc: "The DLQ monitor (default: off)."},
	"System.external":  {doc: "Makes the system under test a black box, drilled from outside (`faultline drill`); the keys that configure the reference worker (rulesFile, retry, dlq, breakers, autoRetry, monitor) are then refused, and so are operator steps, store and dlq-store faults and tasks without a dependency. The simulator runs the reference in its place."},

	"External.command":                    {doc: "Starts one copy of the system; `{worker}` is the copy's name (w1..wN)."},
	"External.copies":                     {doc: "How many copies a drill starts (default workers.count); not with running.", min: bound(0), max: bound(DefaultMaxWorkers)},
	"External.running":                    {doc: "The system is already running: the drill starts nothing, and worker faults cannot be drilled."},
	"External.inject":                     {doc: "How a job is put into the system's queue.", required: true},
	"External.dlq":                        {doc: "Where the system keeps its dead letters and how to read them.", required: true},
	"External.drain":                      {doc: "How long, in scenario time, the drill waits after the end for every job to succeed or reach the DLQ before it calls one lost (default " + DefaultDrain.String() + ")."},
	"External.startup":                    {doc: "How long, on the wall clock, the drill waits blind after starting the system before the first job (default " + DefaultStartup.String() + "); a readiness probe (ready) replaces it."},
	"External.dlqShrinks":                 {doc: "The ways the system removes DLQ entries (an operator, its own auto-retry, a purge by age, eviction at a capacity); any other removal violates dlq-never-shrinks.", enum: Shrinks},
	"External.policy":                     {doc: "The system's own retry policy, declared for the drill to judge from the call log (attempts-within-policy, transient-retried); undeclared, only the hot-loop rule applies: no two calls of one job within 100ms of scenario time after a failed one."},
	"ExternalPolicyDoc.maxAttempts":       {doc: "The attempts a job is given, the first one included: a transient failure is tried this many times before it is dead-lettered, never more.", required: true, min: bound(1)},
	"ExternalPolicyDoc.minBackoff":        {doc: "The least wait, in scenario time, between a failed attempt and the next (0 for full jitter)."},
	"ExternalPolicyDoc.jitter":            {doc: "Retries are spread: five or more jobs that failed within 10ms are not all attempted again within 10ms, twice running (once may be a poller's batch); with no minBackoff (full jitter), nine in ten of five or more retries within 100ms of their failure are a hot loop."},
	"ExternalPolicyDoc.honoursRetryAfter": {doc: "A dependency's Retry-After is waited out: no job is called again sooner than the Retry-After it was answered with."},
	"External.noAlerts":                   {doc: "The system has no alerting to point at the receivers: a critical failure's page is then reported not observable instead of failed."},
	"External.ready":                      {doc: "A readiness probe asked instead of the blind startup wait: jobs and faults start once it says ready. With a framework preset and neither ready nor startup, the preset's probe is asked: the framework's worker processes consuming the queue, one per copy."},
	"External.maxTimeScale":               {doc: "The fastest time scale the system keeps its timing at, for a system that follows the drill's ({timeScale}): what it does not configure (a framework's poller, its boot) does not scale. --time-scale auto picks no faster; a faster --time-scale is refused.", min: bound(1)},
	"External.pageWait":                   {doc: "How long past the drain, in scenario time, the drill waits for a page still owed whose deadline has not passed (default " + DefaultPageWait.String() + "); a page later than that is not observable, never 'never paged'."},
	"ExternalReady.command":               {doc: "A command that exits 0 when the system is ready (run at most every 100ms)."},
	"ExternalReady.http":                  {doc: "An endpoint that answers a GET with 2xx when the system is ready."},
	"ExternalReady.redisKey":              {doc: "A Redis key the system sets when it is ready, e.g. \"{namespace}:ready:{worker}\"."},
	"ExternalReady.timeout":               {doc: "How long, on the wall clock, the drill asks before it refuses to start: the system never became ready (default " + DefaultReadyTimeout.String() + ")."},
	"External.receivers":                  {doc: "Receivers the drill starts besides the alerts' receivers and slack, each with whether it pages: only notifications a paging receiver accepts count as pages (a receiver not declared pages)."},
	"ExternalReceiverDoc.name":            {doc: "The receiver's name; {receiver:NAME} is its URL.", required: true},
	"ExternalReceiverDoc.paging":          {doc: "Whether a notification it accepts is a page (default true); false for a chat channel read by day. A notification whose severity says low, medium, info or warning (faultline's format, or plain text starting with the word) is never a page."},

	"Command.path": {doc: "The program: a bare name is looked up on PATH, a path with a slash is relative to this file's folder.", required: true},
	"Command.args": {doc: "Its arguments."},
	"Command.env":  {doc: "Environment variables added to those faultline gives (FAULTLINE_REDIS_URL, FAULTLINE_NAMESPACE, FAULTLINE_WORKER, FAULTLINE_DEPENDENCY_NAME, …)."},
	"Command.dir":  {doc: "The working directory, relative to this file's folder (default that folder)."},

	"Inject.preset":      {doc: "A layout faultline knows: faultline (the reference's Redis store), seed (LPUSH onto list `<prefix>default`), or a job framework — sidekiq, celery, rq, bullmq — whose own client puts the job in (docs/plugging-in.md).", enum: layout.Presets},
	"Inject.prefix":      {doc: "Put before the seed preset's keys, e.g. \"{namespace}:\"; with the bullmq preset, BullMQ's key prefix (default bull)."},
	"Inject.queue":       {doc: "A framework preset's queue (default {namespace}: a queue of the drill's own)."},
	"Inject.job":         {doc: "A framework preset's job: Sidekiq's job class, Celery's task name, RQ's function (a dotted path), BullMQ's job name; {task} in it is the scenario's task (default the task)."},
	"Inject.options":     {doc: "A framework preset's job options, as the team's producer passes them: Sidekiq's item fields (retry: 3), RQ's enqueue keywords (retry: {max: 3, interval: [1, 2]}, failure_ttl), Celery's send_task options, BullMQ's job options (attempts, backoff, removeOnFail). Sidekiq's retry, RQ's retry and BullMQ's attempts are the retry policy the drill judges, unless policy is declared."},
	"Inject.runtime":     {doc: "The program that runs a framework preset's adapter (default ruby, /usr/bin/python3 or node)."},
	"Inject.dir":         {doc: "The folder a framework preset's adapter loads the framework from (BullMQ: the project whose node_modules holds bullmq), relative to this file's folder (default that folder)."},
	"Inject.redisList":   {doc: "Pushes the job's document onto a Redis list."},
	"Inject.redisStream": {doc: "Adds the job's document to a Redis stream (XADD)."},
	"Inject.redisHash":   {doc: "Sets the job's document in a Redis hash under its ID (HSET)."},
	"Inject.redisZSet":   {doc: "Adds the job's document to a Redis sorted set, scored by the Unix milliseconds it was put in (ZADD)."},
	"Inject.http":        {doc: "POSTs the job's document to an endpoint."},
	"Inject.command":     {doc: "Writes the job's document as one JSON line on the stdin of a command the drill keeps running; it prints one line per job read, ok or an error."},
	"Inject.template":    {doc: "The job's JSON document; its strings may hold {id}, {task}, {key} and {n}, and a string that is exactly \"{payload}\" becomes the payload (default `" + layout.DefaultTemplate + "`; not with the faultline preset)."},
	"Inject.idPath":      {doc: "Where the template puts {id}, a dotted path such as job.id (default id)."},

	"InjectRedisList.key":  {doc: "The list's key; may hold placeholders (\"{namespace}:jobs\").", required: true},
	"InjectRedisList.push": {doc: "lpush (the default) or rpush.", enum: []string{"lpush", "rpush"}},

	"InjectRedisStream.key":   {doc: "The stream's key.", required: true},
	"InjectRedisStream.field": {doc: "The entry's field holding the document (default job)."},
	"InjectRedisStream.group": {doc: "The consumer group the system reads the stream with: the queue at the end is that group's pending entries and the entries after its last-delivered ID (a stream keeps what was acknowledged). Without it the queue is not observable, and a job the system dropped reads as not lost only if a call or a DLQ entry shows it."},

	"InjectRedisHash.key":   {doc: "The hash's key.", required: true},
	"InjectRedisHash.state": {doc: "Which members are still queued (a hash keyed by job ID holds every job).", required: true},
	"InjectRedisZSet.key":   {doc: "The sorted set's key.", required: true},
	"InjectRedisZSet.state": {doc: "Which members are still queued; without it every member is (the worker removes what it takes, as ZPOPMIN does)."},
	"QueueState.field":      {doc: "The dotted path of the state in a job's document, e.g. status; the template must write a queued value there.", required: true},
	"QueueState.queued":     {doc: "The values meaning the job is still queued, e.g. [queued].", required: true},

	"RedisStream.key":   {doc: "The stream's key.", required: true},
	"RedisStream.field": {doc: "The entry's field holding the document (default job)."},

	"InjectHTTP.url":    {doc: "The endpoint: an http:// or https:// URL, or one starting with a placeholder.", pattern: urlPattern, required: true},
	"InjectHTTP.header": {doc: "Extra request headers."},

	"ExternalDLQ.preset":      {doc: "A layout faultline knows: faultline (the reference's Redis store), seed (lists `<prefix>dead_letter` and `<prefix>dlq:low`, `medium`, `high`), or a job framework — sidekiq (the dead set), celery (no DLQ by default: the Redis result backend's FAILURE records), rq (the failed job registry), bullmq (the failed set).", enum: layout.Presets},
	"ExternalDLQ.prefix":      {doc: "Put before the seed preset's keys, e.g. \"{namespace}:\"; with the bullmq preset, BullMQ's key prefix (default bull)."},
	"ExternalDLQ.queue":       {doc: "A framework preset's queue (default {namespace})."},
	"ExternalDLQ.runtime":     {doc: "The program that runs a framework preset's adapter (default ruby, /usr/bin/python3 or node)."},
	"ExternalDLQ.dir":         {doc: "The folder a framework preset's adapter loads the framework from, relative to this file's folder (default that folder)."},
	"ExternalDLQ.redisList":   {doc: "Reads Redis lists of JSON entries."},
	"ExternalDLQ.redisZSet":   {doc: "Reads Redis sorted sets of JSON entries."},
	"ExternalDLQ.redisStream": {doc: "Reads a Redis stream whose field holds a JSON entry."},
	"ExternalDLQ.http":        {doc: "GETs the entries from an endpoint."},
	"ExternalDLQ.command":     {doc: "Runs a command that prints the entries as JSON lines and exits 0 (the way to a DLQ that is not JSON in Redis)."},
	"ExternalDLQ.fields":      {doc: "Where an entry keeps what faultline reads (a preset gives them)."},

	"RedisKeys.keys": {doc: "The keys; each may hold placeholders.", required: true},

	"HTTPRead.url":    {doc: "The endpoint: an http:// or https:// URL, or one starting with a placeholder.", pattern: urlPattern, required: true},
	"HTTPRead.header": {doc: "Extra request headers."},

	"DLQFields.id":       {doc: "The path of the job's ID (the seed's job.id); required unless a preset gives it."},
	"DLQFields.severity": {doc: "The path of the failure's severity; where it is given, a critical failure's entry must say high or critical."},
	"DLQFields.error":    {doc: "The path of the error message (default: the seed's error); an entry without one fails dlq-entry-complete."},
	"DLQFields.class":    {doc: "The path of the failure's class."},
	"DLQFields.retries":  {doc: "The path of the number of retries (default: the seed's retries); an entry without one fails dlq-entry-complete."},
	"DLQFields.failedAt": {doc: "The path of when the job failed (default: the seed's failed_at); an entry without one fails dlq-entry-complete."},
	"DLQFields.status":   {doc: "The path of the entry's status."},
	"DLQFields.inactive": {doc: "The statuses of an entry that no longer holds its job (the seed's deleted and reprocessing)."},

	"Retry.maxAttempts":   {doc: "The total number of attempts, the first one included; 1 means never retry (default 4).", min: bound(0)},
	"Retry.baseDelay":     {doc: "The backoff ceiling of the first retry; it doubles with every retry after that (default 1s)."},
	"Retry.maxDelay":      {doc: "Caps the backoff ceiling; at least baseDelay (default 5m)."},
	"Retry.maxRetryAfter": {doc: "Caps a dependency's Retry-After hint (default 1h)."},
	"Retry.budget":        {doc: "The retry budget each dependency gets."},

	"Budget.disabled": {doc: "Turns the budget off: retries run at their backoff or hint time however many there are."},
	"Budget.burst":    {doc: "The number of retries of one dependency that may run in one slot (default 10).", min: bound(0)},
	"Budget.refill":   {doc: "The average time between retries the budget lets through once a burst is spent; a slot is burst × refill long (default 100ms)."},
	"Budget.maxWait":  {doc: "The longest the budget delays a retry; a retry that finds no room within it runs anyway, counted as over budget (default: maxDelay)."},
	"Budget.scope":    {doc: "Whose budget it is: fleet (the default), one budget for every worker process, kept in the store (its slots numbered from the Unix epoch; while the store cannot be reached a retry runs as due, unbudgeted: the budget fails open); or process, one budget per process, so a fleet of N processes lets N times the retries through.", enum: budgetScopes},

	"DLQ.capacity":             {doc: "The most entries the DLQ holds (default 100000).", min: bound(0)},
	"DLQ.overflow":             {doc: "What a full DLQ does with a new dead letter: reject it (the default: the job is held with its entry, its handler never run again, and written once there is room) or evict the oldest entry; either is reported, never silent.", enum: overflowNames},
	"DLQ.lostLeaseUsesAttempt": {doc: "A job recovered from an expired lease counts the attempt it lost; by default it does not (the worker died, not the job)."},

	"Alerts.receivers":       {doc: "The receivers' names; the simulator records their deliveries."},
	"Alerts.routes":          {doc: "The routes, tried in order; an alert no route takes goes to defaultReceiver."},
	"Alerts.defaultReceiver": {doc: "The receiver of alerts no route takes."},
	"Alerts.groupBy":         {doc: "The labels that group the default route's alerts (default: dependency)."},
	"Alerts.timing":          {doc: "The default timing of every route."},
	"Alerts.dedupWindow":     {doc: "Occurrences of a fingerprint closer than this are one alert, and a job-failure alert resolves after this long without one (default 5m)."},
	"Alerts.maxAlerts":       {doc: "The most distinct alerts held at once, at least 2 (default 10000); past it, new fingerprints are counted in one alert-limit alert.", min: bound(2), zeroOr: true},

	"Route.receiver":   {doc: "The receiver the route sends to.", required: true},
	"Route.severities": {doc: "Limits the route to these severities.", enum: severityNames()},
	"Route.match":      {doc: "Limits the route to alerts having all these labels (name: value)."},
	"Route.groupBy":    {doc: "The labels whose values form a group: alerts with equal values are sent together (default: dependency)."},
	"Route.timing":     {doc: "Overrides the alerts' default timing; keys not given take the default's."},
	"Route.continue":   {doc: "Lets a matched alert also try the routes after this one."},

	"Timing.groupWait":      {doc: "How long a new group collects alerts before its first notification; also the longest a new high-severity alert waits to be paged (default 30s)."},
	"Timing.groupInterval":  {doc: "The shortest time between two notifications of a group about new or resolved alerts (default 5m)."},
	"Timing.repeatInterval": {doc: "How often an alert that keeps firing is sent again (default 4h)."},

	"Breaker.dependency":          {doc: "The dependency the breaker guards.", required: true},
	"Breaker.consecutiveFailures": {doc: "Trips a closed breaker after this many counted failures in a row (default 5).", min: bound(0)},
	"Breaker.failureRatePercent":  {doc: "Trips a closed breaker when counted failures are at least this percentage of the calls in the window (default 50).", min: bound(0), max: bound(100)},
	"Breaker.minThroughput":       {doc: "The failure rate only counts once the window holds at least this many calls (default 20).", min: bound(0)},
	"Breaker.window":              {doc: "The length of the rolling window of the failure rate (default 10s)."},
	"Breaker.openDuration":        {doc: "How long the breaker stays open before it probes, before any backoff (default 5s)."},
	"Breaker.maxOpenDuration":     {doc: "Caps the open duration as it backs off; at least openDuration (default 5m)."},
	"Breaker.backoffFactor":       {doc: "Multiplies the open duration for each level of flapping; 1 turns the backoff off (default 2).", min: bound(0)},
	"Breaker.stablePeriod":        {doc: "A trip less than this long after closing counts as flapping and backs off (default 1m)."},
	"Breaker.halfOpenProbes":      {doc: "The most probe calls in flight at once while half-open (default 1).", min: bound(0)},
	"Breaker.successesToClose":    {doc: "How many probe successes close the breaker (default 3).", min: bound(0)},
	"Breaker.probeTimeout":        {doc: "A probe not recorded within this long counts as a failure, which re-opens (default 10s)."},
	"Breaker.rampUp":              {doc: "After closing, the share of calls admitted grows linearly to 100% over this long; none turns ramp-up off (default 30s).", pattern: `^(none|0|([0-9]+(\.[0-9]+)?(h|m|s|ms|us|µs|ns))+)$`},
	"Breaker.rampStartPercent":    {doc: "The percentage of calls admitted just after closing (default 10).", min: bound(0), max: bound(100)},
	"Breaker.scope":               {doc: "Whose breaker it is: process (the default), each worker process its own, as most job frameworks' breakers are; or fleet, each process's breaker sharing its edges through the store: a trip anywhere opens the fleet at the others' next sync, one process probes when the spell ends and its verdict closes or re-opens the fleet (while the store cannot be reached each works alone).", enum: budgetScopes},
	"Breaker.syncInterval":        {doc: "How often a fleet's breaker (scope: fleet) loads the fleet's state when asked for calls: it learns of a trip elsewhere at most this late (default 250ms)."},
	"Breaker.fallback":            {doc: "The draining of the fallback (batch) queue that takes the dependency's jobs while the breaker is open."},

	"Fallback.batchSize":     {doc: "The most jobs one drain moves back to their queues (default 100).", min: bound(0)},
	"Fallback.drainInterval": {doc: "The time from the breaker closing, or going half-open, to the first drain, and between drains (default 1s)."},

	"AutoRetry.windowStart":    {doc: "The start of the off-peak window, a time of day (UTC) written as a duration since midnight under 24h, e.g. 22h or 6h30m.", pattern: timeOfDayPattern},
	"AutoRetry.windowEnd":      {doc: "The end of the off-peak window, e.g. 6h, under 24h; a window may wrap past midnight.", pattern: timeOfDayPattern},
	"AutoRetry.filter":         {doc: "Selects the entries retried (only failed entries are, whatever statuses says)."},
	"AutoRetry.rate":           {doc: "The most requeues per interval inside the window (default 10).", min: bound(0)},
	"AutoRetry.interval":       {doc: "The interval of rate (default 1m)."},
	"AutoRetry.maxAutoRetries": {doc: "How many times one entry is requeued automatically (default 3); an entry that has used them and failed again is quarantined as poison.", min: bound(0)},
	"AutoRetry.budget":         {doc: "The attempt budget of an automatic requeue: one-more-attempt (the default) or reset-attempts.", enum: requeueBudgets},

	"Monitor.maxDepth": {doc: "Alerts when the DLQ holds more entries; 0 turns the check off.", min: bound(0)},
	"Monitor.maxAge":   {doc: "Alerts when the oldest failed entry is older; 0 turns the check off."},
	"Monitor.interval": {doc: "How often the monitor checks (default 1m)."},
	"Monitor.severity": {doc: "The severity of the depth and age alerts (default medium); overflows are high.", enum: severityNames()},

	"Invariants.secrets":    {doc: "Texts the scenario plants (a card number, a bearer token, a webhook URL in a fault's body or a job's payload), at least 8 characters each, that must never leave the process: no delivered notification and no field of the report (its effective configuration aside) may carry one, while the DLQ's stored payload of a job created with one keeps it (invariant no-planted-secret-leaves)."},
	"Invariants.pageWithin": {doc: "How soon a critical failure must reach a person as a high-severity alert (default 5m); off turns the check off.", pattern: `^(off|([0-9]+(\.[0-9]+)?(h|m|s|ms|us|µs|ns))+)$`},

	"AbortIf.dlqDepth":        {doc: "Stops the faults when the DLQ holds more failed entries than this.", min: bound(1)},
	"AbortIf.errorRate":       {doc: "Stops the faults when more than this share, in (0,1], of the dependencies' calls failed over the last errorWindow, once at least 20 calls were made in it.", min: bound(0), exclusiveMin: true, max: bound(1)},
	"AbortIf.errorWindow":     {doc: "The window of errorRate, in scenario time, from 1s to the run's duration; only with errorRate (default 1m)."},
	"AbortIf.maxActiveFaults": {doc: "Stops the faults when more than this many are active at once (a fault is active while its schedule's time conditions hold).", min: bound(1)},

	"Fault.name":        {doc: "Names the fault in reports; unique among the faults.", required: true},
	"Fault.target":      {doc: "What the fault hits: dependency/NAME, dlq-store, alert-sink (every receiver) or alert-sink/RECEIVER, worker (every worker) or worker/NAME, or store.", pattern: targetPattern, required: true},
	"Fault.model":       {doc: "A model of the fault catalogue.", enum: catalogueNames(), required: true},
	"Fault.params":      {doc: "The model's parameters by name; each has a default (see the fault catalogue)."},
	"Fault.schedule":    {doc: "When the fault is on (default: the whole run, every call)."},
	"Fault.requireHits": {doc: "Makes a run in which the fault never hit a call fail; by default zero hits are a warning (a probabilistic fault may draw no hit on some seeds)."},

	"Schedule.from":        {doc: "The offset from which the fault is on (default 0)."},
	"Schedule.until":       {doc: "The offset before which the fault is on (default: the end of the run)."},
	"Schedule.every":       {doc: "Makes the fault on for a part of every period."},
	"Schedule.jobs":        {doc: "Limits the fault to the calls made by these explicit jobs (`workload.jobs[].id`), whenever they come: the way to aim a fault at one job, on the simulator and on the wall clock alike. Only dependency and dlq-store faults take it; it changes no window."},
	"Schedule.tasks":       {doc: "Limits the fault to the calls made by jobs of these tasks (`workload.tasks[].name`); a dependency fault's tasks must call its dependency. Only dependency and dlq-store faults take it (a dlq-store call carries a task when it writes a job's dead letter); it changes no window. In a drill, the gateway reads the task from the `X-Faultline-Task` header: a black-box worker that does not send it is never hit."},
	"Schedule.attempts":    {doc: "Limits the fault to the calls made by these attempts of a job: 1 is its first attempt, 2 its first retry (the attempts that used the retry budget before it, plus one; a crashed or released attempt does not count). Only dependency and dlq-store faults take it (a dlq-store call carries the attempt that dead-lettered the job); it changes no window. In a drill, the gateway reads it from the `X-Faultline-Attempt` header: a black-box worker that does not send it is never hit.", min: bound(1)},
	"Schedule.firstCalls":  {doc: "Limits the fault to the first N calls that reach it while its time conditions hold (with jobs, tasks or attempts, only the calls they select count), over the whole run.", min: bound(0)},
	"Schedule.probability": {doc: "The chance in [0,1] that a call reaching the fault is hit; 0 means 1.", min: bound(0), max: bound(1)},
	"Schedule.when":        {doc: "Aims a worker fault at a state instead of its windows' first instants, e.g. `{state: mid-call, dependency: payment-gateway}`: in each window it strikes each targeted worker at the first instant the worker holds a lease with a call in flight at the dependency, the simulator and a drill alike. A window in which a worker never reached the state does not strike it: the report names it, and requireHits fails when no worker was struck. Only worker faults take it; a black-box drill refuses it (its workers need not say who calls)."},

	"When.state":      {doc: "The state waited for: mid-call (the worker holds a lease and has a call in flight at dependency: the call started, its answer not yet received).", enum: whenStateNames(), required: true},
	"When.dependency": {doc: "The dependency the call is in flight at: a listed dependency or a task's.", required: true},

	"Periodic.period": {doc: "The length of one cycle.", required: true},
	"Periodic.duty":   {doc: "The fraction of each period the fault is on, in (0,1].", min: bound(0), exclusiveMin: true, max: bound(1), required: true},
	"Periodic.jitter": {doc: "Shifts each on-phase by up to ± this much, drawn from the seed; at most period/2."},
	"Periodic.phase":  {doc: "The offset of the first on-phase's start (default 0)."},

	"Step.at":        {doc: "The offset the operator acts at."},
	"Step.action":    {doc: "What the operator does: requeue or delete the DLQ entries filter selects, purge the entries older than olderThan, set-workers to workers, or set-retry to retry.", enum: stepActions, required: true},
	"Step.filter":    {doc: "Selects the DLQ entries requeue and delete act on (default: every entry)."},
	"Step.budget":    {doc: "requeue's attempt budget: one-more-attempt (the default) or reset-attempts.", enum: requeueBudgets},
	"Step.olderThan": {doc: "purge's age: the entries that failed more than this long ago go; required for purge."},
	"Step.workers":   {doc: "set-workers' number of worker slots (at most 10,000 unless `faultline --max-workers` lifts the limit).", min: bound(0), max: bound(DefaultMaxWorkers)},
	"Step.retry":     {doc: "set-retry's new retry policy; required for set-retry."},

	"Filter.tasks":      {doc: "The entries' tasks."},
	"Filter.severities": {doc: "The severities of the entries' latest failure.", enum: severityNames()},
	"Filter.classes":    {doc: "The classes of the entries' latest failure.", enum: classNames()},
	"Filter.statuses":   {doc: "The entries' statuses.", enum: dlqStatusNames},

	"Expect.count":              {doc: "Expects a count of this metric, compared with equals, atLeast or atMost; dead-lettered and dead-letters take the filters task, severity and class, pages receiver, fingerprint and severity, notifications receiver; alerts counts the alerts raised, paging or not; retried with dependency, from and window reads the busiest window's retries of the dependency's jobs; calls (only with dependency, from and window) the busiest window's calls to the dependency, every attempt's.", enum: countMetrics},
	"Expect.job":                {doc: "Expects the job with this ID to end in state (and, when given, with route as its last move and severity as its latest failure's); or, with attempts, atLeast, atMost or attemptGapsAtLeast instead, reads its attempts."},
	"Expect.state":              {doc: "A job expectation's state.", enum: jobStateNames},
	"Expect.attempts":           {doc: "With job: the job's attempts (each lease of it, a crashed or fenced attempt included) number exactly this (at least 0, which the loader checks); atLeast or atMost bound them instead."},
	"Expect.attemptGapsAtLeast": {doc: "With job: each attempt of the job begins at least this long after the one before it (a retry waits out its backoff and a dependency's Retry-After hint)."},
	"Expect.history":            {doc: "With job: the classes of the failures the job's DLQ entry holds, oldest first (so their count and order too): a job retried, dead-lettered, requeued and dead-lettered again keeps every failure. severity then reads the entry's verdict too.", enum: classNames()},
	"Expect.route":              {doc: "With job: the reason of the job's last move. With confusion: the route the jobs took (retry, dead-letter, release or divert).", enum: routeNames()},
	"Expect.pageWithin":         {doc: "Expects a page within this long of the first critical failure."},
	"Expect.drainedBy":          {doc: "Expects the DLQ empty at this offset; with queue: fallback, the fallback (batch) queue instead."},
	"Expect.queue":              {doc: "drainedBy's queue: dlq (the default) or fallback.", enum: []string{"dlq", "fallback"}},
	"Expect.breakerOpened":      {doc: "Expects the breaker of this dependency to open at least atLeast times."},
	"Expect.breakerClosedBy":    {doc: "Expects the breaker of this dependency closed at offset at."},
	"Expect.at":                 {doc: "breakerClosedBy's offset."},
	"Expect.breakerTransitions": {doc: "Expects the breaker of this dependency to change state equals, at least atLeast or at most atMost times."},
	"Expect.confusion":          {doc: "Expects a count of the jobs whose injected (true) class is this, filtered by said (the classifier's verdict) and route.", enum: classNames()},
	"Expect.said":               {doc: "A confusion expectation's verdict of the classifier.", enum: classNames()},
	"Expect.task":               {doc: "Counts only this task's jobs."},
	"Expect.severity":           {doc: "Counts only failures (or, for pages, alerts of at least) this severity; with job, the job's latest failure's severity.", enum: severityNames()},
	"Expect.class":              {doc: "Counts only failures of this class.", enum: classNames()},
	"Expect.receiver":           {doc: "Counts only pages or notifications to this receiver."},
	"Expect.fingerprint":        {doc: "Counts only pages of alerts with this fingerprint."},
	"Expect.dependency":         {doc: "With count retried, from and window: the dependency whose jobs' retries are read."},
	"Expect.from":               {doc: "With count retried, dependency and window: the offset from which the windows are read (e.g. a recovery's)."},
	"Expect.until":              {doc: "With count retried or calls, dependency and window: the offset before which the windows are read (default: the end of the run), e.g. the end of a breaker's ramp-up."},
	"Expect.window":             {doc: "With count retried, dependency and from: the count becomes the retries of the dependency's jobs that came due in the busiest window of this length, e.g. 1s for retries per second."},
	"Expect.equals":             {doc: "The count must be exactly this.", min: bound(0)},
	"Expect.atLeast":            {doc: "The count must be at least this.", min: bound(0)},
	"Expect.atMost":             {doc: "The count must be at most this.", min: bound(0)},
}

// keyDocFor returns the description of key in type t.
func keyDocFor(t reflect.Type, key string) keyDoc { return keyDocs[t.Name()+"."+key] }

func whenStateNames() []string {
	out := []string{}
	for _, s := range faults.WhenStates() {
		out = append(out, string(s))
	}
	return out
}
