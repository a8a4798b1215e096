package sim

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/scenarios"
)

func (w *world) nextArrival() time.Duration {
	a := &w.sc.Workload.Arrivals
	var sec float64
	switch a.Kind {
	case scenarios.Constant:
		sec = float64(w.arrivals) / a.Rate
	default:
		w.arrT += w.arrRand.ExpFloat64() / a.Rate
		sec = w.arrT
	}
	return a.From + time.Duration(math.Floor(sec*1000))*time.Millisecond
}

func (w *world) arrivalsUntil() time.Duration {
	until := w.sc.Workload.Arrivals.Until
	if until == 0 || until > w.end {
		until = w.end
	}
	return until
}

func (w *world) arrive() {
	w.arrivals++
	w.create(w.pick(""), scenarios.PlannedJobSpec{})
	w.arrAt = w.nextArrival()
	w.arrOn = w.arrAt < w.arrivalsUntil()
}

func (w *world) pick(task string) *taskGen {
	if task != "" {
		return w.byTask[task]
	}
	if len(w.tasks) == 1 {
		return w.tasks[0]
	}
	n := w.taskRand.IntN(w.total)
	for _, t := range w.tasks {
		if n -= t.Weight; n < 0 {
			return t
		}
	}
	return w.tasks[len(w.tasks)-1]
}

// create enqueues one job of task t (with pj's explicit fields, if any).
func (w *world) create(t *taskGen, pj scenarios.PlannedJobSpec) {
	if w.led.Tracked() >= w.sc.Limits.MaxInFlight {
		if len(w.errs) == 0 {
			w.errs = append(w.errs, fmt.Errorf("run stopped at %s: %w", fmtOffset(w.now()),
				&scenarios.LimitError{What: "jobs in flight", Flag: "--max-in-flight", Max: int64(w.sc.Limits.MaxInFlight), Got: int64(w.led.Tracked()) + 1,
					Hint: "lower the arrival rate, shorten the run,"}))
		}
		return
	}
	now := w.clk.Now()
	j, n := w.newJob(t, pj, now)
	w.led.Register(j.ID, j.Task, n)
	if w.rec != nil {
		w.recordJob(j)
	}
	if err := w.backend.Enqueue(w.ctx, j, now); err != nil {
		w.led.Unregister(j.ID)
		w.errs = append(w.errs, fmt.Errorf("enqueue job %s at %s: %w", j.ID, fmtOffset(w.now()), err))
		return
	}
	w.made++
}

// newJob makes the next job of task t (with pj's explicit fields, if any)
// enqueued at now, and returns it with its generated number (0 for an
// explicit job): the simulator's and a drill's producer make their jobs
// here, so a drill's jobs are the simulator's, ID for ID.
func (w *world) newJob(t *taskGen, pj scenarios.PlannedJobSpec, now time.Time) (job.Job, int64) {
	w.seq++
	j := job.Job{Task: t.Name, Queue: t.queue, Dependency: t.Dependency, EnqueuedAt: now}
	var n int64
	if pj.ID != "" {
		j.ID = pj.ID
	} else {
		n = w.seq
		j.ID = w.ids.id(t.Name, n)
	}
	switch {
	case pj.IdempotencyKey != "":
		j.IdempotencyKey = pj.IdempotencyKey
	case t.IdempotencyKey:
		j.IdempotencyKey = "idem-" + j.ID
	}
	if j.IdempotencyKey != "" {
		j.KeyRecordedAt = now
	}
	payload := t.Payload
	if pj.Payload != "" {
		payload = pj.Payload
	}
	if payload != "" {
		j.Payload = []byte(strings.NewReplacer("{n}", strconv.FormatInt(w.seq, 10), "{id}", j.ID).Replace(payload))
		if len(w.sc.Invariants.Secrets) > 0 {
			w.chk.Secrets.Plant(j.ID, j.Payload)
		}
	}
	return j, n
}
