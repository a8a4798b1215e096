// Package workerproc is the worker process of a staging drill: what
// `faultline worker` runs. It is reference/worker.Runner on a real Redis
// (through the drill's proxy), with the scenario's system configuration —
// classifier rules, retry policy, breakers and fallbacks — built by
// sim.BuildWorkerSystem from the very scenario the drill runs (the worker
// loads it again and refuses one whose effective document differs), on
// the drill's scaled clock. Its handler calls a task's dependency at the
// drill's fault gateway with the job's ID and idempotency key.
//
// What runs once in a real deployment runs once in the drill process, not
// here: the alerter (this process forwards each failure to the drill's
// feed, where the drill's one alerter hears it), the DLQ monitor and the
// off-peak auto-retry. Breakers and retry budgets are per process, as in
// most deployments. Each attempt's outcome, each breaker transition and
// each dead letter kept in memory is reported to the feed, in batches sent
// every few milliseconds (see feed); the reports of a process killed with
// SIGKILL that were not sent yet are lost, and those attempts are judged
// from their moves alone.
package workerproc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/drill/gateway"
	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/reference/degrade"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/fleet"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/reference/worker"
	"github.com/faultline/faultline/scenarios"
	"github.com/faultline/faultline/sim"
)

// Config is what the drill hands a worker process, in a file.
type Config struct {
	// Name is the worker's name in the scenario (w1..wN).
	Name string `json:"name"`
	// Source is the scenario's file path, or "builtin:NAME"; Hash the
	// effective document's hash (scenarios.Loaded.Hash) the drill ran.
	Source string `json:"source"`
	Hash   string `json:"hash"`
	Seed   uint64 `json:"seed"`
	// RedisURL is the Redis the worker uses (the drill's proxy);
	// Namespace the drill's; EventStream the store's stream length.
	RedisURL string `json:"redisUrl"`
	// DLQRedisURL is the Redis of the DLQ role (the drill's second
	// proxy): dead-letter writes and held-set flushes go through it, so a
	// dlq-store fault cuts them alone ("" = RedisURL).
	DLQRedisURL string `json:"dlqRedisUrl,omitempty"`
	Namespace   string `json:"namespace"`
	EventStream int    `json:"eventStream"`
	// Start is the scenario's start, Origin the wall instant it began,
	// Scale the time scale.
	Start  time.Time `json:"start"`
	Origin time.Time `json:"origin"`
	Scale  float64   `json:"scale"`
	// Gateways are the fault gateways' URLs by dependency; CallTimeout
	// the wall-clock timeout of a call to one.
	Gateways    map[string]string `json:"gateways"`
	CallTimeout time.Duration     `json:"callTimeout"`
	// Feed is the drill's URL for the worker's reports; "" in a
	// standalone worker (Standalone), which reports nothing.
	Feed string `json:"feed"`
	// Receivers are the alert receivers' URLs by name: a standalone
	// worker alerts through its own reference alerter to them (a
	// receiver the scenario names but the drill does not have gets the
	// first one's URL). Empty in a drill of the reference worker, whose
	// alerter is the drill's.
	Receivers map[string]string `json:"receivers,omitempty"`
	// Concurrency is the jobs this process runs at once (default 1).
	Concurrency int `json:"concurrency"`
	// Limits are the limits the drill loaded the scenario within
	// (faultline drill's --max-file-size, --allow-include-outside, …):
	// the worker loads it again within them. Nil: the defaults.
	Limits *scenarios.Limits `json:"limits,omitempty"`
	// Broken turns off part of the reference, for the drill's own specs
	// that show the oracle catching a broken worker: one of Defects
	// ("ack-before-dlq" acks a job the pipeline decided to dead-letter).
	// Empty in every real drill.
	Broken string `json:"broken,omitempty"`
}

// The environment variables a drill hands a worker its Redis URLs in, so
// that the configuration file holds no password.
const (
	EnvRedisURL    = "FAULTLINE_WORKER_REDIS_URL"
	EnvDLQRedisURL = "FAULTLINE_WORKER_DLQ_REDIS_URL"
)

