package sim

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/internal/didyoumean"
	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/reference/degrade"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/redact"
	"github.com/faultline/faultline/reference/retry"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/worker"
)

// ErrInvalidScenario is matched by every error Validate returns.
var ErrInvalidScenario = errors.New("invalid scenario")

// ErrNotSimulated: a fault whose model and target the simulator does not
// apply (it would be injected and change nothing: a silent pass).
var ErrNotSimulated = errors.New("not simulated")

// ScenarioError names the invalid field of a scenario.
type ScenarioError struct {
	Scenario, Field, Reason string
	// Err is the cause, when there is one to match (ErrNotSimulated,
	// ErrLimit, a component's config error).
	Err error
}

// Error returns `scenario "name": Field: reason`.
func (e *ScenarioError) Error() string {
	return fmt.Sprintf("scenario %q: %s: %s", e.Scenario, e.Field, e.Reason)
}

// Is matches ErrInvalidScenario.
func (e *ScenarioError) Is(target error) bool { return target == ErrInvalidScenario }

// Unwrap returns the cause, if any.
func (e *ScenarioError) Unwrap() error { return e.Err }

// The default Limits.
const (
	// DefaultMaxWorkers bounds the worker slots.
	DefaultMaxWorkers = 10_000
	// DefaultMaxSamples bounds the points of a run's time series.
	DefaultMaxSamples = 100_000
	// DefaultMaxInFlight bounds the jobs a run tracks at once (about
	// 1.3 KB of memory each, so some 1.3 GB at the limit): far more than a
	// 24-hour run at 100 jobs a second keeps unfinished, or a DLQ of
	// 100,000 dead letters.
	DefaultMaxInFlight = 1_000_000
)

// Limits bound what one run may use, so that a mistaken or hostile
// scenario is refused with an error naming the limit instead of exhausting
// memory. A zero field takes its default. They are not part of the scenario
// file: faultline's --max-workers, --max-samples and --max-in-flight set
// them.
type Limits struct {
	// MaxWorkers bounds the worker slots (Workers.Count and a SetWorkers
	// step's); default DefaultMaxWorkers.
	MaxWorkers int
	// MaxSamples bounds the points of the time series, Duration/Sample;
	// default DefaultMaxSamples.
	MaxSamples int
	// MaxInFlight bounds the jobs the run tracks at once: created and not
	// yet succeeded (queued, running, scheduled, in fallback, held or
	// dead-lettered); default DefaultMaxInFlight. A run that would pass it
	// stops with an error matching ErrLimit.
	MaxInFlight int
}

// WithDefaults returns l with its zero fields set to the defaults.
func (l Limits) WithDefaults() Limits {
	if l.MaxWorkers == 0 {
		l.MaxWorkers = DefaultMaxWorkers
	}
	if l.MaxSamples == 0 {
		l.MaxSamples = DefaultMaxSamples
	}
	if l.MaxInFlight == 0 {
		l.MaxInFlight = DefaultMaxInFlight
	}
	return l
}

// LimitError is a limit a run would pass.
type LimitError struct {
	// What is counted ("jobs in flight"), Max the limit, Got what the run
	// would need (at least), Flag the faultline flag that lifts it.
	What, Flag string
	Max, Got   int64
	// Hint says what else to do, e.g. "coarsen the sampling".
	Hint string
}

// Error returns e.g. "12000 workers, more than the limit of 10000; lift
// the limit with --max-workers".
func (e *LimitError) Error() string {
	msg := fmt.Sprintf("%d %s, more than the limit of %d; ", e.Got, e.What, e.Max)
	if e.Hint != "" {
		msg += e.Hint + " or "
	}
	return msg + "lift the limit with " + e.Flag
}

// Is matches ErrLimit (limit.go).
func (e *LimitError) Is(target error) bool { return target == ErrLimit }

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// WithDefaults returns sc with the zero fields a run needs filled in: the
// start, the workers, the sample interval, the page deadline, the retry
// policy's defaults, task weights, the default receivers and redactor, the
// limits.
func (sc Scenario) WithDefaults() Scenario {
	if sc.Start.IsZero() {
		sc.Start = DefaultStart
	}
	sc.Start = sc.Start.UTC()
	if sc.Workers.Count == 0 {
		sc.Workers.Count = 4
	}
	if sc.Workers.LeaseTTL == 0 {
		sc.Workers.LeaseTTL = 30 * time.Second
	}
	if sc.Sample == 0 {
		sc.Sample = max((sc.Duration / 500).Truncate(time.Second), time.Second)
	}
	if sc.Invariants.PageWithin == 0 {
		sc.Invariants.PageWithin = 5 * time.Minute
	}
	sc.System.Retry = sc.System.Retry.WithDefaults()
	tasks := make([]Task, len(sc.Workload.Tasks))
	for i, t := range sc.Workload.Tasks {
		if t.Weight == 0 {
			t.Weight = 1
		}
		tasks[i] = t
	}
	sc.Workload.Tasks = tasks
	if len(sc.System.Alerts.Receivers) == 0 {
		sc.System.Alerts.Receivers = []alert.Receiver{{Name: "on-call"}, {Name: "team"}}
		sc.System.Alerts.Routes = []alert.Route{{Receiver: "on-call", Severities: []classify.Severity{classify.High}}}
		sc.System.Alerts.DefaultReceiver = "team"
	}
	if sc.System.Alerts.Redactor == nil {
		sc.System.Alerts.Redactor = redact.Default()
	}
	sc.Limits = sc.Limits.WithDefaults()
	return sc
}

