package memstore_test

import (
	"context"
	"fmt"
	"time"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/memstore"
)

// A job's life through the queue and the DLQ of one namespace, on virtual
// time, with every move reported.
func Example() {
	ctx := context.Background()
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	s, err := memstore.New(store.Config{
		Observer: func(e disposition.Event) { fmt.Println(e) },
	})
	if err != nil {
		panic(err)
	}

	_ = s.Enqueue(ctx, job.Job{ID: "pay-1", Task: "charge", IdempotencyKey: "charge-7f3a"}, now)
	j, lease, _, _ := s.Dequeue(ctx, job.DefaultQueue, now, 30*time.Second)

	// The card was declined: no retry, straight to the DLQ.
	j.Attempts = 1
	v := classify.Classification{Class: classify.Permanent, Severity: classify.Medium, Source: classify.Dependency}
	_, _ = s.DeadLetter(ctx, lease, dlq.Entry{
		Job:     j,
		History: []dlq.Failure{{At: now, Attempt: 1, Error: "card declined", Verdict: v}},
		Verdict: v,
		Reason:  "permanent failure",
	}, now)

	// An operator fixes the card and requeues it, once.
	later := now.Add(time.Hour)
	o, _ := s.Requeue(ctx, "pay-1", dlq.RequeueOptions{Budget: dlq.ResetAttempts, By: "alice"}, later)
	again, _ := s.Requeue(ctx, "pay-1", dlq.RequeueOptions{Budget: dlq.ResetAttempts, By: "alice"}, later)
	fmt.Println(o, again)

	j, _, _, _ = s.Dequeue(ctx, job.DefaultQueue, later, 30*time.Second)
	fmt.Println(j.IdempotencyKey, j.Attempts)
	// Output:
	// pay-1 none→queued (enqueued) at 2026-03-02T09:00:00Z
	// pay-1 queued→in-flight (leased) at 2026-03-02T09:00:00Z
	// pay-1 in-flight→dead-lettered (dead-lettered) at 2026-03-02T09:00:00Z
	// pay-1 dead-lettered→queued (requeued) at 2026-03-02T10:00:00Z
	// requeued already-requeued
	// pay-1 queued→in-flight (leased) at 2026-03-02T10:00:00Z
	// charge-7f3a 0
}
