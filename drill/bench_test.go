package drill_test

// Benchmarks of the live path on a real redis-server (redistest.Shared;
// skipped without the binary unless FAULTLINE_REQUIRE_REDIS=1): jobs/s
// through real `faultline worker` processes beside the raw go-redis
// LPUSH/BRPOP loop on the same server in the same run, and the drill's
// own parts per call (gateway, proxy, receiver, oracle):
//
//	FAULTLINE_REQUIRE_REDIS=1 go test ./drill -run '^$' -bench . -benchtime 3000x
//
// Every listener and every connection is on 127.0.0.1.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/drill"
	"github.com/faultline/faultline/drill/gateway"
	"github.com/faultline/faultline/drill/proxy"
	"github.com/faultline/faultline/drill/receiver"
	"github.com/faultline/faultline/drill/supervisor"
	"github.com/faultline/faultline/drill/workerproc"
	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/alert/sink"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/reference/store/redisstore/redistest"
	"github.com/faultline/faultline/scenarios"
)

const (
	// benchDB is the database the benchmarks use on the shared
	// redis-server (a benchmark run has no specs).
	benchDB = 15
	// benchScenario is the benchmarks' scenario: one task, no dependency,
	// no service time, no faults.
	benchScenario = "testdata/bench.yaml"
	benchTask     = "noop"
	benchQueue    = "bench"
	// benchConcurrency is the jobs each worker process runs at once.
	benchConcurrency = 4
	// rawReferenceJobs and rawReferenceConsumers are the fixed raw loop
	// BenchmarkLiveWorkers measures once before its sub-benchmarks, for
	// the ratio.
	rawReferenceJobs      = 20000
	rawReferenceConsumers = 8
)

// benchRedisAddr returns the address of the process's real redis-server,
// or skips the benchmark when there is none (fails it when
// FAULTLINE_REQUIRE_REDIS=1).
func benchRedisAddr(b *testing.B) string {
	b.Helper()
	srv, err := redistest.Shared()
	if errors.Is(err, redistest.ErrNoServer) && !redistest.Required() {
		b.Skip("redis-server is not on PATH: the drill's benchmarks need a real Redis")
	}
	if err != nil {
		b.Fatal(err)
	}
	return srv.Addr
}

// benchRedisURL is the URL of the benchmarks' database.
func benchRedisURL(addr string) string { return fmt.Sprintf("redis://%s/%d", addr, benchDB) }

// benchFlush empties the benchmarks' database.
func benchFlush(b *testing.B, addr string) {
	b.Helper()
	c := redisstore.NewClient(benchRedisURL(addr))
	defer c.Close()
	if err := c.FlushDB(context.Background()).Err(); err != nil {
		b.Fatal(err)
	}
}

// The faultline binary the benchmarks start their workers from. The
// suite's faultlineBin is built in SynchronizedBeforeSuite, which only
// RunSpecs runs; benchmarks build their own, once per process. Under
// `go test` it goes beside the test binary, in the go command's work
// directory, which the go command removes at the end (no benchmark hook
// runs at the end of the process); a test binary run by hand leaves it in
// a temporary directory.
var benchBin struct {
	once sync.Once
	path string
	err  error
}

func benchFaultline(b *testing.B) string {
	b.Helper()
	if faultlineBin != "" {
		return faultlineBin
	}
	benchBin.once.Do(func() {
		parent := ""
		if exe, err := os.Executable(); err == nil && strings.Contains(exe, "go-build") {
			parent = filepath.Dir(exe)
		}
		dir, err := os.MkdirTemp(parent, "faultline-drill-bench-bin-")
		if err != nil {
			benchBin.err = err
			return
		}
		bin := filepath.Join(dir, "faultline")
		out, err := exec.Command("go", "build", "-o", bin, "github.com/faultline/faultline/cmd/faultline").CombinedOutput()
		if err != nil {
			benchBin.err = fmt.Errorf("build the faultline binary the workers run: %w\n%s", err, out)
			_ = os.RemoveAll(dir)
			return
		}
		benchBin.path = bin
	})
	if benchBin.err != nil {
		b.Fatal(benchBin.err)
	}
	return benchBin.path
}

