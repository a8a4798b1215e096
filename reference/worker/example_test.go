package worker_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/failure"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/retry"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/memstore"
	"github.com/faultline/faultline/reference/worker"
)

// A driver's loop around the pipeline, on virtual time: lease a job, start
// the attempt, run the handler, finish. A timeout is retried; bad
// credentials are dead-lettered at once.
func Example() {
	ctx := context.Background()
	clk := clock.NewVirtual(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	st, _ := memstore.New(store.Config{Observer: func(e disposition.Event) {
		fmt.Printf("event %s: %s → %s (%s)\n", e.JobID, e.From, e.To, e.Reason)
	}})
	policy, _ := retry.New(retry.Config{}, rand.New(rand.NewPCG(1, 2)))
	core, _ := worker.NewCore(worker.Config{Classifier: classify.Default(), Policy: policy})
	p, _ := worker.NewPipeline(worker.PipelineConfig{Core: core, Queue: st, DLQ: st})

	errs := map[string][]error{
		"email-1": {&failure.TimeoutError{Op: "SMTP send", After: 30 * time.Second}, nil},
		"auth-1":  {fmt.Errorf("Invalid token: %w", failure.ErrAuthentication)},
	}
	_ = st.Enqueue(ctx, job.Job{ID: "email-1", Task: "email", Dependency: "smtp"}, clk.Now())
	_ = st.Enqueue(ctx, job.Job{ID: "auth-1", Task: "auth"}, clk.Now())
	for range 3 {
		j, l, ok, _ := st.Dequeue(ctx, job.DefaultQueue, clk.Now(), 30*time.Second)
		if !ok {
			clk.Advance(time.Second) // the retry comes due
			_, _ = st.ForwardDue(ctx, clk.Now(), 100)
			j, l, _, _ = st.Dequeue(ctx, job.DefaultQueue, clk.Now(), 30*time.Second)
		}
		a, _, _ := p.Start(ctx, j, l, clk.Now())
		err := errs[j.ID][0]
		errs[j.ID] = errs[j.ID][1:]
		o, _ := p.Finish(ctx, a, l, err, clk.Now())
		fmt.Printf("%s after attempt %d: %s", j.ID, o.Job.Attempts, o.Action)
		if o.Failed() {
			fmt.Printf(" (%s, %s)", o.Verdict, o.Decision.Reason)
		}
		fmt.Println()
	}
	// Output:
	// event email-1: none → queued (enqueued)
	// event auth-1: none → queued (enqueued)
	// event email-1: queued → in-flight (leased)
	// event email-1: in-flight → scheduled (retry)
	// email-1 after attempt 1: retry (transient/medium/network, backoff)
	// event auth-1: queued → in-flight (leased)
	// event auth-1: in-flight → dead-lettered (dead-lettered)
	// auth-1 after attempt 1: dead-letter (critical/high/auth, critical)
	// event email-1: scheduled → queued (due)
	// event email-1: queued → in-flight (leased)
	// event email-1: in-flight → succeeded (succeeded)
	// email-1 after attempt 2: succeed
}
