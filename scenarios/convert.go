package scenarios

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/faultline/faultline/internal/didyoumean"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/layout"
	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/degrade"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/retry"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/worker"
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

func (c *converter) system(s System) SystemSpec {
	out := SystemSpec{}
	if s.External != nil {
		c.referenceOnly(s)
		out.External = c.external("system.external", *s.External)
	}
	if s.RulesFile != "" && s.External == nil {
		if c.rules == nil {
			c.bad("system.rulesFile", "rule files are not allowed here")
		} else if rules, err := c.rules(s.RulesFile); err != nil {
			c.bad("system.rulesFile", "%v", err)
		} else {
			out.Rules = rules
		}
	}
	if s.Retry != nil {
		out.Retry = c.retry("system.retry", *s.Retry)
	} else if s.External == nil {
		// A scenario's retry budget is the fleet's unless it says (the
		// zero retry.Config's is a lone policy's, the process's); a black
		// box's is its own.
		out.Retry.Budget.Scope = retry.ScopeFleet
	}
	if s.DLQ != nil {
		out.DLQ = DLQSpec{Capacity: s.DLQ.Capacity, LostLeaseUsesAttempt: s.DLQ.LostLeaseUsesAttempt}
		switch s.DLQ.Overflow {
		case "", "reject":
			out.DLQ.Overflow = store.Reject
		case "evict-oldest":
			out.DLQ.Overflow = store.EvictOldest
		default:
			c.bad("system.dlq.overflow", "expected reject or evict-oldest, got %q%s", s.DLQ.Overflow, suggest(s.DLQ.Overflow, []string{"reject", "evict-oldest"}))
		}
	}
	if a := s.Alerts; a != nil {
		cfg := alert.Config{DefaultReceiver: a.DefaultReceiver, DefaultGroupBy: a.GroupBy, DedupWindow: a.DedupWindow.D(), MaxAlerts: a.MaxAlerts}
		for _, r := range a.Receivers {
			cfg.Receivers = append(cfg.Receivers, alert.Receiver{Name: r})
		}
		if a.Timing != nil {
			cfg.Timing = timing(*a.Timing)
		}
		for i, r := range a.Routes {
			p := fmt.Sprintf("system.alerts.routes[%d]", i)
			route := alert.Route{Receiver: r.Receiver, Match: alert.Labels(r.Match), GroupBy: r.GroupBy, Continue: r.Continue}
			for j, sv := range r.Severities {
				route.Severities = append(route.Severities, c.severity(fmt.Sprintf("%s.severities[%d]", p, j), sv))
			}
			if r.Timing != nil {
				route.Timing = timing(*r.Timing)
			}
			cfg.Routes = append(cfg.Routes, route)
		}
		out.Alerts = cfg
	}
	for i, b := range s.Breakers {
		p := fmt.Sprintf("system.breakers[%d]", i)
		if b.Dependency == "" {
			c.bad(p+".dependency", "expected the dependency the breaker guards")
		}
		bc := degrade.BreakerConfig{Name: b.Dependency, ConsecutiveFailures: b.ConsecutiveFailures, FailureRatePercent: b.FailureRatePercent,
			MinThroughput: b.MinThroughput, Window: b.Window.D(), OpenDuration: b.OpenDuration.D(), MaxOpenDuration: b.MaxOpenDuration.D(),
			BackoffFactor: b.BackoffFactor, StablePeriod: b.StablePeriod.D(), HalfOpenProbes: b.HalfOpenProbes,
			SuccessesToClose: b.SuccessesToClose, ProbeTimeout: b.ProbeTimeout.D(), RampStartPercent: b.RampStartPercent,
			SyncInterval: b.SyncInterval.D()}
		switch b.RampUp {
		case "":
		case "none":
			bc.RampUp = degrade.NoRampUp
		default:
			v, err := ParseDuration(b.RampUp)
			if err != nil {
				c.bad(p+".rampUp", "expected a duration or \"none\", got %q", b.RampUp)
			}
			bc.RampUp = v.D()
		}
		spec := BreakerSpec{Config: bc}
		switch b.Scope {
		case "", "process":
		case "fleet":
			spec.Fleet = true
		default:
			c.bad(p+".scope", "unknown scope %q; expected one of process, fleet", b.Scope)
		}
		if b.SyncInterval != 0 && !spec.Fleet {
			c.bad(p+".syncInterval", "applies to a breaker the fleet shares (scope: fleet); this one is each process's own")
		}
		if b.Fallback != nil {
			spec.Fallback = degrade.FallbackConfig{BatchSize: b.Fallback.BatchSize, DrainInterval: b.Fallback.DrainInterval.D()}
		}
		out.Breakers = append(out.Breakers, spec)
	}
	if a := s.AutoRetry; a != nil {
		ar := &AutoRetrySpec{Window: worker.Window{Start: a.WindowStart.D(), End: a.WindowEnd.D()}, Rate: a.Rate, Interval: a.Interval.D(),
			MaxAutoRetries: a.MaxAutoRetries, Budget: c.budget("system.autoRetry.budget", a.Budget)}
		if a.Filter != nil {
			ar.Filter = c.filter("system.autoRetry.filter", *a.Filter)
		}
		out.AutoRetry = ar
	}
	if m := s.Monitor; m != nil {
		mon := &MonitorSpec{MaxDepth: m.MaxDepth, MaxAge: m.MaxAge.D(), Interval: m.Interval.D()}
		if m.Severity != "" {
			mon.Severity = c.severity("system.monitor.severity", m.Severity)
		}
		out.Monitor = mon
	}
	return out
}

