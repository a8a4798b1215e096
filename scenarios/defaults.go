package scenarios

import (
	"slices"
	"time"

	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/store"
)

// Effective returns l's document as the simulator will run it: includes
// merged (as Load did) and every default filled in — the seed, the start,
// the workers, the sample interval, task weights and queues, the arrival
// kind, the retry policy, the DLQ, the alert receivers and timing, each
// breaker's and fallback's settings, the page deadline, the abort guard's
// error window; for a black-box system (system.external), its copies,
// drain and startup instead of the reference's configuration, which it
// does not have. `faultline run --dry-run` prints it.
func Effective(l *Loaded) *Document {
	d := cloneFaults(l.Document)
	sc := l.Scenario.WithDefaults()
	seed := sc.Seed
	if d.Seed == nil {
		d.Seed = &seed
	}
	d.Start = sc.Start.Format(time.RFC3339)
	d.Sample = Duration(sc.Sample)
	d.Workers = Workers{Count: sc.Workers.Count, Processes: sc.Workers.Processes, LeaseTTL: Duration(sc.Workers.LeaseTTL)}
	d.Workload.Tasks = slices.Clone(d.Workload.Tasks)
	for i := range d.Workload.Tasks {
		t := &d.Workload.Tasks[i]
		if t.Weight == 0 {
			t.Weight = 1
		}
		if t.Queue == "" {
			t.Queue = t.Name
		}
	}
	if d.Workload.Arrivals.Kind == "" {
		d.Workload.Arrivals.Kind = sc.Workload.Arrivals.Kind.String()
	}
	if d.System.External != nil {
		// A black box has none of the reference's configuration (the
		// simulator's stand-in takes the defaults), and the drill's
		// receivers are the ones written, or one Slack receiver.
		e := *d.System.External
		x := sc.System.External.WithDefaults(sc.Workers.Count)
		e.Copies, e.Drain, e.Startup = x.Copies, Duration(x.Drain), Duration(x.Startup)
		d.System.External = &e
		return effectiveRest(d, sc)
	}
	r := sc.System.Retry
	d.System.Retry = &Retry{MaxAttempts: r.MaxAttempts, BaseDelay: Duration(r.BaseDelay), MaxDelay: Duration(r.MaxDelay),
		MaxRetryAfter: Duration(r.MaxRetryAfter), Budget: &Budget{Disabled: r.Budget.Disabled, Burst: r.Budget.Burst,
			Refill: Duration(r.Budget.Refill), MaxWait: Duration(r.Budget.MaxWait), Scope: r.Budget.Scope.String()}}
	dcfg := store.Config{DLQCapacity: sc.System.DLQ.Capacity, Overflow: sc.System.DLQ.Overflow}.WithDefaults()
	overflow := "reject"
	if dcfg.Overflow == store.EvictOldest {
		overflow = "evict-oldest"
	}
	d.System.DLQ = &DLQ{Capacity: dcfg.DLQCapacity, Overflow: overflow, LostLeaseUsesAttempt: sc.System.DLQ.LostLeaseUsesAttempt}
	a := sc.System.Alerts.WithDefaults()
	al := &Alerts{DefaultReceiver: a.DefaultReceiver, GroupBy: a.DefaultGroupBy, DedupWindow: Duration(a.DedupWindow), MaxAlerts: a.MaxAlerts,
		Timing: &Timing{GroupWait: Duration(a.Timing.GroupWait), GroupInterval: Duration(a.Timing.GroupInterval), RepeatInterval: Duration(a.Timing.RepeatInterval)}}
	for _, rc := range a.Receivers {
		al.Receivers = append(al.Receivers, rc.Name)
	}
	for _, rt := range a.Routes {
		route := Route{Receiver: rt.Receiver, Match: map[string]string(rt.Match), GroupBy: rt.GroupBy, Continue: rt.Continue}
		for _, s := range rt.Severities {
			route.Severities = append(route.Severities, s.String())
		}
		if rt.Timing != (alert.Timing{}) {
			route.Timing = &Timing{GroupWait: Duration(rt.Timing.GroupWait), GroupInterval: Duration(rt.Timing.GroupInterval), RepeatInterval: Duration(rt.Timing.RepeatInterval)}
		}
		al.Routes = append(al.Routes, route)
	}
	d.System.Alerts = al
	d.System.Breakers = nil
	for _, b := range sc.System.Breakers {
		c := b.Config.WithDefaults()
		f := b.Fallback.WithDefaults()
		rampUp := Duration(c.RampUp).String()
		if c.RampUp < 0 {
			rampUp = "none"
		}
		eb := Breaker{Dependency: c.Name, ConsecutiveFailures: c.ConsecutiveFailures,
			FailureRatePercent: c.FailureRatePercent, MinThroughput: c.MinThroughput, Window: Duration(c.Window),
			OpenDuration: Duration(c.OpenDuration), MaxOpenDuration: Duration(c.MaxOpenDuration), BackoffFactor: c.BackoffFactor,
			StablePeriod: Duration(c.StablePeriod), HalfOpenProbes: c.HalfOpenProbes, SuccessesToClose: c.SuccessesToClose,
			ProbeTimeout: Duration(c.ProbeTimeout), RampUp: rampUp, RampStartPercent: c.RampStartPercent,
			Fallback: &Fallback{BatchSize: f.BatchSize, DrainInterval: Duration(f.DrainInterval)}}
		if b.Fleet {
			eb.Scope, eb.SyncInterval = "fleet", Duration(c.SyncInterval)
		}
		d.System.Breakers = append(d.System.Breakers, eb)
	}
	return effectiveRest(d, sc)
}

// effectiveRest fills in the defaults of the abort guard and the page
// deadline.
func effectiveRest(d *Document, sc Scenario) *Document {
	if d.AbortIf != nil && sc.AbortIf != nil {
		a := *d.AbortIf
		a.ErrorWindow = Duration(sc.AbortIf.ErrorWindow)
		d.AbortIf = &a
	}
	switch p := sc.Invariants.PageWithin; {
	case p < 0:
		d.Invariants.PageWithin = "off"
	default:
		d.Invariants.PageWithin = p.String()
	}
	return d
}
