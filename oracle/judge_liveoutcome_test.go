package oracle_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
)

// The live judge's attempt-outcome-is-the-move and no-lease-left-expired,
// on histories of the reference worker made by hand: each judged from
// the attempts' reports against the store's stream, or said not
// observable — never passed unchecked.
var _ = Describe("The live judge's attempt and lease checks (oracle.Judge of a drill's history)", func() {
	scenario := func() scenarios.Scenario {
		return scenarios.Scenario{
			Name: "live", Seed: 1, Duration: 2 * time.Minute,
			Workload: scenarios.WorkloadSpec{Tasks: []scenarios.TaskSpec{{Name: "export"}}},
			Workers:  scenarios.WorkersSpec{Count: 2, LeaseTTL: 30 * time.Second},
		}
	}
	ev := func(at int64, id, from, to, reason string, attempts int) oracle.Event {
		return oracle.Event{AtMs: at, JobID: id, Task: "export", From: from, To: to, Reason: reason, Attempts: attempts}
	}
	att := func(at, end int64, worker, id, action, result string) oracle.Attempt {
		return oracle.Attempt{AtMs: at, EndMs: end, Worker: worker, JobID: id, Action: action, Result: result}
	}
	// history: one job j1, enqueued at 0 and leased at 100, then events,
	// attempts; the store is looked at last at 119s.
	history := func(events []oracle.Event, attempts []oracle.Attempt) *oracle.History {
		all := append([]oracle.Event{ev(0, "j1", "none", "queued", "enqueued", 0), ev(100, "j1", "queued", "in-flight", "leased", 0)}, events...)
		return &oracle.History{
			Version: oracle.HistoryVersion, Scenario: "live", Seed: 1, TimeScale: 1, DurationMs: 120_000, EndedMs: 120_000,
			Workers:   []string{"w1", "w2"},
			Jobs:      []oracle.Job{{AtMs: 0, ID: "j1", Task: "export", Outcome: "ok"}},
			Events:    all,
			Snapshots: []oracle.Snapshot{{AtMs: 119_000, AfterEvents: len(all)}},
			Attempts:  attempts,
		}
	}
	judge := func(h *oracle.History) *reports.Result {
		res, err := oracle.Judge(context.Background(), scenario(), h)
		Expect(err).NotTo(HaveOccurred())
		return res
	}
	result := func(r *reports.Result, name string) reports.InvariantResult {
		for _, inv := range r.Invariants {
			if inv.Name == name {
				return inv
			}
		}
		return reports.InvariantResult{Name: name, Verdict: "absent"}
	}
	messages := func(r *reports.Result, inv string) []string {
		var out []string
		for _, v := range r.Violations {
			if v.Invariant == inv {
				out = append(out, v.Message)
			}
		}
		return out
	}

	It("passes an attempt whose outcome is its job's move, saying what it judged", func() {
		r := judge(history([]oracle.Event{ev(200, "j1", "in-flight", "succeeded", "succeeded", 1)},
			[]oracle.Attempt{att(100, 200, "w1", "j1", "succeed", "applied")}))
		Expect(result(r, oracle.InvOutcomeIsMove)).To(And(HaveField("Verdict", reports.Passed), HaveField("Note", HavePrefix("judged from the history: 1 attempts"))))
		Expect(result(r, oracle.InvNoLeaseLeftExpired)).To(And(HaveField("Verdict", reports.Passed), HaveField("Note", HavePrefix("judged from the history: 1 leases"))))
	})

	It("passes a graceful stop's release: the attempt told to release, the job queued again", func() {
		r := judge(history([]oracle.Event{ev(200, "j1", "in-flight", "queued", "released", 0), ev(300, "j1", "queued", "in-flight", "leased", 0),
			ev(400, "j1", "in-flight", "succeeded", "succeeded", 1)},
			[]oracle.Attempt{att(100, 200, "w1", "j1", "release", "applied"), att(300, 400, "w2", "j1", "succeed", "applied")}))
		Expect(messages(r, oracle.InvOutcomeIsMove)).To(BeEmpty())
		Expect(result(r, oracle.InvOutcomeIsMove)).To(And(HaveField("Verdict", reports.Passed), HaveField("Note", HavePrefix("judged from the history: 2 attempts"))))
	})

	It("fails an attempt whose store made another move than its outcome", func() {
		r := judge(history([]oracle.Event{ev(200, "j1", "in-flight", "scheduled", "retry", 1)},
			[]oracle.Attempt{att(100, 200, "w1", "j1", "succeed", "applied")}))
		Expect(result(r, oracle.InvOutcomeIsMove).Verdict).To(Equal(reports.Failed))
		Expect(messages(r, oracle.InvOutcomeIsMove)).To(ConsistOf(ContainSubstring("job j1: its attempt (worker w1) was told succeeded (to be acked), but the store moved it in-flight → scheduled (retry)")))
	})

	It("fails the late answer of a lease that was recovered, applied instead of fenced off", func() {
		r := judge(history([]oracle.Event{ev(40_000, "j1", "in-flight", "queued", "lease-expired", 0), ev(40_500, "j1", "queued", "in-flight", "leased", 0),
			ev(41_000, "j1", "in-flight", "succeeded", "succeeded", 1)},
			[]oracle.Attempt{att(100, 41_000, "w1", "j1", "succeed", "applied")}))
		Expect(messages(r, oracle.InvOutcomeIsMove)).To(ConsistOf(ContainSubstring("the late answer of an attempt whose lease was lost")))
	})

	It("fails a success fenced off while its lease was still its own", func() {
		r := judge(history(nil, []oracle.Attempt{att(100, 5_000, "w1", "j1", "succeed", "fenced")}))
		Expect(messages(r, oracle.InvOutcomeIsMove)).To(ConsistOf(ContainSubstring("succeeded under a lease that was still its own")))
	})

	It("fails a job left in flight under a lease that expired and was never recovered", func() {
		r := judge(history(nil, []oracle.Attempt{att(100, 5_000, "w1", "j1", "retry", "failed")}))
		Expect(result(r, oracle.InvNoLeaseLeftExpired).Verdict).To(Equal(reports.Failed))
		Expect(messages(r, oracle.InvNoLeaseLeftExpired)).To(ConsistOf(ContainSubstring("job j1 is still in flight")))
	})

	It("passes a lease recovered in time after its attempt's store call failed", func() {
		r := judge(history([]oracle.Event{ev(35_000, "j1", "in-flight", "queued", "lease-expired", 0)},
			[]oracle.Attempt{att(100, 5_000, "w1", "j1", "retry", "failed")}))
		Expect(result(r, oracle.InvNoLeaseLeftExpired).Verdict).To(Equal(reports.Passed))
	})

	It("says both are not observable, never passed, when no worker reported an attempt (a worker killed mid-attempt)", func() {
		r := judge(history([]oracle.Event{ev(35_000, "j1", "in-flight", "queued", "lease-expired", 0)}, nil))
		for _, name := range []string{oracle.InvOutcomeIsMove, oracle.InvNoLeaseLeftExpired} {
			Expect(result(r, name)).To(And(HaveField("Verdict", reports.NotObservable), HaveField("Note", HavePrefix("not observable in this drill"))), name)
		}
	})
})
