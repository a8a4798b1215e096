package drill

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
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
	"github.com/faultline/faultline/reference/clock"
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
