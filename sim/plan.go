package sim

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/scenarios"
)

// Plan is a scenario's workload as the simulator makes it — the same jobs,
// IDs, idempotency keys, payloads and arrival times for the same seed —
// for a live drill's producer to enqueue on the wall clock.
type Plan struct {
	w *world
	// timed are the bursts' and explicit jobs' arrivals, in the order the
	// simulator's timers run them; next indexes the first not yet made.
	timed []timedArrival
	next  int
}

type timedArrival struct {
	at   time.Duration
	task string
	pj   scenarios.PlannedJobSpec
}

// Arrival is one job the workload makes at offset At.
type Arrival struct {
	At  time.Duration
	Job job.Job
}

// NewPlan returns sc's workload plan (defaults applied, sc validated).
func NewPlan(sc scenarios.Scenario) (*Plan, error) {
	sc = sc.WithDefaults()
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	w := baseWorld(context.Background(), sc)
	p := &Plan{w: w}
	for _, b := range sc.Workload.Arrivals.Bursts {
		for range b.Count {
			p.timed = append(p.timed, timedArrival{at: b.At, task: b.Task})
		}
	}
	for _, pj := range sc.Workload.Jobs {
		p.timed = append(p.timed, timedArrival{at: pj.At, task: pj.Task, pj: pj})
	}
	// The simulator's timers at one instant run in the order they were
	// scheduled: every burst, then every explicit job.
	slices.SortStableFunc(p.timed, func(a, b timedArrival) int { return cmp.Compare(a.at, b.at) })
	a := sc.Workload.Arrivals
	if a.Kind != scenarios.NoArrivals && a.Rate > 0 {
		w.arrAt = w.nextArrival()
		w.arrOn = w.arrAt < w.arrivalsUntil()
	}
	return p, nil
}

// Next returns the next job, in the simulator's order (at one instant,
// timed jobs before a Poisson or constant arrival), and false when the
// workload is done.
func (p *Plan) Next() (Arrival, bool) {
	w := p.w
	timedOK := p.next < len(p.timed) && p.timed[p.next].at <= w.end
	arrOK := w.arrOn && w.arrAt <= w.end
	switch {
	case timedOK && (!arrOK || p.timed[p.next].at <= w.arrAt):
		t := p.timed[p.next]
		p.next++
		j, _ := w.newJob(w.pick(t.task), t.pj, w.start.Add(t.at))
		return Arrival{At: t.at, Job: j}, true
	case arrOK:
		at := w.arrAt
		w.arrivals++
		j, _ := w.newJob(w.pick(""), scenarios.PlannedJobSpec{}, w.start.Add(at))
		w.arrAt = w.nextArrival()
		w.arrOn = w.arrAt < w.arrivalsUntil()
		return Arrival{At: at, Job: j}, true
	}
	return Arrival{}, false
}