// The configurations Run gives the reference components, built in one
// place so that Validate checks exactly what Run constructs.

// storeConfig is the store's configuration (Run adds its Observer).
func (sc *Scenario) storeConfig() store.Config {
	return store.Config{Namespace: "sim", DLQCapacity: sc.System.DLQ.Capacity, Overflow: sc.System.DLQ.Overflow,
		LostLeaseUsesAttempt: sc.System.DLQ.LostLeaseUsesAttempt}
}

// alertConfig is the alerter's configuration, each receiver delivering to
// sink(name).
func (sc *Scenario) alertConfig(sink func(name string) alert.Sink) alert.Config {
	acfg := sc.System.Alerts
	acfg.Receivers = slices.Clone(acfg.Receivers)
	for i := range acfg.Receivers {
		acfg.Receivers[i].Sink = sink(acfg.Receivers[i].Name)
	}
	return acfg
}

// monitorConfig is the DLQ monitor's configuration.
func (sc *Scenario) monitorConfig(st worker.StatsReader, sig worker.Signaler, clk clock.Clock) worker.MonitorConfig {
	m := sc.System.Monitor
	return worker.MonitorConfig{Store: st, Alerter: sig, Clock: clk, Namespace: "sim",
		MaxDepth: m.MaxDepth, MaxAge: m.MaxAge, Interval: m.Interval, Severity: m.Severity}
}

// autoRetryConfig is the off-peak auto-retry's configuration.
func (sc *Scenario) autoRetryConfig(st worker.RetryStore, clk clock.Clock) worker.AutoRetryConfig {
	a := sc.System.AutoRetry
	return worker.AutoRetryConfig{Store: st, Clock: clk, Window: a.Window, Filter: a.Filter,
		Rate: a.Rate, Interval: a.Interval, MaxAutoRetries: a.MaxAutoRetries, Budget: a.Budget}
}

// Validate reports every invalid field of sc (defaults applied), each a
// *ScenarioError, joined with errors.Join: the scenario's own fields, the
// configuration of every reference component as Run builds it (store,
// classifier, retry policy, alerter, breakers and fallbacks, monitor,
// auto-retry, faults), what the simulator does not simulate, references
// that name nothing (a fault's dependency, receiver or worker, a breaker's
// dependency, an expectation's job, task, receiver or breaker), what lies
// at or past the end of the run, and the Limits. A scenario Validate
// accepts is one Run can run: an error from Run for it is a bug.
func (sc Scenario) Validate() error {
	v := &validator{sc: &sc, lim: sc.Limits.WithDefaults()}
	v.scenario()
	v.external()
	v.abortIf()
	v.workload()
	v.steps()
	v.components()
	v.faults()
	v.expectations()
	return errors.Join(v.errs...)
}

type validator struct {
	sc   *Scenario
	lim  Limits
	errs []error
	// tasks are the task names; deps the dependencies tasks call.
	tasks map[string]bool
	deps  []string
	// ids are the explicit jobs' IDs; generated says jobs get TASK-N IDs.
	ids       []string
	generated bool
	receivers []string
	breakers  []string
	// maxWorkers is the most worker slots the run ever has.
	maxWorkers int
}

func (v *validator) bad(field, format string, args ...any) {
	v.errs = append(v.errs, &ScenarioError{Scenario: v.sc.Name, Field: field, Reason: fmt.Sprintf(format, args...)})
}

func (v *validator) badErr(field string, err error, format string, args ...any) {
	v.errs = append(v.errs, &ScenarioError{Scenario: v.sc.Name, Field: field, Reason: fmt.Sprintf(format, args...), Err: err})
}

// ms checks a duration is a whole, non-negative number of milliseconds.
func (v *validator) ms(field string, d time.Duration) bool {
	if d < 0 || d%time.Millisecond != 0 {
		v.bad(field, "must be a whole, non-negative number of milliseconds, got %s", d)
		return false
	}
	return true
}

