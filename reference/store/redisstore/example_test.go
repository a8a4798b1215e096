package redisstore_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/redisstore"
)

// A job dies, is dead-lettered from its lease in one step, and an operator
// requeues it; a retried requeue answers that it was done already.
func Example() {
	m := miniredis.NewMiniRedis()
	if err := m.Start(); err != nil {
		panic(err)
	}
	defer m.Close()
	c := redisstore.NewClient(m.Addr())
	defer c.Close()
	s, err := redisstore.New(c, store.Config{Namespace: "payments"})
	if err != nil {
		panic(err)
	}
	ctx, now := context.Background(), time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

	_ = s.Enqueue(ctx, job.Job{ID: "pay-1", Task: "charge", IdempotencyKey: "charge-7f3a"}, now)
	j, lease, _, _ := s.Dequeue(ctx, job.DefaultQueue, now, 30*time.Second)
	j.Attempts = 1
	declined := classify.Classification{Class: classify.Permanent, Severity: classify.Low}
	_, _ = s.DeadLetter(ctx, lease, dlq.Entry{Job: j, Verdict: declined, Reason: "card declined",
		History: []dlq.Failure{{At: now, Attempt: 1, Error: "card declined", Verdict: declined}}}, now)

	st, _ := s.Stats(ctx)
	fmt.Println("dead-lettered:", st.ByStatus, st.BySeverity)
	ask := dlq.RequeueOptions{Budget: dlq.ResetAttempts, By: "ops"}
	first, _ := s.Requeue(ctx, "pay-1", ask, now.Add(time.Minute))
	again, _ := s.Requeue(ctx, "pay-1", ask, now.Add(time.Minute))
	fmt.Println("requeue:", first, "then", again)
	j, _, _, _ = s.Dequeue(ctx, job.DefaultQueue, now.Add(2*time.Minute), 30*time.Second)
	fmt.Println("back:", j.ID, "attempts", j.Attempts, "key", j.IdempotencyKey)
	// Output:
	// dead-lettered: map[failed:1] map[low:1]
	// requeue: requeued then already-requeued
	// back: pay-1 attempts 0 key charge-7f3a
}
