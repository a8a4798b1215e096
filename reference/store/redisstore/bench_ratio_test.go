package redisstore_test

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/store"
)

// BenchmarkAddVsLPUSH puts a DLQ add and the seed's whole DLQ write (one
// LPUSH of the same bytes) side by side in one run, with every index kept,
// the event stream off and on:
//
//	go test ./reference/store/redisstore -run '^$' -bench AddVsLPUSH -benchtime 3000x
//
// "single" is one Add against one LPUSH, each its own round trip;
// "batched" is one AddBatch of ratioBatch entries (BatchSize per script)
// against ratioBatch LPUSHes in one pipeline. The two alternate in chunks of
// ratioBatch operations, so that the machine's drifting load weighs on both
// alike. Reported per operation: add-ns and lpush-ns (wall clock),
// x-lpush (the add's throughput as a fraction of the LPUSH's: lpush-ns /
// add-ns; the aims are 0.70 single, 0.30 batched), server-ns/add (Redis's
// time in the add's scripts, INFO commandstats), cmds/add (the Redis
// commands its scripts ran, the same on any machine whatever its load:
// the figure the server time follows), allocs/add and allocs/lpush (client
// side).
func BenchmarkAddVsLPUSH(b *testing.B) {
	for _, mode := range []string{"single", "batched"} {
		for _, on := range []int{0, benchStreamLen} {
			b.Run(mode+"/"+streamName(on), func(b *testing.B) { addVsLPUSH(b, mode == "batched", on) })
		}
	}
}

// ratioBatch is how many operations a batched round, and a chunk of the
// alternation, holds.
const ratioBatch = 100

func addVsLPUSH(b *testing.B, batched bool, stream int) {
	c := benchClient(b)
	s := benchStore(b, c, store.Config{EventStream: stream})
	ctx := context.Background()
	raw := rawBytes(b)
	entries := make([]dlq.Entry, b.N)
	for i := range entries {
		entries[i] = benchEntry(i)
	}
	var addT, pushT time.Duration
	var addAllocs, pushAllocs uint64
	var ms runtime.MemStats
	mallocs := func() uint64 { runtime.ReadMemStats(&ms); return ms.Mallocs }
	resetStats(b, c)
	b.ResetTimer()
	for start := 0; start < b.N; start += ratioBatch {
		end := min(start+ratioBatch, b.N)
		m0, t := mallocs(), time.Now()
		if batched {
			if _, err := s.AddBatch(ctx, entries[start:end], t0); err != nil {
				b.Fatal(err)
			}
		} else {
			for i := start; i < end; i++ {
				if _, err := s.Add(ctx, entries[i], t0); err != nil {
					b.Fatal(err)
				}
			}
		}
		addT += time.Since(t)
		addAllocs += mallocs() - m0
		m0, t = mallocs(), time.Now()
		if batched {
			if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
				for range end - start {
					p.LPush(ctx, "bench:raw", raw)
				}
				return nil
			}); err != nil {
				b.Fatal(err)
			}
		} else {
			for range end - start {
				if err := c.LPush(ctx, "bench:raw", raw).Err(); err != nil {
					b.Fatal(err)
				}
			}
		}
		pushT += time.Since(t)
		pushAllocs += mallocs() - m0
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(addT.Nanoseconds())/n, "add-ns")
	b.ReportMetric(float64(pushT.Nanoseconds())/n, "lpush-ns")
	b.ReportMetric(float64(pushT)/float64(addT), "x-lpush")
	b.ReportMetric(float64(addAllocs)/n, "allocs/add")
	b.ReportMetric(float64(pushAllocs)/n, "allocs/lpush")
	_, usec := evalStats(b, c)
	b.ReportMetric(float64(usec)*1000/n, "server-ns/add")
	b.ReportMetric(float64(scriptCommands(b, c))/n, "cmds/add")
}

// scriptCommands is how many commands Redis ran since its stats were reset
// (INFO commandstats) other than the scripts themselves, LPUSH (the
// baselines') and the benchmark's own bookkeeping: the commands the scripts
// ran.
func scriptCommands(b *testing.B, c *redis.Client) int {
	b.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	skip := map[string]bool{"evalsha": true, "eval": true, "lpush": true, "config|resetstat": true, "config|set": true,
		"info": true, "select": true, "hello": true, "client|setinfo": true, "script|load": true, "ping": true,
		"slowlog|get": true, "slowlog|reset": true, "multi": true, "exec": true}
	n := 0
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "cmdstat_"), ":")
		if !ok || skip[name] || !strings.HasPrefix(rest, "calls=") {
			continue
		}
		v, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		k, _ := strconv.Atoi(v)
		n += k
	}
	return n
}
