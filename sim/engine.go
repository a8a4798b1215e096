package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/reference/degrade"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/retry"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/memstore"
	"github.com/faultline/faultline/reference/worker"
	"github.com/faultline/faultline/reports"
)

// Caps on what a result lists (totals are always complete).
const (
	maxDLQEntries  = 100
	maxDeliveries  = 500
	maxWindows     = 200
	maxMaintenance = 10_000
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
	gen        uint64

	job    job.Job
	lease  queue.Lease
	att    worker.Attempt
	eff    faults.Effect
	rec    *rec
	doneAt time.Duration
	timer  clock.Timer
	fire   func()
}

type taskGen struct {
	Task
	idx     int
	queue   string
	payload bool
	// svc draws the task's service-time jitter: a stream per task.
	svc *rand.Rand
}

type held struct {
	lease queue.Lease
	o     worker.Outcome
	since time.Duration
	rec   *rec
}

type breakerRun struct {
	name  string
	b     Breaker
	state degrade.State
	// states per sample
	series []string
}

type pageKey struct{ receiver, fingerprint string }

type firingKey struct {
	receiver, fingerprint string
	severity              classify.Severity
}

type pageState struct {
	at       time.Duration
	severity classify.Severity
}

type pending struct {
	at  time.Duration
	job string
}

// world is one run of one scenario.
type world struct {
	ctx   context.Context
	sc    Scenario
	seed  uint64
	clk   *clock.Virtual
	start time.Time
	end   time.Duration
	env   Env

	backend  Backend
	dlqW     *faultyDLQ
	core     *worker.Core
	pipeline *worker.Pipeline
	policy   *swapPolicy
	alerter  Alerter
	inj      *faults.Injector
	led      *ledger

	deps   map[string]Dependency
	tasks  []*taskGen
	byTask map[string]*taskGen
	total  int // sum of weights
	queues []string
	rr     int

	slots []*slot
	idle  []*slot
	kick  bool

	made, seq int64
	taskRand  *rand.Rand
	arrRand   *rand.Rand
	arrivals  int64
	arrT      float64 // Poisson: seconds since From

	breakers []*breakerRun
	trans    []reports.Transition

	alerts       reports.Alerts
	pages        map[pageKey]pageState
	firing       map[firingKey]int64
	highFiring   map[string]bool
	pendingCrit  map[string]pending
	pageWithin   time.Duration
	repeatEvery  time.Duration
	firstCrit    time.Duration
	hasCrit      bool
	firstPage    time.Duration
	hasPage      bool
	holds        []*held
	holdTimerSet bool
	stepLog      []reports.Step

	series  reports.Series
	probes  map[time.Duration]*Snapshot
	events  int64
	maxQ    int64
	errs    []error
	nextCtx int
}

func (w *world) now() time.Duration { return w.clk.Now().Sub(w.start) }

func (w *world) stream(name string) *rand.Rand { return newStream(w.seed, name) }

// Run runs scenario sc with the reference system under test, or with the
// components opts replace, and returns its result. The error is for a run
// that could not be carried out (an invalid scenario, a component that
// failed to start, a canceled context); a failed expectation or a violated
// invariant is a result with Verdict Failed.
func Run(ctx context.Context, sc Scenario, opts ...Option) (*reports.Result, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	sc = sc.withDefaults()
	if o.seed != nil {
		sc.Seed = *o.seed
	}
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	w, err := newWorld(ctx, sc, &o)
	if err != nil {
		return nil, err
	}
	res := w.run()
	res.Reproduce = o.name
	return res, nil
}

