package sim_test

import (
	"context"
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/memstore"
	"github.com/faultline/faultline/reference/store/redisstore/redistest"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
	"github.com/faultline/faultline/sim"
)

// fullDLQ is a run of charges through the payment gateway, one worker with
// a 2s lease, and a DLQ of one entry under the reject policy: "filler"'s
// declined card fills it at once, and the jobs after it find it full.
func fullDLQ(jobs ...scenarios.PlannedJobSpec) scenarios.Scenario {
	return scenarios.Scenario{
		Name: "full-dlq", Seed: 5, Duration: 2 * time.Minute,
		Workload: scenarios.WorkloadSpec{
			Tasks: []scenarios.TaskSpec{{Name: "charge", Dependency: classify.PaymentGateway, Service: 100 * time.Millisecond}},
			Jobs:  append([]scenarios.PlannedJobSpec{{At: 0, ID: "filler", Task: "charge"}}, jobs...),
		},
		Workers:      scenarios.WorkersSpec{Count: 1, LeaseTTL: 2 * time.Second},
		Dependencies: []scenarios.DependencySpec{{Name: classify.PaymentGateway, Payment: true}},
		System:       scenarios.SystemSpec{DLQ: scenarios.DLQSpec{Capacity: 1, Overflow: store.Reject}},
		Faults: []faults.Fault{{Name: "declined", Target: faults.Target{Kind: faults.Dependency, Name: classify.PaymentGateway},
			Model: faults.CardDeclined{}, Schedule: faults.Schedule{FirstCalls: 1}}},
	}
}

// dlqEntry returns the result's DLQ entry of job id.
func dlqEntry(res *reports.Result, id string) reports.DLQEntry {
	GinkgoHelper()
	for _, e := range res.DLQ.Entries {
		if e.JobID == id {
			return e
		}
	}
	Fail("no DLQ entry for " + id)
	return reports.DLQEntry{}
}

