package sim

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/degrade"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/worker"
	"github.com/faultline/faultline/reports"
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

// judge is the part of a world that judges a history rather than running.
type judge struct {
	h      *oracle.History
	faults []reports.Fault
	snap   *oracle.Snapshot
	dlq    []dlq.Entry
	// decided are the jobs whose dead letter a worker reported written,
	// until their next move out of flight shows it was.
	decided map[string]oracle.Attempt
}

// liveBreaker is a drill's breaker as the judge sees it: the state of one
// dependency's breakers across the worker processes (open if any is open,
// closed if all are closed, else half-open).
type liveBreaker struct{ state degrade.State }

func (b *liveBreaker) Allow() (degrade.Permit, error)         { return degrade.Permit{}, degrade.ErrOpen }
func (b *liveBreaker) Record(degrade.Permit, degrade.Outcome) {}
func (b *liveBreaker) State() degrade.State                   { return b.state }
func (b *liveBreaker) OnStateChange(func(degrade.Transition)) {}

// snapBackend answers the judge's reads of the store from the drill's
// snapshots: the counts of the latest one reached, and the DLQ's entries
// at the end. Nothing else is called on it.
type snapBackend struct {
	Backend
	j *judge
}

func (b *snapBackend) Counts(context.Context) (queue.Counts, error) {
	if b.j.snap == nil {
		return queue.Counts{}, errors.New("no snapshot yet")
	}
	return b.j.snap.Counts, nil
}

func (b *snapBackend) Stats(context.Context) (dlq.Stats, error) {
	if b.j.snap == nil {
		return dlq.Stats{}, errors.New("no snapshot yet")
	}
	return b.j.snap.Stats, nil
}

func (b *snapBackend) List(_ context.Context, _ dlq.Filter, _ string, _ int) (dlq.Page, error) {
	return dlq.Page{Entries: b.j.dlq}, nil
}

// judged is one observation in the judge's order.
type judged struct {
	at   time.Duration
	prio int // at one instant: jobs, reports (0), the stream (1, attempts after their leases), attempts not found there (2)
	pos  float64
	do   func()
}