// beforeEnd checks that something at offset at happens inside the run.
func (v *validator) beforeEnd(field, what string, at time.Duration) {
	if v.sc.Duration > 0 && at >= v.sc.Duration {
		v.bad(field, "%s at %s never happens: the run ends at %s", what, at, v.sc.Duration)
	}
}

// suggest returns "; did you mean X?" for the closest candidate, or "".
func suggest(s string, candidates []string) string {
	if best := didyoumean.Closest(s, candidates); best != "" {
		return "; did you mean " + strconv.Quote(best) + "?"
	}
	return ""
}

func (v *validator) scenario() {
	sc := v.sc
	if sc.Name == "" {
		v.bad("Name", "is required")
	}
	if sc.Duration <= 0 {
		v.bad("Duration", "must be positive")
	} else {
		v.ms("Duration", sc.Duration)
	}
	if sc.Sample <= 0 {
		v.bad("Sample", "must be positive")
	} else if v.ms("Sample", sc.Sample) && sc.Duration > 0 {
		if n := int64(sc.Duration/sc.Sample) + 1; n > int64(v.lim.MaxSamples) {
			err := &LimitError{What: "samples", Flag: "--max-samples", Max: int64(v.lim.MaxSamples), Got: n,
				Hint: fmt.Sprintf("coarsen the sampling (a sample of %s gives %d)", suggestSample(sc.Duration, v.lim.MaxSamples), sc.Duration/suggestSample(sc.Duration, v.lim.MaxSamples)+1)}
			v.badErr("Sample", err, "a sample every %s over %s is %s", sc.Sample, sc.Duration, err)
		}
	}
	switch {
	case sc.Workers.Count < 0:
		v.bad("Workers.Count", "must not be negative")
	case sc.Workers.Count > v.lim.MaxWorkers:
		err := &LimitError{What: "workers", Flag: "--max-workers", Max: int64(v.lim.MaxWorkers), Got: int64(sc.Workers.Count)}
		v.badErr("Workers.Count", err, "%s", err)
	}
	if sc.Workers.LeaseTTL < time.Millisecond {
		v.bad("Workers.LeaseTTL", "must be at least 1ms")
	} else {
		v.ms("Workers.LeaseTTL", sc.Workers.LeaseTTL)
	}
	v.maxWorkers = sc.Workers.Count
	for _, st := range sc.Steps {
		if st.Kind == SetWorkers {
			v.maxWorkers = max(v.maxWorkers, st.Workers)
		}
	}
}

// abortIf checks the drill's guard: at least one bound, none negative, a
// share in (0,1], a window only with a rate, from 1s to the run's length.
func (v *validator) abortIf() {
	a := v.sc.AbortIf
	if a == nil {
		return
	}
	if a.DLQDepth == 0 && a.ErrorRate == 0 && a.MaxActiveFaults == 0 {
		v.bad("AbortIf", "give at least one bound")
		return
	}
	if a.DLQDepth < 0 {
		v.bad("AbortIf.DLQDepth", "must not be negative (0 is no bound), got %d", a.DLQDepth)
	}
	if r := a.ErrorRate; r != 0 && !(r > 0 && r <= 1) {
		v.bad("AbortIf.ErrorRate", "must be a share in (0,1] (0 is no bound), got %v", r)
	}
	switch w := a.ErrorWindow; {
	case w == 0:
	case a.ErrorRate == 0:
		v.bad("AbortIf.ErrorWindow", "is only used with an error rate, and none is given")
	case w < time.Second:
		v.bad("AbortIf.ErrorWindow", "must be at least 1s, got %s", w)
	case v.sc.Duration > 0 && w > v.sc.Duration:
		v.bad("AbortIf.ErrorWindow", "must not be longer than the run (%s), got %s", v.sc.Duration, w)
	default:
		v.ms("AbortIf.ErrorWindow", w)
	}
	if a.MaxActiveFaults < 0 {
		v.bad("AbortIf.MaxActiveFaults", "must be at least 1 (0 is no bound), got %d", a.MaxActiveFaults)
	}
}

// suggestSample is a whole-second sample interval that keeps a run of
// duration d within max samples.
func suggestSample(d time.Duration, maxSamples int) time.Duration {
	s := (d / time.Duration(max(maxSamples-1, 1))).Truncate(time.Second) + time.Second
	return s
}

