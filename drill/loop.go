package drill

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/sim"
)

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
