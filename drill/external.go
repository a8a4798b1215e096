package drill

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/drill/gateway"
	"github.com/faultline/faultline/drill/receiver"
	"github.com/faultline/faultline/drill/supervisor"
	"github.com/faultline/faultline/drill/workerproc"
	"github.com/faultline/faultline/layout"
	"github.com/faultline/faultline/layout/adapter"
	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
	"github.com/faultline/faultline/sim"
)

// The environment a black-box drill gives every command it starts (the
// system's copies and the adapters' commands), besides the placeholders
// of docs/plugging-in.md.
const (
	EnvRedisURL  = "FAULTLINE_REDIS_URL"
	EnvNamespace = "FAULTLINE_NAMESPACE"
	EnvWorker    = "FAULTLINE_WORKER"
	EnvTimeScale = "FAULTLINE_TIME_SCALE"
	EnvSlackURL  = "FAULTLINE_SLACK_URL"
	EnvDrillFile = "FAULTLINE_DRILL_FILE"
	// EnvClockOrigin is the wall instant (RFC 3339) from which a copy that
	// follows the time scale runs its clock faster: the same for every
	// copy and restart of a drill, so the copies agree on the time of day
	// (their leases, their leader's), which equals the wall clock's at it.
	EnvClockOrigin  = "FAULTLINE_CLOCK_ORIGIN"
	EnvDependencyAt = "FAULTLINE_DEPENDENCY_" // + the dependency's name, upper-cased, non-alphanumerics as _
	EnvReceiverAt   = "FAULTLINE_RECEIVER_"   // + the receiver's name, likewise
)

// DefaultReceiver is the receiver a black-box drill always starts, beside
// the scenario's: a Slack-compatible incoming webhook whose URL is
// FAULTLINE_SLACK_URL.
const DefaultReceiver = "slack"

// DrillFile is the JSON file a black-box drill writes for each copy of the
// system (FAULTLINE_DRILL_FILE): what the placeholders give, in one place.
type DrillFile struct {
	Namespace string  `json:"namespace"`
	RedisURL  string  `json:"redisURL"`
	Worker    string  `json:"worker"`
	TimeScale float64 `json:"timeScale"`
	// ClockOrigin is EnvClockOrigin's instant.
	ClockOrigin  time.Time                `json:"clockOrigin"`
	Dependencies map[string]string        `json:"dependencies"`
	Receivers    map[string]DrillReceiver `json:"receivers"`
}

// DrillReceiver is one receiver of a DrillFile.
type DrillReceiver struct {
	Kind string `json:"kind"`
	URL  string `json:"url"`
}

// extState is what a black-box drill adds to a drill.
type extState struct {
	x    *scenarios.ExternalSpec
	inj  adapter.Injector
	rd   adapter.Reader
	keys []string
	// jobKeys are a framework's keys of the drill's jobs outside its
	// queue (Celery's results, RQ's job hashes): absent at the start, so
	// the drill's to delete.
	jobKeys []string
	vars    map[string]string
	deps    map[string]string // call URLs by dependency
	rcvs    map[string]string // receiver URLs by name
	// clockOrigin is the copies' clock origin (EnvClockOrigin): when the
	// drill began.
	clockOrigin time.Time
	readMu      sync.Mutex
	cur         map[string]int // active entries by item key at the last read
	items       map[string]oracle.DLQItem
	entries     []layout.Entry
	read        bool
	x0          oracle.ExternalRun
	settled     int64
	quiet       bool // the drain ended settled and quiet
	// owns says every key check passed: the layout's keys under the
	// namespace, and the namespace's, are the drill's to delete.
	owns     bool
	jobsDone map[string]bool
}

var placeholder = regexp.MustCompile(`\{(namespace|redis|worker|timeScale|dependency:[^{}]+|receiver:[^{}]+)\}`)

// expand replaces the placeholders of s; worker names the copy ("" for
// an adapter's command).
func (e *extState) expand(s, worker string) string {
	return placeholder.ReplaceAllStringFunc(s, func(m string) string {
		k := m[1 : len(m)-1]
		if k == "worker" {
			return worker
		}
		if v, ok := e.vars[k]; ok {
			return v
		}
		return m
	})
}

// unresolved names a placeholder of s that names no dependency or
// receiver of the drill.
func unresolved(s string) string {
	for _, m := range placeholder.FindAllString(s, -1) {
		if strings.HasPrefix(m, "{dependency:") || strings.HasPrefix(m, "{receiver:") {
			return m
		}
	}
	return ""
}