// referenceOnly refuses the keys of a black-box system's configuration
// that configure the reference worker: the ones written, whatever their
// values (the simulator's check sees them with defaults filled in).
func (c *converter) referenceOnly(s System) {
	for _, k := range []struct {
		key string
		set bool
	}{{"rulesFile", s.RulesFile != ""}, {"retry", s.Retry != nil}, {"dlq", s.DLQ != nil}, {"breakers", len(s.Breakers) > 0},
		{"autoRetry", s.AutoRetry != nil}, {"monitor", s.Monitor != nil}} {
		if k.set {
			c.bad("system."+k.key, "%s", ExternalReferenceOnly)
		}
	}
}

// external converts a black-box system: its commands' paths resolved
// (and checked) by c.programs. The simulator's check reports the rest
// (exactly one of command and running, the layouts, copies, shrinks).
func (c *converter) external(path string, e External) *ExternalSpec {
	out := &ExternalSpec{Copies: e.Copies, Running: e.Running, Drain: e.Drain.D(), Startup: e.Startup.D(),
		DLQShrinks: slices.Clone(e.DLQShrinks), NoAlerts: e.NoAlerts, MaxTimeScale: e.MaxTimeScale}
	out.PageWait = e.PageWait.D()
	if r := e.Ready; r != nil {
		out.Ready = &layout.Ready{Command: c.command(path+".ready.command", r.Command), RedisKey: r.RedisKey}
		if r.HTTP != nil {
			out.Ready.HTTP = &layout.HTTPRead{URL: r.HTTP.URL, Header: maps.Clone(r.HTTP.Header)}
		}
		out.ReadyTimeout = r.Timeout.D()
	}
	for _, r := range e.Receivers {
		out.Receivers = append(out.Receivers, ExternalReceiver{Name: r.Name, Paging: r.Paging == nil || *r.Paging})
	}
	if p := e.Policy; p != nil {
		out.Policy = &ExternalPolicy{MaxAttempts: p.MaxAttempts, MinBackoff: p.MinBackoff.D(), Jitter: p.Jitter, HonoursRetryAfter: p.HonoursRetryAfter}
	}
	out.Command = c.command(path+".command", e.Command)
	in := e.Inject
	out.Inject = layout.Inject{Preset: in.Preset, Prefix: in.Prefix, Template: in.Template, IDPath: in.IDPath,
		Command: c.command(path+".inject.command", in.Command),
		Queue:   in.Queue, Job: in.Job, Options: maps.Clone(in.Options), Runtime: in.Runtime, Dir: in.Dir}
	if in.RedisList != nil {
		out.Inject.RedisList = &layout.RedisListInject{Key: in.RedisList.Key, Push: in.RedisList.Push}
	}
	if in.RedisStream != nil {
		out.Inject.RedisStream = &layout.RedisStreamInject{Key: in.RedisStream.Key, Field: in.RedisStream.Field, Group: in.RedisStream.Group}
	}
	state := func(st *QueueState) *layout.QueueState {
		if st == nil {
			return nil
		}
		return &layout.QueueState{Field: st.Field, Queued: slices.Clone(st.Queued)}
	}
	if in.RedisHash != nil {
		out.Inject.RedisHash = &layout.RedisHashInject{Key: in.RedisHash.Key, State: state(in.RedisHash.State)}
	}
	if in.RedisZSet != nil {
		out.Inject.RedisZSet = &layout.RedisZSetInject{Key: in.RedisZSet.Key, State: state(in.RedisZSet.State)}
	}
	if in.HTTP != nil {
		out.Inject.HTTP = &layout.HTTPInject{URL: in.HTTP.URL, Header: maps.Clone(in.HTTP.Header)}
	}
	if out.Policy == nil {
		// A framework preset's job options may say its retry policy
		// (Sidekiq's retry, RQ's Retry, BullMQ's attempts): the drill
		// judges what the team's producer asks for, as if declared.
		if n, _, ok := out.Inject.FrameworkPolicy(); ok {
			out.Policy = &ExternalPolicy{MaxAttempts: n}
		}
	}
	d := e.DLQ
	f := d.Fields
	out.DLQ = layout.DLQ{Preset: d.Preset, Prefix: d.Prefix, Command: c.command(path+".dlq.command", d.Command),
		Queue: d.Queue, Runtime: d.Runtime, Dir: d.Dir,
		Fields: layout.Fields{ID: f.ID, Severity: f.Severity, Error: f.Error, Class: f.Class, Retries: f.Retries, Status: f.Status, FailedAt: f.FailedAt,
			Inactive: slices.Clone(f.Inactive)}}
	if d.RedisList != nil {
		out.DLQ.RedisList = &layout.RedisKeys{Keys: slices.Clone(d.RedisList.Keys)}
	}
	if d.RedisZSet != nil {
		out.DLQ.RedisZSet = &layout.RedisKeys{Keys: slices.Clone(d.RedisZSet.Keys)}
	}
	if d.RedisStream != nil {
		out.DLQ.RedisStream = &layout.RedisStreamInject{Key: d.RedisStream.Key, Field: d.RedisStream.Field}
	}
	if d.HTTP != nil {
		out.DLQ.HTTP = &layout.HTTPRead{URL: d.HTTP.URL, Header: maps.Clone(d.HTTP.Header)}
	}
	return out
}

