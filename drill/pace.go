package drill

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/reference/worker"
	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/scenarios"
)

// A drill proves its pace: it measures how far its own parts fall behind
// the scaled clock (its slip) and compares that with what the scenario's
// timing allows at the drill's scale (its tolerance). A drill whose slip
// is past its tolerance cannot tell a slow machine from a wrong system,
// so its verdict is inconclusive (oracle.Judge), never a FAIL of the system
// and never a PASS.

// Defaults of the pacing.
const (
	// MaxAutoScale is the fastest scale --time-scale auto picks: past it
	// the wall-clock overhead of every call (Redis, HTTP, scheduling)
	// outweighs the scenarios' shorter service times, and a store call's
	// bound (a third of the lease, on the wall clock) comes within reach
	// of a loaded Redis's answer: at 50, dlq-store-outage's and
	// dlq-past-ten-thousand's store calls timed out under their own load.
	MaxAutoScale = 20
	// autoMargin is how many times the machine's measured slip the
	// tolerance of an auto scale must be.
	autoMargin = 4
	// maxLoadSlowdown is the most a busy machine slows an auto scale.
	maxLoadSlowdown = 2
	// tickProbe is the interval of the drill's timer probe.
	tickProbe = 5 * time.Millisecond
	// storeProbe is the interval of the drill's store probe.
	storeProbe = 20 * time.Millisecond
)

// Interval is one of a scenario's timing intervals: what it is and how
// long, in scenario time.
type Interval struct {
	Name string
	D    time.Duration
}

// Intervals are the scenario's shortest timing intervals that a drill's
// timers must honour: the heartbeat (a third of the lease), the retry
// base delay, every breaker's open duration.
func Intervals(sc *scenarios.Scenario) []Interval {
	ivs := []Interval{{"workers.leaseTTL/3 (the heartbeat)", sc.Workers.LeaseTTL / 3}, {"system.retry.baseDelay", sc.System.Retry.BaseDelay}}
	for _, b := range sc.System.Breakers {
		ivs = append(ivs, Interval{"breaker " + b.Config.Name + " openDuration", b.Config.OpenDuration})
	}
	// A dependency fault's window: jobs due in it must be created in it (a job
	// created after the window meets another system), so a window shorter
	// than the rest bounds the tolerance too (retry-wave-jitter's 500 ms
	// index blip).
	for _, f := range sc.Faults {
		if f.Target.Kind != faults.Dependency {
			continue // a worker's or a store's window waits for its state, or the store's answers show the slip
		}
		ws, _ := f.Schedule.Windows(sc.Seed, f.Name, sc.Duration, 1000)
		var short time.Duration
		for _, w := range ws {
			if w.Until < sc.Duration && (short == 0 || w.Until-w.From < short) {
				short = w.Until - w.From
			}
		}
		if short > 0 {
			ivs = append(ivs, Interval{"fault " + f.Name + "'s window", short})
		}
	}
	return slices.DeleteFunc(ivs, func(v Interval) bool { return v.D <= 0 })
}

// shortest is the shortest of ivs (ok false when there is none).
func shortest(ivs []Interval) (Interval, bool) {
	if len(ivs) == 0 {
		return Interval{}, false
	}
	return slices.MinFunc(ivs, func(a, b Interval) int { return int(a.D - b.D) }), true
}

// Tolerance is the slip, on the wall clock, that a drill of sc at scale
// can take without its timing meaning something else: the scenario's
// shortest interval at that scale (a heartbeat late by less than one
// interval still comes before the lease's end, three intervals on; a
// retry late by less than its base delay keeps its order), at most a
// second.
func Tolerance(sc *scenarios.Scenario, scale float64) time.Duration {
	iv, ok := shortest(Intervals(sc))
	if !ok {
		return time.Second
	}
	return min(time.Second, time.Duration(float64(iv.D)/scale))
}