// ReadConfig reads a Config file; its Redis URLs, when empty, come from
// EnvRedisURL and EnvDLQRedisURL.
func ReadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Config
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("worker config %s: %w", path, err)
	}
	if c.RedisURL == "" {
		c.RedisURL = os.Getenv(EnvRedisURL)
	}
	if c.DLQRedisURL == "" {
		c.DLQRedisURL = os.Getenv(EnvDLQRedisURL)
	}
	for _, u := range []string{c.RedisURL, c.DLQRedisURL} {
		if u == "" || !strings.Contains(u, "://") {
			continue
		}
		if _, err := redis.ParseURL(u); err != nil {
			// Not the parser's error: it may quote the URL, password and all.
			return nil, fmt.Errorf("worker config %s: a Redis URL is not a redis:// URL", path)
		}
	}
	if c.Name == "" || c.Source == "" || c.RedisURL == "" || c.Namespace == "" || c.Feed == "" || !(c.Scale >= 1) {
		return nil, fmt.Errorf("worker config %s: name, source, redisUrl, namespace, feed and scale ≥ 1 are required", path)
	}
	return &c, nil
}

// WriteConfig writes c to path (mode 0600: it holds the Redis URL).
func WriteConfig(path string, c *Config) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// ErrScenarioChanged: the scenario file changed since the drill loaded it.
var ErrScenarioChanged = errors.New("scenario changed since the drill loaded it")

// LoadScenario loads a scenario from source (a path or "builtin:NAME")
// within lim.
func LoadScenario(source string, lim scenarios.Limits) (*scenarios.Loaded, error) {
	if name, ok := strings.CutPrefix(source, "builtin:"); ok {
		return lim.LoadBuiltin(name)
	}
	return lim.Load(source)
}

// Report is one message of a worker to the drill's feed.
type Report struct {
	Kind   string `json:"kind"` // "attempt", "breaker", "kept", "overflow", "hello"
	Worker string `json:"worker"`
	// Proc names the process (worker and pid) and Seq numbers its
	// reports from 1: the drill takes each once, though a batch whose
	// answer was lost is sent again.
	Proc string `json:"proc"`
	Seq  uint64 `json:"seq"`
	// Attempt, with Failure when the attempt failed (for the drill's
	// alerter: the fingerprint is the drill's).
	Attempt *oracle.Attempt `json:"attempt,omitempty"`
	Failure *alert.Failure  `json:"failure,omitempty"`
	// Breaker is a breaker transition.
	Breaker *oracle.BreakerTransition `json:"breaker,omitempty"`
	// KeptJob and KeptErr: a decided dead letter kept in memory.
	KeptJob *job.Job `json:"keptJob,omitempty"`
	KeptErr string   `json:"keptErr,omitempty"`
	// Overflow is the store's report of a full DLQ (store.Config.OnOverflow).
	Overflow *store.Overflow `json:"overflow,omitempty"`
}

// feed posts reports to the drill, in batches, from its own goroutine:
// a worker does not wait for the drill between jobs (a millisecond of the
// wall clock is K milliseconds of scenario time at time scale K). A report
// waits at most feedEvery; a worker killed with SIGKILL loses the ones
// not yet sent (at most that much), and its attempts are then judged from
// their moves alone. A graceful stop sends them all.
type feed struct {
	url    string
	client *http.Client
	log    *slog.Logger
	ch     chan Report
	done   chan struct{}
	proc   string
	seq    atomic.Uint64
}

// feedEvery is how long a report may wait to be sent; feedBatch the most
// sent at once.
const (
	feedEvery = 5 * time.Millisecond
	feedBatch = 256
)

func newFeed(url, proc string, log *slog.Logger) *feed {
	f := &feed{url: url, client: &http.Client{Timeout: 5 * time.Second}, log: log, ch: make(chan Report, 4096), done: make(chan struct{}), proc: proc}
	go f.loop()
	return f
}

// send numbers r and queues it (blocking only when the queue is full:
// back-pressure rather than a lost report).
func (f *feed) send(r Report) {
	r.Proc, r.Seq = f.proc, f.seq.Add(1)
	f.ch <- r
}

// close sends what is queued and stops.
func (f *feed) close() {
	close(f.ch)
	<-f.done
}

func (f *feed) loop() {
	defer close(f.done)
	var batch []Report
	tick := time.NewTicker(feedEvery)
	defer tick.Stop()
	for {
		select {
		case r, ok := <-f.ch:
			if !ok {
				f.post(batch)
				return
			}
			batch = append(batch, r)
			if len(batch) >= feedBatch {
				f.post(batch)
				batch = batch[:0]
			}
		case <-tick.C:
			if len(batch) > 0 {
				f.post(batch)
				batch = batch[:0]
			}
		}
	}
}

