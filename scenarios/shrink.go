package scenarios

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/faultline/faultline/reports"
)

// RunFunc runs one scenario with one seed: the caller's simulator (sim.Run
// with its options), which this package does not import.
type RunFunc func(ctx context.Context, sc Scenario, seed uint64) (*reports.Result, error)

// ShrinkResult is what Shrink found.
type ShrinkResult struct {
	// Document is the smallest failing document found: the original with
	// fault windows removed, shortened and thinned.
	Document *Document
	// Result is its run's result; Signature how it fails.
	Result    *reports.Result
	Signature string
	// Runs counts the runs Shrink made; Removed the faults it removed.
	Runs, Removed int
	// Idle names the faults removed at the end because they never hit in
	// the shrunk run: a fault that never hit cannot be the cause.
	Idle []string
	// Exhausted says the run budget ran out before no step helped.
	Exhausted bool
}

// Signature says how a result fails: the violated invariant, or else the
// first failed expectation; "" for a pass. A shrunk scenario must fail
// the same way as the original.
func Signature(r *reports.Result) string {
	if r == nil {
		return ""
	}
	if r.Verdict == reports.Errored || r.Verdict == reports.Interrupted {
		return string(r.Verdict) + ": " + r.Error
	}
	if len(r.Violations) > 0 {
		return "invariant " + r.Violations[0].Invariant
	}
	for _, e := range r.Expectations {
		if e.Verdict != reports.Passed {
			return "expectation " + e.Name
		}
	}
	return ""
}

// ErrPasses: the document given to Shrink does not fail with that seed.
var ErrPasses = errors.New("the scenario passes with this seed: nothing to shrink")

// Shrink looks for the smallest fault schedule of l's document that still
// fails with seed the way the original does, greedily: it tries removing
// each fault, then halving each fault's window (either half), its duty
// cycle, its jobs (either half), its number of calls and its probability,
// keeps the first change
// that still fails, and starts again, until no change helps or maxRuns runs
// were made (default 200). Everything but the faults stays as it was.
//
// The result never presents a fault that did not hit as (part of) the
// cause: a fault thinned to zero hits, or one that never hit at all, is
// removed from the shrunk schedule at the end (one more run checks it
// still fails the same way, and it does: a fault that never hit changed
// nothing; were it otherwise, the fault is kept and not listed in Idle).
func Shrink(ctx context.Context, l *Loaded, seed uint64, run RunFunc, maxRuns int) (*ShrinkResult, error) {
	if maxRuns <= 0 {
		maxRuns = 200
	}
	try := func(d *Document) (*reports.Result, error) {
		sc, err := l.withFaults(d)
		if err != nil {
			return nil, err
		}
		return run(ctx, sc, seed)
	}
	cur := cloneFaults(l.Document)
	res, err := try(cur)
	if err != nil {
		return nil, err
	}
	want := Signature(res)
	if want == "" {
		return nil, ErrPasses
	}
	out := &ShrinkResult{Document: cur, Result: res, Signature: want, Runs: 1}
	original := len(cur.Faults)
	for {
		improved := false
		for _, cand := range candidates(cur, Duration(l.Scenario.Duration)) {
			if out.Runs >= maxRuns {
				out.Exhausted = true
				break
			}
			if err := ctx.Err(); err != nil {
				return out, err
			}
			r, err := try(cand)
			out.Runs++
			if err != nil {
				continue // a candidate the converter refuses is no smaller scenario
			}
			if Signature(r) == want {
				cur, out.Document, out.Result = cand, cand, r
				improved = true
				break
			}
		}
		if !improved || out.Exhausted {
			break
		}
	}
	if err := dropIdle(ctx, out, want, try); err != nil {
		return out, err
	}
	out.Removed = original - len(out.Document.Faults)
	return out, nil
}

