package faults

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// Schedule says when a fault is active. Every condition that is set must hold
// (AND). The time conditions (From, Until, Every) are stateless: whether they
// hold at an instant depends on the instant, the scenario seed and the
// fault's name only. Jobs, Tasks, Attempts, FirstCalls and Probability are
// applied by the Injector, per call, in call order.
type Schedule struct {
	// From is the offset from which the fault is active (default 0).
	From time.Duration
	// Until is the offset before which the fault is active; 0 means until
	// the end of the scenario.
	Until time.Duration
	// Every, when set, makes the fault active for a part of every period.
	Every *Periodic
	// Jobs, when not empty, limits the fault to the calls made by these
	// jobs (Call.JobID is one of them): the way to aim a fault at one
	// explicit job on any clock, where a window at the job's arrival
	// instant would miss a call made a little later. Only the targets whose
	// calls carry a job may be limited (Dependency, DLQStore). Jobs change
	// no window: Windows and ActiveAt ignore them.
	Jobs []string
	// Tasks, when not empty, limits the fault to the calls made by jobs of
	// these tasks (Call.Task is one of them). Like Jobs, only Dependency
	// and DLQStore faults take it, and it changes no window.
	Tasks []string
	// Attempts, when not empty, limits the fault to the calls made by
	// these attempts of a job (Call.Attempt is one of them; 1 is a job's
	// first attempt): "the gateway times out on the first attempt only".
	// Like Jobs, only Dependency and DLQStore faults take it, and it
	// changes no window. A call that carries no attempt (0) is never hit.
	Attempts []int
	// FirstCalls, when above 0, limits the fault to the first N calls that
	// reach it while its time conditions hold (and, with Jobs, Tasks or
	// Attempts, that those select), over the whole scenario (whether or
	// not the Probability draw then hits).
	FirstCalls int
	// Probability is the chance that a call reaching the fault while its
	// time conditions hold (and its FirstCalls budget lasts) is hit. 0 means
	// 1; it must be in [0,1]. No draw is made when it is 0 or 1.
	Probability float64
	// When, when set, aims a worker fault at a state instead of its
	// windows' first instants: in each window the fault strikes each
	// targeted worker at the first instant the worker is in the state (see
	// When), at most once; a worker never in it is not struck (a Miss).
	// Only Worker faults take it, and it changes no window.
	When *When
}

// Periodic turns a fault on for Duty of every Period. On-phases start at
// Phase + k·Period for every integer k (the pattern covers the whole
// timeline; Schedule.From cuts it), each shifted by a jitter drawn for its
// period index k from [-Jitter, +Jitter] in whole milliseconds: a hash of
// (seed, fault name, k), so that any instant can be asked about in any
// order. Overlapping on-phases merge.
type Periodic struct {
	// Period is the length of one cycle; required, > 0.
	Period time.Duration
	// Duty is the fraction of each period the fault is on, in (0,1]. The
	// on-phase lasts Duty·Period rounded to whole milliseconds, at least 1ms.
	Duty float64
	// Jitter shifts each on-phase by up to ±Jitter; at most Period/2.
	Jitter time.Duration
	// Phase is the offset of the first on-phase start (period index 0).
	Phase time.Duration
}

// Window is one interval [From, Until) during which a fault's time
// conditions hold.
type Window struct {
	// From is the window's first instant.
	From time.Duration
	// Until is the instant after its last.
	Until time.Duration
}

// String returns e.g. "[1m0s, 1m30s)".
func (w Window) String() string { return "[" + w.From.String() + ", " + w.Until.String() + ")" }

