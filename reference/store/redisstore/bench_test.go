package redisstore_test

// Benchmarks on a real redis-server (started by redistest, or skipped when
// the binary is missing: benchmarks are not tests), each beside the raw
// go-redis baseline of the nearest plain work:
//
//	go test ./reference/store/redisstore -run '^$' -bench . -benchtime 2s
//	go test ./reference/store/redisstore -run '^$' -bench RequeueAll -benchtime 1x -v
//	go test ./reference/store/redisstore -run '^$' -bench ListErrorText100k -benchtime 5x

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/reference/store/redisstore/redistest"
)

// benchDB is the database the benchmarks use on the shared redis-server
// (the specs use 0-15 by Ginkgo process; a benchmark run has no specs).
const benchDB = 15

// benchClient returns a client of a flushed database of the process's real
// redis-server, or skips the benchmark when there is none.
func benchClient(b *testing.B) *redis.Client {
	b.Helper()
	srv, err := redistest.Shared()
	if errors.Is(err, redistest.ErrNoServer) {
		b.Skip("redis-server is not on PATH: the benchmarks need a real Redis")
	}
	if err != nil {
		b.Fatal(err)
	}
	c := redisstore.NewClient(fmt.Sprintf("redis://%s/%d", srv.Addr, benchDB))
	b.Cleanup(func() { _ = c.Close() })
	if err := c.FlushDB(context.Background()).Err(); err != nil {
		b.Fatal(err)
	}
	return c
}

