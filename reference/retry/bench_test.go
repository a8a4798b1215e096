package retry_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/retry"
)

// deps and classes are the mix the benchmarks decide: four dependencies,
// and failures with and without a Retry-After hint, and permanent ones.
var (
	benchDeps    = [...]string{"payments", "email", "search", "storage"}
	benchClasses = [...]classify.Classification{
		{Class: classify.Transient},
		{Class: classify.RateLimited, RetryAfter: 5 * time.Second},
		{Class: classify.Transient},
		{Class: classify.Permanent},
	}
)

// benchDecide decides the mix with the default config, a failure every step
// of virtual time.
func benchDecide(b *testing.B, step time.Duration) {
	p, err := retry.New(retry.Config{}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		b.Fatal(err)
	}
	now := time.Date(2025, time.March, 1, 12, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		a := retry.Attempt{JobID: "job", Task: "task", Dependency: benchDeps[i&3], Attempts: 1 + i%4}
		p.Decide(a, benchClasses[(i>>2)&3], now)
		now = now.Add(step)
		i++
	}
	s := p.Stats()
	b.ReportMetric(float64(s.BudgetDelayed)/float64(s.Decisions), "delayed/op")
	b.ReportMetric(float64(s.BudgetExceeded)/float64(s.Decisions), "exceeded/op")
}

// BenchmarkDecide measures the simulator's hot path under a storm: a mix of
// retries (backoff, hints) and dead letters over a few dependencies, a
// failure every millisecond of virtual time, about 190 retries a second per
// dependency against a budget of 10. Most retries find their budget's next
// MaxWait booked full and run over it.
func BenchmarkDecide(b *testing.B) { benchDecide(b, time.Millisecond) }

// BenchmarkDecideWithinBudget is the same mix at a failure every 30ms,
// about 6 retries a second per dependency: the budget pushes only those
// that bunch up in one slot.
func BenchmarkDecideWithinBudget(b *testing.B) { benchDecide(b, 30*time.Millisecond) }

// BenchmarkDecideParallel measures the live runner's case: many goroutines
// sharing one policy, all failing at once against one dependency.
func BenchmarkDecideParallel(b *testing.B) {
	p, err := retry.New(retry.Config{}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		b.Fatal(err)
	}
	now := time.Date(2025, time.March, 1, 12, 0, 0, 0, time.UTC)
	c := classify.Classification{Class: classify.Transient}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		a := retry.Attempt{Dependency: "payments", Attempts: 1}
		for pb.Next() {
			p.Decide(a, c, now)
		}
	})
}