// Pace is what a drill measured of the machine before it started: the
// lateness of a short timer and the round trip of a job through the
// store's whole path (enqueue, lease, ack), each its p90 — a single
// outlier (a compiler's burst beside the drill) does not slow the whole
// drill to scale 1; the slip measured while the drill runs is what the
// verdict answers to.
type Pace struct {
	Tick, RoundTrip time.Duration
	// Enqueue is the producer's wall time per job in a burst of
	// paceBurst jobs due at once, sent as the producer sends them (0 when
	// not measured): how fast the drill can create a scenario's burst.
	Enqueue time.Duration
	// Load is the machine's runnable work per core (the 1-minute load
	// average over the cores; 0 when unknown): the probes above run
	// before the drill's own processes, so a machine already busy is
	// given room for them.
	Load float64
}

// Slowest is the larger of the two.
func (p Pace) Slowest() time.Duration { return max(p.Tick, p.RoundTrip) }

// AutoScale is the fastest scale at which sc's tolerance is autoMargin
// times the machine's measured slip, between 1 and MaxAutoScale (and never
// faster than CheckScale allows); why says how it was chosen.
func AutoScale(sc *scenarios.Scenario, p Pace) (scale float64, why string) {
	iv, ok := shortest(Intervals(sc))
	slow := max(p.Slowest(), 100*time.Microsecond)
	if !ok {
		return MaxAutoScale, fmt.Sprintf("no timing interval to honour; measured slip %s", slow)
	}
	// Tolerance(K) = iv/K ≥ margin·slow  ⇔  K ≤ iv/(margin·slow).
	k := float64(iv.D) / (autoMargin * float64(slow))
	k = min(k, float64(iv.D)/float64(MinWallInterval), MaxAutoScale)
	busy := ""
	if p.Load > 1 {
		// At most halved: the load average lags by a minute (it still
		// counts a drill just ended), and the slip measured while the
		// drill runs is what the verdict answers to.
		f := min(p.Load, maxLoadSlowdown)
		k /= f
		busy = fmt.Sprintf("; the machine is busy (%.1f runnable per core), so the scale is %.1f times slower", p.Load, f)
	}
	made := ""
	if kp, why := producerScale(sc, p.Enqueue, p.RoundTrip, k); kp < k {
		k, made = kp, "; "+why
	}
	if x := sc.System.External; x != nil && x.MaxTimeScale > 0 && k > x.MaxTimeScale {
		k, made = x.MaxTimeScale, made+fmt.Sprintf("; the black-box system keeps its timing up to %v (system.external.maxTimeScale)", x.MaxTimeScale)
	}
	switch {
	case k >= 10:
		k = math.Floor(k/5) * 5
	case k >= 1:
		k = math.Floor(k)
	default:
		k = 1
	}
	return k, fmt.Sprintf("the machine's measured slip is %s (timer %s, a job's round trip %s)%s; %s is %s, so scale %v leaves a tolerance of %s%s",
		slow.Round(10*time.Microsecond), p.Tick.Round(10*time.Microsecond), p.RoundTrip.Round(10*time.Microsecond), busy, iv.Name, iv.D, k, Tolerance(sc, k).Round(10*time.Microsecond), made)
}

// Margins of the workload's bound (producerScale): how many times the
// measured time per job the producer and the workers are given while the
// drill runs. Measured on the project's 2-core machine, idle: the
// producer's burst measured 35-40µs a job and made 10,050 in a drill
// beside its 8 busy workers at about 130µs a job; the workers, whose
// round trip measured 320-410µs, leased a burst of 200 jobs at 680µs a
// job (1,500 a second) and dead-lettered 10,050 at 650µs.
const (
	producerMargin = 4
	attemptMargin  = 3
)

