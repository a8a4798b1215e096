package scenarios

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/faultline/faultline/internal/didyoumean"

	"github.com/faultline/faultline/reference/classify"
)

// Problem is one thing wrong with a document: Path names the field the way
// the file writes it ("faults[2].params.after"), Message says what was
// expected. The loader turns paths into file:line:col.
type Problem struct {
	Path    string
	Message string
}

// Error returns "path: message".
func (p Problem) Error() string {
	if p.Path == "" {
		return p.Message
	}
	return p.Path + ": " + p.Message
}

// converter gathers every problem instead of stopping at the first.
type converter struct {
	problems []Problem
	// rules loads a classifier rule file named by the document.
	rules func(path string) ([]classify.Rule, error)
	// programs resolves and checks the programs and folders of the
	// document's commands; nil leaves them as written, unchecked.
	programs programs
	// deps are the document's dependencies (declared, or named by a
	// task), for the expectations that name one.
	deps []string
	// breakers says the document has system.breakers: the only way a job
	// reaches the fallback queue.
	breakers bool
}

// programs resolves the programs and working directories a document's
// commands name, relative to the scenario's file, and says why one cannot
// be run.
type programs interface {
	// program returns the path to run for ref (a path with a slash made
	// absolute, a bare name as it is) and, when it cannot be run (no such
	// file, not executable, not on PATH), why. A ref holding a
	// placeholder ({namespace}) is resolved but not checked.
	program(ref string) (string, error)
	// folder returns the working directory for ref ("" is the scenario's
	// folder) and, when it is not a folder, why.
	folder(ref string) (string, error)
}

func (c *converter) bad(path, format string, args ...any) {
	c.problems = append(c.problems, Problem{Path: path, Message: fmt.Sprintf(format, args...)})
}

// Convert maps a document (includes already merged) onto the simulator's
// scenario. rules loads a rules file the document names (nil refuses
// one). Every problem is returned, not only the first; the scenario is
// only meaningful when there are none.
//
// The simulator's own check (Scenario.Validate: every component's
// configuration as a run builds it, references that name nothing, the run
// limits) runs too, each of its problems at the document's path; so a
// scenario Convert accepts is one sim.Run runs. The limits are the
// defaults (Limits.Load sets others).
//
// The commands of a black-box system (system.external) are left as written
// and not looked for: only the loader knows the file they are relative to.
func Convert(d *Document, rules func(path string) ([]classify.Rule, error)) (Scenario, []Problem) {
	return convert(d, rules, nil, RunLimits{})
}

func convert(d *Document, rules func(path string) ([]classify.Rule, error), progs programs, lim RunLimits) (Scenario, []Problem) {
	c := &converter{rules: rules, programs: progs}
	sc := c.convert(d)
	sc.Limits = lim
	own := slices.Clone(c.problems)
	for _, err := range flatten(sc.WithDefaults().Validate()) {
		pr := Problem{Message: err.Error()}
		var se *ScenarioError
		if errors.As(err, &se) {
			pr = Problem{Path: docPath(d, simPath(se.Field)), Message: se.Reason}
		}
		// A value the conversion already refused left a zero or a hole
		// behind it: the simulator's word on it would be a second report
		// of the same problem.
		if slices.ContainsFunc(own, func(o Problem) bool { return related(o.Path, pr.Path) }) {
			continue
		}
		c.problems = append(c.problems, pr)
	}
	return sc, c.problems
}

// docPath resolves a path the simulator's fields cannot name alone: an
// expectation's breaker is one of three keys.
func docPath(d *Document, p string) string {
	rest, ok := strings.CutPrefix(p, "expect[")
	num, key, _ := strings.Cut(rest, "]")
	i, err := strconv.Atoi(num)
	if !ok || err != nil || i < 0 || i >= len(d.Expect) {
		return p
	}
	switch key {
	case ".minGap":
		return "expect[" + num + "].attemptGapsAtLeast"
	case ".at":
		if d.Expect[i].DrainedBy != nil {
			return "expect[" + num + "].drainedBy"
		}
		return p
	case ".breaker":
	default:
		return p
	}
	switch e := d.Expect[i]; {
	case e.BreakerOpened != "":
		return "expect[" + num + "].breakerOpened"
	case e.BreakerClosedBy != "":
		return "expect[" + num + "].breakerClosedBy"
	}
	return "expect[" + num + "].breakerTransitions"
}

