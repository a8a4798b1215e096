package oracle

import (
	"context"
	"errors"
	"iter"
	"maps"
	"slices"
	"time"

	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/degrade"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/retry"
	"github.com/faultline/faultline/reference/worker"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
)

// Checks are one run's checkers, fed by whichever driver has the run: the
// simulator's engine as it runs, or Judge from a history. Each keeps what
// it checks; Result puts their verdicts together into the run's report,
// the same way for every driver.
type Checks struct {
	sc *scenarios.Scenario
	// Ledger follows every job through its moves and checks them.
	Ledger *Ledger
	// Breakers checks the breakers' transitions and keeps them.
	Breakers *Breakers
	// Pages checks the pages (critical-failure-paged,
	// one-page-per-repeat-interval) and counts the alerts.
	Pages *Pages
	// Secrets checks that no planted secret leaves.
	Secrets *Secrets
	// Sampler keeps the time series.
	Sampler Sampler
	// Probes are the snapshots the expectations asked for, by offset (nil
	// until taken: ArmProbes).
	Probes map[time.Duration]*Probe

	now func() time.Duration
	at  func(time.Duration, func())
	// sharedKeys are the idempotency keys explicit jobs were given (two
	// jobs may share one); keyCharges counts their charges per key.
	sharedKeys map[string]bool
	keyCharges map[string]int32
}

// NewChecks returns the checkers of a run of sc (defaults applied) that
// starts at start: now tells the run's offset, at schedules f on the run's
// clock at offset d (the page deadlines, the probes). live says the run is
// judged from a drill's history, whose notifications are summaries only.
func NewChecks(sc *scenarios.Scenario, start time.Time, now func() time.Duration, at func(d time.Duration, f func()), live bool) *Checks {
	c := &Checks{sc: sc, now: now, at: at, Probes: map[time.Duration]*Probe{},
		sharedKeys: map[string]bool{}, keyCharges: map[string]int32{}}
	for _, pj := range sc.Workload.Jobs {
		if pj.IdempotencyKey != "" {
			c.sharedKeys[pj.IdempotencyKey] = true
		}
	}
	watched := map[string]bool{}
	// An expectation that reads when retries come due (a busiest window)
	// has the ledger keep them, in every driver: a drill that kept none
	// would judge a window of no retries.
	wantDue := false
	for _, e := range sc.Expect {
		if w, ok := e.(interface{ WantsDue() bool }); ok && w.WantsDue() {
			wantDue = true
		}
		if j, ok := e.(interface{ Jobs() []string }); ok {
			for _, id := range j.Jobs() {
				watched[id] = true
			}
		}
		if p, ok := e.(interface{ Probes() []time.Duration }); ok {
			for _, at := range p.Probes() {
				c.Probes[at] = nil
			}
		}
	}
	c.Ledger = NewLedger(sc.Seed, start, now, sc.System.Retry.MaxAttempts, watched)
	c.Breakers = NewBreakers(c.Ledger)
	c.Secrets = NewSecrets(c.Ledger, sc.Invariants.Secrets, live)
	c.Pages = NewPages(c.Ledger, sc.Invariants.PageWithin, RepeatEvery(sc.AlertConfig(func(string) alert.Sink { return nil })), at)
	for _, t := range sc.Workload.Tasks { // the ledger's task index is the workload's
		c.Ledger.Task(t.Name)
	}
	if wantDue {
		c.Ledger.WatchDue()
	}
	return c
}

// ArmProbes schedules the snapshots the expectations asked for, each at
// its offset, reading the breakers' states then.
func (c *Checks) ArmProbes(breakers iter.Seq2[string, degrade.State]) {
	for _, at := range slices.Sorted(maps.Keys(c.Probes)) {
		c.at(at, func() { c.Probes[at] = TakeProbe(c.now(), c.Ledger, breakers) })
	}
}

// Charge notes a call that charged job r's payment at dependency dep: a
// payment is the job's, or its key's when explicit jobs share keys.
func (c *Checks) Charge(r *Record, key string, dep scenarios.DependencySpec) {
	var shared *int32
	if key != "" && c.sharedKeys[key] {
		n := c.keyCharges[key]
		shared = &n
		defer func() { c.keyCharges[key] = n }()
	}
	c.Ledger.Charge(r, key, dep.Name, dep.IgnoresIdempotencyKeys, shared)
}

// Attempt notes job r's attempt (the fault that struck it, the true class
// of its failure, its outcome), and reports whether it failed critically:
// a page of it is then due (Critical).
func (c *Checks) Attempt(r *Record, fault string, truth classify.Class, o *worker.Outcome) bool {
	c.Ledger.Attempt(r, fault, truth, o)
	return o.Err != nil && (truth == classify.Critical || o.Verdict.Class == classify.Critical)
}

// Critical notes job r's critical failure now, whose alert fingerprint is
// fp.
func (c *Checks) Critical(r *Record, fp string) { c.Pages.Critical(c.now(), r.ID(), fp) }

// Deliver notes a notification receiver accepted now.
func (c *Checks) Deliver(receiver string, n alert.Notification) {
	c.Secrets.Notification(receiver, n)
	c.Pages.Deliver(c.now(), receiver, n)
}

