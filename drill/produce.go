package drill

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/scenarios"
	"github.com/faultline/faultline/sim"
)

// planArrivals is sc's whole workload (sim.Plan), made before the
// drill's clock starts: every job the scenario creates before its end.
func planArrivals(sc scenarios.Scenario) ([]sim.Arrival, error) {
	plan, err := sim.NewPlan(sc)
	if err != nil {
		return nil, err
	}
	var out []sim.Arrival
	for {
		a, ok := plan.Next()
		if !ok || a.At >= sc.Duration {
			return out, nil
		}
		out = append(out, a)
	}
}

// The producer sends the jobs due at once in chunks of produceChunk, each
// one round trip (redisstore.EnqueueMany), produceChunks chunks at once.
// Measured on the project's 2-core machine, idle, in a drill of
// dlq-past-ten-thousand at scale 20: one enqueue at a time, 32 at once,
// made about 1,000 jobs a second while the workers kept Redis busy (an
// enqueue waited 30 ms for its answer), 9,662 of its 10,050 jobs before
// the scenario's end; one job a round trip cannot keep up with a burst.
const (
	produceChunk  = 64
	produceChunks = 4
)

// forChunks calls fn for each chunk [lo, hi) of n items, produceChunk at
// most, produceChunks at once, and waits for them; it stops starting
// chunks once ctx is done (reporting false).
func forChunks(ctx context.Context, n int, fn func(lo, hi int)) bool {
	var wg sync.WaitGroup
	defer wg.Wait()
	sem := make(chan struct{}, produceChunks)
	for lo := 0; lo < n; lo += produceChunk {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return false
		}
		hi := min(lo+produceChunk, n)
		wg.Go(func() {
			defer func() { <-sem }()
			fn(lo, hi)
		})
	}
	return true
}

// produce creates the scenario's jobs at their instants. A producer
// behind its clock never skips a job: it creates every job already due at
// once, and its slip ("producer") is how late each batch of due jobs
// began.
func (d *drill) produce(ctx context.Context) {
	defer close(d.produced)
	arr := d.arrivals
	for i := 0; i < len(arr); {
		if !sleepUntil(ctx, d.clk.WallAt(arr[i].At)) {
			return
		}
		// Every job due by now is one batch.
		now := d.clk.Elapsed()
		k := i + 1
		for k < len(arr) && arr[k].At <= now {
			k++
		}
		d.slip.add("producer", d.clk.ToWall(now-arr[i].At))
		batch := arr[i:k]
		i = k
		// Each chunk is recorded as it is made: a look at the store while
		// a big batch is on its way judges what exists.
		if !forChunks(ctx, len(batch), func(lo, hi int) {
			hjs := d.enqueueMany(ctx, batch[lo:hi])
			d.mu.Lock()
			d.h.Jobs = append(d.h.Jobs, hjs...)
			d.created += len(hjs)
			d.mu.Unlock()
		}) {
			return
		}
	}
}

// made is the record of arrival a's job, created at at with outcome.
func made(a sim.Arrival, at time.Duration, outcome string) oracle.Job {
	return oracle.Job{AtMs: at.Milliseconds(), LagMs: max(at-a.At, 0).Milliseconds(), ID: a.Job.ID, Task: a.Job.Task, Key: a.Job.IdempotencyKey, Outcome: outcome}
}

// enqueueMany creates the jobs of as, in one round trip, and says how each
// went; a job whose enqueue failed is tried again by itself (enqueue).
func (d *drill) enqueueMany(ctx context.Context, as []sim.Arrival) []oracle.Job {
	if len(as) == 1 {
		return []oracle.Job{d.enqueue(ctx, as[0])}
	}
	now := d.clk.Now()
	at := now.Sub(d.sc.Start)
	jobs := make([]job.Job, len(as))
	for i, a := range as {
		jobs[i] = a.Job
	}
	ectx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	errs := d.st.EnqueueMany(ectx, jobs, now)
	cancel()
	hjs := make([]oracle.Job, len(as))
	for i, a := range as {
		err := errs[i]
		if errors.Is(err, job.ErrInvalid) {
			// Final: trying again would not make it valid (validate
			// refuses such a job before a drill starts).
			d.log.Error("enqueue", "job", a.Job.ID, "err", err)
			hjs[i] = made(a, at, "unknown")
			continue
		}
		if err != nil && !errors.Is(err, queue.ErrDuplicate) && !errors.Is(err, queue.ErrDeadLettered) {
			d.log.Warn("enqueue", "job", a.Job.ID, "err", err)
			hjs[i] = d.enqueue(ctx, a)
			continue
		}
		hjs[i] = made(a, at, "ok")
		if err != nil {
			hjs[i].Outcome = "unknown" // made by an earlier try: its event says when
		}
	}
	return hjs
}

// enqueueGiveUp is how long the producer keeps trying to create a job
// whose enqueue fails (the store down or restarting) before it records
// the job as unknown.
const enqueueGiveUp = 60 * time.Second

// enqueue creates one job of the plan, and says how it went. A failed
// enqueue is tried again (the store refuses a job ID it already has, so a
// try that happened but lost its answer is not made twice) until it is
// made, or enqueueGiveUp passes (then the job's outcome is unknown: an
// Enqueued event in the stream, if any, says it happened).
func (d *drill) enqueue(ctx context.Context, a sim.Arrival) oracle.Job {
	var hj oracle.Job
	giveUp := time.Now().Add(enqueueGiveUp)
	for wait := 20 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		now := d.clk.Now()
		at := now.Sub(d.sc.Start)
		hj = made(a, at, "ok")
		ectx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := d.st.Enqueue(ectx, a.Job, now)
		cancel()
		if err == nil || errors.Is(err, queue.ErrDuplicate) || errors.Is(err, queue.ErrDeadLettered) {
			if err != nil {
				hj.Outcome = "unknown" // made by an earlier try: its event says when
			}
			return hj
		}
		d.log.Warn("enqueue", "job", a.Job.ID, "err", err)
		if time.Now().After(giveUp) || !sleepUntil(ctx, time.Now().Add(wait)) {
			hj.Outcome = "unknown"
			return hj
		}
	}
}

// sleepUntil waits until t or ctx is done; it reports false for ctx.
func sleepUntil(ctx context.Context, t time.Time) bool {
	wait := time.Until(t)
	if wait <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(wait)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}
