package scenarios

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/layout"
	"github.com/faultline/faultline/reference/retry"
)

// external checks a black-box system (System.External): its own fields
// (exactly one of a command and running, the copies, the inject and DLQ
// layouts, the shrink mechanisms) and what a drill from outside cannot do
// with the rest of the scenario (configure the reference worker, act on
// the DLQ, fault the system's store, crash a running system's workers,
// judge a task that calls no dependency).
func (v *validator) external() {
	e := v.sc.System.External
	if e == nil {
		return
	}
	const f = "System.External"
	switch {
	case e.Command == nil && !e.Running:
		v.bad(f+".Command", "expected a command that starts the system, or running: true for a system already running")
	case e.Command != nil && e.Running:
		v.bad(f+".Running", "a running system is not started: give a command or running: true, not both")
	case e.Command != nil && e.Command.Path == "":
		v.bad(f+".Command.Path", "expected the program that starts one copy of the system")
	}
	switch {
	case e.Copies < 0:
		v.bad(f+".Copies", "must be at least 1 (0 is workers.count), got %d", e.Copies)
	case e.Copies > 0 && e.Running:
		v.bad(f+".Copies", "a running system is not started, so the drill starts no copies: remove it")
	case e.Copies > v.lim.MaxWorkers:
		err := &LimitError{What: "copies", Flag: "--max-workers", Max: int64(v.lim.MaxWorkers), Got: int64(e.Copies)}
		v.badErr(f+".Copies", err, "%s", err)
	case e.Copies > 0:
		v.maxWorkers = e.Copies // a worker fault names a copy (drill.Fleet: the copies are the workers)
	}
	// (A bound on the scale of a system that does not follow it is moot:
	// the drill runs it at 1.)
	if e.MaxTimeScale != 0 && (e.MaxTimeScale < 1 || e.MaxTimeScale > 1000) {
		v.bad(f+".MaxTimeScale", "takes a scale from 1 to 1000, got %v", e.MaxTimeScale)
	}
	v.ms(f+".Drain", e.Drain)
	v.ms(f+".Startup", e.Startup)
	v.ms(f+".PageWait", e.PageWait)
	if e.Ready != nil {
		v.layout(f, e.Ready.Validate())
		v.ms(f+".ReadyTimeout", e.ReadyTimeout)
		if e.Startup != 0 {
			v.bad(f+".Startup", "a readiness probe (ready) replaces the blind wait: give ready or startup, not both")
		}
		if e.Running && e.Ready.PerCopy() {
			v.bad(f+".Ready", "{worker} names a copy the drill started: a running system has none (probe the system as a whole)")
		}
	}
	v.layout(f, e.Inject.Validate())
	v.layout(f, e.DLQ.Validate())
	if p := e.Policy; p != nil {
		switch {
		case p.MaxAttempts == 0:
			v.bad(f+".Policy.MaxAttempts", "required: the attempts a job is given, the first one included (at least 1)")
		case p.MaxAttempts < 0:
			v.bad(f+".Policy.MaxAttempts", "expected the attempts a job is given, the first one included (at least 1), got %d", p.MaxAttempts)
		}
		v.ms(f+".Policy.MinBackoff", p.MinBackoff)
	}
	named := map[string]bool{}
	for i, r := range e.Receivers {
		p := fmt.Sprintf("%s.Receivers[%d].Name", f, i)
		switch {
		case r.Name == "":
			v.bad(p, "required: the receiver's name, as {receiver:NAME} gives its URL")
		case strings.ContainsAny(r.Name, "{}:/ "):
			v.bad(p, "%q: a name without braces, colons, slashes or spaces", r.Name)
		case named[r.Name]:
			v.bad(p, "%q is declared twice", r.Name)
		}
		named[r.Name] = true
	}
	if e.NoAlerts && len(e.Receivers) > 0 {
		v.bad(f+".Receivers", "the system has no alerting (noAlerts: true): declare no receivers, or remove noAlerts")
	}
	seen := map[string]bool{}
	for i, s := range e.DLQShrinks {
		p := fmt.Sprintf("%s.DLQShrinks[%d]", f, i)
		switch {
		case !slices.Contains(Shrinks, s):
			v.bad(p, "expected one of %s, got %q%s", strings.Join(Shrinks, ", "), s, suggest(s, Shrinks))
		case seen[s]:
			v.bad(p, "%q is given twice", s)
		}
		seen[s] = true
	}

	sys := v.sc.System
	if sys.Rules != nil {
		v.bad("System.Rules", ExternalReferenceOnly)
	}
	if r := sys.Retry; r != (retry.Config{}) && r != (retry.Config{}).WithDefaults() {
		v.bad("System.Retry", ExternalReferenceOnly)
	}
	if sys.DLQ != (DLQSpec{}) {
		v.bad("System.DLQ", ExternalReferenceOnly)
	}
	if len(sys.Breakers) > 0 {
		v.bad("System.Breakers", ExternalReferenceOnly)
	}
	if sys.AutoRetry != nil {
		v.bad("System.AutoRetry", ExternalReferenceOnly)
	}
	if sys.Monitor != nil {
		v.bad("System.Monitor", ExternalReferenceOnly)
	}
	for i := range v.sc.Steps {
		v.bad(fmt.Sprintf("Steps[%d].Kind", i), ExternalNoSteps)
	}
	for i, ft := range v.sc.Faults {
		switch ft.Target.Kind {
		case faults.Store, faults.DLQStore:
			v.bad(fmt.Sprintf("Faults[%d].Target", i), ExternalNoStoreFaults)
		case faults.Worker:
			if e.Running {
				v.bad(fmt.Sprintf("Faults[%d].Target", i), "the drill did not start a running system's workers and cannot crash or stall them: remove the fault, or give a command instead of running: true")
			}
		}
	}
	for i, t := range v.sc.Workload.Tasks {
		if t.Dependency == "" {
			v.bad(fmt.Sprintf("Workload.Tasks[%d].Dependency", i), ExternalNeedsDependency)
		}
	}
	v.placeholders(f, e)
}

