package sim

import (
	"fmt"
	"time"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/reference/job"
)

// dependencyCall is the faults.Call of job j's call to its dependency as
// its attempt begins at offset at: the job, its task and the attempt's
// number (the attempts that used the retry budget before it, plus one), so
// that a fault's schedule can select it by jobs, tasks or attempts.
func dependencyCall(at time.Duration, j job.Job) faults.Call {
	return faults.Call{At: at, JobID: j.ID, Task: j.Task, Attempt: j.Attempts + 1}
}

// faultDeadLetter is fault for the write of job j's dead letter: the call
// carries the job's task and the attempt that dead-lettered it (j.Attempts,
// which counts it), so dlq-store faults select it by tasks and attempts too.
func (f *faultyDLQ) faultDeadLetter(j job.Job) error {
	eff := f.w.inj.Call(faults.Target{Kind: faults.DLQStore}, faults.Call{At: f.w.now(), JobID: j.ID, Task: j.Task, Attempt: j.Attempts})
	if eff.Err != nil {
		return fmt.Errorf("dlq store (fault %s): %w", eff.Fault, eff.Err)
	}
	return nil
}

// callWatch keeps when each dependency was called, by dependency name,
// when an expectation reads it (a RetryRate of calls): nothing otherwise.
type callWatch struct {
	inited, want bool
	at           map[string][]time.Duration
}

// noteCall records a call to dependency dep at offset at, for the
// expectations that read the calls per window.
func (w *world) noteCall(dep string, at time.Duration) {
	c := &w.calls
	if !c.inited {
		c.inited = true
		c.want = w.sc.ReadsCalls()
	}
	if !c.want {
		return
	}
	if c.at == nil {
		c.at = make(map[string][]time.Duration)
	}
	c.at[dep] = append(c.at[dep], at)
}
