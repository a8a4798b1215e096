package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/drill"
	"github.com/faultline/faultline/drill/workerproc"
	"github.com/faultline/faultline/metrics"
	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/redact"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
)

type drillFlags struct {
	redisURL    string
	namespace   string
	allowRemote bool
	workers     int
	concurrency int
	scale       float64
	scaleFlag   string
	autoScale   bool
	settle      time.Duration
	all         bool
	seed        uint64
	report      string
	reportDir   string
	dryRun      bool
	keep        bool
	historyRaw  bool
	progress    string
	metrics     string
	external    string
	listen      []string
	limits      limitFlags
}

func newDrillCommand() *cobra.Command {
	var f drillFlags
	c := &cobra.Command{
		Use:   "drill (FILE | BUILTIN)... --redis-url URL",
		Short: "Run scenarios as staging drills: real worker processes, a real Redis, real HTTP dependencies, on the wall clock",
		Long: `Run scenario files and built-ins as staging drills, on the wall clock (scaled by
--time-scale): faultline starts N worker processes (faultline worker) on the Redis at
--redis-url, a fault gateway (an HTTP server) per dependency, an alert receiver per
receiver, and an embedded Toxiproxy between the workers and Redis; it enqueues the
scenario's jobs, applies its faults to the real parts (SIGKILL and SIGSTOP for worker
faults, the proxy for store faults, the gateways' answers for dependency faults), and
judges what it observed with the simulator's invariants and the scenario's expectations.

A drill touches only its namespace (a fresh one unless --namespace), and removes its
keys at the end unless --keep; faultline drill cleanup removes the namespace of a drill
that died (SIGKILL) before it could. It refuses a Redis off loopback unless --allow-remote
with an explicit --namespace, and a scenario part that has no live form (it says which).
Ctrl-C undoes every fault, stops the workers and still writes the report.

The report is marked "wall clock — not reproducible to the byte"; the history of what
was observed is written beside it (--report-dir), and faultline report check HISTORY
judges it again. Linux only.

--time-scale auto (the default) measures the machine first (a short timer's lateness,
a job's round trip through Redis) and picks the fastest scale, up to 50, whose
tolerance is four times that slip; a black box runs at 1 unless its command takes
{timeScale}. A fixed --time-scale K stays K; one the machine could never hold (its
tolerance under the measured timer tick) is refused. The producer creates every job of
the scenario's workload, late rather than never. After the scenario's end the system is
given --settle to finish what it holds before the drill's last look.

A drill whose harness could not keep pace with its time scale (producer lag, timer
lateness, the gateways' own answers past the scale's tolerance) is inconclusive: its
expectations are judged and shown, with the slip measured, but it is neither a pass
nor a failure (an invariant violated is the system's at any pace: that stays a FAIL).

Exit codes: 0 every drill passed; 1 an expectation or invariant failed (or the drill
was interrupted); 2 invalid input, or a drill refused; 3 an internal error; 4 Redis
could not be reached; 5 a drill was inconclusive and none failed.`,
		Example: `  faultline drill payment-challenge --redis-url redis://127.0.0.1:6379/0 --time-scale 10
  faultline drill worker-crash --redis-url 127.0.0.1:6379 --workers 4 --report json,html
  faultline drill --all --redis-url 127.0.0.1:6379 --report junit
  faultline drill my-scenario.yaml --redis-url 127.0.0.1:6379 --dry-run
  faultline drill misconfigured-pager --external my-system.yaml --redis-url 127.0.0.1:6379`,
		Args: func(c *cobra.Command, args []string) error {
			switch {
			case f.all && len(args) > 0:
				return usage(c, errors.New("--all drills every built-in that runs live: give it no scenario"))
			case !f.all && len(args) == 0:
				return usage(c, errors.New("drill needs scenario files or built-in names (faultline list), or --all"))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if f.all {
				args = liveBuiltins(c.ErrOrStderr())
			}
			return runDrills(c.Context(), c, args, f)
		},
	}
	fl := c.Flags()
	addRedisFlag(c, &f.redisURL, "the Redis to drill")
	fl.BoolVar(&f.all, "all", false, "drill every built-in that runs live, in a row, and print a table of their verdicts (a team's staging Redis against the whole library)")
	fl.StringVar(&f.namespace, "namespace", "", "the drill's namespace (default: a fresh drill-<scenario>-<random>); it must hold no keys")
	fl.BoolVar(&f.allowRemote, "allow-remote", false, "allow a Redis off loopback (needs --namespace)")
	fl.IntVar(&f.workers, "workers", 0, "worker processes (default: the scenario's workers.processes, min(count, 8) unless it says), over the scenario's worker slots (at least one each)")
	fl.IntVar(&f.concurrency, "concurrency", 0, "worker slots (jobs at once) per process (default: the scenario's slots spread over its processes)")
	fl.StringVar(&f.scaleFlag, "time-scale", "auto", "run scenario time this many times faster than the wall clock: auto (measured: see above), or 1 to 1000")
	fl.DurationVar(&f.settle, "settle", 0, "after the scenario's end, give the system up to this long (scenario time) to finish what it holds before the last look (default: a tenth of the duration, at least 1m)")
	fl.Uint64Var(&f.seed, "seed", 0, "drill with this seed instead of the scenario's own")
	fl.StringVar(&f.report, "report", "", "write reports in these formats (comma-separated): json, junit, md, html")
	fl.StringVar(&f.reportDir, "report-dir", "faultline-reports", "where --report and the drill's history are written")
	fl.BoolVar(&f.dryRun, "dry-run", false, "print each drill's fault timeline and touch nothing")
	fl.BoolVar(&f.keep, "keep", false, "leave the namespace's keys (and the workers' logs) behind")
	fl.BoolVar(&f.historyRaw, "history-raw", false, "write the drill's history as observed, secrets and payloads unmasked (mode 0600); by default each secret is replaced by a keyed hash")
	fl.StringVar(&f.progress, "progress", "auto", "a progress line on stderr: auto (on a terminal), always or never")
	fl.StringVar(&f.metrics, "metrics-listen", "", "serve the drill's Prometheus metrics at http://ADDR/metrics (loopback unless --allow-remote), e.g. 127.0.0.1:9464")
	fl.StringArrayVar(&f.listen, "listen", nil, "fix where a part listens, `PART=HOST:PORT` with PART dependency:NAME or receiver:NAME (repeatable; loopback unless --allow-remote): a system already running (running: true) is configured with these URLs before the drill")
	fl.StringVar(&f.external, "external", "", "drill your own system as a black box: `FILE` gives its system.external (a Fragment, or a bare mapping of its keys; relative commands from FILE's folder), replacing each scenario's")
	f.limits.register(fl)
	c.AddCommand(newDrillCleanupCommand())
	return c
}

func runDrills(ctx context.Context, c *cobra.Command, args []string, f drillFlags) error {
	stdout, stderr := c.OutOrStdout(), c.ErrOrStderr()
	if f.workers < 0 {
		return usage(c, fmt.Errorf("--workers %d: takes a number of worker processes ≥ 1 (0: the scenario's own)", f.workers))
	}
	if f.concurrency < 0 {
		return usage(c, fmt.Errorf("--concurrency %d: takes a number of slots per process ≥ 1 (0: the scenario's own)", f.concurrency))
	}
	if f.scaleFlag == "auto" {
		f.scale, f.autoScale = 1, true
	} else if v, err := strconv.ParseFloat(f.scaleFlag, 64); err != nil || !(v >= 1 && v <= 1000) {
		return usage(c, fmt.Errorf("--time-scale %q: takes auto, or a number from 1 to 1000", f.scaleFlag))
	} else {
		f.scale = v
	}
	if f.settle < 0 {
		return usage(c, fmt.Errorf("--settle %s: takes a duration ≥ 0 (0: the default)", f.settle))
	}
	if f.progress != "auto" && f.progress != "always" && f.progress != "never" {
		return usage(c, fmt.Errorf("--progress %q: takes auto, always or never", f.progress))
	}
	formats, err := reportFormats(f.report)
	if err != nil {
		return usage(c, err)
	}
	rt, err := parseRedisURL(f.redisURL)
	if err != nil {
		return usage(c, err)
	}
	if err := drill.CheckRedisURL(rt.url, f.allowRemote, f.namespace); err != nil {
		return usage(c, err)
	}
	if f.namespace != "" {
		if err := (store.Config{Namespace: f.namespace}).Validate(); err != nil {
			return usage(c, fmt.Errorf("--namespace %q: takes 1-64 letters, digits, '-', '_' and '.'", masked(f.namespace)))
		}
	}
	if f.metrics != "" {
		if err := metrics.CheckListenAddr(f.metrics, f.allowRemote); err != nil {
			return usage(c, fmt.Errorf("--metrics-listen: %w", err))
		}
	}
	lim, err := f.limits.limits()
	if err != nil {
		return usage(c, err)
	}
	targets, err := resolve(args, false, lim)
	if err != nil {
		return err
	}
	if f.external != "" {
		if err := withExternal(targets, f.external); err != nil {
			return err
		}
	}
	var seed *uint64
	if c.Flags().Changed("seed") {
		seed = &f.seed
	}
	listen, err := drill.ParseListen(f.listen, f.allowRemote)
	if err != nil {
		return usage(c, err)
	}
	// Every part with no live form is refused before anything starts.
	for _, t := range targets {
		sc := t.loaded.Scenario.WithDefaults()
		drill.Fleet(&sc, f.workers, f.concurrency)
		if err := sc.Validate(); err != nil {
			return &InvalidInputError{Err: fmt.Errorf("%s: %w", t.arg, err)}
		}
		if err := drill.Live(&sc); err != nil {
			return &InvalidInputError{Err: err, Hint: "See the table of built-ins in docs/drills.md: which run live, and why the others do not."}
		}
		if err := drill.CheckScale(&sc, f.scale); err != nil {
			return &InvalidInputError{Err: err}
		}
		if !f.autoScale {
			if err := drill.CheckExternalScale(&sc, f.scale); err != nil {
				return &InvalidInputError{Err: err}
			}
		}
	}
	if f.dryRun {
		for _, t := range targets {
			sc := t.loaded.Scenario.WithDefaults()
			s := sc.Seed
			if seed != nil {
				s = *seed
			}
			if f.autoScale && (sc.System.External == nil || sc.System.External.FollowsScale()) {
				fmt.Fprintf(stdout, "drill %s (seed %d, %s at a time scale measured when it starts): fault timeline\n", masked(sc.Name), s, sc.Duration)
			} else {
				fmt.Fprintf(stdout, "drill %s (seed %d, %s at time scale %v = %s on the wall clock): fault timeline\n",
					masked(sc.Name), s, sc.Duration, f.scale, time.Duration(float64(sc.Duration)/f.scale).Round(time.Millisecond))
			}
			acts := drill.Timeline(&sc, s, 200)
			if len(acts) == 0 {
				fmt.Fprintln(stdout, "  (no faults)")
			}
			for _, a := range acts {
				fmt.Fprintf(stdout, "  %9s  %-24s %s\n", fmtMs(a.At.Milliseconds()), masked(a.Fault), masked(a.What))
			}
		}
		return nil
	}
	if err := checkOutputDir("--report-dir", f.reportDir); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	quietRedisLogs()
	failed, inconclusive := false, false
	used := map[string]int{}
	var rows []drillRow
	defer func() {
		if len(targets) > 1 {
			writeDrillTable(stdout, rows)
		}
	}()
	for _, t := range targets {
		began := time.Now()
		show := f.progress == "always" || f.progress == "auto" && isTerminal(os.Stderr)
		ns, madeUp := f.namespace, false
		if ns == "" {
			ns, madeUp = drill.NewNamespace(t.loaded.Scenario.Name), true
		}
		opts := drill.Options{RedisURL: rt.url, Namespace: ns, NamespaceMadeUp: madeUp, AllowRemote: f.allowRemote, Workers: f.workers,
			Concurrency: f.concurrency, Scale: f.scale, AutoScale: f.autoScale, Settle: f.settle, Seed: seed, Keep: f.keep, Source: t.file, Limits: lim, ExternalFile: absPath(f.external), Listen: listen}
		if show {
			opts.Progress = func(p drill.Progress) { progressLine(stderr, t.loaded.Scenario.Name, p) }
		}
		stopMetrics := func() {}
		if f.metrics != "" {
			opts.Metrics = metrics.New(metrics.Labels{Namespace: ns, Scenario: t.loaded.Scenario.Name})
			mctx, cancel := context.WithCancel(ctx)
			srv, err := metrics.Serve(mctx, f.metrics, opts.Metrics.Handler(), f.allowRemote)
			if err != nil {
				cancel()
				return &InvalidInputError{Err: fmt.Errorf("--metrics-listen: %w", err)}
			}
			fmt.Fprintf(stderr, "metrics of drill %s: %s\n", masked(t.loaded.Scenario.Name), srv.URL())
			stopMetrics = func() { cancel(); _ = srv.Wait() } // before the next drill takes the port
		}
		res, h, err := drill.Run(ctx, t.loaded, opts)
		stopMetrics()
		if show {
			fmt.Fprint(stderr, "\r\033[K")
		}
		if err != nil {
			switch {
			case errors.Is(err, drill.ErrUnavailable) && redisRefusedUs(err):
				// Redis was reached and said no: the URL is wrong, not
				// the network.
				return &InvalidInputError{Err: fmt.Errorf("--redis-url: Redis at %s refused: %w", rt.addr, err)}
			case errors.Is(err, drill.ErrUnavailable):
				return &UnavailableError{Service: "Redis", Addr: rt.addr, Op: "connect", Err: err}
			case errors.Is(err, drill.ErrRefused), errors.Is(err, drill.ErrSteadyState):
				return &InvalidInputError{Err: err}
			case ctx.Err() != nil:
				// Stopped while it started: nothing ran, nothing to judge.
				fmt.Fprintf(stderr, "drill %s interrupted before its scenario started\n", masked(t.loaded.Scenario.Name))
				return fmt.Errorf("%w: not a pass: %w", ErrInterrupted, ErrChecksFailed)
			}
			return fmt.Errorf("drill %s: %w", t.arg, err)
		}
		scenarios.Annotate(res, t.loaded, t.file)
		res.Warnings = append([]string{oracle.LiveNote(h.TimeScale)}, res.Warnings...)
		res.Reproduce = drillCommand(t.arg, res.Seed, h.TimeScale, f, rt.printable())
		h.Reproduce = res.Reproduce // report check prints it again
		if err := writeReportText(stdout, res, colorFor(stdout)); err != nil {
			return err
		}
		name := safeName(res.Scenario) + "-drill"
		if n := used[name]; n > 0 { // two scenarios of one name in one call: both kept
			used[name]++
			name = fmt.Sprintf("%s-%d", name, n+1)
		} else {
			used[name] = 1
		}
		base := filepath.Join(f.reportDir, name)
		if err := writeHistory(base+".history.json", h, f.historyRaw, t.loaded.Scenario.Invariants.Secrets); err != nil {
			return err
		}
		for _, format := range formats {
			if err := writeFile(base+"."+extension(format), func(w io.Writer) error {
				return writeFormat(w, format, []*reports.Result{res}, false)
			}); err != nil {
				return err
			}
		}
		fmt.Fprintf(stdout, "  history: %s (faultline report check re-judges it)\n", masked(base+".history.json"))
		if f.keep {
			if h != nil && h.External != nil {
				fmt.Fprintf(stdout, "  kept: namespace %s on %s (the layout's keys start with %s:; the copies' logs are where the report's warnings say)\n", masked(ns), rt.addr, masked(ns))
			} else {
				fmt.Fprintf(stdout, "  kept: namespace %s on %s (its keys are under %s)\n", masked(ns), rt.addr, masked(redisstore.Prefix(ns)))
			}
		}
		rows = append(rows, drillRowOf(res, h, time.Since(began)))
		switch {
		case res.Verdict == reports.Inconclusive:
			inconclusive = true
		case res.Failed() || res.Verdict == reports.Interrupted:
			failed = true
		}
		if ctx.Err() != nil {
			break
		}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%w: not a pass: %w", ErrInterrupted, ErrChecksFailed)
	}
	if failed {
		return ErrChecksFailed
	}
	if inconclusive {
		return errInconclusiveDrill
	}
	return nil
}

// liveBuiltins names every built-in that runs live (drill.Live), telling
// w of each that does not and why.
func liveBuiltins(w io.Writer) []string {
	var names []string
	for _, b := range scenarios.Builtins() {
		l, err := scenarios.LoadBuiltin(b.Name)
		if err != nil {
			continue
		}
		sc := l.Scenario.WithDefaults()
		if err := drill.Live(&sc); err != nil {
			fmt.Fprintf(w, "--all: %s does not run live: %v\n", b.Name, err)
			continue
		}
		names = append(names, b.Name)
	}
	return names
}

// drillRow is one drill in the table a run of several prints at its end.
type drillRow struct {
	name, verdict, scale, wall, first string
}

func drillRowOf(res *reports.Result, h *oracle.History, wall time.Duration) drillRow {
	r := drillRow{name: res.Scenario, verdict: strings.ToUpper(string(res.Verdict)), wall: wall.Round(100 * time.Millisecond).String()}
	if h != nil {
		r.scale = fmt.Sprint(h.TimeScale)
	}
	switch {
	case len(res.Violations) > 0:
		r.first = "invariant " + res.Violations[0].Invariant + ": " + res.Violations[0].Message
	case res.Error != "":
		r.first = res.Error
	default:
		for _, e := range res.Expectations {
			if e.Verdict == reports.Failed {
				r.first = e.Name + ": got " + e.Actual
				break
			}
		}
	}
	if len(r.first) > 120 {
		r.first = r.first[:117] + "..."
	}
	return r
}

// writeDrillTable prints the drills' verdicts, a line each.
func writeDrillTable(w io.Writer, rows []drillRow) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%-30s %-13s %6s %9s  %s\n", "drill", "verdict", "scale", "wall", "first failed line")
	for _, r := range rows {
		fmt.Fprintf(w, "%-30s %-13s %6s %9s  %s\n", masked(r.name), r.verdict, r.scale, r.wall, masked(r.first))
	}
}

