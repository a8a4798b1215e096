package drill

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/faultline/faultline/drill/gateway"
	"github.com/faultline/faultline/drill/supervisor"
	"github.com/faultline/faultline/layout"
	"github.com/faultline/faultline/layout/adapter"
	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
	"github.com/faultline/faultline/sim"
)

// runExternal plays a black-box drill: the producer injects the plan's
// jobs through the adapter, the faults run, the DLQ is read over and
// over; after the scenario's end it waits up to the drain time for every
// job to settle, reads the DLQ and the queue a last time and stops the
// system.
func (d *drill) runExternal(ctx context.Context) {
	sc := &d.sc
	e := d.ext
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	faultCtx, stopFaults := context.WithCancel(runCtx)
	defer stopFaults()
	wg.Go(func() { d.injectAll(runCtx) })
	wg.Go(func() { d.faultsLoop(faultCtx) })
	readEvery := min(max(d.clk.ToWall(sc.Sample), 100*time.Millisecond), time.Second)
	end := time.NewTimer(time.Until(d.clk.WallAt(sc.Duration)))
	defer end.Stop()
	read := time.NewTimer(0)
	defer read.Stop()
	progress := time.NewTicker(time.Second)
	defer progress.Stop()
loop:
	for {
		select {
		case <-read.C:
			d.readDLQ(ctx)
			if d.h.Aborted == "" {
				if why := d.guard(); why != "" {
					d.abort(why, stopFaults)
				}
			}
			read.Reset(readEvery)
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
	d.mu.Lock()
	d.h.EndedMs = min(d.clk.Elapsed(), sc.Duration).Milliseconds()
	d.mu.Unlock()
	d.undoFaults()
	// The drain: the system runs on, with no fault, until every job has
	// succeeded or sits in the DLQ, or the drain time is up.
	drain := e.x.Drain
	if drain == 0 {
		drain = scenarios.DefaultDrain
	}
	deadline := time.Now().Add(d.clk.ToWall(drain))
	pageWait := e.x.PageWait
	if pageWait == 0 {
		pageWait = scenarios.DefaultPageWait
	}
	// Once settled, the drill still watches a quiet spell — no new call,
	// no call in flight, no change to the DLQ — so that what a system
	// does late (a redelivery after a visibility timeout, a second entry,
	// an undeclared requeue) is seen, not cut off.
	quiet := max(3*readEvery, time.Second)
	var quietSince time.Time
	lastSeen := d.activity()
	for ctx.Err() == nil && d.h.Interrupted == "" {
		d.readDLQ(ctx)
		now := d.activity()
		switch {
		case !d.settled():
			quietSince, e.settled = time.Time{}, -1
		case quietSince.IsZero() || now != lastSeen:
			quietSince = time.Now()
			if e.settled < 0 {
				e.settled = d.clk.Elapsed().Milliseconds()
			}
		case time.Since(quietSince) >= quiet:
			e.quiet = true
		}
		lastSeen = now
		if e.quiet || time.Now().After(deadline) {
			// Every job settled and the system quiet, or the drain is up:
			// the drill still waits for a page that is owed and whose
			// deadline has not passed, up to system.external.pageWait
			// past the drain.
			at := d.clk.Elapsed().Milliseconds()
			in, owed := d.pageOwed(at)
			if !owed || time.Now().After(deadline.Add(d.clk.ToWall(pageWait))) {
				break
			}
			if w := e.x0.PageWait; w == nil || w.IncidentMs != in.FirstMs {
				e.x0.PageWait = &reports.PageWait{Dependency: in.Dependency, IncidentMs: in.FirstMs,
					DeadlineMs: in.FirstMs + d.sc.Invariants.PageWithin.Milliseconds(), FromMs: at, PagedMs: -1}
			}
		}
		if !sleepUntil(ctx, time.Now().Add(readEvery)) {
			break
		}
	}
	if ctx.Err() != nil && d.h.Interrupted == "" {
		d.h.Interrupted = "interrupted (" + context.Cause(ctx).Error() + ") while the jobs drained"
	}
	// The last look, the copies frozen (SIGSTOP) so that nothing moves
	// between the reads: the DLQ, and the queue when the adapter can
	// read it; then the copies stop (SIGCONT, SIGTERM, then SIGKILL).
	if d.sup != nil {
		d.sup.Freeze()
	}
	d.readDLQ(context.Background())
	if !d.settled() {
		e.settled = -1
	}
	if w := e.x0.PageWait; w != nil {
		w.UntilMs = d.clk.Elapsed().Milliseconds()
		p := oracle.Paging{NotPaging: e.x.NotPaging()}
		for _, dl := range d.deliveries() {
			if dl.Accepted && dl.AtMs >= w.IncidentMs && p.IsPage(dl) {
				w.PagedMs = dl.AtMs
				break
			}
		}
	}
	d.mu.Lock()
	d.h.FrozenMs = d.clk.Elapsed().Milliseconds()
	d.mu.Unlock()
	e.x0.DrainMs = d.h.FrozenMs - d.h.EndedMs
	if qr, ok := e.inj.(adapter.QueueReader); ok {
		qctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		ids, err := qr.Queued(qctx)
		cancel()
		e.x0.Queued, e.x0.QueueObservable = ids, err == nil || errors.Is(err, adapter.ErrCorrupt)
		if err != nil {
			d.h.Notes = append(d.h.Notes, "the queue at the end: "+err.Error())
		}
	}
	if d.sup != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		_ = d.sup.Stop(sctx, 3*time.Second)
		cancel()
	}
}

// injectAll injects the plan's jobs at their instants.
func (d *drill) injectAll(ctx context.Context) {
	plan, err := sim.NewPlan(d.sc)
	if err != nil {
		d.log.Error("plan", "err", err)
		return
	}
	n := 0
	for {
		a, ok := plan.Next()
		if !ok || a.At >= d.sc.Duration {
			return
		}
		if !sleepUntil(ctx, d.clk.WallAt(a.At)) {
			return
		}
		n++
		hj := oracle.Job{AtMs: d.clk.Elapsed().Milliseconds(), ID: a.Job.ID, Task: a.Job.Task, Key: a.Job.IdempotencyKey, Outcome: "ok"}
		ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := d.ext.inj.Inject(ictx, layout.Job{ID: a.Job.ID, Task: a.Job.Task, Key: a.Job.IdempotencyKey, Payload: string(a.Job.Payload), N: n})
		cancel()
		d.mu.Lock()
		if err != nil {
			// A timeout may have put the job in all the same: unknown,
			// judged only if the system called for it or dead-lettered it.
			hj.Outcome = "failed"
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				hj.Outcome = "unknown"
			}
			d.ext.x0.InjectErrors = append(d.ext.x0.InjectErrors, oracle.AdapterFailure{AtMs: hj.AtMs, JobID: hj.ID, Error: err.Error()})
			d.log.Warn("inject", "job", a.Job.ID, "err", err)
		}
		d.h.Jobs = append(d.h.Jobs, hj)
		d.created++
		d.mu.Unlock()
	}
}

