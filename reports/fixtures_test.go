package reports_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/worker"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
	"github.com/faultline/faultline/sim"
)

// The runs the specs and the golden files are made of: real results of
// built-in scenarios on fixed seeds.
const (
	passingScenario = "dlq-basics"
	failingScenario = "payment-challenge"
	fixedSeed       = 1
)

// authAsTransient is the default classifier with one bug: it calls a
// critical failure (a revoked API key) transient, so the job is retried
// instead of paging a person, and payment-challenge fails.
type authAsTransient struct{ inner *classify.Classifier }

var _ worker.Classifier = authAsTransient{}

func (c authAsTransient) Classify(err error, scope classify.Scope) classify.Classification {
	v := c.inner.Classify(err, scope)
	if v.Class == classify.Critical {
		v.Class, v.Severity = classify.Transient, classify.Medium
	}
	return v
}

// runBuiltin runs a built-in scenario on the fixed seed, annotated as the
// CLI would, and returns its report's JSON.
func runBuiltin(name string, opts ...sim.Option) ([]byte, error) {
	l, err := scenarios.LoadBuiltin(name)
	if err != nil {
		return nil, err
	}
	opts = append(opts, sim.WithSeed(fixedSeed), sim.WithReproduce(fmt.Sprintf("faultline run %s --seed %d", name, fixedSeed)))
	res, err := sim.Run(context.Background(), l.Scenario, opts...)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", name, err)
	}
	scenarios.Annotate(res, l, "builtin:"+name)
	return res.JSON()
}

// The runs, made once per process: their JSON, decoded afresh for each
// spec so that a spec may change its copy.
var (
	passingJSON = sync.OnceValues(func() ([]byte, error) { return runBuiltin(passingScenario) })
	failingJSON = sync.OnceValues(func() ([]byte, error) {
		return runBuiltin(failingScenario, sim.WithClassifier(func(sim.Env) (worker.Classifier, error) {
			return authAsTransient{classify.Default()}, nil
		}))
	})
	// fixedJSON is payment-challenge with the default classifier: the
	// same scenario and seed as failingJSON, passing.
	fixedJSON = sync.OnceValues(func() ([]byte, error) { return runBuiltin(failingScenario) })
)

// decoded returns a fresh copy of a run.
func decoded(run func() ([]byte, error)) *reports.Result {
	GinkgoHelper()
	data, err := run()
	Expect(err).NotTo(HaveOccurred())
	var r reports.Result
	Expect(json.Unmarshal(data, &r)).To(Succeed())
	return &r
}

// passingRun is dlq-basics on seed 1: it passes.
func passingRun() *reports.Result {
	GinkgoHelper()
	r := decoded(passingJSON)
	Expect(r.Verdict).To(Equal(reports.Passed), "the passing fixture")
	return r
}

// failingRun is payment-challenge on seed 1 with the lenient classifier:
// expectations fail, no-retry-of-permanent-or-critical is violated, and
// critical-failure-paged (the auth failure was retried, so nobody was
// paged).
func failingRun() *reports.Result {
	GinkgoHelper()
	r := decoded(failingJSON)
	Expect(r.Verdict).To(Equal(reports.Failed), "the failing fixture")
	Expect(r.Violations).NotTo(BeEmpty(), "the failing fixture")
	return r
}

// fixedRun is payment-challenge on seed 1 with the default classifier.
func fixedRun() *reports.Result {
	GinkgoHelper()
	r := decoded(fixedJSON)
	Expect(r.Verdict).To(Equal(reports.Passed), "payment-challenge with the default classifier")
	return r
}

// erroredRun is the passing run as if its store had failed.
func erroredRun() *reports.Result {
	GinkgoHelper()
	r := passingRun()
	r.Verdict = reports.Errored
	r.Error = "requeue: dlq store: dial tcp 127.0.0.1:6379: connect: connection refused"
	for i := range r.Expectations {
		r.Expectations[i].Actual, r.Expectations[i].Verdict = "not evaluated: the run errored at +5m0s", reports.Skipped
	}
	for i := range r.Invariants {
		r.Invariants[i].Verdict, r.Invariants[i].Note = reports.Skipped, "not checked to the end: the run errored at +5m0s"
	}
	return r
}