// producerScale is the fastest scale, at most k, at which the drill can
// carry the scenario's workload in time: its producer (creating a job
// every per of wall time, times producerMargin) creates every job before
// the scenario's end, and its workers (one job every rt, times
// attemptMargin, the measured round trip of a job through the store)
// first try every job due inside a fault's window before the window
// closes. A job created or tried later meets another system: the judge
// calls the drill inconclusive (sim's lateJobs), or an expectation of the
// fault's effect fails with no fault of the system's. why names the
// burst that binds it; k when nothing does (or per is unknown); 1 when
// even scale 1 does not keep up.
// Measured on the project's 2-core machine, idle: at scale 20, 10,050
// imports due at once were dead-lettered over 6.7 s of wall time, past
// their window of 6 s; at scale 15, 200 index updates were first tried
// over 136 ms, past their 500 ms blip's 33 ms: both failed an expectation.
func producerScale(sc *scenarios.Scenario, per, rt time.Duration, k float64) (float64, string) {
	if per <= 0 {
		return k, ""
	}
	arr, err := planArrivals(*sc)
	if err != nil || len(arr) == 0 {
		return k, ""
	}
	wins := oracle.FaultWindows(sc, sc.Seed, sc.Duration)
	// late is the first job the drill makes or tries too late at scale x,
	// and what it misses ("" when none is). A job counts only when the
	// machine's costs make it late: one the fleet would try after its
	// window even at no cost (a job due just before the window closes, a
	// burst after a lull met by the fleet's poll interval, which is
	// scenario time and the same at every scale) is the scenario's timing,
	// not the drill's pace.
	late := func(x float64) string {
		make1 := time.Duration(float64(per) * producerMargin * x) // scenario time per job
		try1 := time.Duration(float64(rt) * attemptMargin * x)
		// A job tried within the drill's tolerance of its instant is on
		// time, as the judge counts it.
		allow := time.Duration(float64(Tolerance(sc, x)) * x)
		var made, tried, tried0 time.Duration
		for i, a := range arr {
			made = max(made, a.At) + make1
			// A fleet idle for a while polls its queues once every
			// worker.DefaultPollMax: a job after a lull may wait that long
			// for its first try (retry-wave-jitter's burst: 700 ms).
			if tried+worker.DefaultPollMax <= made {
				tried = made + worker.DefaultPollMax
			}
			tried = max(tried, made) + try1
			if tried0+worker.DefaultPollMax <= a.At {
				tried0 = a.At + worker.DefaultPollMax
			}
			tried0 = max(tried0, a.At)
			if tried-a.At <= allow {
				continue
			}
			for _, w := range wins {
				// Missed at this scale, and not at no cost.
				if w.Misses(a.At, tried) && !w.Misses(a.At, tried0) {
					return fmt.Sprintf("tried job %d of %d, due at +%s, after fault %s's window closed at +%s", i+1, len(arr), a.At, w.Fault, w.Until)
				}
			}
			if made >= sc.Duration && made-a.At > allow {
				return fmt.Sprintf("created job %d of %d, due at +%s, after the scenario's end (+%s)", i+1, len(arr), a.At, sc.Duration)
			}
		}
		return ""
	}
	first := late(k)
	if first == "" {
		return k, ""
	}
	// The fastest of the scales AutoScale picks from at which the drill
	// keeps up, tried from the fastest down: lateness is not monotone in
	// the scale (the poll interval's wait comes and goes as the gaps
	// between tries shrink, the judge's allowance grows with the scale),
	// so a bisection could miss it. At none, the slowest: it leaves the
	// most room.
	for _, x := range autoScales {
		if x < k && late(x) == "" {
			return x, fmt.Sprintf("the drill creates a job every %s and its workers try one every %s, so a faster scale would have %s: scale %v at most", (per * producerMargin).Round(time.Microsecond), (rt * attemptMargin).Round(time.Microsecond), first, x)
		}
	}
	return 1, fmt.Sprintf("the drill creates a job every %s and its workers try one every %s, so a faster scale would have %s, and so would scale 1: the slowest", (per * producerMargin).Round(time.Microsecond), (rt * attemptMargin).Round(time.Microsecond), first)
}

// autoScales are the scales AutoScale picks from, fastest first.
var autoScales = []float64{20, 15, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1}

