package retry_test

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/retry"
)

// A payment gateway times out after the charge may have gone through, then
// answers 429 with a Retry-After of 30 seconds, then declines the card.
func Example() {
	p, err := retry.New(retry.Config{}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		fmt.Println(err)
		return
	}
	now := time.Date(2025, time.March, 1, 12, 0, 0, 0, time.UTC)
	job := retry.Attempt{
		JobID: "job-42", Task: "charge", Dependency: "payments", Attempts: 1,
		FirstAttemptAt: now.Add(-time.Second),
	}

	// Without an idempotency key, a retry might charge the card twice.
	d := p.Decide(job, classify.Classification{Class: classify.Indeterminate}, now)
	fmt.Println(d.Action, d.Reason)

	// With a key recorded before the first attempt, it is safe.
	job.IdempotencyKey, job.KeyRecordedAt = "charge-job-42", job.FirstAttemptAt
	d = p.Decide(job, classify.Classification{Class: classify.Indeterminate}, now)
	fmt.Println(d.Action, d.Reason, d.Delay <= retry.Backoff(p.Config(), 0))

	job.Attempts = 2
	now = d.At
	d = p.Decide(job, classify.Classification{Class: classify.RateLimited, RetryAfter: 30 * time.Second}, now)
	fmt.Println(d.Action, d.Reason, d.Delay)

	job.Attempts = 3
	d = p.Decide(job, classify.Classification{Class: classify.Permanent}, d.At)
	fmt.Println(d.Action, d.Reason)
	// Output:
	// dead-letter indeterminate-without-key
	// retry backoff true
	// retry retry-after 30s
	// dead-letter permanent
}

// Twenty-five jobs fail against a recovering dependency at the same instant,
// all told to come back in 30 seconds. The budget (here 10 retries per 1s
// slot) lets ten run then and pushes the next ten into the next slot with
// room, each at an instant drawn in it (here no later than MaxWait, 1.5s
// late); the last five find no room and run over the budget, 1.5s late,
// and are counted.
func ExampleBudgetConfig() {
	cfg := retry.Config{Budget: retry.BudgetConfig{Burst: 10, Refill: 100 * time.Millisecond, MaxWait: 1500 * time.Millisecond}}
	p, err := retry.New(cfg, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		fmt.Println(err)
		return
	}
	now := time.Date(2025, time.March, 1, 12, 0, 0, 0, time.UTC)
	var atHint, inNextSlot, over int
	for range 25 {
		before := p.Stats().BudgetExceeded
		d := p.Decide(retry.Attempt{Dependency: "payments", Attempts: 1},
			classify.Classification{Class: classify.RateLimited, RetryAfter: 30 * time.Second}, now)
		switch at := d.At.Sub(now); {
		case p.Stats().BudgetExceeded > before && at == 31500*time.Millisecond:
			over++
		case at == 30*time.Second:
			atHint++
		case at >= 31*time.Second && at <= 31500*time.Millisecond:
			inNextSlot++ // spread over the slot, no later than MaxWait
		}
	}
	fmt.Println(p.Config().Budget.Window(), atHint, inNextSlot, over)
	s := p.Stats()
	fmt.Println("delayed", s.BudgetDelayed, "over budget", s.BudgetExceeded, "dead letters", s.ByAction[retry.DeadLetter])
	// Output:
	// 1s 10 10 5
	// delayed 15 over budget 5 dead letters 0
}

// The backoff ceilings of the default config: the n-th retry is drawn
// uniformly below them.
func ExampleBackoff() {
	for n := range 10 {
		fmt.Print(retry.Backoff(retry.Config{}, n), " ")
	}
	fmt.Println()
	// Output:
	// 1s 2s 4s 8s 16s 32s 1m4s 2m8s 4m16s 5m0s
}

func ExampleConfig_Validate() {
	err := retry.Config{BaseDelay: 10 * time.Second, MaxDelay: time.Second}.Validate()
	fmt.Println(err)
	// Output:
	// invalid retry config: MaxDelay = 1s: must not be less than BaseDelay (10s); a zero MaxDelay means 5m0s
}