// itemKey is how a DLQ read knows an entry from one read to the next: by
// its job's ID, or, for a corrupt one, by its bytes (its position moves
// with every push).
func itemKey(en layout.Entry) string {
	if en.Corrupt == "" && en.JobID != "" {
		return "job:" + en.JobID
	}
	h := sha256.Sum256(en.Raw)
	return "corrupt:" + hex.EncodeToString(h[:8])
}

// readDLQ reads the DLQ once and records what changed.
func (d *drill) readDLQ(ctx context.Context) {
	e := d.ext
	e.readMu.Lock()
	defer e.readMu.Unlock()
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	entries, err := e.rd.Read(rctx)
	cancel()
	at := d.clk.Elapsed().Milliseconds()
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		e.x0.ReadErrors = append(e.x0.ReadErrors, oracle.AdapterFailure{AtMs: at, Error: err.Error()})
		return
	}
	now := map[string]int{}
	items := map[string]oracle.DLQItem{}
	total := 0
	for _, en := range entries {
		if en.Inactive {
			continue
		}
		k := itemKey(en)
		now[k]++
		total++
		if _, ok := items[k]; !ok {
			items[k] = oracle.DLQItem{JobID: en.JobID, Severity: en.Severity, Class: en.Class, Corrupt: en.Corrupt, Source: en.Source}
		}
	}
	r := oracle.DLQRead{AtMs: at, Total: total}
	for _, k := range sortedKeys(now) {
		for range now[k] - e.cur[k] {
			r.Added = append(r.Added, items[k])
		}
	}
	for _, k := range sortedKeys(e.cur) {
		for range e.cur[k] - now[k] {
			r.Removed = append(r.Removed, e.items[k])
		}
	}
	for k, it := range items {
		e.items[k] = it
	}
	e.cur, e.entries = now, entries
	e.x0.ReadCount++
	if len(r.Added) > 0 || len(r.Removed) > 0 || !e.read {
		e.x0.Reads = append(e.x0.Reads, r)
	}
	e.read = true
}