// withExternal gives every target the black-box system of the file at
// path (scenarios.WithExternal), or says, for each scenario, which of its
// parts a black-box drill cannot run and why.
func withExternal(targets []target, path string) error {
	var problems []string
	for i, t := range targets {
		l, err := scenarios.WithExternal(t.loaded, path)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s with --external %s:\n%v", t.arg, path, err))
			continue
		}
		targets[i].loaded = l
	}
	if len(problems) > 0 {
		return &InvalidInputError{Err: errors.New(strings.Join(problems, "\n")),
			Hint: "A black-box drill runs your system from outside: see system.external in docs/scenario-format.md for the file, and for what it refuses (the reference's configuration, steps, store faults, tasks without a dependency)."}
	}
	return nil
}

// redisRefusedUs says Redis answered, refusing the URL's credentials or
// database.
func redisRefusedUs(err error) bool {
	for _, s := range []string{"WRONGPASS", "NOAUTH", "ERR DB index", "invalid password", "invalid username-password"} {
		if strings.Contains(err.Error(), s) {
			return true
		}
	}
	return false
}

// drillCommand is the command line that drills the scenario again (the
// Redis by its address only: never a password).
func drillCommand(arg string, seed uint64, scale float64, f drillFlags, addr string) string {
	cmd := fmt.Sprintf("faultline drill %s --seed %d --redis-url %s", shellQuote(arg), seed, addr)
	if f.autoScale {
		cmd += fmt.Sprintf(" --time-scale %v", scale)
	} else if f.scale != 1 {
		cmd += fmt.Sprintf(" --time-scale %v", f.scale)
	}
	if f.workers > 0 {
		cmd += fmt.Sprintf(" --workers %d", f.workers)
	}
	if f.external != "" {
		cmd += " --external " + shellQuote(f.external)
	}
	return cmd + " (wall clock: a drill is not reproducible to the byte)"
}

