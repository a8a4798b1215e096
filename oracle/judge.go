package oracle

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/reference/degrade"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/worker"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
)

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

// replay is the judge of one history: the run's checkers (Checks), fed
// with what the history observed in the order it happened, on a virtual
// clock of the judge's own (the page deadlines and the probes run on it,
// moved to each observation's instant).
type replay struct {
	ctx   context.Context
	sc    *scenarios.Scenario
	h     *History
	clk   *clock.Virtual
	start time.Time
	end   time.Duration
	chk   *Checks
	led   *Ledger
	made  int64
	errs  []error
	// snap is the latest snapshot of the store's counts reached; dlq the
	// DLQ's entries the drill read at its end.
	snap *Snapshot
	dlq  []dlq.Entry
	// decided are the jobs whose dead letter a worker reported written,
	// until their next move out of flight shows it was.
	decided map[string]Attempt
	// dupEvents counts the events the history repeats (an ID seen
	// before): judged once.
	dupEvents int
}

func (r *replay) now() time.Duration { return r.clk.Elapsed() }

func (r *replay) at(at time.Duration, f func()) { r.clk.AfterFunc(max(at-r.now(), 0), f) }

// replayStore is the run's store as the history saw it: the counts of the
// latest snapshot reached, and the DLQ's entries at the end.
type replayStore struct{ r *replay }

func (s replayStore) Counts(context.Context) (queue.Counts, error) {
	if s.r.snap == nil {
		return queue.Counts{}, errors.New("no snapshot yet")
	}
	return s.r.snap.Counts, nil
}

func (s replayStore) Stats(context.Context) (dlq.Stats, error) {
	if s.r.snap == nil {
		return dlq.Stats{}, errors.New("no snapshot yet")
	}
	return s.r.snap.Stats, nil
}

func (s replayStore) List(context.Context, dlq.Filter, string, int) (dlq.Page, error) {
	return dlq.Page{Entries: s.r.dlq}, nil
}

// entry is job id's DLQ entry among those the drill read last.
func (r *replay) entry(id string) (dlq.Entry, bool) {
	for _, e := range r.dlq {
		if e.Job.ID == id {
			return e, true
		}
	}
	return dlq.Entry{}, false
}

// breakerStates yields each breaker's state across the processes, for the
// series and the probes.
func (r *replay) breakerStates(yield func(string, degrade.State) bool) {
	for _, bc := range r.sc.System.Breakers {
		if !yield(bc.Config.Name, r.chk.Breakers.State(bc.Config.Name)) {
			return
		}
	}
}

// sample adds a point to the series and checks the ledger against the
// snapshot's counts.
func (r *replay) sample() {
	if r.chk.Sampler.Sample(r.now(), r.led, r.breakerStates) {
		Reconcile(r.ctx, r.led, replayStore{r}, false)
	}
}

// judged is one observation in the judge's order.
type judged struct {
	at   time.Duration
	prio int // at one instant: jobs, reports (0), the stream (1, attempts after their leases), attempts not found there (2)
	pos  float64
	do   func()
}