// MeasureTick measures the p90 lateness of a short timer over about n
// ticks of tickProbe: how late this machine wakes a sleeping goroutine.
func MeasureTick(ctx context.Context, n int) time.Duration {
	late := make([]time.Duration, 0, n)
	for range n {
		if ctx.Err() != nil {
			break
		}
		t0 := time.Now()
		time.Sleep(tickProbe)
		late = append(late, time.Since(t0)-tickProbe)
	}
	return pctl(late, 0.90)
}

func p99(ds []time.Duration) time.Duration { return pctl(ds, 0.99) }

// pctl is the q-quantile of ds (sorted in place), 0 for none.
func pctl(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[min(len(ds)-1, int(q*float64(len(ds))))]
}

// slipMeter collects a drill's slip samples by part.
type slipMeter struct {
	mu      sync.Mutex
	samples map[string][]time.Duration
}

func newSlipMeter() *slipMeter { return &slipMeter{samples: map[string][]time.Duration{}} }

// add records one sample of part what (negative lateness counts as 0).
func (m *slipMeter) add(what string, d time.Duration) {
	m.mu.Lock()
	m.samples[what] = append(m.samples[what], max(d, 0))
	m.mu.Unlock()
}

// probe samples the drill's own timer lateness every tickProbe until ctx
// is done.
func (m *slipMeter) probe(ctx context.Context) {
	t := time.NewTimer(tickProbe)
	defer t.Stop()
	for {
		due := time.Now().Add(tickProbe)
		t.Reset(tickProbe)
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			m.add("timers", now.Sub(due))
		}
	}
}