// Validate checks the schedule: durations ≥ 0 and whole milliseconds, Until
// after From when set, a period > 0 with a duty in (0,1] lasting at least a
// millisecond and a jitter of at most half the period, job IDs that are
// neither empty nor repeated, likewise task names, attempts ≥ 1 and not
// repeated, FirstCalls ≥ 0, a probability in [0,1] and, with When, a known
// state and a dependency.
// Every problem is reported, each a *FieldError naming
// its field ("every.duty"), joined with errors.Join.
func (s Schedule) Validate() error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	add(checkDuration("from", s.From))
	add(checkDuration("until", s.Until))
	if s.Until > 0 && s.Until <= s.From {
		add(&FieldError{Field: "until", Msg: fmt.Sprintf("must be after from (%s), got %s", s.From, s.Until), Hint: "0 means until the end"})
	}
	if p := s.Every; p != nil {
		add(p.validate("every."))
	}
	for i, id := range s.Jobs {
		switch {
		case id == "":
			add(&FieldError{Field: fmt.Sprintf("jobs[%d]", i), Msg: "empty job ID", Hint: "name an explicit job's ID; leave jobs out to hit every job"})
		case slices.Contains(s.Jobs[:i], id):
			add(&FieldError{Field: fmt.Sprintf("jobs[%d]", i), Msg: fmt.Sprintf("duplicate job ID %q", id)})
		}
	}
	for i, t := range s.Tasks {
		switch {
		case t == "":
			add(&FieldError{Field: fmt.Sprintf("tasks[%d]", i), Msg: "empty task name", Hint: "name a task of the workload; leave tasks out to hit every task"})
		case slices.Contains(s.Tasks[:i], t):
			add(&FieldError{Field: fmt.Sprintf("tasks[%d]", i), Msg: fmt.Sprintf("duplicate task %q", t)})
		}
	}
	for i, n := range s.Attempts {
		switch {
		case n < 1:
			add(&FieldError{Field: fmt.Sprintf("attempts[%d]", i), Msg: fmt.Sprintf("must be ≥ 1, got %d", n), Hint: "1 is a job's first attempt, 2 its first retry"})
		case slices.Contains(s.Attempts[:i], n):
			add(&FieldError{Field: fmt.Sprintf("attempts[%d]", i), Msg: fmt.Sprintf("duplicate attempt %d", n)})
		}
	}
	if s.FirstCalls < 0 {
		add(&FieldError{Field: "firstCalls", Msg: fmt.Sprintf("must be ≥ 0, got %d", s.FirstCalls), Hint: "0 means no limit"})
	}
	add(checkProbability("probability", s.Probability))
	if s.When != nil {
		add(s.When.validate())
	}
	return errors.Join(errs...)
}

func (p Periodic) validate(prefix string) error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	switch {
	case p.Period <= 0:
		add(&FieldError{Field: prefix + "period", Msg: "must be > 0, got " + p.Period.String()})
	default:
		add(checkDuration(prefix+"period", p.Period))
	}
	if !(p.Duty > 0 && p.Duty <= 1) {
		add(&FieldError{Field: prefix + "duty", Msg: "must be in (0,1], got " + formatFloat(p.Duty)})
	} else if p.Period > 0 && onMillis(p.Period, p.Duty) < 1 {
		add(&FieldError{Field: prefix + "duty", Msg: fmt.Sprintf("%s of period %s is less than 1ms", formatFloat(p.Duty), p.Period)})
	}
	add(checkDuration(prefix+"jitter", p.Jitter))
	if p.Period > 0 && p.Jitter > p.Period/2 {
		add(&FieldError{Field: prefix + "jitter", Msg: fmt.Sprintf("must be at most half the period (%s), got %s", p.Period/2, p.Jitter)})
	}
	add(checkDuration(prefix+"phase", p.Phase))
	return errors.Join(errs...)
}

// valid reports what Validate does about the time conditions, FirstCalls
// and Probability, without building errors: the cheap check ActiveAt and
// Windows make on every call. Jobs, Tasks and Attempts change no window and
// are not looked at.
func (s Schedule) valid() bool {
	return wholeMillis(s.From) && wholeMillis(s.Until) && !(s.Until > 0 && s.Until <= s.From) &&
		(s.Every == nil || s.Every.valid()) && s.FirstCalls >= 0 && s.Probability >= 0 && s.Probability <= 1
}

func (p Periodic) valid() bool {
	return p.Period > 0 && wholeMillis(p.Period) && p.Duty > 0 && p.Duty <= 1 && onMillis(p.Period, p.Duty) >= 1 &&
		wholeMillis(p.Jitter) && p.Jitter <= p.Period/2 && wholeMillis(p.Phase)
}

func wholeMillis(d time.Duration) bool { return d >= 0 && d%time.Millisecond == 0 }

// onMillis is the length of an on-phase in whole milliseconds.
func onMillis(period time.Duration, duty float64) int64 {
	ms := int64(period / time.Millisecond)
	return min(int64(math.Round(duty*float64(ms))), ms)
}