func (v *validator) workload() {
	sc := v.sc
	w := sc.Workload
	v.tasks = map[string]bool{}
	if len(w.Tasks) == 0 {
		v.bad("Workload.Tasks", "needs at least one task")
	}
	listed := make([]string, 0, len(sc.Dependencies))
	for _, d := range sc.Dependencies {
		listed = append(listed, d.Name)
	}
	for i, t := range w.Tasks {
		f := fmt.Sprintf("Workload.Tasks[%d]", i)
		switch {
		case t.Name == "":
			v.bad(f+".Name", "is required")
		case v.tasks[t.Name]:
			v.bad(f+".Name", "duplicate task %q", t.Name)
		}
		if t.Weight < 0 {
			v.bad(f+".Weight", "must not be negative")
		}
		v.tasks[t.Name] = true
		v.storable(f, t, PlannedJob{}, "Name", "Payload")
		v.ms(f+".Service", t.Service)
		v.ms(f+".ServiceJitter", t.ServiceJitter)
		if t.Dependency != "" {
			if !slices.Contains(v.deps, t.Dependency) {
				v.deps = append(v.deps, t.Dependency)
			}
			// A dependency not listed is a plain one; one a letter away
			// from a listed one is a typo that would make its faults and
			// charges miss.
			if !slices.Contains(listed, t.Dependency) {
				if s := didyoumean.Closest(t.Dependency, listed); s != "" {
					v.bad(f+".Dependency", "%q is not a listed dependency (a plain one, never charged); did you mean %q?", t.Dependency, s)
				}
			}
		}
	}
	seenDep := map[string]bool{}
	for i, d := range sc.Dependencies {
		f := fmt.Sprintf("Dependencies[%d].Name", i)
		switch {
		case d.Name == "":
			v.bad(f, "is required")
		case seenDep[d.Name]:
			v.bad(f, "duplicate dependency %q", d.Name)
		case !slices.Contains(v.deps, d.Name):
			v.bad(f, "no task calls dependency %q%s", d.Name, suggest(d.Name, v.deps))
		}
		seenDep[d.Name] = true
	}
	a := w.Arrivals
	v.ms("Workload.Arrivals.From", a.From)
	v.ms("Workload.Arrivals.Until", a.Until)
	if a.Kind > Poisson {
		v.bad("Workload.Arrivals.Kind", "must be none, constant or poisson")
	}
	if a.Kind != NoArrivals {
		if !(a.Rate > 0 && a.Rate <= 1e7) {
			v.bad("Workload.Arrivals.Rate", "must be in (0, 10,000,000] jobs a second, got %v", a.Rate)
		}
		v.beforeEnd("Workload.Arrivals.From", "arrivals starting", a.From)
		if a.Until != 0 && a.Until <= a.From {
			v.bad("Workload.Arrivals.Until", "must be after from (%s), got %s, or no job ever arrives; 0 means until the end", a.From, a.Until)
		}
		v.generated = true
	}
	taskNames := slices.Sorted(func(yield func(string) bool) {
		for n := range v.tasks {
			if !yield(n) {
				return
			}
		}
	})
	for i, b := range a.Bursts {
		f := fmt.Sprintf("Workload.Arrivals.Bursts[%d]", i)
		v.ms(f+".At", b.At)
		v.beforeEnd(f+".At", "a burst", b.At)
		if b.Count < 0 || b.Count > 10_000_000 {
			v.bad(f+".Count", "must be in [0, 10,000,000]")
		}
		if b.Task != "" && !v.tasks[b.Task] {
			v.bad(f+".Task", "unknown task %q%s", b.Task, suggest(b.Task, taskNames))
		}
		v.generated = v.generated || b.Count > 0
	}
	ids := map[string]bool{}
	for i, j := range w.Jobs {
		f := fmt.Sprintf("Workload.Jobs[%d]", i)
		v.ms(f+".At", j.At)
		v.beforeEnd(f+".At", "a job", j.At)
		if !v.tasks[j.Task] {
			v.bad(f+".Task", "unknown task %q%s", j.Task, suggest(j.Task, taskNames))
		}
		if j.ID == "" {
			v.generated = true
			continue
		}
		if ids[j.ID] {
			v.bad(f+".ID", "duplicate job ID %q", j.ID)
		}
		if i := strings.LastIndexByte(j.ID, '-'); i > 0 && v.tasks[j.ID[:i]] && isDigits(j.ID[i+1:]) {
			v.bad(f+".ID", "%q has the form TASK-N, which generated jobs use; choose another", j.ID)
		}
		ids[j.ID] = true
		v.ids = append(v.ids, j.ID)
	}
	for i, j := range w.Jobs {
		if k := slices.IndexFunc(w.Tasks, func(t Task) bool { return t.Name == j.Task }); k >= 0 && (j.ID != "" || j.Payload != "") {
			v.storable(fmt.Sprintf("Workload.Jobs[%d]", i), w.Tasks[k], j, "ID", "Payload")
		}
	}
}

