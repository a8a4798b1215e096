package memstore_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/memstore"
)

// benchStore returns a store for a benchmark, with an observer that does
// nothing (as the simulator's ledger costs are its own).
func benchStore(b *testing.B, cfg store.Config) *memstore.Store {
	b.Helper()
	s, err := memstore.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkEnqueueDequeueAck is one job's happy path: enqueue, lease, ack,
// on a store holding 10,000 other queued jobs and 1,000 leases.
func BenchmarkEnqueueDequeueAck(b *testing.B) {
	ctx := context.Background()
	for _, observed := range []bool{false, true} {
		name := "unobserved"
		cfg := store.Config{}
		if observed {
			name = "observed"
			cfg.Observer = func(e disposition.Event) {}
		}
		b.Run(name, func(b *testing.B) {
			s := benchStore(b, cfg)
			j := job.Job{Task: "charge", Payload: []byte(`{"cents":1299}`)}
			for i := range 11_000 {
				j.ID = "pre-" + strconv.Itoa(i)
				if err := s.Enqueue(ctx, j, t0); err != nil {
					b.Fatal(err)
				}
				if i < 1000 {
					if _, _, _, err := s.Dequeue(ctx, job.DefaultQueue, t0, time.Hour); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				j.ID = strconv.Itoa(i)
				i++
				now := t0.Add(time.Duration(i) * time.Millisecond)
				if err := s.Enqueue(ctx, j, now); err != nil {
					b.Fatal(err)
				}
				// The head of the queue is an older job: ack the one leased.
				got, l, ok, err := s.Dequeue(ctx, job.DefaultQueue, now, time.Minute)
				if err != nil || !ok {
					b.Fatal(ok, err)
				}
				if err := s.Ack(ctx, l, got, now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDeadLetter is one job's death: enqueue, lease, dead-letter, into
// a DLQ below capacity, and into a full one that evicts its oldest entry at
// each death.
func BenchmarkDeadLetter(b *testing.B) {
	ctx := context.Background()
	v := classify.Classification{Class: classify.Permanent, Severity: classify.Medium, Source: classify.Dependency, Rule: "declined"}
	for _, c := range []struct {
		name string
		cfg  store.Config
	}{
		{"below-capacity", store.Config{DLQCapacity: 100_000_000}},
		{"full-evicting", store.Config{DLQCapacity: 10_000, Overflow: store.EvictOldest}},
	} {
		b.Run(c.name, func(b *testing.B) {
			s := benchStore(b, c.cfg)
			j := job.Job{Task: "charge", Dependency: "payment-gateway", Payload: []byte(`{"cents":1299}`), IdempotencyKey: "k", Attempts: 3}
			e := dlq.Entry{Verdict: v, Reason: "permanent failure"}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				j.ID = strconv.Itoa(i)
				i++
				now := t0.Add(time.Duration(i) * time.Millisecond)
				if err := s.Enqueue(ctx, j, now); err != nil {
					b.Fatal(err)
				}
				got, l, _, err := s.Dequeue(ctx, job.DefaultQueue, now, time.Minute)
				if err != nil {
					b.Fatal(err)
				}
				e.Job = got
				e.History = []dlq.Failure{{At: now, Attempt: 3, Error: "card declined", ErrorType: "*failure.HTTPError", Verdict: v}}
				if _, err := s.DeadLetter(ctx, l, e, now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkListPage lists a filtered page of 100 from a DLQ of 100,000
// entries of three severities, following the cursor.
func BenchmarkListPage(b *testing.B) {
	ctx := context.Background()
	s := benchStore(b, store.Config{})
	for i := range 100_000 {
		v := classify.Classification{Class: classify.Permanent, Severity: classify.Severities[i%3], Source: classify.Data}
		at := t0.Add(time.Duration(i) * time.Millisecond)
		e := dlq.Entry{Job: job.Job{ID: strconv.Itoa(i), Task: "charge"}, Verdict: v,
			History: []dlq.Failure{{At: at, Error: "x", Verdict: v}}}
		if _, err := s.Add(ctx, e, at); err != nil {
			b.Fatal(err)
		}
	}
	f := dlq.Filter{Severities: []classify.Severity{classify.Medium}}
	b.ReportAllocs()
	cursor := ""
	for b.Loop() {
		p, err := s.List(ctx, f, cursor, 100)
		if err != nil || len(p.Entries) == 0 {
			b.Fatal(err)
		}
		cursor = p.Next
	}
}