// interruptedRun is the passing run as if Ctrl-C had stopped it at +1m:
// its expectations not evaluated, its invariants not checked to the end.
func interruptedRun() *reports.Result {
	GinkgoHelper()
	r := passingRun()
	r.Verdict = reports.Interrupted
	r.Error = "run stopped at +1m0s: context canceled"
	r.EndedAtMs = 60_000
	for i := range r.Expectations {
		r.Expectations[i].Actual, r.Expectations[i].Verdict = "not evaluated: the run was interrupted at +1m0s", reports.Skipped
	}
	for i := range r.Invariants {
		r.Invariants[i].Verdict, r.Invariants[i].Note = reports.Skipped, "not checked to the end: the run was interrupted at +1m0s"
	}
	return r
}

// inconclusiveSlip is the error of inconclusiveRun: what slipped, and by
// how much.
const inconclusiveSlip = "the harness could not keep pace with time scale 50: producer slipped 812ms at p99 (1500.5ms at most) past the 100ms tolerance, 37 of 1200 samples over"

// inconclusiveRun is the passing run as a drill at time scale 50 whose
// harness fell behind: the producer slipped past the tolerance, the
// timers and the worker start did not. Its expectations were judged (and
// held), and its verdict is inconclusive.
func inconclusiveRun() *reports.Result {
	GinkgoHelper()
	r := passingRun()
	r.Verdict, r.Error = reports.Inconclusive, inconclusiveSlip
	r.Live = &reports.Live{TimeScale: 50, StartedAt: "2026-12-01T10:00:00Z", Workers: 2, Processes: map[string]int{"started": 2},
		Latencies: []reports.Latency{},
		Slip: &reports.Slip{ToleranceMs: 100, Parts: []reports.SlipPart{
			{What: "producer", Samples: 1200, P99Ms: 812, MaxMs: 1500.5, Over: 37},
			{What: "timers", Samples: 300, P99Ms: 4.25, MaxMs: 9, Over: 0},
			{What: "worker start", Samples: 2, P99Ms: 40, MaxMs: 40, Over: 0},
		}}}
	return r
}

// manyViolations is the failing run with 250 double charges, of which the
// report lists the first reports.MaxListedViolations.
func manyViolations() *reports.Result {
	GinkgoHelper()
	r := failingRun()
	for i := range reports.MaxListedViolations {
		r.Violations = append(r.Violations, reports.Violation{Invariant: "no-double-charge", JobID: fmt.Sprintf("charge-%d", i),
			Message: fmt.Sprintf("the payment of job charge-%d was charged 2 times: the job has no idempotency key", i), AtMs: int64(i) * 1000, Seed: 1,
			Trail: []string{"+0s  none → queued (enqueued), attempts 0"}})
	}
	for i := range r.Invariants {
		if r.Invariants[i].Name == "no-double-charge" {
			r.Invariants[i].Verdict, r.Invariants[i].Violations = reports.Failed, 250
		}
	}
	return r
}

// failedExpectations counts r's expectations that did not pass.
func failedExpectations(r *reports.Result) int {
	n := 0
	for _, e := range r.Expectations {
		if e.Verdict != reports.Passed {
			n++
		}
	}
	return n
}

