package drill

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/faultline/faultline/drill/gateway"
	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/oracle"
)

// whenPoll is how often a worker fault aimed at a state asks the gateway
// whether its worker has a call in flight (besides the gateway's hook on
// the worker's next call, which catches a call however short).
const whenPoll = time.Millisecond

// whenFault starts window [from, until) of the i-th fault, a worker fault
// aimed at a state (schedule.when: mid-call at a dependency): for each
// targeted worker, a goroutine (in wg) waits until the worker has a call in
// flight at the dependency's gateway and strikes it then, or, if the window
// ends first, records the miss (no hit) with a note in the history.
func (d *drill) whenFault(ctx context.Context, wg *sync.WaitGroup, i int, f faults.Fault, from, until time.Duration) {
	var targets []string
	for _, n := range d.h.Workers {
		if f.Target.Name == "" || d.procOf(f.Target.Name) == n {
			targets = append(targets, n)
		}
	}
	if f.Target.Name != "" && len(targets) == 0 {
		targets = []string{d.procOf(f.Target.Name)}
	}
	var gw *gateway.Gateway
	for _, g := range d.gws {
		if g.Name() == f.Schedule.When.Dependency {
			gw = g
		}
	}
	win := faults.Window{From: from, Until: until}
	for _, n := range targets {
		if gw == nil { // validation makes this impossible: no call, no state
			d.whenMissed(f, n, win, len(targets))
			continue
		}
		wg.Go(func() { d.awaitMidCall(ctx, gw, i, f, n, win, len(targets)) })
	}
}

// awaitMidCall waits, until win ends, for worker n to have a call in
// flight at gw, and strikes it then: at once if a call is in flight (the
// poll), or from the gateway's hook as the worker's next call arrives,
// before it is answered. A window that ends first is a miss.
func (d *drill) awaitMidCall(ctx context.Context, gw *gateway.Gateway, i int, f faults.Fault, n string, win faults.Window, targeted int) {
	struck := make(chan struct{})
	var once sync.Once
	strike := func() {
		once.Do(func() {
			d.strikeWhen(i, f, n, win)
			close(struck)
		})
	}
	cancel := gw.OnCall(n, strike)
	// inFlight strikes a call the poll found in flight, unless the hook
	// already did.
	inFlight := func() bool {
		// The answer of the call found in flight waits for the strike:
		// struck just after it left, the worker would have its answer
		// (and its move applied) before the fault landed. Measured on the
		// project's 2-core machine, idle, worker-crash at scale 15: the
		// poll found w2's charge in flight at +80.546s, the gateway
		// answered in 0.05ms, and the SIGSTOP at +80.547s froze a worker
		// whose success the store applied at +80.549s — nothing to fence.
		release, ok := gw.HoldInFlight(n)
		if !ok {
			return false
		}
		defer release()
		if cancel() {
			strike()
		}
		return true
	}
	if inFlight() {
		return
	}
	end := time.NewTimer(time.Until(d.clk.WallAt(win.Until)))
	defer end.Stop()
	poll := time.NewTicker(whenPoll)
	defer poll.Stop()
	for {
		select {
		case <-struck:
			cancel() // waits for the hook to return
			return
		case <-ctx.Done():
			cancel() // the drill stopped its faults: the window had no end
			return
		case <-end.C:
			if cancel() {
				d.whenMissed(f, n, win, targeted)
			}
			return
		case <-poll.C:
			if inFlight() {
				return
			}
		}
	}
}

// strikeWhen applies the i-th fault to worker n, found mid-call in window
// win: as workerFault does at a window's start, the injector deciding.
func (d *drill) strikeWhen(i int, f faults.Fault, n string, win faults.Window) {
	d.faultMu.Lock() // the guard's abort waits for, or precedes, the strike
	defer d.faultMu.Unlock()
	if d.isAborted() {
		return
	}
	at := d.clk.Elapsed()
	// The injector is asked inside the window even when the drill lags
	// behind it: the state was found in it.
	in := min(max(at, win.From), win.Until-time.Millisecond)
	var eff faults.Effect
	d.locked.Do(func(inj *faults.Injector) {
		eff = inj.CallFault(i, faults.Target{Kind: faults.Worker, Name: askedAs(f, n)}, faults.Call{At: in})
	})
	d.applyWorkerEffect(f, n, eff, at)
}

// whenMissed records that worker n was never found in fault f's state in
// window win: no hit, a miss the judge reports, and a note.
func (d *drill) whenMissed(f faults.Fault, n string, win faults.Window, targeted int) {
	m := oracle.MissOf(f, n, win, targeted)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.h.Misses = append(d.h.Misses, m)
	d.h.Notes = append(d.h.Notes, fmt.Sprintf("fault %s %s: it did not strike it there", f.Name, m))
}

// applyWorkerEffect carries out a worker fault's effect on worker n at
// scenario offset at — a graceful stop (SIGTERM), a crash (SIGKILL) or a
// stall (SIGSTOP) — and records the hit. The caller holds faultMu.
func (d *drill) applyWorkerEffect(f faults.Fault, n string, eff faults.Effect, at time.Duration) {
	switch {
	case eff.Stop:
		// A graceful stop: the worker cancels its attempts in flight
		// as a shutdown (their jobs released) and exits; the
		// supervisor starts its replacement RestartAfter later.
		if err := d.sup.Terminate(n, d.clk.ToWall(eff.RestartAfter)); err != nil {
			d.log.Error("terminate", "worker", n, "err", err)
			return
		}
		d.faultHit(f.Name, at, at)
	case eff.Crash:
		if err := d.sup.Kill(n, d.clk.ToWall(eff.RestartAfter)); err != nil {
			d.log.Error("kill", "worker", n, "err", err)
			return
		}
		d.faultHit(f.Name, at, at)
	case eff.StallFor > 0:
		if err := d.sup.Stall(n, d.clk.ToWall(eff.StallFor)); err != nil {
			d.log.Error("stall", "worker", n, "err", err)
			return
		}
		d.faultHit(f.Name, at, at+eff.StallFor)
	}
}