// activity is a fingerprint of what the system did: its calls, and the
// DLQ's reads that saw a change.
func (d *drill) activity() [2]int {
	n := 0
	for _, g := range d.gws {
		n += len(g.Calls())
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return [2]int{n, len(d.ext.x0.Reads)}
}

// settled reports whether every injected job succeeded (its dependency
// answered a call for it with success) or sits in the DLQ.
func (d *drill) settled() bool {
	e := d.ext
	for _, g := range d.gws {
		for _, c := range g.Calls() {
			switch c.Outcome {
			case gateway.OutcomeOK, gateway.OutcomeReplayed:
				e.jobsDone[c.Job] = true
			case "":
				return false // a call in flight
			}
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, j := range d.h.Jobs {
		if j.Outcome != "ok" || e.jobsDone[j.ID] || e.cur["job:"+j.ID] > 0 {
			continue
		}
		return false
	}
	return true
}

// deliveries are the receivers' notifications as the history keeps them,
// in time order.
func (d *drill) deliveries() []oracle.Delivery {
	var out []oracle.Delivery
	for _, r := range d.rcvs {
		for _, n := range r.Received() {
			hd := oracle.Delivery{AtMs: n.AtMs, Receiver: n.Receiver, Attempt: n.Attempt, Accepted: n.Accepted}
			if !n.Accepted {
				hd.Error = string(n.Outcome)
				if n.Status > 0 {
					hd.Error += " " + strconv.Itoa(n.Status)
				}
			}
			hd.Alerts = []oracle.Alert{{Name: n.Title, Severity: n.Severity, Summary: n.Text, Status: "firing", Count: 1}}
			out = append(out, hd)
		}
	}
	slices.SortStableFunc(out, func(a, b oracle.Delivery) int { return int(a.AtMs - b.AtMs) })
	return out
}

// pageOwed returns the incident of critical answers whose page has not
// come and whose deadline has not passed at nowMs (scenario time), as the
// oracle groups and recognises them: the page may still come (a group
// wait, a batch).
func (d *drill) pageOwed(nowMs int64) (oracle.Incident, bool) {
	within := d.sc.Invariants.PageWithin
	if d.ext.x.NoAlerts || within <= 0 {
		return oracle.Incident{}, false
	}
	return oracle.PendingPage(d.calls(), d.deliveries(), within, oracle.Paging{NotPaging: d.ext.x.NotPaging()}, nowMs)
}

// finishExternal adds what a black-box drill observed to the history.
func (d *drill) finishExternal(h *oracle.History) {
	e := d.ext
	d.mu.Lock()
	defer d.mu.Unlock()
	x := e.x0
	x.SettledMs = e.settled
	x.Entries = e.entries
	if x.Entries == nil {
		x.Entries = []layout.Entry{}
	}
	h.External = &x
	h.Deliveries = append(h.Deliveries, d.deliveries()...)
	if d.opts.Scale > 1 {
		h.Notes = append(h.Notes, fmt.Sprintf("time scale %v: the system was given it ({timeScale}) and is trusted to scale its own sleeps, timeouts, backoffs and Retry-After waits by it; whatever it does not scale took %v× longer in scenario time", d.opts.Scale, d.opts.Scale))
	}
	if x.Running {
		h.Notes = append(h.Notes, "the system was already running: the drill started no copy, so no worker fault (crash, graceful stop, stall) was drilled")
	}
	if d.sup != nil {
		// Exits the drill did not cause: a copy that keeps crashing on
		// its own is a finding, not a detail of the process counts.
		byWorker := map[string][]string{}
		for _, ev := range d.sup.Events() {
			if ev.Kind == supervisor.Exited && ev.Unexpected {
				byWorker[ev.Worker] = append(byWorker[ev.Worker], exitText(ev))
			}
		}
		for _, w := range sortedKeys(byWorker) {
			exits := byWorker[w]
			h.Notes = append(h.Notes, fmt.Sprintf("copy %s of the system exited %d time(s) on its own (the last: %s) and was restarted: see its log", w, len(exits), exits[len(exits)-1]))
		}
	}
	if d.opts.Keep {
		h.Notes = append(h.Notes, "the copies' logs and adapters.log (the adapters' stderr) are kept in "+d.dir)
	}
}