// largeResult fabricates a run as big as a long drill: 10,000 samples of
// every series, 500 deliveries, a full DLQ listing, many transitions.
func largeResult() *reports.Result {
	const points, deliveries = 10_000, 500
	r := &reports.Result{
		ReportVersion: reports.ReportVersion, ToolVersion: "bench", Scenario: "large", Description: "A fabricated large run.",
		ScenarioFile: "large.yaml", ScenarioHash: "sha256:00", Seed: 7, Verdict: reports.Failed,
		DurationMs: points * 1000, EndedAtMs: points * 1000, Reproduce: "faultline run large.yaml --seed 7",
		Ledger: reports.Ledger{Created: 1_000_000, Succeeded: 990_000, DeadLettered: 10_000, Attempts: 1_300_000, Retries: 300_000},
		DLQ:    reports.DLQ{Total: 10_000, ByStatus: map[string]int{"failed": 10_000}, BySeverity: map[string]int{"high": 100, "medium": 9_900}, Truncated: true},
		Alerts: reports.Alerts{Notifications: deliveries, Pages: deliveries / 5, ByReceiver: map[string]int64{"on-call": deliveries / 5, "team": deliveries * 4 / 5},
			PagesByFingerprint: map[string]int64{}},
		Series: reports.Series{IntervalMs: 30_000, AtMs: []int64{0, 30_000, 60_000}, Queued: []int64{0, 40, 12}, InFlight: []int64{0, 2, 0},
			Scheduled: []int64{0, 0, 0}, Fallback: []int64{0, 0, 0}, DLQBySeverity: map[string][]int64{"high": {0, 2, 2}}, Breakers: map[string][]string{}},
		Config: map[string]any{"apiVersion": "faultline/v1", "duration": "2h46m40s"},
	}
	for i := range 40 {
		r.Expectations = append(r.Expectations, reports.Expectation{Name: fmt.Sprintf("dead-letters with task t%d = 0", i), Expected: "= 0", Actual: fmt.Sprint(i % 3), Verdict: []reports.Verdict{reports.Passed, reports.Failed, reports.Failed}[i%3]})
	}
	r.Violations = []reports.Violation{{Invariant: "no-double-charge", Message: "the payment of job pay-9 was charged 2 times", JobID: "pay-9", AtMs: 5000, Seed: 7,
		Trail: []string{"+4s  none → queued (enqueued), attempts 0", "+4s  queued → in-flight (leased), attempts 0", "+5s  attempt failed"}}}
	for i := range 20 {
		r.Ledger.ByTask = append(r.Ledger.ByTask, reports.TaskTotals{Task: fmt.Sprintf("t%d", i), Created: 50_000, Succeeded: 49_500, DeadLettered: 500})
		r.Ledger.DeadLetteredBy = append(r.Ledger.DeadLetteredBy, reports.DeadLetterCount{Task: fmt.Sprintf("t%d", i), Severity: "medium", Class: "transient", Count: 500})
	}
	for i := range 100 {
		r.DLQ.Entries = append(r.DLQ.Entries, reports.DLQEntry{JobID: fmt.Sprintf("job-%05d", i), Task: "t1", Status: "failed", Class: "transient", Severity: "medium",
			Rule: "http-5xx", Attempts: 5, Reason: "exhausted", Error: "http 503 Service Unavailable", FirstFailedAtMs: int64(i) * 1000, LastFailedAtMs: int64(i)*1000 + 900})
		r.Fates = append(r.Fates, reports.JobFate{JobID: fmt.Sprintf("job-%05d", i), Task: "t1", State: "dead-lettered", LastMove: "dead-lettered", EverDeadLettered: true})
	}
	for i := range deliveries {
		sev := "medium"
		if i%5 == 0 {
			sev = "high"
		}
		r.Alerts.Deliveries = append(r.Alerts.Deliveries, reports.Delivery{AtMs: int64(i) * 20_000, Receiver: "team", Fingerprint: fmt.Sprintf("alertname=job-failed,task=t%d", i%20),
			Name: "job-failed", Severity: sev, Status: "firing", Count: i, Summary: fmt.Sprintf("t%d job failed on api: http 503", i%20), Attempt: 1})
	}
	for i := range 1000 {
		from, to := "closed", "open"
		if i%2 == 1 {
			from, to = "open", "closed"
		}
		r.Breakers = append(r.Breakers, reports.Transition{AtMs: int64(i) * 10_000, Breaker: "api", From: from, To: to, Reason: "failure rate 0.6 ≥ 0.5"})
	}
	r.Faults = []reports.Fault{{Name: "flaky", Target: "dependency/api", Model: "http-status", Class: "transient", Hits: 300_000, LastHitMs: points * 1000, Windows: [][2]int64{{0, points * 1000}}}}
	r.Confusion = []reports.Confusion{{True: "transient", Total: 300_000, Said: map[string]int64{"transient": 300_000}, Routes: map[string]int64{"retry": 290_000, "dead-letter": 10_000}}}
	r.Steps = []reports.Step{{AtMs: 60_000, Kind: "requeue", Detail: "matched 100, requeued 100, skipped 0"}}
	s := &r.Series
	s.Breakers["api"] = make([]string, points)
	for _, sev := range []string{"high", "medium", "low"} {
		s.DLQBySeverity[sev] = make([]int64, points)
	}
	for i := range points {
		s.AtMs = append(s.AtMs, int64(i)*1000)
		s.Queued = append(s.Queued, int64(i%97))
		s.InFlight = append(s.InFlight, int64(i%64))
		s.Scheduled = append(s.Scheduled, int64(i%31))
		s.Fallback = append(s.Fallback, int64(i%7))
		for _, sev := range []string{"high", "medium", "low"} {
			s.DLQBySeverity[sev][i] = int64(i / 100)
		}
		s.Breakers["api"][i] = []string{"closed", "open", "half-open"}[i%3]
	}
	r.Engine = reports.Engine{Events: 5_000_000, Jobs: 1_000_000, MaxQueue: 97, Processes: 8, Slots: 16}
	return r
}