// startExternal is start for a black-box drill: the gateways and
// receivers, the adapters, and the system's copies (unless it runs
// already), up before the scenario's clock starts.
func (d *drill) startExternal(ctx context.Context) (err error) {
	sc := &d.sc
	x := sc.System.External
	e := &extState{x: x, vars: map[string]string{}, deps: map[string]string{}, rcvs: map[string]string{}, cur: map[string]int{}, clockOrigin: time.Now().UTC(),
		items: map[string]oracle.DLQItem{}, settled: -1, jobsDone: map[string]bool{}}
	d.ext = e
	d.h = d.newHistory()
	defer func() {
		if err != nil {
			d.stopEverything()
		}
	}()
	if err := d.claim(ctx); err != nil {
		return err
	}
	// Keys starting with the namespace are the drill's only if there were
	// none at its start: a namespace given with --namespace may be in use.
	if k, err := firstMatching(ctx, d.rdb, globEscape(d.ns)+":*"); err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	} else if k != "" {
		return fmt.Errorf("%w: namespace %q already holds keys (e.g. %s): a black-box drill starts from an empty namespace, so that nothing it judges or deletes is anything it did not put there", ErrSteadyState, d.ns, k)
	}
	if d.opts.AutoScale {
		// A black box that follows the drill's scale ({timeScale}): the
		// machine's timer and Redis round trip decide how fast, up to the
		// system's own maxTimeScale (AutoScale).
		pace := Pace{Tick: MeasureTick(ctx, 100), Load: loadPerCore(), RoundTrip: redisRoundTrip(ctx, d.rdb)}
		d.opts.Scale, d.autoWhy = AutoScale(sc, pace)
		d.h.TimeScale = d.opts.Scale
		d.log.Info("time scale chosen", "scale", d.opts.Scale, "why", d.autoWhy)
	}
	startup := x.Startup
	if startup == 0 {
		startup = scenarios.DefaultStartup
	}
	if err := d.startClock(startup + 200*time.Millisecond); err != nil {
		return err
	}
	now := d.clk.Elapsed
	bases, err := d.startGateways(now)
	if err != nil {
		return err
	}
	for name, base := range bases {
		e.deps[name] = base + gateway.CallPath
		e.vars["dependency:"+name] = base + gateway.CallPath
	}
	// A receiver per receiver of the scenario's alerts (after defaults:
	// on-call and team), and "slack", the one a system's
	// FAULTLINE_SLACK_URL names.
	var names []string
	for _, r := range sc.System.Alerts.Receivers {
		names = append(names, r.Name)
	}
	if !slices.Contains(names, DefaultReceiver) {
		names = append(names, DefaultReceiver)
	}
	for _, r := range x.Receivers {
		if !slices.Contains(names, r.Name) {
			names = append(names, r.Name)
		}
	}
	if !x.NoAlerts {
		// Every receiver of a black-box drill is a Slack-compatible
		// incoming webhook: {"text": ...} is what any system can send.
		if e.rcvs, err = d.startReceivers(now, names, func(string) receiver.Kind { return receiver.Slack }); err != nil {
			return err
		}
		for name, u := range e.rcvs {
			e.vars["receiver:"+name] = u
		}
	}
	e.vars["namespace"] = d.ns
	e.vars["redis"] = d.opts.RedisURL
	e.vars["timeScale"] = strconv.FormatFloat(d.opts.Scale, 'g', -1, 64)

	// The work directory: the copies' drill files and logs.
	if err := d.makeWorkDir(); err != nil {
		return err
	}
	// The adapters.
	for _, s := range e.configStrings() {
		if p := unresolved(e.expand(s, "")); p != "" {
			return &RefusedError{Scenario: sc.Name, Part: "system.external", Reason: fmt.Sprintf("placeholder %s names no dependency or receiver of this drill (dependencies: %s; receivers: %s)", p, strings.Join(sortedKeys(e.deps), ", "), strings.Join(sortedKeys(e.rcvs), ", "))}
		}
	}
	alog, err := os.Create(filepath.Join(d.dir, "adapters.log"))
	if err != nil {
		return err
	}
	d.workerLogs = append(d.workerLogs, alog)
	aenv := adapter.Env{Redis: d.rdb, Namespace: d.ns, EventStream: DefaultEventStream, Dir: scenarioDir(d.l.Path), Environ: e.environ(""),
		Expand: func(s string) string { return e.expand(s, "") }, Stderr: alog, Clock: d.clk}
	if err := d.checkFrameworks(ctx, aenv); err != nil {
		return err
	}
	// The layout's keys must be empty (nothing the drill judges is
	// anything it did not put there). Only those under the drill's
	// namespace are ever deleted, and only once every one was checked.
	keys := adapter.Keys(x.Inject, x.DLQ, aenv)
	for _, k := range keys {
		if d.opts.AllowRemote && !strings.HasPrefix(k, d.ns) {
			return &RefusedError{Scenario: sc.Name, Part: "system.external", Reason: fmt.Sprintf("key %q is outside the drill's namespace %q: on a Redis off loopback a drill only touches its namespace (start the layout's keys with {namespace})", k, d.ns)}
		}
		n, err := d.rdb.Exists(ctx, k).Result()
		if err != nil {
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		if n > 0 {
			return fmt.Errorf("%w: key %q already holds data: a black-box drill starts from an empty queue and DLQ, so that nothing it judges is anything it did not put there (start the layout's keys with {namespace}, or empty it)", ErrSteadyState, k)
		}
	}
	// A namespace the drill made up is in no one else's key: a key that
	// holds it (a framework's queue:{namespace}) is the drill's too.
	madeUp := d.opts.Namespace == "" || d.opts.NamespaceMadeUp
	for _, k := range keys {
		if strings.HasPrefix(k, d.ns) || madeUp && strings.Contains(k, d.ns) {
			e.keys = append(e.keys, k)
		} else {
			d.h.Notes = append(d.h.Notes, fmt.Sprintf("key %s is outside the drill's namespace: the drill leaves it as the system left it (it deletes only its namespace's keys); empty it before the next drill", k))
		}
	}
	for _, u := range e.urls() {
		if err := checkHTTPURL(u, d.opts.AllowRemote); err != nil {
			return &RefusedError{Scenario: sc.Name, Part: "system.external", Reason: err.Error()}
		}
	}
	// Every check passed: from here on, what is under the namespace is
	// the drill's to delete.
	e.owns = true
	if e.inj, err = adapter.NewInjector(x.Inject, aenv); err != nil {
		return fmt.Errorf("system.external.inject: %w", err)
	}
	if e.rd, err = adapter.NewReader(x.DLQ, aenv); err != nil {
		return fmt.Errorf("system.external.dlq: %w", err)
	}
	e.x0 = oracle.ExternalRun{Copies: sc.Workers.Count, Running: x.Running, Inject: describeInject(x.Inject), DLQ: describeDLQ(x.DLQ),
		Alerts: !x.NoAlerts, DLQShrinks: x.DLQShrinks, File: d.opts.ExternalFile,
		Policy: oracle.PolicyOf(x.Policy), NotPaging: x.NotPaging()}
	if x.Command != nil {
		e.x0.Command = strings.Join(append([]string{x.Command.Path}, x.Command.Args...), " ")
	}

	// The system's copies.
	if x.Running {
		d.h.Workers = []string{"system"}
		e.x0.Copies = 0
	} else {
		var specs []supervisor.Spec
		for i := range sc.Workers.Count {
			name := "w" + strconv.Itoa(i+1)
			d.h.Workers = append(d.h.Workers, name)
			spec, err := e.spec(d, name)
			if err != nil {
				return err
			}
			specs = append(specs, spec)
		}
		if d.sup, err = supervisor.New(specs, supervisor.Options{Logger: d.log}); err != nil {
			return err
		}
		if err := d.sup.Start(ctx); err != nil {
			return fmt.Errorf("start the system: %w", err)
		}
	}
	// Steady state: the DLQ can be read, and every copy is still up when
	// the scenario's clock starts.
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	_, err = e.rd.Read(rctx)
	cancel()
	if err != nil {
		return fmt.Errorf("%w: the DLQ could not be read before the drill: %w", ErrSteadyState, err)
	}
	if x.Ready != nil || x.PresetReady() {
		// The scenario's clock starts once every copy is ready: its first
		// job and its first fault wait for that, not for a blind sleep.
		if err := d.awaitReady(ctx, aenv); err != nil {
			return err
		}
		d.origin = time.Now().Add(200 * time.Millisecond)
		d.h.StartedAt = d.origin.UTC()
		d.clk.Restart(d.origin)
	}
	if !sleepUntil(ctx, d.origin) {
		return ctx.Err()
	}
	if err := d.copiesUp(); err != nil {
		return err
	}
	return nil
}