// BenchmarkRawRedisListLoop is the baseline of the live path: one producer
// LPUSHes b.N small job IDs while N consumer goroutines BRPOP them, on the
// same redis-server, go-redis and nothing else. push=1 sends one LPUSH per
// job (the producer is then usually the bound); push=100 sends 100 IDs per
// LPUSH, so the consumers are.
func BenchmarkRawRedisListLoop(b *testing.B) {
	addr := benchRedisAddr(b)
	for _, batch := range []int{1, 100} {
		for _, consumers := range []int{1, 4, 16} {
			b.Run(fmt.Sprintf("push=%d/consumers=%d", batch, consumers), func(b *testing.B) {
				benchFlush(b, addr)
				b.ResetTimer()
				el, err := rawListLoop(context.Background(), addr, b.N, consumers, batch)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(el.Nanoseconds())/float64(b.N), "ns/op")
				b.ReportMetric(float64(b.N)/el.Seconds(), "jobs/s")
			})
		}
	}
}

// rawListLoop pushes n job IDs through a Redis list with one producer (up
// to batch IDs per LPUSH) and the given consumers, and returns how long it
// took from the first push to the last pop.
func rawListLoop(ctx context.Context, addr string, n, consumers, batch int) (time.Duration, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, DB: benchDB, PoolSize: consumers + 4, MaxRetries: -1})
	defer c.Close()
	key := "bench:raw:" + strconv.FormatInt(time.Now().UnixNano(), 36)
	defer c.Del(context.Background(), key)
	// One connection per consumer before the clock starts.
	if err := c.Ping(ctx).Err(); err != nil {
		return 0, err
	}
	var (
		popped atomic.Int64
		wg     sync.WaitGroup
		errMu  sync.Mutex
		first  error
	)
	fail := func(err error) {
		errMu.Lock()
		if first == nil {
			first = err
		}
		errMu.Unlock()
	}
	start := time.Now()
	for range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				v, err := c.BRPop(ctx, 5*time.Second, key).Result()
				if err != nil {
					fail(fmt.Errorf("brpop: %w", err))
					return
				}
				if v[1] == "stop" {
					return
				}
				popped.Add(1)
			}
		}()
	}
	ids := make([]any, 0, batch)
	for i := range n {
		ids = append(ids, "job-"+strconv.Itoa(i))
		if len(ids) < batch && i < n-1 {
			continue
		}
		if err := c.LPush(ctx, key, ids...).Err(); err != nil {
			fail(fmt.Errorf("lpush: %w", err))
			break
		}
		ids = ids[:0]
	}
	for range consumers {
		if err := c.LPush(ctx, key, "stop").Err(); err != nil {
			fail(fmt.Errorf("lpush: %w", err))
		}
	}
	wg.Wait()
	el := time.Since(start)
	if first != nil {
		return 0, first
	}
	if got := popped.Load(); got != int64(n) {
		return 0, fmt.Errorf("raw loop: %d jobs popped, %d pushed", got, n)
	}
	return el, nil
}

// benchBaseEnv names a faultline binary BenchmarkLiveWorkers also runs, as
// sub-benchmarks named -base, interleaved with its own: a former version
// built by hand (git archive, go build), for a before and after in one run.
const benchBaseEnv = "FAULTLINE_BENCH_BASE_BIN"