// probeStore samples how long the drill's Redis takes to answer, every
// storeProbe until ctx is done: a PING on a client of its own (one call
// at a time, so one connection),
// straight to Redis (not through the drill's proxy, whose faults are the
// scenario's), so it waits behind whatever the workers and the producer
// keep Redis busy with, as a worker's heartbeat does, but not behind the
// producer's own queue of enqueues (a burst of 10,050 enqueues, 32 at
// once, measured each enqueue at p99 53 ms on an idle machine: the wait
// for one of the producer's connections, not Redis's answer). A probe
// that hangs counts every probe it missed, each as late as the answer
// it would have waited for, so a store that stops answering for seconds
// weighs in the p99 as it would on a heartbeat.
func (m *slipMeter) probeStore(ctx context.Context, redisURL string) {
	rdb := redisstore.NewClient(redisURL)
	defer rdb.Close()
	due := time.Now()
	for {
		if !sleepUntil(ctx, due) {
			return
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_ = rdb.Ping(cctx).Err() // a refusal is an answer, late or not
		cancel()
		if ctx.Err() != nil {
			return
		}
		now := time.Now()
		for ; !due.After(now); due = due.Add(storeProbe) {
			m.add("store", now.Sub(due))
		}
	}
}

// parts is the order parts are reported in.
var slipParts = []string{"producer", "store", "timers", "gateway"}

// account is the slip of every part against tol.
func (m *slipMeter) account(tol time.Duration) *oracle.Slip {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := &oracle.Slip{ToleranceMs: ms(tol)}
	for _, what := range slipParts {
		ds := slices.Clone(m.samples[what])
		if len(ds) == 0 {
			continue
		}
		p := oracle.SlipPart{What: what, Samples: int64(len(ds)), P99Ms: ms(p99(ds)), MaxMs: ms(slices.Max(ds))}
		for _, d := range ds {
			if d > tol {
				p.Over++
			}
		}
		s.Parts = append(s.Parts, p)
	}
	return s
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// measurePace measures the machine before the drill starts: a short
// timer's lateness, and a job's round trip (enqueue, lease, ack) on the
// drill's Redis, in a namespace of its own removed afterwards.
// redisRoundTrip is the 90th percentile of 50 PINGs: a black box's own
// path through Redis is its own, so the drill measures the server's.
func redisRoundTrip(ctx context.Context, rdb *redis.Client) time.Duration {
	var rts []time.Duration
	for range 50 {
		t0 := time.Now()
		if rdb.Ping(ctx).Err() != nil {
			return 0
		}
		rts = append(rts, time.Since(t0))
	}
	return pctl(rts, 0.90)
}

func (d *drill) measurePace(ctx context.Context) (Pace, error) {
	p := Pace{Tick: MeasureTick(ctx, 100), Load: loadPerCore()}
	ns := d.ns + "-pace"
	defer func() { _ = DeleteNamespace(context.Background(), d.rdb, ns) }()
	st, err := redisstore.New(d.rdb, store.Config{Namespace: ns, EventStream: 1000})
	if err != nil {
		return p, err
	}
	var rts []time.Duration
	for i := range 50 {
		if ctx.Err() != nil {
			return p, ctx.Err()
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		t0 := time.Now()
		j := job.Job{ID: fmt.Sprintf("pace-%d", i), Task: "pace", Queue: "pace", EnqueuedAt: t0}
		err := st.Enqueue(cctx, j, t0)
		var l queue.Lease
		var ok bool
		if err == nil {
			j, l, ok, err = st.Dequeue(cctx, "pace", t0, time.Minute)
		}
		if err == nil && ok {
			j.Attempts++
			err = st.Ack(cctx, l, j, t0)
		}
		cancel()
		if err != nil {
			return p, fmt.Errorf("%w: measuring a job's round trip: %w", ErrUnavailable, err)
		}
		rts = append(rts, time.Since(t0))
	}
	p.RoundTrip = pctl(rts, 0.90)
	// A burst as the producer makes it: paceBurst jobs due at once.
	jobs := make([]job.Job, paceBurst)
	t0 := time.Now()
	for i := range jobs {
		jobs[i] = job.Job{ID: fmt.Sprintf("burst-%d", i), Task: "pace", Queue: "pace-burst", EnqueuedAt: t0}
	}
	var mu sync.Mutex
	var failed error
	forChunks(ctx, paceBurst, func(lo, hi int) {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		for _, err := range st.EnqueueMany(cctx, jobs[lo:hi], t0) {
			if err != nil {
				mu.Lock()
				failed = err
				mu.Unlock()
			}
		}
	})
	if failed != nil {
		return p, fmt.Errorf("%w: measuring a burst of enqueues: %w", ErrUnavailable, failed)
	}
	p.Enqueue = time.Since(t0) / paceBurst
	return p, nil
}

// paceBurst is how many enqueues measurePace makes at once.
const paceBurst = 500

// measureStart is how long the worker binary takes to start and exit
// (--version), 0 when it cannot tell: how long a worker process needs
// to come up on this machine, as it is loaded now.
func (d *drill) measureStart(ctx context.Context) time.Duration {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	t0 := time.Now()
	if err := exec.CommandContext(cctx, d.opts.WorkerPath, "--version").Run(); err != nil {
		return 0
	}
	return time.Since(t0)
}

// loadPerCore is the 1-minute load average over the cores (Linux's
// /proc/loadavg), 0 when it cannot be read.
func loadPerCore() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	l, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0
	}
	return l / float64(runtime.NumCPU())
}

// autogroupPath is the Linux setting that schedules CPU time by session.
const autogroupPath = "/proc/sys/kernel/sched_autogroup_enabled"

// machineNote names a machine setting known to make drills fall behind
// beside busy neighbours, or "". Measured on the project's 2-core VM
// (Linux 6.18): with autogroup on, a Redis started in a session of its own
// sat runnable without running for 1-10 s at a time while a drill ran
// beside two CPU-bound processes (enqueues timing out at 5 s, PING up to
// 10 s); with it off, the same drill at the same scale passed with a
// store p99 of 4 ms.
func machineNote() string {
	b, err := os.ReadFile(autogroupPath)
	if err != nil || strings.TrimSpace(string(b)) != "1" {
		return ""
	}
	return "this kernel shares CPU by session (kernel.sched_autogroup_enabled=1): beside busy neighbours it can leave a Redis in a session of its own waiting for seconds; sysctl -w kernel.sched_autogroup_enabled=0 on the drill's machine, or drill where nothing else runs"
}
