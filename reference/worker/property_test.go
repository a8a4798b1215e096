package worker_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"pgregory.net/rapid"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/failure"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/retry"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/worker"
)

// fault is one thing a handler may return, and whether a shutdown stopped
// it.
type fault struct {
	name     string
	err      error
	shutdown bool
}

var faults = []fault{
	{name: "ok"},
	{name: "timeout", err: &failure.TimeoutError{Op: "call", After: time.Second}},
	{name: "503", err: &failure.HTTPError{Code: 503}},
	{name: "429", err: failure.WithRetryAfter(&failure.HTTPError{Code: 429}, 20*time.Second)},
	{name: "declined", err: &failure.CardError{Code: "card_declined", Decline: "insufficient_funds"}},
	{name: "auth", err: fmt.Errorf("token: %w", failure.ErrAuthentication)},
	{name: "bad-data", err: fmt.Errorf("row: %w", failure.ErrInvalidInput)},
	{name: "local-permission", err: fmt.Errorf("open: %w", fs.ErrPermission)},
	{name: "unknown", err: errors.New("something odd")},
	{name: "shutdown", err: context.Canceled, shutdown: true},
}

// running is an attempt a worker holds.
type running struct {
	a worker.Attempt
	l queue.Lease
}

var _ = Describe("Pipeline properties", func() {
	It("conserves every job after every step of any sequence of faults, crashes, late completions, "+
		"recoveries, requeues and breaker trips, a small DLQ and held set, and no re-run after a dead letter", func() {
		rapid.Check(GinkgoT(), func(t *rapid.T) {
			// A small DLQ and held set, so that dead letters are refused,
			// held and kept.
			cfg := store.Config{
				DLQCapacity:  rapid.IntRange(1, 4).Draw(t, "dlqCapacity"),
				HeldCapacity: rapid.IntRange(1, 3).Draw(t, "heldCapacity"),
				Overflow:     rapid.SampledFrom([]store.OverflowPolicy{store.Reject, store.EvictOldest}).Draw(t, "overflow"),
			}
			w := newWorld(func(c *worldConfig) { c.store = cfg })
			ctx := context.Background()
			var (
				created, finishedWithErr int
				inFlight, zombies        []running
				// decided are the jobs whose dead letter is decided (and
				// not requeued since): their handlers must never run again.
				decided = map[string]bool{}
			)
			take := func(list *[]running, label string) running {
				i := rapid.IntRange(0, len(*list)-1).Draw(t, label)
				r := (*list)[i]
				*list = append((*list)[:i], (*list)[i+1:]...)
				return r
			}
			// A completion is fenced off when its lease was recovered: the
			// crashed worker's late one, or a slow one the clock overtook.
			finish := func(r running, f fault) {
				r.a.ShuttingDown = f.shutdown
				o, err := w.p.Finish(ctx, r.a, r.l, f.err, w.now())
				if f.err != nil {
					finishedWithErr++
				}
				switch {
				case err == nil:
					if o.Action == worker.DeadLetter {
						decided[o.Job.ID] = true
					}
				case errors.Is(err, worker.ErrKept):
					// Kept in memory under its lease: safe unless the
					// attempt outlived that lease (a recovery may already
					// have taken the job: then it runs again, as any job
					// whose lease ran out).
					if r.l.Expires.After(w.now()) {
						decided[o.Job.ID] = true
					}
				case errors.Is(err, queue.ErrLeaseLost):
					return
				default:
					t.Fatalf("finish %s with %s: %v", r.a.Job.ID, f.name, err)
				}
				// The policy's rules, as the outcome shows them.
				if o.Action == worker.Retry && !o.Verdict.Class.Retryable() {
					t.Fatalf("%s retried a %s failure", r.a.Job.ID, o.Verdict)
				}
				if o.Action == worker.Retry && o.Verdict.Class == classify.Indeterminate && o.Job.IdempotencyKey == "" {
					t.Fatalf("%s retried an indeterminate failure without an idempotency key", r.a.Job.ID)
				}
				if o.Job.Attempts > retry.DefaultMaxAttempts {
					t.Fatalf("%s made %d attempts", r.a.Job.ID, o.Job.Attempts)
				}
				if o.Action == worker.Release && o.Job.Attempts != r.a.Job.Attempts {
					t.Fatalf("%s: a release counted an attempt", r.a.Job.ID)
				}
				if o.Action == worker.DeadLetter && len(o.Entry.History) == 0 {
					t.Fatalf("%s dead-lettered without a history", r.a.Job.ID)
				}
			}

			t.Repeat(map[string]func(*rapid.T){
				"enqueue": func(t *rapid.T) {
					for range rapid.IntRange(1, 4).Draw(t, "jobs") {
						id := fmt.Sprintf("j%d", created)
						var j job.Job
						switch rapid.IntRange(0, 3).Draw(t, "kind") {
						case 0:
							j = newJob(id, "email", "smtp")
						case 1:
							j = newJob(id, "report", "")
						case 2:
							j = paymentJob(id, true)
						default:
							j = paymentJob(id, false)
						}
						if err := w.st.Enqueue(ctx, j, w.now()); err != nil {
							t.Fatalf("enqueue: %v", err)
						}
						created++
					}
				},
				"start": func(t *rapid.T) {
					for range rapid.IntRange(1, 3).Draw(t, "leases") {
						j, l, ok, err := w.st.Dequeue(ctx, job.DefaultQueue, w.now(), 30*time.Second)
						if err != nil || !ok {
							return
						}
						if decided[j.ID] {
							t.Fatalf("%s leased again (its handler would run again) after its dead letter was decided", j.ID)
						}
						a, started, err := w.p.Start(ctx, j, l, w.now())
						if err != nil {
							t.Fatalf("start %s: %v", j.ID, err)
						}
						if started {
							inFlight = append(inFlight, running{a, l})
						}
					}
				},
				"finish": func(t *rapid.T) {
					for range rapid.IntRange(1, 3).Draw(t, "completions") {
						if len(inFlight) > 0 {
							finish(take(&inFlight, "attempt"), rapid.SampledFrom(faults).Draw(t, "fault"))
						}
					}
				},
				"crash": func(t *rapid.T) {
					if len(inFlight) > 0 {
						zombies = append(zombies, take(&inFlight, "attempt"))
					}
				},
				"late completion": func(t *rapid.T) {
					if len(zombies) > 0 {
						finish(take(&zombies, "zombie"), rapid.SampledFrom(faults).Draw(t, "fault"))
					}
				},
				"advance": func(t *rapid.T) {
					// The runner's ticker: kept dead letters' leases are
					// heartbeated at least every 10s of the 30s lease.
					for left := time.Duration(rapid.IntRange(0, 40).Draw(t, "seconds")) * time.Second; left > 0; left -= 10 * time.Second {
						w.clk.Advance(min(left, 10*time.Second))
						for _, k := range w.p.RetryKept(ctx, w.now()) {
							if k.State == worker.KeptFenced && decided[k.JobID] {
								t.Fatalf("kept dead letter %s lost its lease", k.JobID)
							}
						}
					}
				},
				"flush held": func(t *rapid.T) {
					if _, err := w.p.FlushHeld(ctx, w.now(), rapid.IntRange(1, 3).Draw(t, "limit")); err != nil {
						t.Fatalf("flush held: %v", err)
					}
				},
				"forward due": func(t *rapid.T) {
					if _, err := w.st.ForwardDue(ctx, w.now(), 100); err != nil {
						t.Fatalf("forward: %v", err)
					}
				},
				"recover expired": func(t *rapid.T) {
					if _, err := w.st.RecoverExpired(ctx, w.now(), 100); err != nil {
						t.Fatalf("recover: %v", err)
					}
				},
				"requeue from the DLQ": func(t *rapid.T) {
					page, err := w.st.List(ctx, dlq.Filter{Statuses: []dlq.Status{dlq.Failed}}, "", 100)
					if err != nil {
						t.Fatalf("list: %v", err)
					}
					if len(page.Entries) == 0 {
						return
					}
					e := rapid.SampledFrom(page.Entries).Draw(t, "entry")
					out, err := w.st.Requeue(ctx, e.ID(), dlq.RequeueOptions{Budget: dlq.ResetAttempts, By: "ops"}, w.now())
					if err != nil || out != dlq.OutcomeRequeued {
						t.Fatalf("requeue %s: %v %v", e.ID(), out, err)
					}
					delete(decided, e.ID())
				},
				"": func(t *rapid.T) {
					// Conservation: every job is in exactly one place, and
					// the places add up to the jobs created.
					if errs := w.led.errs(); len(errs) > 0 {
						t.Fatalf("ledger: %v", errs)
					}
					counts := w.led.counts()
					total := 0
					for _, n := range counts {
						total += n
					}
					if total != created {
						t.Fatalf("%d jobs accounted for, %d created: %v", total, created, counts)
					}
					c, err := w.st.Counts(ctx)
					if err != nil {
						t.Fatalf("counts: %v", err)
					}
					if want := (queue.Counts{Queued: counts[disposition.Queued], InFlight: counts[disposition.InFlight],
						Scheduled: counts[disposition.Scheduled], Fallback: counts[disposition.Fallback], Held: counts[disposition.Held]}); c != want {
						t.Fatalf("store counts %+v, ledger %+v", c, want)
					}
					st, err := w.st.Stats(ctx)
					if err != nil {
						t.Fatalf("stats: %v", err)
					}
					if st.ByStatus["failed"] != counts[disposition.DeadLettered] {
						t.Fatalf("%d failed DLQ entries, %d dead jobs", st.ByStatus["failed"], counts[disposition.DeadLettered])
					}
					if counts[disposition.InFlight] > len(inFlight)+len(zombies)+w.p.Kept() {
						t.Fatalf("%d jobs in flight, %d attempts held, %d dead letters kept", counts[disposition.InFlight], len(inFlight)+len(zombies), w.p.Kept())
					}
					// The hooks: one OnError per error, one OnDead per death.
					if n := len(w.errorCalls()); n != finishedWithErr {
						t.Fatalf("OnError called %d times for %d errors", n, finishedWithErr)
					}
					if n := len(w.deadIDs()); uint64(n) != w.p.Stats().Applied[worker.DeadLetter] {
						t.Fatalf("OnDead called %d times for %d deaths", n, w.p.Stats().Applied[worker.DeadLetter])
					}
				},
			})
		})
	})
})