// extension is a report format's file extension.
func extension(format string) string {
	switch format {
	case "junit":
		return "junit.xml"
	}
	return format
}

func fmtMs(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	return d.String()
}

// progressLine rewrites the terminal's last line with a drill's state.
func progressLine(w io.Writer, name string, p drill.Progress) {
	faults := "none"
	if len(p.ActiveFaults) > 0 {
		faults = strings.Join(p.ActiveFaults, ", ")
	}
	fmt.Fprintf(w, "\r\033[Kdrill %s  %s / %s  jobs %d: queued %d, in flight %d, retrying %d, held %d, DLQ %d  faults: %s",
		masked(name), p.Elapsed.Truncate(time.Second), p.Duration, p.Created, p.Queued, p.InFlight, p.Scheduled, p.Held, p.DLQ, masked(faults))
}

func newWorkerCommand() *cobra.Command {
	var config, scenario string
	c := &cobra.Command{
		Use:   "worker (--config FILE | --scenario FILE)",
		Short: "Run one worker process of a drill (faultline drill starts these)",
		Long: `Run the reference worker (reference/worker.Runner) on a real Redis with a scenario's
system configuration: what faultline drill starts N of, one per worker slot. FILE is the
configuration the drill writes: the scenario (loaded again here; a scenario that changed
since the drill loaded it is refused), the Redis URL of the drill's proxy, the fault
gateways' URLs, the drill's feed, the time scale. SIGTERM shuts it down gracefully.

With --scenario instead, it is the reference worker run as a team's own system: the
command of a black-box drill (system.external) through the faultline layout. It reads what
the drill gives every copy (FAULTLINE_DRILL_FILE, or FAULTLINE_REDIS_URL and
FAULTLINE_NAMESPACE), reports nothing to the drill, and alerts through its own reference
alerter to the drill's receivers: the drill judges it from outside, like any other system.`,
		Example: `  faultline worker --scenario examples/reference/drill.yaml   # as system.external.command`,
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			var cfg *workerproc.Config
			var err error
			switch {
			case config != "" && scenario != "":
				return usage(c, errors.New("worker takes --config FILE (a drill of the reference worker) or --scenario FILE (the reference worker as a black-box system), not both"))
			case config != "":
				cfg, err = workerproc.ReadConfig(config)
			case scenario != "":
				cfg, err = workerproc.StandaloneConfig(scenario, os.Getenv)
			default:
				return usage(c, errors.New("worker needs --config FILE (faultline drill writes it) or --scenario FILE (the reference worker as a black-box system)"))
			}
			if err != nil {
				return &InvalidInputError{Err: err}
			}
			ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			quietRedisLogs()
			logger := slog.New(redact.NewHandler(slog.NewTextHandler(c.ErrOrStderr(), nil), redact.Default()))
			if err := workerproc.Run(ctx, cfg, logger); err != nil {
				if errors.Is(err, workerproc.ErrScenarioChanged) || errors.Is(err, scenarios.ErrInvalid) {
					return &InvalidInputError{Err: err}
				}
				return err
			}
			return nil
		},
	}
	c.Flags().StringVar(&config, "config", "", "the worker's configuration file, written by faultline drill")
	c.Flags().StringVar(&scenario, "scenario", "", "run as a black-box drill's system: the scenario file (or builtin:NAME) whose system the worker runs")
	return c
}

