package scenarios

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/faultline/faultline/internal/didyoumean"
	"github.com/faultline/faultline/reference/job"
)

// ErrInvalidScenario is matched by every error Validate returns.
var ErrInvalidScenario = errors.New("invalid scenario")

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

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// Validate reports every invalid field of sc (defaults applied), each a
// *ScenarioError, joined with errors.Join: the scenario's own fields, the
// configuration of every reference component as sim.Run builds it (store,
// classifier, retry policy, alerter, breakers and fallbacks, monitor,
// auto-retry, faults), what the simulator does not simulate, references
// that name nothing (a fault's dependency, receiver or worker, a breaker's
// dependency, an expectation's job, task, receiver or breaker), what lies
// at or past the end of the run, and the RunLimits. A scenario Validate
// accepts is one sim.Run can run: an error from sim.Run for it is a bug.
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
	lim  RunLimits
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

func (v *validator) scenario() {
	sc := v.sc
	if sc.Name == "" {
		v.bad("Name", "is required")
	}
	if sc.Duration <= 0 {
		v.bad("Duration", "must be positive")
	} else if sc.Duration > v.lim.MaxDuration {
		err := &LimitError{What: "a run", Flag: "--max-duration", Max: int64(v.lim.MaxDuration), Got: int64(sc.Duration), Duration: true, Hint: "shorten it"}
		v.badErr("Duration", err, "%s", err)
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
	switch p := sc.Workers.Processes; {
	case p < 0:
		v.bad("Workers.Processes", "must be at least 1 (0 is one process), got %d", p)
	case p > max(sc.Workers.Count, 1):
		v.bad("Workers.Processes", "%d processes for %d worker slots: a process runs at least one slot (at most %d)", p, sc.Workers.Count, sc.Workers.Count)
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
		v.storable(f, t, PlannedJobSpec{}, "Name", "Payload")
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
		if k := slices.IndexFunc(w.Tasks, func(t TaskSpec) bool { return t.Name == j.Task }); k >= 0 && (j.ID != "" || j.Payload != "") {
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
func (v *validator) storable(f string, t TaskSpec, pj PlannedJobSpec, id, payload string) {
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