// command converts a command, its program and folder resolved relative to
// the scenario's file; a program that cannot be run is reported (as
// written) at path.path, a folder that is not one at path.dir.
func (c *converter) command(path string, cmd *Command) *layout.Command {
	if cmd == nil {
		return nil
	}
	out := &layout.Command{Path: cmd.Path, Args: slices.Clone(cmd.Args), Env: maps.Clone(cmd.Env), Dir: cmd.Dir}
	if c.programs == nil {
		return out
	}
	if strings.TrimSpace(cmd.Path) != "" { // an empty one: the simulator's check says what is expected
		p, err := c.programs.program(cmd.Path)
		if err != nil {
			c.bad(path+".path", "%v", err)
		}
		out.Path = p
	}
	dir, err := c.programs.folder(cmd.Dir)
	if err != nil {
		c.bad(path+".dir", "%v", err)
	}
	out.Dir = dir
	return out
}

func timing(t Timing) alert.Timing {
	return alert.Timing{GroupWait: t.GroupWait.D(), GroupInterval: t.GroupInterval.D(), RepeatInterval: t.RepeatInterval.D()}
}

func (c *converter) retry(path string, r Retry) retry.Config {
	cfg := retry.Config{MaxAttempts: r.MaxAttempts, BaseDelay: r.BaseDelay.D(), MaxDelay: r.MaxDelay.D(), MaxRetryAfter: r.MaxRetryAfter.D()}
	if b := r.Budget; b != nil {
		cfg.Budget = retry.BudgetConfig{Disabled: b.Disabled, Burst: b.Burst, Refill: b.Refill.D(), MaxWait: b.MaxWait.D()}
	}
	cfg.Budget.Scope = retry.ScopeFleet
	if b := r.Budget; b != nil {
		switch b.Scope {
		case "", "fleet":
		case "process":
			cfg.Budget.Scope = retry.ScopeProcess
		default:
			c.bad(path+".budget.scope", "unknown scope %q; expected one of process, fleet", b.Scope)
		}
	}
	if err := cfg.Validate(); err != nil {
		c.bad(path, "%v", err)
	}
	return cfg
}

