package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/faultline/faultline/reference/redact"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
	"github.com/faultline/faultline/sim"
)

// ErrInterrupted: the run was stopped (Ctrl-C) before every scenario ran;
// it is not a pass.
var ErrInterrupted = errors.New("interrupted")

type runFlags struct {
	all       bool
	seed      uint64
	seeds     string
	parallel  int
	report    string
	reportDir string
	dryRun    bool
	noShrink  bool
	progress  string
	shrunkOut string
	shard     string
	history   string
	// historyRaw writes --history unmasked.
	historyRaw bool
	limits     limitFlags
	store      runBackendFlags
}

func newRunCommand() *cobra.Command {
	var f runFlags
	c := &cobra.Command{
		Use:   "run (FILE | DIR | BUILTIN)... | --all",
		Short: "Run scenarios on the simulator and tell, for each, whether the failure handling held",
		Long: `Run scenarios on the deterministic simulator: scenario files, every scenario file
in a directory, built-in scenarios by name (faultline list), or the whole built-in
library (--all). Each run prints a verdict; a failure prints each failed expectation
(expected vs actual), the invariant violation with the job's trail, the seed, the
command that reproduces it, and the smallest failing fault schedule as a scenario
file to save and rerun.

The same scenario and seed give the same result, byte for byte; --parallel changes
nothing but the time it takes.

A scenario includes files from its own folder and the folders below it only, unless
--allow-include-outside (the same on validate and drill).

Exit codes: 0 every run passed; 1 an expectation or invariant failed (or the run
was interrupted); 2 invalid input (a scenario file or a flag, an unwritable
--report-dir); 3 an internal error; 4 a service faultline needs could not be
reached.

Everything printed and every report has its secrets masked (tokens, webhook URLs,
passwords, card numbers); --shrunk-out writes the shrunk scenario as it was.

--shard I/N (1 ≤ I ≤ N) runs the I-th of N shares of the (scenario, seed) pairs
— pair p (scenarios first, then seeds) goes to shard p mod N + 1 — and writes to
--report-dir a summary.json naming the shard and what identifies the run, junit.xml
and the failing runs' reports; faultline report merge puts the N directories
together. With --shard, --seeds may hold N × 1,000,000 seeds (the cap is per shard).

--backend picks the store the simulator runs on: memory (the default, embedded),
miniredis (the Redis store's Lua scripts on an embedded miniredis) or redis (a
real server at --redis-url, on loopback unless --allow-remote with --namespace).
On redis each run uses a namespace of its own, <prefix>-<n> (prefix: --namespace,
else a fresh run-<random>), refuses one that already holds keys, and removes its
keys when it ends. The report is the same on every backend, byte for byte.`,
		Example: `  faultline run --all
  faultline run payment-challenge --seed 7
  faultline run drills/ --seeds 1..1000 --parallel 2
  faultline run my-scenario.yaml --report json --report-dir out/
  faultline run --all --seeds 1..100000 --shard 2/8 --report-dir shard-2/
  faultline run --all --backend redis --redis-url redis://127.0.0.1:6379/0`,
		Args: func(c *cobra.Command, args []string) error {
			if f.all && len(args) > 0 {
				return usage(c, errors.New("give scenarios or --all, not both"))
			}
			if !f.all && len(args) == 0 {
				return usage(c, errors.New("run needs scenario files, directories or built-in names (faultline list), or --all"))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			return runScenarios(c.Context(), c, args, f)
		},
	}
	fl := c.Flags()
	fl.BoolVar(&f.all, "all", false, "run the whole built-in library")
	fl.Uint64Var(&f.seed, "seed", 0, "run with this seed instead of each scenario's own")
	fl.StringVar(&f.seeds, "seeds", "", "run every seed of a range, e.g. 1..1000")
	fl.IntVar(&f.parallel, "parallel", runtime.GOMAXPROCS(0), "runs at once (results are the same as one at a time)")
	fl.StringVar(&f.report, "report", "", "write reports in these formats (comma-separated): json, junit, md, html")
	fl.StringVar(&f.reportDir, "report-dir", "faultline-reports", "where --report writes")
	fl.BoolVar(&f.dryRun, "dry-run", false, "print each effective scenario (includes merged, defaults filled in) without running it")
	fl.BoolVar(&f.noShrink, "no-shrink", false, "do not look for the smallest failing fault schedule")
	fl.StringVar(&f.progress, "progress", "auto", "progress bar on stderr: auto (on a terminal), always or never")
	fl.StringVar(&f.shard, "shard", "", "run the I-th of N shares of the (scenario, seed) pairs, 1-based (e.g. 2/8), for report merge")
	fl.StringVar(&f.history, "history", "", "write the run's history to this file, as the run goes, for faultline report check to judge again (its secrets replaced by keyed hashes, unless --history-raw); one scenario, one seed")
	fl.BoolVar(&f.historyRaw, "history-raw", false, "write --history as it is, secrets and payloads unmasked (mode 0600)")
	fl.StringVar(&f.shrunkOut, "shrunk-out", "", "write each shrunk failing scenario, unmasked (mode 0600), to this file or directory; the printed one has its secrets masked")
	f.limits.register(fl)
	f.store.register(c)
	return c
}

// target is one scenario to run, and how to name it on a command line.
type target struct {
	arg    string // as the user would type it
	file   string // for reports: the path as given, or "builtin:NAME"
	loaded *scenarios.Loaded
	// stem is what its report files are named after (stem.seed-N.json):
	// the scenario's name, with a suffix when an earlier target of the
	// run has that name too (see assignStems).
	stem string
}

// assignStems names each target's report files: its scenario's name made
// safe for a file name, and for the second (third, …) target of one name
// that name with -2 (-3, …), so that two scenarios sharing metadata.name
// never write one file. Targets come in the order the command line gives
// them, in every shard alike: a sharded run names its files as the
// unsharded one does. It returns a note for each renamed target.
func assignStems(targets []target) []string {
	used := map[string]bool{}
	var notes []string
	for i := range targets {
		t := &targets[i]
		base := safeName(t.loaded.Scenario.Name)
		stem := base
		for k := 2; used[strings.ToLower(stem)]; k++ {
			stem = fmt.Sprintf("%s-%d", base, k)
		}
		used[strings.ToLower(stem)] = true
		t.stem = stem
		if stem != base {
			notes = append(notes, fmt.Sprintf("note: %s is not the first scenario named %q in this run: its reports are named %s.seed-N.json",
				masked(t.arg), masked(t.loaded.Scenario.Name), stem))
		}
	}
	return notes
}

// seedRange parses "A..B" (inclusive) or "N", of at most maxSeeds·shards
// seeds: the cap is on one call's, or one shard's, share.
func seedRange(s string, shards int) (uint64, uint64, error) {
	a, b, ok := strings.Cut(s, "..")
	if !ok {
		b = a
	}
	lo, err1 := strconv.ParseUint(strings.TrimSpace(a), 10, 64)
	hi, err2 := strconv.ParseUint(strings.TrimSpace(b), 10, 64)
	if err1 != nil || err2 != nil || hi < lo {
		return 0, 0, fmt.Errorf("--seeds: expected a range like 1..1000, got %q", s)
	}
	if limit := maxSeeds * uint64(shards); hi-lo >= limit {
		if shards > 1 {
			return 0, 0, fmt.Errorf("--seeds: at most 1,000,000 seeds a shard (%d in all with %d shards), got %q", limit, shards, s)
		}
		return 0, 0, fmt.Errorf("--seeds: at most 1,000,000 seeds at once (or 1,000,000 a shard with --shard I/N), got %q", s)
	}
	return lo, hi, nil
}

// resolve loads the scenarios the arguments name.
func resolve(args []string, all bool, lim scenarios.Limits) ([]target, error) {
	if all {
		var out []target
		for _, b := range scenarios.Builtins() {
			l, err := lim.LoadBuiltin(b.Name)
			if err != nil {
				return nil, fmt.Errorf("built-in %s: %w", b.Name, err)
			}
			out = append(out, target{arg: b.Name, file: "builtin:" + b.Name, loaded: l})
		}
		return out, nil
	}
	var out []target
	var problems []string
	for _, a := range args {
		st, err := os.Stat(a)
		switch {
		case err == nil && st.IsDir():
			files, err := scenarioFiles(a, lim)
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
			if len(files) == 0 {
				problems = append(problems, fmt.Sprintf("%s: no scenario files (*.yaml, *.yml) in this directory", a))
			}
			for _, f := range files {
				l, err := lim.Load(f)
				if err != nil {
					problems = append(problems, err.Error())
					continue
				}
				out = append(out, target{arg: f, file: f, loaded: l})
			}
		case err == nil:
			l, err := lim.Load(a)
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
			out = append(out, target{arg: a, file: a, loaded: l})
		case strings.ContainsAny(a, "/\\.") || !errors.Is(err, os.ErrNotExist):
			problems = append(problems, err.Error())
		default:
			l, err := lim.LoadBuiltin(a)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%q is neither a file nor a built-in scenario: %v", a, err))
				continue
			}
			out = append(out, target{arg: a, file: "builtin:" + a, loaded: l})
		}
	}
	if len(problems) > 0 {
		return nil, &InvalidInputError{Err: errors.New(strings.Join(problems, "\n")), Hint: "Try: faultline validate FILE, or faultline list"}
	}
	return out, nil
}