// The secrets the black-box fixture's command line carries in its
// arguments: no writer may let them out.
const (
	blackBoxRedisPw = "h6RedisPw"
	blackBoxAPIKey  = "sk_live_h6StripeKey123"
)

// blackBoxRun fabricates a failing black-box drill of a team's own worker:
// 12 jobs lost (conservation), 2 DLQ entries trimmed by no declared
// mechanism (dlq-never-shrinks), two invariants and one expectation not
// observable from outside, and the system under test in Live.External.
func blackBoxRun() *reports.Result {
	r := &reports.Result{
		ReportVersion: reports.ReportVersion, Scenario: "charge-queue", Description: "The team's charge worker keeps every job through a crash.",
		ScenarioFile: "drills/charge-queue.yaml", ScenarioHash: "sha256:0b1ac", Seed: 7, Verdict: reports.Failed,
		DurationMs: 60_000, EndedAtMs: 60_000, Reproduce: "faultline drill drills/charge-queue.yaml --seed 7",
		Expectations: []reports.Expectation{
			{Name: "dead-lettered with task charge = 2", Expected: "= 2", Actual: "2", Verdict: reports.Passed},
			{Name: "lost = 0", Expected: "= 0", Actual: "12", Verdict: reports.Failed},
			{Name: "requeues = 0", Expected: "-", Actual: "not observable from outside the system (a black-box drill counts created, succeeded, dead-lettered, lost, pending, charges and notifications, by task at most)", Verdict: reports.NotObservable},
		},
		Invariants: []reports.InvariantResult{
			{Name: "conservation", Verdict: reports.Failed, Violations: 12},
			{Name: "one-dlq-entry-per-job", Verdict: reports.Passed},
			{Name: "no-double-charge", Verdict: reports.Passed},
			{Name: "not-both-succeeded-and-dead-lettered", Verdict: reports.Passed},
			{Name: "dlq-never-shrinks", Verdict: reports.Failed, Violations: 2, Note: "the scenario declares no mechanism that shrinks the DLQ"},
			{Name: "legal-move", Verdict: reports.NotObservable, Note: "the system's moves between its own queues happen inside it; the drill sees the calls, the alerts and the DLQ"},
			{Name: "attempts-within-policy", Verdict: reports.NotObservable, Note: "the system's retry policy is its own; the calls of every job are in the call log"},
		},
		Ledger: reports.Ledger{Created: 200, Succeeded: 186, DeadLettered: 2, Lost: 12, Attempts: 215, Charges: 186,
			ByTask:         []reports.TaskTotals{{Task: "charge", Created: 200, Succeeded: 186, DeadLettered: 2}},
			DeadLetteredBy: []reports.DeadLetterCount{{Task: "charge", Severity: "high", Class: "permanent", Count: 2}}},
		Fates: []reports.JobFate{},
		DLQ: reports.DLQ{Total: 2, ByStatus: map[string]int{"failed": 2}, BySeverity: map[string]int{"high": 2},
			Entries: []reports.DLQEntry{{JobID: "charge-3", Task: "charge", Status: "failed", Class: "permanent", Severity: "high", Attempts: 1, Reason: "permanent", Error: "card declined"},
				{JobID: "charge-5", Task: "charge", Status: "failed", Class: "permanent", Severity: "high", Attempts: 1, Reason: "permanent", Error: "card declined"}}},
		Alerts:    reports.Alerts{ByReceiver: map[string]int64{}, PagesByFingerprint: map[string]int64{}, Deliveries: []reports.Delivery{}},
		Breakers:  []reports.Transition{},
		Confusion: []reports.Confusion{},
		Steps:     []reports.Step{},
		Faults:    []reports.Fault{{Name: "crash-a-copy", Target: "worker/w1", Model: "crash", Hits: 1, FirstHitMs: 20_000, LastHitMs: 20_000, Windows: [][2]int64{{20_000, 20_001}}}},
		Series: reports.Series{IntervalMs: 30_000, AtMs: []int64{0, 30_000, 60_000}, Queued: []int64{0, 40, 12}, InFlight: []int64{0, 2, 0},
			Scheduled: []int64{0, 0, 0}, Fallback: []int64{0, 0, 0}, DLQBySeverity: map[string][]int64{"high": {0, 2, 2}}, Breakers: map[string][]string{}},
		Live: &reports.Live{TimeScale: 1, StartedAt: "2026-12-01T10:00:00Z", Workers: 2, Processes: map[string]int{"started": 2, "killed": 1, "restarted": 1},
			Latencies: []reports.Latency{},
			External: &reports.External{
				Command: "./bin/charge-worker --redis redis://:" + blackBoxRedisPw + "@127.0.0.1:6390/0 --api-key=" + blackBoxAPIKey,
				Copies:  2, Inject: "seed preset: LPUSH charge:default", DLQ: "redis lists charge:dead_letter",
				DrainMs: 30_000, SettledAtMs: 64_250, DLQReads: 61, DLQReadErrors: 1,
				Trimmed: []string{"charge-7", "charge-9"}, TrimmedCount: 2,
			}},
	}
	for i := range 12 {
		id := fmt.Sprintf("charge-%d", 40+i)
		r.Live.External.Lost = append(r.Live.External.Lost, id)
		r.Violations = append(r.Violations, reports.Violation{Invariant: "conservation", JobID: id, AtMs: 90_000, Seed: 7,
			Message: "job " + id + " was injected and never seen again: not succeeded, not in the DLQ, not queued at the end",
			Trail:   []string{"+20s  injected (LPUSH charge:default)", "+20.1s  call charge by w1", "+20.2s  w1 killed (crash-a-copy)"}})
	}
	for _, id := range r.Live.External.Trimmed {
		r.Violations = append(r.Violations, reports.Violation{Invariant: "dlq-never-shrinks", JobID: id, AtMs: 45_000, Seed: 7,
			Message: "the DLQ entry of job " + id + " left the DLQ: the scenario declares no mechanism that removes one"})
	}
	return r
}

