package redisstore_test

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/retry"
	"github.com/faultline/faultline/reference/store"
)

// roundTrips counts the commands (pipelines as one) a client sends.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { r.n.Add(1); return next(ctx, cmd) }
}
func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { r.n.Add(1); return next(ctx, cmds) }
}

// BenchmarkRetryDecision prices a retry decision of the reference policy
// with a fleet-scoped budget booked on a real redis-server (one script per
// decision) beside the same decision with the budget kept in the process,
// and reports the round trips each decision costs (the bound: at
// most one):
//
//	go test ./reference/store/redisstore -run '^$' -bench RetryDecision -benchtime 2s
func BenchmarkRetryDecision(b *testing.B) {
	transient := classify.Classification{Class: classify.Transient}
	cfg := retry.Config{MaxAttempts: 1 << 30, BaseDelay: time.Millisecond, MaxDelay: time.Second,
		Budget: retry.BudgetConfig{Burst: 100, Refill: time.Millisecond, MaxWait: time.Minute}}
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, scope := range []retry.Scope{retry.ScopeProcess, retry.ScopeFleet} {
		b.Run(scope.String(), func(b *testing.B) {
			c := benchClient(b)
			rt := &roundTrips{}
			c.AddHook(rt)
			s := benchStore(b, c, store.Config{})
			cfg := cfg
			cfg.Budget.Scope = scope
			p, err := retry.New(cfg, rand.New(rand.NewPCG(1, 2)), retry.WithBooker(s))
			if err != nil {
				b.Fatal(err)
			}
			// The layout check's one-time round trip, outside the count.
			p.Decide(retry.Attempt{JobID: "j", Dependency: "api", Attempts: 1}, transient, at)
			rt.n.Store(0)
			i := 0
			for b.Loop() {
				i++
				d := p.DecideContext(context.Background(), retry.Attempt{JobID: "j", Dependency: "api", Attempts: 1}, transient, at.Add(time.Duration(i)*time.Millisecond))
				if d.Action != retry.Retry {
					b.Fatalf("decision %d: %v", i, d.Action)
				}
			}
			b.ReportMetric(float64(rt.n.Load())/float64(max(i, 1)), "round-trips/decision")
			if st := p.Stats(); st.BudgetUnavailable > 0 {
				b.Fatalf("%d bookings failed", st.BudgetUnavailable)
			}
		})
	}
}
