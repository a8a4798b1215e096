package retry_test

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"pgregory.net/rapid"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/retry"
)

// newScriptRand is the stream the specs draw their workloads from, separate
// from the policies' streams.
func newScriptRand() *rand.Rand { return rand.New(rand.NewPCG(99, 100)) }

// budgetViolation checks the budget's guarantee on the retry times of one
// dependency, whatever order they were decided in: any k of them with k >
// burst span at least (k-burst)·refill. It returns "" or the first violation.
func budgetViolation(ats []time.Time, burst int, refill time.Duration) string {
	s := slices.Clone(ats)
	slices.SortFunc(s, time.Time.Compare)
	for j := range s {
		for i := j - burst; i >= 0; i-- {
			k := j - i + 1
			if need := time.Duration(k-burst) * refill; s[j].Sub(s[i]) < need {
				return fmt.Sprintf("%d retries within %v, the budget allows %d", k, s[j].Sub(s[i]), burst+int(s[j].Sub(s[i])/refill))
			}
		}
	}
	return ""
}

// durations draws durations, biased to the edges.
func durations(lo, hi int64) *rapid.Generator[time.Duration] {
	return rapid.Map(rapid.Int64Range(lo, hi), func(v int64) time.Duration { return time.Duration(v) })
}

var _ = Describe("properties", func() {
	It("Backoff is min(MaxDelay, BaseDelay·2^n), never overflowing, for any valid config and n", func() {
		rapid.Check(GinkgoT(), func(t *rapid.T) {
			base := durations(1, math.MaxInt64).Draw(t, "base")
			limit := durations(int64(base), math.MaxInt64).Draw(t, "max")
			n := rapid.OneOf(rapid.IntRange(0, 70), rapid.IntRange(0, math.MaxInt)).Draw(t, "n")
			cfg := retry.Config{BaseDelay: base, MaxDelay: limit}

			got := retry.Backoff(cfg, n)
			want := limit
			if n < 64 {
				exact := new(big.Int).Lsh(big.NewInt(int64(base)), uint(n))
				if exact.Cmp(big.NewInt(int64(limit))) < 0 {
					want = time.Duration(exact.Int64())
				}
			}
			if got != want {
				t.Fatalf("Backoff(base %v, max %v, %d) = %v, want %v", base, limit, n, got, want)
			}
		})
	})

	It("every retry's backoff lies in [0, Backoff(cfg, attempts-1)], and every delay is at least it", func() {
		rapid.Check(GinkgoT(), func(t *rapid.T) {
			base := durations(1, math.MaxInt64).Draw(t, "base")
			cfg := retry.Config{
				MaxAttempts: rapid.IntRange(1, 100).Draw(t, "maxAttempts"),
				BaseDelay:   base,
				MaxDelay:    durations(int64(base), math.MaxInt64).Draw(t, "max"),
				Budget:      retry.BudgetConfig{Disabled: rapid.Bool().Draw(t, "disabled")},
			}
			p, err := retry.New(cfg, rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 0)))
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			now := epoch
			for i := range rapid.IntRange(1, 50).Draw(t, "decisions") {
				n := rapid.IntRange(1, 200).Draw(t, fmt.Sprint("attempts", i))
				d := p.Decide(retry.Attempt{Dependency: "d", Attempts: n}, classify.Classification{Class: classify.Transient}, now)
				if n >= cfg.MaxAttempts {
					if d.Action != retry.DeadLetter || d.Reason != retry.ExhaustedAttempts {
						t.Fatalf("attempt %d of %d: %v/%v, want dead-letter/exhausted", n, cfg.MaxAttempts, d.Action, d.Reason)
					}
					continue
				}
				if limit := retry.Backoff(cfg, n-1); d.Backoff < 0 || d.Backoff > limit {
					t.Fatalf("attempt %d: backoff %v outside [0, %v]", n, d.Backoff, limit)
				}
				if d.Delay < d.Backoff || !d.At.Equal(now.Add(d.Delay)) {
					t.Fatalf("attempt %d: delay %v, at %v, backoff %v", n, d.Delay, d.At, d.Backoff)
				}
			}
		})
	})

	It("the budget never grants more than Burst + w/Refill tokens of a dependency in a window w, and never runs a retry early", func() {
		rapid.Check(GinkgoT(), func(t *rapid.T) {
			cfg := retry.Config{
				BaseDelay: durations(1, int64(10*time.Second)).Draw(t, "base"),
				MaxDelay:  time.Minute,
				Budget: retry.BudgetConfig{
					Burst:  rapid.IntRange(1, 20).Draw(t, "burst"),
					Refill: durations(1, int64(time.Second)).Draw(t, "refill"),
				},
			}
			p, err := retry.New(cfg, rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 1)))
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			deps := []string{"a", "b", ""}
			ats := map[string][]time.Time{}
			now := epoch
			for i := range rapid.IntRange(1, 150).Draw(t, "decisions") {
				now = now.Add(durations(0, int64(time.Second)).Draw(t, fmt.Sprint("step", i)))
				dep := rapid.SampledFrom(deps).Draw(t, fmt.Sprint("dep", i))
				c := classify.Classification{Class: classify.Transient}
				if rapid.Bool().Draw(t, fmt.Sprint("hinted", i)) {
					c.RetryAfter = durations(1, int64(time.Minute)).Draw(t, fmt.Sprint("hint", i))
				}
				d := p.Decide(retry.Attempt{Dependency: dep, Attempts: rapid.IntRange(1, 3).Draw(t, fmt.Sprint("attempts", i))}, c, now)
				if d.Action != retry.Retry {
					t.Fatalf("decision %d: %v/%v, want a retry", i, d.Action, d.Reason)
				}
				own := d.Backoff
				if c.RetryAfter > 0 {
					own = c.RetryAfter
				}
				if d.Delay < own || (d.Delay > own) != (d.Reason == retry.BudgetDelay) {
					t.Fatalf("decision %d: delay %v, own delay %v, reason %v", i, d.Delay, own, d.Reason)
				}
				// The token was granted at now plus the budget's wait.
				ats[dep] = append(ats[dep], now.Add(d.Delay-own))
			}
			for dep, s := range ats {
				if v := budgetViolation(s, cfg.Budget.Burst, cfg.Budget.Refill); v != "" {
					t.Fatalf("dependency %q: %s", dep, v)
				}
			}
		})
	})

	It("New never panics, and fails exactly when Validate names a field", func() {
		fields := []string{"MaxAttempts", "BaseDelay", "MaxDelay", "MaxRetryAfter", "Budget.Burst", "Budget.Refill"}
		anyDuration := rapid.Map(rapid.Int64(), func(v int64) time.Duration { return time.Duration(v) })
		rapid.Check(GinkgoT(), func(t *rapid.T) {
			cfg := retry.Config{
				MaxAttempts:   rapid.Int().Draw(t, "maxAttempts"),
				BaseDelay:     anyDuration.Draw(t, "base"),
				MaxDelay:      anyDuration.Draw(t, "max"),
				MaxRetryAfter: anyDuration.Draw(t, "maxRetryAfter"),
				Budget: retry.BudgetConfig{
					Disabled: rapid.Bool().Draw(t, "disabled"),
					Burst:    rapid.Int().Draw(t, "burst"),
					Refill:   anyDuration.Draw(t, "refill"),
				},
			}
			verr := cfg.Validate()
			p, err := retry.New(cfg, rand.New(rand.NewPCG(1, 2)))
			if (err == nil) != (verr == nil) {
				t.Fatalf("New: %v, Validate: %v", err, verr)
			}
			if err != nil {
				var ce *retry.ConfigError
				if !errors.As(err, &ce) || !slices.Contains(fields, ce.Field) || !errors.Is(err, retry.ErrInvalidConfig) {
					t.Fatalf("New: %v does not name a field", err)
				}
				return
			}
			for _, n := range []int{1, 2, 63, 64, math.MaxInt} {
				c := classify.Classification{Class: classify.Transient, RetryAfter: anyDuration.Draw(t, fmt.Sprint("hint", n))}
				d := p.Decide(retry.Attempt{Attempts: n}, c, epoch)
				if d.Delay < 0 || d.Backoff < 0 {
					t.Fatalf("attempt %d: negative delay %v or backoff %v", n, d.Delay, d.Backoff)
				}
			}
		})
	})
})
