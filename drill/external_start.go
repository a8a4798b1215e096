package drill

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/drill/gateway"
	"github.com/faultline/faultline/drill/receiver"
	"github.com/faultline/faultline/drill/supervisor"
	"github.com/faultline/faultline/layout"
	"github.com/faultline/faultline/layout/adapter"
	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/scenarios"
	"github.com/faultline/faultline/sim"
)

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
