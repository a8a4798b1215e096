package drill

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/drill/gateway"
	"github.com/faultline/faultline/drill/proxy"
	"github.com/faultline/faultline/drill/receiver"
	"github.com/faultline/faultline/drill/supervisor"
	"github.com/faultline/faultline/drill/workerproc"
	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/metrics"
	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/alert/sink"
	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/reference/worker"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
	"github.com/faultline/faultline/sim"
)

// ErrUnavailable is matched by the error of a drill that could not reach
// its Redis.
var ErrUnavailable = errors.New("redis unavailable")

// ErrSteadyState is matched by the error of a drill that found the system
// unhealthy before any fault started, and refused to judge it.
var ErrSteadyState = errors.New("steady state not reached")

// Defaults of Options.
const (
	DefaultEventStream = 2_000_000
	// MinWallInterval is the shortest wall-clock interval a drill's timers
	// are trusted to honour on a loaded machine: a scale that brings a
	// scenario's shortest interval below it is refused.
	MinWallInterval = 2 * time.Millisecond
)

// Options configure a drill.
type Options struct {
	// RedisURL is the Redis to drill (redis://host:port/db); Namespace
	// its namespace ("" = a fresh "drill-<scenario>-<random>"; a given one
	// must hold no keys); AllowRemote lets RedisURL be off loopback.
	RedisURL    string
	Namespace   string
	AllowRemote bool
	// NamespaceMadeUp says the caller made Namespace up (NewNamespace)
	// rather than the user giving it: a black-box drill then also removes
	// every key that holds it anywhere (asynq's asynq:{QUEUE}:...).
	NamespaceMadeUp bool
	// Workers is the number of worker processes (0 = the scenario's
	// workers.processes); Concurrency the worker slots each runs (0 = the
	// scenario's slots spread over its processes, as the simulator spreads
	// them). See Fleet.
	Workers     int
	Concurrency int
	// Scale is the time scale (default 1); AutoScale picks it before the
	// drill starts instead (AutoScale and Pace: the machine's measured
	// timer and round trip), and Scale is then ignored.
	Scale     float64
	AutoScale bool
	// Settle bounds, in scenario time, how long after the scenario's end
	// the system is given to finish what it holds before the last look
	// (default: a tenth of the duration, at least a minute).
	Settle time.Duration
	// Seed replaces the scenario's seed when not nil.
	Seed *uint64
	// WorkerPath and WorkerArgs start a worker process; the drill appends
	// "--config FILE". Default: this executable, "worker".
	WorkerPath string
	WorkerArgs []string
	// Dir holds the workers' configurations and logs ("" = a temporary
	// directory, removed at the end unless Keep).
	Dir string
	// Keep leaves the namespace's keys (and Dir) behind.
	Keep bool
	// Broken makes the workers deliberately broken (see
	// workerproc.Config.Broken): for the drill's own specs.
	Broken string
	// Progress receives a progress line about every second (nil: none).
	Progress func(Progress)
	// Logger receives the drill's own log (nil: discarded).
	Logger *slog.Logger
	// StartupTimeout bounds the workers' start: how long the drill waits
	// for the next worker process to come up when none has come up since
	// (default 15s; the whole start takes as long as the processes keep
	// coming up).
	StartupTimeout time.Duration
	// Source is where the scenario was loaded from (a path or
	// "builtin:NAME"): the workers load it again.
	Source string
	// Limits are the limits the scenario was loaded within: the workers
	// load it again within them.
	Limits scenarios.Limits
	// Listen fixes where parts listen, by part ("dependency:NAME",
	// "receiver:NAME"): a system already running is configured with
	// their URLs before the drill (ParseListen checks them).
	Listen map[string]string
	// ExternalFile is the file `--external` gave the scenario's
	// system.external from, recorded in the history so that `faultline
	// report check` judges with it again.
	ExternalFile string
	// Metrics, if set, hears the drill as it runs (jobs by disposition,
	// DLQ depth by severity, pages, breaker states, fault activity).
	Metrics *metrics.Set
}

// Progress is the drill's state at one instant, for a progress display.
type Progress struct {
	Elapsed, Duration time.Duration
	Queued, InFlight  int
	Scheduled, Held   int
	DLQ               int
	Succeeded         int
	Created           int
	ActiveFaults      []string
}