// related reports whether one path holds the other (or they are one).
func related(a, b string) bool {
	within := func(in, out string) bool {
		return out == "" || in == out || (strings.HasPrefix(in, out) && (in[len(out)] == '.' || in[len(out)] == '['))
	}
	return within(a, b) || within(b, a)
}

func (c *converter) convert(d *Document) Scenario {
	if d.APIVersion != APIVersion {
		c.bad("apiVersion", "expected %q, got %q", APIVersion, d.APIVersion)
	}
	if d.Kind != KindScenario {
		c.bad("kind", "expected %q, got %q", KindScenario, d.Kind)
	}
	sc := Scenario{
		Name: d.Metadata.Name, Description: d.Metadata.Description, Tags: slices.Clone(d.Metadata.Tags),
		Duration: d.Duration.D(), Sample: d.Sample.D(),
	}
	if sc.Name == "" {
		c.bad("metadata.name", "expected a name")
	}
	if d.Duration == 0 {
		c.bad("duration", "expected a positive duration like 10m")
	}
	if d.Seed != nil {
		sc.Seed = *d.Seed
	}
	if d.Start != "" {
		t, err := time.Parse(time.RFC3339, d.Start)
		if err != nil {
			c.bad("start", "expected an RFC 3339 time like 2026-01-05T09:00:00Z, got %q", d.Start)
		}
		sc.Start = t.UTC()
	}
	sc.Workload = c.workload(d.Workload)
	sc.Workers = WorkersSpec{Count: d.Workers.Count, Processes: d.Workers.Processes, LeaseTTL: d.Workers.LeaseTTL.D()}
	for _, dep := range d.Dependencies {
		sc.Dependencies = append(sc.Dependencies, DependencySpec{Name: dep.Name, Payment: dep.Payment, IgnoresIdempotencyKeys: dep.IgnoresIdempotencyKeys})
	}
	sc.System = c.system(d.System)
	switch p := strings.TrimSpace(d.Invariants.PageWithin); p {
	case "":
	case "off":
		sc.Invariants.PageWithin = -1
	default:
		v, err := ParseDuration(p)
		if err != nil || v == 0 {
			c.bad("invariants.pageWithin", "expected a positive duration or \"off\", got %q", p)
		}
		sc.Invariants.PageWithin = v.D()
	}
	for i, secret := range d.Invariants.Secrets {
		if len(strings.TrimSpace(secret)) < minSecret {
			c.bad(fmt.Sprintf("invariants.secrets[%d]", i), "expected a planted secret of at least %d characters (a shorter one would match ordinary text), got %q", minSecret, secret)
		}
	}
	sc.Invariants.Secrets = slices.Clone(d.Invariants.Secrets)
	sc.AbortIf = c.abortIf(d.AbortIf)
	for i, f := range d.Faults {
		sc.Faults = append(sc.Faults, c.fault(fmt.Sprintf("faults[%d]", i), f))
	}
	for i, s := range d.Steps {
		sc.Steps = append(sc.Steps, c.step(fmt.Sprintf("steps[%d]", i), s))
	}
	c.deps = c.deps[:0]
	c.breakers = len(d.System.Breakers) > 0
	for _, dep := range d.Dependencies {
		c.deps = append(c.deps, dep.Name)
	}
	for _, t := range d.Workload.Tasks {
		if t.Dependency != "" && !slices.Contains(c.deps, t.Dependency) {
			c.deps = append(c.deps, t.Dependency)
		}
	}
	for i, e := range d.Expect {
		if x := c.expect(fmt.Sprintf("expect[%d]", i), e); x != nil {
			sc.Expect = append(sc.Expect, x)
		}
	}
	return sc
}