// storable checks that a job of task t, with pj's explicit fields, is one
// every store takes once the engine has built it (a generated ID TASK-N,
// the payload's {n} and {id} replaced, both at their longest): the store's
// refusal would stop the run as an internal error. A problem of the ID or
// the payload is reported at f+"."+id or f+"."+payload, and only when f
// gives that value (a task's name or a job's own ID, a task's payload or a
// job's own); one of the task or queue name at the task's.
func (v *validator) storable(f string, t Task, pj PlannedJob, id, payload string) {
	const longest = "9223372036854775807" // the largest N of TASK-N and {n}
	j := job.Job{ID: pj.ID, Task: t.Name, Queue: t.Queue}
	if j.ID == "" {
		j.ID = t.Name + "-" + longest
	}
	text := t.Payload
	if pj.Payload != "" {
		text = pj.Payload
	}
	if strings.Contains(text, "{") {
		j.Payload = []byte(strings.NewReplacer("{n}", longest, "{id}", j.ID).Replace(text))
	} else {
		j.Payload = []byte(text)
	}
	var ie *job.InvalidError
	if !errors.As(job.Validate(&j, 0), &ie) {
		return
	}
	isJob := strings.Contains(f, "Jobs[")
	switch ie.Field {
	case "ID":
		if pj.ID == "" && !isJob {
			v.bad(f+"."+id, "its jobs' generated IDs (%q-N) would be refused by the store: %s (shorten the name, or remove its control characters)", t.Name, ie.Reason)
		} else if pj.ID != "" {
			v.bad(f+"."+id, "the store refuses this ID: %s", ie.Reason)
		}
	case "Payload":
		if (pj.Payload != "") == isJob {
			v.bad(f+"."+payload, "the store refuses this payload (with {n} and {id} replaced): %s", ie.Reason)
		}
	case "Task/Queue":
		if isJob {
			return
		}
		if strings.ContainsFunc(t.Name, isControl) {
			v.bad(f+".Name", "contains control characters, which the store refuses")
		} else {
			v.bad(f+".Queue", "contains control characters, which the store refuses")
		}
	}
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

func (v *validator) steps() {
	for i, st := range v.sc.Steps {
		f := fmt.Sprintf("Steps[%d]", i)
		v.ms(f+".At", st.At)
		v.beforeEnd(f+".At", "a step", st.At)
		if st.Kind < Requeue || st.Kind > SetRetry {
			v.bad(f+".Kind", "must be requeue, delete, purge, set-workers or set-retry")
		}
		if st.Workers != 0 { // a count is checked whatever the action
			switch {
			case st.Workers < 0:
				v.bad(f+".Workers", "must not be negative")
			case st.Workers > v.lim.MaxWorkers:
				err := &LimitError{What: "workers", Flag: "--max-workers", Max: int64(v.lim.MaxWorkers), Got: int64(st.Workers)}
				v.badErr(f+".Workers", err, "%s", err)
			}
		}
		if st.Kind == SetRetry {
			v.component(f+".Retry", st.Retry.Validate())
		}
	}
}

// component reports a component's config error at field (its own field
// path appended, when it names one).
func (v *validator) component(field string, err error) {
	if err == nil {
		return
	}
	sub, reason := componentField(err)
	if sub != "" {
		field += "." + sub
	}
	v.badErr(field, err, "%s", reason)
}

// each reports every problem a component's own Validate finds in *cfg, not
// only the first: after each, the field it names is set to its zero value
// (its default) in a copy and Validate runs again. fix, when not nil, may
// repair a field whose zero value is not valid either.
func each[T any](v *validator, field string, cfg T, validate func(T) error, fix func(cfg *T, sub string) bool) {
	seen := map[string]bool{}
	for range 32 {
		err := validate(cfg)
		if err == nil {
			return
		}
		sub, _ := componentField(err)
		v.component(field, err)
		if sub == "" || seen[sub] {
			return
		}
		seen[sub] = true
		if (fix == nil || !fix(&cfg, sub)) && !zeroField(reflect.ValueOf(&cfg).Elem(), sub) {
			return
		}
	}
}

// zeroField sets the field at path ("Routes[2].Timing.GroupWait") of v, a
// struct, to its zero value; false when there is no such field.
func zeroField(v reflect.Value, path string) bool {
	for _, part := range strings.Split(path, ".") {
		name, idx, hasIdx := strings.Cut(part, "[")
		if v.Kind() != reflect.Struct {
			return false
		}
		v = v.FieldByName(name)
		if !v.IsValid() || !v.CanSet() {
			return false
		}
		if hasIdx {
			i, err := strconv.Atoi(strings.TrimSuffix(idx, "]"))
			if err != nil || v.Kind() != reflect.Slice || i < 0 || i >= v.Len() {
				return false
			}
			// The slice is shared with the scenario: copy it first.
			c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
			reflect.Copy(c, v)
			v.Set(c)
			v = v.Index(i)
		}
	}
	v.SetZero()
	return true
}

// componentField returns the field a component's config error names and
// its reason.
func componentField(err error) (field, reason string) {
	var (
		re *retry.ConfigError
		de *degrade.ConfigError
		ae *alert.ConfigError
		we *worker.ConfigError
		se *store.ConfigError
	)
	switch {
	case errors.As(err, &re):
		return re.Field, fmt.Sprintf("%s (got %v)", re.Reason, re.Value)
	case errors.As(err, &de):
		return de.Field, fmt.Sprintf("%s (got %v)", de.Reason, de.Value)
	case errors.As(err, &ae):
		return ae.Field, ae.Reason
	case errors.As(err, &we):
		return we.Field, we.Reason
	case errors.As(err, &se):
		return se.Field, se.Reason
	}
	return "", err.Error()
}

// components checks each reference component's configuration as Run
// builds it.
func (v *validator) components() {
	sc := v.sc
	cfg := sc.storeConfig()
	if err := cfg.Validate(); err != nil {
		var se *store.ConfigError
		field := "System.DLQ"
		if errors.As(err, &se) {
			switch se.Field {
			case "DLQCapacity":
				field += ".Capacity"
			case "Overflow":
				field += ".Overflow"
			}
		}
		_, reason := componentField(err)
		v.badErr(field, err, "%s", reason)
	}
	if sc.System.Rules != nil {
		if _, err := classify.New(sc.System.Rules); err != nil {
			v.badErr("System.Rules", err, "%v", err)
		}
	}
	v.component("System.Retry", sc.System.Retry.Validate())

	acfg := sc.alertConfig(func(string) alert.Sink { return validationSink{} })
	for _, r := range acfg.Receivers {
		v.receivers = append(v.receivers, r.Name)
	}
	before := len(v.errs)
	each(v, "System.Alerts", acfg, alert.Config.Validate, func(c *alert.Config, sub string) bool {
		if len(c.Receivers) == 0 {
			return false
		}
		if sub == "DefaultReceiver" {
			c.DefaultReceiver = c.Receivers[0].Name
			return true
		}
		var i int
		if _, err := fmt.Sscanf(sub, "Routes[%d].Receiver", &i); err == nil && i >= 0 && i < len(c.Routes) && sub == fmt.Sprintf("Routes[%d].Receiver", i) {
			c.Routes = slices.Clone(c.Routes)
			c.Routes[i].Receiver = c.Receivers[0].Name
			return true
		}
		return false
	})
	v.suggestReceivers(v.errs[before:], acfg)

	for i, b := range sc.System.Breakers {
		f := fmt.Sprintf("System.Breakers[%d]", i)
		each(v, f+".Config", b.Config, func(c degrade.BreakerConfig) error { return c.WithDefaults().Validate() }, nil)
		each(v, f+".Fallback", b.Fallback, func(c degrade.FallbackConfig) error { return c.WithDefaults().Validate() }, nil)
		name := b.Config.Name
		if name == "" {
			continue
		}
		if slices.Contains(v.breakers, name) {
			v.bad(f+".Config.Name", "a second breaker for dependency %q", name)
		} else if !slices.Contains(v.deps, name) {
			v.bad(f+".Config.Name", "no task calls dependency %q, so the breaker never sees a call%s", name, suggest(name, v.deps))
		}
		v.breakers = append(v.breakers, name)
	}
	clk := clock.NewVirtual(sc.Start)
	if sc.System.Monitor != nil {
		each(v, "System.Monitor", sc.monitorConfig((*faultyDLQ)(nil), (*alert.Alerter)(nil), clk), worker.MonitorConfig.Validate, nil)
	}
	if sc.System.AutoRetry != nil {
		each(v, "System.AutoRetry", sc.autoRetryConfig((*faultyDLQ)(nil), clk), worker.AutoRetryConfig.Validate, func(c *worker.AutoRetryConfig, sub string) bool {
			if sub == "Window.End" { // equal to Start: any other hour will do
				c.Window.End = (c.Window.Start + time.Hour) % (24 * time.Hour)
				return true
			}
			return false
		})
	}
}

// suggestReceivers makes the alerter's "not a receiver" errors say which
// receivers there are, and which was meant.
func (v *validator) suggestReceivers(errs []error, acfg alert.Config) {
	for _, err := range errs {
		se, ok := err.(*ScenarioError)
		if !ok {
			continue
		}
		var name string
		switch {
		case se.Field == "System.Alerts.DefaultReceiver":
			name = acfg.DefaultReceiver
			if name == "" {
				se.Reason = "expected the receiver of the alerts no route takes, one of " + strings.Join(v.receivers, ", ")
				continue
			}
		case strings.HasPrefix(se.Field, "System.Alerts.Routes[") && strings.HasSuffix(se.Field, "].Receiver"):
			i, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(se.Field, "System.Alerts.Routes["), "].Receiver"))
			if err != nil || i >= len(acfg.Routes) {
				continue
			}
			name = acfg.Routes[i].Receiver
		default:
			continue
		}
		se.Reason = fmt.Sprintf("%q is not a receiver (the receivers are %s)%s", name, strings.Join(v.receivers, ", "), suggest(name, v.receivers))
	}
}