// copiesUp says which copy of the system exited before the drill
// started, with the end of its log.
func (d *drill) copiesUp() error {
	if d.sup != nil {
		for _, ev := range d.sup.Events() {
			if ev.Kind == supervisor.Exited || ev.Kind == supervisor.StartFailed {
				return fmt.Errorf("%w: copy %s of the system exited before the drill started (%s); the end of its log:\n%s", ErrSteadyState, ev.Worker, exitText(ev), logTail(filepath.Join(d.dir, ev.Worker+".log"), 2048))
			}
		}
	}
	return nil
}

// awaitReady asks the readiness probe — of every copy, when it names
// {worker} — every 100ms until each said ready, a copy exited, or the
// probe's timeout passed; it records how long the system took.
func (d *drill) awaitReady(ctx context.Context, aenv adapter.Env) error {
	e, x := d.ext, d.ext.x
	began := time.Now()
	probes := map[string]adapter.Probe{}
	var what string
	if x.Ready == nil {
		// The framework preset's probe: its worker processes, one per
		// copy, consuming the queue.
		p, err := adapter.NewFrameworkProbe(x.Inject, len(d.h.Workers), aenv)
		if err != nil {
			return fmt.Errorf("system.external.inject: %w", err)
		}
		defer p.Close()
		probes[""], what = p, p.Describe()
	} else {
		what = readyText(*x.Ready)
		targets := []string{""}
		if x.Ready.PerCopy() && !x.Running {
			targets = d.h.Workers
		}
		for _, w := range targets {
			env := aenv
			env.Expand = func(s string) string { return e.expand(s, w) }
			p, err := adapter.NewProbe(*x.Ready, env)
			if err != nil {
				return fmt.Errorf("system.external.ready: %w", err)
			}
			probes[w] = p
		}
	}
	timeout := x.ReadyTimeout
	if timeout == 0 {
		timeout = scenarios.DefaultReadyTimeout
	}
	deadline := began.Add(timeout)
	last := map[string]error{}
	for {
		for _, w := range sortedKeys(probes) {
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := probes[w].Ready(pctx)
			cancel()
			if err == nil {
				delete(probes, w)
				continue
			}
			if !errors.Is(err, adapter.ErrNotReady) && ctx.Err() == nil {
				return fmt.Errorf("%w: the readiness probe could not be asked: %w", ErrSteadyState, err)
			}
			last[w] = err
		}
		if len(probes) == 0 {
			e.x0.Ready = fmt.Sprintf("%s: ready %s after the system started", what, time.Since(began).Round(time.Millisecond))
			return nil
		}
		if err := d.copiesUp(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			w := sortedKeys(probes)[0]
			msg := fmt.Sprintf("the system was not ready %s after it started (system.external.ready.timeout): the probe said: %v", timeout, last[w])
			if w != "" {
				msg += fmt.Sprintf(" (copy %s); the end of its log:\n%s", w, logTail(filepath.Join(d.dir, w+".log"), 2048))
			}
			return fmt.Errorf("%w: %s", ErrSteadyState, msg)
		}
		if !sleepUntil(ctx, time.Now().Add(100*time.Millisecond)) {
			return ctx.Err()
		}
	}
}