// DefaultErrorWindow is abortIf.errorWindow when errorRate is given and
// the window is not.
const DefaultErrorWindow = time.Minute

// abortIf converts the drill's guard. A key written must give a bound: 0
// would silently be none. The simulator's check refuses the rest (negative
// values, a share past 1, a window without a rate, shorter than 1s or
// longer than the run, no bound at all).
func (c *converter) abortIf(a *AbortIf) *AbortIfSpec {
	if a == nil {
		return nil
	}
	out := &AbortIfSpec{ErrorWindow: a.ErrorWindow.D()}
	if a.DLQDepth != nil {
		if out.DLQDepth = *a.DLQDepth; out.DLQDepth == 0 {
			c.bad("abortIf.dlqDepth", "expected a depth of at least 1, got 0 (leave the key out for no bound)")
		}
	}
	if a.ErrorRate != nil {
		switch out.ErrorRate = *a.ErrorRate; {
		case out.ErrorRate == 0:
			c.bad("abortIf.errorRate", "expected a share in (0,1], got 0 (leave the key out for no bound)")
		case out.ErrorWindow == 0:
			out.ErrorWindow = DefaultErrorWindow
		}
	}
	if a.MaxActiveFaults != nil {
		if out.MaxActiveFaults = *a.MaxActiveFaults; out.MaxActiveFaults == 0 {
			c.bad("abortIf.maxActiveFaults", "expected at least 1, got 0 (leave the key out for no bound)")
		}
	}
	return out
}

func (c *converter) workload(w Workload) WorkloadSpec {
	out := WorkloadSpec{}
	for i, t := range w.Tasks {
		if t.Name == "" {
			c.bad(fmt.Sprintf("workload.tasks[%d].name", i), "expected a task name")
		}
		out.Tasks = append(out.Tasks, TaskSpec{Name: t.Name, Queue: t.Queue, Dependency: t.Dependency, Weight: t.Weight,
			IdempotencyKey: t.IdempotencyKey, Payload: t.Payload, Service: t.Service.D(), ServiceJitter: t.ServiceJitter.D()})
	}
	a := w.Arrivals
	out.Arrivals = ArrivalsSpec{Rate: float64(a.Rate), From: a.From.D(), Until: a.Until.D()}
	switch a.Kind {
	case "":
		if a.Rate > 0 {
			out.Arrivals.Kind = Poisson
		}
	case "none":
	case "constant":
		out.Arrivals.Kind = Constant
	case "poisson":
		out.Arrivals.Kind = Poisson
	default:
		c.bad("workload.arrivals.kind", "expected none, constant or poisson, got %q%s", a.Kind, suggest(a.Kind, []string{"none", "constant", "poisson"}))
	}
	if out.Arrivals.Kind != NoArrivals && a.Rate <= 0 {
		c.bad("workload.arrivals.rate", "expected a positive rate like 100/s for %s arrivals", a.Kind)
	}
	for _, b := range a.Bursts {
		out.Arrivals.Bursts = append(out.Arrivals.Bursts, BurstSpec{At: b.At.D(), Count: b.Count, Task: b.Task})
	}
	for _, j := range w.Jobs {
		out.Jobs = append(out.Jobs, PlannedJobSpec{At: j.At.D(), ID: j.ID, Task: j.Task, IdempotencyKey: j.IdempotencyKey, Payload: j.Payload})
	}
	return out
}

// minSecret is the shortest planted secret invariants.secrets takes.
const minSecret = 8

// suggest returns "; did you mean X?" for the closest candidate, or "".
func suggest(s string, candidates []string) string {
	if best := didyoumean.Closest(s, candidates); best != "" {
		return "; did you mean " + strconv.Quote(best) + "?"
	}
	return ""
}

// orZero returns the duration d points at, or 0 when it is not given.
func (d *Duration) orZero() time.Duration {
	if d == nil {
		return 0
	}
	return d.D()
}