// Run drills the loaded scenario l and returns its result and history.
// The error is for a drill that could not be carried out: refused (a part
// with no live form, a Redis off loopback, a scale too fast; *RefusedError
// and ErrRefused), Redis unreachable (ErrUnavailable), the system
// unhealthy before any fault (ErrSteadyState). A canceled ctx stops the
// drill early: every fault is undone, the workers stop, and the result
// (verdict interrupted) is still returned.
func Run(ctx context.Context, l *scenarios.Loaded, opts Options) (*reports.Result, *oracle.History, error) {
	d, err := prepare(l, opts)
	if err != nil {
		return nil, nil, err
	}
	defer d.cleanup()
	if d.sc.System.External != nil {
		if err := d.startExternal(ctx); err != nil {
			return nil, nil, err
		}
		d.runExternal(ctx)
	} else {
		if err := d.start(ctx); err != nil {
			return nil, nil, err
		}
		d.run(ctx)
	}
	h := d.finish()
	res, err := oracle.Judge(context.Background(), d.sc, h)
	if err != nil {
		return nil, h, err
	}
	return res, h, nil
}

// drill is one drill's state.
type drill struct {
	opts   Options
	l      *scenarios.Loaded
	sc     scenarios.Scenario
	seed   uint64
	ns     string
	log    *slog.Logger
	dir    string
	tmpDir bool

	rdb    *redis.Client
	st     *redisstore.Store
	clk    *clock.Scaled
	origin time.Time

	inj     *faults.Injector
	locked  *gateway.Locked
	qProxy  *proxy.Proxy
	dProxy  *proxy.Proxy
	gws     []*gateway.Gateway
	rcvs    []*receiver.Receiver
	alerter *alert.Alerter
	mon     *worker.Monitor
	ar      *worker.AutoRetry
	sup     *supervisor.Supervisor
	feedSrv *http.Server
	feedLn  net.Listener
	reports chan workerproc.Report
	hellos  map[string]bool

	// faultMu orders the faults' application against the guard's abort.
	faultMu    sync.Mutex
	mu         sync.Mutex
	h          oracle.History
	snaps      []snapshot
	faultHits  map[string]int64
	faultWins  map[string][][2]int64
	active     map[string]int
	lastSnap   *snapshot
	created    int
	stopTimers []func()
	events     []redisstore.StreamEvent
	eventsLost bool
	lastID     string
	workerLogs []*os.File
	// hitsSeen are the injector's hits already told to the metrics.
	hitsSeen map[string]int64
	// claimed says this drill claimed its namespace (and may delete it);
	// claimVal is the claim it wrote, and claimUnsure says its write's
	// answer was lost (the claim may have been written: cleanup reads it
	// back and deletes the namespace if the claim is this drill's).
	claimed     bool
	claimVal    string
	claimUnsure bool
	// closing: the drill took its last look; deliveries are no more
	// recorded.
	closing bool
	// arrivals are the scenario's whole workload, planned before the
	// clock starts; produced is closed when the producer has created
	// them all (or was interrupted).
	arrivals []sim.Arrival
	produced chan struct{}
	// slip measures how far the drill's parts fall behind its clock;
	// autoWhy says how --time-scale auto chose the scale.
	slip      *slipMeter
	autoWhy   string
	startEach time.Duration
	// seen is the last report sequence number taken, per worker process.
	seen map[string]uint64
	// ext is a black-box drill's state (nil for a drill of the reference
	// worker).
	ext *extState
	// feedDone is closed when the drill stops taking reports.
	feedDone chan struct{}
	feedOnce sync.Once
}

// claimKey is the key a drill claims its namespace with.
func claimKey(ns string) string { return redisstore.Prefix(ns) + ":drill" }

type snapshot struct {
	at     time.Duration
	lastID string
	snap   redisstore.Snapshot
}