// Judge computes a drill's result from its history with the simulator's
// ledger and expectations: every invariant and every expectation of sc
// (defaults applied) is evaluated from what was observed, as the simulator
// evaluates them from its own events. It reads nothing but h.
func Judge(ctx context.Context, sc scenarios.Scenario, h *oracle.History) (*reports.Result, error) {
	sc = sc.WithDefaults()
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	if h.External != nil {
		return oracle.JudgeBlackBox(sc, h), nil
	}
	w := baseWorld(ctx, sc)
	j := &judge{h: h, decided: map[string]oracle.Attempt{}}
	w.judge = j
	w.sec = oracle.NewSecrets(w.led, sc.Invariants.Secrets, true)
	w.led.KeepAll()
	w.backend = &snapBackend{j: j}
	w.policy = &swapPolicy{}
	for _, bc := range sc.System.Breakers {
		w.breakers = append(w.breakers, &breakerRun{name: bc.Config.Name, b: &liveBreaker{state: degrade.Closed}})
		w.brk.Track(bc.Config.Name)
	}
	for _, raw := range h.DLQ {
		var probe struct {
			Job struct{ ID string } `json:"job"`
		}
		_ = json.Unmarshal(raw, &probe)
		j.dlq = append(j.dlq, dlq.Decode(probe.Job.ID, raw))
	}
	j.faults = oracle.JudgedFaults(&sc, h)

	items := make([]judged, 0, len(h.Jobs)+len(h.Events)+len(h.Snapshots)+len(h.Attempts)+len(h.Calls)+len(h.Deliveries)+len(h.Breakers)+len(h.Processes))
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	unknown := map[string]oracle.Job{}
	for _, hj := range h.Jobs {
		if hj.Outcome != "ok" {
			unknown[hj.ID] = hj
			continue
		}
		items = append(items, judged{at: ms(hj.AtMs), do: func() {
			w.led.Register(hj.ID, hj.Task, jobN(hj.ID))
			w.made++
		}})
	}
	// The stream, in its order, its times made monotone (processes'
	// clocks differ by a little); each snapshot right after the events
	// that preceded it.
	var last time.Duration
	evAt := make([]time.Duration, len(h.Events))
	for i, he := range h.Events {
		last = max(last, ms(he.AtMs))
		evAt[i] = last
		items = append(items, judged{at: last, prio: 1, pos: float64(i), do: func() {
			e := disposition.Event{JobID: he.JobID, Task: he.Task, From: oracle.StateByName[he.From], To: oracle.StateByName[he.To],
				Reason: disposition.Reason(he.Reason), At: w.start.Add(ms(he.AtMs)), Attempts: he.Attempts}
			if e.From == disposition.None && w.led.Job(e.JobID) == nil {
				if hj, ok := unknown[e.JobID]; ok { // an enqueue whose answer was lost, that happened
					w.led.Register(hj.ID, hj.Task, jobN(hj.ID))
					w.made++
				}
			}
			if a, ok := j.decided[e.JobID]; ok && e.From == disposition.InFlight {
				delete(j.decided, e.JobID)
				if e.To != disposition.DeadLettered && e.To != disposition.Held {
					w.led.Fail(InvConservation, w.led.Job(e.JobID), "job %s: worker %s decided its dead letter (%s, rule %q) and reported the move applied, but the store moved it %s → %s (%s): the dead letter was dropped",
						e.JobID, a.Worker, a.Class, a.Rule, e.From, e.To, e.Reason)
				}
			}
			w.led.Observe(e)
		}})
	}
	for i := range h.Snapshots {
		s := &h.Snapshots[i]
		at := time.Duration(0)
		if s.AfterEvents > 0 && s.AfterEvents <= len(evAt) {
			at = evAt[s.AfterEvents-1]
		}
		items = append(items, judged{at: at, prio: 1, pos: float64(s.AfterEvents) - 0.5, do: func() {
			j.snap = s
			w.sample()
		}})
	}
	// Each attempt right after its lease in the stream (the job's last
	// lease at or before the attempt's start), so that its verdict is
	// pending when its outcome's move comes, however quick the attempt.
	leases := map[string][]int{}
	for i, he := range h.Events {
		if he.Reason == string(disposition.Leased) {
			leases[he.JobID] = append(leases[he.JobID], i)
		}
	}
	for _, a := range h.Attempts {
		if h.FrozenMs > 0 && a.EndMs > h.FrozenMs {
			continue // finished as the workers were stopped, after the last look
		}
		it := judged{at: ms(a.AtMs), prio: 2, do: func() { w.judgeAttempt(a) }}
		ls := leases[a.JobID]
		if k, _ := slices.BinarySearchFunc(ls, a.AtMs, func(i int, at int64) int {
			if h.Events[i].AtMs <= at {
				return -1
			}
			return 1
		}); k > 0 {
			i := ls[k-1]
			it.at, it.prio, it.pos = evAt[i], 1, float64(i)+0.25
		}
		items = append(items, it)
	}
	deps := map[string]scenarios.DependencySpec{}
	for _, d := range sc.Dependencies {
		deps[d.Name] = d
	}
	for _, c := range h.Calls {
		dep, ok := deps[c.Dependency]
		if !ok || !dep.Payment || !c.TookEffect {
			continue
		}
		items = append(items, judged{at: ms(c.AtMs), do: func() {
			r := w.led.Job(c.JobID)
			if r == nil {
				r = w.led.Stranger(c.JobID)
			}
			if r != nil {
				w.charge(r, job.Job{ID: c.JobID, IdempotencyKey: c.Key}, dep)
			}
		}})
	}
	for _, d := range h.Deliveries {
		if !d.Accepted { // a send the receiver refused: counted as the simulator's sink counts it
			items = append(items, judged{at: ms(d.AtMs), do: w.pg.Refused})
			continue
		}
		items = append(items, judged{at: ms(d.AtMs), do: func() { w.deliver(d.Receiver, d.Notification()) }})
	}
	for _, o := range h.Overflows {
		if o.Policy != store.Reject.String() {
			continue
		}
		// As the simulator's store reports it to its ledger (overflow).
		items = append(items, judged{at: ms(o.AtMs), prio: 1, pos: -1, do: func() {
			w.led.Refuse(o.JobID)
			if r := w.led.Job(o.JobID); r != nil {
				w.led.Note(r, "a full DLQ refused the dead letter (capacity %d)", o.Capacity)
			}
		}})
	}
	for _, b := range h.Breakers {
		items = append(items, judged{at: ms(b.AtMs), do: func() { w.judgeBreaker(b) }})
	}
	for _, p := range h.Processes {
		if p.Kind != "started" && p.Kind != "restarted" { // a new process: its breakers start closed
			continue
		}
		items = append(items, judged{at: ms(p.AtMs), do: func() { w.judgeRestart(p.Worker, ms(p.AtMs)) }})
	}
	// attempt-outcome-is-the-move and no-lease-left-expired, from the
	// attempts' reports against the stream (the simulator checks them as
	// its attempts end: attemptEnded).
	lo := oracle.JudgeLiveOutcomes(&sc, h)
	for _, c := range lo.Checks {
		it := judged{at: c.At, do: func() { w.led.Fail(c.Inv, w.led.Job(c.Job), "%s", c.Msg) }}
		if c.Pos >= 0 {
			it.at, it.prio, it.pos = evAt[int(c.Pos)], 1, c.Pos
		}
		items = append(items, it)
	}
	slices.SortStableFunc(items, func(a, b judged) int {
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		if c := cmp.Compare(a.prio, b.prio); c != 0 {
			return c
		}
		return cmp.Compare(a.pos, b.pos)
	})

	// Probes and the page deadlines run on the judge's clock, moved to
	// each observation's instant.
	for _, at := range slices.Sorted(maps.Keys(w.probes)) {
		w.at(at, func() { w.probes[at] = w.snapshot() })
	}
	for _, it := range items {
		if it.at > w.end {
			it.at = w.end
		}
		if it.at > w.now() {
			w.clk.RunUntil(w.start.Add(it.at))
		}
		it.do()
	}
	end := min(ms(h.EndedMs), w.end)
	if h.Interrupted != "" {
		w.clk.RunUntil(w.start.Add(max(end, w.now())))
		w.errs = append(w.errs, fmt.Errorf("drill stopped at %s: %s: %w", fmtOffset(w.now()), h.Interrupted, context.Canceled))
	} else {
		w.clk.RunUntil(w.start.Add(w.end))
		if h.Aborted != "" {
			w.errs = append(w.errs, fmt.Errorf("the drill stopped its faults: %s: %w", h.Aborted, context.Canceled))
		}
	}
	if len(h.Snapshots) > 0 {
		j.snap = &h.Snapshots[len(h.Snapshots)-1]
	}
	w.stepLog = h.Steps
	res := w.result()
	oracle.LiveOutcomeNotes(res, lo, h)
	res.Engine.Events = int64(len(h.Events))
	if h.EventsLost {
		res.Warnings = append(res.Warnings, "the store's event stream was trimmed before the drill read all of it: conservation is not observable for this drill")
	}
	res.Warnings = append(res.Warnings, h.Notes...)
	if h.Simulated {
		// A simulated run's history (faultline run --history): no pace,
		// no processes, the simulator's own virtual time.
		oracle.JudgeEvidence(res, h, w.led)
		return res, nil
	}
	res.Live = oracle.LiveSection(h)
	oracle.JudgePace(res, h, &w.sc, w.led)
	oracle.JudgeEvidence(res, h, w.led)
	oracle.JudgeUnlanded(res, h)
	oracle.JudgeUnaccounted(res)
	return res, nil
}