// scenarioFiles lists a directory's scenario files (not its fragments, nor
// what is not a regular file), sorted.
func scenarioFiles(dir string, lim scenarios.Limits) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !(strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml")) {
			continue
		}
		p := filepath.Join(dir, n)
		// Only regular files (a link to one too): reading a named pipe
		// or a device found in a directory would block or never end.
		if info, err := os.Stat(p); err == nil && !info.Mode().IsRegular() {
			continue
		}
		if info, err := e.Info(); err == nil && info.Size() > lim.WithDefaults().MaxFileSize {
			out = append(out, p) // loading it says it is too large
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		if d, err := scenarios.Parse(p, data); err == nil && d.Kind == scenarios.KindFragment {
			continue // included by scenarios, not run on its own
		}
		out = append(out, p)
	}
	slices.Sort(out)
	return out, nil
}

// jobState is where a run is.
type jobState uint8

const (
	pending jobState = iota
	finished
	canceled // stopped by Ctrl-C: no result
)

// job is one run: a scenario with a seed.
type job struct {
	t     *target
	seed  uint64
	index uint64 // the pair's place in the whole run (see pairPlan)
	res   *reports.Result
	err   error
	state jobState
	// verdict is res's, kept when res is released (see release).
	verdict reports.Verdict
	// history is the file the run streams its history to ("": none);
	// historyRaw writes it unmasked.
	history    string
	historyRaw bool
}

