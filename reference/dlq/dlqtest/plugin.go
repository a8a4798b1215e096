package dlqtest

// The conformance suite of dlq.DeadLetters: the minimal DLQ a team plugs
// into the simulator's DLQ-only mode (sim.WithDLQ).
//
// Call ExerciseDeadLetters inside a container of a Ginkgo suite:
//
//	var _ = Describe("our DLQ table", func() {
//		dlqtest.ExerciseDeadLetters(func(capacity int) dlq.DeadLetters {
//			return ourdlq.New(capacity) // a fresh, empty store
//		})
//	})
//
// What a store does not declare (dlq.Caps, through a Capabilities method)
// is skipped with Skip("store does not declare ..."): Ginkgo reports a
// skipped spec as skipped, never as passed. Failures name the jobs ("job
// job-7 was added but is not listed"), not counts.
//
// Slow specs: the ones labelled "slow" (more than 10,000 entries, a requeue
// racing adds) take seconds on a store that answers in microseconds, longer
// on one behind a network. Leave them out with
//
//	ginkgo --label-filter='!slow'
//	go test ./... -ginkgo.label-filter='!slow'

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
)

// SlowEntries is how many entries the large-store spec adds: past 10,000.
const SlowEntries = 10_050

// PluginEntry returns a valid Failed entry for job id, failed at T0+ms.
func PluginEntry(id string, ms int) dlq.Entry {
	at := T0.Add(time.Duration(ms) * time.Millisecond)
	j := job.Job{ID: id, Task: "email", Queue: job.DefaultQueue, Attempts: 3}
	return dlq.Entry{Version: dlq.EncodingVersion, Job: j, Status: dlq.Failed, SourceQueue: j.Queue,
		FirstFailedAt: at, LastFailedAt: at, Reason: "gave up",
		Verdict: classify.Classification{Class: classify.Permanent, Severity: classify.Medium},
		History: []dlq.Failure{{At: at, Attempt: 3, Error: "boom"}}}
}

// FailNth wraps a DeadLetters store so that its n-th call (counting every
// method, from 1) fails with ErrInjected, either before reaching the store
// (after=false) or after it (after=true: the call took effect, its answer
// is lost). It forwards the optional interfaces the store declares.
type FailNth struct {
	dlq.DeadLetters
	N     int64
	After bool
	calls atomic.Int64
}

// ErrInjected is the failure FailNth injects.
var ErrInjected = errors.New("dlqtest: injected failure")

func (f *FailNth) fail(op string, call func() error) error {
	n := f.calls.Add(1)
	if n != f.N {
		return call()
	}
	if f.After {
		_ = call()
	}
	return fmt.Errorf("%s (call %d): %w", op, n, ErrInjected)
}

// Add adds, or fails on the n-th call.
func (f *FailNth) Add(ctx context.Context, e dlq.Entry) error {
	return f.fail("add "+e.Job.ID, func() error { return f.DeadLetters.Add(ctx, e) })
}

// Requeue requeues, or fails on the n-th call.
func (f *FailNth) Requeue(ctx context.Context, id string) (j job.Job, err error) {
	err = f.fail("requeue "+id, func() error { var e error; j, e = f.DeadLetters.Requeue(ctx, id); return e })
	return j, err
}

// Capabilities are the wrapped store's.
func (f *FailNth) Capabilities() dlq.Caps { return dlq.CapsOf(f.DeadLetters) }

// Delete deletes through the wrapped store, or fails on the n-th call.
func (f *FailNth) Delete(ctx context.Context, id string) error {
	d, ok := f.DeadLetters.(dlq.Deleter)
	if !ok {
		return fmt.Errorf("delete %s: %w", id, dlq.ErrNotDeclared)
	}
	return f.fail("delete "+id, func() error { return d.Delete(ctx, id) })
}