// dropIdle removes from out's document the faults that never hit in its
// run, if the run without them still fails the way wanted.
func dropIdle(ctx context.Context, out *ShrinkResult, want string, try func(*Document) (*reports.Result, error)) error {
	idle := map[string]bool{}
	for _, f := range out.Result.Faults {
		if f.Hits == 0 {
			idle[f.Name] = true
		}
	}
	if len(idle) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	cand := cloneFaults(out.Document)
	cand.Faults = slices.DeleteFunc(cand.Faults, func(f Fault) bool { return idle[f.Name] })
	r, err := try(cand)
	out.Runs++
	if err != nil || Signature(r) != want {
		return nil
	}
	out.Document, out.Result = cand, r
	out.Idle = slices.Sorted(maps.Keys(idle))
	return nil
}

// withFaults converts d (which differs from l's document in its faults
// only) with l's classifier rules.
func (l *Loaded) withFaults(d *Document) (Scenario, error) {
	dd := *d
	dd.System.RulesFile = ""
	sc, probs := convert(&dd, nil, nil, l.Scenario.Limits) // within the limits it was loaded with
	if len(probs) > 0 {
		return sc, fmt.Errorf("%s", probs[0].Error())
	}
	sc.System.Rules = l.Scenario.System.Rules
	sc.System.External = l.Scenario.System.External // its commands as the loader resolved them
	return sc, nil
}

// candidates lists the one-step-smaller variants of d's faults, most
// drastic first.
func candidates(d *Document, end Duration) []*Document {
	var out []*Document
	const ms = Duration(time.Millisecond)
	with := func(i int, f Fault) *Document {
		c := cloneFaults(d)
		c.Faults[i] = f
		return c
	}
	// Remove a fault.
	for i := range d.Faults {
		c := cloneFaults(d)
		c.Faults = slices.Delete(c.Faults, i, i+1)
		out = append(out, c)
	}
	for i, f := range d.Faults {
		s := f.Schedule
		from, until := s.From, s.Until
		if until == 0 || until > end {
			until = end
		}
		// Shorten its window: keep either half (whole milliseconds).
		if span := until - from; span >= 2*ms {
			mid := from + (span/2/ms)*ms
			a, b := cloneFault(f), cloneFault(f)
			a.Schedule.Until = mid
			b.Schedule.From, b.Schedule.Until = mid, until
			out = append(out, with(i, a), with(i, b))
		}
		// Halve its duty cycle (while an on-phase stays at least 1 ms).
		if e := s.Every; e != nil && float64(e.Period)*e.Duty/2 >= float64(ms) {
			c := cloneFault(f)
			c.Schedule.Every.Duty = e.Duty / 2
			out = append(out, with(i, c))
		}
		// Aim it at fewer jobs: keep either half of them.
		if n := len(s.Jobs); n >= 2 {
			a, b := cloneFault(f), cloneFault(f)
			a.Schedule.Jobs = a.Schedule.Jobs[:n/2]
			b.Schedule.Jobs = b.Schedule.Jobs[n/2:]
			out = append(out, with(i, a), with(i, b))
		}
		// Thin it: half the calls, half the probability.
		if s.FirstCalls > 1 {
			c := cloneFault(f)
			c.Schedule.FirstCalls = s.FirstCalls / 2
			out = append(out, with(i, c))
		}
		if p := s.Probability; p == 0 || p > 0.01 {
			if p == 0 {
				p = 1
			}
			c := cloneFault(f)
			c.Schedule.Probability = p / 2
			out = append(out, with(i, c))
		}
	}
	return out
}

func cloneFaults(d *Document) *Document {
	c := *d
	c.Faults = make([]Fault, len(d.Faults))
	for i, f := range d.Faults {
		c.Faults[i] = cloneFault(f)
	}
	return &c
}

func cloneFault(f Fault) Fault {
	f.Params = maps.Clone(f.Params)
	f.Schedule.Jobs = slices.Clone(f.Schedule.Jobs)
	if f.Schedule.Every != nil {
		e := *f.Schedule.Every
		f.Schedule.Every = &e
	}
	return f
}