// ActiveAt reports whether the schedule's time conditions (From, Until,
// Every) hold at offset t for the fault named fault in a scenario with the
// given seed. It is stateless: any instant may be asked about in any order.
// An invalid schedule is active nowhere.
func (s Schedule) ActiveAt(seed uint64, fault string, t time.Duration) bool {
	c, ok := s.compile(seed, NameHash(fault))
	return ok && c.on(millisFloor(t))
}

// Windows lists the windows of s within [0, horizon), in order, at most max
// of them; truncated reports true when more existed. Windows never touch or
// overlap: adjacent on-phases are merged. A window is clipped to the horizon.
// An invalid schedule, a horizon ≤ 0 or a max < 1 lists none (truncated then
// says whether there were any).
func (s Schedule) Windows(seed uint64, fault string, horizon time.Duration, max int) (ws []Window, truncated bool) {
	c, ok := s.compile(seed, NameHash(fault))
	if !ok {
		return nil, false
	}
	return collect(&c, horizon, max)
}

// windowSource enumerates a fault's windows in milliseconds: the first one
// ending after t, clipped to [t, hi).
type windowSource interface {
	next(t, hi int64) (from, until int64, ok bool)
}

// collect lists a source's windows within [0, horizon).
func collect(src windowSource, horizon time.Duration, limit int) ([]Window, bool) {
	if horizon <= 0 {
		return nil, false
	}
	hi := horizon / time.Millisecond
	if horizon%time.Millisecond != 0 {
		hi++
	}
	var ws []Window
	t := int64(0)
	for {
		a, b, ok := src.next(t, int64(hi))
		if !ok {
			return ws, false
		}
		if len(ws) >= limit {
			return ws, true
		}
		ws = append(ws, Window{From: fromMillis(a, horizon), Until: fromMillis(b, horizon)})
		t = b
	}
}

// fromMillis converts ms to a duration, clipped to the horizon.
func fromMillis(ms int64, horizon time.Duration) time.Duration {
	if ms > int64(horizon/time.Millisecond) {
		return horizon
	}
	return time.Duration(ms) * time.Millisecond
}