// Judge computes a run's result from its history alone, with the checkers
// the simulator's engine feeds as it runs (Checks): every invariant and
// every expectation of sc (defaults applied) is evaluated from what was
// observed — a drill's, a simulated run's (faultline run --history) or,
// for a black-box drill, by JudgeBlackBox. What the history lacks is
// reported not observable.
func Judge(ctx context.Context, sc scenarios.Scenario, h *History) (*reports.Result, error) {
	if !h.ScenarioStart.IsZero() {
		sc.Start = h.ScenarioStart // the start the drill ran the scenario from
	}
	sc = sc.WithDefaults()
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	if h.External != nil {
		return JudgeBlackBox(sc, h), nil
	}
	clk := clock.NewVirtual(sc.Start)
	r := &replay{ctx: ctx, sc: &sc, h: h, clk: clk, start: clk.Now(), end: sc.Duration, decided: map[string]Attempt{}}
	r.chk = NewChecks(r.sc, r.start, r.now, r.at, true)
	r.led = r.chk.Ledger
	r.led.KeepAll()
	for _, bc := range sc.System.Breakers {
		r.chk.Breakers.Track(bc.Config.Name)
	}
	for _, raw := range h.DLQ {
		var probe struct {
			Job struct{ ID string } `json:"job"`
		}
		_ = json.Unmarshal(raw, &probe)
		r.dlq = append(r.dlq, dlq.Decode(probe.Job.ID, raw))
	}
	lo := JudgeLiveOutcomes(r.sc, h)
	items := r.items(lo)

	r.chk.ArmProbes(r.breakerStates)
	for _, it := range items {
		if it.at > r.end {
			it.at = r.end
		}
		if it.at > r.now() {
			clk.RunUntil(r.start.Add(it.at))
		}
		it.do()
	}
	end := min(time.Duration(h.EndedMs)*time.Millisecond, r.end)
	if h.Interrupted != "" {
		clk.RunUntil(r.start.Add(max(end, r.now())))
		r.errs = append(r.errs, fmt.Errorf("drill stopped at %s: %s: %w", fmtOffset(r.now()), h.Interrupted, context.Canceled))
	} else {
		clk.RunUntil(r.start.Add(r.end))
		if h.Aborted != "" {
			r.errs = append(r.errs, fmt.Errorf("the drill stopped its faults: %s: %w", h.Aborted, context.Canceled))
		}
	}
	if len(h.Snapshots) > 0 {
		r.snap = &h.Snapshots[len(h.Snapshots)-1]
	}
	res := r.chk.Result(ctx, End{
		Errs: r.errs, Made: r.made, Events: int64(len(h.Events)), Steps: h.Steps,
		Store: replayStore{r}, Entry: r.entry, Alerter: h.Alerter,
		Faults: JudgedFaults(r.sc, h), Observed: h.Observed(), Misses: h.Misses, Calls: callTimes(r.sc, h),
	})
	LiveOutcomeNotes(res, lo, h)
	if h.EventsLost {
		res.Warnings = append(res.Warnings, "the store's event stream was trimmed before the drill read all of it: conservation is not observable for this drill")
	}
	res.Warnings = append(res.Warnings, h.Notes...)
	if r.dupEvents > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the history repeats %d of the store's events (an event ID seen before): each was judged once — the file was edited or written twice", r.dupEvents))
	}
	if h.Simulated {
		// A simulated run's history (faultline run --history): no pace,
		// no processes, the simulator's own virtual time.
		JudgeEvidence(res, h, r.led)
		return res, nil
	}
	res.Live = LiveSection(h)
	JudgePace(res, h, r.sc, r.led)
	JudgeEvidence(res, h, r.led)
	JudgeUnlanded(res, h)
	JudgeUnaccounted(res)
	return res, nil
}