func prepare(l *scenarios.Loaded, opts Options) (*drill, error) {
	sc := l.Scenario.WithDefaults()
	if opts.Seed != nil {
		sc.Seed = *opts.Seed
	}
	if l.Document != nil && l.Document.Start == "" && sc.System.AutoRetry == nil {
		// A drill's times are the wall clock's, near enough: a scenario
		// that does not pin its start (for its time-of-day windows)
		// (an auto-retry's off-peak window) starts now, so that the DLQ of
		// a kept namespace reads today's dates, not the simulator's default
		// Monday; the history keeps the start (History.ScenarioStart) for
		// report check.
		sc.Start = time.Now().UTC().Truncate(time.Second)
	}
	if runtime.GOOS != "linux" {
		return nil, &RefusedError{Scenario: sc.Name, Part: "drill", Reason: "drills run on Linux only: worker faults are signals to process groups (SIGKILL, SIGSTOP), which " + runtime.GOOS + " does not give"}
	}
	Fleet(&sc, opts.Workers, opts.Concurrency)
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	if err := Live(&sc); err != nil {
		return nil, err
	}
	if opts.AutoScale {
		// Chosen in start, once the machine is measured; a black box runs
		// on the wall clock unless it follows the drill's scale
		// (CheckExternalScale), and then no faster than its MaxTimeScale.
		opts.Scale = 1
		opts.AutoScale = sc.System.External == nil || sc.System.External.FollowsScale()
	}
	if opts.Scale == 0 {
		opts.Scale = 1
	}
	if !(opts.Scale >= 1) || opts.Scale > 1000 {
		return nil, fmt.Errorf("--time-scale %v: takes a number from 1 to 1000", opts.Scale)
	}
	if err := CheckScale(&sc, opts.Scale); err != nil {
		return nil, err
	}
	if err := CheckExternalScale(&sc, opts.Scale); err != nil {
		return nil, err
	}
	if opts.Settle <= 0 {
		opts.Settle = max(time.Minute, sc.Duration/10)
	}
	if err := checkListenParts(&sc, opts.Listen); err != nil {
		return nil, err
	}
	if err := CheckRedisURL(opts.RedisURL, opts.AllowRemote, opts.Namespace); err != nil {
		return nil, err
	}
	if opts.StartupTimeout == 0 {
		opts.StartupTimeout = 15 * time.Second
	}
	if opts.WorkerPath == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find the faultline binary to start workers: %w", err)
		}
		opts.WorkerPath, opts.WorkerArgs = exe, []string{"worker"}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := &drill{opts: opts, l: l, sc: sc, seed: sc.Seed, log: log, reports: make(chan workerproc.Report, 4096),
		hellos: map[string]bool{}, faultHits: map[string]int64{}, faultWins: map[string][][2]int64{}, active: map[string]int{}, hitsSeen: map[string]int64{},
		seen: map[string]uint64{}, feedDone: make(chan struct{})}
	var err error
	if d.arrivals, err = planArrivals(sc); err != nil {
		return nil, fmt.Errorf("the scenario's workload: %w", err)
	}
	d.produced, d.slip = make(chan struct{}), newSlipMeter()
	d.ns = opts.Namespace
	if d.ns == "" {
		d.ns = NewNamespace(sc.Name)
	}
	if err := (store.Config{Namespace: d.ns}).Validate(); err != nil {
		return nil, fmt.Errorf("--namespace %q: %w", d.ns, err)
	}
	return d, nil
}

// Fleet sets the fleet a drill of sc (defaults applied) runs: the
// scenario's workers.processes over its workers.count slots, as the
// simulator runs them, unless --workers (processes) or --concurrency
// (slots per process) says otherwise: --workers N runs N processes over
// the scenario's slots (at least N), or N×concurrency slots with
// --concurrency; --concurrency alone gives each of the scenario's
// processes that many slots. A black box's copies (system.external.copies,
// or --workers) are its processes, one slot each. The drill, the CLI's
// checks before it and report check all set the fleet here.
func Fleet(sc *scenarios.Scenario, processes, concurrency int) {
	if x := sc.System.External; x != nil {
		if x.Copies > 0 {
			sc.Workers.Count = x.Copies
		}
		if processes > 0 {
			sc.Workers.Count = processes
		}
		sc.Workers.Processes = sc.Workers.Count
		return
	}
	switch {
	case processes > 0 && concurrency > 0:
		sc.Workers.Processes, sc.Workers.Count = processes, processes*concurrency
	case processes > 0:
		sc.Workers.Processes, sc.Workers.Count = processes, max(sc.Workers.Count, processes)
	case concurrency > 0:
		sc.Workers.Count = sc.Workers.Processes * concurrency
	}
}

// procOf names the worker process that runs the slot named slot (wN): the
// process wK, K = (N-1) mod processes + 1, as the simulator spreads them.
// A black box's copies are each their own process; a name that is not a
// slot's is returned as it is.
func (d *drill) procOf(slot string) string {
	n, err := strconv.Atoi(strings.TrimPrefix(slot, "w"))
	p := d.sc.Workers.Processes
	if err != nil || n < 1 || p < 1 || !strings.HasPrefix(slot, "w") {
		return slot
	}
	return "w" + strconv.Itoa((n-1)%p+1)
}