// jobN is a generated job's number, 0 for an explicit job's ID.
func jobN(id string) int64 {
	n, ok := oracle.JobNumber(id)
	if !ok {
		return 0
	}
	return n
}

// judgeAttempt records a worker's report of an attempt, as complete and
// apply record the simulator's.
func (w *world) judgeAttempt(a oracle.Attempt) {
	r := w.led.Job(a.JobID)
	if r == nil {
		return // its moves report it
	}
	truth, _ := classify.ParseClass(a.Truth)
	o := worker.Outcome{Action: oracle.ActionByName[a.Action]}
	if a.Err != "" {
		o.Err = errors.New(a.Err)
		o.Verdict.Class, _ = classify.ParseClass(a.Class)
		o.Verdict.Severity, _ = classify.ParseSeverity(a.Severity)
		o.Verdict.Rule = a.Rule
	}
	// The ledger hears the attempt at its start (its verdict pending when
	// its move comes); a critical failure's page clock starts when the
	// attempt ended, as the simulator's does.
	if w.recordAttempt(r, a.Fault, truth, &o) {
		fp := a.Fingerprint
		if end := time.Duration(a.EndMs) * time.Millisecond; end > w.now() {
			w.at(end, func() { w.critical(r, fp) })
		} else {
			w.critical(r, fp)
		}
	}
	switch a.Result {
	case "applied":
		w.led.Settle(r, true)
		if o.Action == worker.DeadLetter {
			w.judge.decided[a.JobID] = a
		}
	case "fenced", "kept-fenced":
		w.led.Settle(r, false)
		w.led.AddFenced()
		w.led.Note(r, "late completion (%s) by %s fenced off: the lease was lost", o.Action, a.Worker)
	case "kept":
		w.led.Keep(r)
		w.led.Note(r, "the dead letter is kept by worker %s, its lease kept alive", a.Worker)
	default:
		w.led.Settle(r, false)
		w.led.Note(r, "worker %s could not write the %s (%s): the job comes back when its lease expires", a.Worker, o.Action, a.Result)
	}
}

// judgeBreaker records one process's breaker transition: the legality of
// each process's own sequence, and the dependency's state across them.
func (w *world) judgeBreaker(b oracle.BreakerTransition) {
	if w.brk.Transition(time.Duration(b.AtMs)*time.Millisecond, b.Worker, b.Breaker, b.From, b.To, b.Reason) {
		w.aggregateBreaker(b.Breaker)
	}
}

// judgeRestart notes a worker process (re)started: its breakers start
// closed.
func (w *world) judgeRestart(worker string, _ time.Duration) {
	w.brk.Restart(worker)
	for _, br := range w.breakers {
		w.aggregateBreaker(br.name)
	}
}

// aggregateBreaker sets the judge's view of breaker name: its state across
// the processes, as the probes read it.
func (w *world) aggregateBreaker(name string) {
	for _, br := range w.breakers {
		if br.name == name {
			br.b.(*liveBreaker).state = w.brk.State(name)
		}
	}
}

// SimulatedNote is the warning a simulated run's report carries when it is
// judged again from its history.
const SimulatedNote = "judged again from a simulated run's history (faultline run --history): the run's own report is the one reproducible to the byte"

// LiveNote is the warning every drill's report carries.
func LiveNote(scale float64) string {
	s := "wall clock — not reproducible to the byte: a drill of real processes on a real Redis"
	if scale > 1 {
		s += fmt.Sprintf(", at time scale %s", strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", scale), "0"), "."))
	}
	return s
}
