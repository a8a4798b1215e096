package drill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

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
	"github.com/faultline/faultline/reference/retry"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/reports"
)

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