// millisFloor is the whole millisecond holding t: every boundary is a whole
// millisecond, so t is inside [a, b) exactly when millisFloor(t) is.
func millisFloor(t time.Duration) int64 {
	return floorDiv(int64(t), int64(time.Millisecond))
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

const openEnd = math.MaxInt64

// compiled is a valid schedule's time conditions in milliseconds.
type compiled struct {
	from, until int64 // until is openEnd when the schedule has none
	hasEvery    bool
	every       periodic
}

// compile converts a schedule; ok is false when it is invalid.
func (s Schedule) compile(seed, key uint64) (compiled, bool) {
	if !s.valid() {
		return compiled{}, false
	}
	c := compiled{from: int64(s.From / time.Millisecond), until: openEnd}
	if s.Until > 0 {
		c.until = int64(s.Until / time.Millisecond)
	}
	if s.Every != nil {
		c.hasEvery = true
		c.every = s.Every.compile(seed, key)
	}
	return c, true
}

func (c *compiled) on(tm int64) bool {
	return tm >= c.from && tm < c.until && (!c.hasEvery || c.every.on(tm))
}

func (c *compiled) next(t, hi int64) (int64, int64, bool) {
	t, hi = max(t, c.from), min(hi, c.until)
	if t >= hi {
		return 0, 0, false
	}
	if !c.hasEvery {
		return t, hi, true
	}
	return c.every.next(t, hi)
}

// periodic is a valid Periodic in milliseconds, keyed for its jitter.
type periodic struct {
	period, dur, jitter, phase int64
	seed, key                  uint64
	always                     bool // on everywhere: no jitter and a full duty
}

func (p Periodic) compile(seed, key uint64) periodic {
	c := periodic{
		period: int64(p.Period / time.Millisecond),
		dur:    onMillis(p.Period, p.Duty),
		jitter: int64(p.Jitter / time.Millisecond),
		phase:  int64(p.Phase / time.Millisecond),
		seed:   seed,
		key:    key,
	}
	c.always = c.jitter == 0 && c.dur >= c.period
	return c
}

// start is the start of period k's on-phase. Starts never decrease with k,
// because the jitter is at most half a period.
func (p *periodic) start(k int64) int64 {
	s := p.phase + k*p.period
	if p.jitter > 0 {
		s += int64(jitterHash(p.seed, p.key, k)%uint64(2*p.jitter+1)) - p.jitter
	}
	return s
}

func (p *periodic) on(tm int64) bool {
	if p.always {
		return true
	}
	rel := tm - p.phase
	// Only periods whose on-phase can hold tm: start ≤ tm < start+dur.
	lo := floorDiv(rel-p.jitter-p.dur, p.period) + 1
	for k := floorDiv(rel+p.jitter, p.period); k >= lo; k-- {
		if s := p.start(k); s <= tm && tm < s+p.dur {
			return true
		}
	}
	return false
}

func (p *periodic) next(t, hi int64) (int64, int64, bool) {
	if t >= hi {
		return 0, 0, false
	}
	if p.always {
		return t, hi, true
	}
	// The first on-phase ending after t (ends never decrease either).
	k := floorDiv(t-p.phase-p.jitter-p.dur, p.period) + 1
	s := p.start(k)
	for s+p.dur <= t {
		k++
		s = p.start(k)
	}
	if s >= hi {
		return 0, 0, false
	}
	from, until := max(s, t), s+p.dur
	for until < hi {
		k++
		s = p.start(k)
		if s > until {
			break
		}
		until = max(until, s+p.dur)
	}
	return from, min(until, hi), true
}

// intersection is the windows where both sources' windows hold.
type intersection struct{ a, b windowSource }

func (x intersection) next(t, hi int64) (int64, int64, bool) {
	for {
		a1, b1, ok := x.a.next(t, hi)
		if !ok {
			return 0, 0, false
		}
		a2, b2, ok := x.b.next(a1, hi)
		if !ok {
			return 0, 0, false
		}
		if a2 < b1 {
			return a2, min(b1, b2), true
		}
		t = a2
	}
}

// jobSet is a schedule's Jobs, prepared for the hot path: a short list is
// scanned, a long one looked up in a map; neither allocates. The zero
// jobSet is "every job".
type jobSet struct {
	ids []string
	m   map[string]struct{}
}

// jobSetScan is the longest list scanned rather than hashed.
const jobSetScan = 8

func newJobSet(ids []string) jobSet {
	if len(ids) == 0 {
		return jobSet{}
	}
	s := jobSet{ids: slices.Clone(ids)}
	if len(ids) > jobSetScan {
		s.m = make(map[string]struct{}, len(ids))
		for _, id := range ids {
			s.m[id] = struct{}{}
		}
	}
	return s
}

// limited reports whether the set limits the fault to some jobs.
func (s *jobSet) limited() bool { return len(s.ids) > 0 }

// has reports whether id is in a limiting set.
func (s *jobSet) has(id string) bool {
	if s.m != nil {
		_, ok := s.m[id]
		return ok
	}
	for _, x := range s.ids {
		if x == id {
			return true
		}
	}
	return false
}

// selector is a schedule's Jobs, Tasks and Attempts, prepared for the hot
// path. The zero selector selects every call.
type selector struct {
	jobs, tasks jobSet
	attempts    []int
}

func newSelector(s Schedule) selector {
	return selector{jobs: newJobSet(s.Jobs), tasks: newJobSet(s.Tasks), attempts: slices.Clone(s.Attempts)}
}

// selects reports whether call c is one the schedule's Jobs, Tasks and
// Attempts let through (all that are set must hold).
func (s *selector) selects(c Call) bool {
	if s.jobs.limited() && !s.jobs.has(c.JobID) {
		return false
	}
	if s.tasks.limited() && !s.tasks.has(c.Task) {
		return false
	}
	return len(s.attempts) == 0 || slices.Contains(s.attempts, c.Attempt)
}

// clone returns s with its slices copied, so that a caller changing the
// copy's lists changes nothing in s.
func (s Schedule) clone() Schedule {
	s.Jobs, s.Tasks, s.Attempts = slices.Clone(s.Jobs), slices.Clone(s.Tasks), slices.Clone(s.Attempts)
	if s.Every != nil {
		p := *s.Every
		s.Every = &p
	}
	if s.When != nil {
		w := *s.When
		s.When = &w
	}
	return s
}