// askedAs is the worker name the injector is asked about for a strike of
// fault f on process n: the slot f names (which n runs), or n for a fault
// on every worker. The simulator asks the same (its strikeProc).
func askedAs(f faults.Fault, n string) string {
	if f.Target.Name != "" {
		return f.Target.Name
	}
	return n
}

// slotsOf is how many of count slots process k (from 0) of a fleet of
// processes runs: slots wN with (N-1) mod processes = k.
func slotsOf(k, count, processes int) int {
	return (count - k + processes - 1) / processes
}

// CheckExternalScale refuses a time scale other than 1 for a black-box
// system that does not declare it follows the drill's scale: one whose
// command's path, arguments or environment hold no {timeScale}. Such a
// worker sleeps real seconds, and its timeouts and backoffs do not scale:
// at another scale, faults could never land where the scenario aims them.
func CheckExternalScale(sc *scenarios.Scenario, scale float64) error {
	x := sc.System.External
	if x == nil || scale == 1 {
		return nil
	}
	if x.FollowsScale() {
		if x.MaxTimeScale > 0 && scale > x.MaxTimeScale {
			return &RefusedError{Scenario: sc.Name, Part: fmt.Sprintf("--time-scale %v", scale),
				Reason: fmt.Sprintf("the black-box system keeps its timing up to time scale %v (system.external.maxTimeScale): what it does not configure (a framework's poller, its boot) does not scale, so faults would not land where the scenario aims them; drill it at %v or slower, or with --time-scale auto", x.MaxTimeScale, x.MaxTimeScale)}
		}
		return nil
	}
	return &RefusedError{Scenario: sc.Name, Part: fmt.Sprintf("--time-scale %v", scale),
		Reason: "the black-box system does not declare that it follows the drill's time scale (no {timeScale} in its command's path, args or env): it runs on the wall clock, so drill it at scale 1, or pass {timeScale} to it and scale its sleeps, timeouts and backoffs by it"}
}

// NewNamespace returns a fresh namespace for a drill of scenario name:
// "drill-NAME-RANDOM".
func NewNamespace(name string) string {
	var b [4]byte
	_, _ = crand.Read(b[:])
	return "drill-" + name + "-" + hex.EncodeToString(b[:])
}

// CheckScale refuses a time scale at which one of sc's intervals would be
// shorter on the wall clock than MinWallInterval.
func CheckScale(sc *scenarios.Scenario, scale float64) error {
	for _, v := range Intervals(sc) {
		if wall := time.Duration(float64(v.D) / scale); wall < MinWallInterval {
			return &RefusedError{Scenario: sc.Name, Part: fmt.Sprintf("--time-scale %v", scale),
				Reason: fmt.Sprintf("%s is %s, %s on the wall clock at this scale, under the %s a drill's timers are trusted to honour; the fastest scale for this scenario is %v (a slower one leaves the workers' overhead room: see docs/drills.md, Time scale)",
					v.Name, v.D, wall, MinWallInterval, float64(v.D)/float64(MinWallInterval))}
		}
	}
	return nil
}

