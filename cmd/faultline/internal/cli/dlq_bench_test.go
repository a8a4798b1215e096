package cli_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/reference/store/redisstore/redistest"
)

// The speed of faultline dlq on a real Redis holding 100,000 entries, end to
// end: each operation is the built faultline binary run as a subprocess,
// timed from its start to its exit (after its last line is printed).
//
//	go test ./cmd/faultline/internal/cli/ -run '^$' -bench 'BenchmarkDLQ/(list|stats)' -benchtime 10x
//	go test ./cmd/faultline/internal/cli/ -run '^$' -bench 'BenchmarkDLQ/(dry|requeue)' -benchtime 1x
//
// (requeue-all reseeds 100,000 entries before each run, untimed: run it
// once. dry-run-count is the count requeue --all shows before it moves
// anything, a walk of its own.)
//
// The targets: list (first filtered page) and stats under 100 ms;
// requeue --all of 100,000 under 10 s with no script over 50 ms (the
// slowest script, from SLOWLOG, is reported as slowest-script-ms).

// benchDLQN is how many entries the benchmarks seed.
const benchDLQN = 100_000

// benchDLQNamespace is the namespace they seed.
const benchDLQNamespace = "bench"

// benchTasks, benchSeverities and benchClasses vary the seeded entries, so
// that a filter matches a share of them.
var (
	benchTasks      = []string{"charge", "email", "report", "sync"}
	benchSeverities = []classify.Severity{classify.Low, classify.Medium, classify.High}
	benchClasses    = []classify.Class{classify.Transient, classify.Permanent, classify.Indeterminate, classify.RateLimited, classify.Critical}
)

