package faults

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/faultline/faultline/reference/classify"
)

// Fault is a named model with a target and a schedule: what happens, to
// which calls, when.
type Fault struct {
	// Name is unique within a scenario; it keys the fault's random stream
	// and its periodic jitter.
	Name string
	// Target is what the fault hits.
	Target Target
	// Model is what happens to a call the fault hits.
	Model Model
	// Schedule is when the fault is active.
	Schedule Schedule
	// RequireHits makes a run in which the fault never hit fail (a fault
	// that is certain to fire, whose silence means the drill tested
	// nothing); without it, zero hits are only a warning (a probabilistic
	// fault may draw no hit on some seeds).
	RequireHits bool
}

// Validate checks the fault: a name, a model that is valid, a target kind
// among the model's Targets, a valid schedule, and schedule jobs only on a
// target whose calls carry a job (a dependency or the DLQ store; a worker,
// the store or an alert sink is called by no job), and a schedule's When
// only on a worker (the only target with a state). Every problem is
// reported, each a *FieldError naming the fault and the field
// ("schedule.every.duty", "model.code", "target.kind"), joined with
// errors.Join. Validate never panics, even on a model whose methods do.
func (f Fault) Validate() error {
	var errs []error
	field := func(name, msg, hint string) {
		errs = append(errs, &FieldError{Fault: f.Name, Field: name, Msg: msg, Hint: hint})
	}
	if f.Name == "" {
		field("name", "required", "a name unique within the scenario, e.g. \"gw-timeouts\"")
	}
	switch {
	case f.Target.Kind == 0:
		field("target.kind", "required", "one of "+strings.Join(kindNames[1:], ", "))
	case !f.Target.Kind.valid():
		field("target.kind", "unknown kind "+f.Target.Kind.String(), "one of "+strings.Join(kindNames[1:], ", "))
	}
	if f.Target.Name == "*" {
		field("target.name", `"*" is not a name`, `"" targets every name of the kind`)
	}
	if f.Model == nil {
		field("model", "required", "one of "+strings.Join(modelNames(), ", "))
	} else {
		info := inspect(f.Model)
		errs = append(errs, within(info.err, f.Name, "model"))
		if info.err == nil && f.Target.Kind.valid() && !slices.Contains(info.targets, f.Target.Kind) {
			names := make([]string, len(info.targets))
			for i, k := range info.targets {
				names[i] = k.String()
			}
			field("target.kind", fmt.Sprintf("model %q cannot target %s", info.name, f.Target.Kind), "it targets "+strings.Join(names, ", "))
		}
	}
	errs = append(errs, within(f.Schedule.Validate(), f.Name, "schedule"))
	for _, sel := range []struct {
		key string
		set bool
	}{{"jobs", len(f.Schedule.Jobs) > 0}, {"tasks", len(f.Schedule.Tasks) > 0}, {"attempts", len(f.Schedule.Attempts) > 0}} {
		if sel.set && f.Target.Kind.valid() && !f.Target.Kind.carriesJobs() {
			field("schedule."+sel.key, fmt.Sprintf("%s faults cannot be limited to %s: no job makes their calls", f.Target.Kind, sel.key),
				"only dependency and dlq-store faults take "+sel.key+"; use from/until to aim it")
		}
	}
	if f.Schedule.When != nil && f.Target.Kind.valid() && f.Target.Kind != Worker {
		field("schedule.when", fmt.Sprintf("%s faults cannot wait for a state: when aims a worker fault at a worker's state (a call in flight), and a %s is no worker", f.Target.Kind, f.Target.Kind),
			"only worker faults take when; use from/until (and jobs, tasks or attempts on a dependency) to aim it")
	}
	return errors.Join(errs...)
}

// modelInfo is what a model says about itself, asked once.
type modelInfo struct {
	name    string
	class   classify.Class
	targets []TargetKind
	err     error // Validate's answer, or the panic of any method
}

// inspect asks a model about itself, turning a panic (a typed nil pointer,
// a buggy model) into an error.
func inspect(m Model) (info modelInfo) {
	defer func() {
		if p := recover(); p != nil {
			info = modelInfo{err: &FieldError{Msg: fmt.Sprintf("the model panicked: %v", p)}}
		}
	}()
	return modelInfo{name: m.Name(), class: m.Class(), targets: m.Targets(), err: m.Validate()}
}

// FlappingPrimary returns a fault flapping the named dependency: down (503)
// for duty of every period, each down-phase shifted by up to ±jitter, for the
// whole scenario.
func FlappingPrimary(name, dependency string, period time.Duration, duty float64, jitter time.Duration) Fault {
	return Fault{
		Name:   name,
		Target: Target{Kind: Dependency, Name: dependency},
		Model:  Flapping{Period: period, Duty: duty, Jitter: jitter},
	}
}

// ErrorRate returns a fault answering code to a fraction rate of the calls
// to the named dependency, for the whole scenario. As in Schedule, a rate of
// 0 means every call.
func ErrorRate(name, dependency string, code int, rate float64) Fault {
	return Fault{
		Name:     name,
		Target:   Target{Kind: Dependency, Name: dependency},
		Model:    HTTPStatus{Code: code},
		Schedule: Schedule{Probability: rate},
	}
}

// During returns a schedule active in [from, until) (until 0: to the end).
func During(from, until time.Duration) Schedule {
	return Schedule{From: from, Until: until}
}