// validationSink stands for the simulator's recording sinks while
// validating the alerter's configuration.
type validationSink struct{}

var _ alert.Sink = validationSink{}

func (validationSink) Send(context.Context, alert.Notification) error { return nil }

// simulated refuses the fault/target pairs the engine does not apply: the
// queue store only slows down (its outages are the live drills' Toxiproxy
// work), the DLQ store only refuses writes.
func simulated(f faults.Fault) error {
	if err := interleaveSimulated(f); err != nil {
		return err
	}
	if f.Model == nil || Simulates(f.Model.Class(), f.Target.Kind) {
		return nil // a missing model: Validate reports it
	}
	if f.Target.Kind == faults.Store {
		return fmt.Errorf("%w: the queue store can only be slowed (slow-store, latency); model %s makes it fail: target dlq-store for DLQ outages", ErrNotSimulated, f.Model.Name())
	}
	return fmt.Errorf("%w: the DLQ store can only refuse writes (store-outage, outage); model %s only adds latency", ErrNotSimulated, f.Model.Name())
}

// Simulates reports whether the simulator applies a fault whose model
// injects errors of class (classify.None: it only adds latency) to a
// target of kind k, among the kinds the model may target: the queue store
// can only be slowed, the DLQ store can only refuse writes, and every
// other kind takes any model. The scenario format's JSON Schema allows a
// model only on the targets it both may target and is simulated on.
func Simulates(class classify.Class, k faults.TargetKind) bool {
	switch k {
	case faults.Store:
		return class == classify.None
	case faults.DLQStore:
		return class != classify.None
	}
	return true
}

