package retry_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/retry"
)

// BenchmarkDecide measures the simulator's hot path: a mix of retries
// (backoff, hints, budget delays) and dead letters over a few dependencies,
// on advancing virtual time.
func BenchmarkDecide(b *testing.B) {
	p, err := retry.New(retry.Config{}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		b.Fatal(err)
	}
	deps := [...]string{"payments", "email", "search", "storage"}
	classes := [...]classify.Classification{
		{Class: classify.Transient},
		{Class: classify.RateLimited, RetryAfter: 5 * time.Second},
		{Class: classify.Transient},
		{Class: classify.Permanent},
	}
	now := time.Date(2025, time.March, 1, 12, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		a := retry.Attempt{JobID: "job", Task: "task", Dependency: deps[i&3], Attempts: 1 + i%4}
		p.Decide(a, classes[(i>>2)&3], now)
		now = now.Add(time.Millisecond)
		i++
	}
}

// BenchmarkDecideParallel measures the live runner's case: many goroutines
// sharing one policy.
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
