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

// slotOf returns the budget slot t falls in, ⌊(t-origin)/width⌋, origin being
// the first decision time the policy's budget saw.
func slotOf(t, origin time.Time, width time.Duration) int64 {
	off := int64(t.Sub(origin))
	k := off / int64(width)
	if off%int64(width) != 0 && off < 0 {
		k--
	}
	return k
}

// slotViolation checks the budget's guarantee on the run times of one
// dependency's retries, whatever order they were decided in: no slot of
// width, aligned to origin, holds more than burst of them. It returns "" or
// the first violation.
func slotViolation(ats []time.Time, origin time.Time, width time.Duration, burst int) string {
	per := map[int64]int{}
	for _, at := range ats {
		k := slotOf(at, origin, width)
		if per[k]++; per[k] > burst {
			return fmt.Sprintf("slot %d [%v, %v) holds %d retries, the budget allows %d",
				k, origin.Add(time.Duration(k)*width), origin.Add(time.Duration(k+1)*width), per[k], burst)
		}
	}
	return ""
}

// fullSlots counts the slots in [lo, hi) that hold burst bookings in per.
func fullSlots(per map[int64]int, lo, hi int64, burst int) int64 {
	var n int64
	for k, c := range per {
		if k >= lo && k < hi && c >= burst {
			n++
		}
	}
	return n
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

	It("the budget runs at most Burst retries of a dependency in an aligned slot, never early, at most MaxWait late, and pushes only past full slots, into the first with room", func() {
		rapid.Check(GinkgoT(), func(t *rapid.T) {
			burst := rapid.IntRange(1, 20).Draw(t, "burst")
			refill := rapid.OneOf(durations(1, int64(time.Second)),
				rapid.SampledFrom([]time.Duration{time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond})).Draw(t, "refill")
			width := time.Duration(burst) * refill
			cfg := retry.Config{
				BaseDelay: durations(1, int64(10*time.Second)).Draw(t, "base"),
				MaxDelay:  time.Minute,
				Budget: retry.BudgetConfig{
					Burst:  burst,
					Refill: refill,
					// 0 is the default, MaxDelay.
					MaxWait: rapid.OneOf(rapid.SampledFrom([]time.Duration{0, width, 3 * width}),
						durations(0, int64(3*width)), durations(0, int64(30*time.Second))).Draw(t, "maxWait"),
				},
			}
			p, err := retry.New(cfg, rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 1)))
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if w := p.Config().Budget.Window(); w != width {
				t.Fatalf("Window() = %v, want Burst·Refill = %v", w, width)
			}
			maxWait := p.Config().Budget.MaxWait
			// Decisions come in bursts, and many hints are alike, so that
			// slots fill up.
			steps := rapid.OneOf(rapid.Just(time.Duration(0)), durations(0, int64(width)), durations(0, int64(3*time.Second)))
			hints := rapid.OneOf(rapid.SampledFrom([]time.Duration{time.Second, 2 * time.Second}), durations(1, int64(time.Minute)))
			deps := []string{"a", "b", ""}
			// booked is the model: the retries of each dependency that run
			// within the budget, by slot.
			booked := map[string]map[int64]int{}
			ats := map[string][]time.Time{}
			var origin time.Time
			now := epoch
			for i := range rapid.IntRange(1, 150).Draw(t, "decisions") {
				now = now.Add(steps.Draw(t, fmt.Sprint("step", i)))
				if i == 0 {
					origin = now
				}
				dep := rapid.SampledFrom(deps).Draw(t, fmt.Sprint("dep", i))
				c := classify.Classification{Class: classify.Transient}
				if rapid.Bool().Draw(t, fmt.Sprint("hinted", i)) {
					c.RetryAfter = hints.Draw(t, fmt.Sprint("hint", i))
				}
				exceededBefore := p.Stats().BudgetExceeded
				d := p.Decide(retry.Attempt{Dependency: dep, Attempts: rapid.IntRange(1, 3).Draw(t, fmt.Sprint("attempts", i))}, c, now)
				exceeded := p.Stats().BudgetExceeded - exceededBefore
				if d.Action != retry.Retry || !d.At.Equal(now.Add(d.Delay)) {
					t.Fatalf("decision %d: %v/%v at %v, delay %v, want a retry at now+delay", i, d.Action, d.Reason, d.At, d.Delay)
				}
				own := d.Backoff
				if c.RetryAfter > 0 {
					own = c.RetryAfter
				}
				due := now.Add(own)
				pushed := d.At.After(due)
				switch {
				case d.At.Before(due):
					t.Fatalf("decision %d: runs at %v, before its own time %v", i, d.At, due)
				case d.At.After(due.Add(maxWait)):
					t.Fatalf("decision %d: runs at %v, %v after its own time, MaxWait is %v", i, d.At, d.At.Sub(due), maxWait)
				case pushed != (d.Reason == retry.BudgetDelay):
					t.Fatalf("decision %d: pushed %v after its own time, reason %v", i, d.At.Sub(due), d.Reason)
				}
				if booked[dep] == nil {
					booked[dep] = map[int64]int{}
				}
				per, lo := booked[dep], slotOf(due, origin, width)
				if exceeded > 0 {
					// Over the budget: only when every slot up to MaxWait is full.
					hi := slotOf(due.Add(maxWait), origin, width) + 1
					if !d.At.Equal(due.Add(maxWait)) || fullSlots(per, lo, hi, burst) != hi-lo {
						t.Fatalf("decision %d: over budget at %v, due %v, with room in slots [%d, %d)", i, d.At, due, lo, hi)
					}
					continue
				}
				k := slotOf(d.At, origin, width)
				if pushed && fullSlots(per, lo, k, burst) != k-lo {
					t.Fatalf("decision %d: pushed from slot %d to %v in slot %d, not the first slot with room", i, lo, d.At, k)
				}
				if per[k]++; per[k] > burst {
					t.Fatalf("decision %d: slot %d holds %d retries of %q, burst %d", i, k, per[k], dep, burst)
				}
				ats[dep] = append(ats[dep], d.At)
			}
			for dep, s := range ats {
				if v := slotViolation(s, origin, width, burst); v != "" {
					t.Fatalf("dependency %q: %s", dep, v)
				}
			}
		})
	})

	It("New never panics, and fails exactly when Validate names a field", func() {
		fields := []string{"MaxAttempts", "BaseDelay", "MaxDelay", "MaxRetryAfter", "Budget.Burst", "Budget.Refill", "Budget.MaxWait"}
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
					MaxWait:  anyDuration.Draw(t, "maxWait"),
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
				if d.Delay < 0 || d.Backoff < 0 || (d.Action == retry.Retry && d.At.Before(epoch)) {
					t.Fatalf("attempt %d: negative delay %v or backoff %v, or at %v", n, d.Delay, d.Backoff, d.At)
				}
			}
		})
	})
})
