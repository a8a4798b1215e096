package oracle_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/layout"
	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
)

// The black-box oracle, on histories made by hand: what a drill of a
// team's own system would have observed.
var _ = Describe("The black-box oracle (oracle.Judge of an external drill's history)", func() {
	scenario := func() scenarios.Scenario {
		return scenarios.Scenario{
			Name: "black-box", Seed: 1, Duration: 10 * time.Second,
			Workload:     scenarios.WorkloadSpec{Tasks: []scenarios.TaskSpec{{Name: "charge", Dependency: "payments"}}},
			Workers:      scenarios.WorkersSpec{Count: 1},
			Dependencies: []scenarios.DependencySpec{{Name: "payments", Payment: true}},
			System: scenarios.SystemSpec{External: &scenarios.ExternalSpec{
				Command: &layout.Command{Path: "/bin/true"},
				Inject:  layout.Inject{Preset: layout.PresetSeed},
				DLQ:     layout.DLQ{Preset: layout.PresetSeed},
			}},
			Invariants: scenarios.InvariantsSpec{PageWithin: time.Minute},
		}
	}
	item := func(id string) oracle.DLQItem { return oracle.DLQItem{JobID: id, Source: "dead_letter[0]"} }
	entry := func(id, sev string) layout.Entry {
		return layout.Entry{Source: "dead_letter[0]", JobID: id, Severity: sev,
			Raw: []byte(`{"job":{"id":"` + id + `"},"error":"402 declined","retries":1,"failed_at":"2026-12-06T10:00:00Z","severity":"` + sev + `"}`)}
	}
	call := func(at int64, id, outcome string, status int, class string) oracle.Call {
		return oracle.Call{AtMs: at, Dependency: "payments", JobID: id, Status: status, Outcome: outcome, Class: class, TookEffect: outcome == "ok"}
	}
	// history: j-ok succeeds; j-declined is declined and dead-lettered;
	// j-auth gets a 401, is dead-lettered with severity high and paged.
	history := func() *oracle.History {
		return &oracle.History{
			Version: oracle.HistoryVersion, Scenario: "black-box", Seed: 1, TimeScale: 1, DurationMs: 10_000, EndedMs: 10_000,
			Workers: []string{"w1"},
			Jobs: []oracle.Job{{AtMs: 0, ID: "j-ok", Task: "charge", Outcome: "ok"}, {AtMs: 100, ID: "j-declined", Task: "charge", Outcome: "ok"},
				{AtMs: 200, ID: "j-auth", Task: "charge", Outcome: "ok"}},
			Calls: []oracle.Call{call(10, "j-ok", "ok", 200, ""), call(110, "j-declined", "error", 402, "permanent"),
				call(210, "j-auth", "error", 401, "critical")},
			Deliveries: []oracle.Delivery{{AtMs: 2_000, Receiver: "slack", Attempt: 1, Accepted: true, Alerts: []oracle.Alert{{Summary: "401 from payments"}}}},
			External: &oracle.ExternalRun{Copies: 1, Alerts: true, DrainMs: 1_000, SettledMs: 10_500,
				Reads:   []oracle.DLQRead{{AtMs: 0}, {AtMs: 500, Added: []oracle.DLQItem{item("j-declined"), item("j-auth")}, Total: 2}},
				Entries: []layout.Entry{entry("j-declined", "low"), entry("j-auth", "high")}},
		}
	}
	judge := func(sc scenarios.Scenario, h *oracle.History) *reports.Result {
		res, err := oracle.Judge(context.Background(), sc, h)
		Expect(err).NotTo(HaveOccurred())
		return res
	}
	verdicts := func(r *reports.Result) map[string]reports.Verdict {
		m := map[string]reports.Verdict{}
		for _, inv := range r.Invariants {
			m[inv.Name] = inv.Verdict
		}
		return m
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

	It("lists the planted-secrets invariant as not observable, never passed, when the scenario plants secrets", func() {
		sc := scenario()
		sc.Invariants.Secrets = []string{"4242 4242 4242 4242"}
		r := judge(sc, history())
		Expect(verdicts(r)).To(HaveKeyWithValue(oracle.InvNoSecretLeaves, reports.NotObservable))
		Expect(verdicts(judge(scenario(), history()))).NotTo(HaveKey(oracle.InvNoSecretLeaves))
	})

	It("passes a system that handled every job, and lists what it cannot see as not observable, never passed", func() {
		r := judge(scenario(), history())
		Expect(r.Verdict).To(Equal(reports.Passed), "%v", r.Violations)
		v := verdicts(r)
		for _, name := range []string{oracle.InvConservation, oracle.InvNotBoth, oracle.InvNoMoveAfterDone, oracle.InvOneDLQEntry, oracle.InvDLQNeverShrinks, oracle.InvNoDoubleCharge,
			oracle.InvNoRetryOfFinal, oracle.InvNoRerunAfterDead, oracle.InvCriticalPaged, oracle.InvOnePage, oracle.InvDLQSeverity, oracle.InvDLQEntryComplete, oracle.InvAttempts} {
			Expect(v).To(HaveKeyWithValue(name, reports.Passed), name)
		}
		for _, name := range []string{oracle.InvLegalMove, oracle.InvTransientRetried, oracle.InvBreakerLegal, oracle.InvOutcomeIsMove, oracle.InvNoLeaseLeftExpired} {
			Expect(v).To(HaveKeyWithValue(name, reports.NotObservable), name)
		}
		Expect(r.Ledger.Created).To(BeEquivalentTo(3))
		Expect(r.Ledger.Succeeded).To(BeEquivalentTo(1))
		Expect(r.Ledger.DeadLettered).To(BeEquivalentTo(2))
		Expect(r.Alerts.Pages).To(BeEquivalentTo(1))
	})

	It("names a dead letter trimmed from the DLQ: the DLQ shrank, and the job is lost", func() {
		h := history()
		h.External.Reads = append(h.External.Reads, oracle.DLQRead{AtMs: 900, Removed: []oracle.DLQItem{item("j-declined")}, Total: 1})
		h.External.Entries = h.External.Entries[1:]
		r := judge(scenario(), h)
		Expect(r.Verdict).To(Equal(reports.Failed))
		Expect(messages(r, oracle.InvDLQNeverShrinks)).To(ConsistOf(ContainSubstring("job j-declined's entry left the DLQ by +900ms")))
		Expect(messages(r, oracle.InvConservation)).To(ConsistOf(And(ContainSubstring("job j-declined was lost"), ContainSubstring("then left it"))))
		Expect(r.Live.External.Trimmed).To(ConsistOf("j-declined"))
		Expect(r.Live.External.Lost).To(ConsistOf("j-declined"))
	})

	It("allows a shrink the scenario declares, and an entry moved between lists across two reads", func() {
		h := history()
		h.External.Reads = append(h.External.Reads, oracle.DLQRead{AtMs: 900, Removed: []oracle.DLQItem{item("j-declined")}, Total: 1},
			oracle.DLQRead{AtMs: 1000, Added: []oracle.DLQItem{{JobID: "j-declined", Source: "dlq:low[0]"}}, Total: 2})
		Expect(judge(scenario(), h).Verdict).To(Equal(reports.Passed))

		h = history()
		h.External.Reads = append(h.External.Reads, oracle.DLQRead{AtMs: 900, Removed: []oracle.DLQItem{item("j-declined")}, Total: 1})
		sc := scenario()
		sc.System.External.DLQShrinks = []string{scenarios.ShrinkEviction}
		r := judge(sc, h)
		Expect(verdicts(r)).To(HaveKeyWithValue(oracle.InvDLQNeverShrinks, reports.Passed))
	})

	It("fails two entries for one job that stay, not one caught half-way through a move", func() {
		h := history()
		h.External.Reads = append(h.External.Reads, oracle.DLQRead{AtMs: 900, Added: []oracle.DLQItem{{JobID: "j-declined", Source: "dlq:low[0]"}}, Total: 3},
			oracle.DLQRead{AtMs: 1000, Removed: []oracle.DLQItem{item("j-declined")}, Total: 2})
		Expect(verdicts(judge(scenario(), h))).To(HaveKeyWithValue(oracle.InvOneDLQEntry, reports.Passed))

		h = history()
		h.External.Reads = append(h.External.Reads, oracle.DLQRead{AtMs: 900, Added: []oracle.DLQItem{{JobID: "j-declined", Source: "dlq:low[0]"}}, Total: 3})
		h.External.Entries = append(h.External.Entries, entry("j-declined", "low"))
		Expect(messages(judge(scenario(), h), oracle.InvOneDLQEntry)).To(ConsistOf(ContainSubstring("job j-declined has two entries in the DLQ")))
	})

	It("fails a declined card called again, unless a copy of the system died in between (a redelivery)", func() {
		h := history()
		h.Calls = append(h.Calls, call(300, "j-declined", "error", 402, "permanent"))
		Expect(messages(judge(scenario(), h), oracle.InvNoRetryOfFinal)).To(ConsistOf(And(ContainSubstring("job j-declined was answered 402 (permanent)"),
			ContainSubstring("called again 1 time(s)"))))

		h.Processes = []oracle.ProcessEvent{{AtMs: 200, Worker: "w1", Kind: "killed"}}
		r := judge(scenario(), h)
		Expect(verdicts(r)).To(HaveKeyWithValue(oracle.InvNoRetryOfFinal, reports.Passed))
		Expect(r.Warnings).To(ContainElement(ContainSubstring("a redelivery, not judged a retry")))

		// A stall past the lease redelivers as a crash does.
		h.Processes = []oracle.ProcessEvent{{AtMs: 200, Worker: "w1", Kind: "stalled"}}
		r = judge(scenario(), h)
		Expect(verdicts(r)).To(HaveKeyWithValue(oracle.InvNoRetryOfFinal, reports.Passed))
		Expect(r.Warnings).To(ContainElement(ContainSubstring("with copy w1 stalled at +200ms in between: a redelivery")))
	})

	It("matches a declared auto-retry to the calls it causes: a dead letter requeued and failing again between two reads is legal, undeclared it is a run of a dead letter", func() {
		// j-declined (dead-lettered by +500ms) runs again at +2s and +2.1s and is
		// back in the DLQ by the next read: the reads saw no change.
		h := history()
		h.Calls = append(h.Calls, call(2_000, "j-declined", "error", 503, "transient"), call(2_100, "j-declined", "error", 402, "permanent"))
		r := judge(scenario(), h)
		Expect(messages(r, oracle.InvNoRerunAfterDead)).To(ConsistOf(ContainSubstring("job j-declined was in the DLQ from +500ms and still ran: 2 call(s) after")))
		Expect(messages(r, oracle.InvNoRetryOfFinal)).To(ConsistOf(ContainSubstring("job j-declined was answered 402 (permanent) at +110ms and called again 2 time(s)")))

		sc := scenario()
		sc.System.External.DLQShrinks = []string{scenarios.ShrinkAutoRetry}
		r = judge(sc, h)
		Expect(verdicts(r)).To(And(HaveKeyWithValue(oracle.InvNoRerunAfterDead, reports.Passed), HaveKeyWithValue(oracle.InvNoRetryOfFinal, reports.Passed)))
		Expect(r.Verdict).To(Equal(reports.Passed))
		Expect(r.Warnings).To(ContainElement(And(ContainSubstring("1 job(s) ran again after their dead letter"), ContainSubstring("matched to the declared requeue (auto-retry)"),
			ContainSubstring("j-declined (2 call(s) from +2s)"))))

		// Declared, but retried before its dead letter can have been
		// written (before the read that did not see it): still a retry of a
		// final answer.
		h = history()
		h.External.Reads = []oracle.DLQRead{{AtMs: 0}, {AtMs: 300, Added: []oracle.DLQItem{item("j-auth")}, Total: 1},
			{AtMs: 500, Added: []oracle.DLQItem{item("j-declined")}, Total: 2}}
		h.Calls = append(h.Calls, call(150, "j-declined", "error", 402, "permanent"))
		Expect(messages(judge(sc, h), oracle.InvNoRetryOfFinal)).To(ConsistOf(ContainSubstring("job j-declined was answered 402 (permanent) at +110ms and called again 1 time(s)")))
	})

	It("names the cap an undeclared shrink looks like, with its number: entries leaving a list from its tail", func() {
		h := history()
		h.External.Reads = append(h.External.Reads,
			oracle.DLQRead{AtMs: 900, Removed: []oracle.DLQItem{{JobID: "old-1", Source: "ns:dlq:low[9999]"}}, Total: 10000},
			oracle.DLQRead{AtMs: 950, Removed: []oracle.DLQItem{{JobID: "old-2", Source: "ns:dlq:low[9998]"}, {JobID: "old-3", Source: "ns:dlq:low[9999]"}}, Total: 10000})
		r := judge(scenario(), h)
		var note string
		for _, ir := range r.Invariants {
			if ir.Name == oracle.InvDLQNeverShrinks {
				note = ir.Note
			}
		}
		Expect(note).To(ContainSubstring("3 entries left ns:dlq:low from its tail, the deepest at position 9,999: a cap of 10,000 entries (such as LTRIM ns:dlq:low 0 9999)"))

		By("removals from the head are no cap")
		h = history()
		h.External.Reads = append(h.External.Reads, oracle.DLQRead{AtMs: 900, Removed: []oracle.DLQItem{{JobID: "a", Source: "ns:dlq:low[0]"}, {JobID: "b", Source: "ns:dlq:low[9]"}}})
		for _, ir := range judge(scenario(), h).Invariants {
			if ir.Name == oracle.InvDLQNeverShrinks {
				Expect(ir.Note).NotTo(ContainSubstring("a cap of"))
			}
		}
	})

	It("fails a dead letter without its error, attempt count or time, naming what it lacks and where it was looked for", func() {
		h := history()
		h.External.Entries[0].Raw = []byte(`{"job":{"id":"j-declined"},"severity":"low"}`)
		r := judge(scenario(), h)
		Expect(verdicts(r)).To(HaveKeyWithValue(oracle.InvDLQEntryComplete, reports.Failed))
		Expect(messages(r, oracle.InvDLQEntryComplete)).To(ConsistOf(
			ContainSubstring("job j-declined's DLQ entry (dead_letter[0]) lacks its error (at error), its attempt count (at retries), when it failed (at failed_at)")))
	})

	Describe("retries, from the call log", func() {
		// j-retry fails transiently at +200ms and is called again at gap.
		withRetry := func(gap int64) *oracle.History {
			h := history()
			h.Jobs = append(h.Jobs, oracle.Job{AtMs: 150, ID: "j-retry", Task: "charge", Outcome: "ok"})
			h.Calls = append(h.Calls, call(200, "j-retry", "error", 503, "transient"), call(200+gap, "j-retry", "ok", 200, ""))
			return h
		}
		declared := func(p scenarios.ExternalPolicy) scenarios.Scenario {
			sc := scenario()
			sc.System.External.Policy = &p
			return sc
		}

		It("with no policy declared, fails a hot loop (a call within 100ms of a failed one) and says only that rule was judged", func() {
			r := judge(scenario(), withRetry(3))
			Expect(verdicts(r)).To(HaveKeyWithValue(oracle.InvAttempts, reports.Failed))
			Expect(messages(r, oracle.InvAttempts)).To(ConsistOf(And(ContainSubstring("job j-retry was called again 3ms after its call at +200ms failed (1 such retry)"),
				ContainSubstring("a retry without backoff (a hot loop)"))))
			Expect(verdicts(judge(scenario(), withRetry(150)))).To(HaveKeyWithValue(oracle.InvAttempts, reports.Passed))
			h := withRetry(3)
			h.Processes = []oracle.ProcessEvent{{AtMs: 201, Worker: "w1", Kind: "killed"}}
			Expect(verdicts(judge(scenario(), h))).To(HaveKeyWithValue(oracle.InvAttempts, reports.Passed), "a redelivery after a crash is the queue's, not a hot loop")
			for _, ir := range r.Invariants {
				if ir.Name == oracle.InvTransientRetried {
					Expect(ir.Verdict).To(Equal(reports.NotObservable))
					Expect(ir.Note).To(ContainSubstring("the system declares no retry policy (system.external.policy"))
				}
			}
		})

		It("with a policy declared, holds the system to its minBackoff and maxAttempts", func() {
			sc := declared(scenarios.ExternalPolicy{MaxAttempts: 2, MinBackoff: time.Second})
			Expect(messages(judge(sc, withRetry(500)), oracle.InvAttempts)).To(ConsistOf(ContainSubstring("the declared policy waits at least 1s")))
			Expect(verdicts(judge(sc, withRetry(1000)))).To(HaveKeyWithValue(oracle.InvAttempts, reports.Passed))

			h := withRetry(1000)
			h.Calls[len(h.Calls)-1] = call(1200, "j-retry", "error", 503, "transient")
			h.Calls = append(h.Calls, call(2300, "j-retry", "ok", 200, ""))
			Expect(messages(judge(sc, h), oracle.InvAttempts)).To(ConsistOf(ContainSubstring("job j-retry was called 3 times by +2.3s (200), past the declared maxAttempts 2")))

			By("full jitter: minBackoff 0 allows any wait")
			Expect(verdicts(judge(declared(scenarios.ExternalPolicy{MaxAttempts: 3}), withRetry(3)))).To(HaveKeyWithValue(oracle.InvAttempts, reports.Passed))
		})

		It("with a policy declared, fails a transient failure dead-lettered before its attempts were used", func() {
			h := history()
			h.Jobs = append(h.Jobs, oracle.Job{AtMs: 150, ID: "j-503", Task: "charge", Outcome: "ok"})
			h.Calls = append(h.Calls, call(200, "j-503", "error", 503, "transient"))
			h.External.Reads = append(h.External.Reads, oracle.DLQRead{AtMs: 300, Added: []oracle.DLQItem{{JobID: "j-503", Source: "dead_letter[0]"}}, Total: 3})
			h.External.Entries = append(h.External.Entries, entry("j-503", "low"))
			r := judge(declared(scenarios.ExternalPolicy{MaxAttempts: 3}), h)
			Expect(verdicts(r)).To(HaveKeyWithValue(oracle.InvTransientRetried, reports.Failed))
			Expect(messages(r, oracle.InvTransientRetried)).To(ConsistOf(ContainSubstring("job j-503 was dead-lettered after 1 attempt(s), the last at +200ms answered 503 (transient), although the declared policy gives it 3")))
		})

		It("with jitter declared, fails five jobs that failed at one instant and were tried again together twice running — one round alone may be a poll", func() {
			h := history()
			for i := range 5 {
				id := fmt.Sprintf("j-herd-%d", i)
				h.Jobs = append(h.Jobs, oracle.Job{AtMs: 150, ID: id, Task: "charge", Outcome: "ok"})
				h.Calls = append(h.Calls, call(200+int64(i), id, "error", 503, "transient"), call(1500+int64(i), id, "error", 503, "transient"),
					call(2800+int64(i), id, "ok", 200, ""))
			}
			sc := declared(scenarios.ExternalPolicy{MaxAttempts: 3, MinBackoff: time.Second, Jitter: true})
			Expect(messages(judge(sc, h), oracle.InvAttempts)).To(ConsistOf(ContainSubstring("5 jobs failed within 10ms at +200ms, were all called again within 10ms at +1.5s, failed together and were all called again within 10ms at +2.8s")))
			// The second round spread: the first was a poll's batch.
			for i := range 5 {
				h.Calls[len(h.Calls)-13+3*i].AtMs = 2800 + 150*int64(i)
			}
			Expect(verdicts(judge(sc, h))).To(HaveKeyWithValue(oracle.InvAttempts, reports.Passed))
		})

		It("with honoursRetryAfter declared, fails a call sooner than the Retry-After its job was answered", func() {
			h := history()
			h.Jobs = append(h.Jobs, oracle.Job{AtMs: 250, ID: "j-limited", Task: "charge", Outcome: "ok"})
			limited := call(300, "j-limited", "error", 429, "rate_limited")
			limited.RetryAfterMs = 2_000
			h.Calls = append(h.Calls, limited, call(1_300, "j-limited", "ok", 200, ""))
			sc := declared(scenarios.ExternalPolicy{MaxAttempts: 4, HonoursRetryAfter: true})
			Expect(messages(judge(sc, h), oracle.InvAttempts)).To(ConsistOf(And(ContainSubstring("job j-limited was answered 429 (rate_limited) at +300ms with Retry-After 2s and called again 1s later"),
				ContainSubstring("honours Retry-After"))))
			h.Calls[len(h.Calls)-1].AtMs = 2_400
			Expect(verdicts(judge(sc, h))).To(HaveKeyWithValue(oracle.InvAttempts, reports.Passed))
			// Undeclared, the hint is the system's to take or leave.
			h.Calls[len(h.Calls)-1].AtMs = 1_300
			Expect(verdicts(judge(declared(scenarios.ExternalPolicy{MaxAttempts: 4}), h))).To(HaveKeyWithValue(oracle.InvAttempts, reports.Passed))
		})

		It("with full jitter declared (no floor), fails retries that nearly all came at once (a hot loop), and passes waits spread as a jitter spreads them", func() {
			h := history()
			for i := range 6 {
				id := fmt.Sprintf("j-loop-%d", i)
				at := 1_000 * int64(i+1)
				h.Jobs = append(h.Jobs, oracle.Job{AtMs: at - 10, ID: id, Task: "charge", Outcome: "ok"})
				h.Calls = append(h.Calls, call(at, id, "error", 503, "transient"), call(at+20, id, "ok", 200, ""))
			}
			sc := declared(scenarios.ExternalPolicy{MaxAttempts: 4, Jitter: true})
			Expect(messages(judge(sc, h), oracle.InvAttempts)).To(ConsistOf(And(ContainSubstring("6 of the drill's 6 retries came within 100ms of the failure before them"),
				ContainSubstring("job j-loop-0, again 20ms after its call at +1s failed"), ContainSubstring("a hot loop"))))
			// Full jitter: one wait in six next to nothing.
			for i := 1; i < 6; i++ {
				h.Calls[len(h.Calls)-12+2*i+1].AtMs += 300 * int64(i)
			}
			Expect(verdicts(judge(sc, h))).To(HaveKeyWithValue(oracle.InvAttempts, reports.Passed))
		})
	})

	It("fails a job run again after it succeeded, charged or not — unless a copy died or stalled, or the store was struck, in between (a redelivery)", func() {
		h := history()
		h.Calls = append(h.Calls, oracle.Call{AtMs: 400, Dependency: "payments", JobID: "j-ok", Outcome: "replayed", Status: 200})
		r := judge(scenario(), h)
		Expect(verdicts(r)).To(HaveKeyWithValue(oracle.InvNoMoveAfterDone, reports.Failed))
		Expect(messages(r, oracle.InvNoMoveAfterDone)).To(ConsistOf(
			ContainSubstring("job j-ok succeeded at +10ms (payments answered 200) and was run again: 1 more call(s) (+400ms)")))

		h.Processes = []oracle.ProcessEvent{{AtMs: 200, Worker: "w1", Kind: "stalled"}}
		r = judge(scenario(), h)
		Expect(verdicts(r)).To(HaveKeyWithValue(oracle.InvNoMoveAfterDone, reports.Passed))
		Expect(r.Warnings).To(ContainElement(ContainSubstring("copy w1 stalled at +200ms in between: a redelivery")))
	})

	It("fails a charge taken twice for one key, naming the key, both calls and both answers", func() {
		h := history()
		h.Calls[0].Key, h.Calls[0].Charge = "k-ok", 1
		h.Calls = append(h.Calls, oracle.Call{AtMs: 20, Dependency: "payments", JobID: "j-ok", Key: "k-ok", Outcome: "ok", Status: 200, TookEffect: true, Charge: 2})
		Expect(messages(judge(scenario(), h), oracle.InvNoDoubleCharge)).To(ConsistOf(And(
			ContainSubstring("key k-ok charged 2 times by payments: at +10ms (job j-ok, answered 200) and again at +20ms (job j-ok, answered 200)"),
			ContainSubstring("the earlier call was answered as a success, yet the payment ran again"),
			Not(ContainSubstring("although its answer failed")))))

		By("an earlier charge whose answer failed: a retry charged again")
		h = history()
		h.Calls[0] = oracle.Call{AtMs: 10, Dependency: "payments", JobID: "j-ok", Key: "k-ok", Outcome: "error", Status: 503, Class: "transient", Fault: "flaky", TookEffect: true, Charge: 1}
		h.Calls = append(h.Calls, oracle.Call{AtMs: 20, Dependency: "payments", JobID: "j-ok", Key: "k-ok", Outcome: "ok", Status: 200, TookEffect: true, Charge: 2})
		Expect(messages(judge(scenario(), h), oracle.InvNoDoubleCharge)).To(ConsistOf(And(
			ContainSubstring("at +10ms (job j-ok, answered 503 (transient) from fault flaky)"),
			ContainSubstring("the earlier call took effect although its answer failed, and the retry charged again"))))
	})

	It("fails a critical failure never paged — or says it is not observable when the system was given no receiver", func() {
		h := history()
		h.FrozenMs = 61_000 // watched past the 401's page deadline (+210ms + 1m)
		h.Deliveries = nil
		Expect(messages(judge(scenario(), h), oracle.InvCriticalPaged)).To(ConsistOf(ContainSubstring("was never paged")))

		h.External.Alerts = false
		Expect(verdicts(judge(scenario(), h))).To(HaveKeyWithValue(oracle.InvCriticalPaged, reports.NotObservable))
	})

	It("counts as pages only what a paging receiver accepted and no severity word calls low: a chat receiver declared not paging, a plain-text [low] or WARNING", func() {
		sc := scenario()
		sc.System.External.Receivers = []scenarios.ExternalReceiver{{Name: "team-chat", Paging: false}, {Name: "pager", Paging: true}}
		h := history()
		h.FrozenMs = 61_000
		plain := func(at int64, rcv, text string) oracle.Delivery {
			return oracle.Delivery{AtMs: at, Receiver: rcv, Attempt: 1, Accepted: true, Alerts: []oracle.Alert{{Summary: text, Status: "firing", Count: 1}}}
		}
		for _, d := range []oracle.Delivery{plain(2_000, "team-chat", "payments down: 401 for job j-auth"), plain(2_000, "slack", "[low] a card was declined"),
			plain(2_000, "slack", ":warning: WARNING - 401s from payments")} {
			h.Deliveries = []oracle.Delivery{d}
			r := judge(sc, h)
			Expect(messages(r, oracle.InvCriticalPaged)).To(ConsistOf(ContainSubstring("no paging receiver accepted a notification within 1m0s")), "%+v", d)
			Expect(r.Alerts.Pages).To(BeZero())
		}
		h.Deliveries = []oracle.Delivery{plain(2_000, "pager", "CRITICAL: 401 from payments"), plain(3_000, "team-chat", "401 from payments")}
		r := judge(sc, h)
		Expect(verdicts(r)).To(HaveKeyWithValue(oracle.InvCriticalPaged, reports.Passed))
		Expect(r.Alerts.Pages).To(BeEquivalentTo(1))
		Expect(r.Invariants).To(ContainElement(And(HaveField("Name", oracle.InvCriticalPaged), HaveField("Note", ContainSubstring("not paging, by declaration: team-chat")))))

		Expect(oracle.TextSeverity("[high] http-401 on payments")).To(Equal("high"))
		Expect(oracle.TextSeverity("Info: nightly batch done")).To(Equal("low"))
		Expect(oracle.TextSeverity("payments: 401 (high)")).To(BeEmpty(), "a word later in the text says nothing")
	})

	It("judges no page whose deadline fell after the drill stopped watching, and says what drain would judge it", func() {
		h := history()
		h.Deliveries = nil
		h.FrozenMs = 11_000
		r := judge(scenario(), h)
		Expect(verdicts(r)).To(HaveKeyWithValue(oracle.InvCriticalPaged, reports.NotObservable))
		Expect(r.Invariants).To(ContainElement(And(HaveField("Name", oracle.InvCriticalPaged), HaveField("Note", And(
			ContainSubstring("not paged by +11s, when the drill stopped watching"), ContainSubstring("the critical failure of payments at +210ms (deadline +1m0.21s)"),
			ContainSubstring("a system.external.drain of at least 51s waits for it"))))))
		Expect(r.Verdict).To(Equal(reports.Passed))
	})

	It("fails a critical failure's entry of low severity, and judges none where no entry carries one", func() {
		h := history()
		h.External.Entries[1].Severity = "low"
		Expect(messages(judge(scenario(), h), oracle.InvDLQSeverity)).To(ConsistOf(ContainSubstring("job j-auth was dead-lettered after 401 (critical)")))

		h.External.Entries[0].Severity, h.External.Entries[1].Severity = "", ""
		Expect(verdicts(judge(scenario(), h))).To(HaveKeyWithValue(oracle.InvDLQSeverity, reports.NotObservable))
	})

	It("judges no job's calls when none carries its job's ID (X-Faultline-Job), saying so, and warns of the calls that carry none", func() {
		h := history()
		for i := range h.Calls {
			h.Calls[i].JobID = ""
		}
		r := judge(scenario(), h)
		for _, inv := range []string{oracle.InvConservation, oracle.InvNoMoveAfterDone, oracle.InvNoRetryOfFinal, oracle.InvAttempts, oracle.InvNoDoubleCharge} {
			Expect(verdicts(r)).To(HaveKeyWithValue(inv, reports.NotObservable), inv)
		}
		Expect(r.Invariants).To(ContainElement(And(HaveField("Name", oracle.InvConservation), HaveField("Note", ContainSubstring("X-Faultline-Job header")))))
		Expect(r.Ledger.Lost).To(BeZero(), "no job is called lost for calls the drill could not attribute")
		Expect(r.Violations).To(BeEmpty())

		h = history()
		h.Calls[0].JobID = ""
		Expect(judge(scenario(), h).Warnings).To(ContainElement(ContainSubstring("1 of the 3 calls to the dependencies carried no job ID (X-Faultline-Job)")))
	})

	It("does not call lost a job whose injection timed out and that the system never showed", func() {
		h := history()
		h.Jobs = append(h.Jobs, oracle.Job{AtMs: 300, ID: "j-unknown", Task: "charge", Outcome: "unknown"})
		r := judge(scenario(), h)
		Expect(r.Verdict).To(Equal(reports.Passed))
		Expect(r.Warnings).To(ContainElement(ContainSubstring("job j-unknown's injection timed out")))
	})

	It("judges a hand-edited history in time order, whatever order its lists are in", func() {
		h := history()
		h.Calls = append(h.Calls, call(300, "j-declined", "error", 402, "permanent"))
		h.Calls[0], h.Calls[3] = h.Calls[3], h.Calls[0]
		Expect(messages(judge(scenario(), h), oracle.InvNoRetryOfFinal)).To(HaveLen(1))
	})

	It("evaluates the expectations it can count from outside and lists the others as not observable", func() {
		sc := scenario()
		sc.Expect = []scenarios.Expectation{
			scenarios.Count{Metric: scenarios.Lost, Op: scenarios.Exactly, N: 0},
			scenarios.Count{Metric: scenarios.DeadLettered, Task: "charge", Op: scenarios.Exactly, N: 2},
			scenarios.Count{Metric: scenarios.Succeeded, Op: scenarios.Exactly, N: 2},
			scenarios.Count{Metric: scenarios.Retried, Op: scenarios.Exactly, N: 0},
		}
		r := judge(sc, history())
		Expect(r.Expectations).To(HaveLen(4))
		Expect(r.Expectations[0].Verdict).To(Equal(reports.Passed))
		Expect(r.Expectations[1].Verdict).To(Equal(reports.Passed), r.Expectations[1].Actual)
		Expect(r.Expectations[2]).To(And(HaveField("Verdict", reports.Failed), HaveField("Actual", "1")))
		Expect(r.Expectations[3]).To(And(HaveField("Verdict", reports.NotObservable), HaveField("Actual", ContainSubstring("not observable: it reads the store's disposition events: the system's moves between its own queues happen inside it"))))
		Expect(r.Verdict).To(Equal(reports.Failed))
	})

	It("fails a job still in the system's queue after the drain (a worker that never reads it), and judges nothing of an interrupted drill", func() {
		h := history()
		h.Jobs = append(h.Jobs, oracle.Job{AtMs: 300, ID: "j-queued", Task: "charge", Outcome: "ok"})
		h.External.Queued, h.External.QueueObservable = []string{"j-queued"}, true
		Expect(messages(judge(scenario(), h), oracle.InvConservation)).To(ConsistOf(ContainSubstring("job j-queued is still in the system's queue")))

		h.External.Queued = nil // now it is lost: but the drill was interrupted
		h.Interrupted = "interrupted (context canceled)"
		r := judge(scenario(), h)
		Expect(r.Verdict).To(Equal(reports.Interrupted))
		Expect(r.Violations).To(BeEmpty())
		Expect(r.Live.External.Lost).To(BeEmpty())
		Expect(r.Invariants).To(HaveEach(HaveField("Verdict", BeElementOf(reports.Skipped, reports.NotObservable))))
	})

	It("fails a fault that requires hits and never hit, as an expectation the report shows", func() {
		h := history()
		h.Faults = []reports.Fault{{Name: "declines", Target: "dependency/payments", Model: "card-declined", Hits: 0}}
		sc := scenario()
		sc.Faults = nil
		r := judge(sc, h)
		Expect(r.Verdict).To(Equal(reports.Passed))
		Expect(r.Warnings).To(ContainElement(ContainSubstring("fault declines (card-declined on dependency/payments) never hit")))
	})

	It("refuses, before any drill, a placeholder that names no dependency or receiver of the drill", func() {
		sc := scenario()
		sc.System.External.Command.Env = map[string]string{"PAY": "{dependency:paymnts}", "PAGE": "{receiver:pager}", "OK": "{dependency:payments} {receiver:slack}"}
		err := sc.WithDefaults().Validate()
		Expect(err).To(MatchError(And(ContainSubstring(`{dependency:paymnts} names no dependency of this drill (dependencies: payments); did you mean "payments"?`),
			ContainSubstring("{receiver:pager} names no receiver of this drill"))))
		Expect(err.Error()).NotTo(ContainSubstring("{receiver:slack}"))
	})
})