// newCheckCommand is `report check HISTORY`.
func newCheckCommand() *cobra.Command {
	var scenario, external string
	var lf limitFlags
	c := &cobra.Command{
		Use:   "check HISTORY.json",
		Short: "Judge a saved drill's history again (with this faultline's invariants)",
		Long: `Read the history a drill wrote beside its report and judge it again: every invariant
and expectation is a function of the history, so a verdict can be re-checked, and a new
invariant applied to an old drill. The scenario is loaded from where the drill loaded it
(the history names it), or from --scenario. Exit codes: 0 passed; 1 failed; 2 the file
is not a history, or its scenario cannot be loaded; 5 inconclusive (the drill's harness
could not keep pace with its time scale).`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usage(c, errors.New("report check needs one history file"))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			f, err := os.Open(args[0])
			if err != nil {
				return &InvalidInputError{Err: err}
			}
			defer f.Close()
			h, err := oracle.Read(f)
			if err != nil {
				return &InvalidInputError{Err: fmt.Errorf("%s: %w", args[0], err)}
			}
			src := h.Source
			if scenario != "" {
				src = scenario
			}
			lim, err := lf.limits()
			if err != nil {
				return usage(c, err)
			}
			l, err := workerproc.LoadScenario(src, lim)
			if err != nil && scenario == "" {
				// A path named by the file, not by the user: what is there
				// is not quoted back (it may be any file).
				return &InvalidInputError{Err: fmt.Errorf("the history names scenario %s, which does not load as a scenario", masked(src)), Hint: "Give it with --scenario FILE."}
			}
			if err != nil {
				return &InvalidInputError{Err: fmt.Errorf("--scenario %s: %w", src, err)}
			}
			if ext := external; ext != "" || (h.External != nil && h.External.File != "" && scenario == "") {
				if ext == "" {
					ext = h.External.File // as the drill was given it
				}
				if l, err = scenarios.WithExternal(l, ext); err != nil {
					return &InvalidInputError{Err: fmt.Errorf("--external %s: %w", ext, err)}
				}
			}
			if h.SourceSHA256 != "" && l.Hash != h.SourceSHA256 {
				fmt.Fprintf(c.ErrOrStderr(), "note: scenario %s changed since the drill (%s, drill ran %s): its expectations are today's\n", masked(src), l.Hash, h.SourceSHA256)
			}
			sc := l.Scenario.WithDefaults()
			sc.Seed = h.Seed
			reproduce := ""
			if !h.Simulated {
				reproduce = drillReproduce(h, sc)
			}
			if len(h.Workers) > 0 {
				// The processes the drill ran (a black box's copies).
				drill.Fleet(&sc, len(h.Workers), 0)
			}
			res, err := oracle.Judge(c.Context(), sc, h)
			if err != nil {
				return &InvalidInputError{Err: err}
			}
			scenarios.Annotate(res, l, src)
			res.Reproduce = reproduce // a drill's: a simulated run's is made of its scenario and seed
			note := oracle.LiveNote(h.TimeScale)
			if h.Simulated {
				note = oracle.SimulatedNote
			}
			res.Warnings = append([]string{note}, res.Warnings...)
			if err := writeReportText(c.OutOrStdout(), res, colorFor(c.OutOrStdout())); err != nil {
				return err
			}
			if res.Verdict == reports.Inconclusive {
				return errInconclusiveDrill
			}
			if res.Failed() || res.Verdict == reports.Interrupted {
				return ErrChecksFailed
			}
			return nil
		},
	}
	c.Flags().StringVar(&scenario, "scenario", "", "the scenario file to judge with (default: the one the history names)")
	c.Flags().StringVar(&external, "external", "", "the system.external FILE to judge with (default: the one the drill was given with --external, if any)")
	lf.register(c.Flags())
	return c
}

// drillReproduce is the command line that runs the drill of history h
// (of scenario sc, defaults applied) again: the one the drill printed,
// which its history keeps, or, for an older history that keeps none, one
// made of what it holds — its Redis, which it does not hold, left for the
// reader to fill in.
func drillReproduce(h *oracle.History, sc scenarios.Scenario) string {
	if h.Reproduce != "" {
		return h.Reproduce
	}
	arg := h.Source
	if name, ok := strings.CutPrefix(arg, "builtin:"); ok {
		arg = name
	}
	if arg == "" {
		arg = h.Scenario
	}
	f := drillFlags{autoScale: true}
	if h.External != nil {
		f.external = h.External.File
	}
	drill.Fleet(&sc, 0, 0)
	if n := len(h.Workers); n != sc.Workers.Processes {
		f.workers = n
	}
	return drillCommand(arg, h.Seed, h.TimeScale, f, "HOST:PORT")
}

// absPath is p made absolute ("" stays ""), so that a history names a file
// that loads from any folder.
func absPath(p string) string {
	if p == "" {
		return ""
	}
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
