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
		Series: reports.Series{IntervalMs: 1000, DLQBySeverity: map[string][]int64{}, Breakers: map[string][]string{}},
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
	r.Engine = reports.Engine{Events: 5_000_000, Jobs: 1_000_000, MaxQueue: 97}
	return r
}