func (c *converter) severity(path, s string) classify.Severity {
	v, err := classify.ParseSeverity(s)
	if err != nil || v == classify.SeverityNone {
		c.bad(path, "expected low, medium or high, got %q%s", s, suggest(s, []string{"low", "medium", "high"}))
	}
	return v
}

func (c *converter) class(path, s string) classify.Class {
	v, err := classify.ParseClass(s)
	if err != nil || v == classify.None {
		names := make([]string, len(classify.Classes))
		for i, k := range classify.Classes {
			names[i] = k.String()
		}
		c.bad(path, "expected one of %s, got %q%s", strings.Join(names, ", "), s, suggest(s, names))
	}
	return v
}

func (c *converter) budget(path, s string) dlq.Budget {
	switch s {
	case "", "one-more-attempt":
		return dlq.OneMoreAttempt
	case "reset-attempts":
		return dlq.ResetAttempts
	}
	c.bad(path, "expected one-more-attempt or reset-attempts, got %q%s", s, suggest(s, []string{"one-more-attempt", "reset-attempts"}))
	return dlq.OneMoreAttempt
}

func (c *converter) filter(path string, f Filter) dlq.Filter {
	out := dlq.Filter{Tasks: f.Tasks}
	for i, s := range f.Severities {
		out.Severities = append(out.Severities, c.severity(fmt.Sprintf("%s.severities[%d]", path, i), s))
	}
	for i, s := range f.Classes {
		out.Classes = append(out.Classes, c.class(fmt.Sprintf("%s.classes[%d]", path, i), s))
	}
	for i, s := range f.Statuses {
		st, err := dlq.ParseStatus(s)
		if err != nil {
			c.bad(fmt.Sprintf("%s.statuses[%d]", path, i), "expected failed, requeued, deleted or quarantined, got %q", s)
		}
		out.Statuses = append(out.Statuses, st)
	}
	return out
}

func (c *converter) step(path string, s Step) StepSpec {
	out := StepSpec{At: s.At.D(), OlderThan: s.OlderThan.D(), Workers: s.Workers}
	out.Budget = c.budget(path+".budget", s.Budget) // checked whatever the action, as the schema does
	switch s.Action {
	case "requeue":
		out.Kind = Requeue
	case "delete":
		out.Kind = Delete
	case "purge":
		out.Kind = Purge
		if s.OlderThan == 0 {
			c.bad(path+".olderThan", "expected the age of the entries to purge, like 1h")
		}
	case "set-workers":
		out.Kind = SetWorkers
	case "set-retry":
		out.Kind = SetRetry
		if s.Retry == nil {
			c.bad(path+".retry", "expected the new retry policy")
		} else {
			out.Retry = c.retry(path+".retry", *s.Retry)
		}
	default:
		actions := stepActions
		c.bad(path+".action", "expected one of %s, got %q%s", strings.Join(actions, ", "), s.Action, suggest(s.Action, actions))
	}
	if s.Filter != nil {
		out.Filter = c.filter(path+".filter", *s.Filter)
	}
	return out
}

// fault builds a fault from its catalogue model and parameters.
func (c *converter) fault(path string, f Fault) faults.Fault {
	out := faults.Fault{Name: f.Name, RequireHits: f.RequireHits}
	if f.Name == "" {
		c.bad(path+".name", "expected a fault name")
	}
	t, err := faults.ParseTarget(f.Target)
	if err != nil {
		c.bad(path+".target", "%v", err)
	}
	out.Target = t
	m, err := faults.New(f.Model)
	if err != nil {
		c.bad(path+".model", "%v", err)
		return out
	}
	out.Model = c.params(path+".params", m, f.Params)
	s := f.Schedule
	out.Schedule = faults.Schedule{From: s.From.D(), Until: s.Until.D(), Jobs: slices.Clone(s.Jobs), Tasks: slices.Clone(s.Tasks), Attempts: slices.Clone(s.Attempts), FirstCalls: s.FirstCalls, Probability: s.Probability}
	if s.Every != nil {
		out.Schedule.Every = &faults.Periodic{Period: s.Every.Period.D(), Duty: s.Every.Duty, Jitter: s.Every.Jitter.D(), Phase: s.Every.Phase.D()}
	}
	if s.When != nil {
		out.Schedule.When = &faults.When{State: faults.WhenState(s.When.State), Dependency: s.When.Dependency}
	}
	if err := out.Validate(); err != nil && out.Model != nil {
		c.bad(path, "%v", err)
	}
	return out
}

