package faults

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/faultline/faultline/reference/classify"
)

// Injector applies a scenario's faults to calls, deterministically: the same
// seed, faults and calls give the same effects. Each fault draws from its own
// stream (Stream(seed, name)), so removing one fault changes no other
// fault's effects. An Injector is not safe for concurrent use; the simulator
// drives it from one goroutine, and a live driver must serialise its calls.
type Injector struct {
	seed   uint64
	faults []Fault
	st     []faultState
	byKind [kindCount][]int32 // indices into st, in fault order
}

// faultState is one fault, prepared for the hot path.
type faultState struct {
	name    string
	target  Target
	sched   compiled
	gate    *periodic // the model's own windows (a flapping primary), or nil
	sel     selector  // Schedule.Jobs, Tasks and Attempts; zero when every call is hit
	limited bool      // FirstCalls is set
	budget  int       // calls left when limited
	drawP   bool      // a probability draw is needed
	p       float64
	rng     *rand.Rand
	app     applier
	model   string
	class   classify.Class

	hits        int64
	first, last time.Duration
}

// NewInjector validates every fault (all problems joined with errors.Join,
// each a *FieldError naming its fault, or "faults[i]" for a nameless one),
// refuses duplicate names, and prepares the faults: their error values are
// built once here, so that Call allocates nothing.
func NewInjector(seed uint64, fs []Fault) (*Injector, error) {
	var errs []error
	seen := make(map[string]int, len(fs))
	infos := make([]modelInfo, len(fs))
	for i, f := range fs {
		if err := f.Validate(); err != nil {
			if f.Name == "" {
				err = within(err, "", fmt.Sprintf("faults[%d]", i))
			}
			errs = append(errs, err)
		}
		if f.Name != "" {
			if j, dup := seen[f.Name]; dup {
				errs = append(errs, &FieldError{Fault: f.Name, Field: "name", Msg: fmt.Sprintf("duplicate: faults[%d] and faults[%d] share it", j, i), Hint: "names key the faults' random streams; give each its own"})
			} else {
				seen[f.Name] = i
			}
		}
		if f.Model != nil {
			infos[i] = inspect(f.Model)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	in := &Injector{seed: seed, faults: append([]Fault(nil), fs...), st: make([]faultState, len(fs))}
	for i := range in.faults {
		in.faults[i].Schedule = in.faults[i].Schedule.clone()
	}
	for i, f := range fs {
		key := NameHash(f.Name)
		b := binding{seed: seed, fault: f.Name, key: key, target: f.Target}
		sched, _ := f.Schedule.compile(seed, key) // validated above
		s := faultState{
			name:    f.Name,
			target:  f.Target,
			sched:   sched,
			sel:     newSelector(f.Schedule),
			limited: f.Schedule.FirstCalls > 0,
			budget:  f.Schedule.FirstCalls,
			p:       f.Schedule.Probability,
			drawP:   f.Schedule.Probability > 0 && f.Schedule.Probability < 1,
			rng:     Stream(seed, f.Name),
			app:     modelApplier{f.Model},
			model:   infos[i].name,
			class:   infos[i].class,
		}
		if m, ok := f.Model.(binder); ok {
			s.app = m.bind(b)
		}
		if g, ok := f.Model.(gater); ok {
			s.gate = g.gate(b)
		}
		in.st[i] = s
		if !isInside(f.Model) { // struck through Strike, never by a call
			in.byKind[f.Target.Kind] = append(in.byKind[f.Target.Kind], int32(i))
		}
	}
	return in, nil
}

// Seed returns the scenario seed the Injector was built with.
func (in *Injector) Seed() uint64 { return in.seed }

// Call returns what happens to call c on target t. The faults hitting t (a
// fault whose target has Name "" hits every name of its kind, one naming "x"
// only "x") are evaluated in the order given. A fault is active for the call
// when c is made by one of its schedule's Jobs, Tasks and Attempts (those
// it names), its
// schedule's time conditions hold at c.At (and, for a flapping primary, the
// primary is down), its FirstCalls budget is not spent, and its
// probability draw hits; each active fault's hit is counted, even when an
// earlier fault already decided the call, so that no fault's draws depend on
// another's. Latencies of active faults add up; the first active fault that
// yields an error decides Err, Class, Charged and Fault; the first crash and
// the first stall likewise decide theirs.
//
// Call allocates nothing; when no fault is active it draws nothing either.
func (in *Injector) Call(t Target, c Call) Effect {
	if int(t.Kind) >= kindCount {
		return Effect{}
	}
	idx := in.byKind[t.Kind]
	if len(idx) == 0 {
		return Effect{}
	}
	tm := millisFloor(c.At)
	var out Effect
	errFault, crashFault, stallFault, latFault := -1, -1, -1, -1
	for _, i := range idx {
		f := &in.st[i]
		if f.target.Name != "" && f.target.Name != t.Name {
			continue
		}
		e, ok := f.hit(c, tm)
		if !ok {
			continue
		}
		if e.Latency > 0 {
			out.Latency = satAdd(out.Latency, e.Latency)
			latFault = int(i)
		}
		if e.Err != nil && errFault < 0 {
			errFault = int(i)
			out.Err, out.Class, out.Charged = e.Err, e.Class, e.Charged
		}
		if (e.Crash || e.Stop) && crashFault < 0 {
			crashFault = int(i)
			out.Crash, out.Stop, out.RestartAfter = e.Crash, e.Stop, e.RestartAfter
		}
		if e.StallFor > 0 && stallFault < 0 {
			stallFault = int(i)
			out.StallFor = e.StallFor
		}
	}
	for _, i := range [...]int{errFault, crashFault, stallFault, latFault} {
		if i >= 0 {
			out.Fault = in.st[i].name
			break
		}
	}
	return out
}

// CallFault is Call restricted to the i-th fault (in the order given to
// NewInjector): what that fault alone does to call c on target t, counted
// like a hit of Call. A driver that acts at a fault's own instants (a worker
// crash at the start of each of its windows) uses it so that one fault's
// instant does not fire the others. An index out of range, or a target the
// fault does not hit, is no effect.
func (in *Injector) CallFault(i int, t Target, c Call) Effect {
	if i < 0 || i >= len(in.st) {
		return Effect{}
	}
	f := &in.st[i]
	if f.target.Kind != t.Kind || (f.target.Name != "" && f.target.Name != t.Name) {
		return Effect{}
	}
	e, ok := f.hit(c, millisFloor(c.At))
	if !ok {
		return Effect{}
	}
	if e.Err != nil || e.Crash || e.Stop || e.StallFor > 0 || e.Latency > 0 {
		e.Fault = f.name
	}
	return e
}

// hit decides whether the fault is active for call c at tm — the call is
// by one of its jobs, of its tasks and attempts, its time conditions hold,
// its call budget is not spent, its probability draw hits — and, if so,
// counts the hit and applies the model. A call the selectors leave out
// spends no budget and draws nothing.
func (f *faultState) hit(c Call, tm int64) (Effect, bool) {
	if !f.sel.selects(c) {
		return Effect{}, false
	}
	if !f.sched.on(tm) || (f.gate != nil && !f.gate.on(tm)) {
		return Effect{}, false
	}
	if f.limited {
		if f.budget <= 0 {
			return Effect{}, false
		}
		f.budget--
	}
	if f.drawP && !(f.rng.Float64() < f.p) {
		return Effect{}, false
	}
	if f.hits == 0 || c.At < f.first {
		f.first = c.At
	}
	if f.hits == 0 || c.At > f.last {
		f.last = c.At
	}
	f.hits++
	return f.app.apply(c, f.rng), true
}

func satAdd(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// Faults returns the faults, in order (copies: changing one's Jobs, Tasks
// or Attempts changes nothing in the Injector).
func (in *Injector) Faults() []Fault {
	out := append([]Fault(nil), in.faults...)
	for i := range out {
		out[i].Schedule = out[i].Schedule.clone()
	}
	return out
}

// FaultStats is what one fault did: how many calls it hit, and when.
type FaultStats struct {
	// Name is the fault's name.
	Name string
	// Target is what the fault hits.
	Target Target
	// Model is the model's catalogue name.
	Model string
	// Class is the model's true class.
	Class classify.Class
	// Hits counts the calls the fault was active for.
	Hits int64
	// FirstHit and LastHit are the earliest and latest offsets of those
	// calls; valid when Hits > 0.
	FirstHit, LastHit time.Duration
}

// Stats returns the hits per fault, in fault order.
func (in *Injector) Stats() []FaultStats {
	out := make([]FaultStats, len(in.st))
	for i := range in.st {
		s := &in.st[i]
		out[i] = FaultStats{Name: s.name, Target: s.target, Model: s.model, Class: s.class, Hits: s.hits, FirstHit: s.first, LastHit: s.last}
	}
	return out
}

// FaultWindows is when one fault's time conditions hold, for reports and
// for the simulator (a worker crash happens at the start of each window).
type FaultWindows struct {
	// Fault is the fault's name.
	Fault string
	// Target is what the fault hits.
	Target Target
	// Model is the model's catalogue name.
	Model string
	// Class is the model's true class.
	Class classify.Class
	// Windows are the fault's windows within [0, horizon), in order.
	Windows []Window
	// Truncated says more windows existed than were listed.
	Truncated bool
}

// Windows lists every fault's windows within [0, horizon), at most
// maxPerFault each: its schedule's windows (Schedule.Windows) and, for a
// flapping primary, only where the primary is also down. Jobs, FirstCalls
// and Probability are per call and do not show in windows.
func (in *Injector) Windows(horizon time.Duration, maxPerFault int) []FaultWindows {
	out := make([]FaultWindows, len(in.st))
	for i := range in.st {
		s := &in.st[i]
		var src windowSource = &s.sched
		if s.gate != nil {
			src = intersection{&s.sched, s.gate}
		}
		ws, truncated := collect(src, horizon, maxPerFault)
		out[i] = FaultWindows{Fault: s.name, Target: s.target, Model: s.model, Class: s.class, Windows: ws, Truncated: truncated}
	}
	return out
}