// items are the history's observations in the order the judge hears them.
func (r *replay) items(lo LiveOutcomes) []judged {
	h, led := r.h, r.led
	items := make([]judged, 0, len(h.Jobs)+len(h.Events)+len(h.Snapshots)+len(h.Attempts)+len(h.Calls)+len(h.Deliveries)+len(h.Breakers)+len(h.Processes))
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	unknown := map[string]Job{}
	for _, hj := range h.Jobs {
		if hj.Outcome != "ok" {
			unknown[hj.ID] = hj
			continue
		}
		items = append(items, judged{at: ms(hj.AtMs), do: func() {
			led.Register(hj.ID, hj.Task, jobN(hj.ID))
			r.made++
		}})
	}
	// The stream, in its order, its times made monotone (processes'
	// clocks differ by a little); each snapshot right after the events
	// that preceded it.
	var last time.Duration
	evAt := make([]time.Duration, len(h.Events))
	seen := make(map[string]bool, len(h.Events))
	for i, he := range h.Events {
		last = max(last, ms(he.AtMs))
		evAt[i] = last
		if he.ID != "" {
			if seen[he.ID] {
				// The stream holds each event once: a record repeated
				// in the file is judged once, and the report says so.
				r.dupEvents++
				continue
			}
			seen[he.ID] = true
		}
		items = append(items, judged{at: last, prio: 1, pos: float64(i), do: func() {
			e := disposition.Event{JobID: he.JobID, Task: he.Task, From: StateByName[he.From], To: StateByName[he.To],
				Reason: disposition.Reason(he.Reason), At: r.start.Add(ms(he.AtMs)), Attempts: he.Attempts}
			if e.From == disposition.None && led.Job(e.JobID) == nil {
				if hj, ok := unknown[e.JobID]; ok { // an enqueue whose answer was lost, that happened
					led.Register(hj.ID, hj.Task, jobN(hj.ID))
					r.made++
				}
			}
			if a, ok := r.decided[e.JobID]; ok && e.From == disposition.InFlight {
				delete(r.decided, e.JobID)
				if e.To != disposition.DeadLettered && e.To != disposition.Held {
					led.Fail(InvConservation, led.Job(e.JobID), "job %s: worker %s decided its dead letter (%s, rule %q) and reported the move applied, but the store moved it %s → %s (%s): the dead letter was dropped",
						e.JobID, a.Worker, a.Class, a.Rule, e.From, e.To, e.Reason)
				}
			}
			led.Observe(e)
		}})
	}
	for i := range h.Snapshots {
		s := &h.Snapshots[i]
		at := time.Duration(0)
		if s.AfterEvents > 0 && s.AfterEvents <= len(evAt) {
			at = evAt[s.AfterEvents-1]
		}
		items = append(items, judged{at: at, prio: 1, pos: float64(s.AfterEvents) - 0.5, do: func() {
			r.snap = s
			r.sample()
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
		it := judged{at: ms(a.AtMs), prio: 2, do: func() { r.attempt(a) }}
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
	for _, d := range r.sc.Dependencies {
		deps[d.Name] = d
	}
	for _, c := range h.Calls {
		dep, ok := deps[c.Dependency]
		if !ok || !dep.Payment || !c.TookEffect {
			continue
		}
		items = append(items, judged{at: ms(c.AtMs), do: func() {
			rec := led.Job(c.JobID)
			if rec == nil {
				rec = led.Stranger(c.JobID)
			}
			if rec != nil {
				r.chk.Charge(rec, c.Key, dep)
			}
		}})
	}
	for _, d := range h.Deliveries {
		if !d.Accepted { // a send the receiver refused: counted as the simulator's sink counts it
			items = append(items, judged{at: ms(d.AtMs), do: r.chk.Pages.Refused})
			continue
		}
		items = append(items, judged{at: ms(d.AtMs), do: func() { r.chk.Deliver(d.Receiver, d.Notification()) }})
	}
	for _, o := range h.Overflows {
		if o.Policy != store.Reject.String() {
			continue
		}
		// As the simulator's store reports it to its ledger (overflow).
		items = append(items, judged{at: ms(o.AtMs), prio: 1, pos: -1, do: func() {
			led.Refuse(o.JobID)
			if rec := led.Job(o.JobID); rec != nil {
				led.Note(rec, "a full DLQ refused the dead letter (capacity %d)", o.Capacity)
			}
		}})
	}
	for _, b := range h.Breakers {
		items = append(items, judged{at: ms(b.AtMs), do: func() {
			r.chk.Breakers.Transition(ms(b.AtMs), b.Worker, b.Breaker, b.From, b.To, b.Reason)
		}})
	}
	for _, p := range h.Processes {
		if p.Kind != "started" && p.Kind != "restarted" { // a new process: its breakers start closed
			continue
		}
		items = append(items, judged{at: ms(p.AtMs), do: func() { r.chk.Breakers.Restart(p.Worker) }})
	}
	// attempt-outcome-is-the-move and no-lease-left-expired, from the
	// attempts' reports against the stream (the simulator checks them as
	// its attempts end).
	for _, c := range lo.Checks {
		it := judged{at: c.At, do: func() { led.Fail(c.Inv, led.Job(c.Job), "%s", c.Msg) }}
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
	return items
}

// jobN is a generated job's number, 0 for an explicit job's ID.
func jobN(id string) int64 {
	n, ok := JobNumber(id)
	if !ok {
		return 0
	}
	return n
}

// attempt records a worker's report of an attempt, as the simulator's
// engine records its own.
func (r *replay) attempt(a Attempt) {
	led := r.led
	rec := led.Job(a.JobID)
	if rec == nil {
		return // its moves report it
	}
	truth, _ := classify.ParseClass(a.Truth)
	o := worker.Outcome{Action: ActionByName[a.Action]}
	if a.Err != "" {
		o.Err = errors.New(a.Err)
		o.Verdict.Class, _ = classify.ParseClass(a.Class)
		o.Verdict.Severity, _ = classify.ParseSeverity(a.Severity)
		o.Verdict.Rule = a.Rule
	}
	// The ledger hears the attempt at its start (its verdict pending when
	// its move comes); a critical failure's page clock starts when the
	// attempt ended, as the simulator's does.
	if r.chk.Attempt(rec, a.Fault, truth, &o) {
		fp := a.Fingerprint
		if end := time.Duration(a.EndMs) * time.Millisecond; end > r.now() {
			r.at(end, func() { r.chk.Critical(rec, fp) })
		} else {
			r.chk.Critical(rec, fp)
		}
	}
	switch a.Result {
	case "applied":
		led.Settle(rec, true)
		if o.Action == worker.DeadLetter {
			r.decided[a.JobID] = a
		}
	case "fenced", "kept-fenced":
		led.Settle(rec, false)
		led.AddFenced()
		led.Note(rec, "late completion (%s) by %s fenced off: the lease was lost", o.Action, a.Worker)
	case "kept":
		led.Keep(rec)
		led.Note(rec, "the dead letter is kept by worker %s, its lease kept alive", a.Worker)
	default:
		led.Settle(rec, false)
		led.Note(rec, "worker %s could not write the %s (%s): the job comes back when its lease expires", a.Worker, o.Action, a.Result)
	}
}

// callTimes is when each dependency was called, by the gateways' call log,
// when an expectation reads the calls per window (a RetryRate of calls),
// as the simulator keeps them: a drill that kept none would judge a
// window of no calls.
func callTimes(sc *scenarios.Scenario, h *History) map[string][]time.Duration {
	if !sc.ReadsCalls() {
		return nil
	}
	out := map[string][]time.Duration{}
	for _, c := range h.Calls {
		out[c.Dependency] = append(out[c.Dependency], time.Duration(c.AtMs)*time.Millisecond)
	}
	for _, ts := range out {
		slices.Sort(ts)
	}
	return out
}