// faults checks each fault as the injector will, what the simulator
// applies, and that its target names something the run has.
func (v *validator) faults() {
	sc := v.sc
	seen := map[string]int{}
	for i, f := range sc.Faults {
		p := fmt.Sprintf("Faults[%d]", i)
		if err := f.Validate(); err != nil {
			v.badErr(p, err, "%v", err)
			continue
		}
		if j, dup := seen[f.Name]; dup {
			v.bad(p+".Name", "duplicate fault name %q (faults[%d] has it); names key the faults' random streams", f.Name, j)
		} else {
			seen[f.Name] = i
		}
		if err := simulated(f); err != nil {
			v.badErr(p+".Model", err, "fault %q: %v", f.Name, err)
		} else if err := interleaveStruck(v.sc, f); err != nil {
			v.bad(p+".Model", "fault %q: %v", f.Name, err)
		}
		v.beforeEnd(p+".Schedule.From", "a fault starting", f.Schedule.From)
		v.faultJobs(p+".Schedule.Jobs", f.Schedule.Jobs)
		v.faultTasks(p+".Schedule.Tasks", f)
		v.faultWhen(p+".Schedule.When.Dependency", f)
		n := f.Target.Name
		if n == "" {
			continue
		}
		switch f.Target.Kind {
		case faults.Dependency:
			if !slices.Contains(v.deps, n) {
				v.bad(p+".Target", "no task calls dependency %q, so the fault never fires%s", n, suggest(n, v.deps))
			}
		case faults.AlertSink:
			if !slices.Contains(v.receivers, n) {
				v.bad(p+".Target", "%q is not a receiver (the receivers are %s), so the fault never fires%s", n, strings.Join(v.receivers, ", "), suggest(n, v.receivers))
			}
		case faults.Worker:
			num, ok := strings.CutPrefix(n, "w")
			k, err := strconv.Atoi(num)
			if !ok || err != nil || k < 1 || k > v.maxWorkers || !isDigits(num) {
				v.bad(p+".Target", "worker %q does not exist: the run's workers are w1..w%d, so the fault never fires", n, v.maxWorkers)
			}
		}
	}
}