// End is what a driver tells Result of how its run ended and of what only
// it knows.
type End struct {
	// Errs stopped the run early (an interruption: scenarios.ErrLimit or a
	// canceled context; otherwise an error).
	Errs []error
	// Made counts the jobs created; Events the store's moves.
	Made, Events int64
	// Steps are the operator steps carried out.
	Steps []reports.Step
	// Store is the run's store as the oracle reads it, at the end.
	Store Store
	// Counted hears the counts of the last look at the store (a history
	// records them); nil: no one.
	Counted func(queue.Counts, dlq.Stats)
	// Entry returns a job's DLQ entry at the end of the run.
	Entry func(id string) (dlq.Entry, bool)
	// Alerter is the alerter's own counts (nil: unknown); Budget the retry
	// policy's (nil: unknown).
	Alerter *AlerterCounts
	Budget  *retry.Stats
	// Faults are the faults' reports.
	Faults []reports.Fault
	// Observed is what evidence the run has (the zero value: everything).
	Observed Observed
	// Misses are the windows of faults aimed at a state that never struck.
	Misses []Miss
	// Calls are when each dependency was called, when an expectation
	// asked for them.
	Calls map[string][]time.Duration
}

// interruption says whether err stopped the run on purpose (a limit, a
// cancellation) rather than failing it.
func interruption(err error) bool {
	return errors.Is(err, scenarios.ErrLimit) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// Result checks the run's end (every job created accounted for, the
// store's counts and DLQ listing against the ledger, unless the run
// stopped early) and assembles its report: the ledger's, the pages', the
// breakers' and the secrets' findings, the invariants' verdicts, the
// expectations and the run's verdict.
func (c *Checks) Result(ctx context.Context, e End) *reports.Result {
	led, sc, now := c.Ledger, c.sc, c.now()
	if len(e.Errs) == 0 {
		led.CheckCreated(e.Made)
		if cn, st, ok := Reconcile(ctx, led, e.Store, true); ok && e.Counted != nil {
			e.Counted(cn, st)
		}
	}
	res := &reports.Result{
		ReportVersion: reports.ReportVersion,
		Scenario:      sc.Name,
		Description:   sc.Description,
		Seed:          sc.Seed,
		DurationMs:    sc.Duration.Milliseconds(),
		EndedAtMs:     now.Milliseconds(),
		Expectations:  []reports.Expectation{},
		Violations:    []reports.Violation{},
		Ledger:        led.Report(),
		Alerts:        c.Pages.Alerts,
		Breakers:      c.Breakers.Transitions(),
		Confusion:     led.Confusion(),
		Steps:         e.Steps,
		Series:        c.Sampler.Series,
		Engine:        reports.Engine{Events: e.Events, Jobs: e.Made, MaxQueue: c.Sampler.MaxQueue},
	}
	res.Series.IntervalMs = sc.Sample.Milliseconds()
	if p := sc.Workers.Processes; p > 1 && sc.System.External == nil {
		res.Engine.Processes, res.Engine.Slots = p, sc.Workers.Count
	}
	if res.Alerts.ByReceiver == nil {
		res.Alerts.ByReceiver = map[string]int64{}
	}
	if res.Alerts.PagesByFingerprint == nil {
		res.Alerts.PagesByFingerprint = map[string]int64{}
	}
	if res.Alerts.Deliveries == nil {
		res.Alerts.Deliveries = []reports.Delivery{}
	}
	if res.Breakers == nil {
		res.Breakers = []reports.Transition{}
	}
	if res.Confusion == nil {
		res.Confusion = []reports.Confusion{}
	}
	if res.Steps == nil {
		res.Steps = []reports.Step{}
	}
	res.Ledger.Lost = Lost(ctx, led, e.Store, e.Made)
	if st := e.Alerter; st != nil {
		res.Alerts.Raised, res.Alerts.Deduplicated, res.Alerts.Inhibited = st.Raised, st.Deduplicated, st.Inhibited
		res.Alerts.Redelivered, res.Alerts.Repeats, res.Alerts.Resolved = st.Retried, st.Repeats, st.Resolved
	}
	if st := e.Budget; st != nil {
		res.Ledger.BudgetDelayed, res.Ledger.BudgetExceeded = int64(st.BudgetDelayed), int64(st.BudgetExceeded)
	}
	res.Fates = led.Fates()
	res.DLQ = DLQSummary(ctx, e.Store, led.start)
	res.Faults = e.Faults

	// The run's end: reached, or stopped by an error or an interruption.
	stopped := ""
	if len(e.Errs) > 0 {
		res.Verdict = reports.Interrupted
		for _, err := range e.Errs {
			if !interruption(err) {
				res.Verdict = reports.Errored
			}
		}
		res.Error = errors.Join(e.Errs...).Error()
		stopped = "the run errored at " + fmtOffset(now)
		if res.Verdict == reports.Interrupted {
			stopped = "the run was interrupted at " + fmtOffset(now)
		}
	}
	c.Secrets.Result(res, e.Entry)
	res.Violations = append(res.Violations, led.Violations()...)
	res.Invariants = InvariantResults(led, e.Observed, c.Pages.PageWithin(), stopped)
	if ir, ok := c.Secrets.InvariantResult(stopped); ok {
		res.Invariants = append(res.Invariants, ir)
	}
	res.Violations = ObservedViolations(res)
	deps := make([]string, len(sc.Workload.Tasks))
	for i, t := range sc.Workload.Tasks {
		deps[i] = t.Dependency
	}
	o := &Observation{Result: res, Ledger: led, Probes: c.Probes, Calls: e.Calls, TaskDependencies: deps, Entry: e.Entry, Observed: e.Observed,
		Processes: sc.Workers.Processes}
	if b := sc.System.Retry.Budget; !b.Disabled {
		o.Budget = &b
	}
	c.Pages.Observe(o)
	Conclude(res, sc, o, e.Misses, stopped)
	return res
}