var _ = Describe("A dead letter the DLQ cannot take", func() {
	It("is held under the reject policy, so a payment without an idempotency key whose answer was lost is charged once, not every lease", func() {
		sc := fullDLQ(scenarios.PlannedJobSpec{At: 5 * time.Second, ID: "pay-1", Task: "charge"})
		sc.Faults = append(sc.Faults, faults.Fault{Name: "answer-lost", Target: faults.Target{Kind: faults.Dependency, Name: classify.PaymentGateway},
			Model: faults.Indeterminate5xx{}, Schedule: faults.Schedule{From: 5 * time.Second}})
		res := run(sc)
		Expect(res.Violations).To(BeEmpty())
		Expect(res.Ledger.Charges).To(BeEquivalentTo(1))
		Expect(res.Ledger.Attempts).To(BeEquivalentTo(2), "filler once, pay-1 once")
		Expect(res.Ledger.LeaseExpiries).To(BeZero())
		Expect(fate(res, "pay-1").State).To(Equal("held"))
		Expect(res.Ledger.HeldAtEnd).To(BeEquivalentTo(1))
		Expect(res.Ledger.Refused).To(BeEquivalentTo(1))
		Expect(res.Ledger.RefusedTimes).To(BeEquivalentTo(1))
		Expect(res.Ledger.Created).To(Equal(res.Ledger.Queued + res.Ledger.InFlight + res.Ledger.Scheduled + res.Ledger.Fallback +
			res.Ledger.HeldAtEnd + res.Ledger.DeadLettered + res.Ledger.Succeeded + res.Ledger.Removed))
	})

	It("does not call a declined card again, and writes it with its failure's time once an operator makes room", func() {
		sc := fullDLQ(scenarios.PlannedJobSpec{At: 5 * time.Second, ID: "declined-2", Task: "charge"})
		sc.Faults[0].Schedule = faults.Schedule{FirstCalls: 2}
		sc.Steps = []scenarios.StepSpec{{At: time.Minute, Kind: scenarios.Delete, Filter: dlq.Filter{}}}
		res := run(sc)
		Expect(res.Violations).To(BeEmpty())
		Expect(res.Ledger.Attempts).To(BeEquivalentTo(2), "the declined card is called once")
		Expect(res.Faults[0].Hits).To(BeEquivalentTo(2))
		Expect(fate(res, "declined-2").State).To(Equal("dead-lettered"))
		Expect(res.Ledger.Held).To(BeEquivalentTo(1))
		Expect(res.Ledger.HeldAtEnd).To(BeZero())
		e := dlqEntry(res, "declined-2")
		Expect(e.LastFailedAtMs).To(BeNumerically("<", 6000), "the failure's time (about +5.1s), not the write's (+1m)")
		Expect(res.Ledger.HeldMaxMs).To(BeNumerically(">=", 54_000))
	})

	It("keeps a dead letter with its lease alive when the held set is full too, and never runs it again", func() {
		sc := fullDLQ(scenarios.PlannedJobSpec{At: 5 * time.Second, ID: "declined-2", Task: "charge"},
			scenarios.PlannedJobSpec{At: 6 * time.Second, ID: "declined-3", Task: "charge"})
		sc.Faults[0].Schedule = faults.Schedule{FirstCalls: 3}
		res := run(sc)
		Expect(res.Violations).To(BeEmpty())
		Expect(res.Ledger.Attempts).To(BeEquivalentTo(3))
		Expect(res.Ledger.LeaseExpiries).To(BeZero())
		Expect(fate(res, "declined-3").State).To(Equal("in-flight"), "kept by the worker, its lease heartbeated")
		Expect(res.Ledger.Kept).To(BeEquivalentTo(1))
		Expect(res.Ledger.Refused).To(BeEquivalentTo(2))
	})

	It("kept by a worker that crashes is lost with it: the job comes back when its lease expires, runs again, and the ledger says so", func() {
		sc := fullDLQ(scenarios.PlannedJobSpec{At: 5 * time.Second, ID: "declined-2", Task: "charge"},
			scenarios.PlannedJobSpec{At: 6 * time.Second, ID: "declined-3", Task: "charge"})
		sc.Faults[0].Schedule = faults.Schedule{FirstCalls: 3}
		sc.Faults = append(sc.Faults, faults.Fault{Name: "crash", Target: faults.Target{Kind: faults.Worker, Name: "w1"},
			Model: faults.WorkerCrash{RestartAfter: time.Second}, Schedule: faults.During(10*time.Second, 11*time.Second)})
		res := run(sc)
		Expect(res.Ledger.Kept).To(BeEquivalentTo(1))
		Expect(res.Ledger.LeaseExpiries).To(BeEquivalentTo(1), "the kept dead letter's lease, no longer heartbeated")
		Expect(res.Ledger.Attempts).To(BeEquivalentTo(4), "declined-3 runs again")
		Expect(res.Violations).To(ContainElement(SatisfyAll(
			HaveField("Invariant", oracle.InvNoRerunAfterDead), HaveField("JobID", "declined-3"))))
		Expect(res.Ledger.Created).To(Equal(res.Ledger.Queued + res.Ledger.InFlight + res.Ledger.Scheduled + res.Ledger.Fallback +
			res.Ledger.HeldAtEnd + res.Ledger.DeadLettered + res.Ledger.Succeeded + res.Ledger.Removed))
	})

	It("kept by a worker while the held set is full is told at once, as a High alert, and cleared once none is kept", func() {
		sc := fullDLQ(scenarios.PlannedJobSpec{At: 5 * time.Second, ID: "declined-2", Task: "charge"},
			scenarios.PlannedJobSpec{At: 6 * time.Second, ID: "declined-3", Task: "charge"})
		sc.Faults[0].Schedule = faults.Schedule{FirstCalls: 3}
		sc.System.Monitor = &scenarios.MonitorSpec{Interval: time.Minute}
		sc.Duration = 10 * time.Minute // the resolution goes out a group interval (5m) after the firing
		sc.Steps = []scenarios.StepSpec{{At: 90 * time.Second, Kind: scenarios.Delete, Filter: dlq.Filter{}}, {At: 100 * time.Second, Kind: scenarios.Purge, OlderThan: time.Second}}
		res := run(sc)
		Expect(res.Violations).To(BeEmpty())
		Expect(res.Ledger.Kept).To(BeEquivalentTo(1))
		var kept []reports.Delivery
		for _, d := range res.Alerts.Deliveries {
			if d.Name == "dlq-kept" {
				kept = append(kept, d)
			}
		}
		Expect(kept).To(HaveLen(2), "firing, then resolved")
		Expect(kept[0].Status).To(Equal("firing"))
		Expect(kept[0].Severity).To(Equal("high"))
		Expect(kept[0].AtMs).To(BeNumerically("<", 40_000), "at once (the group wait), not at the first check")
		Expect(kept[0].Summary).To(ContainSubstring("job declined-3 is kept in the worker's memory"))
		Expect(kept[0].Summary).To(ContainSubstring("if the worker stops, the lease expires and the job runs again"))
		Expect(kept[1].Status).To(Equal("resolved"))
	})

	It("held through a DLQ-store outage, records the failure's time as lastFailedAt, not the write's", func() {
		sc := one(1, 2*time.Second, time.Minute, scenarios.PlannedJobSpec{At: 0, ID: "declined-1", Task: "work"})
		sc.Faults = []faults.Fault{
			{Name: "declined", Target: faults.Target{Kind: faults.Dependency, Name: "api"}, Model: faults.CardDeclined{}, Schedule: faults.Schedule{FirstCalls: 1}},
			{Name: "dlq-down", Target: faults.Target{Kind: faults.DLQStore}, Model: faults.StoreOutage{}, Schedule: faults.During(0, 20*time.Second)},
		}
		res := run(sc)
		Expect(res.Violations).To(BeEmpty())
		Expect(fate(res, "declined-1").State).To(Equal("dead-lettered"))
		e := dlqEntry(res, "declined-1")
		Expect(e.LastFailedAtMs).To(BeEquivalentTo(1000), "the attempt failed at +1s; the entry was written at +20s")
		Expect(e.FirstFailedAtMs).To(BeEquivalentTo(1000))
		Expect(res.Ledger.HeldMaxMs).To(BeNumerically(">=", 19_000))
	})

	It("is caught by the ledger when a store lets a decided job run again (its lease left to expire)", func() {
		sc := fullDLQ(scenarios.PlannedJobSpec{At: 5 * time.Second, ID: "declined-2", Task: "charge"})
		sc.Faults[0].Schedule = faults.Schedule{FirstCalls: 2}
		res := run(sc, sim.WithStore(func(_ context.Context, _ sim.Env, cfg store.Config) (sim.Backend, error) {
			s, err := memstore.New(cfg)
			return &forgetfulStore{Store: s}, err
		}))
		Expect(res.Violations).NotTo(BeEmpty())
		Expect(res.Violations[0].Invariant).To(Equal(oracle.InvNoRerunAfterDead))
		Expect(res.Violations[0].JobID).To(Equal("declined-2"))
	})
})

