package drill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/drill/proxy"
	"github.com/faultline/faultline/drill/supervisor"
	"github.com/faultline/faultline/drill/workerproc"
	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/metrics"
	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/degrade"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/retry"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
	"github.com/faultline/faultline/sim"
)

// maskURL is a Redis URL as it may be printed: its host and port only
// (never its password).
func maskURL(raw string) string {
	if !strings.Contains(raw, "://") {
		return raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "(a Redis URL that does not parse)"
	}
	return u.Host
}

// feed receives the workers' reports.
func (d *drill) feed(w http.ResponseWriter, r *http.Request) {
	// The whole batch is read first: a batch refused half-way would be
	// sent again whole (and its first half taken twice, were it not for
	// the reports' sequence numbers).
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 16<<20))
	var batch []workerproc.Report
	for {
		var rep workerproc.Report
		if err := dec.Decode(&rep); err == io.EOF {
			break
		} else if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		batch = append(batch, rep)
	}
	for _, rep := range batch {
		select {
		case d.reports <- rep:
		case <-d.feedDone: // the drill is over: nobody takes reports any more
			http.Error(w, "the drill is over", http.StatusServiceUnavailable)
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// take handles one report, on the drill's loop; a report seen before (a
// batch sent again after a lost answer) is dropped.
func (d *drill) take(r workerproc.Report) {
	if r.Proc != "" {
		if r.Seq <= d.seen[r.Proc] {
			return
		}
		d.seen[r.Proc] = r.Seq
	}
	switch r.Kind {
	case "hello":
		d.hellos[r.Worker] = true
	case "attempt":
		if r.Attempt == nil {
			return
		}
		if r.Failure != nil {
			r.Attempt.Fingerprint = d.alerter.JobFailed(*r.Failure)
		}
		d.mu.Lock()
		d.h.Attempts = append(d.h.Attempts, *r.Attempt)
		d.mu.Unlock()
	case "breaker":
		if r.Breaker == nil {
			return
		}
		b := *r.Breaker
		d.mu.Lock()
		d.h.Breakers = append(d.h.Breakers, b)
		d.mu.Unlock()
		d.opts.Metrics.Breaker(b.Breaker, b.Worker, b.To)
		d.alerter.BreakerChanged(degrade.Transition{Breaker: b.Breaker, From: breakerState(b.From), To: breakerState(b.To),
			At: d.sc.Start.Add(time.Duration(b.AtMs) * time.Millisecond), Reason: b.Reason})
	case "overflow":
		if r.Overflow == nil {
			return
		}
		o := *r.Overflow
		d.mu.Lock()
		d.h.Overflows = append(d.h.Overflows, oracle.Overflow{AtMs: o.At.Sub(d.sc.Start).Milliseconds(), Worker: r.Worker, JobID: o.JobID,
			Policy: o.Policy.String(), Capacity: o.Capacity, Evicted: o.Evicted, Held: o.Held})
		d.mu.Unlock()
		if d.mon != nil {
			d.mon.Overflow(o)
		}
	case "kept":
		if d.mon != nil && r.KeptJob != nil {
			d.mon.Kept(*r.KeptJob, errors.New(r.KeptErr))
		}
	}
}

func breakerState(s string) degrade.State {
	for _, st := range []degrade.State{degrade.Closed, degrade.Open, degrade.HalfOpen} {
		if st.String() == s {
			return st
		}
	}
	return 0
}

// recordingSink delivers through a real sink and records each try.
type recordingSink struct {
	d    *drill
	name string
	real alert.Sink
}

func (s *recordingSink) Send(ctx context.Context, n alert.Notification) error {
	err := s.real.Send(ctx, n)
	at := s.d.clk.Elapsed()
	s.d.mu.Lock()
	closing := s.d.closing
	if !closing {
		s.d.h.Deliveries = append(s.d.h.Deliveries, oracle.DeliveryOf(at, s.name, n, err))
	}
	s.d.mu.Unlock()
	if closing {
		return err
	}
	s.d.opts.Metrics.Notification(s.name, err == nil)
	if err == nil {
		for _, a := range n.Alerts {
			if alert.IsPage(a) {
				s.d.opts.Metrics.Page(s.name)
			}
		}
	}
	return err
}

// run plays the scenario from its origin to its end (or until ctx is
// done): the producer, the faults, the steps, the snapshots, the event
// reader, and the workers' reports.
func (d *drill) run(ctx context.Context) {
	sc := &d.sc
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	if wait := time.Until(d.origin); wait > 0 {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		}
	}
	if d.mon != nil {
		d.mon.Start()
	}
	if d.ar != nil {
		d.ar.Start()
	}
	var wg sync.WaitGroup
	faultCtx, stopFaults := context.WithCancel(runCtx)
	defer stopFaults()
	// The whole workload: only an interrupt, or the last look after the
	// settle's bound, stops the producer.
	prodCtx, stopProducer := context.WithCancel(ctx)
	defer stopProducer()
	go d.produce(prodCtx)
	wg.Go(func() { d.faultsLoop(faultCtx) })
	wg.Go(func() { d.steps(runCtx) })
	probeCtx, stopProbe := context.WithCancel(ctx)
	defer stopProbe()
	go d.slip.probe(probeCtx)
	go d.slip.probeStore(probeCtx, d.opts.RedisURL)
	readDone := make(chan struct{})
	readCtx, stopRead := context.WithCancel(context.Background())
	go func() { defer close(readDone); d.readEvents(readCtx) }()

	end := time.NewTimer(time.Until(d.clk.WallAt(sc.Duration)))
	defer end.Stop()
	sample := time.NewTicker(max(d.clk.ToWall(sc.Sample), 20*time.Millisecond))
	defer sample.Stop()
	progress := time.NewTicker(time.Second)
	defer progress.Stop()
	d.snapshot(ctx)
loop:
	for {
		select {
		case r := <-d.reports:
			d.take(r)
		case <-sample.C:
			d.snapshot(ctx)
			if d.h.Aborted == "" {
				if why := d.guard(); why != "" {
					d.abort(why, stopFaults)
				}
			}
		case <-progress.C:
			d.progress()
		case <-end.C:
			break loop
		case <-ctx.Done():
			d.h.Interrupted = "interrupted (" + context.Cause(ctx).Error() + ")"
			break loop
		}
	}
	stop()
	wg.Wait()
	d.h.EndedMs = min(d.clk.Elapsed(), sc.Duration).Milliseconds()
	// The scenario is over: the monitor and the auto-retry stop, the
	// faults are undone; then the system finishes what it holds (the
	// settle), and the world is frozen for the last look: the workers
	// stopped (SIGSTOP, restarts cancelled), one snapshot, the DLQ listed,
	// the stream read to that point.
	if d.mon != nil {
		d.mon.Stop()
	}
	if d.ar != nil {
		d.ar.Stop()
	}
	d.undoFaults()
	if d.h.Interrupted == "" {
		d.settle(ctx, sample.C, progress.C)
	}
	stopProbe()
	stopProducer()
	<-d.produced
	d.sup.Freeze()
	if d.opts.Metrics != nil {
		d.countHits()
	}
	d.drain(200 * time.Millisecond)
	final, ok := d.finalSnapshot()
	d.mu.Lock()
	d.h.FrozenMs = d.clk.Elapsed().Milliseconds()
	d.mu.Unlock()
	if !ok {
		d.mu.Lock()
		if d.h.Interrupted == "" {
			d.h.Interrupted = "the store could not be read at the drill's end, so its moves cannot be checked against it"
		}
		d.mu.Unlock()
	} else {
		d.listDLQ()
		// The stream is read to the final snapshot's position; the
		// reader is given as long as it keeps making progress.
		var lastGot string
		deadline := time.Now().Add(10 * time.Second)
		for {
			d.mu.Lock()
			got := d.lastID
			d.mu.Unlock()
			if final == redisstore.StreamStart || got == final || !streamBefore(got, final) {
				break
			}
			if got != lastGot {
				lastGot, deadline = got, time.Now().Add(10*time.Second)
			}
			if time.Now().After(deadline) {
				d.mu.Lock()
				if d.h.Interrupted == "" {
					d.h.Interrupted = fmt.Sprintf("the drill could not read the store's event stream to its end: no progress for 10s at %s, the last snapshot at %s", got, final)
				}
				d.mu.Unlock()
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	stopRead()
	<-readDone
	// What the alerter sends from now on is not the drill's; what it
	// raised up to now is (the alerts raised are judged from it).
	d.mu.Lock()
	d.closing = true
	d.h.Alerter = oracle.AlerterOf(d.alerter.Stats())
	d.mu.Unlock()
	// The workers stop (SIGCONT, SIGTERM, then SIGKILL); their last
	// reports, flushed as they exit, are taken while they do.
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		_ = d.sup.Stop(sctx, 3*time.Second)
	}()
	for done := false; !done; {
		select {
		case r := <-d.reports:
			d.take(r)
		case <-stopped:
			done = true
		}
	}
	d.drain(50 * time.Millisecond)
}

// settle lets the system finish what it holds after the scenario's end:
// until the producer has created the whole workload and the store holds
// nothing pending (queued, in flight, scheduled for retry, in a fallback
// queue), or the settle's bound passes, or ctx is done. The workers' reports
// are taken meanwhile. What is still pending after the bound is judged as
// pending, and named (oracle.Judge).
func (d *drill) settle(ctx context.Context, sample, progress <-chan time.Time) {
	bound := d.opts.Settle
	d.mu.Lock()
	d.h.SettleMs = (d.sc.Duration + bound).Milliseconds()
	d.h.SettledMs = -1
	d.mu.Unlock()
	deadline := time.NewTimer(time.Until(d.clk.WallAt(d.sc.Duration + bound)))
	defer deadline.Stop()
	produced, producedCh := false, d.produced
	for {
		if produced {
			d.mu.Lock()
			s := d.lastSnap
			d.mu.Unlock()
			if s != nil {
				if c := s.snap.Counts; c.Queued+c.InFlight+c.Scheduled+c.Fallback == 0 {
					d.mu.Lock()
					d.h.SettledMs = s.at.Milliseconds()
					d.mu.Unlock()
					return
				}
			}
		}
		select {
		case r := <-d.reports:
			d.take(r)
		case <-producedCh:
			produced, producedCh = true, nil
			d.snapshot(ctx)
		case <-sample:
			d.snapshot(ctx)
		case <-progress:
			d.progress()
		case <-deadline.C:
			d.mu.Lock()
			if d.created < len(d.arrivals) {
				d.h.Notes = append(d.h.Notes, fmt.Sprintf("the producer had created %d of the scenario's %d jobs when the settle's bound (%s past the end) came", d.created, len(d.arrivals), bound))
			}
			d.mu.Unlock()
			return
		case <-ctx.Done():
			d.mu.Lock()
			d.h.Interrupted = "interrupted while the system settled (" + context.Cause(ctx).Error() + ")"
			d.mu.Unlock()
			return
		}
	}
}

// drain takes the workers' reports for d.
func (d *drill) drain(wait time.Duration) {
	t := time.After(wait)
	for {
		select {
		case r := <-d.reports:
			d.take(r)
		case <-t:
			return
		}
	}
}

// finalSnapshot takes the last snapshot, trying for a few seconds; it
// returns the stream position it read.
func (d *drill) finalSnapshot() (string, bool) {
	for try := 0; try < 10; try++ {
		if try > 0 {
			time.Sleep(500 * time.Millisecond)
		}
		n := len(d.snaps)
		d.snapshot(context.Background())
		if len(d.snaps) > n {
			return d.snaps[len(d.snaps)-1].lastID, true
		}
	}
	return "", false
}

// guard checks the scenario's abortIf bounds; it returns the one crossed,
// or "".
func (d *drill) guard() string {
	a := d.sc.AbortIf
	if a == nil {
		return ""
	}
	now := d.clk.Elapsed()
	d.mu.Lock()
	snap := d.lastSnap
	d.mu.Unlock()
	if a.DLQDepth > 0 && d.ext != nil {
		d.mu.Lock()
		n := 0
		for _, k := range d.ext.cur {
			n += k
		}
		d.mu.Unlock()
		if n > a.DLQDepth {
			return fmt.Sprintf("abortIf.dlqDepth %d crossed at %s: %d entries in the system's DLQ", a.DLQDepth, fmtOffset(now), n)
		}
	}
	if a.DLQDepth > 0 && snap != nil {
		if n := snap.snap.Stats.ByStatus[dlq.Failed.String()]; n > a.DLQDepth {
			return fmt.Sprintf("abortIf.dlqDepth %d crossed at %s: %d failed entries in the DLQ", a.DLQDepth, fmtOffset(now), n)
		}
	}
	if a.ErrorRate > 0 {
		window := a.ErrorWindow
		if window == 0 {
			window = time.Minute
		}
		var calls, errs int
		for _, g := range d.gws {
			for _, c := range g.Calls() {
				if c.At >= now-window && c.Outcome != "" {
					calls++
					if c.Outcome != "ok" && c.Outcome != "replayed" {
						errs++
					}
				}
			}
		}
		if calls >= 20 && float64(errs) > a.ErrorRate*float64(calls) {
			return fmt.Sprintf("abortIf.errorRate %v crossed at %s: %d of the last %s's %d dependency calls failed", a.ErrorRate, fmtOffset(now), errs, window, calls)
		}
	}
	if a.MaxActiveFaults > 0 {
		if n := len(d.activeFaults(now)); n > a.MaxActiveFaults {
			return fmt.Sprintf("abortIf.maxActiveFaults %d crossed at %s: %d faults active (%s)", a.MaxActiveFaults, fmtOffset(now), n, strings.Join(d.activeFaults(now), ", "))
		}
	}
	return ""
}

// abort stops every fault for good: the drill runs on to its end, so the
// system can recover, and its verdict is interrupted with why.
func (d *drill) abort(why string, stopFaults func()) {
	stopFaults()
	d.faultMu.Lock()
	d.mu.Lock()
	d.h.Aborted = why
	d.mu.Unlock()
	d.undoFaults()
	d.faultMu.Unlock()
	d.log.Warn("drill aborted its faults", "why", why)
}

func fmtOffset(d time.Duration) string { return "+" + d.Round(time.Millisecond).String() }

// streamBefore reports whether stream ID a precedes b.
func streamBefore(a, b string) bool {
	var am, as, bm, bs uint64
	_, _ = fmt.Sscanf(a, "%d-%d", &am, &as)
	_, _ = fmt.Sscanf(b, "%d-%d", &bm, &bs)
	return am < bm || am == bm && as < bs
}

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

// faultsLoop applies the store and worker faults at their windows; a
// worker fault aimed at a state waits for it in its window (whenFault),
// which faultsLoop waits for before it returns.
func (d *drill) faultsLoop(ctx context.Context) {
	var waits sync.WaitGroup
	defer waits.Wait()
	type act struct {
		at    time.Duration
		i     int
		f     faults.Fault
		start bool
		until time.Duration
	}
	var acts []act
	for i, f := range d.sc.Faults {
		if f.Target.Kind != faults.Store && f.Target.Kind != faults.DLQStore && f.Target.Kind != faults.Worker {
			continue
		}
		wins, _ := f.Schedule.Windows(d.seed, f.Name, d.sc.Duration, 10_000)
		for _, w := range wins {
			acts = append(acts, act{at: w.From, i: i, f: f, start: true, until: w.Until})
			if f.Target.Kind != faults.Worker {
				acts = append(acts, act{at: w.Until, i: i, f: f})
			}
		}
	}
	sort.SliceStable(acts, func(a, b int) bool { return acts[a].at < acts[b].at })
	qState, dState := newProxyState(), newProxyState()
	for _, a := range acts {
		if a.at >= d.sc.Duration {
			return
		}
		if !sleepUntil(ctx, d.clk.WallAt(a.at)) || d.isAborted() {
			return
		}
		at := d.clk.Elapsed()
		switch a.f.Target.Kind {
		case faults.Worker:
			if a.f.Schedule.When != nil {
				d.whenFault(ctx, &waits, a.i, a.f, a.at, a.until)
				continue
			}
			ask, late := strikeAsk(at, a.at, a.until)
			if late {
				// The drill's timer woke after the window closed: the
				// fault strikes now, asked of the injector at its
				// window's last instant, and the history says so — a
				// fault that never fired is never a silent pass.
				d.mu.Lock()
				d.h.Notes = append(d.h.Notes, fmt.Sprintf("fault %s's window %s–%s had closed when the drill's timer woke at %s: it struck late, then",
					a.f.Name, fmtOffset(a.at), fmtOffset(a.until), fmtOffset(at)))
				d.mu.Unlock()
			}
			d.workerFault(a.i, a.f, ask, at)
		default:
			p, ps := d.qProxy, qState
			if a.f.Target.Kind == faults.DLQStore {
				p, ps = d.dProxy, dState
			}
			var err error
			if a.start {
				if a.f.Model.Name() == "latency" || a.f.Model.Name() == "slow-store" {
					var eff faults.Effect
					d.locked.Do(func(in *faults.Injector) { eff = in.CallFault(a.i, a.f.Target, faults.Call{At: at}) })
					ps.latency[a.f.Name] = d.clk.ToWall(eff.Latency)
				} else {
					ps.cut[a.f.Name] = true
				}
				d.faultStarted(a.f.Name, at)
			} else {
				delete(ps.latency, a.f.Name)
				delete(ps.cut, a.f.Name)
				d.faultEnded(a.f.Name, at)
			}
			// The proxy's state is recomputed from every fault active on
			// it: one ending does not lift another.
			d.faultMu.Lock()
			if d.isAborted() {
				d.faultMu.Unlock()
				return
			}
			err = ps.apply(p)
			d.faultMu.Unlock()
			if err != nil {
				d.log.Error("proxy", "fault", a.f.Name, "err", err)
			}
		}
	}
}

// proxyState is the store faults active on one proxy.
type proxyState struct {
	cut     map[string]bool
	latency map[string]time.Duration
}

func newProxyState() *proxyState {
	return &proxyState{cut: map[string]bool{}, latency: map[string]time.Duration{}}
}

// apply puts p in the state its active faults make: cut while any outage
// is on, else slowed by the longest latency on, else clear.
func (ps *proxyState) apply(p *proxy.Proxy) error {
	if len(ps.cut) > 0 {
		return p.Disable()
	}
	var lat time.Duration
	for _, l := range ps.latency {
		lat = max(lat, l)
	}
	if err := p.Clear(); err != nil || lat == 0 {
		return err
	}
	return p.SetLatency(lat, 0)
}

// isAborted reports whether the guard stopped the faults.
func (d *drill) isAborted() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.h.Aborted != ""
}

// strikeAsk is the offset a worker fault due in window [from, until) is
// asked of the injector at when the drill's timer woke at offset at: at
// itself while the window is open, else the window's last millisecond
// (late: the window had closed).
func strikeAsk(at, from, until time.Duration) (ask time.Duration, late bool) {
	if until <= from || at < until {
		return at, false
	}
	return max(until-time.Millisecond, from), true
}

// workerFault applies a worker fault to its workers at offset at, each
// asking the injector as the simulator does (probability, the model's
// draws) as of offset ask: at, or, for a timer that woke after the
// window closed, the window's last instant.
func (d *drill) workerFault(i int, f faults.Fault, ask, at time.Duration) {
	d.faultMu.Lock() // the guard's abort waits for, or precedes, the whole fault
	defer d.faultMu.Unlock()
	for _, n := range d.h.Workers {
		if d.isAborted() {
			return
		}
		if f.Target.Name != "" && d.procOf(f.Target.Name) != n {
			continue
		}
		var eff faults.Effect
		d.locked.Do(func(in *faults.Injector) {
			eff = in.CallFault(i, faults.Target{Kind: faults.Worker, Name: askedAs(f, n)}, faults.Call{At: ask})
		})
		d.applyWorkerEffect(f, n, eff, at)
	}
}

func (d *drill) faultStarted(name string, at time.Duration) {
	d.faultMetric(name, true)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.active[name]++
	d.faultHits[name]++
	d.faultWins[name] = append(d.faultWins[name], [2]int64{at.Milliseconds(), -1})
}

func (d *drill) faultEnded(name string, at time.Duration) {
	d.faultMetric(name, false)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.active[name] > 0 {
		d.active[name]--
	}
	if ws := d.faultWins[name]; len(ws) > 0 && ws[len(ws)-1][1] < 0 {
		ws[len(ws)-1][1] = at.Milliseconds()
	}
}

// faultMetric tells the metrics a fault turned on or off.
func (d *drill) faultMetric(name string, on bool) {
	for _, f := range d.sc.Faults {
		if f.Name == name {
			d.opts.Metrics.FaultActive(f.Name, f.Target.String(), f.Model.Name(), on)
			if on {
				d.opts.Metrics.FaultHit(f.Name)
			}
		}
	}
}

func (d *drill) faultHit(name string, from, until time.Duration) {
	d.opts.Metrics.FaultHit(name)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.faultHits[name]++
	d.faultWins[name] = append(d.faultWins[name], [2]int64{from.Milliseconds(), until.Milliseconds()})
}

// steps carries out the operator's steps at their instants.
func (d *drill) steps(ctx context.Context) {
	for _, st := range d.sc.Steps {
		if st.At >= d.sc.Duration || !sleepUntil(ctx, d.clk.WallAt(st.At)) {
			return
		}
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		rec := sim.CarryOutStep(sctx, st, d.st, d.clk.Now())
		cancel()
		rec.AtMs = d.clk.Elapsed().Milliseconds()
		d.mu.Lock()
		d.h.Steps = append(d.h.Steps, rec)
		d.mu.Unlock()
	}
}

// snapshot reads the store's counts with the event stream's position.
func (d *drill) snapshot(ctx context.Context) {
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s, err := d.st.Snapshot(sctx)
	if err != nil {
		d.log.Warn("snapshot", "err", err)
		return
	}
	d.mu.Lock()
	d.snaps = append(d.snaps, snapshot{at: d.clk.Elapsed(), lastID: s.LastEvent, snap: s})
	d.lastSnap = &d.snaps[len(d.snaps)-1]
	d.mu.Unlock()
	if m := d.opts.Metrics; m != nil {
		c := s.Counts
		m.Jobs("queued", c.Queued)
		m.Jobs("in-flight", c.InFlight)
		m.Jobs("scheduled", c.Scheduled)
		m.Jobs("fallback", c.Fallback)
		m.Jobs("held", c.Held)
		m.Jobs("dead-lettered", s.Stats.ByStatus[dlq.Failed.String()])
		for sev, n := range s.Stats.BySeverity {
			m.DLQDepth(sev, n)
		}
		if !s.Stats.Oldest.IsZero() {
			m.DLQOldestAge(d.clk.Now().Sub(s.Stats.Oldest))
		}
		d.fleetMetrics(sctx, m)
	}
}

// fleetMetrics records what the fleet shares through the store: the retries
// booked in the current slot of its retry budget, and the state of each
// breaker it shares (worker "fleet"). A read that fails is skipped.
func (d *drill) fleetMetrics(ctx context.Context, m *metrics.Set) {
	sc := &d.sc
	if b := sc.System.Retry.WithDefaults().Budget; b.Scope == retry.ScopeFleet && !b.Disabled {
		w := b.Window()
		slot := d.clk.Now().UnixNano() / int64(w)
		seen := map[string]bool{}
		for _, t := range sc.Workload.Tasks {
			if t.Dependency == "" || seen[t.Dependency] {
				continue
			}
			seen[t.Dependency] = true
			if n, err := d.st.Booked(ctx, retry.BudgetKey{Dependency: t.Dependency, Width: w}, slot); err == nil {
				m.RetryBudgetBooked(t.Dependency, n)
			}
		}
	}
	for _, bc := range sc.System.Breakers {
		if !bc.Fleet {
			continue
		}
		if st, err := d.st.LoadBreaker(ctx, bc.Config.Name); err == nil && st.Gen > 0 {
			m.Breaker(bc.Config.Name, "fleet", st.State.String())
		}
	}
}

// readEvents follows the store's event stream until ctx is done.
func (d *drill) readEvents(ctx context.Context) {
	after := redisstore.StreamStart
	succeeded := 0
	for ctx.Err() == nil {
		evs, err := d.st.ReadEvents(ctx, after, 1000, 100*time.Millisecond)
		if errors.Is(err, redisstore.ErrEventsTrimmed) {
			d.mu.Lock()
			d.eventsLost = true
			d.mu.Unlock()
		} else if err != nil {
			if ctx.Err() == nil {
				time.Sleep(50 * time.Millisecond)
			}
			continue
		}
		if len(evs) == 0 {
			continue
		}
		after = evs[len(evs)-1].ID
		for _, e := range evs {
			d.opts.Metrics.Move(e.Event.To.String(), string(e.Event.Reason))
			switch {
			case e.Event.To == disposition.Succeeded:
				succeeded++
				d.opts.Metrics.Jobs("succeeded", succeeded)
			case e.Event.Reason == disposition.Requeued:
				d.opts.Metrics.Requeued(1)
			}
		}
		d.mu.Lock()
		d.events = append(d.events, evs...)
		d.lastID = after
		d.mu.Unlock()
	}
}

// listDLQ records the DLQ's entries.
func (d *drill) listDLQ() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cursor := ""
	for {
		p, err := d.st.List(ctx, dlq.Filter{}, cursor, 1000)
		if err != nil {
			d.h.Notes = append(d.h.Notes, "the DLQ could not be listed at the end: "+err.Error())
			return
		}
		for _, e := range p.Entries {
			if b, err := dlq.Encode(e); err == nil {
				d.h.DLQ = append(d.h.DLQ, b)
			}
		}
		if p.Next == "" {
			return
		}
		cursor = p.Next
	}
}

// progress reports the drill's state.
func (d *drill) progress() {
	if d.opts.Progress == nil && d.opts.Metrics == nil {
		return
	}
	d.mu.Lock()
	p := Progress{Elapsed: min(d.clk.Elapsed(), d.sc.Duration), Duration: d.sc.Duration, Created: d.created}
	if s := d.lastSnap; s != nil {
		c := s.snap.Counts
		p.Queued, p.InFlight, p.Scheduled, p.Held = c.Queued, c.InFlight, c.Scheduled, c.Held
		p.DLQ = s.snap.Stats.Total
	}
	if d.ext != nil {
		for _, k := range d.ext.cur {
			p.DLQ += k
		}
	}
	d.mu.Unlock()
	p.ActiveFaults = d.activeFaults(d.clk.Elapsed())
	if m := d.opts.Metrics; m != nil {
		for _, f := range d.sc.Faults {
			m.FaultActive(f.Name, f.Target.String(), f.Model.Name(), slices.Contains(p.ActiveFaults, f.Name))
		}
		d.countHits()
	}
	if d.opts.Progress != nil {
		d.opts.Progress(p)
	}
}

// activeFaults names the faults active at now: the store and worker
// faults the drill applied and has not undone, and the dependency and
// alert-sink faults whose windows hold now (none once the drill aborted).
func (d *drill) activeFaults(now time.Duration) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.h.Aborted != "" {
		return nil
	}
	var out []string
	for n, k := range d.active {
		if k > 0 {
			out = append(out, n)
		}
	}
	for _, f := range d.sc.Faults {
		if f.Target.Kind != faults.Dependency && f.Target.Kind != faults.AlertSink {
			continue
		}
		wins, _ := f.Schedule.Windows(d.seed, f.Name, d.sc.Duration, 10_000)
		for _, w := range wins {
			if w.From <= now && now < w.Until && !slices.Contains(out, f.Name) {
				out = append(out, f.Name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// countHits tells the metrics of the calls the gateways' and receivers'
// faults hit since it last looked (the injector counts them).
func (d *drill) countHits() {
	var stats []faults.FaultStats
	d.locked.Do(func(in *faults.Injector) { stats = in.Stats() })
	for _, st := range stats {
		if st.Target.Kind != faults.Dependency && st.Target.Kind != faults.AlertSink {
			continue
		}
		for ; d.hitsSeen[st.Name] < st.Hits; d.hitsSeen[st.Name]++ {
			d.opts.Metrics.FaultHit(st.Name)
		}
	}
}

// undoFaults puts every part back to health: proxies clear, gateways and
// receivers healthy, stalled workers resumed (by Stop).
func (d *drill) undoFaults() {
	for _, p := range []*proxy.Proxy{d.qProxy, d.dProxy} {
		if p != nil {
			_ = p.Clear()
		}
	}
	for _, g := range d.gws {
		g.SetHealthy(true)
	}
	for _, r := range d.rcvs {
		r.SetHealthy(true)
	}
	if d.clk == nil {
		return
	}
	d.mu.Lock()
	at := d.clk.Elapsed()
	for name, ws := range d.faultWins {
		if len(ws) > 0 && ws[len(ws)-1][1] < 0 {
			ws[len(ws)-1][1] = min(at, d.sc.Duration).Milliseconds()
		}
		d.active[name] = 0
	}
	d.mu.Unlock()
}

// finish assembles the history: events up to the final snapshot, the
// logs of the gateways and the supervisor, the faults' report.
func (d *drill) finish() *oracle.History {
	d.mu.Lock()
	defer d.mu.Unlock()
	h := &d.h
	idx := map[string]int{}
	for i, e := range d.events {
		idx[e.ID] = i + 1
		h.Events = append(h.Events, oracle.EventOf(e.ID, e.Event, d.sc.Start))
	}
	h.EventsLost = d.eventsLost
	for _, s := range d.snaps {
		n := 0
		if s.lastID != "" && s.lastID != redisstore.StreamStart {
			var ok bool
			if n, ok = idx[s.lastID]; !ok {
				continue // events the drill did not read: not judged
			}
		}
		h.Snapshots = append(h.Snapshots, oracle.Snapshot{AtMs: s.at.Milliseconds(), AfterEvents: n, Counts: s.snap.Counts, Stats: s.snap.Stats})
	}
	if len(h.Snapshots) > 0 {
		h.Events = h.Events[:h.Snapshots[len(h.Snapshots)-1].AfterEvents]
	}
	h.Calls = append(h.Calls, d.calls()...)
	// The gateways' own time to answer a call no fault touched: how far
	// the machine slows a dependency that should answer at once.
	for _, g := range d.gws {
		for _, c := range g.Calls() {
			if c.Fault == "" && c.Outcome != "" {
				d.slip.add("gateway", c.Took)
			}
		}
	}
	h.Planned = len(d.arrivals)
	h.Slip = d.slip.account(Tolerance(&d.sc, d.opts.Scale))
	h.Slip.AutoScale = d.autoWhy
	h.Slip.Machine = machineNote()
	var events []supervisor.Event
	if d.sup != nil {
		events = d.sup.Events()
	}
	for _, e := range events {
		h.Processes = append(h.Processes, oracle.ProcessEvent{AtMs: d.clk.ToScenario(e.Time.Sub(d.origin)).Milliseconds(),
			Worker: e.Worker, Kind: string(e.Kind), PID: e.PID, Detail: e.Err})
	}
	var stats []faults.FaultStats
	var wins []faults.FaultWindows
	d.locked.Do(func(in *faults.Injector) { stats, wins = in.Stats(), in.Windows(d.sc.Duration, 200) })
	for i, s := range stats {
		f := reports.Fault{Name: s.Name, Target: s.Target.String(), Model: s.Model, Hits: s.Hits, Windows: [][2]int64{}}
		if s.Class != 0 {
			f.Class = s.Class.String()
		}
		if ws, ok := d.faultWins[s.Name]; ok {
			f.Hits = d.faultHits[s.Name]
			for _, w := range ws {
				f.Windows = append(f.Windows, w)
			}
			if len(ws) > 0 {
				f.FirstHitMs, f.LastHitMs = ws[0][0], ws[len(ws)-1][0]
			}
		} else {
			if s.Hits > 0 {
				f.FirstHitMs, f.LastHitMs = s.FirstHit.Milliseconds(), s.LastHit.Milliseconds()
			}
			if i < len(wins) {
				for _, w := range wins[i].Windows {
					f.Windows = append(f.Windows, [2]int64{w.From.Milliseconds(), w.Until.Milliseconds()})
				}
			}
		}
		h.Faults = append(h.Faults, f)
	}
	if d.opts.Scale > 1 {
		h.Notes = append(h.Notes, fmt.Sprintf("time scale %v: schedules, service times, backoff, leases, heartbeats and alert group waits ran %v× faster; Retry-After headers are whole seconds of scenario time, rounded up", d.opts.Scale, d.opts.Scale))
	}
	if d.ext != nil {
		d.mu.Unlock()
		d.finishExternal(h)
		d.mu.Lock()
	} else if n := d.sup.Unexpected(); n > 0 {
		h.Notes = append(h.Notes, fmt.Sprintf("%d worker process exit(s) the drill did not cause (restarted): see the logs", n))
	}
	return h
}

// calls are the gateways' call logs as the history keeps them, in time
// order.
func (d *drill) calls() []oracle.Call {
	var out []oracle.Call
	for _, g := range d.gws {
		for _, c := range g.Calls() {
			hc := oracle.Call{AtMs: c.At.Milliseconds(), Dependency: g.Name(), JobID: c.Job, Key: c.Key, Fault: c.Fault,
				Class: classString(c.Class), Status: c.Status, Outcome: string(c.Outcome), TookEffect: c.TookEffect, Charge: c.Charge,
				TookMs: float64(c.Took.Microseconds()) / 1000}
			if secs, err := strconv.Atoi(c.RetryAfter); err == nil && secs > 0 && c.Status > 0 {
				hc.RetryAfterMs = int64(secs) * 1000 // whole seconds of scenario time
			}
			out = append(out, hc)
		}
	}
	slices.SortStableFunc(out, func(a, b oracle.Call) int { return int(a.AtMs - b.AtMs) })
	return out
}

func classString(c classify.Class) string {
	if c == 0 {
		return ""
	}
	return c.String()
}

// stopEverything stops the workers and closes every part; safe to call
// twice.
func (d *drill) stopEverything() {
	if d.sup != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		_ = d.sup.Stop(ctx, 3*time.Second)
		cancel()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, g := range d.gws {
		_ = g.Close(ctx)
	}
	for _, r := range d.rcvs {
		_ = r.Close(ctx)
	}
	d.feedOnce.Do(func() { close(d.feedDone) })
	if d.feedSrv != nil {
		_ = d.feedSrv.Close()
	}
	for _, p := range []*proxy.Proxy{d.qProxy, d.dProxy} {
		if p != nil {
			_ = p.Close()
		}
	}
	for _, f := range d.workerLogs {
		_ = f.Close()
	}
}

// cleanup undoes every fault, stops every part and, unless Keep, removes
// the namespace's keys and the work directory.
func (d *drill) cleanup() {
	d.undoFaults()
	d.stopEverything()
	if d.ext != nil {
		d.closeExternal()
	}
	if d.rdb != nil {
		if !d.opts.Keep {
			d.deleteClaimed()
		}
		_ = d.rdb.Close()
	}
	if d.tmpDir && !d.opts.Keep {
		_ = os.RemoveAll(d.dir)
	}
}

// deleteClaimed removes what this drill wrote — its namespace and its
// canary's — on every exit it lives through, a refusal at start-up
// included: when the claim's answer was lost, the claim is read back and
// the namespace removed only if the claim is this drill's. A connection
// killed meanwhile is retried (three tries in all, within 30s).
func (d *drill) deleteClaimed() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if !d.claimed && d.claimUnsure && d.claimVal != "" {
		for range 3 {
			v, err := d.rdb.Get(ctx, claimKey(d.ns)).Result()
			if err == nil || errors.Is(err, redis.Nil) {
				d.claimed = err == nil && v == d.claimVal
				break
			}
		}
	}
	if !d.claimed {
		return
	}
	for _, ns := range []string{d.ns + "-canary", d.ns} { // the claim goes last
		if ns != d.ns {
			// NS-canary may be another drill's namespace: its claim says so.
			if n, err := d.rdb.Exists(ctx, claimKey(ns)).Result(); err != nil || n > 0 {
				continue
			}
		}
		for range 3 {
			if DeleteNamespace(ctx, d.rdb, ns) == nil {
				break
			}
		}
	}
}

// DeleteNamespace removes every key of a namespace, in batches.
func DeleteNamespace(ctx context.Context, rdb redis.UniversalClient, namespace string) error {
	var cursor uint64
	for {
		keys, next, err := rdb.Scan(ctx, cursor, redisstore.Prefix(namespace)+"*", 1000).Result()
		if err != nil {
			return err
		}
		if len(keys) > 0 {
			if err := rdb.Unlink(ctx, keys...).Err(); err != nil {
				return err
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}
