package oracle_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
)

// A drill's verdict is the system's, never the machine's: a drill that
// fell behind its scale, did not run the scenario's workload, or lost
// evidence of a job it saw is inconclusive — never a PASS, and never a
// FAIL of the system unless an invariant (the system's at any pace) was
// violated.
var _ = Describe("The live judge's pace and evidence (oracle.Judge)", func() {
	scenario := func() scenarios.Scenario {
		return scenarios.Scenario{
			Name: "live-pace", Seed: 1, Duration: time.Minute,
			Workload: scenarios.WorkloadSpec{Tasks: []scenarios.TaskSpec{{Name: "export"}}},
			Workers:  scenarios.WorkersSpec{Count: 1, LeaseTTL: 30 * time.Second},
			Expect:   []scenarios.Expectation{scenarios.Count{Metric: scenarios.Succeeded, Op: scenarios.Exactly, N: 1}},
		}
	}
	ev := func(at int64, from, to, reason string, attempts int) oracle.Event {
		return oracle.Event{AtMs: at, JobID: "j1", Task: "export", From: from, To: to, Reason: reason, Attempts: attempts}
	}
	// history: j1 created, leased and succeeded; one job planned.
	history := func() *oracle.History {
		evs := []oracle.Event{ev(0, "none", "queued", "enqueued", 0), ev(100, "queued", "in-flight", "leased", 0), ev(200, "in-flight", "succeeded", "succeeded", 1)}
		return &oracle.History{Version: oracle.HistoryVersion, Scenario: "live-pace", Seed: 1, TimeScale: 20, DurationMs: 60_000, EndedMs: 60_000,
			Workers: []string{"w1"}, Alerter: &oracle.AlerterCounts{}, Planned: 1,
			Jobs:      []oracle.Job{{AtMs: 0, ID: "j1", Task: "export", Outcome: "ok"}},
			Events:    evs,
			Snapshots: []oracle.Snapshot{{AtMs: 59_000, AfterEvents: len(evs)}},
			Attempts:  []oracle.Attempt{{AtMs: 100, EndMs: 200, Worker: "w1", JobID: "j1", Action: "succeed", Result: "applied"}},
			Slip: &oracle.Slip{ToleranceMs: 25, Parts: []oracle.SlipPart{
				{What: "producer", Samples: 1, P99Ms: 1, MaxMs: 1}, {What: "timers", Samples: 100, P99Ms: 2, MaxMs: 3}}}}
	}
	judge := func(h *oracle.History) *reports.Result {
		res, err := oracle.Judge(context.Background(), scenario(), h)
		Expect(err).NotTo(HaveOccurred())
		return res
	}

	It("passes a drill that kept its pace, and shows its slip", func() {
		r := judge(history())
		Expect(r.Verdict).To(Equal(reports.Passed), "%v %v", r.Error, r.Warnings)
		Expect(r.Live.Slip).NotTo(BeNil())
		Expect(r.Live.Slip.Parts).To(HaveLen(2))
		Expect(r.Warnings).To(ContainElement(ContainSubstring("workload: 1 of the scenario's 1 jobs created")))
	})

	It("says inconclusive, naming the part and its figures, when a part's p99 slip is past the tolerance — even where every expectation held", func() {
		h := history()
		h.Slip.Parts[1].P99Ms, h.Slip.Parts[1].Over = 40, 9
		r := judge(h)
		Expect(r.Verdict).To(Equal(reports.Inconclusive))
		Expect(r.Error).To(And(ContainSubstring("timers p99 40.0ms"), ContainSubstring("tolerance of 25.0ms")))
	})

	It("says inconclusive, not FAIL, when an expectation fails on a drill that fell behind", func() {
		h := history()
		h.Slip.Parts[0].P99Ms = 300
		sc := scenario()
		sc.Expect = []scenarios.Expectation{scenarios.Count{Metric: scenarios.Succeeded, Op: scenarios.Exactly, N: 2}}
		r, err := oracle.Judge(context.Background(), sc, h)
		Expect(err).NotTo(HaveOccurred())
		Expect(r.Violations).To(BeEmpty())
		Expect(r.Expectations).To(ContainElement(HaveField("Verdict", reports.Failed)))
		Expect(r.Verdict).To(Equal(reports.Inconclusive))
	})

	It("keeps a FAIL when an invariant was violated, whatever the pace (the system's at any pace)", func() {
		h := history()
		h.Slip.Parts[0].P99Ms = 300
		// A move after success: illegal at any pace.
		h.Events = append(h.Events, ev(300, "succeeded", "queued", "requeued", 1))
		h.Snapshots[0].AfterEvents = len(h.Events)
		r := judge(h)
		Expect(r.Violations).NotTo(BeEmpty())
		Expect(r.Verdict).To(Equal(reports.Failed))
		Expect(r.Warnings).To(ContainElement(ContainSubstring("the verdict stands")))
	})

	It("says inconclusive when a job was created after the fault window it was due in, naming it; on time within the tolerance", func() {
		sc := scenario()
		sc.Workload.Tasks[0].Dependency = "api"
		sc.Faults = []faults.Fault{{Name: "blip", Target: faults.Target{Kind: faults.Dependency, Name: "api"}, Model: faults.Outage{Code: 503},
			Schedule: faults.During(0, 500*time.Millisecond)}}
		h := history()
		// Due at 0, created at +600ms: the 500ms blip it was due in had
		// closed (the tolerance, 25ms at scale 20, is 500ms of scenario time).
		h.Jobs[0].AtMs, h.Jobs[0].LagMs = 600, 600
		h.Events = []oracle.Event{ev(600, "none", "queued", "enqueued", 0), ev(700, "queued", "in-flight", "leased", 0), ev(800, "in-flight", "succeeded", "succeeded", 1)}
		h.Attempts[0].AtMs, h.Attempts[0].EndMs = 700, 800
		r, err := oracle.Judge(context.Background(), sc, h)
		Expect(err).NotTo(HaveOccurred())
		Expect(r.Verdict).To(Equal(reports.Inconclusive), "%s %v %v", r.Error, r.Violations, r.Expectations)
		Expect(r.Error).To(And(ContainSubstring("1 jobs too late"), ContainSubstring("j1, due at +0s, created at +600ms, after fault blip's window, which closed at +500ms")))
		h.Jobs[0].AtMs, h.Jobs[0].LagMs = 450, 450
		h.Events[0].AtMs = 450
		r, err = oracle.Judge(context.Background(), sc, h)
		Expect(err).NotTo(HaveOccurred())
		Expect(r.Verdict).NotTo(Equal(reports.Inconclusive), r.Error)
	})

	It("passes when only the store ran slow, every job was made in time and every expectation held; stays inconclusive when one failed", func() {
		h := history()
		h.Slip.Parts = append(h.Slip.Parts, oracle.SlipPart{What: "store", Samples: 1, P99Ms: 60, MaxMs: 60, Over: 1})
		r := judge(h)
		Expect(r.Verdict).To(Equal(reports.Passed), r.Error)
		Expect(r.Warnings).To(ContainElement(And(ContainSubstring("store p99 60.0ms"), ContainSubstring("the verdict stands"))))
		sc := scenario()
		sc.Expect = []scenarios.Expectation{scenarios.Count{Metric: scenarios.Succeeded, Op: scenarios.Exactly, N: 2}}
		r, err := oracle.Judge(context.Background(), sc, h)
		Expect(err).NotTo(HaveOccurred())
		Expect(r.Verdict).To(Equal(reports.Inconclusive))
	})

	It("says inconclusive when the drill did not create the scenario's workload", func() {
		h := history()
		h.Planned = 3
		r := judge(h)
		Expect(r.Verdict).To(Equal(reports.Inconclusive))
		Expect(r.Error).To(ContainSubstring("created 1 of the scenario's 3 jobs"))
	})

	It("never passes a drill whose history lacks a job a gateway served and a worker reported (the store's stream read short): it names the missing evidence", func() {
		h := history()
		h.Calls = []oracle.Call{{AtMs: 150, Dependency: "crm", JobID: "ghost-7", Status: 200, Outcome: "ok"}}
		h.Attempts = append(h.Attempts, oracle.Attempt{AtMs: 150, EndMs: 160, Worker: "w1", JobID: "ghost-7", Action: "succeed", Result: "applied"})
		r := judge(h)
		Expect(r.Verdict).To(Equal(reports.Inconclusive))
		Expect(r.Error).To(And(ContainSubstring("missing evidence"), ContainSubstring("1 seen by a fault gateway (e.g. ghost-7)"), ContainSubstring("1 seen by a worker's report (e.g. ghost-7)")))
	})

	It("names the jobs still pending after the settle's bound", func() {
		h := history()
		h.Events = h.Events[:2]
		h.Snapshots[0].AfterEvents = 2
		h.Attempts = nil
		h.SettleMs, h.SettledMs = 120_000, -1
		r := judge(h)
		Expect(r.Warnings).To(ContainElement(And(ContainSubstring("still pending after the settle of 1m0s"), ContainSubstring("j1 (in-flight)"))))
	})
})