// post sends a batch as JSON lines, trying three times.
func (f *feed) post(batch []Report) {
	if len(batch) == 0 || f.url == "" {
		return
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, r := range batch {
		if err := enc.Encode(r); err != nil {
			f.log.Error("encode report", "err", err)
		}
	}
	b := buf.Bytes()
	for try := range 3 {
		resp, err := f.client.Post(f.url, "application/x-ndjson", bytes.NewReader(b))
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode < 300 {
				return
			}
			err = fmt.Errorf("feed answered %s", resp.Status)
		}
		if try == 2 {
			f.log.Error("reports lost", "n", len(batch), "err", err)
		}
	}
}

// forwarder is the worker's alerter: it keeps each failure for the
// attempt's report; the drill's alerter hears it there.
type forwarder struct {
	mu   sync.Mutex
	last map[string]alert.Failure
}

func (f *forwarder) JobFailed(a alert.Failure) string {
	f.mu.Lock()
	f.last[a.JobID] = a
	f.mu.Unlock()
	return ""
}

func (f *forwarder) take(id string) (alert.Failure, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, ok := f.last[id]
	delete(f.last, id)
	return a, ok
}

// Run runs the worker until ctx is done (SIGTERM), then shuts the runner
// down gracefully.
func Run(ctx context.Context, cfg *Config, logger *slog.Logger) error {
	var lim scenarios.Limits
	if cfg.Limits != nil {
		lim = *cfg.Limits
	}
	l, err := LoadScenario(cfg.Source, lim)
	if err != nil {
		return fmt.Errorf("load scenario %s: %w", cfg.Source, err)
	}
	if cfg.Hash != "" && l.Hash != cfg.Hash {
		return fmt.Errorf("%w: %s (now %s, the drill ran %s)", ErrScenarioChanged, cfg.Source, l.Hash, cfg.Hash)
	}
	sc := l.Scenario.WithDefaults()
	sc.Seed = cfg.Seed
	start := sc.Start
	if !cfg.Start.IsZero() {
		start = cfg.Start // a standalone worker's: the wall clock's at its origin
	}
	clk, err := clock.NewScaled(start, cfg.Origin, cfg.Scale, nil)
	if err != nil {
		return err
	}
	var fd *feed // set below, before the store is used
	scfg := sc.StoreConfig()
	scfg.Namespace = cfg.Namespace
	scfg.EventStream = cfg.EventStream
	scfg.OnOverflow = func(o store.Overflow) { fd.send(Report{Kind: "overflow", Worker: cfg.Name, Overflow: &o}) }
	client := redisstore.NewClient(cfg.RedisURL)
	defer client.Close()
	st, err := redisstore.New(client, scfg)
	if err != nil {
		return err
	}
	fd = newFeed(cfg.Feed, fmt.Sprintf("%s/%d", cfg.Name, os.Getpid()), logger)
	defer fd.close()
	env := sim.Env{Clock: clk, Scenario: &sc, Rand: func(name string) *rand.Rand {
		return sim.NewStream(cfg.Seed, name+"/"+cfg.Name)
	}, Budget: st, Breakers: st, Process: cfg.Name,
		// A shared breaker's store call holds its lock: bounded by a
		// tenth of the lease's wall time, at most a second.
		StoreTimeout: min(max(clk.ToWall(sc.Workers.LeaseTTL/10), 50*time.Millisecond), time.Second)}
	sys, err := sim.BuildWorkerSystem(&sc, env, st)
	if err != nil {
		return err
	}
	ms := func(t time.Time) int64 { return t.Sub(start).Milliseconds() }
	for _, nb := range sys.Breakers {
		nb.Breaker.OnStateChange(func(t degrade.Transition) {
			fd.send(Report{Kind: "breaker", Worker: cfg.Name, Breaker: &oracle.BreakerTransition{AtMs: ms(t.At), Worker: cfg.Name, Breaker: nb.Name,
				From: t.From.String(), To: t.To.String(), Reason: t.Reason}})
		})
	}
	fw := &forwarder{last: map[string]alert.Failure{}}
	var alerter worker.Alerter = fw
	var ctl *fleet.Control
	if len(cfg.Receivers) > 0 {
		// A standalone worker alerts, watches its DLQ and retries it off
		// peak by itself: once per fleet, under the store's leader.
		var hear breakerListener
		if alerter, hear, ctl, err = standaloneControl(&sc, cfg, clk, st, sys); err != nil {
			return err
		}
		for _, nb := range sys.Breakers {
			nb.Breaker.OnStateChange(hear.BreakerChanged)
		}
	}
	classifier, policy := sys.Classifier, sys.Policy
	switch cfg.Broken {
	case "retry-final", "no-retry-after":
		classifier = brokenClassifier{Classifier: classifier, defect: cfg.Broken}
	case "hot-loop", "no-retry":
		policy = brokenPolicy{Policy: policy, defect: cfg.Broken}
	case "no-page":
		alerter = brokenAlerter{alerter}
	}
	core, err := worker.NewCore(worker.Config{Classifier: classifier, Policy: policy, Alerter: alerter, Guards: sys.Guards})
	if err != nil {
		return err
	}
	// The DLQ role: its own connection, through the drill's second proxy.
	dst := st
	if cfg.DLQRedisURL != "" && cfg.DLQRedisURL != cfg.RedisURL {
		dclient := redisstore.NewClient(cfg.DLQRedisURL)
		defer dclient.Close()
		if dst, err = redisstore.New(dclient, scfg); err != nil {
			return err
		}
	}
	var dlqStore worker.DeadLetterer = dst
	switch cfg.Broken {
	case "ack-before-dlq":
		dlqStore = ackBeforeDLQ{st}
	case "bare-dlq", "trim-dlq":
		dlqStore = brokenDeadLetterer{DeadLetterer: dst, st: dst, defect: cfg.Broken}
	}
	pipe, err := worker.NewPipeline(worker.PipelineConfig{Core: core, Queue: st, DLQ: dlqStore, Holder: splitHolder{hold: st, flush: dst}, Heartbeater: st,
		LeaseTTL: sc.Workers.LeaseTTL,
		// The fleet's failure history, in the store: a job's attempts run
		// in several processes.
		History: st.History(),
		OnKept: func(j job.Job, kerr error) {
			fd.send(Report{Kind: "kept", Worker: cfg.Name, KeptJob: &j, KeptErr: kerr.Error()})
		}})
	if err != nil {
		return err
	}
	calls := &answers{m: map[string]gateway.Answer{}}
	clients := map[string]*gateway.Client{}
	for dep, u := range cfg.Gateways {
		clients[dep] = gateway.NewClient(u, cfg.CallTimeout)
	}
	// A task's service time (with its jitter, from the worker's own
	// stream) is spent before the dependency is called, on the scaled
	// clock.
	svc := map[string]scenarios.TaskSpec{}
	jitter := env.Rand("workload/service")
	var jmu sync.Mutex
	for _, t := range sc.Workload.Tasks {
		svc[t.Name] = t
	}
	handler := func(ctx context.Context, j job.Job) error {
		if t, ok := svc[j.Task]; ok && t.Service > 0 {
			d := t.Service
			if t.ServiceJitter > 0 {
				jmu.Lock()
				ms := int64(t.ServiceJitter / time.Millisecond)
				d += time.Duration(jitter.Int64N(2*ms+1))*time.Millisecond - t.ServiceJitter
				jmu.Unlock()
			}
			done := make(chan struct{})
			tm := clk.AfterFunc(max(d, 0), func() { close(done) })
			select {
			case <-done:
			case <-ctx.Done():
				tm.Stop()
				return context.Cause(ctx)
			}
		}
		dep := j.Dependency
		if dep == "" { // a job enqueued from outside: its task's dependency
			dep = svc[j.Task].Dependency
		}
		c := clients[dep]
		if c == nil {
			return nil
		}
		a, err := c.CallFor(ctx, gateway.Caller{Job: j.ID, Key: j.IdempotencyKey, Task: j.Task, Attempt: j.Attempts + 1, Worker: cfg.Name})
		calls.put(j.ID, a)
		return err
	}
	if cfg.Broken == "drop" || cfg.Broken == "rerun" || cfg.Broken == "hot-loop" {
		handler = brokenHandler(cfg.Broken, st, clk.Now, handler)
	}
	queues := []string{}
	for _, t := range sc.Workload.Tasks {
		q := t.Queue
		if q == "" {
			q = t.Name
		}
		if !contains(queues, q) {
			queues = append(queues, q)
		}
	}
	r, err := worker.NewRunner(worker.RunnerConfig{Pipeline: pipe, Source: st, Handler: handler, Clock: clk,
		Workers: max(cfg.Concurrency, 1), Queues: queues, Lanes: sys.Lanes(&sc), LeaseTTL: sc.Workers.LeaseTTL, Logger: logger,
		// A second of scenario time, as the simulator's maintenance
		// wakes are, and never slower than a tenth of the lease.
		TickInterval: min(time.Second, sc.Workers.LeaseTTL/10),
		// A store call is bounded in wall time by a third of the lease's
		// wall time (StoreTimeout is a context deadline, not a clock
		// timer): a call hung on a cut connection gives up while the
		// lease still holds, so the dead letter is parked, not fenced.
		StoreTimeout: max(clk.ToWall(sc.Workers.LeaseTTL/3), 50*time.Millisecond),
		OnFinish: func(a worker.Attempt, o worker.Outcome, err error) {
			ans := calls.take(a.Job.ID)
			ha := &oracle.Attempt{AtMs: ms(a.StartedAt), EndMs: ms(clk.Now()), Worker: cfg.Name, JobID: a.Job.ID, Fault: ans.Fault, Truth: ans.Class,
				Action: o.Action.String(), Result: resultOf(err)}
			if o.Err != nil {
				ha.Err, ha.Class, ha.Severity, ha.Rule = o.Err.Error(), o.Verdict.Class.String(), o.Verdict.Severity.String(), o.Verdict.Rule
			}
			rep := Report{Kind: "attempt", Worker: cfg.Name, Attempt: ha}
			if f, ok := fw.take(a.Job.ID); ok {
				rep.Failure = &f
			}
			fd.send(rep)
		}})
	if err != nil {
		return err
	}
	// Up: a round trip to Redis through the drill's proxy, then the word
	// to the drill, then the scenario's start.
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, err = st.Counts(pctx)
	cancel()
	if err != nil {
		return fmt.Errorf("redis through the drill's proxy: %w", err)
	}
	fd.send(Report{Kind: "hello", Worker: cfg.Name})
	if wait := time.Until(cfg.Origin); wait > 0 {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil
		}
	}
	if ctl == nil {
		return r.Run(ctx)
	}
	// The fleet's control beside the runner: it stops (relaying what is
	// left and resigning) once the runner has shut down.
	cctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- ctl.Run(cctx) }()
	err = r.Run(ctx)
	stop()
	if cerr := <-done; cerr != nil {
		// What is left unrelayed is logged, not the process's failure: the
		// jobs are the runner's, and it stopped cleanly or said why.
		logger.Warn("fleet control: stop", "err", cerr)
	}
	return err
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// resultOf names what became of an attempt's move.
func resultOf(err error) string {
	switch {
	case err == nil:
		return "applied"
	case errors.Is(err, queue.ErrLeaseLost):
		return "fenced"
	case errors.Is(err, worker.ErrKept):
		return "kept"
	}
	return "failed"
}

