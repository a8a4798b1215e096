package drill

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/faultline/faultline/drill/proxy"
	"github.com/faultline/faultline/faults"
)

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