// externalPlaceholder is a placeholder that names a part of the drill.
var externalPlaceholder = regexp.MustCompile(`\{(dependency|receiver):([^{}]*)\}`)

// placeholders checks that every {dependency:NAME} and {receiver:NAME}
// of the block names a dependency (of a task, or declared) or a receiver
// (the alerts' receivers, or the default "slack") the drill will have.
func (v *validator) placeholders(f string, e *ExternalSpec) {
	deps := map[string]bool{}
	for _, d := range v.sc.Dependencies {
		deps[d.Name] = true
	}
	for _, t := range v.sc.Workload.Tasks {
		deps[t.Dependency] = true
	}
	rcvs := map[string]bool{"slack": true}
	for _, r := range v.sc.System.Alerts.Receivers {
		rcvs[r.Name] = true
	}
	for _, r := range e.Receivers {
		rcvs[r.Name] = true
	}
	check := func(field, s string) {
		for _, m := range externalPlaceholder.FindAllStringSubmatch(s, -1) {
			known, what := deps, "dependency of this drill (dependencies"
			if m[1] == "receiver" {
				known, what = rcvs, "receiver of this drill (receivers"
			}
			if !known[m[2]] {
				names := slices.Sorted(maps.Keys(known))
				v.bad(field, "%s names no %s: %s)%s", m[0], what, strings.Join(names, ", "), suggest(m[2], names))
			}
		}
	}
	cmd := func(field string, c *layout.Command) {
		if c == nil {
			return
		}
		check(field+".Path", c.Path)
		check(field+".Dir", c.Dir)
		for i, a := range c.Args {
			check(fmt.Sprintf("%s.Args[%d]", field, i), a)
		}
		for _, k := range slices.Sorted(maps.Keys(c.Env)) {
			check(field+".Env", k+"="+c.Env[k])
		}
	}
	cmd(f+".Command", e.Command)
	cmd(f+".Inject.Command", e.Inject.Command)
	cmd(f+".DLQ.Command", e.DLQ.Command)
	if e.Ready != nil {
		cmd(f+".Ready.Command", e.Ready.Command)
		if e.Ready.HTTP != nil {
			check(f+".Ready.HTTP.URL", e.Ready.HTTP.URL)
		}
	}
	if e.Inject.HTTP != nil {
		check(f+".Inject.HTTP.URL", e.Inject.HTTP.URL)
	}
	if e.DLQ.HTTP != nil {
		check(f+".DLQ.HTTP.URL", e.DLQ.HTTP.URL)
	}
}

// initialisms are the layout's keys whose Go fields are initialisms.
var initialisms = map[string]string{"dlq": "DLQ", "id": "ID", "idPath": "IDPath", "http": "HTTP", "url": "URL"}

// layout reports a layout's config error at its field under f: the
// layout's path ("inject.redisList.key") with each part's first letter
// upper-cased, as the scenario's Go fields are written
// ("System.External.Inject.RedisList.Key").
func (v *validator) layout(f string, err error) {
	if err == nil {
		return
	}
	var ce *layout.ConfigError
	if !errors.As(err, &ce) {
		v.badErr(f, err, "%v", err)
		return
	}
	parts := strings.Split(ce.Field, ".")
	for i, p := range parts {
		name, idx, _ := strings.Cut(p, "[")
		if idx != "" {
			idx = "[" + idx
		}
		if goName, ok := initialisms[name]; ok {
			name = goName
		} else if name != "" {
			name = strings.ToUpper(name[:1]) + name[1:]
		}
		parts[i] = name + idx
	}
	v.badErr(f+"."+strings.Join(parts, "."), err, "%s", ce.Reason)
}