// params sets a model's parameters by their catalogue names.
func (c *converter) params(path string, m faults.Model, params map[string]any) faults.Model {
	v := reflect.New(reflect.TypeOf(m)).Elem()
	v.Set(reflect.ValueOf(m))
	fields := map[string]reflect.Value{}
	var names []string
	for i := range v.NumField() {
		if sf := v.Type().Field(i); sf.IsExported() {
			n := lowerFirst(sf.Name)
			fields[n] = v.Field(i)
			names = append(names, n)
		}
	}
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fv, ok := fields[k]
		p := path + "." + k
		if !ok {
			if len(names) == 0 {
				c.bad(p, "model %s takes no parameters", m.Name())
			} else {
				c.bad(p, "unknown parameter of model %s; expected one of %s%s", m.Name(), strings.Join(names, ", "), suggest(k, names))
			}
			continue
		}
		if err := setParam(fv, params[k]); err != nil {
			c.bad(p, "%v", err)
		}
	}
	return v.Interface().(faults.Model)
}

func lowerFirst(s string) string {
	r := []rune(s)
	// Leading initialisms stay lower together: "URL" → "url".
	for i := 0; i < len(r) && unicode.IsUpper(r[i]); i++ {
		if i > 0 && i+1 < len(r) && unicode.IsLower(r[i+1]) {
			break
		}
		r[i] = unicode.ToLower(r[i])
	}
	return string(r)
}

var durationType = reflect.TypeOf(time.Duration(0))

// setParam sets a model field from a decoded YAML value.
func setParam(f reflect.Value, v any) error {
	switch {
	case f.Type() == durationType:
		s, ok := v.(string)
		if !ok {
			if n, isNum := number(v); isNum && n == 0 {
				f.SetInt(0)
				return nil
			}
			return fmt.Errorf("expected a duration like 30s, got %v", v)
		}
		d, err := ParseDuration(s)
		if err != nil {
			return err
		}
		f.SetInt(int64(d))
	case f.Kind() == reflect.Bool:
		b, ok := v.(bool)
		if !ok {
			return fmt.Errorf("expected true or false, got %v", v)
		}
		f.SetBool(b)
	case f.Kind() == reflect.Int || f.Kind() == reflect.Int64 || f.Kind() == reflect.Int32:
		n, ok := number(v)
		if !ok || n != math.Trunc(n) || math.Abs(n) > 1<<31 {
			return fmt.Errorf("expected a whole number, got %v", v)
		}
		f.SetInt(int64(n))
	case f.Kind() == reflect.Float64:
		n, ok := number(v)
		if !ok {
			return fmt.Errorf("expected a number, got %v", v)
		}
		f.SetFloat(n)
	case f.Kind() == reflect.String:
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("expected a string, got %v", v)
		}
		f.SetString(s)
	case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.String:
		items, ok := v.([]any)
		if !ok {
			return fmt.Errorf("expected a list of strings, got %v", v)
		}
		out := reflect.MakeSlice(f.Type(), 0, len(items))
		for _, it := range items {
			s, ok := it.(string)
			if !ok {
				return fmt.Errorf("expected a list of strings, got %v", it)
			}
			out = reflect.Append(out, reflect.ValueOf(s))
		}
		f.Set(out)
	default:
		return fmt.Errorf("parameter of unsupported type %s", f.Type())
	}
	return nil
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint64:
		return float64(n), true
	case float64:
		return n, true
	case string:
		f, err := strconv.ParseFloat(n, 64)
		return f, err == nil
	}
	return 0, false
}

// minSecret is the shortest planted secret invariants.secrets takes.
const minSecret = 8

