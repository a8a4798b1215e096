package sim

import (
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/reference/degrade"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/worker"
)

// slot is one worker slot.
type slot struct {
	name string
	busy bool
	// idle says the slot is on the idle stack.
	idle bool
	down bool
	// retired: a SetWorkers step removed it; it finishes its job first.
	retired    bool
	stallUntil time.Duration
	downUntil  time.Duration
	// gen counts the slot's attempts and crashes: a heartbeat scheduled
	// for one attempt does nothing for another.
	gen uint64

	job    job.Job
	lease  queue.Lease
	att    worker.Attempt
	eff    faults.Effect
	rec    *oracle.Record
	doneAt time.Duration
	timer  clock.Timer
	fire   func()
	// kept are the IDs of the jobs whose dead letters this worker keeps in
	// memory (the held set was full): a crash loses them.
	kept []string
	// proc is the worker process the slot runs in.
	proc *proc
}

// proc is one worker process of the fleet: its own retry policy (and
// budget), breakers and fallbacks in its core, and its pipeline (the dead
// letters it keeps in memory), over the store, the DLQ and the alerter the
// fleet shares — what a drill's worker process has of its own.
type proc struct {
	// name labels its breakers: "" in a one-process fleet, else first.
	name string
	// suffix names its random streams: "" for the first process, /pK for
	// process K.
	suffix   string
	core     *worker.Core
	pipeline *worker.Pipeline
	policy   *swapPolicy
	// lanes are the queues the process may lease from now (its breakers).
	lanes *worker.Lanes
	// first is the name of its first slot, wK for process K: the name
	// worker faults and a drill's process go by.
	first string
	// dry is the dispatch round in which the process last found nothing
	// to lease in its open lanes: its other idle slots need not look.
	dry uint64
}

// addProc builds the fleet's k-th worker process (from 0).
func (w *world) addProc(k int, o *options) error {
	// A process is named by its first slot, wK, as a drill names it; its
	// breakers are labelled so when the fleet has more than one.
	first, label := "w"+strconv.Itoa(k+1), ""
	if w.sc.Workers.Processes > 1 {
		label = first
	}
	env, suffix := w.env, ""
	if k > 0 {
		suffix = "/p" + strconv.Itoa(k+1)
		env.Rand = func(name string) *rand.Rand { return w.stream(name + suffix) }
	}
	env.Process = first
	sys, err := buildWorkerSystem(&w.sc, env, w.backend, o)
	if err != nil {
		return err
	}
	p := &proc{name: label, first: first, suffix: suffix, policy: &swapPolicy{p: sys.Policy, team: o.policy != nil}}
	for _, nb := range sys.Breakers {
		br := &breakerRun{name: nb.Name, worker: label, b: nb.Breaker}
		w.chk.Breakers.Begin(nb.Name, label, nb.Breaker.State())
		w.breakers = append(w.breakers, br)
		nb.Breaker.OnStateChange(func(t degrade.Transition) { w.breakerChanged(br, t) })
	}
	p.lanes = sys.Lanes(&w.sc)
	cl := sys.Classifier
	if c, ok := cl.(*classify.Classifier); ok && o.classifier == nil {
		// The reference classifier on the faults' errors, each built once
		// by its fault: a verdict per (error, scope), remembered.
		cl = c.Memo()
	}
	if p.core, err = worker.NewCore(worker.Config{Classifier: cl, Policy: p.policy, Alerter: w.alerter, Guards: sys.Guards}); err != nil {
		return err
	}
	if w.hist == nil {
		// One failure history for the fleet, as a drill's processes share
		// the store's: a job's attempts in different processes keep all
		// their failures, and no process keeps a finished job's.
		w.hist = worker.NewMemoryHistory()
		w.hist.Unshared() // the world is one goroutine
	}
	hist := w.hist
	if p.pipeline, err = worker.NewPipeline(worker.PipelineConfig{Core: p.core, Queue: w.backend, DLQ: w.dlqW,
		LeaseTTL: w.sc.Workers.LeaseTTL, OnKept: w.kept, History: hist}); err != nil {
		return err
	}
	w.procs = append(w.procs, p)
	return nil
}

