package scenarios

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/reference/classify"
)

// ErrNotSimulated: a fault whose model and target the simulator does not
// apply (it would be injected and change nothing: a silent pass).
var ErrNotSimulated = errors.New("not simulated")

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

// faultWhen checks that the dependency a worker fault waits for a call at
// is one the run has: a listed dependency or a task's. Otherwise no worker
// is ever mid-call at it, and the fault never strikes.
func (v *validator) faultWhen(field string, f faults.Fault) {
	w := f.Schedule.When
	if w == nil || w.Dependency == "" {
		return
	}
	names := slices.Clone(v.deps)
	for _, d := range v.sc.Dependencies {
		if !slices.Contains(names, d.Name) {
			names = append(names, d.Name)
		}
	}
	if slices.Contains(names, w.Dependency) {
		return
	}
	known := "the run has none"
	if len(names) > 0 {
		known = "the dependencies are " + strings.Join(names, ", ")
	}
	v.bad(field, "%q is not a dependency (%s), so no worker is ever mid-call at it and the fault never strikes%s", w.Dependency, known, suggest(w.Dependency, names))
}

// faultTasks checks that a fault's schedule tasks are tasks of the
// workload and, for a fault on a named dependency, that each calls it:
// otherwise the fault never fires for that task.
func (v *validator) faultTasks(field string, f faults.Fault) {
	names := make([]string, 0, len(v.sc.Workload.Tasks))
	for _, t := range v.sc.Workload.Tasks {
		names = append(names, t.Name)
	}
	for k, name := range f.Schedule.Tasks {
		at := fmt.Sprintf("%s[%d]", field, k)
		if !v.tasks[name] {
			v.bad(at, "%q is not a task of the workload (the tasks are %s), so the fault never fires for it%s", name, strings.Join(names, ", "), suggest(name, names))
			continue
		}
		if f.Target.Kind != faults.Dependency || f.Target.Name == "" {
			continue
		}
		for _, t := range v.sc.Workload.Tasks {
			if t.Name == name && t.Dependency != f.Target.Name {
				calls := "calls no dependency"
				if t.Dependency != "" {
					calls = fmt.Sprintf("calls %q", t.Dependency)
				}
				v.bad(at, "task %q %s, not %q, so the fault never fires for it", name, calls, f.Target.Name)
			}
		}
	}
}

// interleaveSimulated refuses an interleave fault on an operation the
// simulator never runs: its operator's delete step deletes entry by entry,
// so no bulk delete (delete-matching) runs.
func interleaveSimulated(f faults.Fault) error {
	m, ok := f.Model.(faults.Interleave)
	if !ok || m.WithDefaults().Operation == faults.OpRequeueMatching {
		return nil
	}
	return fmt.Errorf("%w: model interleave strikes operation %s, which the simulator never runs (its delete step deletes entry by entry); use operation requeue-matching (an operator's requeue step)", ErrNotSimulated, m.Operation)
}

// interleaveStruck refuses an interleave fault in a scenario with no
// operator's requeue step: nothing it could strike runs (the auto-retry
// requeues entry by entry, never through a bulk requeue), so the fault
// would never fire.
func interleaveStruck(sc *Scenario, f faults.Fault) error {
	if _, ok := f.Model.(faults.Interleave); !ok {
		return nil
	}
	for _, st := range sc.Steps {
		if st.Kind == Requeue {
			return nil
		}
	}
	return errors.New("model interleave strikes an operator's bulk requeue, and the scenario has no requeue step, so the fault never fires (the auto-retry requeues entry by entry and is not struck): add a step {action: requeue}")
}