func (d *drill) start(ctx context.Context) (err error) {
	sc := &d.sc
	d.h = d.newHistory()
	defer func() {
		if err != nil {
			d.stopEverything()
		}
	}()
	// Redis, directly: the drill's own connection (the producer, the
	// observer, the monitor and the auto-retry) never goes through the
	// proxies.
	if err := d.claim(ctx); err != nil {
		return err
	}
	scfg := sc.StoreConfig()
	scfg.Namespace, scfg.EventStream = d.ns, DefaultEventStream
	if d.st, err = redisstore.New(d.rdb, scfg); err != nil {
		return err
	}
	addr := d.rdb.Options().Addr
	if d.qProxy, err = proxy.New("redis-queue", addr, proxy.Options{AllowRemote: d.opts.AllowRemote}); err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	if d.dProxy, err = proxy.New("redis-dlq", addr, proxy.Options{AllowRemote: d.opts.AllowRemote}); err != nil {
		return fmt.Errorf("proxy: %w", err)
	}

	// The machine's pace, measured before anything starts: a short
	// timer's lateness and a job's round trip through the store's whole
	// path. --time-scale auto picks the scale from it.
	pace, err := d.measurePace(ctx)
	if err != nil {
		return err
	}
	if d.opts.AutoScale {
		d.opts.Scale, d.autoWhy = AutoScale(sc, pace)
		d.h.TimeScale = d.opts.Scale
		d.log.Info("time scale chosen", "scale", d.opts.Scale, "why", d.autoWhy)
	}
	if d.opts.Scale > 1 {
		if tol := Tolerance(sc, d.opts.Scale); tol < pace.Tick {
			iv, _ := shortest(Intervals(sc))
			return &RefusedError{Scenario: sc.Name, Part: fmt.Sprintf("--time-scale %v", d.opts.Scale),
				Reason: fmt.Sprintf("%s is %s, so this scale allows a slip of %s on the wall clock, under this machine's measured timer tick of %s: the drill could never keep pace (--time-scale auto picks a scale it can hold)",
					iv.Name, iv.D, tol, pace.Tick)}
		}
	}
	// The scenario's clock starts a little ahead, when the workers are
	// up: a process's start, measured here, times the fleet.
	lead := 800*time.Millisecond + 100*time.Millisecond*time.Duration(sc.Workers.Processes)
	if d.startEach = d.measureStart(ctx); d.startEach > 0 {
		lead = max(lead, 800*time.Millisecond+d.startEach*time.Duration(sc.Workers.Processes))
	}
	if err := d.startClock(lead); err != nil {
		return err
	}
	now := d.clk.Elapsed

	gwURLs, err := d.startGateways(now)
	if err != nil {
		return err
	}
	var names []string
	for _, r := range sc.System.Alerts.Receivers {
		names = append(names, r.Name)
	}
	rcvURL, err := d.startReceivers(now, names, receiverKind)
	if err != nil {
		return err
	}
	acfg := sc.AlertConfig(func(name string) alert.Sink {
		var real alert.Sink
		var err error
		if receiverKind(name) == receiver.Webhook {
			real, err = sink.NewWebhook(sink.WebhookConfig{URL: rcvURL[name]})
		} else {
			real, err = sink.NewSlack(sink.SlackConfig{URL: rcvURL[name]})
		}
		if err != nil {
			d.log.Error("sink", "receiver", name, "err", err)
			return nil
		}
		return &recordingSink{d: d, name: name, real: real}
	})
	if d.alerter, err = alert.New(acfg, d.clk, sim.NewStream(d.seed, "alert")); err != nil {
		return fmt.Errorf("alerter: %w", err)
	}
	env := sim.Env{Clock: d.clk, Scenario: sc, Rand: func(name string) *rand.Rand { return sim.NewStream(d.seed, name) }}
	if sc.System.Monitor != nil {
		if d.mon, err = worker.NewMonitor(sc.MonitorConfig(d.st, d.alerter, d.ns, env.Clock)); err != nil {
			return fmt.Errorf("monitor: %w", err)
		}
	}
	if sc.System.AutoRetry != nil {
		if d.ar, err = worker.NewAutoRetry(sc.AutoRetryConfig(d.st, env.Clock)); err != nil {
			return fmt.Errorf("auto-retry: %w", err)
		}
	}

	// The feed the workers report to.
	if d.feedLn, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /report", d.feed)
	d.feedSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = d.feedSrv.Serve(d.feedLn) }()

	// The workers.
	if err := d.makeWorkDir(); err != nil {
		return err
	}
	qURL := redisURLVia(d.opts.RedisURL, d.qProxy.Addr())
	dURL := redisURLVia(d.opts.RedisURL, d.dProxy.Addr())
	var specs []supervisor.Spec
	for i := range sc.Workers.Processes {
		// A process is named by its first slot: worker faults name slots,
		// and strike the process that runs it (procOf).
		name := "w" + strconv.Itoa(i+1)
		d.h.Workers = append(d.h.Workers, name)
		// The Redis URLs (a password, maybe) go in the environment, not
		// the file, which --keep leaves behind.
		cfg := &workerproc.Config{Name: name, Source: d.opts.Source, Hash: d.l.Hash, Seed: d.seed,
			Namespace: d.ns, EventStream: DefaultEventStream, Start: sc.Start, Origin: d.origin, Scale: d.opts.Scale,
			Gateways: gwURLs, CallTimeout: 30 * time.Second, Feed: "http://" + d.feedLn.Addr().String() + "/report",
			Concurrency: slotsOf(i, sc.Workers.Count, sc.Workers.Processes), Broken: d.opts.Broken, Limits: &d.opts.Limits}
		path := filepath.Join(d.dir, name+".json")
		if err := workerproc.WriteConfig(path, cfg); err != nil {
			return err
		}
		logf, err := os.Create(filepath.Join(d.dir, name+".log"))
		if err != nil {
			return err
		}
		d.workerLogs = append(d.workerLogs, logf)
		env := append(os.Environ(), workerproc.EnvRedisURL+"="+qURL, workerproc.EnvDLQRedisURL+"="+dURL)
		specs = append(specs, supervisor.Spec{Name: name, Path: d.opts.WorkerPath, Args: append(append([]string(nil), d.opts.WorkerArgs...), "--config", path),
			Env: env, Stdout: logf, Stderr: logf})
	}
	if d.sup, err = supervisor.New(specs, supervisor.Options{Logger: d.log}); err != nil {
		return err
	}
	if err := d.sup.Start(ctx); err != nil {
		return fmt.Errorf("start the workers: %w", err)
	}
	// Steady state: every worker up and through the proxy to Redis before
	// the scenario's clock starts. The wait scales with the machine: it
	// lasts as long as processes keep coming up, and gives up only when
	// none has for StartupTimeout.
	started := time.Now()
	deadline := time.NewTimer(max(lead, d.opts.StartupTimeout))
	defer deadline.Stop()
	for len(d.hellos) < sc.Workers.Processes {
		select {
		case r := <-d.reports:
			n := len(d.hellos)
			d.take(r)
			if len(d.hellos) > n {
				deadline.Reset(d.opts.StartupTimeout)
			}
		case <-deadline.C:
			var missing []string
			for _, n := range d.h.Workers {
				if !d.hellos[n] {
					missing = append(missing, n)
				}
			}
			return fmt.Errorf("%w: waiting for the worker processes to come up (each connects to Redis through the drill's proxy and reports to the drill): %d of %d came up in %s, then none for %s; %s did not (logs in %s)",
				ErrSteadyState, len(d.hellos), sc.Workers.Processes, time.Since(started).Round(time.Millisecond), d.opts.StartupTimeout, strings.Join(missing, ", "), d.dir)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if late := time.Since(d.origin); late > 0 {
		d.h.Notes = append(d.h.Notes, fmt.Sprintf("the worker processes came up %s after the scenario's clock started (one process's start was measured as %s)", late.Round(time.Millisecond), d.startEach.Round(time.Millisecond)))
	}
	for _, p := range []*proxy.Proxy{d.qProxy, d.dProxy} {
		if err := canary(ctx, redisURLVia(d.opts.RedisURL, p.Addr()), d.ns+"-canary"); err != nil {
			return fmt.Errorf("%w: a canary job through the drill's proxy %s: %w", ErrSteadyState, p.Addr(), err)
		}
	}
	return nil
}

// claim connects to the drill's Redis, checks that the namespace holds no
// key and claims it: only a namespace this drill claimed is ever deleted,
// on any exit path.
func (d *drill) claim(ctx context.Context) error {
	sc := &d.sc
	d.rdb = redisstore.NewClient(d.opts.RedisURL)
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := d.rdb.Ping(pctx).Err(); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrUnavailable, maskURL(d.opts.RedisURL), err)
	}
	// The claim names this drill's process and host, so that `faultline
	// drill cleanup` can tell, after the worst exit, that it is gone.
	host, err := LocalHost()
	if err != nil {
		return fmt.Errorf("claim namespace %s: %w", d.ns, err)
	}
	// The namespace must be empty (every key scanned, not one page), and
	// is then claimed: only a namespace this drill claimed is ever
	// deleted, on any exit path.
	var cursor uint64
	for {
		keys, next, err := d.rdb.Scan(pctx, cursor, redisstore.Prefix(d.ns)+"*", 1000).Result()
		if err != nil {
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		if len(keys) > 0 {
			// Whose they are, and the command that removes them.
			why := ""
			if st, err := ReadClaim(pctx, d.rdb, d.ns, host); err == nil {
				why = "; " + st.Describe()
				if st.Liveness == Running {
					why += " (stopped with SIGTERM or Ctrl-C, it removes its keys itself)"
				}
				why += ". " + CleanupHint(d.opts.RedisURL, d.opts.AllowRemote, st)
			}
			return fmt.Errorf("%w: namespace %q already holds keys (e.g. %s): a drill starts from an empty namespace, so that nothing in its DLQ is anything it did not put there, and it never deletes what it did not write%s", ErrSteadyState, d.ns, keys[0], why)
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	// The work folder first: the claim names a temporary one, which
	// cleanup removes with the namespace after the worst exit.
	if err := d.makeWorkDir(); err != nil {
		return err
	}
	c := NewClaim(sc.Name, host, time.Now())
	if d.tmpDir {
		c.Dir = d.dir
	}
	val, err := EncodeClaim(c)
	if err != nil {
		return err
	}
	d.claimVal = val
	ok, err := d.rdb.SetNX(pctx, claimKey(d.ns), val, 0).Result()
	if err != nil {
		// The write may have landed and its answer been lost (a killed
		// connection): cleanup reads the claim back.
		d.claimUnsure = true
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if !ok {
		return fmt.Errorf("%w: namespace %q was claimed by another drill as this one started", ErrSteadyState, d.ns)
	}
	d.claimed = true
	return nil
}

// newHistory is a drill's history before it observed anything.
func (d *drill) newHistory() oracle.History {
	sc := &d.sc
	return oracle.History{Version: oracle.HistoryVersion, Scenario: sc.Name, Source: d.opts.Source, SourceSHA256: d.l.Hash, Seed: d.seed, Namespace: d.ns,
		TimeScale: d.opts.Scale, DurationMs: sc.Duration.Milliseconds(), ScenarioStart: sc.Start}
}

// makeWorkDir makes the drill's work directory (the processes' files and
// logs): Options.Dir, or a temporary one removed at the end.
func (d *drill) makeWorkDir() error {
	if d.dir != "" {
		return nil // made as the namespace was claimed
	}
	if d.opts.Dir == "" {
		dir, err := os.MkdirTemp("", "faultline-drill-")
		if err != nil {
			return err
		}
		d.dir, d.tmpDir = dir, true
		return nil
	}
	d.dir = d.opts.Dir
	return os.MkdirAll(d.dir, 0o700)
}

// startClock starts the scenario's scaled clock lead from now, and the
// fault injector the gateways and receivers share.
func (d *drill) startClock(lead time.Duration) error {
	d.origin = time.Now().Add(lead)
	d.h.StartedAt = d.origin.UTC()
	d.clk, _ = clock.NewScaled(d.sc.Start, d.origin, d.opts.Scale, nil)
	in, err := faults.NewInjector(d.seed, d.sc.Faults)
	if err != nil {
		return err
	}
	d.inj, d.locked = in, gateway.NewLocked(in)
	return nil
}

// startGateways starts a fault gateway per dependency (declared, or named
// by a task) and returns their base URLs by name.
func (d *drill) startGateways(now func() time.Duration) (map[string]string, error) {
	sc := &d.sc
	urls := map[string]string{}
	deps := slices.Clone(sc.Dependencies)
	for _, t := range sc.Workload.Tasks { // a task's dependency needs no declaration
		if t.Dependency != "" && !slices.ContainsFunc(deps, func(d scenarios.DependencySpec) bool { return d.Name == t.Dependency }) {
			deps = append(deps, scenarios.DependencySpec{Name: t.Dependency})
		}
	}
	for _, dep := range deps {
		g, err := gateway.New(gateway.Config{Name: dep.Name, Faults: d.locked, Now: now, Scale: d.opts.Scale, Payment: dep.Payment, IgnoresIdempotencyKeys: dep.IgnoresIdempotencyKeys,
			Listen: d.opts.Listen["dependency:"+dep.Name]})
		if err == nil {
			err = g.Start()
		}
		if err != nil {
			return nil, fmt.Errorf("gateway %s: %w", dep.Name, err)
		}
		d.gws = append(d.gws, g)
		urls[dep.Name] = g.URL()
	}
	return urls, nil
}

// receiverKind is the kind of the reference alerter's receiver name: a
// PagerDuty-shaped webhook for a name with "pager" in it, else Slack.
func receiverKind(name string) receiver.Kind {
	if strings.Contains(strings.ToLower(name), "pager") {
		return receiver.Webhook
	}
	return receiver.Slack
}

// startReceivers starts a receiver per name and returns their URLs.
func (d *drill) startReceivers(now func() time.Duration, names []string, kind func(string) receiver.Kind) (map[string]string, error) {
	urls := map[string]string{}
	for _, name := range names {
		rc, err := receiver.New(receiver.Config{Name: name, Kind: kind(name), Faults: d.locked, Now: now, Scale: d.opts.Scale, Listen: d.opts.Listen["receiver:"+name]})
		if err == nil {
			err = rc.Start()
		}
		if err != nil {
			return nil, fmt.Errorf("receiver %s: %w", name, err)
		}
		d.rcvs = append(d.rcvs, rc)
		urls[name] = rc.URL()
	}
	return urls, nil
}

// canary sends one job through the store's whole path on url — enqueue,
// lease, ack, its three moves read back from the event stream — in a
// namespace of its own, removed afterwards: jobs flow before any fault
// starts.
func canary(ctx context.Context, url, ns string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c := redisstore.NewClient(url)
	defer c.Close()
	defer func() { _ = DeleteNamespace(context.Background(), c, ns) }()
	st, err := redisstore.New(c, store.Config{Namespace: ns, EventStream: 100})
	if err != nil {
		return err
	}
	now := time.Now()
	j := job.Job{ID: "canary", Task: "canary", Queue: "canary", EnqueuedAt: now}
	if err := st.Enqueue(ctx, j, now); err != nil {
		return fmt.Errorf("enqueue: %w", err)
	}
	got, l, ok, err := st.Dequeue(ctx, "canary", now, time.Minute)
	if err != nil || !ok {
		return fmt.Errorf("lease: found %v: %w", ok, err)
	}
	got.Attempts++
	if err := st.Ack(ctx, l, got, now); err != nil {
		return fmt.Errorf("ack: %w", err)
	}
	evs, err := st.ReadEvents(ctx, redisstore.StreamStart, 10, 0)
	if err != nil {
		return fmt.Errorf("event stream: %w", err)
	}
	if len(evs) != 3 {
		return fmt.Errorf("event stream: %d events for enqueue, lease and ack, want 3", len(evs))
	}
	return nil
}

// redisURLVia is raw with its host and port replaced by addr.
func redisURLVia(raw, addr string) string {
	if !strings.Contains(raw, "://") {
		return "redis://" + addr
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "redis://" + addr
	}
	u.Host = addr
	return u.String()
}

// ParseListen reads --listen values, PART=HOST:PORT with PART
// dependency:NAME or receiver:NAME; the host must be on loopback unless
// allowRemote.
func ParseListen(values []string, allowRemote bool) (map[string]string, error) {
	out := map[string]string{}
	for _, v := range values {
		part, addr, ok := strings.Cut(v, "=")
		kind, name, kindOK := strings.Cut(part, ":")
		if !ok || !kindOK || name == "" || (kind != "dependency" && kind != "receiver") {
			return nil, fmt.Errorf("--listen %q: takes PART=HOST:PORT, PART being dependency:NAME or receiver:NAME (e.g. dependency:payments=127.0.0.1:18080)", v)
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("--listen %s: %q is not HOST:PORT", part, addr)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("--listen %s: port %q: takes 1 to 65535", part, port)
		}
		if !isLoopback(host) && !allowRemote {
			return nil, fmt.Errorf("--listen %s: %s is not on loopback: a drill's parts listen on loopback unless --allow-remote", part, host)
		}
		if _, dup := out[part]; dup {
			return nil, fmt.Errorf("--listen %s: given twice", part)
		}
		out[part] = addr
	}
	return out, nil
}

// checkListenParts refuses a --listen part the drill does not have.
func checkListenParts(sc *scenarios.Scenario, listen map[string]string) error {
	have := map[string]bool{}
	for _, d := range sc.Dependencies {
		have["dependency:"+d.Name] = true
	}
	for _, t := range sc.Workload.Tasks {
		if t.Dependency != "" {
			have["dependency:"+t.Dependency] = true
		}
	}
	for _, r := range sc.System.Alerts.Receivers {
		have["receiver:"+r.Name] = true
	}
	if sc.System.External != nil {
		have["receiver:"+DefaultReceiver] = true
	}
	for part := range listen {
		if !have[part] {
			names := make([]string, 0, len(have))
			for h := range have {
				names = append(names, h)
			}
			slices.Sort(names)
			return fmt.Errorf("--listen %s: scenario %s has no such part (it has %s)", part, sc.Name, strings.Join(names, ", "))
		}
	}
	return nil
}