// expect builds one expectation.
func (c *converter) expect(path string, e Expect) Expectation {
	kinds := []string{}
	for _, k := range []struct {
		name string
		set  bool
	}{{"count", e.Count != ""}, {"job", e.Job != ""}, {"pageWithin", e.PageWithin != 0}, {"drainedBy", e.DrainedBy != nil},
		{"breakerOpened", e.BreakerOpened != ""}, {"breakerClosedBy", e.BreakerClosedBy != ""},
		{"breakerTransitions", e.BreakerTransitions != ""}, {"confusion", e.Confusion != ""}} {
		if k.set {
			kinds = append(kinds, k.name)
		}
	}
	if len(kinds) != 1 {
		got := "none"
		if len(kinds) > 0 {
			got = strings.Join(kinds, " and ")
		}
		c.bad(path, "expected exactly one of count, job, pageWithin, drainedBy, breakerOpened, breakerClosedBy, breakerTransitions, confusion; got %s", got)
		return nil
	}
	var op Op
	var n int64
	hasOp := e.Equals != nil || e.AtLeast != nil || e.AtMost != nil
	if kinds[0] != "job" { // a job's attempts take attempts, atLeast or atMost: jobAttempts checks them
		op, n, hasOp = c.comparison(path, e)
	}
	c.irrelevant(path, kinds[0], e)
	switch kinds[0] {
	case "count":
		metrics := make([]string, len(Metrics))
		for i, m := range Metrics {
			metrics[i] = string(m)
		}
		windowed := e.Dependency != "" || e.From != 0 || e.Until != 0 || e.Window != nil
		if e.Count == callsMetric && !windowed {
			c.bad(path+".count", "count calls reads the calls made to a dependency per window: add dependency, from and window (e.g. window: 1s)")
		} else if !slices.Contains(metrics, e.Count) && e.Count != callsMetric {
			c.bad(path+".count", "expected one of %s, got %q%s", strings.Join(metrics, ", "), e.Count, suggest(e.Count, append(metrics, callsMetric)))
		}
		if !hasOp {
			c.bad(path, "expected one of equals, atLeast, atMost")
		}
		allowed := Metric(e.Count).Filters()
		for _, fl := range []struct{ name, v string }{{"task", e.Task}, {"severity", e.Severity}, {"class", e.Class},
			{"receiver", e.Receiver}, {"fingerprint", e.Fingerprint}} {
			if fl.v != "" && !slices.Contains(allowed, fl.name) {
				takes := "no filters"
				if len(allowed) > 0 {
					takes = "only " + strings.Join(allowed, ", ")
				}
				c.bad(path+"."+fl.name, "count %s takes %s", e.Count, takes)
			}
		}
		if windowed {
			return c.retryRate(path, e, op, n)
		}
		x := Count{Metric: Metric(e.Count), Task: e.Task, Receiver: e.Receiver, Fingerprint: e.Fingerprint, Op: op, N: n}
		if e.Severity != "" {
			x.Severity = c.severity(path+".severity", e.Severity)
		}
		if e.Class != "" {
			x.Class = c.class(path+".class", e.Class)
		}
		return x
	case "job":
		if e.Attempts != nil || e.AttemptGapsAtLeast != nil || hasOp {
			return c.jobAttempts(path, e)
		}
		x := JobFate{JobID: e.Job, Route: disposition.Reason(e.Route)}
		if e.Route != "" && !slices.Contains(moveReasons, e.Route) {
			c.bad(path+".route", "expected one of %s, got %q%s", strings.Join(moveReasons, ", "), e.Route, suggest(e.Route, moveReasons))
		}
		states := []string{"queued", "in-flight", "scheduled", "fallback", "dead-lettered", "succeeded", "none"}
		switch st := e.State; st {
		case "queued":
			x.State = disposition.Queued
		case "in-flight":
			x.State = disposition.InFlight
		case "scheduled":
			x.State = disposition.Scheduled
		case "fallback":
			x.State = disposition.Fallback
		case "dead-lettered":
			x.State = disposition.DeadLettered
		case "succeeded":
			x.State = disposition.Succeeded
		case "none":
			x.State = disposition.None
		case "":
			c.bad(path+".state", "expected where the job ends (state: one of %s) or its attempts (attempts, atLeast, atMost or attemptGapsAtLeast) with job", strings.Join(states, ", "))
		default:
			c.bad(path+".state", "expected one of %s, got %q%s", strings.Join(states, ", "), st, suggest(st, states))
		}
		if e.Severity != "" {
			x.Severity = c.severity(path+".severity", e.Severity)
		}
		for i, cl := range e.History {
			x.History = append(x.History, c.class(fmt.Sprintf("%s.history[%d]", path, i), cl))
		}
		return x
	case "pageWithin":
		return PageWithin{Within: e.PageWithin.D()}
	case "drainedBy":
		switch e.Queue {
		case "", "dlq":
		case QueueFallback:
			if !c.breakers {
				c.bad(path+".queue", "no breaker guards a dependency, so no job is ever diverted to the fallback queue and it is always drained: add system.breakers, or expect the DLQ drained")
			}
		default:
			c.bad(path+".queue", "expected dlq or fallback, got %q%s", e.Queue, suggest(e.Queue, []string{"dlq", QueueFallback}))
		}
		q := e.Queue
		if q == "dlq" {
			q = ""
		}
		if *e.DrainedBy == 0 {
			c.bad(path+".drainedBy", "expected an offset after the start, like 1m, got 0s: no job has run at 0s, so the queue is empty then whatever the system does")
		}
		return DrainedBy{At: e.DrainedBy.orZero(), Queue: q}
	case "breakerOpened":
		if !hasOp || op != AtLeast {
			c.bad(path, "expected atLeast with breakerOpened")
		}
		return BreakerOpened{Breaker: e.BreakerOpened, AtLeast: int(n)}
	case "breakerClosedBy":
		if e.At == 0 {
			c.bad(path+".at", "expected the offset by which the breaker is closed")
		}
		return BreakerClosedBy{Breaker: e.BreakerClosedBy, At: e.At.D()}
	case "breakerTransitions":
		if !hasOp {
			c.bad(path, "expected one of equals, atLeast, atMost with breakerTransitions")
		}
		return BreakerTransitions{Breaker: e.BreakerTransitions, Op: op, N: int(n)}
	default: // confusion
		x := Confusion{True: c.class(path+".confusion", e.Confusion), Op: op, N: n}
		if e.Said != "" {
			x.Said = c.class(path+".said", e.Said)
		}
		switch e.Route {
		case "":
		case "retry":
			x.Route = worker.Retry
		case "dead-letter":
			x.Route = worker.DeadLetter
		case "release":
			x.Route = worker.Release
		case "divert":
			x.Route = worker.Divert
		default:
			routes := []string{"retry", "dead-letter", "release", "divert"}
			c.bad(path+".route", "expected one of %s, got %q%s", strings.Join(routes, ", "), e.Route, suggest(e.Route, routes))
		}
		if !hasOp {
			c.bad(path, "expected one of equals, atLeast, atMost")
		}
		return x
	}
}