var _ = Describe("Held dead letters on both stores", func() {
	It("give the same JSON report on miniredis as in memory: held by a full DLQ, kept past the held set's bound, written once there is room", func() {
		sc := fullDLQ(scenarios.PlannedJobSpec{At: 5 * time.Second, ID: "declined-2", Task: "charge"},
			scenarios.PlannedJobSpec{At: 6 * time.Second, ID: "declined-3", Task: "charge"})
		sc.Faults[0].Schedule = faults.Schedule{FirstCalls: 3}
		sc.System.Monitor = &scenarios.MonitorSpec{Interval: 30 * time.Second}
		sc.Steps = []scenarios.StepSpec{{At: time.Minute, Kind: scenarios.Delete, Filter: dlq.Filter{}}}
		mem := run(sc)
		Expect(mem.Ledger.Held).To(BeEquivalentTo(1))
		Expect(mem.Ledger.Kept).To(BeEquivalentTo(1))
		want, err := mem.JSON()
		Expect(err).NotTo(HaveOccurred())
		got, err := run(sc, redisStore(redistest.Mini(1).Addr())).JSON()
		Expect(err).NotTo(HaveOccurred())
		Expect(string(got)).To(Equal(string(want)))
	})
})

var _ = Describe("The DLQ monitor in a run", func() {
	It("alerts once on an overflow before its first check", func() {
		sc := fullDLQ(scenarios.PlannedJobSpec{At: 5 * time.Second, ID: "declined-2", Task: "charge"})
		sc.Faults[0].Schedule = faults.Schedule{FirstCalls: 2}
		sc.Duration = 4 * time.Minute
		sc.System.Monitor = &scenarios.MonitorSpec{Interval: 5 * time.Minute}
		res := run(sc)
		n := 0
		for _, d := range res.Alerts.Deliveries {
			if d.Name == "dlq-overflow" && d.Status == "firing" {
				n++
			}
		}
		Expect(n).To(Equal(1), "deliveries: %+v", res.Alerts.Deliveries)
	})

	It("alerts once on an overflow its checks see too, and resolves it", func() {
		sc := fullDLQ(scenarios.PlannedJobSpec{At: 5 * time.Second, ID: "declined-2", Task: "charge"})
		sc.Faults[0].Schedule = faults.Schedule{FirstCalls: 2}
		sc.Duration = 10 * time.Minute
		sc.System.Monitor = &scenarios.MonitorSpec{Interval: time.Minute}
		res := run(sc)
		var got []string
		for _, d := range res.Alerts.Deliveries {
			if d.Name == "dlq-overflow" {
				got = append(got, d.Status)
			}
		}
		Expect(got).To(Equal([]string{"firing", "resolved"}), "deliveries: %+v", res.Alerts.Deliveries)
	})
})

// forgetfulStore is a team's store that knows no held set: a full DLQ
// refuses a dead letter and leaves the job leased, and its heartbeats
// answer without extending the lease, so the lease runs out and the job
// comes back.
type forgetfulStore struct{ *memstore.Store }

func (f *forgetfulStore) DeadLetter(ctx context.Context, l queue.Lease, e dlq.Entry, now time.Time) (dlq.AddResult, error) {
	st, err := f.Store.Stats(ctx)
	if err == nil && st.ByStatus[dlq.Failed.String()] >= 1 {
		return dlq.AddResult{}, errors.Join(dlq.ErrFull, dlq.ErrHeldFull)
	}
	return f.Store.DeadLetter(ctx, l, e, now)
}

func (f *forgetfulStore) Hold(context.Context, queue.Lease, dlq.Entry, time.Time) error {
	return dlq.ErrHeldFull
}

func (f *forgetfulStore) Heartbeat(_ context.Context, l queue.Lease, _ time.Time, _ time.Duration) (queue.Lease, error) {
	return l, nil
}