// BenchmarkLiveWorkers is the live path: b.N jobs (no dependency, no
// service time) enqueued through the Redis store, drained by N real
// `faultline worker` processes of Concurrency 4 each, started by the
// drill's supervisor, on one real Redis (directly; procs=4-via-proxy
// through one of the drill's Toxiproxy proxies, as in a drill), the event
// stream on, each attempt reported to a feed that discards it (as the
// workers report to the drill's, synchronously). The jobs are enqueued
// before the workers' clock starts (the enqueue rate is reported apart);
// the time is from the instant the workers start taking jobs (their
// Origin, after every worker said hello) until the store's counts are all
// zero. Every job is then checked to have succeeded, once (its event in
// the stream), with nothing in the DLQ.
//
// x-raw is jobs/s over the raw LPUSH/BRPOP loop's (push=1,
// rawReferenceConsumers consumers, rawReferenceJobs jobs: raw-jobs/s),
// measured once in the same run before the sub-benchmarks.
func BenchmarkLiveWorkers(b *testing.B) {
	addr := benchRedisAddr(b)
	bin := benchFaultline(b)
	l, err := scenarios.Load(benchScenario)
	if err != nil {
		b.Fatal(err)
	}
	benchFlush(b, addr)
	rawEl, err := rawListLoop(context.Background(), addr, rawReferenceJobs, rawReferenceConsumers, 1)
	if err != nil {
		b.Fatal(err)
	}
	raw := rawReferenceJobs / rawEl.Seconds()
	b.Logf("raw LPUSH/BRPOP reference: %d jobs, one LPUSH each, %d consumers: %.0f jobs/s", rawReferenceJobs, rawReferenceConsumers, raw)
	fd := startBenchFeed(b)
	var runs atomic.Int64
	type live struct {
		procs int
		proxy bool
		bin   string
	}
	cases := []live{{1, false, bin}, {2, false, bin}, {4, false, bin}, {4, true, bin}}
	if base := os.Getenv(benchBaseEnv); base != "" {
		// The same four processes started from another faultline binary
		// (a former version's), interleaved with this one's: a before and
		// after in one run.
		cases = []live{{4, false, base}, {4, false, bin}, {4, true, base}, {4, true, bin}, {4, false, base}, {4, false, bin}, {4, true, base}, {4, true, bin}}
	}
	for _, c := range cases {
		name := "procs=" + strconv.Itoa(c.procs)
		if c.proxy {
			name += "-via-proxy"
		}
		if c.bin != bin {
			name += "-base"
		}
		b.Run(name, func(b *testing.B) {
			b.StopTimer()
			workerAddr := addr
			if c.proxy {
				p, err := proxy.New("bench-redis", addr, proxy.Options{})
				if err != nil {
					b.Fatal(err)
				}
				defer p.Close()
				workerAddr = p.Addr()
			}
			ns := fmt.Sprintf("bench-live-%d-%d", c.procs, runs.Add(1))
			el, enq := liveRun(b, addr, workerAddr, c.bin, l, fd, ns, c.procs, b.N)
			rate := float64(b.N) / el.Seconds()
			b.ReportMetric(float64(el.Nanoseconds())/float64(b.N), "ns/op")
			b.ReportMetric(rate, "jobs/s")
			b.ReportMetric(rate/raw, "x-raw")
			b.ReportMetric(raw, "raw-jobs/s")
			b.ReportMetric(float64(b.N)/enq.Seconds(), "enqueue-jobs/s")
		})
	}
}