var _ = Describe("MemoryHistory", func() {
	It("holds what a map of failures would, whatever the order of records and forgets (property)", func() {
		rapid.Check(GinkgoT(), func(t *rapid.T) {
			h := worker.NewMemoryHistory()
			model := map[string][]dlq.Failure{}
			// Many IDs, so that some share the filter's counts.
			ids := rapid.SliceOfNDistinct(rapid.StringMatching(`[a-z0-9-]{1,12}`), 1, 6000, rapid.ID[string]).Draw(t, "ids")
			for step := range rapid.IntRange(1, 300).Draw(t, "steps") {
				id := rapid.SampledFrom(ids).Draw(t, "id")
				switch rapid.IntRange(0, 2).Draw(t, "op") {
				case 0:
					f := dlq.Failure{Attempt: step, Error: id}
					_ = h.Record(context.Background(), id, f)
					model[id] = append(model[id], f)
				case 1:
					_ = h.Forget(context.Background(), id)
					delete(model, id)
				}
				for _, id := range []string{id, rapid.SampledFrom(ids).Draw(t, "check")} {
					if got, want := failures(h, id), model[id]; len(got) != len(want) || len(got) > 0 && got[len(got)-1] != want[len(want)-1] {
						t.Fatalf("step %d: failures of %s: %v, want %v", step, id, got, want)
					}
				}
				if h.Len() != len(model) {
					t.Fatalf("step %d: %d jobs held, want %d", step, h.Len(), len(model))
				}
			}
		})
	})

	It("may be used from many goroutines at once", func() {
		h := worker.NewMemoryHistory()
		done := make(chan struct{})
		for g := range 4 {
			go func() {
				defer GinkgoRecover()
				defer func() { done <- struct{}{} }()
				for i := range 2000 {
					id := fmt.Sprintf("g%d-%d", g, i%50)
					_ = h.Record(context.Background(), id, dlq.Failure{Attempt: i})
					_, _ = h.Failures(context.Background(), id)
					if i%3 == 0 {
						_ = h.Forget(context.Background(), id)
					}
				}
				for i := range 50 {
					_ = h.Forget(context.Background(), fmt.Sprintf("g%d-%d", g, i))
				}
			}()
		}
		for range 4 {
			<-done
		}
		if n := h.Len(); n != 0 {
			Fail(fmt.Sprintf("%d jobs left after every one was forgotten", n))
		}
	})
})

// failures is h's failures of id, its error dropped (a MemoryHistory has none).
func failures(h *worker.MemoryHistory, id string) []dlq.Failure {
	fs, _ := h.Failures(context.Background(), id)
	return fs
}