// faultJobs checks that a fault's schedule jobs are explicit jobs of the
// workload (workload.jobs[].id): the only jobs whose IDs a scenario knows
// before the run, and the only ones a fault can be aimed at.
func (v *validator) faultJobs(field string, ids []string) {
	for k, id := range ids {
		if slices.Contains(v.ids, id) {
			continue
		}
		hint := "aim it at an explicit job of the workload (workload.jobs[].id)"
		if len(v.ids) == 0 {
			hint = "the workload has no explicit job with an ID; add one (workload.jobs[].id)"
		}
		v.bad(fmt.Sprintf("%s[%d]", field, k), "%q is not an explicit job of the workload, so the fault never fires; %s%s", id, hint, suggest(id, v.ids))
	}
}

// expectations checks that each expectation names things the run has.
func (v *validator) expectations() {
	sc := v.sc
	taskNames := make([]string, 0, len(v.tasks))
	for _, t := range sc.Workload.Tasks {
		taskNames = append(taskNames, t.Name)
	}
	breaker := func(field, name string) {
		if !slices.Contains(v.breakers, name) {
			v.bad(field, "no breaker guards %q%s", name, suggest(name, v.breakers))
		}
	}
	for i, e := range sc.Expect {
		f := fmt.Sprintf("Expect[%d]", i)
		switch x := e.(type) {
		case nil:
			v.bad(f, "is nil")
		case JobFate:
			v.job(f+".JobID", x.JobID, taskNames)
		case *JobFate:
			v.job(f+".JobID", x.JobID, taskNames)
		case JobAttempts:
			v.job(f+".JobID", x.JobID, taskNames)
			if sc.Duration > 0 && x.MinGap > sc.Duration {
				v.bad(f+".MinGap", "a gap of %s between attempts never happens: the run ends at %s", x.MinGap, sc.Duration)
			}
		case RetryRate:
			v.beforeEnd(f+".From", "a window starting", x.From)
		case DrainedBy:
			if sc.Duration > 0 && x.At > sc.Duration { // at the end is read: the run's last snapshot
				v.bad(f+".At", "a check that the queue is drained at %s never happens: the run ends at %s", x.At, sc.Duration)
			}
		case Count:
			v.count(f, x, taskNames)
		case *Count:
			v.count(f, *x, taskNames)
		case BreakerOpened:
			breaker(f+".Breaker", x.Breaker)
		case BreakerClosedBy:
			breaker(f+".Breaker", x.Breaker)
		case BreakerTransitions:
			breaker(f+".Breaker", x.Breaker)
		}
	}
}

func (v *validator) count(f string, c Count, taskNames []string) {
	if c.Task != "" && !v.tasks[c.Task] {
		v.bad(f+".Task", "unknown task %q, so the count is always 0%s", c.Task, suggest(c.Task, taskNames))
	}
	if c.Receiver != "" && !slices.Contains(v.receivers, c.Receiver) {
		v.bad(f+".Receiver", "%q is not a receiver (the receivers are %s)%s", c.Receiver, strings.Join(v.receivers, ", "), suggest(c.Receiver, v.receivers))
	}
}

// job checks that an expectation's job ID names a job the run can have: an
// explicit job's, or TASK-N of a task when jobs get generated IDs.
func (v *validator) job(field, id string, taskNames []string) {
	if slices.Contains(v.ids, id) {
		return
	}
	hint := "no job of the run has this ID: explicit jobs have theirs (workload.jobs[].id), generated ones TASK-N"
	cands := slices.Clone(v.ids)
	for _, t := range taskNames {
		cands = append(cands, t+"-1")
	}
	if i := strings.LastIndexByte(id, '-'); i > 0 && v.tasks[id[:i]] && isDigits(id[i+1:]) && v.generated {
		n, err := strconv.ParseInt(id[i+1:], 10, 64)
		most, known := v.generatedJobs()
		switch {
		case err != nil || n < 1:
		case strconv.FormatInt(n, 10) != id[i+1:]:
			hint = "generated IDs are TASK-N with N written without leading zeros"
			cands = []string{id[:i+1] + strconv.FormatInt(n, 10)}
		case known && n > most:
			hint = fmt.Sprintf("the run makes %d jobs, so generated IDs end at N=%d", most, most)
			cands = []string{id[:i+1] + strconv.FormatInt(most, 10)}
		default:
			return
		}
	}
	v.bad(field, "%q: %s%s", id, hint, suggest(id, cands))
}

// generatedJobs returns how many jobs the run makes (so the highest N of a
// generated ID TASK-N: every job, with an explicit ID or not, takes the
// next N) when it is known before the run: planned jobs and fixed bursts
// only, no arrivals at a rate.
func (v *validator) generatedJobs() (int64, bool) {
	w := v.sc.Workload
	if w.Arrivals.Kind != NoArrivals {
		return 0, false
	}
	n := int64(len(w.Jobs))
	for _, b := range w.Arrivals.Bursts {
		n += int64(b.Count)
	}
	return n, true
}