// liveRun enqueues n jobs in namespace ns of the Redis at addr, drains
// them with procs worker processes that reach it at workerAddr, and
// returns the drain's wall time and the enqueue's.
func liveRun(b *testing.B, addr, workerAddr, bin string, l *scenarios.Loaded, fd *benchFeed, ns string, procs, n int) (drain, enqueue time.Duration) {
	b.Helper()
	ctx := context.Background()
	benchFlush(b, addr)
	url := benchRedisURL(addr)
	c := redisstore.NewClient(url)
	defer c.Close()
	sc := l.Scenario.WithDefaults()
	scfg := sc.StoreConfig()
	scfg.Namespace, scfg.EventStream = ns, drill.DefaultEventStream
	st, err := redisstore.New(c, scfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := st.Load(ctx); err != nil {
		b.Fatal(err)
	}

	// The producer: n jobs through the store's API, from 8 goroutines.
	t0 := time.Now()
	if err := enqueueAll(ctx, st, n, 8); err != nil {
		b.Fatal(err)
	}
	enqueue = time.Since(t0)

	// The workers: their clock starts at origin, once every one is up.
	dir := b.TempDir()
	origin := time.Now().Add(2*time.Second + 500*time.Millisecond*time.Duration(procs))
	fd.hellos.Store(0)
	specs := make([]supervisor.Spec, 0, procs)
	for i := range procs {
		name := "w" + strconv.Itoa(i+1)
		cfg := &workerproc.Config{Name: name, Source: benchScenario, Hash: l.Hash, Seed: sc.Seed, RedisURL: benchRedisURL(workerAddr),
			Namespace: ns, EventStream: drill.DefaultEventStream, Start: sc.Start, Origin: origin, Scale: 1,
			CallTimeout: 30 * time.Second, Feed: fd.url, Concurrency: benchConcurrency}
		path := filepath.Join(dir, name+".json")
		if err := workerproc.WriteConfig(path, cfg); err != nil {
			b.Fatal(err)
		}
		logf, err := os.Create(filepath.Join(dir, name+".log"))
		if err != nil {
			b.Fatal(err)
		}
		defer logf.Close()
		specs = append(specs, supervisor.Spec{Name: name, Path: bin, Args: []string{"worker", "--config", path}, Stdout: logf, Stderr: logf})
	}
	sup, err := supervisor.New(specs, supervisor.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if err := sup.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = sup.Stop(context.Background(), 5*time.Second) }()
	logs := func() string {
		var s string
		for _, sp := range specs {
			out, _ := os.ReadFile(filepath.Join(dir, sp.Name+".log"))
			s += fmt.Sprintf("--- %s:\n%s", sp.Name, out)
		}
		return s
	}
	for fd.hellos.Load() < int64(procs) {
		if time.Now().After(origin) {
			b.Fatalf("%d of %d workers up at their origin (raise the lead)\n%s", fd.hellos.Load(), procs, logs())
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(time.Until(origin))

	// The drain: until the store holds no job in any state.
	deadline := origin.Add(time.Duration(n)*10*time.Millisecond + 30*time.Second)
	for {
		cn, err := st.Counts(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if cn.Queued+cn.InFlight+cn.Scheduled+cn.Fallback+cn.Held == 0 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("jobs left at the deadline: %+v\n%s", cn, logs())
		}
		time.Sleep(time.Millisecond)
	}
	drain = time.Since(origin)

	// Every job succeeded, once, and nothing is in the DLQ.
	stats, err := st.Stats(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if stats.Total != 0 {
		b.Fatalf("%d jobs in the DLQ\n%s", stats.Total, logs())
	}
	succeeded := map[string]int{}
	after := redisstore.StreamStart
	for {
		evs, err := st.ReadEvents(ctx, after, 10000, 0)
		if err != nil {
			b.Fatal(err)
		}
		if len(evs) == 0 {
			break
		}
		for _, e := range evs {
			if e.Event.To == disposition.Succeeded {
				succeeded[e.Event.JobID]++
			}
		}
		after = evs[len(evs)-1].ID
	}
	if len(succeeded) != n {
		b.Fatalf("%d of %d jobs succeeded\n%s", len(succeeded), n, logs())
	}
	for id, k := range succeeded {
		if k != 1 {
			b.Fatalf("job %s succeeded %d times", id, k)
		}
	}
	return drain, enqueue
}

// enqueueAll enqueues n jobs of the benchmarks' task from the given number
// of goroutines.
func enqueueAll(ctx context.Context, st *redisstore.Store, n, producers int) error {
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		errs = make([]error, producers)
	)
	now := time.Now()
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				j := job.Job{ID: fmt.Sprintf("job-%08d", i), Task: benchTask, Queue: benchQueue, EnqueuedAt: now}
				if err := st.Enqueue(ctx, j, now); err != nil {
					errs[p] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// benchFeed is the drill's feed as far as a worker can tell: it accepts
// every report, counts the hellos and discards the rest.
type benchFeed struct {
	url    string
	hellos atomic.Int64
}

func startBenchFeed(b *testing.B) *benchFeed {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	fd := &benchFeed{url: "http://" + ln.Addr().String() + "/report"}
	hello := []byte(`"kind":"hello"`)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /report", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, hello) {
			fd.hellos.Add(1)
		}
		w.WriteHeader(http.StatusNoContent)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() { _ = srv.Close() })
	return fd
}

// BenchmarkDrillOverhead is what the drill's own parts cost per call: a
// round trip to a fault gateway with no fault (beside a bare net/http
// round trip), a Redis PING through the drill's Toxiproxy (beside one
// direct), a Slack notification through the reference sink to the drill's
// receiver, and the oracle: oracle.Judge of the history of a short real drill
// of testdata/bench.yaml.
func BenchmarkDrillOverhead(b *testing.B) {
	addr := benchRedisAddr(b)
	ctx := context.Background()
	inj, err := faults.NewInjector(1, nil)
	if err != nil {
		b.Fatal(err)
	}
	locked := gateway.NewLocked(inj)
	now := gateway.ScaledNow(time.Now(), 1, time.Now)

	b.Run("http-baseline", func(b *testing.B) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			_, _ = io.WriteString(w, `{"ok":true}`)
		}), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		hc := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 16}}
		u := "http://" + ln.Addr().String() + "/call"
		b.ResetTimer()
		for i := range b.N {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader([]byte(`{"job":"job-`+strconv.Itoa(i)+`"}`)))
			req.Header.Set("Content-Type", "application/json")
			resp, err := hc.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
	})

	b.Run("gateway-call", func(b *testing.B) {
		g, err := gateway.New(gateway.Config{Name: "bench-dep", Faults: locked, Now: now})
		if err != nil {
			b.Fatal(err)
		}
		if err := g.Start(); err != nil {
			b.Fatal(err)
		}
		defer func() { _ = g.Close(context.Background()) }()
		cl := gateway.NewClient(g.URL(), 10*time.Second)
		defer cl.CloseIdleConnections()
		b.ResetTimer()
		for i := range b.N {
			id := "job-" + strconv.Itoa(i)
			if _, err := cl.Call(ctx, id, id); err != nil {
				b.Fatal(err)
			}
		}
	})

	pingBench := func(b *testing.B, via string) {
		c := redisstore.NewClient(benchRedisURL(via))
		defer c.Close()
		if err := c.Ping(ctx).Err(); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for range b.N {
			if err := c.Ping(ctx).Err(); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("redis-ping-direct", func(b *testing.B) { pingBench(b, addr) })
	b.Run("redis-ping-proxy", func(b *testing.B) {
		p, err := proxy.New("bench-redis", addr, proxy.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		pingBench(b, p.Addr())
	})

	b.Run("receiver-slack", func(b *testing.B) {
		rc, err := receiver.New(receiver.Config{Name: "bench-slack", Kind: receiver.Slack, Faults: locked, Now: now})
		if err != nil {
			b.Fatal(err)
		}
		if err := rc.Start(); err != nil {
			b.Fatal(err)
		}
		defer func() { _ = rc.Close(context.Background()) }()
		sk, err := sink.NewSlack(sink.SlackConfig{URL: rc.URL()})
		if err != nil {
			b.Fatal(err)
		}
		at := time.Now()
		n := alert.Notification{Receiver: "bench-slack", GroupKey: `{dependency="payment-gateway"}`, CreatedAt: at, Attempt: 1,
			Alerts: []alert.Alert{{Fingerprint: "f1", Name: "job-failed", Severity: classify.High, Status: alert.Firing, Count: 3,
				Summary: "charge failed: card declined (insufficient_funds)", FirstSeen: at, LastSeen: at}}}
		b.ResetTimer()
		for i := range b.N {
			n.ID = uint64(i + 1)
			if err := sk.Send(ctx, n); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("judge", func(b *testing.B) {
		sc, h := benchHistory(b, addr)
		b.ResetTimer()
		for range b.N {
			res, err := oracle.Judge(ctx, sc, h)
			if err != nil {
				b.Fatal(err)
			}
			if res.Ledger.Lost != 0 {
				b.Fatalf("the bench drill lost %d jobs", res.Ledger.Lost)
			}
		}
		b.StopTimer()
		// The history's size, and the time per event it holds.
		b.ReportMetric(float64(len(h.Events)), "events")
		b.ReportMetric(float64(len(h.Jobs)), "jobs")
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(h.Events)), "ns/event")
	})
}

// benchHistoryOnce is the history of one short real drill, run once per
// process for the oracle's benchmark.
var benchHistoryOnce struct {
	once sync.Once
	sc   scenarios.Scenario
	h    *oracle.History
	err  error
}

// benchHistory runs testdata/bench.yaml once as a real drill (two worker
// processes, time scale 10) and returns its scenario and history.
func benchHistory(b *testing.B, addr string) (scenarios.Scenario, *oracle.History) {
	b.Helper()
	bin := benchFaultline(b)
	benchHistoryOnce.once.Do(func() {
		benchFlush(b, addr)
		l, err := scenarios.Load(benchScenario)
		if err != nil {
			benchHistoryOnce.err = err
			return
		}
		opts := drill.Options{RedisURL: benchRedisURL(addr), Namespace: "bench-judge", Scale: 10, WorkerPath: bin,
			WorkerArgs: []string{"worker"}, Source: benchScenario}
		res, h, err := drill.Run(context.Background(), l, opts)
		if err != nil {
			benchHistoryOnce.err = fmt.Errorf("the bench drill: %w", err)
			return
		}
		if res.Ledger.Lost != 0 || len(h.Events) == 0 {
			benchHistoryOnce.err = fmt.Errorf("the bench drill: %d lost, %d events", res.Ledger.Lost, len(h.Events))
			return
		}
		benchHistoryOnce.sc, benchHistoryOnce.h = l.Scenario.WithDefaults(), h
	})
	if benchHistoryOnce.err != nil {
		b.Fatal(benchHistoryOnce.err)
	}
	return benchHistoryOnce.sc, benchHistoryOnce.h
}