// benchDLQSeed empties the database at url and writes benchDLQN failed
// entries, 1,000 per script.
func benchDLQSeed(b *testing.B, url string) {
	b.Helper()
	ctx := context.Background()
	client := redisstore.NewClient(url)
	defer client.Close()
	if err := client.FlushDB(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	s, err := redisstore.New(client, store.Config{Namespace: benchDLQNamespace, BatchSize: 1000})
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now().Add(-48 * time.Hour)
	entries := make([]dlq.Entry, 0, 1000)
	for i := range benchDLQN {
		at := t0.Add(time.Duration(i) * time.Second)
		task := benchTasks[i%len(benchTasks)]
		v := classify.Classification{Class: benchClasses[i%len(benchClasses)], Severity: benchSeverities[i%len(benchSeverities)],
			Source: classify.Dependency, Rule: "bench"}
		entries = append(entries, dlq.Entry{
			Job: job.Job{ID: fmt.Sprintf("%s-%06d", task, i), Task: task, Queue: task + "s",
				Payload: []byte(`{"amount":1200,"currency":"EUR","customer":"cus_000042"}`), Attempts: 5, EnqueuedAt: at.Add(-time.Minute)},
			History: []dlq.Failure{{At: at, Attempt: 5, Error: fmt.Sprintf("http 502 from gateway (request %d)", i),
				ErrorType: "*failure.HTTPError", Verdict: v}},
			FirstFailedAt: at, LastFailedAt: at, Verdict: v, Reason: "retries exhausted",
		})
		if len(entries) == cap(entries) {
			if _, err := s.AddBatch(ctx, entries, time.Now()); err != nil {
				b.Fatal(err)
			}
			entries = entries[:0]
		}
	}
}

// benchDLQRun runs the faultline binary with args and returns how long it
// took, start to exit, and its output; a failure ends the benchmark.
func benchDLQRun(b *testing.B, bin string, args ...string) (time.Duration, string) {
	b.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if err != nil {
		b.Fatalf("faultline %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return took, out.String()
}

// slowScript is one SLOWLOG entry.
type slowScript struct {
	took time.Duration
	cmd  string
}

// slowest reads the SLOWLOG in pages of page entries (SLOWLOG GET returns
// the newest first; each page is the entries older than the last one read)
// and returns the slowest EVAL/EVALSHA and how many took over limit.
func slowest(ctx context.Context, c *redis.Client, page int64, limit time.Duration) (slowScript, int, int, error) {
	var worst slowScript
	over, read := 0, 0
	// SLOWLOG GET has no offset: ask for ever more and skip what was read.
	for n := page; ; n += page {
		logs, err := c.SlowLogGet(ctx, n).Result()
		if err != nil {
			return worst, over, read, err
		}
		for _, l := range logs[min(read, len(logs)):] {
			read++
			if len(l.Args) == 0 || !strings.HasPrefix(strings.ToUpper(l.Args[0]), "EVAL") {
				continue
			}
			if l.Duration > limit {
				over++
			}
			if l.Duration > worst.took {
				worst = slowScript{took: l.Duration, cmd: strings.Join(l.Args[:min(len(l.Args), 2)], " ")}
			}
		}
		if int64(len(logs)) < n {
			return worst, over, read, nil
		}
	}
}

// benchBaselineMoves times n plain moves of a job id from one list to
// another with its hash written (LMOVE and HSET, pipelined a thousand at a
// time) on the same server: the nearest plain Redis work to a requeue, the
// same-run yardstick of requeue-all's time ("x-baseline"), since absolute
// figures drift with the machine's load.
func benchBaselineMoves(b *testing.B, c *redis.Client, n int) time.Duration {
	b.Helper()
	ctx := context.Background()
	const chunk = 1000
	data := strings.Repeat("x", 600)
	for start := 0; start < n; start += chunk {
		ids := make([]any, 0, chunk)
		for i := start; i < min(start+chunk, n); i++ {
			ids = append(ids, fmt.Sprintf("job-%06d", i))
		}
		if err := c.RPush(ctx, "baseline:from", ids...).Err(); err != nil {
			b.Fatal(err)
		}
	}
	began := time.Now()
	for start := 0; start < n; start += chunk {
		pipe := c.Pipeline()
		for i := start; i < min(start+chunk, n); i++ {
			pipe.LMove(ctx, "baseline:from", "baseline:to", "LEFT", "RIGHT")
			pipe.HSet(ctx, fmt.Sprintf("baseline:job:%06d", i), "data", data, "loc", "queued")
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
	took := time.Since(began)
	if err := c.Del(ctx, "baseline:from", "baseline:to").Err(); err != nil {
		b.Fatal(err)
	}
	return took
}

// BenchmarkDLQ times faultline dlq list, stats and requeue --all on a real
// redis-server holding 100,000 entries.
func BenchmarkDLQ(b *testing.B) {
	srv, err := redistest.StartServer()
	if errors.Is(err, redistest.ErrNoServer) && !redistest.Required() {
		b.Skip("redis-server is not on PATH")
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Stop() })
	bin, err := faultlineBinary()
	if err != nil {
		b.Fatal(err)
	}
	url := "redis://" + srv.Addr + "/0"
	conn := []string{"--redis-url", url, "--namespace", benchDLQNamespace}
	ctx := context.Background()
	client := redisstore.NewClient(url)
	b.Cleanup(func() { _ = client.Close() })
	start := time.Now()
	benchDLQSeed(b, url)
	b.Logf("seeded %d entries in %v", benchDLQN, time.Since(start).Round(time.Millisecond))

	b.Run("list-first-filtered-page", func(b *testing.B) {
		args := append([]string{"dlq", "list", "--severity", "high", "--task", "charge", "--limit", "50"}, conn...)
		var total time.Duration
		for b.Loop() {
			took, out := benchDLQRun(b, bin, args...)
			total += took
			if !strings.Contains(out, "next page: --cursor") {
				b.Fatalf("a first page with more after it, got:\n%s", out)
			}
		}
		b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/run")
	})

	b.Run("stats", func(b *testing.B) {
		args := append([]string{"dlq", "stats"}, conn...)
		var total time.Duration
		for b.Loop() {
			took, out := benchDLQRun(b, bin, args...)
			total += took
			if !strings.Contains(out, fmt.Sprint(benchDLQN)) {
				b.Fatalf("stats of %d entries, got:\n%s", benchDLQN, out)
			}
		}
		b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/run")
	})

	// The count a requeue --all shows before it moves anything (and takes
	// its cut-off): one read-only walk of the matching entries.
	b.Run("dry-run-count", func(b *testing.B) {
		args := append([]string{"dlq", "requeue", "--all", "--dry-run", "--show", "0"}, conn...)
		var total time.Duration
		for b.Loop() {
			took, out := benchDLQRun(b, bin, args...)
			total += took
			if want := fmt.Sprintf("dry run: %d entries would be requeued", benchDLQN); !strings.Contains(out, want) {
				b.Fatalf("want %q, got:\n%s", want, out)
			}
		}
		b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/run")
	})

	b.Run("requeue-all", func(b *testing.B) {
		args := append([]string{"dlq", "requeue", "--all", "--yes"}, conn...)
		var total, worst, base time.Duration
		over := 0
		first := true
		for b.Loop() {
			b.StopTimer()
			if !first {
				benchDLQSeed(b, url)
			}
			first = false
			for _, cfg := range [][2]string{{"slowlog-log-slower-than", "1000"}, {"slowlog-max-len", "100000"}} {
				if err := client.ConfigSet(ctx, cfg[0], cfg[1]).Err(); err != nil {
					b.Fatal(err)
				}
			}
			if err := client.SlowLogReset(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			took, out := benchDLQRun(b, bin, args...)
			b.StopTimer()
			total += took
			want := fmt.Sprintf("stated %d, moved %d, skipped 0", benchDLQN, benchDLQN)
			if !strings.Contains(out, want) {
				b.Fatalf("want %q, got:\n%s", want, out)
			}
			s, n, read, err := slowest(ctx, client, 128, 50*time.Millisecond)
			if err != nil {
				b.Fatal(err)
			}
			over += n
			if s.took > worst {
				worst = s.took
			}
			b.Logf("requeue --all of %d: %v; SLOWLOG (over 1 ms): %d entries, slowest script %v (%s), %d over 50 ms",
				benchDLQN, took.Round(time.Millisecond), read, s.took, s.cmd, n)
			base += benchBaselineMoves(b, client, benchDLQN)
			b.StartTimer()
		}
		b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/run")
		b.ReportMetric(float64(base.Microseconds())/1000/float64(b.N), "baseline-ms")
		b.ReportMetric(total.Seconds()/base.Seconds(), "x-baseline")
		b.ReportMetric(float64(worst.Microseconds())/1000, "slowest-script-ms")
		b.ReportMetric(float64(over), "scripts>50ms")
	})
}