// irrelevant reports the keys set on an expectation of kind that it does
// not read: never silently ignored.
func (c *converter) irrelevant(path, kind string, e Expect) {
	uses := map[string][]string{
		"count":              {"task", "severity", "class", "receiver", "fingerprint", "dependency", "from", "until", "window", "equals", "atLeast", "atMost"},
		"job":                {"state", "route", "severity", "history", "attempts", "attemptGapsAtLeast", "atLeast", "atMost"},
		"pageWithin":         {},
		"drainedBy":          {"queue"},
		"breakerOpened":      {"atLeast"},
		"breakerClosedBy":    {"at"},
		"breakerTransitions": {"equals", "atLeast", "atMost"},
		"confusion":          {"said", "route", "equals", "atLeast", "atMost"},
	}[kind]
	for _, k := range []struct {
		name string
		set  bool
	}{{"state", e.State != ""}, {"route", e.Route != ""}, {"history", len(e.History) > 0}, {"at", e.At != 0}, {"said", e.Said != ""},
		{"task", e.Task != ""}, {"severity", e.Severity != ""}, {"class", e.Class != ""}, {"receiver", e.Receiver != ""},
		{"fingerprint", e.Fingerprint != ""}, {"equals", e.Equals != nil}, {"atLeast", e.AtLeast != nil}, {"atMost", e.AtMost != nil},
		{"attempts", e.Attempts != nil}, {"attemptGapsAtLeast", e.AttemptGapsAtLeast != nil}, {"queue", e.Queue != ""},
		{"dependency", e.Dependency != ""}, {"from", e.From != 0}, {"until", e.Until != 0}, {"window", e.Window != nil}} {
		if k.set && !slices.Contains(uses, k.name) {
			if kind == "job" && k.name == "equals" {
				c.bad(path+".equals", "a job expectation does not read equals: the exact number of a job's attempts is attempts (e.g. attempts: 2)")
			} else if len(uses) == 0 {
				c.bad(path+"."+k.name, "a %s expectation takes no other key", kind)
			} else {
				c.bad(path+"."+k.name, "a %s expectation does not read %s; it takes %s", kind, k.name, strings.Join(uses, ", "))
			}
		}
	}
}