// done says the job finished: res or err is its outcome.
func (j *job) done() bool { return j.state == finished }

func (j *job) reproduce() string {
	return fmt.Sprintf("faultline run %s --seed %d", shellQuote(j.t.arg), j.seed)
}

func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`*?[]{}()<>|&;#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func runScenarios(ctx context.Context, c *cobra.Command, args []string, f runFlags) error {
	out, errw := c.OutOrStdout(), c.ErrOrStderr()
	if ctx == nil {
		ctx = context.Background()
	}
	switch f.progress {
	case "auto", "always", "never":
	default:
		return usage(c, fmt.Errorf("--progress: expected auto, always or never, got %q", f.progress))
	}
	if f.parallel < 1 {
		return usage(c, fmt.Errorf("--parallel: expected at least 1, got %d", f.parallel))
	}
	formats, err := reportFormats(f.report)
	if err != nil {
		return usage(c, err)
	}
	if len(formats) > 0 && !f.dryRun {
		if err := checkOutputDir("--report-dir", f.reportDir); err != nil {
			return err
		}
	}
	seedSet := c.Flags().Changed("seed")
	if seedSet && f.seeds != "" {
		return usage(c, errors.New("give --seed or --seeds, not both"))
	}
	shard, sharded := reports.Shard{Index: 1, Count: 1}, f.shard != ""
	if sharded {
		if shard, err = parseShard(f.shard); err != nil {
			return usage(c, err)
		}
		if !f.dryRun {
			if err := checkOutputDir("--report-dir", f.reportDir); err != nil {
				return err
			}
		}
	}
	var lo, hi uint64
	sweep := f.seeds != ""
	if sweep {
		if lo, hi, err = seedRange(f.seeds, shard.Count); err != nil {
			return usage(c, err)
		}
	}
	lim, err := f.limits.limits()
	if err != nil {
		return usage(c, err)
	}
	targets, err := resolve(args, f.all, lim)
	if err != nil {
		return err
	}
	for _, note := range assignStems(targets) {
		fmt.Fprintln(errw, note)
	}
	if f.dryRun {
		return dryRun(out, targets)
	}

	plan := pairPlan{targets: targets, perTarget: 1, seedOf: func(t *target, _ uint64) uint64 { return t.loaded.Scenario.Seed }}
	seedSpec := "scenario seeds"
	switch {
	case sweep:
		plan.perTarget = hi - lo + 1
		plan.seedOf = func(_ *target, k uint64) uint64 { return lo + k }
		seedSpec = fmt.Sprintf("seeds %d..%d", lo, hi)
	case seedSet:
		plan.seedOf = func(*target, uint64) uint64 { return f.seed }
		seedSpec = fmt.Sprintf("seed %d", f.seed)
	}
	jobs := plan.jobs(shard)
	if f.history != "" {
		if len(jobs) != 1 {
			return usage(c, fmt.Errorf("--history writes one run's history: give one scenario and at most one seed (this is %d runs)", len(jobs)))
		}
		// A place the history cannot be written is the user's input
		// (exit 2), said before the run, not an error of the run.
		hf, err := os.OpenFile(f.history, os.O_WRONLY|os.O_CREATE, 0o600)
		if err != nil {
			return outputError(f.history, err)
		}
		_ = hf.Close()
		jobs[0].history, jobs[0].historyRaw = f.history, f.historyRaw
	}

	bar := newBar(errw, f.progress, len(jobs))
	p := &printer{w: out, sweep: sweep, color: colorFor(out)}
	// Each run is printed and written as it finishes, in order, then let
	// go of: memory stays flat in the number of runs.
	var shardOut *shardSink
	sinkFormats := formats
	if sharded {
		// A shard always writes what report merge reads: summary.json and
		// the failing runs' reports (shardSink), and junit.xml.
		sinkFormats = []string{"junit"}
		for _, format := range formats {
			if format == "md" {
				sinkFormats = append(sinkFormats, format)
			}
		}
		shardOut, err = newShardSink(f.reportDir, shardHeader(shard, plan, seedSpec), uint64(len(jobs)), slices.Contains(formats, "html"))
		if err != nil {
			return err
		}
	}
	openStore, closeStore, err := openRunBackend(c, f.store)
	if err != nil {
		return err
	}
	defer closeStore()
	sink, err := newRunSink(f.reportDir, sinkFormats, sweep && !sharded)
	if err != nil {
		if shardOut != nil {
			_ = shardOut.close()
		}
		return err
	}
	execute(ctx, jobs, f.parallel, openStore, func(done []*job) {
		if bar != nil {
			_ = bar.Clear() // a result line starts on a line of its own
		}
		for _, j := range done {
			p.add(j)
			sink.add(j)
			if shardOut != nil {
				shardOut.add(j)
			}
			j.release()
			if afterRelease != nil {
				afterRelease()
			}
		}
		if bar != nil {
			_ = bar.Add(len(done))
		}
	})
	if bar != nil {
		_ = bar.Finish()
		fmt.Fprintln(errw)
	}
	p.flush()

	interrupted := ctx.Err() != nil
	failed, errored, stopped, ran := 0, 0, 0, 0
	for _, j := range jobs {
		if !j.done() {
			continue
		}
		ran++
		switch j.outcome() {
		case reports.Errored:
			errored++
		case reports.Interrupted:
			stopped++
		case reports.Passed:
		default:
			failed++
		}
	}
	if interrupted && ran < len(jobs) {
		sink.notMade(len(jobs)-ran, len(jobs))
	}
	shrunk := &shrunkOut{path: f.shrunkOut}
	if !interrupted && !f.noShrink {
		shrinkFailures(ctx, out, jobs, shrunk)
	}
	wrote, err := sink.close()
	if shardOut != nil {
		err = errors.Join(err, shardOut.close())
	}
	if err != nil {
		return err
	}
	if wrote {
		fmt.Fprintf(out, "reports written to %s\n", masked(f.reportDir))
	}
	if err := sink.closeStep(); err != nil {
		fmt.Fprintln(errw, "faultline:", masked(err.Error()))
	}
	if sharded {
		fmt.Fprintf(out, "shard %s: %d of the %d runs of %s × %s (faultline report merge puts the shards together)\n",
			shard, len(jobs), plan.total(), plural2(len(targets), "scenario", "scenarios"), seedSpec)
	}
	fmt.Fprintf(out, "%d %s, %d %s: %d passed, %d failed", len(targets), plural(len(targets), "scenario", "scenarios"),
		ran, plural(ran, "run", "runs"), ran-failed-errored-stopped, failed)
	if errored > 0 {
		fmt.Fprintf(out, ", %d errored", errored)
	}
	if stopped > 0 {
		fmt.Fprintf(out, ", %d interrupted (expectations not evaluated)", stopped)
	}
	if interrupted {
		fmt.Fprintf(out, "; interrupted: %d of %d runs not made", len(jobs)-ran, len(jobs))
	}
	fmt.Fprintln(out)
	if shrunk.err != nil {
		return shrunk.err
	}
	switch {
	case errored > 0:
		return fmt.Errorf("%d %s could not be carried out", errored, plural(errored, "run", "runs"))
	case failed > 0:
		return fmt.Errorf("%d of %d runs failed: %w", failed, ran, ErrChecksFailed)
	case interrupted || stopped > 0:
		return fmt.Errorf("%w after %d of %d runs: not a pass: %w", ErrInterrupted, ran-stopped, len(jobs), ErrChecksFailed)
	}
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// execute runs the jobs on n workers and reports finished jobs in job
// order (a job is reported once every job before it is finished or
// canceled), so the output does not depend on n. A worker runs at most
// aheadPerWorker·n jobs past the first one not yet reported, so that the
// results waiting for a slow run to be reported stay bounded, whatever
// the number of runs.
func execute(ctx context.Context, jobs []*job, n int, open runStore, report func([]*job)) {
	var mu sync.Mutex
	caughtUp := sync.NewCond(&mu)
	next, reported := 0, 0
	ahead := aheadPerWorker * max(n, 1)
	flush := func(final bool) {
		var ready []*job
		for reported < len(jobs) {
			j := jobs[reported]
			if j.state == pending && !final {
				break
			}
			if j.state == finished {
				ready = append(ready, j)
			}
			reported++
		}
		if len(ready) > 0 {
			report(ready)
			caughtUp.Broadcast()
		}
	}
	var wg sync.WaitGroup
	for range min(n, len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				for next < len(jobs) && next-reported >= ahead && ctx.Err() == nil {
					caughtUp.Wait()
				}
				if next >= len(jobs) || ctx.Err() != nil {
					mu.Unlock()
					return
				}
				j := jobs[next]
				next++
				mu.Unlock()

				res, err := runOne(ctx, j, open)

				if err == nil {
					scenarios.Annotate(res, j.t.loaded, j.t.file)
					res.ToolVersion = Version()
				}

				mu.Lock()
				if ctx.Err() != nil && err != nil {
					j.state = canceled // stopped before it started
				} else {
					// A run stopped by Ctrl-C has a result of its own:
					// verdict interrupted, expectations not evaluated.
					j.res, j.err, j.state = res, err, finished
				}
				flush(false)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	flush(true)
}

// runOne runs job j on the store open gives it (nil: in memory).
func runOne(ctx context.Context, j *job, open runStore) (*reports.Result, error) {
	opts := []sim.Option{sim.WithSeed(j.seed), sim.WithReproduce(j.reproduce())}
	if open != nil {
		opt, done, err := open(ctx, j.index)
		if err != nil {
			return nil, err
		}
		defer done()
		opts = append(opts, opt)
	}
	if j.history == "" {
		return sim.Run(ctx, j.t.loaded.Scenario, opts...)
	}
	f, err := openHistory(j.history, j.historyRaw, j.t.loaded.Scenario.Invariants.Secrets)
	if err != nil {
		return nil, fmt.Errorf("--history: %w", err)
	}
	res, err := sim.Run(ctx, j.t.loaded.Scenario, append(opts, sim.WithHistory(f, j.t.file))...)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("--history: %w", cerr)
	}
	return res, err
}

// aheadPerWorker bounds how far past the first unreported job the workers
// run (see execute).
const aheadPerWorker = 4

func isTerminal(f *os.File) bool {
	return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
}

func newBar(w io.Writer, mode string, n int) *progressbar.ProgressBar {
	show := mode == "always"
	if mode == "auto" {
		f, ok := w.(*os.File)
		show = ok && isTerminal(f) && n > 1
	}
	if !show {
		return nil
	}
	return progressbar.NewOptions(n, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription("running"),
		progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true), progressbar.OptionClearOnFinish())
}

func reportFormats(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if !slices.Contains(reportFormatNames, f) {
			return nil, fmt.Errorf("--report: expected a comma-separated list of %s, got %q", formatList(), f)
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out, nil
}

// safeName is the stem of a file named after a scenario's name (its
// reports, its shrunk scenario): the name masked first, then reduced to
// file-name characters (redact.Redactor.FileName), so that a card number
// in the name becomes "CARD-1111", not "4111_1111_1111_1111", which no
// redactor recognises in a path.
func safeName(s string) string { return redact.Default().FileName(s) }

// shrinkFailures shrinks the first failing seed of each scenario and
// prints the smallest failing fault schedule as a scenario file.
func shrinkFailures(ctx context.Context, w io.Writer, jobs []*job, shrunk *shrunkOut) {
	seen := map[*target]bool{}
	for _, j := range jobs {
		if !j.done() || j.outcome() != reports.Failed || seen[j.t] || len(j.t.loaded.Document.Faults) == 0 {
			continue
		}
		seen[j.t] = true
		res, err := scenarios.Shrink(ctx, j.t.loaded, j.seed, func(ctx context.Context, sc scenarios.Scenario, seed uint64) (*reports.Result, error) {
			return sim.Run(ctx, sc, sim.WithSeed(seed))
		}, 200)
		if err != nil {
			fmt.Fprintf(w, "\nshrinking %s (seed %d) failed: %s\n", masked(j.t.loaded.Scenario.Name), j.seed, masked(err.Error()))
			continue
		}
		doc := *res.Document
		seed := j.seed
		doc.Seed = &seed
		doc.Metadata.Name = j.t.loaded.Scenario.Name + "-shrunk"
		doc.Metadata.Description = fmt.Sprintf("%s, shrunk to the smallest fault schedule that still fails (%s) with seed %d", j.t.loaded.Scenario.Name, res.Signature, seed)
		// Its paths relative to the scenario's folder are rewritten to
		// resolve from where the file is saved: the printed one in the
		// current folder (as the message says), the written one in its
		// own.
		at := func(dir string) ([]byte, error) { return scenarios.Marshal(j.t.loaded.Relocate(&doc, dir)) }
		b, err := at(".")
		if err != nil {
			fmt.Fprintf(w, "\nshrinking %s: %s\n", masked(j.t.loaded.Scenario.Name), masked(err.Error()))
			continue
		}
		fmt.Fprintf(w, "\nsmallest failing fault schedule for %s (seed %d): %d of %d faults kept, %d runs%s\n",
			masked(j.t.loaded.Scenario.Name), seed, len(doc.Faults), len(j.t.loaded.Document.Faults), res.Runs, map[bool]string{true: " (run budget spent)", false: ""}[res.Exhausted])
		fmt.Fprintf(w, "save it as %s.yaml and run: faultline run %s.yaml\n---\n", masked(doc.Metadata.Name), masked(doc.Metadata.Name))
		shrunk.emit(w, doc.Metadata.Name, b, at)
		fmt.Fprintln(w, "---")
	}
}

// dryRun prints each effective scenario.
func dryRun(w io.Writer, targets []target) error {
	for i, t := range targets {
		b, err := scenarios.Marshal(scenarios.Effective(t.loaded))
		if err != nil {
			return err
		}
		if i > 0 {
			fmt.Fprintln(w, "---")
		}
		fmt.Fprintf(w, "# %s (effective: includes merged, defaults filled in)\n", masked(t.arg))
		_, _ = io.WriteString(w, masked(string(b)))
	}
	return nil
}
