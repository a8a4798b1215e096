package scenarios

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/faultline/faultline/layout"
	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/degrade"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/retry"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/worker"
)

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