// ExerciseDeadLetters declares the dlq.DeadLetters conformance specs.
// newStore returns a fresh, empty store bounded to capacity entries (a
// store that does not declare Capacity ignores it; 0 means unbounded).
func ExerciseDeadLetters(newStore func(capacity int) dlq.DeadLetters) {
	Describe("dlq.DeadLetters conformance", func() {
		var (
			ctx  context.Context
			s    dlq.DeadLetters
			caps dlq.Caps
		)
		BeforeEach(func() {
			ctx = context.Background()
			s = newStore(0)
			caps = dlq.CapsOf(s)
		})
		need := func(declared bool, what string) {
			if !declared {
				Skip("store does not declare " + what)
			}
		}

		It("lists and counts every entry added, once each", func() {
			want := []string{"job-1", "job-2", "job-3"}
			for i, id := range want {
				Expect(s.Add(ctx, PluginEntry(id, i))).To(Succeed(), "add %s", id)
			}
			ExpectListed(ctx, s, want, "after adding %v", want)
		})

		It("keeps one entry per job when the same job is added again", func() {
			Expect(s.Add(ctx, PluginEntry("job-1", 1))).To(Succeed())
			again := PluginEntry("job-1", 2)
			again.Reason = "died again"
			Expect(s.Add(ctx, again)).To(Succeed(), "add job-1 a second time")
			ExpectListed(ctx, s, []string{"job-1"}, "after adding job-1 twice")
		})

		It("keeps an entry's job and failure as added", func() {
			e := PluginEntry("job-1", 7)
			e.Job.Payload, e.Job.IdempotencyKey = []byte(`{"to":"a@example.com"}`), "key-1"
			Expect(s.Add(ctx, e)).To(Succeed())
			es, err := s.List(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(es).To(HaveLen(1), "entries listed after adding job-1: %v", ids(es))
			got := es[0]
			Expect(got.Job.ID).To(Equal("job-1"))
			Expect(got.Job.Payload).To(Equal(e.Job.Payload), "job-1's payload as listed")
			Expect(got.Job.IdempotencyKey).To(Equal("key-1"), "job-1's idempotency key as listed")
			Expect(got.Job.Attempts).To(Equal(3), "job-1's attempts as listed")
			Expect(got.LastFailedAt.UnixMilli()).To(Equal(e.LastFailedAt.UnixMilli()), "job-1's last failure as listed")
			Expect(got.Reason).To(Equal("gave up"), "job-1's reason as listed")
		})

		It("refuses an invalid job, writing nothing", func() {
			e := PluginEntry("", 1)
			err := s.Add(ctx, e)
			Expect(errors.Is(err, job.ErrInvalid)).To(BeTrue(), "adding a job with no ID answered %v, want an error matching job.ErrInvalid", err)
			ExpectListed(ctx, s, nil, "after the refused add")
		})

		It("requeues by ID: returns the job and removes only its entry", func() {
			for i, id := range []string{"job-1", "job-2", "job-3"} {
				Expect(s.Add(ctx, PluginEntry(id, i))).To(Succeed())
			}
			j, err := s.Requeue(ctx, "job-2")
			Expect(err).NotTo(HaveOccurred(), "requeue job-2")
			Expect(j.ID).To(Equal("job-2"), "the job requeue of job-2 returned")
			Expect(j.Task).To(Equal("email"), "job-2's task as requeued")
			ExpectListed(ctx, s, []string{"job-1", "job-3"}, "after requeue of job-2")
		})

		It("answers ErrNotFound for a requeue of a job it does not hold, changing nothing", func() {
			Expect(s.Add(ctx, PluginEntry("job-1", 1))).To(Succeed())
			_, err := s.Requeue(ctx, "job-404")
			Expect(errors.Is(err, dlq.ErrNotFound)).To(BeTrue(), "requeue of job-404 answered %v, want an error matching dlq.ErrNotFound", err)
			_, err = s.Requeue(ctx, "job-1")
			Expect(err).NotTo(HaveOccurred(), "the first requeue of job-1")
			_, err = s.Requeue(ctx, "job-1")
			Expect(errors.Is(err, dlq.ErrNotFound)).To(BeTrue(), "a second requeue of job-1 answered %v, want dlq.ErrNotFound (it was requeued already)", err)
			ExpectListed(ctx, s, nil, "after requeueing job-1")
		})

		It("deletes by ID", func() {
			need(caps.Delete, "delete")
			for i, id := range []string{"job-1", "job-2"} {
				Expect(s.Add(ctx, PluginEntry(id, i))).To(Succeed())
			}
			d := s.(dlq.Deleter)
			Expect(d.Delete(ctx, "job-1")).To(Succeed(), "delete job-1")
			ExpectListed(ctx, s, []string{"job-2"}, "after delete of job-1")
			err := d.Delete(ctx, "job-1")
			Expect(errors.Is(err, dlq.ErrNotFound)).To(BeTrue(), "a second delete of job-1 answered %v, want dlq.ErrNotFound", err)
		})

		It("requeues by filter: the matching entries, oldest first, up to the limit", func() {
			need(caps.RequeueMatching, "requeue-matching")
			for i, id := range []string{"job-1", "job-2", "job-3", "job-4"} {
				e := PluginEntry(id, i)
				if id == "job-3" {
					e.Job.Task = "charge"
				}
				Expect(s.Add(ctx, e)).To(Succeed())
			}
			js, err := s.(dlq.RequeueMatcher).RequeueMatching(ctx, dlq.Filter{Tasks: []string{"email"}}, 2)
			Expect(err).NotTo(HaveOccurred())
			Expect(jobIDs(js)).To(Equal([]string{"job-1", "job-2"}), "jobs requeued by task email, limit 2, oldest first")
			ExpectListed(ctx, s, []string{"job-3", "job-4"}, "after requeueing job-1 and job-2 by filter")
		})

		It("quarantines an entry: listed as quarantined", func() {
			need(caps.Quarantine, "quarantine")
			Expect(s.Add(ctx, PluginEntry("job-1", 1))).To(Succeed())
			Expect(s.(dlq.Quarantiner).Quarantine(ctx, "job-1", "poison")).To(Succeed())
			es, err := s.List(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(es).To(ContainElement(HaveField("Status", dlq.Quarantined)), "job-1's status after quarantine: %v", statuses(es))
			err = s.(dlq.Quarantiner).Quarantine(ctx, "job-404", "poison")
			Expect(errors.Is(err, dlq.ErrNotFound)).To(BeTrue(), "quarantine of job-404 answered %v, want dlq.ErrNotFound", err)
		})

		It("refuses an add when full, with ErrFull, writing nothing", func() {
			need(caps.Capacity, "capacity")
			s = newStore(3)
			for i, id := range []string{"job-1", "job-2", "job-3"} {
				Expect(s.Add(ctx, PluginEntry(id, i))).To(Succeed(), "add %s to a store of capacity 3", id)
			}
			err := s.Add(ctx, PluginEntry("job-4", 4))
			Expect(errors.Is(err, dlq.ErrFull)).To(BeTrue(), "adding job-4 to a full store of capacity 3 answered %v, want dlq.ErrFull", err)
			ExpectListed(ctx, s, []string{"job-1", "job-2", "job-3"}, "after the refused add of job-4")
		})

		It("leaves an entry fully there or not there when a call fails part way through", func() {
			for _, after := range []bool{false, true} {
				for n := int64(1); n <= 4; n++ {
					inner := newStore(0)
					f := &FailNth{DeadLetters: inner, N: n, After: after}
					// Calls: add job-1, add job-2, requeue job-1, add job-3.
					added := map[string]bool{}
					for _, step := range []struct {
						op, id string
					}{{"add", "job-1"}, {"add", "job-2"}, {"requeue", "job-1"}, {"add", "job-3"}} {
						var err error
						if step.op == "add" {
							err = f.Add(ctx, PluginEntry(step.id, 1))
							if err == nil || after {
								added[step.id] = true
							}
						} else {
							_, err = f.Requeue(ctx, step.id)
							if !added[step.id] && errors.Is(err, dlq.ErrNotFound) {
								continue // its add failed before reaching the store
							}
							if err == nil || after {
								added[step.id] = false
							}
						}
						if err != nil {
							Expect(errors.Is(err, ErrInjected)).To(BeTrue(), "call %d (%s %s) failed with %v, not the injected failure", n, step.op, step.id, err)
						}
					}
					es, err := inner.List(ctx)
					Expect(err).NotTo(HaveOccurred())
					var want []string
					for _, id := range []string{"job-1", "job-2", "job-3"} {
						if added[id] {
							want = append(want, id)
						}
					}
					for _, e := range es {
						Expect(e.Job.ID).NotTo(BeEmpty(), "an entry with no job ID after call %d failed (after=%v): a half-written entry", n, after)
						Expect(e.Job.Task).To(Equal("email"), "job %s's entry after call %d failed (after=%v) lost its task: a half-written entry", e.Job.ID, n, after)
					}
					Expect(ids(es)).To(ConsistOf(want), "entries after call %d failed (after the store answered: %v); added and not requeued: %v", n, after, want)
				}
			}
		})

		It("holds more than 10,000 entries: every one listed, counted and requeued", Label("slow"), func() {
			want := make([]string, SlowEntries)
			for i := range want {
				want[i] = "job-" + strconv.Itoa(i)
				Expect(s.Add(ctx, PluginEntry(want[i], i))).To(Succeed(), "add %s", want[i])
			}
			ExpectListed(ctx, s, want, "after adding %d entries", SlowEntries)
			for i := 0; i < SlowEntries; i += 2 {
				_, err := s.Requeue(ctx, want[i])
				Expect(err).NotTo(HaveOccurred(), "requeue %s", want[i])
			}
			var rest []string
			for i := 1; i < SlowEntries; i += 2 {
				rest = append(rest, want[i])
			}
			ExpectListed(ctx, s, rest, "after requeueing the even-numbered half")
		})

		It("loses and doubles nothing when a requeue loop runs while entries are added", Label("slow"), func() {
			const n = 2_000
			var wg sync.WaitGroup
			added := make(chan string, n)
			var addErr error
			wg.Go(func() {
				defer close(added)
				for i := range n {
					id := "job-" + strconv.Itoa(i)
					if err := s.Add(ctx, PluginEntry(id, i)); err != nil {
						addErr = fmt.Errorf("add %s: %w", id, err)
						return
					}
					added <- id
				}
			})
			var requeued []string
			var reqErr error
			for id := range added { // requeue every other one as soon as it is added
				if (id[len(id)-1]-'0')%2 == 0 { // the even-numbered jobs
					j, err := s.Requeue(ctx, id)
					if err != nil {
						reqErr = fmt.Errorf("requeue %s: %w", id, err)
						break
					}
					requeued = append(requeued, j.ID)
				}
			}
			for range added { // drain after an error
			}
			wg.Wait()
			Expect(addErr).NotTo(HaveOccurred())
			Expect(reqErr).NotTo(HaveOccurred())
			var want []string
			for i := range n {
				id := "job-" + strconv.Itoa(i)
				if !slices.Contains(requeued, id) {
					want = append(want, id)
				}
			}
			ExpectListed(ctx, s, want, "after %d adds racing %d requeues", n, len(requeued))
		})
	})
}

// ExpectListed checks that s lists exactly want, once each, and counts as
// many, naming the jobs lost ("job job-7 was added but is not listed"),
// doubled or unexpected; context (a format, with args) says when.
func ExpectListed(ctx context.Context, s dlq.DeadLetters, want []string, context string, args ...any) {
	GinkgoHelper()
	what := fmt.Sprintf(context, args...)
	es, err := s.List(ctx)
	Expect(err).NotTo(HaveOccurred(), "list %s", what)
	seen := map[string]int{}
	for _, e := range es {
		seen[e.Job.ID]++
	}
	var problems []string
	for _, id := range want {
		if seen[id] == 0 {
			problems = append(problems, "job "+id+" was added but is not listed")
		}
	}
	wanted := map[string]bool{}
	for _, id := range want {
		wanted[id] = true
	}
	for _, id := range sortedKeys(seen) {
		switch {
		case seen[id] > 1:
			problems = append(problems, fmt.Sprintf("job %s is listed %d times", id, seen[id]))
		case !wanted[id]:
			problems = append(problems, "job "+id+" is listed but should not be there")
		}
	}
	if len(problems) > 10 {
		problems = append(problems[:10], fmt.Sprintf("and %d more", len(problems)-10))
	}
	Expect(problems).To(BeEmpty(), "%s", what)
	n, err := s.Count(ctx)
	Expect(err).NotTo(HaveOccurred(), "count %s", what)
	Expect(n).To(Equal(len(want)), "Count %s: %d listed", what, len(es))
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func ids(es []dlq.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Job.ID
	}
	return out
}

func jobIDs(js []job.Job) []string {
	out := make([]string, len(js))
	for i, j := range js {
		out[i] = j.ID
	}
	return out
}

func statuses(es []dlq.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Job.ID + ":" + e.Status.String()
	}
	return out
}