// blackBoxPassing is the black-box drill as if nothing was lost or
// trimmed: its only non-passes are not observable, and it passes.
func blackBoxPassing() *reports.Result {
	r := blackBoxRun()
	r.Verdict, r.Violations = reports.Passed, []reports.Violation{}
	r.Ledger.Succeeded, r.Ledger.Lost = 198, 0
	r.Ledger.ByTask[0].Succeeded = 198
	r.Expectations[1].Actual, r.Expectations[1].Verdict = "0", reports.Passed
	for i := range r.Invariants {
		if r.Invariants[i].Verdict == reports.Failed {
			r.Invariants[i].Verdict, r.Invariants[i].Violations = reports.Passed, 0
		}
	}
	r.Live.External.Lost, r.Live.External.Trimmed, r.Live.External.TrimmedCount, r.Live.External.DLQReadErrors = nil, nil, 0, 0
	// Every job settled, then the drain waited for a page still owed.
	r.Live.External.Ready = "EXISTS {namespace}:ready:{worker}: ready 840ms after the system started"
	r.Live.External.PageWait = &reports.PageWait{Dependency: "payments", IncidentMs: 20_000, DeadlineMs: 80_000, FromMs: 65_250, UntilMs: 66_000, PagedMs: 66_000}
	return r
}