// benchStore returns a store on a fresh database with room for any b.N.
func benchStore(b *testing.B, c *redis.Client, cfg store.Config) *redisstore.Store {
	b.Helper()
	cfg.Namespace = "bench"
	if cfg.DLQCapacity == 0 {
		cfg.DLQCapacity = 1 << 30
	}
	s, err := redisstore.New(c, cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Load(context.Background()); err != nil {
		b.Fatal(err)
	}
	return s
}

var (
	benchTasks      = []string{"charge", "refund", "email", "report"}
	benchSeverities = []classify.Severity{classify.Low, classify.Medium, classify.High}
)

// benchEntry is the i-th entry of a benchmark: a realistic one, of one of
// four tasks and three severities.
func benchEntry(i int) dlq.Entry {
	e := deadEntry(fmt.Sprintf("job-%08d", i), t0)
	e.Job.Task = benchTasks[i%len(benchTasks)]
	e.Verdict.Severity = benchSeverities[i%len(benchSeverities)]
	e.History[0].Verdict = e.Verdict
	return e
}

// rawBytes are the bytes the store keeps for an entry, for the baselines.
func rawBytes(b *testing.B) []byte {
	e := benchEntry(0)
	e.Status, e.FirstFailedAt, e.LastFailedAt = dlq.Failed, t0, t0
	e.Changes = []dlq.StatusChange{{At: t0, To: dlq.Failed}}
	raw, err := dlq.Encode(e)
	if err != nil {
		b.Fatal(err)
	}
	return raw
}

// fillBench adds n entries with AddBatch.
func fillBench(b *testing.B, s *redisstore.Store, n int) {
	b.Helper()
	const chunk = 1000
	for start := 0; start < n; start += chunk {
		batch := make([]dlq.Entry, 0, chunk)
		for i := start; i < min(start+chunk, n); i++ {
			batch = append(batch, benchEntry(i))
		}
		if _, err := s.AddBatch(context.Background(), batch, t0.Add(time.Duration(start)*time.Millisecond)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDLQAdd is one Add of a new entry: one script, one round trip.
func BenchmarkDLQAdd(b *testing.B) {
	c := benchClient(b)
	s := benchStore(b, c, store.Config{})
	ctx := context.Background()
	entries := make([]dlq.Entry, b.N)
	for i := range entries {
		entries[i] = benchEntry(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if _, err := s.Add(ctx, entries[i], t0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRawLPUSH is the baseline of BenchmarkDLQAdd: one LPUSH of the
// same bytes, the seed's whole DLQ write.
func BenchmarkRawLPUSH(b *testing.B) {
	c := benchClient(b)
	raw := rawBytes(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := c.LPush(ctx, "bench:raw", raw).Err(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDLQAddBatched adds entries with AddBatch, BatchSize (100) per
// script call; ns/op is per entry.
func BenchmarkDLQAddBatched(b *testing.B) {
	c := benchClient(b)
	s := benchStore(b, c, store.Config{})
	ctx := context.Background()
	batch := s.Config().BatchSize
	entries := make([]dlq.Entry, b.N)
	for i := range entries {
		entries[i] = benchEntry(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for start := 0; start < b.N; start += batch {
		if _, err := s.AddBatch(ctx, entries[start:min(start+batch, b.N)], t0); err != nil {
			b.Fatal(err)
		}
	}
}

// benchStreamLen is the MAXLEN of the stream benchmarks: large enough that
// the stream trims (MAXLEN ~) once b.N passes it, as a long drill does.
const benchStreamLen = 1000

// BenchmarkStreamDLQAdd is BenchmarkDLQAdd with the event stream off and
// on: what the stream costs one Add (one XADD, one XREVRANGE, in the same
// script).
func BenchmarkStreamDLQAdd(b *testing.B) {
	for _, on := range []int{0, benchStreamLen} {
		b.Run(streamName(on), func(b *testing.B) {
			c := benchClient(b)
			s := benchStore(b, c, store.Config{EventStream: on})
			ctx := context.Background()
			entries := make([]dlq.Entry, b.N)
			for i := range entries {
				entries[i] = benchEntry(i)
			}
			b.ReportAllocs()
			resetStats(b, c)
			b.ResetTimer()
			for i := range b.N {
				if _, err := s.Add(ctx, entries[i], t0); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			reportScriptTime(b, c)
		})
	}
}

// BenchmarkStreamDeadLetter is one DeadLetter of a leased job (the lease
// is taken outside the timer) with the event stream off and on.
func BenchmarkStreamDeadLetter(b *testing.B) {
	for _, on := range []int{0, benchStreamLen} {
		b.Run(streamName(on), func(b *testing.B) {
			c := benchClient(b)
			s := benchStore(b, c, store.Config{EventStream: on})
			ctx := context.Background()
			entries := make([]dlq.Entry, b.N)
			leases := make([]queue.Lease, b.N)
			for i := range entries {
				entries[i] = benchEntry(i)
				if err := s.Enqueue(ctx, entries[i].Job, t0); err != nil {
					b.Fatal(err)
				}
				j, l, ok, err := s.Dequeue(ctx, entries[i].Job.QueueName(), t0, time.Hour)
				if err != nil || !ok {
					b.Fatal(ok, err)
				}
				entries[i].Job, leases[i] = j, l
			}
			b.ReportAllocs()
			resetStats(b, c)
			b.ResetTimer()
			for i := range b.N {
				if _, err := s.DeadLetter(ctx, leases[i], entries[i], t0); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			reportScriptTime(b, c)
		})
	}
}

// BenchmarkStreamDLQAddBatched is BenchmarkDLQAddBatched with the event
// stream off and on: 100 XADDs per script; ns/op is per entry.
func BenchmarkStreamDLQAddBatched(b *testing.B) {
	for _, on := range []int{0, benchStreamLen} {
		b.Run(streamName(on), func(b *testing.B) {
			c := benchClient(b)
			s := benchStore(b, c, store.Config{EventStream: on})
			ctx := context.Background()
			batch := s.Config().BatchSize
			entries := make([]dlq.Entry, b.N)
			for i := range entries {
				entries[i] = benchEntry(i)
			}
			b.ReportAllocs()
			resetStats(b, c)
			b.ResetTimer()
			for start := 0; start < b.N; start += batch {
				if _, err := s.AddBatch(ctx, entries[start:min(start+batch, b.N)], t0); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			reportScriptTime(b, c)
		})
	}
}

// resetStats zeroes the server's command statistics (CONFIG RESETSTAT).
func resetStats(b *testing.B, c *redis.Client) {
	b.Helper()
	if err := c.ConfigResetStat(context.Background()).Err(); err != nil {
		b.Fatal(err)
	}
}

// reportScriptTime reports the time Redis spent running scripts since
// resetStats, per op ("server-ns/op", from INFO commandstats): the cost on
// the server, free of the round trip's noise; and the part of it spent in
// the stream's own commands, XADD and XREVRANGE ("stream-ns/op").
func reportScriptTime(b *testing.B, c *redis.Client) {
	b.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	usec := func(cmds ...string) float64 {
		n := 0
		for _, line := range strings.Split(info, "\n") {
			for _, cmd := range cmds {
				if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":"); ok {
					_, v, _ := strings.Cut(rest, "usec=")
					v, _, _ = strings.Cut(v, ",")
					k, _ := strconv.Atoi(v)
					n += k
				}
			}
		}
		return float64(n) * 1000 / float64(b.N)
	}
	b.ReportMetric(usec("evalsha", "eval"), "server-ns/op")
	b.ReportMetric(usec("xadd", "xrevrange"), "stream-ns/op")
}

func streamName(maxlen int) string {
	if maxlen == 0 {
		return "stream=off"
	}
	return "stream=on"
}

// BenchmarkRawLPUSHPipelined is the baseline of BenchmarkDLQAddBatched:
// LPUSHes of the same bytes, 100 per pipeline; ns/op is per LPUSH.
func BenchmarkRawLPUSHPipelined(b *testing.B) {
	c := benchClient(b)
	raw := rawBytes(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for start := 0; start < b.N; start += 100 {
		pipe := c.Pipeline()
		for range min(100, b.N-start) {
			pipe.LPush(ctx, "bench:raw", raw)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkList reads one filtered page of 50 (medium charges, a twelfth of
// the entries) from a DLQ of 10,000 entries.
func BenchmarkList(b *testing.B) {
	c := benchClient(b)
	s := benchStore(b, c, store.Config{})
	fillBench(b, s, 10_000)
	ctx := context.Background()
	f := dlq.Filter{Severities: []classify.Severity{classify.Medium}, Tasks: []string{"charge"}}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		p, err := s.List(ctx, f, "", 50)
		if err != nil {
			b.Fatal(err)
		}
		if len(p.Entries) != 50 {
			b.Fatalf("a page of %d entries", len(p.Entries))
		}
	}
}

// BenchmarkStats summarises a DLQ of 100,000 entries.
func BenchmarkStats(b *testing.B) {
	c := benchClient(b)
	s := benchStore(b, c, store.Config{})
	fillBench(b, s, 100_000)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		st, err := s.Stats(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if st.Total != 100_000 {
			b.Fatalf("Total %d", st.Total)
		}
	}
}

// BenchmarkRequeueAll100k requeues every entry of a DLQ of 100,000 with
// RequeueMatching, and reports the run's total time ("s/requeue-all"), its
// script calls, the time Redis spent in them ("server-s/requeue-all", INFO
// commandstats), the longest of them and how many took over 50 ms (SLOWLOG,
// read in pages: see slowPager); then the dry run's count of the same
// 100,000 ("s/dry-run"); and, in the same run, a baseline: 100,000 plain
// moves of a job id from one list to another with its hash written
// (LMOVE and HSET, pipelined a thousand at a time, "s/baseline"), with the
// requeue's time as a multiple of it ("x-baseline"), since absolute figures
// drift with the machine's load; and the commands the scripts ran per
// entry ("cmds/entry"), which do not. Run it with -benchtime 1x: each iteration
// refills the DLQ, outside the timer.
func BenchmarkRequeueAll100k(b *testing.B) { requeueAll(b, 100_000) }

func requeueAll(b *testing.B, n int) {
	c := benchClient(b)
	ctx := context.Background()
	var longest, total, dry, base, server time.Duration
	var dryServer time.Duration
	scripts, over, logged, dryCalls, cmds := 0, 0, 0, 0, 0
	for range b.N {
		b.StopTimer()
		if err := c.FlushDB(ctx).Err(); err != nil {
			b.Fatal(err)
		}
		s := benchStore(b, c, store.Config{})
		fillBench(b, s, n)

		pager := startSlowPager(b, c)
		resetStats(b, c)
		start := time.Now()
		r, err := s.RequeueMatching(ctx, dlq.Filter{}, oneMore, t0.Add(time.Hour), true)
		dry += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if r.Matched != n {
			b.Fatalf("dry run counted %d of %d", r.Matched, n)
		}
		dcalls, dusec := evalStats(b, c)
		dryCalls += dcalls
		dryServer += time.Duration(dusec) * time.Microsecond
		resetStats(b, c)
		start = time.Now()
		b.StartTimer()
		r, err = s.RequeueMatching(ctx, dlq.Filter{}, oneMore, t0.Add(time.Hour), false)
		b.StopTimer()
		total += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if r.Requeued != n {
			b.Fatalf("requeued %d of %d", r.Requeued, n)
		}
		calls, usec := evalStats(b, c)
		cmds += scriptCommands(b, c)
		scripts += calls
		server += time.Duration(usec) * time.Microsecond
		sl := pager.stop()
		longest, over, logged = max(longest, sl.longest), over+sl.over, logged+sl.scripts

		base += baselineMoves(b, c, n)
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s/requeue-all")
	b.ReportMetric(server.Seconds()/float64(b.N), "server-s/requeue-all")
	b.ReportMetric(dry.Seconds()/float64(b.N), "s/dry-run")
	b.ReportMetric(float64(dryCalls)/float64(b.N), "scripts/dry-run")
	b.ReportMetric(float64(dryServer.Microseconds())/1000/float64(max(dryCalls, 1)), "server-ms/dry-script")
	b.ReportMetric(float64(server.Microseconds())/1000/float64(max(scripts, 1)), "server-ms/script")
	b.ReportMetric(base.Seconds()/float64(b.N), "s/baseline")
	b.ReportMetric(total.Seconds()/base.Seconds(), "x-baseline")
	b.ReportMetric(float64(longest.Microseconds())/1000, "ms-longest-script")
	b.ReportMetric(float64(over), "scripts>50ms")
	b.ReportMetric(float64(logged)/float64(b.N), "scripts>1ms/run")
	b.ReportMetric(float64(scripts)/float64(b.N), "scripts/requeue-all")
	b.ReportMetric(float64(cmds)/float64(b.N*n), "cmds/entry")
}

// baselineMoves times n plain moves of a job id from one list to another
// with a field of its hash written (LMOVE, HSET), pipelined a thousand at
// a time: the nearest plain Redis work to a requeue, for the same-run
// ratio.
func baselineMoves(b *testing.B, c *redis.Client, n int) time.Duration {
	b.Helper()
	ctx := context.Background()
	const chunk = 1000
	for start := 0; start < n; start += chunk {
		ids := make([]any, 0, chunk)
		for i := start; i < min(start+chunk, n); i++ {
			ids = append(ids, fmt.Sprintf("job-%08d", i))
		}
		if err := c.RPush(ctx, "baseline:from", ids...).Err(); err != nil {
			b.Fatal(err)
		}
	}
	raw := rawBytes(b)
	began := time.Now()
	for start := 0; start < n; start += chunk {
		pipe := c.Pipeline()
		for i := start; i < min(start+chunk, n); i++ {
			pipe.LMove(ctx, "baseline:from", "baseline:to", "LEFT", "RIGHT")
			pipe.HSet(ctx, fmt.Sprintf("baseline:job:%08d", i), "data", raw, "loc", "queued")
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(began)
}

// slowPager reads the SLOWLOG while a benchmark runs, in pages: every
// slowPageEvery it takes the entries logged since the last page and clears
// them, in one MULTI/EXEC (SLOWLOG GET slowPage, SLOWLOG RESET), so that no
// read is ever larger than a page and nothing logged between the two is
// lost. A page that comes back full may have left entries behind: the
// benchmark fails rather than report a longest script it may have missed.
// The log keeps the calls of 1 ms or more (a script under it is far from
// the 50 ms bound; Redis 7 also logs the commands scripts run, none of which
// comes near 1 ms).
type slowPager struct {
	b    *testing.B
	c    *redis.Client
	stop func() slowSummary
}

// slowSummary is what the pages held: the script calls logged, the
// longest, and how many took over 50 ms.
type slowSummary struct {
	scripts, over int
	longest       time.Duration
}

const (
	slowPage      = 1000
	slowPageEvery = 100 * time.Millisecond
)

func startSlowPager(b *testing.B, c *redis.Client) *slowPager {
	b.Helper()
	ctx := context.Background()
	for _, kv := range [][2]string{{"slowlog-log-slower-than", "1000"}, {"slowlog-max-len", strconv.Itoa(slowPage)}} {
		if err := c.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
			b.Fatal(err)
		}
	}
	if err := c.SlowLogReset(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	p := &slowPager{b: b, c: c}
	var sum slowSummary
	var failed error
	page := func() {
		var get *redis.SlowLogCmd
		_, err := c.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
			get = pipe.SlowLogGet(ctx, slowPage)
			pipe.SlowLogReset(ctx)
			return nil
		})
		if err != nil {
			failed = err
			return
		}
		logs := get.Val()
		if len(logs) >= slowPage {
			failed = fmt.Errorf("a SLOWLOG page came back full (%d): entries may be lost", len(logs))
		}
		for _, l := range logs {
			if len(l.Args) > 0 && (strings.EqualFold(l.Args[0], "evalsha") || strings.EqualFold(l.Args[0], "eval")) {
				sum.scripts++
				sum.longest = max(sum.longest, l.Duration)
				if l.Duration > 50*time.Millisecond {
					sum.over++
				}
			}
		}
	}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(slowPageEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				page()
				return
			case <-t.C:
				page()
			}
		}
	}()
	p.stop = func() slowSummary {
		close(done)
		<-finished
		c.ConfigSet(ctx, "slowlog-log-slower-than", "10000")
		c.ConfigSet(ctx, "slowlog-max-len", "128")
		if failed != nil {
			b.Fatal(failed)
		}
		return sum
	}
	return p
}

// evalStats is how many EVALSHA and EVAL calls Redis ran since its stats
// were reset (INFO commandstats), and the microseconds they took.
func evalStats(b *testing.B, c *redis.Client) (calls, usec int) {
	b.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		for _, cmd := range []string{"cmdstat_evalsha:", "cmdstat_eval:"} {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), cmd); ok {
				for _, kv := range strings.Split(rest, ",") {
					k, v, _ := strings.Cut(kv, "=")
					x, _ := strconv.Atoi(v)
					switch k {
					case "calls":
						calls += x
					case "usec":
						usec += x
					}
				}
			}
		}
	}
	return calls, usec
}

// BenchmarkListErrorText100k reads the first page of 50 of an error-text
// search (dlq.Filter.ErrorText, in another case than the text's) over a DLQ
// of 100,000 entries, newest first, and reports the page's time ("ms/page";
// ns/op is the same): with no entry matching (the whole index is walked, the
// worst case), one in a thousand matching (half the index is walked for the
// page), and every entry matching. The script matches the folded copy of the
// error text kept beside each entry's meta (P:dlq:etx, a step's texts in
// one HMGET); Go decodes only the entries it returns. server-ns/op is the
// time Redis spent in the page's scripts.
func BenchmarkListErrorText100k(b *testing.B) {
	for _, tc := range []struct {
		name  string
		every int // one entry in every this many has the text; 0: none
	}{{"match=none", 0}, {"match=1in1000", 1000}, {"match=all", 1}} {
		b.Run(tc.name, func(b *testing.B) {
			c := benchClient(b)
			s := benchStore(b, c, store.Config{})
			const n = 100_000
			ctx := context.Background()
			for start := 0; start < n; start += 1000 {
				batch := make([]dlq.Entry, 0, 1000)
				for i := start; i < start+1000; i++ {
					e := benchEntry(i)
					e.History[0].Error = fmt.Sprintf("POST https://pay.example/charge/%08d: card declined: insufficient funds (code 51)", i)
					if tc.every > 0 && i%tc.every == 0 {
						e.History[0].Error = fmt.Sprintf("POST https://pay.example/charge/%08d: upstream Gateway Timeout after 30s", i)
					}
					batch = append(batch, e)
				}
				if _, err := s.AddBatch(ctx, batch, t0.Add(time.Duration(start)*time.Millisecond)); err != nil {
					b.Fatal(err)
				}
			}
			want := 50
			if tc.every == 0 {
				want = 0
			}
			f := dlq.Filter{ErrorText: "GATEWAY timeout"}
			resetStats(b, c)
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				p, err := s.List(ctx, f, "", 50)
				if err != nil {
					b.Fatal(err)
				}
				if len(p.Entries) != want {
					b.Fatalf("a page of %d entries, want %d", len(p.Entries), want)
				}
			}
			b.ReportMetric(float64(time.Since(start).Milliseconds())/float64(b.N), "ms/page")
			reportScriptTime(b, c)
		})
	}
}