// retryRate converts count retried with dependency, from and window: the
// busiest window's retries of the dependency's jobs.
func (c *converter) retryRate(path string, e Expect, op Op, n int64) Expectation {
	if e.Count != string(Retried) && e.Count != callsMetric {
		if slices.Contains(Metrics, Metric(e.Count)) {
			c.bad(path+".count", "dependency, from and window read the retries due or the calls made per window: expected count retried or calls, got %q", e.Count)
		}
		return nil // not a rate: its window is not the problem
	}
	if e.Dependency == "" {
		c.bad(path+".dependency", "expected the dependency whose jobs' retries are read (with from and window)")
	} else if !slices.Contains(c.deps, e.Dependency) {
		c.bad(path+".dependency", "expected one of the scenario's dependencies (%s), got %q%s", strings.Join(c.deps, ", "), e.Dependency, suggest(e.Dependency, c.deps))
	}
	if e.Window == nil {
		c.bad(path+".window", "expected the length of the window the retries are counted in, like 1s")
	} else if *e.Window == 0 {
		c.bad(path+".window", "expected the length of the window the retries are counted in, like 1s, got 0s: a window of no length holds nothing to count")
	}
	if e.Until != 0 && e.Until <= e.From {
		c.bad(path+".until", "expected an offset after from (%s), got %s", e.From.D(), e.Until.D())
	}
	return RetryRate{Dependency: e.Dependency, From: e.From.D(), Until: e.Until.D(), Window: e.Window.orZero(), Op: op, N: n, Calls: e.Count == callsMetric}
}

// callsMetric is the count that, with dependency, from and window, reads
// the calls made to the dependency per window (RetryRate's Calls).
const callsMetric = "calls"

// jobAttempts converts a job expectation that reads the job's attempts:
// their number (attempts, or atLeast / atMost) and their spacing
// (attemptGapsAtLeast).
func (c *converter) jobAttempts(path string, e Expect) Expectation {
	for _, k := range []struct {
		name string
		set  bool
	}{{"state", e.State != ""}, {"route", e.Route != ""}, {"severity", e.Severity != ""}, {"history", len(e.History) > 0}} {
		if k.set {
			c.bad(path+"."+k.name, "a job expectation reads where the job ended (state, route, severity, history) or its attempts (attempts, atLeast, atMost, attemptGapsAtLeast), not both: write two expectations")
		}
	}
	x := JobAttempts{JobID: e.Job, MinGap: e.AttemptGapsAtLeast.orZero()}
	if e.AttemptGapsAtLeast != nil && *e.AttemptGapsAtLeast == 0 {
		c.bad(path+".attemptGapsAtLeast", "expected a gap longer than 0s, like 10s, got 0s: every gap between attempts is at least 0s, so it would check nothing")
	}
	var ops []string
	if e.Attempts != nil {
		ops, x.CheckCount, x.Op, x.N = append(ops, "attempts"), true, Exactly, *e.Attempts
		if *e.Attempts < 0 {
			c.bad(path+".attempts", "expected a count of at least 0, got %d", *e.Attempts)
		}
	}
	if e.AtLeast != nil {
		ops, x.CheckCount, x.Op, x.N = append(ops, "atLeast"), true, AtLeast, *e.AtLeast
		if *e.AtLeast < 0 {
			c.bad(path+".atLeast", "expected a count of at least 0, got %d", *e.AtLeast)
		}
	}
	if e.AtMost != nil {
		ops, x.CheckCount, x.Op, x.N = append(ops, "atMost"), true, AtMost, *e.AtMost
		if *e.AtMost < 0 {
			c.bad(path+".atMost", "expected a count of at least 0, got %d", *e.AtMost)
		}
	}
	if len(ops) > 1 {
		c.bad(path, "expected one of attempts, atLeast, atMost; got %s", strings.Join(ops, " and "))
	}
	return x
}

func (c *converter) comparison(path string, e Expect) (Op, int64, bool) {
	var ops []string
	var op Op
	var n int64
	for _, k := range []struct {
		name string
		v    *int64
		op   Op
	}{{"equals", e.Equals, Exactly}, {"atLeast", e.AtLeast, AtLeast}, {"atMost", e.AtMost, AtMost}} {
		if k.v == nil {
			continue
		}
		ops, op, n = append(ops, k.name), k.op, *k.v
		if *k.v < 0 {
			c.bad(path+"."+k.name, "expected a count of at least 0, got %d", *k.v)
		}
	}
	if len(ops) > 1 {
		c.bad(path, "expected one of equals, atLeast, atMost; got %s", strings.Join(ops, " and "))
	}
	return op, n, len(ops) > 0
}

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