// answers are the gateway's answers to each job's latest call, until the
// attempt's report takes them.
type answers struct {
	mu sync.Mutex
	m  map[string]gateway.Answer
}

func (a *answers) put(id string, ans gateway.Answer) {
	a.mu.Lock()
	a.m[id] = ans
	a.mu.Unlock()
}

func (a *answers) take(id string) gateway.Answer {
	a.mu.Lock()
	defer a.mu.Unlock()
	ans := a.m[id]
	delete(a.m, id)
	return ans
}

// ackBeforeDLQ is a deliberately broken worker for the drill's specs: it
// acks a job whose dead letter was decided, so the entry is never written
// (the seed's "ack before the DLQ write" bug).
type ackBeforeDLQ struct{ st *redisstore.Store }

func (b ackBeforeDLQ) DeadLetter(ctx context.Context, l queue.Lease, e dlq.Entry, now time.Time) (dlq.AddResult, error) {
	return dlq.AddResult{}, b.st.Ack(ctx, l, e.Job, now)
}

// splitHolder parks a dead letter through the queue role's connection
// (the DLQ store may be the part that is down) and writes held ones
// through the DLQ role's, as the simulator's DLQ-store outage does.
type splitHolder struct{ hold, flush *redisstore.Store }

func (h splitHolder) Hold(ctx context.Context, l queue.Lease, e dlq.Entry, now time.Time) error {
	return h.hold.Hold(ctx, l, e, now)
}

func (h splitHolder) FlushHeld(ctx context.Context, now time.Time, limit int) (dlq.FlushResult, error) {
	return h.flush.FlushHeld(ctx, now, limit)
}