// keptCount is how many dead letters the fleet's processes keep in
// memory.
func (w *world) keptCount() int {
	n := 0
	for _, p := range w.procs {
		n += p.pipeline.Kept()
	}
	return n
}

func (w *world) addSlot(n int) *slot {
	s := &slot{name: "w" + strconv.Itoa(n), proc: w.procs[(n-1)%len(w.procs)]}
	s.fire = func() { w.complete(s) }
	w.slots = append(w.slots, s)
	w.setIdle(s)
	return s
}

func (w *world) setIdle(s *slot) {
	if !s.idle && !s.busy && !s.down && !s.retired && s.stallUntil <= w.now() {
		s.idle = true
		w.idle = append(w.idle, s)
		w.kick = true
	}
}

// dropKept loses the dead letters s keeps in memory, as its process does
// when it dies: each job comes back when its lease, no longer heartbeated,
// expires, and runs again.
func (w *world) dropKept(s *slot) {
	for _, id := range s.kept {
		r := w.led.Job(id)
		if r == nil || !r.Kept() {
			continue
		}
		l, ok := s.proc.pipeline.DropKept(id)
		if !ok {
			continue
		}
		r.Unkeep()
		w.led.Settle(r, false)
		w.led.Note(r, "worker %s crashed keeping the dead letter in memory: it is lost, and the job comes back when its lease expires at %s", s.name, fmtOffset(l.Expires.Sub(w.start)))
		w.at(l.Expires.Sub(w.start), w.recoverFn)
	}
	s.kept = s.kept[:0]
}

// workerFault applies a worker fault (crash or stall) to the process of
// the named slot, or to every process: a fault strikes a process, every
// slot it runs, as a drill's signal does.
func (w *world) workerFault(i int, name string) {
	if name != "" {
		if p := w.procOf(name); p != nil {
			w.strikeProc(i, p)
		}
		return
	}
	for _, p := range w.procs {
		w.strikeProc(i, p)
	}
}

// procOf is the process that runs the slot named name, or nil.
func (w *world) procOf(name string) *proc {
	for _, s := range w.slots {
		if s.name == name {
			return s.proc
		}
	}
	return nil
}

// strikeProc applies the i-th fault, a worker fault, to process p now: a
// crash, a graceful stop or a stall, as the injector decides (asked once
// for the process), to each slot it runs.
func (w *world) strikeProc(i int, p *proc) {
	// Asked for the slot the fault names (which p runs), or for p; a
	// drill asks the same (its askedAs).
	name := p.first
	if t := w.inj.Faults()[i].Target.Name; t != "" {
		name = t
	}
	eff := w.inj.CallFault(i, faults.Target{Kind: faults.Worker, Name: name}, faults.Call{At: w.now()})
	for _, s := range w.slots {
		if s.proc == p && !s.retired {
			w.strikeSlot(s, eff)
		}
	}
}

// strikeSlot applies a worker fault's effect to slot s now.
func (w *world) strikeSlot(s *slot, eff faults.Effect) {
	off := w.now()
	switch {
	case eff.Crash:
		w.dropKept(s)
		if s.busy {
			s.busy = false
			s.gen++
			s.timer.Stop()
			if s.rec != nil {
				w.led.Note(s.rec, "worker %s crashed mid-attempt: the job comes back when its lease expires at %s", s.name, fmtOffset(s.lease.Expires.Sub(w.start)))
			}
			w.at(s.lease.Expires.Sub(w.start), w.recoverFn)
			s.rec = nil
		}
		s.down = true
		s.downUntil = max(s.downUntil, off+eff.RestartAfter)
		w.at(s.downUntil, func() {
			if s.down && w.now() >= s.downUntil { // a later crash keeps it down longer
				s.down = false
				w.setIdle(s)
			}
		})
	case eff.Stop:
		w.gracefulStop(s, eff)
	case eff.StallFor > 0:
		s.stallUntil = max(s.stallUntil, off+eff.StallFor)
		if s.busy && s.rec != nil {
			w.led.Note(s.rec, "worker %s stalled until %s", s.name, fmtOffset(s.stallUntil))
		}
		w.at(s.stallUntil, func() { w.setIdle(s) })
	}
}