// checkFrameworks is the preflight of a framework preset: its adapter
// program must run here (its runtime and the framework's library: else
// the drill is refused with the install line), and the framework's keys
// must hold what that framework keeps there (else refused with what was
// found). It notes a framework version other than the one the adapter
// was written against, and a framework that keeps no dead letters.
func (d *drill) checkFrameworks(ctx context.Context, aenv adapter.Env) error {
	x := d.ext.x
	checked := map[string]bool{}
	for _, p := range []struct {
		part, preset string
		o            layout.FrameworkOptions
	}{{"system.external.inject", x.Inject.Preset, x.Inject.FrameworkOptions()}, {"system.external.dlq", x.DLQ.Preset, x.DLQ.FrameworkOptions()}} {
		fw, ok := layout.FrameworkOf(p.preset)
		if !ok || checked[p.preset+"\x00"+p.o.Runtime] {
			continue
		}
		checked[p.preset+"\x00"+p.o.Runtime] = true
		ver, err := adapter.CheckRuntime(ctx, p.preset, p.o, aenv)
		if err != nil {
			return &RefusedError{Scenario: d.sc.Name, Part: p.part + ".preset", Reason: err.Error()}
		}
		if !strings.Contains(ver, fw.Version) {
			d.h.Notes = append(d.h.Notes, fmt.Sprintf("%s preset: this machine runs %s; its adapter was written against %s %s: read adapters.log if a verdict surprises", fw.Name, ver, fw.Title, fw.Version))
		}
	}
	if fw, ok := layout.FrameworkOf(x.DLQ.Preset); ok && fw.NoDLQ {
		d.h.Notes = append(d.h.Notes, fmt.Sprintf("%s keeps no dead letter queue: %s", fw.Title, fw.DeadLetters))
	}
	if err := adapter.CheckFramework(ctx, x.Inject, x.DLQ, aenv); err != nil {
		if errors.Is(err, adapter.ErrForeignLayout) {
			return &RefusedError{Scenario: d.sc.Name, Part: "system.external", Reason: err.Error()}
		}
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	// The keys a framework keeps a job in by its ID alone (Celery's
	// result, RQ's job hash) must not exist yet: a job of the same ID from
	// an earlier drill would be mixed up with this one's.
	plan, err := sim.NewPlan(d.sc)
	if err != nil {
		return err
	}
	var ids []string
	for {
		a, ok := plan.Next()
		if !ok || a.At >= d.sc.Duration {
			break
		}
		ids = append(ids, a.Job.ID)
	}
	keys := adapter.JobKeys(x.Inject, x.DLQ, aenv, ids)
	for len(keys) > 0 {
		batch := keys[:min(len(keys), 500)]
		keys = keys[len(batch):]
		cmds := make([]*redis.IntCmd, len(batch))
		if _, err := d.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, k := range batch {
				cmds[i] = p.Exists(ctx, k)
			}
			return nil
		}); err != nil {
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		for i, c := range cmds {
			if c.Val() > 0 {
				return fmt.Errorf("%w: key %q already exists: a job of this drill's ID from an earlier drill (or another team's), which the framework would mix up with this one's; give the drill a database of its own, or delete it", ErrSteadyState, batch[i])
			}
		}
		d.ext.jobKeys = append(d.ext.jobKeys, batch...)
	}
	return nil
}

// readyText describes a readiness probe, its placeholders unexpanded.
func readyText(r layout.Ready) string {
	switch {
	case r.Command != nil:
		return "command " + strings.Join(append([]string{r.Command.Path}, r.Command.Args...), " ")
	case r.HTTP != nil:
		return "GET " + r.HTTP.URL
	}
	return "EXISTS " + r.RedisKey
}

// scenarioDir is the folder of the scenario file at path ("." for a
// built-in): relative command paths and dirs are taken from it.
func scenarioDir(path string) string {
	if path == "" || strings.HasPrefix(path, "builtin:") {
		return "."
	}
	return filepath.Dir(path)
}

// logTail is the last n bytes of the log at path, indented.
func logTail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return "    (no log: " + err.Error() + ")"
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > n {
		_, _ = f.Seek(st.Size()-n, 0)
	}
	b, _ := io.ReadAll(f)
	text := strings.TrimRight(string(b), "\n")
	if text == "" {
		return "    (empty)"
	}
	return "    " + strings.ReplaceAll(text, "\n", "\n    ")
}