func newWorld(ctx context.Context, sc Scenario, o *options) (*world, error) {
	w := &world{
		ctx: ctx, sc: sc, seed: sc.Seed, start: sc.Start, end: sc.Duration,
		clk:         clock.NewVirtual(sc.Start),
		deps:        map[string]Dependency{},
		byTask:      map[string]*taskGen{},
		pages:       map[pageKey]pageState{},
		firing:      map[firingKey]int64{},
		highFiring:  map[string]bool{},
		pendingCrit: map[string]pending{},
		pageWithin:  sc.Invariants.PageWithin,
		probes:      map[time.Duration]*Snapshot{},
	}
	w.env = Env{Clock: w.clk, Rand: w.stream, Scenario: &w.sc}
	w.taskRand, w.arrRand = w.stream("workload/task"), w.stream("workload/arrivals")
	for _, d := range sc.Dependencies {
		w.deps[d.Name] = d
	}
	for i, t := range sc.Workload.Tasks {
		g := &taskGen{Task: t, idx: i, queue: t.Queue, payload: t.Payload != "", svc: w.stream("workload/service/" + t.Name)}
		if g.queue == "" {
			g.queue = t.Name
		}
		w.tasks = append(w.tasks, g)
		w.byTask[t.Name] = g
		w.total += t.Weight
		if !slices.Contains(w.queues, g.queue) {
			w.queues = append(w.queues, g.queue)
		}
	}
	slices.Sort(w.queues)

	watched := map[string]bool{}
	for _, e := range sc.Expect {
		if j, ok := e.(interface{ jobs() []string }); ok {
			for _, id := range j.jobs() {
				watched[id] = true
			}
		}
		if p, ok := e.(interface{ probes() []time.Duration }); ok {
			for _, at := range p.probes() {
				w.probes[at] = nil
			}
		}
	}
	w.led = newLedger(w.seed, w.start, w.now, sc.System.Retry.MaxAttempts, watched)

	inj, err := faults.NewInjector(w.seed, sc.Faults)
	if err != nil {
		return nil, fmt.Errorf("scenario %q: faults: %w", sc.Name, err)
	}
	w.inj = inj

	// The store.
	cfg := store.Config{Namespace: "sim", DLQCapacity: sc.System.DLQ.Capacity, Overflow: sc.System.DLQ.Overflow,
		LostLeaseUsesAttempt: sc.System.DLQ.LostLeaseUsesAttempt, Observer: w.observe}
	if o.store != nil {
		w.backend, err = o.store(ctx, w.env, cfg)
	} else {
		w.backend, err = memstore.New(cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("open the store: %w", err)
	}
	w.dlqW = &faultyDLQ{Store: w.backend, w: w}

	// The classifier and the retry policy.
	var classifier worker.Classifier
	if o.classifier != nil {
		classifier, err = o.classifier(w.env)
	} else if sc.System.Rules != nil {
		classifier, err = classify.New(sc.System.Rules)
	} else {
		classifier = classify.Default()
	}
	if err != nil {
		return nil, fmt.Errorf("classifier: %w", err)
	}
	w.policy = &swapPolicy{}
	if o.policy != nil {
		w.policy.p, err = o.policy(w.env)
		w.policy.team = true
	} else {
		w.policy.p, err = retry.New(sc.System.Retry, w.stream("retry"))
	}
	if err != nil {
		return nil, fmt.Errorf("retry policy: %w", err)
	}

	// The alerter, delivering through recording sinks.
	acfg := sc.System.Alerts
	acfg.Receivers = slices.Clone(acfg.Receivers)
	for i := range acfg.Receivers {
		acfg.Receivers[i].Sink = &recordingSink{w: w, name: acfg.Receivers[i].Name}
	}
	w.repeatEvery = acfg.WithDefaults().Timing.RepeatInterval
	for _, r := range acfg.Routes {
		if t := r.Timing.RepeatInterval; t > 0 && t < w.repeatEvery {
			w.repeatEvery = t
		}
	}
	if o.alerter != nil {
		w.alerter, err = o.alerter(w.env, acfg)
	} else {
		w.alerter, err = alert.New(acfg, w.clk, w.stream("alert"))
	}
	if err != nil {
		return nil, fmt.Errorf("alerter: %w", err)
	}

	// Breakers and fallbacks.
	guards := map[string]worker.Guard{}
	for _, bc := range sc.System.Breakers {
		var b Breaker
		if o.breaker != nil {
			b, err = o.breaker(w.env, bc.Config)
		} else {
			b, err = degrade.NewBreaker(bc.Config, w.clk)
		}
		if err != nil {
			return nil, fmt.Errorf("breaker %q: %w", bc.Config.Name, err)
		}
		br := &breakerRun{name: bc.Config.Name, b: b, state: b.State()}
		w.breakers = append(w.breakers, br)
		b.OnStateChange(func(t degrade.Transition) { w.breakerChanged(br, t) })
		if rb, ok := b.(*degrade.Breaker); ok {
			fb, err := degrade.NewFallback(rb, w.backend, bc.Fallback, w.clk)
			if err != nil {
				return nil, fmt.Errorf("fallback %q: %w", bc.Config.Name, err)
			}
			guards[bc.Config.Name] = worker.Guard{Router: fb, Breaker: rb}
		} else {
			guards[bc.Config.Name] = worker.Guard{Router: breakerRouter{b}, Breaker: b}
		}
	}

	w.core, err = worker.NewCore(worker.Config{Classifier: classifier, Policy: w.policy, Alerter: w.alerter, Guards: guards})
	if err != nil {
		return nil, err
	}
	w.pipeline, err = worker.NewPipeline(worker.PipelineConfig{Core: w.core, Queue: w.backend, DLQ: w.dlqW})
	if err != nil {
		return nil, err
	}

	if m := sc.System.Monitor; m != nil {
		sig, ok := w.alerter.(worker.Signaler)
		if !ok {
			return nil, fmt.Errorf("monitor: the alerter %T cannot raise system alerts (it needs Raise and Clear)", w.alerter)
		}
		mon, err := worker.NewMonitor(worker.MonitorConfig{Store: w.dlqW, Alerter: sig, Clock: w.clk, Namespace: "sim",
			MaxDepth: m.MaxDepth, MaxAge: m.MaxAge, Interval: m.Interval, Severity: m.Severity})
		if err != nil {
			return nil, fmt.Errorf("monitor: %w", err)
		}
		mon.Start()
	}
	if a := sc.System.AutoRetry; a != nil {
		ar, err := worker.NewAutoRetry(worker.AutoRetryConfig{Store: w.dlqW, Clock: w.clk, Window: a.Window, Filter: a.Filter,
			Rate: a.Rate, Interval: a.Interval, MaxAutoRetries: a.MaxAutoRetries, Budget: a.Budget})
		if err != nil {
			return nil, fmt.Errorf("auto-retry: %w", err)
		}
		ar.Start()
	}

	for i := range sc.Workers.Count {
		w.addSlot(i + 1)
	}
	return w, nil
}

func (w *world) addSlot(n int) *slot {
	s := &slot{name: "w" + strconv.Itoa(n)}
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

// after schedules f at offset at (never in the past).
func (w *world) at(at time.Duration, f func()) clock.Timer {
	return w.clk.AfterFunc(max(at-w.now(), 0), f)
}

// run drives the clock until the scenario's end or the first violation.
func (w *world) run() *reports.Result {
	w.schedule()
	endAt := w.start.Add(w.end)
	for {
		if w.led.violation != nil || len(w.errs) > 0 {
			break
		}
		if w.kick {
			w.dispatch()
			continue
		}
		t, ok := w.clk.Next()
		if !ok || t.After(endAt) {
			break
		}
		w.clk.Step()
		w.events++
		if w.nextCtx++; w.nextCtx >= 4096 {
			w.nextCtx = 0
			if err := w.ctx.Err(); err != nil {
				w.errs = append(w.errs, fmt.Errorf("run stopped at %s: %w", fmtOffset(w.now()), err))
			}
		}
	}
	if w.led.violation == nil && len(w.errs) == 0 && w.now() < w.end {
		w.clk.RunUntil(endAt) // nothing is pending: just move the clock
	}
	return w.result()
}

// schedule puts the workload, the operator's steps, the crashes and the
// samples on the clock.
func (w *world) schedule() {
	sc := &w.sc
	a := sc.Workload.Arrivals
	if a.Kind != NoArrivals && a.Rate > 0 {
		w.at(w.nextArrival(), w.arrive)
	}
	for _, b := range a.Bursts {
		b := b
		w.at(b.At, func() {
			for range b.Count {
				w.create(w.pick(b.Task), PlannedJob{})
			}
		})
	}
	for _, pj := range sc.Workload.Jobs {
		pj := pj
		w.at(pj.At, func() { w.create(w.byTask[pj.Task], pj) })
	}
	for _, st := range sc.Steps {
		st := st
		w.at(st.At, func() { w.step(st) })
	}
	for _, f := range w.inj.Faults() {
		if f.Target.Kind != faults.Worker {
			continue
		}
		ws, _ := f.Schedule.Windows(w.seed, f.Name, w.end, maxMaintenance)
		for _, win := range ws {
			w.at(win.From, func() { w.workerFault(f.Target.Name) })
		}
	}
	// Maintenance: a safety net for scheduled retries and expired leases;
	// the exact wakes are scheduled as they become due.
	tick := max(w.sc.Workers.LeaseTTL/2, time.Second)
	var maintain func()
	maintain = func() {
		w.forward()
		w.recover()
		w.at(w.now()+tick, maintain)
	}
	w.at(tick, maintain)
	var sample func()
	sample = func() {
		w.sample()
		if next := w.now() + w.sc.Sample; next <= w.end {
			w.at(next, sample)
		}
	}
	w.at(0, sample)
	for at := range w.probes {
		w.at(at, func() { w.probes[at] = w.snapshot() })
	}
	if w.end > 0 {
		w.at(w.end, func() { w.sample() })
	}
}

func (w *world) nextArrival() time.Duration {
	a := &w.sc.Workload.Arrivals
	var sec float64
	switch a.Kind {
	case Constant:
		sec = float64(w.arrivals) / a.Rate
	default:
		w.arrT += w.arrRand.ExpFloat64() / a.Rate
		sec = w.arrT
	}
	return a.From + time.Duration(math.Floor(sec*1000))*time.Millisecond
}

func (w *world) arrive() {
	w.arrivals++
	w.create(w.pick(""), PlannedJob{})
	next := w.nextArrival()
	until := w.sc.Workload.Arrivals.Until
	if until == 0 || until > w.end {
		until = w.end
	}
	if next < until {
		w.at(next, w.arrive)
	}
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
func (w *world) create(t *taskGen, pj PlannedJob) {
	w.seq++
	now := w.clk.Now()
	j := job.Job{Task: t.Name, Queue: t.queue, Dependency: t.Dependency, EnqueuedAt: now}
	var n int64
	if pj.ID != "" {
		j.ID = pj.ID
	} else {
		n = w.seq
		j.ID = t.Name + "-" + strconv.FormatInt(n, 10)
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
	}
	w.led.register(j.ID, j.Task, n)
	if err := w.backend.Enqueue(w.ctx, j, now); err != nil {
		w.led.unregister(j.ID)
		w.errs = append(w.errs, fmt.Errorf("enqueue job %s at %s: %w", j.ID, fmtOffset(w.now()), err))
		return
	}
	w.made++
}

// observe is the store's Observer: the ledger, and a wake for idle workers.
func (w *world) observe(e disposition.Event) {
	w.led.observe(e)
	if e.To == disposition.Queued && len(w.idle) > 0 {
		w.kick = true
	}
}

// dispatch gives idle workers the jobs at the heads of the queues.
func (w *world) dispatch() {
	w.kick = false
	now := w.clk.Now()
	for len(w.idle) > 0 {
		s := w.idle[len(w.idle)-1]
		if !s.idle || s.busy || s.down || s.retired {
			w.idle = w.idle[:len(w.idle)-1]
			s.idle = false
			continue
		}
		got := false
		for range w.queues {
			q := w.queues[w.rr]
			w.rr = (w.rr + 1) % len(w.queues)
			j, l, ok, err := w.backend.Dequeue(w.ctx, q, now, w.sc.Workers.LeaseTTL)
			if err != nil {
				w.errs = append(w.errs, fmt.Errorf("dequeue from %s: %w", q, err))
				return
			}
			if ok {
				got = true
				w.idle = w.idle[:len(w.idle)-1]
				s.idle = false
				w.begin(s, j, l)
				break
			}
		}
		if !got {
			return
		}
	}
}

// begin starts an attempt of job j on slot s.
func (w *world) begin(s *slot, j job.Job, l queue.Lease) {
	now := w.clk.Now()
	off := now.Sub(w.start)
	r := w.led.jobs[j.ID]
	a, run, err := w.pipeline.Start(w.ctx, j, l, now)
	if err != nil {
		// The job stays leased and comes back when the lease expires.
		if r != nil {
			w.led.note(r, "attempt could not start: %v", err)
		}
		w.at(l.Expires.Sub(w.start), w.recover)
		w.setIdle(s)
		return
	}
	if !run {
		w.setIdle(s)
		return
	}
	var eff faults.Effect
	if j.Dependency != "" {
		eff = w.inj.Call(faults.Target{Kind: faults.Dependency, Name: j.Dependency}, faults.Call{At: off, JobID: j.ID})
	}
	slow := w.inj.Call(faults.Target{Kind: faults.Store}, faults.Call{At: off, JobID: j.ID})
	if dep, ok := w.deps[j.Dependency]; ok && dep.Payment && r != nil && (eff.Err == nil || eff.Charged) {
		w.charge(r, j, dep)
	}
	d := eff.Latency + slow.Latency
	if t := w.byTask[j.Task]; t != nil {
		d += t.Service
		if t.ServiceJitter > 0 {
			d += time.Duration(t.svc.Int64N(int64(2*t.ServiceJitter/time.Millisecond)+1))*time.Millisecond - t.ServiceJitter
		}
	}
	d = max(d, 0)
	s.busy, s.job, s.lease, s.att, s.eff, s.rec = true, j, l, a, eff, r
	s.doneAt = off + d
	s.timer = w.at(s.doneAt, s.fire)
}

// charge counts one charge of r's payment; a second charge is a violation
// unless the gateway replayed the first for the same idempotency key.
func (w *world) charge(r *rec, j job.Job, dep Dependency) {
	if r.charged > 0 && j.IdempotencyKey != "" && !dep.IgnoresIdempotencyKeys {
		w.led.note(r, "gateway %s replayed the charge for idempotency key %s", dep.Name, j.IdempotencyKey)
		return
	}
	r.charged++
	w.led.totals.Charges++
	w.led.note(r, "gateway %s charged the payment (charge %d)", dep.Name, r.charged)
	if r.charged > 1 {
		why := "the job has no idempotency key"
		if j.IdempotencyKey != "" {
			why = "the gateway ignored idempotency key " + j.IdempotencyKey
		}
		w.led.fail(InvNoDoubleCharge, r, "the payment of job %s was charged %d times: %s", j.ID, r.charged, why)
	}
}

// complete ends the attempt on slot s.
func (w *world) complete(s *slot) {
	if !s.busy {
		return
	}
	now := w.clk.Now()
	off := now.Sub(w.start)
	if s.stallUntil > off {
		s.timer = w.at(s.stallUntil, s.fire)
		return
	}
	s.busy = false
	o := w.core.Complete(s.att, s.eff.Err, now)
	r := s.rec
	if r != nil {
		w.led.attempt(r, s.eff.Fault, s.eff.Class, &o)
		if o.Err != nil && (s.eff.Class == classify.Critical || o.Verdict.Class == classify.Critical) {
			w.critical(r, o.Fingerprint)
		}
	}
	w.apply(s.lease, o, r)
	s.rec, s.att, s.job = nil, worker.Attempt{}, job.Job{}
	w.setIdle(s)
}

// apply carries an outcome out, holding a dead letter the DLQ store could
// not take.
func (w *world) apply(l queue.Lease, o worker.Outcome, r *rec) {
	err := w.pipeline.Apply(w.ctx, l, o, w.clk.Now())
	switch {
	case err == nil:
		if o.Action == worker.Retry {
			// The wake is on a whole millisecond, the store's resolution
			// (Redis scripts get integer milliseconds).
			w.at(ceilMs(o.At.Sub(w.start)), w.forward)
		}
	case errors.Is(err, queue.ErrLeaseLost):
		w.led.totals.Fenced++
		if r != nil {
			w.led.note(r, "late completion (%s) fenced off: the lease was lost", o.Action)
		}
	case errors.Is(err, dlq.ErrFull):
		// Held in flight by a full DLQ (reject policy): it comes back when
		// the lease expires.
		if r != nil {
			w.led.note(r, "the DLQ is full: the dead letter was refused; the job comes back when its lease expires")
		}
		w.at(l.Expires.Sub(w.start), w.recover)
	case o.Action == worker.DeadLetter:
		if r != nil {
			w.led.note(r, "the DLQ store failed (%v): the dead letter is held and retried", err)
		}
		w.holds = append(w.holds, &held{lease: l, o: o, since: w.now(), rec: r})
		w.scheduleHolds()
	default:
		if r != nil {
			w.led.note(r, "the store failed (%v): the job comes back when its lease expires", err)
		}
		w.at(l.Expires.Sub(w.start), w.recover)
	}
}

// ceilMs rounds d up to a whole millisecond.
func ceilMs(d time.Duration) time.Duration {
	if r := d % time.Millisecond; r > 0 {
		d += time.Millisecond - r
	}
	return d
}

// holdEvery is how often held dead letters are retried; their leases are
// extended each time.
func (w *world) holdEvery() time.Duration {
	return max(min(time.Second, w.sc.Workers.LeaseTTL/3), time.Millisecond)
}

func (w *world) scheduleHolds() {
	if w.holdTimerSet || len(w.holds) == 0 {
		return
	}
	w.holdTimerSet = true
	w.at(w.now()+w.holdEvery(), w.retryHolds)
}

func (w *world) retryHolds() {
	w.holdTimerSet = false
	now := w.clk.Now()
	keep := w.holds[:0]
	for _, h := range w.holds {
		if nl, err := w.backend.Heartbeat(w.ctx, h.lease, now, w.sc.Workers.LeaseTTL); err == nil {
			h.lease = nl
		}
		err := w.pipeline.Apply(w.ctx, h.lease, h.o, now)
		switch {
		case err == nil:
			w.led.totals.Held++
			w.led.totals.HeldMaxMs = max(w.led.totals.HeldMaxMs, (w.now() - h.since).Milliseconds())
			if h.rec != nil {
				w.led.note(h.rec, "held dead letter written after %s", w.now()-h.since)
			}
		case errors.Is(err, queue.ErrLeaseLost):
			w.led.totals.Fenced++
			if h.rec != nil {
				w.led.note(h.rec, "held dead letter fenced off: the lease was lost")
			}
		default:
			keep = append(keep, h)
		}
	}
	w.holds = keep
	w.scheduleHolds()
}

// forward moves due retries to their queues.
func (w *world) forward() {
	for {
		n, err := w.backend.ForwardDue(w.ctx, w.clk.Now(), 1000)
		if err != nil {
			w.errs = append(w.errs, fmt.Errorf("forward due retries: %w", err))
			return
		}
		if n < 1000 {
			return
		}
	}
}

// recover puts jobs whose leases expired back on their queues.
func (w *world) recover() {
	for {
		n, err := w.backend.RecoverExpired(w.ctx, w.clk.Now(), 1000)
		if err != nil {
			w.errs = append(w.errs, fmt.Errorf("recover expired leases: %w", err))
			return
		}
		if n < 1000 {
			return
		}
	}
}

// workerFault applies a worker fault (crash or stall) to the named worker,
// or every worker.
func (w *world) workerFault(name string) {
	off := w.now()
	for _, s := range w.slots {
		if name != "" && s.name != name || s.retired {
			continue
		}
		eff := w.inj.Call(faults.Target{Kind: faults.Worker, Name: s.name}, faults.Call{At: off})
		switch {
		case eff.Crash:
			if s.busy {
				s.busy = false
				s.gen++
				s.timer.Stop()
				if s.rec != nil {
					w.led.note(s.rec, "worker %s crashed mid-attempt: the job comes back when its lease expires at %s", s.name, fmtOffset(s.lease.Expires.Sub(w.start)))
				}
				w.at(s.lease.Expires.Sub(w.start), w.recover)
				s.rec = nil
			}
			s.down = true
			w.at(off+eff.RestartAfter, func() { s.down = false; w.setIdle(s) })
		case eff.StallFor > 0:
			s.stallUntil = max(s.stallUntil, off+eff.StallFor)
			if s.busy && s.rec != nil {
				w.led.note(s.rec, "worker %s stalled until %s", s.name, fmtOffset(s.stallUntil))
			}
			w.at(s.stallUntil, func() { w.setIdle(s) })
		}
	}
}

func (w *world) breakerChanged(br *breakerRun, t degrade.Transition) {
	at := t.At.Sub(w.start)
	w.trans = append(w.trans, reports.Transition{AtMs: at.Milliseconds(), Breaker: br.name, From: t.From.String(), To: t.To.String(), Reason: t.Reason})
	if t.From != br.state || !legalBreaker(t.From, t.To) {
		w.led.fail(InvBreakerLegal, nil, "breaker %s moved %s → %s (%s), but it was %s", br.name, t.From, t.To, t.Reason, br.state)
	}
	br.state = t.To
	w.alerter.BreakerChanged(t)
	if _, ok := br.b.(*degrade.Breaker); !ok && t.To == degrade.Closed {
		w.drainAll()
	}
}

func legalBreaker(from, to degrade.State) bool {
	switch from {
	case degrade.Closed:
		return to == degrade.Open
	case degrade.Open:
		return to == degrade.HalfOpen
	case degrade.HalfOpen:
		return to == degrade.Open || to == degrade.Closed
	}
	return false
}

// drainAll empties the fallback queue (for a team's breaker, which has no
// reference fallback to drain it).
func (w *world) drainAll() {
	for {
		_, more, err := w.backend.DrainBatch(w.ctx, w.clk.Now(), 100)
		if err != nil {
			w.errs = append(w.errs, fmt.Errorf("drain the fallback queue: %w", err))
			return
		}
		if !more {
			return
		}
	}
}

// critical notes a critical failure with alert fingerprint fp: unless its
// alert already paged and still fires, a page must follow within
// PageWithin.
func (w *world) critical(r *rec, fp string) {
	off := w.now()
	if !w.hasCrit {
		w.hasCrit, w.firstCrit = true, off
	}
	if w.pageWithin < 0 || w.highFiring[fp] {
		return
	}
	if _, ok := w.pendingCrit[fp]; ok {
		return
	}
	w.pendingCrit[fp] = pending{at: off, job: r.id}
	deadline := off + w.pageWithin
	w.at(deadline, func() {
		if p, ok := w.pendingCrit[fp]; ok && p.at == off {
			rr := w.led.jobs[p.job]
			if rr == nil {
				rr = &rec{id: p.job}
			}
			w.led.fail(InvCriticalPaged, rr, "job %s failed critically at %s, and no high-severity alert for fingerprint %q reached a receiver within %s",
				p.job, fmtOffset(p.at), fp, w.pageWithin)
		}
	})
}

// deliver records a notification a sink accepted.
func (w *world) deliver(receiver string, n alert.Notification) {
	off := w.now()
	w.alerts.Notifications++
	if w.alerts.ByReceiver == nil {
		w.alerts.ByReceiver = map[string]int64{}
	}
	w.alerts.ByReceiver[receiver]++
	paged := false
	for _, a := range n.Alerts {
		if len(w.alerts.Deliveries) < maxDeliveries {
			w.alerts.Deliveries = append(w.alerts.Deliveries, reports.Delivery{AtMs: off.Milliseconds(), Receiver: receiver,
				Fingerprint: a.Fingerprint, Name: a.Name, Severity: a.Severity.String(), Status: a.Status.String(),
				Count: a.Count, Summary: a.Summary, Attempt: n.Attempt})
		} else {
			w.alerts.Truncated = true
		}
		k := pageKey{receiver, a.Fingerprint}
		if a.Status == alert.Resolved {
			delete(w.pages, k)
			if a.Severity == classify.High {
				delete(w.highFiring, a.Fingerprint)
			}
			continue
		}
		if prev, ok := w.pages[k]; ok && off-prev.at < w.repeatEvery && a.Severity <= prev.severity {
			w.led.fail(InvOnePage, nil, "receiver %s got alert %q (fingerprint %s) again after %s, within the repeat interval of %s",
				receiver, a.Summary, a.Fingerprint, off-prev.at, w.repeatEvery)
		}
		w.pages[k] = pageState{at: off, severity: a.Severity}
		w.firing[firingKey{receiver, a.Fingerprint, a.Severity}]++
		if a.Severity == classify.High {
			if w.alerts.PagesByFingerprint == nil {
				w.alerts.PagesByFingerprint = map[string]int64{}
			}
			w.alerts.PagesByFingerprint[a.Fingerprint]++
			paged = true
			w.highFiring[a.Fingerprint] = true
			delete(w.pendingCrit, a.Fingerprint)
		}
	}
	if paged {
		w.alerts.Pages++
		if !w.hasPage {
			w.hasPage, w.firstPage = true, off
		}
	}
}

// sample records one point of the time series and checks the ledger
// against the store's own counts.
func (w *world) sample() {
	off := w.now()
	s := &w.series
	if n := len(s.AtMs); n > 0 && s.AtMs[n-1] == off.Milliseconds() {
		return
	}
	l := w.led
	s.AtMs = append(s.AtMs, off.Milliseconds())
	s.Queued = append(s.Queued, l.counts[disposition.Queued])
	s.InFlight = append(s.InFlight, l.counts[disposition.InFlight])
	s.Scheduled = append(s.Scheduled, l.counts[disposition.Scheduled])
	s.Fallback = append(s.Fallback, l.counts[disposition.Fallback])
	if s.DLQBySeverity == nil {
		s.DLQBySeverity = map[string][]int64{}
		s.Breakers = map[string][]string{}
	}
	for _, sev := range classify.Severities {
		s.DLQBySeverity[sev.String()] = append(s.DLQBySeverity[sev.String()], l.dlqBySev[sev])
	}
	for _, br := range w.breakers {
		s.Breakers[br.name] = append(s.Breakers[br.name], br.b.State().String())
	}
	w.maxQ = max(w.maxQ, l.counts[disposition.Queued])
	w.reconcile(false)
}

// reconcile compares the ledger with the store's counts; at the end (full)
// it also lists the DLQ and checks every dead-lettered job has one entry.
func (w *world) reconcile(full bool) {
	if w.led.violation != nil {
		return
	}
	c, err := w.backend.Counts(w.ctx)
	if err != nil {
		return // a store outage: the next sample checks again
	}
	l := w.led
	if int64(c.Queued) != l.counts[disposition.Queued] || int64(c.InFlight) != l.counts[disposition.InFlight] ||
		int64(c.Scheduled) != l.counts[disposition.Scheduled] || int64(c.Fallback) != l.counts[disposition.Fallback] {
		l.fail(InvConservation, nil, "the store holds %d queued, %d in flight, %d scheduled, %d in fallback; its moves account for %d, %d, %d, %d: a job moved without an event",
			c.Queued, c.InFlight, c.Scheduled, c.Fallback, l.counts[disposition.Queued], l.counts[disposition.InFlight], l.counts[disposition.Scheduled], l.counts[disposition.Fallback])
		return
	}
	st, err := w.backend.Stats(w.ctx)
	if err != nil {
		return
	}
	inDLQ := int64(st.ByStatus[dlq.Failed.String()] + st.ByStatus[dlq.Quarantined.String()] + st.ByStatus[dlq.Deleted.String()] + st.Corrupt)
	if inDLQ == l.counts[disposition.DeadLettered] && !full {
		return
	}
	// List the DLQ: which dead-lettered job has no entry, or two?
	seen := map[string]int{}
	cursor := ""
	for {
		p, err := w.backend.List(w.ctx, dlq.Filter{}, cursor, 1000)
		if err != nil {
			return
		}
		for _, e := range p.Entries {
			seen[e.Job.ID]++
		}
		if p.Next == "" {
			break
		}
		cursor = p.Next
	}
	ids := make([]string, 0, len(l.jobs))
	for id, r := range l.jobs {
		if r.state == disposition.DeadLettered {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		switch seen[id] {
		case 1:
		case 0:
			l.fail(InvConservation, l.jobs[id], "job %s was dead-lettered, but the DLQ store has no entry for it: it was dropped without an event (%d entries held, %d dead-lettered)", id, inDLQ, l.counts[disposition.DeadLettered])
			return
		default:
			l.fail(InvOneDLQEntry, l.jobs[id], "job %s has %d DLQ entries", id, seen[id])
			return
		}
	}
	if inDLQ != l.counts[disposition.DeadLettered] {
		l.fail(InvConservation, nil, "the DLQ store holds %d entries that are failed, quarantined, deleted or corrupt, but %d jobs were dead-lettered", inDLQ, l.counts[disposition.DeadLettered])
	}
}

// step carries out one operator step.
func (w *world) step(st Step) {
	now := w.clk.Now()
	rec := reports.Step{AtMs: w.now().Milliseconds(), Kind: st.Kind.String()}
	switch st.Kind {
	case Requeue:
		budget := st.Budget
		if budget == 0 {
			budget = dlq.OneMoreAttempt
		}
		res, err := w.dlqW.RequeueMatching(w.ctx, st.Filter, dlq.RequeueOptions{Budget: budget, By: "operator"}, now, false)
		rec.Detail = fmt.Sprintf("matched %d, requeued %d, skipped %d", res.Matched, res.Requeued, res.Skipped)
		rec.Error = errText(err)
	case Delete:
		n, err := w.deleteMatching(st.Filter, now)
		rec.Detail = fmt.Sprintf("deleted %d", n)
		rec.Error = errText(err)
	case Purge:
		n, err := w.dlqW.Purge(w.ctx, now.Add(-st.OlderThan), now)
		rec.Detail = fmt.Sprintf("purged %d", n)
		rec.Error = errText(err)
	case SetWorkers:
		active := 0
		for _, s := range w.slots {
			if !s.retired {
				active++
			}
		}
		for i := len(w.slots) - 1; i >= 0 && active > st.Workers; i-- {
			if s := w.slots[i]; !s.retired {
				s.retired = true
				active--
			}
		}
		for active < st.Workers {
			w.addSlot(len(w.slots) + 1)
			active++
		}
		rec.Detail = fmt.Sprintf("%d workers", st.Workers)
	case SetRetry:
		if w.policy.team {
			rec.Error = "set-retry changes the reference retry policy; this run uses a team's own"
			break
		}
		p, err := retry.New(st.Retry, w.stream("retry/"+strconv.FormatInt(st.At.Milliseconds(), 10)))
		if err != nil {
			rec.Error = err.Error()
			break
		}
		w.policy.p = p
		w.led.maxAttempts = st.Retry.WithDefaults().MaxAttempts
		rec.Detail = fmt.Sprintf("max attempts %d", w.led.maxAttempts)
	}
	w.stepLog = append(w.stepLog, rec)
}

func (w *world) deleteMatching(f dlq.Filter, now time.Time) (int, error) {
	var ids []string
	cursor := ""
	for {
		p, err := w.dlqW.List(w.ctx, f, cursor, 1000)
		if err != nil {
			return 0, err
		}
		for _, e := range p.Entries {
			if e.Status != dlq.Deleted {
				ids = append(ids, e.Job.ID)
			}
		}
		if p.Next == "" {
			break
		}
		cursor = p.Next
	}
	n := 0
	for _, id := range ids {
		if err := w.dlqW.Delete(w.ctx, id, "operator", now); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// swapPolicy lets a SetRetry step replace the reference policy mid-run.
type swapPolicy struct {
	p    worker.Policy
	team bool
}

func (s *swapPolicy) Decide(a retry.Attempt, c classify.Classification, now time.Time) retry.Decision {
	return s.p.Decide(a, c, now)
}

// breakerRouter routes through a team's breaker.
type breakerRouter struct{ b Breaker }

func (r breakerRouter) Route() degrade.Route {
	p, err := r.b.Allow()
	return degrade.Route{Primary: err == nil, Permit: p, Reason: err}
}

// faultyDLQ puts the DLQ-store faults in front of the store's DLQ side.
type faultyDLQ struct {
	dlq.Store
	w *world
}

func (f *faultyDLQ) fault(id string) error {
	eff := f.w.inj.Call(faults.Target{Kind: faults.DLQStore}, faults.Call{At: f.w.now(), JobID: id})
	if eff.Err != nil {
		return fmt.Errorf("dlq store (fault %s): %w", eff.Fault, eff.Err)
	}
	return nil
}

// DeadLetter writes the entry unless the store is down.
func (f *faultyDLQ) DeadLetter(ctx context.Context, l queue.Lease, e dlq.Entry, now time.Time) (dlq.AddResult, error) {
	if err := f.fault(e.Job.ID); err != nil {
		return dlq.AddResult{}, err
	}
	return f.Store.DeadLetter(ctx, l, e, now)
}

// RequeueMatching requeues unless the store is down.
func (f *faultyDLQ) RequeueMatching(ctx context.Context, flt dlq.Filter, opts dlq.RequeueOptions, now time.Time, dry bool) (dlq.BulkResult, error) {
	if err := f.fault(""); err != nil {
		return dlq.BulkResult{}, err
	}
	return f.Store.RequeueMatching(ctx, flt, opts, now, dry)
}

// Requeue requeues one entry unless the store is down.
func (f *faultyDLQ) Requeue(ctx context.Context, id string, opts dlq.RequeueOptions, now time.Time) (dlq.RequeueOutcome, error) {
	if err := f.fault(id); err != nil {
		return 0, err
	}
	return f.Store.Requeue(ctx, id, opts, now)
}

// List lists unless the store is down.
func (f *faultyDLQ) List(ctx context.Context, flt dlq.Filter, cursor string, limit int) (dlq.Page, error) {
	if err := f.fault(""); err != nil {
		return dlq.Page{}, err
	}
	return f.Store.List(ctx, flt, cursor, limit)
}

// Stats reads the counters unless the store is down.
func (f *faultyDLQ) Stats(ctx context.Context) (dlq.Stats, error) {
	if err := f.fault(""); err != nil {
		return dlq.Stats{}, err
	}
	return f.Store.Stats(ctx)
}

// Purge purges unless the store is down.
func (f *faultyDLQ) Purge(ctx context.Context, olderThan, now time.Time) (int, error) {
	if err := f.fault(""); err != nil {
		return 0, err
	}
	return f.Store.Purge(ctx, olderThan, now)
}

// Delete deletes unless the store is down.
func (f *faultyDLQ) Delete(ctx context.Context, id, by string, now time.Time) error {
	if err := f.fault(id); err != nil {
		return err
	}
	return f.Store.Delete(ctx, id, by, now)
}

// Quarantine quarantines unless the store is down.
func (f *faultyDLQ) Quarantine(ctx context.Context, id, reason string, now time.Time) error {
	if err := f.fault(id); err != nil {
		return err
	}
	return f.Store.Quarantine(ctx, id, reason, now)
}

// recordingSink is an alert receiver's sink: alert-sink faults refuse
// sends; accepted ones are recorded and checked.
type recordingSink struct {
	w    *world
	name string
}

// Send delivers n unless an alert-sink fault refuses it.
func (s *recordingSink) Send(_ context.Context, n alert.Notification) error {
	eff := s.w.inj.Call(faults.Target{Kind: faults.AlertSink, Name: s.name}, faults.Call{At: s.w.now()})
	if eff.Err != nil {
		s.w.alerts.Rejected++
		return fmt.Errorf("alert sink %s (fault %s): %w", s.name, eff.Fault, eff.Err)
	}
	s.w.deliver(s.name, n)
	return nil
}
