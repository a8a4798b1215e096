package drill

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/faultline/faultline/drill/gateway"
	"github.com/faultline/faultline/drill/proxy"
	"github.com/faultline/faultline/drill/receiver"
	"github.com/faultline/faultline/drill/supervisor"
	"github.com/faultline/faultline/drill/workerproc"
	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/alert/sink"
	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/reference/worker"
	"github.com/faultline/faultline/scenarios"
	"github.com/faultline/faultline/sim"
)

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

// maskURL is a Redis URL as it may be printed: its host and port only
// (never its password).
func maskURL(raw string) string {
	if !strings.Contains(raw, "://") {
		return raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "(a Redis URL that does not parse)"
	}
	return u.Host
}