func exitText(ev supervisor.Event) string {
	switch {
	case ev.Err != "":
		return ev.Err
	case ev.Signal != "":
		return "signal " + ev.Signal
	}
	return "exit code " + strconv.Itoa(ev.ExitCode)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// configStrings are the external block's strings that may hold
// placeholders.
func (e *extState) configStrings() []string {
	var out []string
	cmd := func(c *layout.Command) {
		if c == nil {
			return
		}
		out = append(out, c.Path, c.Dir)
		out = append(out, c.Args...)
		for _, v := range c.Env {
			out = append(out, v)
		}
	}
	cmd(e.x.Command)
	in, dl := e.x.Inject, e.x.DLQ
	cmd(in.Command)
	cmd(dl.Command)
	if in.HTTP != nil {
		out = append(out, in.HTTP.URL)
	}
	if dl.HTTP != nil {
		out = append(out, dl.HTTP.URL)
	}
	return out
}

// environ is the FAULTLINE_* environment of a command (worker "" for an
// adapter's).
func (e *extState) environ(worker string) []string {
	env := []string{EnvRedisURL + "=" + e.vars["redis"], EnvNamespace + "=" + e.vars["namespace"], EnvTimeScale + "=" + e.vars["timeScale"],
		EnvClockOrigin + "=" + e.clockOrigin.Format(time.RFC3339Nano)}
	if worker != "" {
		env = append(env, EnvWorker+"="+worker)
	}
	for _, name := range sortedKeys(e.deps) {
		env = append(env, EnvDependencyAt+workerproc.EnvName(name)+"="+e.deps[name])
	}
	for _, name := range sortedKeys(e.rcvs) {
		env = append(env, EnvReceiverAt+workerproc.EnvName(name)+"="+e.rcvs[name])
		if name == DefaultReceiver {
			env = append(env, EnvSlackURL+"="+e.rcvs[name])
		}
	}
	return env
}

// spec is the supervisor's spec of copy name of the system.
func (e *extState) spec(d *drill, name string) (supervisor.Spec, error) {
	c := e.x.Command
	df := DrillFile{Namespace: d.ns, RedisURL: d.opts.RedisURL, Worker: name, TimeScale: d.opts.Scale, ClockOrigin: e.clockOrigin, Dependencies: e.deps, Receivers: map[string]DrillReceiver{}}
	for n, u := range e.rcvs {
		df.Receivers[n] = DrillReceiver{Kind: "slack", URL: u}
	}
	b, _ := json.MarshalIndent(df, "", "  ")
	path := filepath.Join(d.dir, name+".drill.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return supervisor.Spec{}, err
	}
	logf, err := os.Create(filepath.Join(d.dir, name+".log"))
	if err != nil {
		return supervisor.Spec{}, err
	}
	d.workerLogs = append(d.workerLogs, logf)
	env := append(os.Environ(), e.environ(name)...)
	env = append(env, EnvDrillFile+"="+path)
	for _, k := range sortedKeys(c.Env) {
		env = append(env, k+"="+e.expand(c.Env[k], name))
	}
	args := make([]string, len(c.Args))
	for i, a := range c.Args {
		args[i] = e.expand(a, name)
	}
	dir := e.expand(c.Dir, name)
	if dir == "" {
		dir = scenarioDir(d.l.Path)
	}
	return supervisor.Spec{Name: name, Path: e.expand(c.Path, name), Args: args, Env: env, Dir: dir, Stdout: logf, Stderr: logf}, nil
}

// describeState says which members of a hash or sorted-set queue count as
// queued.
func describeState(st *layout.QueueState) string {
	if st == nil {
		return "every member"
	}
	return st.Field + " in " + strings.Join(st.Queued, ", ")
}

// describeInject says what the inject adapter does, for the report.
func describeInject(in layout.Inject) string {
	if in.Preset == layout.PresetFaultline {
		return "faultline preset: the reference store's queue"
	}
	if fw, ok := layout.FrameworkOf(in.Preset); ok {
		o := in.FrameworkOptions()
		return fmt.Sprintf("%s preset: %s's own client, queue %s, job %s, options %s", fw.Name, fw.Title, o.Queue, cmp.Or(o.Job, "{task}"), o.Options)
	}
	r := in.Resolved()
	pre := ""
	if in.Preset != "" {
		pre = in.Preset + " preset: "
	}
	switch {
	case r.RedisList != nil:
		push := strings.ToUpper(r.RedisList.Push)
		if push == "" {
			push = "LPUSH"
		}
		return pre + push + " " + r.RedisList.Key
	case r.RedisStream != nil:
		if r.RedisStream.Group == "" {
			return pre + "XADD " + r.RedisStream.Key + " (no consumer group declared: the queue at the end is not observable)"
		}
		return pre + "XADD " + r.RedisStream.Key + ", read by group " + r.RedisStream.Group
	case r.RedisHash != nil:
		return pre + "HSET " + r.RedisHash.Key + " (queued: " + describeState(r.RedisHash.State) + ")"
	case r.RedisZSet != nil:
		return pre + "ZADD " + r.RedisZSet.Key + " (queued: " + describeState(r.RedisZSet.State) + ")"
	case r.HTTP != nil:
		return pre + "POST " + r.HTTP.URL
	case r.Command != nil:
		return pre + "JSON lines to " + r.Command.Path
	}
	return pre
}

// describeDLQ says where the DLQ adapter reads, for the report.
func describeDLQ(dl layout.DLQ) string {
	r := dl.Resolved()
	pre := ""
	if dl.Preset != "" {
		pre = dl.Preset + " preset: "
	}
	var s string
	switch {
	case dl.Preset == layout.PresetFaultline:
		s = "the reference store's DLQ"
	case layout.IsFramework(dl.Preset):
		fw, _ := layout.FrameworkOf(dl.Preset)
		s = fw.DeadLetters + ", queue " + dl.FrameworkOptions().Queue
	case r.RedisList != nil:
		s = "Redis lists " + strings.Join(r.RedisList.Keys, ", ")
	case r.RedisZSet != nil:
		s = "Redis sorted sets " + strings.Join(r.RedisZSet.Keys, ", ")
	case r.RedisStream != nil:
		s = "Redis stream " + r.RedisStream.Key
	case r.HTTP != nil:
		s = "GET " + r.HTTP.URL
	case r.Command != nil:
		s = "JSON lines from " + r.Command.Path
	}
	f := r.Fields
	s += " (job ID at " + f.ID
	if f.Severity != "" {
		s += ", severity at " + f.Severity
	}
	return pre + s + ")"
}

// runExternal plays a black-box drill: the producer injects the plan's
// jobs through the adapter, the faults run, the DLQ is read over and
// over; after the scenario's end it waits up to the drain time for every
// job to settle, reads the DLQ and the queue a last time and stops the
// system.
func (d *drill) runExternal(ctx context.Context) {
	sc := &d.sc
	e := d.ext
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	faultCtx, stopFaults := context.WithCancel(runCtx)
	defer stopFaults()
	wg.Go(func() { d.injectAll(runCtx) })
	wg.Go(func() { d.faultsLoop(faultCtx) })
	readEvery := min(max(d.clk.ToWall(sc.Sample), 100*time.Millisecond), time.Second)
	end := time.NewTimer(time.Until(d.clk.WallAt(sc.Duration)))
	defer end.Stop()
	read := time.NewTimer(0)
	defer read.Stop()
	progress := time.NewTicker(time.Second)
	defer progress.Stop()
loop:
	for {
		select {
		case <-read.C:
			d.readDLQ(ctx)
			if d.h.Aborted == "" {
				if why := d.guard(); why != "" {
					d.abort(why, stopFaults)
				}
			}
			read.Reset(readEvery)
		case <-progress.C:
			d.progress()
		case <-end.C:
			break loop
		case <-ctx.Done():
			d.h.Interrupted = "interrupted (" + context.Cause(ctx).Error() + ")"
			break loop
		}
	}
	stop()
	wg.Wait()
	d.mu.Lock()
	d.h.EndedMs = min(d.clk.Elapsed(), sc.Duration).Milliseconds()
	d.mu.Unlock()
	d.undoFaults()
	// The drain: the system runs on, with no fault, until every job has
	// succeeded or sits in the DLQ, or the drain time is up.
	drain := e.x.Drain
	if drain == 0 {
		drain = scenarios.DefaultDrain
	}
	deadline := time.Now().Add(d.clk.ToWall(drain))
	pageWait := e.x.PageWait
	if pageWait == 0 {
		pageWait = scenarios.DefaultPageWait
	}
	// Once settled, the drill still watches a quiet spell — no new call,
	// no call in flight, no change to the DLQ — so that what a system
	// does late (a redelivery after a visibility timeout, a second entry,
	// an undeclared requeue) is seen, not cut off.
	quiet := max(3*readEvery, time.Second)
	var quietSince time.Time
	lastSeen := d.activity()
	for ctx.Err() == nil && d.h.Interrupted == "" {
		d.readDLQ(ctx)
		now := d.activity()
		switch {
		case !d.settled():
			quietSince, e.settled = time.Time{}, -1
		case quietSince.IsZero() || now != lastSeen:
			quietSince = time.Now()
			if e.settled < 0 {
				e.settled = d.clk.Elapsed().Milliseconds()
			}
		case time.Since(quietSince) >= quiet:
			e.quiet = true
		}
		lastSeen = now
		if e.quiet || time.Now().After(deadline) {
			// Every job settled and the system quiet, or the drain is up:
			// the drill still waits for a page that is owed and whose
			// deadline has not passed, up to system.external.pageWait
			// past the drain.
			at := d.clk.Elapsed().Milliseconds()
			in, owed := d.pageOwed(at)
			if !owed || time.Now().After(deadline.Add(d.clk.ToWall(pageWait))) {
				break
			}
			if w := e.x0.PageWait; w == nil || w.IncidentMs != in.FirstMs {
				e.x0.PageWait = &reports.PageWait{Dependency: in.Dependency, IncidentMs: in.FirstMs,
					DeadlineMs: in.FirstMs + d.sc.Invariants.PageWithin.Milliseconds(), FromMs: at, PagedMs: -1}
			}
		}
		if !sleepUntil(ctx, time.Now().Add(readEvery)) {
			break
		}
	}
	if ctx.Err() != nil && d.h.Interrupted == "" {
		d.h.Interrupted = "interrupted (" + context.Cause(ctx).Error() + ") while the jobs drained"
	}
	// The last look, the copies frozen (SIGSTOP) so that nothing moves
	// between the reads: the DLQ, and the queue when the adapter can
	// read it; then the copies stop (SIGCONT, SIGTERM, then SIGKILL).
	if d.sup != nil {
		d.sup.Freeze()
	}
	d.readDLQ(context.Background())
	if !d.settled() {
		e.settled = -1
	}
	if w := e.x0.PageWait; w != nil {
		w.UntilMs = d.clk.Elapsed().Milliseconds()
		p := oracle.Paging{NotPaging: e.x.NotPaging()}
		for _, dl := range d.deliveries() {
			if dl.Accepted && dl.AtMs >= w.IncidentMs && p.IsPage(dl) {
				w.PagedMs = dl.AtMs
				break
			}
		}
	}
	d.mu.Lock()
	d.h.FrozenMs = d.clk.Elapsed().Milliseconds()
	d.mu.Unlock()
	e.x0.DrainMs = d.h.FrozenMs - d.h.EndedMs
	if qr, ok := e.inj.(adapter.QueueReader); ok {
		qctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		ids, err := qr.Queued(qctx)
		cancel()
		e.x0.Queued, e.x0.QueueObservable = ids, err == nil || errors.Is(err, adapter.ErrCorrupt)
		if err != nil {
			d.h.Notes = append(d.h.Notes, "the queue at the end: "+err.Error())
		}
	}
	if d.sup != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		_ = d.sup.Stop(sctx, 3*time.Second)
		cancel()
	}
}

// injectAll injects the plan's jobs at their instants.
func (d *drill) injectAll(ctx context.Context) {
	plan, err := sim.NewPlan(d.sc)
	if err != nil {
		d.log.Error("plan", "err", err)
		return
	}
	n := 0
	for {
		a, ok := plan.Next()
		if !ok || a.At >= d.sc.Duration {
			return
		}
		if !sleepUntil(ctx, d.clk.WallAt(a.At)) {
			return
		}
		n++
		hj := oracle.Job{AtMs: d.clk.Elapsed().Milliseconds(), ID: a.Job.ID, Task: a.Job.Task, Key: a.Job.IdempotencyKey, Outcome: "ok"}
		ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := d.ext.inj.Inject(ictx, layout.Job{ID: a.Job.ID, Task: a.Job.Task, Key: a.Job.IdempotencyKey, Payload: string(a.Job.Payload), N: n})
		cancel()
		d.mu.Lock()
		if err != nil {
			// A timeout may have put the job in all the same: unknown,
			// judged only if the system called for it or dead-lettered it.
			hj.Outcome = "failed"
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				hj.Outcome = "unknown"
			}
			d.ext.x0.InjectErrors = append(d.ext.x0.InjectErrors, oracle.AdapterFailure{AtMs: hj.AtMs, JobID: hj.ID, Error: err.Error()})
			d.log.Warn("inject", "job", a.Job.ID, "err", err)
		}
		d.h.Jobs = append(d.h.Jobs, hj)
		d.created++
		d.mu.Unlock()
	}
}

// itemKey is how a DLQ read knows an entry from one read to the next: by
// its job's ID, or, for a corrupt one, by its bytes (its position moves
// with every push).
func itemKey(en layout.Entry) string {
	if en.Corrupt == "" && en.JobID != "" {
		return "job:" + en.JobID
	}
	h := sha256.Sum256(en.Raw)
	return "corrupt:" + hex.EncodeToString(h[:8])
}

// readDLQ reads the DLQ once and records what changed.
func (d *drill) readDLQ(ctx context.Context) {
	e := d.ext
	e.readMu.Lock()
	defer e.readMu.Unlock()
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	entries, err := e.rd.Read(rctx)
	cancel()
	at := d.clk.Elapsed().Milliseconds()
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		e.x0.ReadErrors = append(e.x0.ReadErrors, oracle.AdapterFailure{AtMs: at, Error: err.Error()})
		return
	}
	now := map[string]int{}
	items := map[string]oracle.DLQItem{}
	total := 0
	for _, en := range entries {
		if en.Inactive {
			continue
		}
		k := itemKey(en)
		now[k]++
		total++
		if _, ok := items[k]; !ok {
			items[k] = oracle.DLQItem{JobID: en.JobID, Severity: en.Severity, Class: en.Class, Corrupt: en.Corrupt, Source: en.Source}
		}
	}
	r := oracle.DLQRead{AtMs: at, Total: total}
	for _, k := range sortedKeys(now) {
		for range now[k] - e.cur[k] {
			r.Added = append(r.Added, items[k])
		}
	}
	for _, k := range sortedKeys(e.cur) {
		for range e.cur[k] - now[k] {
			r.Removed = append(r.Removed, e.items[k])
		}
	}
	for k, it := range items {
		e.items[k] = it
	}
	e.cur, e.entries = now, entries
	e.x0.ReadCount++
	if len(r.Added) > 0 || len(r.Removed) > 0 || !e.read {
		e.x0.Reads = append(e.x0.Reads, r)
	}
	e.read = true
}

// activity is a fingerprint of what the system did: its calls, and the
// DLQ's reads that saw a change.
func (d *drill) activity() [2]int {
	n := 0
	for _, g := range d.gws {
		n += len(g.Calls())
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return [2]int{n, len(d.ext.x0.Reads)}
}

// settled reports whether every injected job succeeded (its dependency
// answered a call for it with success) or sits in the DLQ.
func (d *drill) settled() bool {
	e := d.ext
	for _, g := range d.gws {
		for _, c := range g.Calls() {
			switch c.Outcome {
			case gateway.OutcomeOK, gateway.OutcomeReplayed:
				e.jobsDone[c.Job] = true
			case "":
				return false // a call in flight
			}
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, j := range d.h.Jobs {
		if j.Outcome != "ok" || e.jobsDone[j.ID] || e.cur["job:"+j.ID] > 0 {
			continue
		}
		return false
	}
	return true
}

// deliveries are the receivers' notifications as the history keeps them,
// in time order.
func (d *drill) deliveries() []oracle.Delivery {
	var out []oracle.Delivery
	for _, r := range d.rcvs {
		for _, n := range r.Received() {
			hd := oracle.Delivery{AtMs: n.AtMs, Receiver: n.Receiver, Attempt: n.Attempt, Accepted: n.Accepted}
			if !n.Accepted {
				hd.Error = string(n.Outcome)
				if n.Status > 0 {
					hd.Error += " " + strconv.Itoa(n.Status)
				}
			}
			hd.Alerts = []oracle.Alert{{Name: n.Title, Severity: n.Severity, Summary: n.Text, Status: "firing", Count: 1}}
			out = append(out, hd)
		}
	}
	slices.SortStableFunc(out, func(a, b oracle.Delivery) int { return int(a.AtMs - b.AtMs) })
	return out
}

// pageOwed returns the incident of critical answers whose page has not
// come and whose deadline has not passed at nowMs (scenario time), as the
// oracle groups and recognises them: the page may still come (a group
// wait, a batch).
func (d *drill) pageOwed(nowMs int64) (oracle.Incident, bool) {
	within := d.sc.Invariants.PageWithin
	if d.ext.x.NoAlerts || within <= 0 {
		return oracle.Incident{}, false
	}
	return oracle.PendingPage(d.calls(), d.deliveries(), within, oracle.Paging{NotPaging: d.ext.x.NotPaging()}, nowMs)
}

// finishExternal adds what a black-box drill observed to the history.
func (d *drill) finishExternal(h *oracle.History) {
	e := d.ext
	d.mu.Lock()
	defer d.mu.Unlock()
	x := e.x0
	x.SettledMs = e.settled
	x.Entries = e.entries
	if x.Entries == nil {
		x.Entries = []layout.Entry{}
	}
	h.External = &x
	h.Deliveries = append(h.Deliveries, d.deliveries()...)
	if d.opts.Scale > 1 {
		h.Notes = append(h.Notes, fmt.Sprintf("time scale %v: the system was given it ({timeScale}) and is trusted to scale its own sleeps, timeouts, backoffs and Retry-After waits by it; whatever it does not scale took %v× longer in scenario time", d.opts.Scale, d.opts.Scale))
	}
	if x.Running {
		h.Notes = append(h.Notes, "the system was already running: the drill started no copy, so no worker fault (crash, graceful stop, stall) was drilled")
	}
	if d.sup != nil {
		// Exits the drill did not cause: a copy that keeps crashing on
		// its own is a finding, not a detail of the process counts.
		byWorker := map[string][]string{}
		for _, ev := range d.sup.Events() {
			if ev.Kind == supervisor.Exited && ev.Unexpected {
				byWorker[ev.Worker] = append(byWorker[ev.Worker], exitText(ev))
			}
		}
		for _, w := range sortedKeys(byWorker) {
			exits := byWorker[w]
			h.Notes = append(h.Notes, fmt.Sprintf("copy %s of the system exited %d time(s) on its own (the last: %s) and was restarted: see its log", w, len(exits), exits[len(exits)-1]))
		}
	}
	if d.opts.Keep {
		h.Notes = append(h.Notes, "the copies' logs and adapters.log (the adapters' stderr) are kept in "+d.dir)
	}
}

// closeExternal closes the adapters and, unless Keep, deletes the
// layout's keys the drill checked empty at its start.
func (d *drill) closeExternal() {
	e := d.ext
	if e.inj != nil {
		_ = e.inj.Close()
	}
	if e.rd != nil {
		_ = e.rd.Close()
	}
	if d.rdb != nil && d.claimed && e.owns && !d.opts.Keep {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if len(e.keys) > 0 {
			_ = d.rdb.Unlink(ctx, e.keys...).Err()
		}
		for ks := e.jobKeys; len(ks) > 0; {
			n := min(len(ks), 500)
			_ = d.rdb.Unlink(ctx, ks[:n]...).Err()
			ks = ks[n:]
		}
		// The system's own keys under the namespace (processing lists,
		// retry sets): the namespace is the drill's.
		_ = unlinkMatching(ctx, d.rdb, globEscape(d.ns)+":*")
		if d.opts.Namespace == "" || d.opts.NamespaceMadeUp {
			// A namespace the drill made up is in no one else's key: a
			// system that puts it inside its own keys (asynq's
			// asynq:{QUEUE}:...) is cleaned too.
			_ = unlinkMatching(ctx, d.rdb, "*"+globEscape(d.ns)+"*")
		}
	}
}

// firstMatching returns a key matching a SCAN pattern, "" when none does.
func firstMatching(ctx context.Context, rdb *redis.Client, pattern string) (string, error) {
	var cursor uint64
	for {
		keys, next, err := rdb.Scan(ctx, cursor, pattern, 1000).Result()
		if err != nil || len(keys) > 0 {
			if len(keys) > 0 {
				return keys[0], err
			}
			return "", err
		}
		if cursor = next; cursor == 0 {
			return "", nil
		}
	}
}

// unlinkMatching removes the keys matching a SCAN pattern, in batches.
func unlinkMatching(ctx context.Context, rdb *redis.Client, pattern string) error {
	var cursor uint64
	for {
		keys, next, err := rdb.Scan(ctx, cursor, pattern, 1000).Result()
		if err != nil {
			return err
		}
		if len(keys) > 0 {
			if err := rdb.Unlink(ctx, keys...).Err(); err != nil {
				return err
			}
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

// globEscape escapes the glob characters of a SCAN pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// urls are the adapters' HTTP URLs, expanded.
func (e *extState) urls() []string {
	var out []string
	if h := e.x.Inject.HTTP; h != nil {
		out = append(out, e.expand(h.URL, ""))
	}
	if h := e.x.DLQ.HTTP; h != nil {
		out = append(out, e.expand(h.URL, ""))
	}
	return out
}

// checkHTTPURL refuses an adapter's URL off loopback unless allowRemote:
// a drill sends its jobs to, and reads, only what it is told it may.
func checkHTTPURL(raw string, allowRemote bool) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("adapter URL %q: not an http:// URL", raw)
	}
	if !isLoopback(u.Hostname()) && !allowRemote {
		return fmt.Errorf("adapter URL %s: %s is not on loopback: a drill injects jobs into and reads only a system on loopback unless --allow-remote", u.Redacted(), u.Hostname())
	}
	return nil
}
