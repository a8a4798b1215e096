package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"pgregory.net/rapid"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/memstore"
)

var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

func charge(id string) job.Job {
	return job.Job{ID: id, Task: "charge", Payload: []byte(`{"cents":1299}`)}
}

func entryOf(j job.Job, at time.Time) dlq.Entry {
	v := classify.Classification{Class: classify.Permanent, Severity: classify.Medium, Source: classify.Data}
	return dlq.Entry{Job: j, History: []dlq.Failure{{At: at, Error: "declined", Verdict: v}}, Verdict: v, Reason: "permanent"}
}

var _ = Describe("memstore specifics", func() {
	ctx := context.Background()

	DescribeTable("New refuses an invalid config, naming the field",
		func(cfg store.Config, field string) {
			_, err := memstore.New(cfg)
			Expect(err).To(MatchError(store.ErrInvalidConfig))
			var ce *store.ConfigError
			Expect(errors.As(err, &ce)).To(BeTrue())
			Expect(ce.Field).To(Equal(field))
		},
		Entry("a namespace with a space", store.Config{Namespace: "bad ns"}, "Namespace"),
		Entry("a negative capacity", store.Config{DLQCapacity: -1}, "DLQCapacity"),
		Entry("an unknown policy", store.Config{Overflow: 9}, "Overflow"),
		Entry("a huge batch", store.Config{BatchSize: 10_001}, "BatchSize"),
		Entry("a negative payload bound", store.Config{MaxPayload: -1}, "MaxPayload"),
	)

	It("applies the defaults", func() {
		s, err := memstore.New(store.Config{})
		Expect(err).NotTo(HaveOccurred())
		Expect(s.Config()).To(Equal(store.Config{}.WithDefaults()))
	})

	It("calls observers without holding its lock, so that they may call it, in the order of the moves", func() {
		var (
			s      *memstore.Store
			seen   []string
			counts []queue.Counts
		)
		s, err := memstore.New(store.Config{
			Observer: func(e disposition.Event) {
				seen = append(seen, e.JobID+":"+string(e.Reason))
				c, err := s.Counts(ctx)
				Expect(err).NotTo(HaveOccurred())
				counts = append(counts, c)
				if e.Reason == disposition.Enqueued && e.JobID == "parent" {
					// A move from inside a callback: delivered after this
					// callback returns, never reordered.
					Expect(s.Enqueue(ctx, charge("child"), e.At)).To(Succeed())
					seen = append(seen, "parent-callback-done")
				}
			},
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(s.Enqueue(ctx, charge("parent"), t0)).To(Succeed())
		Expect(seen).To(Equal([]string{"parent:enqueued", "parent-callback-done", "child:enqueued"}))
		Expect(counts).To(Equal([]queue.Counts{{Queued: 1}, {Queued: 2}}))
	})

	It("reports an overflow without holding its lock", func() {
		var stats []dlq.Stats
		var s *memstore.Store
		s, err := memstore.New(store.Config{DLQCapacity: 1, OnOverflow: func(o store.Overflow) {
			st, err := s.Stats(ctx)
			Expect(err).NotTo(HaveOccurred())
			stats = append(stats, st)
		}})
		Expect(err).NotTo(HaveOccurred())
		_, err = s.Add(ctx, entryOf(charge("a"), t0), t0)
		Expect(err).NotTo(HaveOccurred())
		_, err = s.Add(ctx, entryOf(charge("b"), t0), t0)
		Expect(err).To(MatchError(dlq.ErrFull))
		Expect(stats).To(HaveLen(1))
		Expect(stats[0].Rejected).To(Equal(1))
	})

	It("keeps working after an observer panics", func() {
		boom := true
		var heard []string
		s, err := memstore.New(store.Config{Observer: func(e disposition.Event) {
			if boom {
				boom = false
				panic("observer bug")
			}
			heard = append(heard, e.JobID)
		}})
		Expect(err).NotTo(HaveOccurred())
		Expect(func() { _ = s.Enqueue(ctx, charge("a"), t0) }).To(PanicWith("observer bug"))
		Expect(s.Enqueue(ctx, charge("b"), t0)).To(Succeed())
		Expect(heard).To(Equal([]string{"b"}))
		c, err := s.Counts(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Queued).To(Equal(2), "the move happened before its callback")
	})

	It("delivers each job's events in order when many goroutines move jobs at once", func() {
		var mu sync.Mutex
		state := map[string]disposition.State{}
		var bad []string
		s, err := memstore.New(store.Config{Observer: func(e disposition.Event) {
			mu.Lock()
			defer mu.Unlock()
			if state[e.JobID] != e.From {
				bad = append(bad, e.String())
			}
			state[e.JobID] = e.To
		}})
		Expect(err).NotTo(HaveOccurred())
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				defer GinkgoRecover()
				for i := range 300 {
					id := fmt.Sprintf("w%d-%d", w, i)
					Expect(s.Enqueue(ctx, charge(id), t0)).To(Succeed())
					j, l, ok, err := s.Dequeue(ctx, job.DefaultQueue, t0, time.Minute)
					Expect(err).NotTo(HaveOccurred())
					Expect(ok).To(BeTrue())
					if i%3 == 0 {
						Expect(s.Release(ctx, l, j, t0)).To(Succeed())
						continue
					}
					Expect(s.Ack(ctx, l, j, t0)).To(Succeed())
				}
			})
		}
		wg.Wait()
		Expect(bad).To(BeEmpty())
		c, err := s.Counts(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(c).To(Equal(queue.Counts{Queued: 8 * 100}))
	})

	It("delivers every event, none left queued, when goroutines move jobs at once and callbacks move more", func() {
		var mu sync.Mutex
		heard := 0
		var s *memstore.Store
		s, err := memstore.New(store.Config{Observer: func(e disposition.Event) {
			mu.Lock()
			heard++
			mu.Unlock()
			if e.Reason == disposition.Acked && strings.HasSuffix(e.JobID, "7") {
				// A move from a callback, while other goroutines deliver.
				Expect(s.Enqueue(ctx, charge(e.JobID+"-child"), e.At)).To(Succeed())
			}
		}})
		Expect(err).NotTo(HaveOccurred())
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				defer GinkgoRecover()
				for i := range 500 {
					Expect(s.Enqueue(ctx, charge(fmt.Sprintf("w%d-%d", w, i)), t0)).To(Succeed())
					j, l, ok, err := s.Dequeue(ctx, job.DefaultQueue, t0, time.Minute)
					Expect(err).NotTo(HaveOccurred())
					Expect(ok).To(BeTrue())
					Expect(s.Ack(ctx, l, j, t0)).To(Succeed())
				}
			})
		}
		wg.Wait()
		c, err := s.Counts(ctx)
		Expect(err).NotTo(HaveOccurred())
		mu.Lock()
		defer mu.Unlock()
		Expect(heard).To(Equal(3*8*500+c.Queued), "three events a job, one for each child enqueued")
	})

	It("orders its heaps by (Unix millisecond, job ID), as the Redis store's sorted sets do (property)", func() {
		wall := time.Now() // with a monotonic reading
		rapid.Check(GinkgoT(), func(t *rapid.T) {
			pick := func(label string) time.Time {
				sec := rapid.OneOf(rapid.Int64Range(-5, 5), rapid.Int64Range(-1<<40, 1<<40), rapid.Int64()).Draw(t, label+"-sec")
				at := time.Unix(sec, rapid.Int64Range(0, 999_999_999).Draw(t, label+"-nsec"))
				switch rapid.IntRange(0, 3).Draw(t, label+"-kind") {
				case 1:
					at = at.In(time.FixedZone("X", 3600))
				case 2:
					at = wall.Add(time.Duration(rapid.Int64Range(-1e12, 1e12).Draw(t, label+"-mono")))
				case 3:
					at = time.Time{}
				}
				return at
			}
			a, b := pick("a"), pick("b")
			ida, idb := heapID(t, "a-id"), heapID(t, "b-id")
			if got, want := memstore.HeapBefore(ida, a, idb, b), msIDOrder(a, ida, b, idb) <= 0; got != want {
				t.Fatalf("%s at %v before %s at %v: got %v, want %v", ida, a, idb, b, got, want)
			}
		})
	})

	It("validates every completion as job.Validate does, the job it leased included", func() {
		s, err := memstore.New(store.Config{MaxPayload: 16})
		Expect(err).NotTo(HaveOccurred())
		Expect(s.Enqueue(ctx, charge("a"), t0)).To(Succeed())
		j, l, _, err := s.Dequeue(ctx, job.DefaultQueue, t0, time.Minute)
		Expect(err).NotTo(HaveOccurred())

		bad := j
		bad.Attempts = -1
		Expect(s.Ack(ctx, l, bad, t0)).To(MatchError(job.ErrInvalid))
		bad = j
		bad.Payload = []byte(`{"cents":1299999999}`)
		Expect(s.Retry(ctx, l, bad, t0.Add(time.Second), t0)).To(MatchError(job.ErrInvalid))
		bad = j
		bad.Task = "char\x01ge"
		Expect(s.Release(ctx, l, bad, t0)).To(MatchError(job.ErrInvalid))
		bad = j
		bad.ID = "b"
		Expect(s.Divert(ctx, l, bad, t0)).To(MatchError(job.ErrInvalid))
		stale := l
		stale.Token++
		Expect(s.Ack(ctx, stale, bad, t0)).To(MatchError(job.ErrInvalid), "an invalid job is refused before the lease is checked")
		Expect(s.Ack(ctx, stale, j, t0)).To(MatchError(queue.ErrLeaseLost))

		// A lease naming a queue nothing validated: the job stays on it,
		// and a completion storing that name is refused.
		forged := l
		forged.Queue = "q\x01"
		Expect(s.Release(ctx, forged, j, t0)).To(Succeed())
		j, l, ok, err := s.Dequeue(ctx, "q\x01", t0, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeTrue())
		Expect(j.Queue).To(Equal("q\x01"))
		Expect(s.Ack(ctx, l, j, t0)).To(MatchError(job.ErrInvalid))
		j.Queue = ""
		Expect(s.Ack(ctx, l, j, t0)).To(Succeed())
	})

	It("keeps its heaps in order through pushes, removals and moves (property)", func() {
		wall := time.Now() // with a monotonic reading
		rapid.Check(GinkgoT(), func(t *rapid.T) {
			h := memstore.NewTestHeap()
			type item struct {
				at time.Time
				id string
			}
			model := map[int]item{}
			pick := func(label string) time.Time {
				at := t0.Add(time.Duration(rapid.IntRange(-5, 5).Draw(t, label))*time.Second +
					time.Duration(rapid.IntRange(0, 2_000_000).Draw(t, label+"-ns"))) // ties within a millisecond
				if rapid.IntRange(0, 4).Draw(t, label+"-mono") == 0 {
					at = wall.Add(at.Sub(t0))
				}
				return at
			}
			for step := range rapid.IntRange(1, 80).Draw(t, "steps") {
				keys := slices.Sorted(maps.Keys(model))
				switch op := rapid.IntRange(0, 2).Draw(t, "op"); {
				case op == 0 || len(keys) == 0:
					at := pick("at")
					id := heapID(t, "id") + "/" + strconv.Itoa(step)
					h.Push(step, id, at)
					model[step] = item{at, id}
				case op == 1:
					n := rapid.SampledFrom(keys).Draw(t, "remove")
					h.Remove(n)
					delete(model, n)
				default:
					n := rapid.SampledFrom(keys).Draw(t, "move")
					at := pick("to")
					h.SetAt(n, at)
					model[n] = item{at, model[n].id}
				}
				want := -1
				for n, it := range model {
					if w, ok := model[want]; !ok || msIDOrder(it.at, it.id, w.at, w.id) < 0 {
						want = n
					}
				}
				got, ok := h.Min()
				if !ok || got != want {
					t.Fatalf("step %d: min %d (positions right: %v), want %d", step, got, ok, want)
				}
			}
		})
	})

	It("refuses a lease of no duration", func() {
		s, _ := memstore.New(store.Config{})
		Expect(s.Enqueue(ctx, charge("a"), t0)).To(Succeed())
		_, _, _, err := s.Dequeue(ctx, job.DefaultQueue, t0, 0)
		Expect(err).To(HaveOccurred())
		_, l, _, err := s.Dequeue(ctx, job.DefaultQueue, t0, time.Second)
		Expect(err).NotTo(HaveOccurred())
		_, err = s.Heartbeat(ctx, l, t0, -time.Second)
		Expect(err).To(HaveOccurred())
	})

	It("refuses a listing of no entries and a cursor it did not make", func() {
		s, _ := memstore.New(store.Config{})
		_, err := s.List(ctx, dlq.Filter{}, "", 0)
		Expect(err).To(HaveOccurred())
		_, err = s.List(ctx, dlq.Filter{}, "%%%", 10)
		Expect(err).To(HaveOccurred())
		_, err = s.List(ctx, dlq.Filter{}, "bm90LWpzb24", 10) // "not-json"
		Expect(err).To(HaveOccurred())
	})

	It("keeps its own copy of an enqueued payload", func() {
		s, _ := memstore.New(store.Config{})
		j := charge("a")
		Expect(s.Enqueue(ctx, j, t0)).To(Succeed())
		j.Payload[0] = 'X'
		got, _, _, err := s.Dequeue(ctx, job.DefaultQueue, t0, time.Second)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(got.Payload)).To(Equal(`{"cents":1299}`))
	})

	It("takes planted bytes that decode as an ordinary entry", func() {
		s, _ := memstore.New(store.Config{})
		e := entryOf(charge("a"), t0)
		e.Status, e.LastFailedAt, e.FirstFailedAt, e.SourceQueue = dlq.Failed, t0, t0, job.DefaultQueue
		raw, err := dlq.Encode(e)
		Expect(err).NotTo(HaveOccurred())
		s.PlantRaw("a", raw)
		got, err := s.Get(ctx, "a")
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Corrupt).To(BeFalse())
		st, _ := s.Stats(ctx)
		Expect(st.ByStatus).To(Equal(map[string]int{"failed": 1}))
		Expect(s.Requeue(ctx, "a", dlq.RequeueOptions{Budget: dlq.OneMoreAttempt}, t0.Add(time.Second))).To(Equal(dlq.OutcomeRequeued))
	})

	It("replaces an entry that does not decode when its job dies again, keeping its bytes", func() {
		s, _ := memstore.New(store.Config{})
		s.PlantRaw("a", []byte("junk"))
		_, err := s.Add(ctx, entryOf(charge("a"), t0), t0)
		Expect(err).NotTo(HaveOccurred())
		got, err := s.Get(ctx, "a")
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Corrupt).To(BeFalse())
		Expect(string(got.Superseded)).To(Equal("junk"))
	})

	It("stores an entry with a zero verdict and reads it back, not as corrupt", func() {
		s, _ := memstore.New(store.Config{})
		Expect(s.Enqueue(ctx, charge("a"), t0)).To(Succeed())
		_, l, _, err := s.Dequeue(ctx, job.DefaultQueue, t0, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		e := entryOf(charge("a"), t0)
		e.Verdict = classify.Classification{} // encodes as "none", which decodes back
		e.History = append(e.History, dlq.Failure{At: t0, Error: "unclassified"})
		_, err = s.DeadLetter(ctx, l, e, t0)
		Expect(err).NotTo(HaveOccurred())
		got, err := s.Get(ctx, "a")
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Corrupt).To(BeFalse(), got.DecodeError)
		Expect(got.Verdict).To(Equal(classify.Classification{}))
	})

	It("keeps its time index bounded while it evicts", func() {
		s, _ := memstore.New(store.Config{DLQCapacity: 10, Overflow: store.EvictOldest})
		for i := range 20_000 {
			_, err := s.Add(ctx, entryOf(charge(fmt.Sprintf("e%05d", i)), t0.Add(time.Duration(i)*time.Millisecond)), t0.Add(time.Duration(i)*time.Millisecond))
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(s.OrderLen()).To(BeNumerically("<=", 2*1024+10))
		p, err := s.List(ctx, dlq.Filter{}, "", 100)
		Expect(err).NotTo(HaveOccurred())
		Expect(p.Entries).To(HaveLen(10))
		Expect(p.Entries[0].ID()).To(Equal("e19999"))
		Expect(p.Entries[9].ID()).To(Equal("e19990"))
		st, _ := s.Stats(ctx)
		Expect(st.Evicted).To(Equal(19_990))
	})

	It("lists correctly after entries arrive out of time order and change status", func() {
		s, _ := memstore.New(store.Config{})
		for _, d := range []int{5, 1, 4, 2, 3} {
			id := fmt.Sprintf("e%d", d)
			at := t0.Add(time.Duration(d) * time.Minute)
			_, err := s.Add(ctx, entryOf(charge(id), at), at)
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(s.Delete(ctx, "e3", "ops", t0.Add(time.Hour))).To(Succeed())
		Expect(s.Quarantine(ctx, "e4", "poison", t0.Add(time.Hour))).To(Succeed())
		p, err := s.List(ctx, dlq.Filter{}, "", 10)
		Expect(err).NotTo(HaveOccurred())
		var ids []string
		for _, e := range p.Entries {
			ids = append(ids, e.ID()+":"+e.Status.String())
		}
		Expect(ids).To(Equal([]string{"e5:failed", "e4:quarantined", "e3:deleted", "e2:failed", "e1:failed"}))
	})
})

var _ = Describe("memstore purge over a compacting index", func() {
	DescribeTable("purges every eligible entry exactly once, whatever the batch size",
		func(batch int) {
			ctx := context.Background()
			s, err := memstore.New(store.Config{BatchSize: batch})
			Expect(err).NotTo(HaveOccurred())
			// 3,000 entries, the last 2,000 of which fail again later: the
			// time index holds gone places behind the 1,000 eligible ones, and
			// purging those compacts it midway.
			for i := range 3000 {
				id := fmt.Sprintf("j%04d", i)
				_, err := s.Add(ctx, entryOf(charge(id), t0), t0.Add(time.Duration(i)*time.Millisecond))
				Expect(err).NotTo(HaveOccurred())
			}
			for i := 1000; i < 3000; i++ {
				id := fmt.Sprintf("j%04d", i)
				_, err := s.Add(ctx, entryOf(charge(id), t0), t0.Add(time.Hour+time.Duration(i)*time.Millisecond))
				Expect(err).NotTo(HaveOccurred())
			}
			n, err := s.Purge(ctx, t0.Add(time.Minute), t0.Add(2*time.Hour))
			Expect(err).NotTo(HaveOccurred())
			Expect(n).To(Equal(1000))
			st, err := s.Stats(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(st.Total).To(Equal(2000))
		},
		Entry("batch 100", 100), Entry("batch 1,000", 1000), Entry("batch 10,000", 10000),
	)
})

// heapID draws a job ID for a heap spec: short, empty, or sharing a long
// prefix with others, so that IDs compare on their first 8 bytes and past
// them.
func heapID(t *rapid.T, label string) string {
	return rapid.SampledFrom([]string{"", "a", "b", "job-0000", "job-00001", "job-00001x"}).Draw(t, label)
}

// msIDOrder compares (the Unix millisecond of a, ida) with that of b, idb:
// the order of queue.Queue's ForwardDue, computed without the store's
// arithmetic.
func msIDOrder(a time.Time, ida string, b time.Time, idb string) int {
	ms := func(t time.Time) *big.Int {
		x := new(big.Int).Mul(big.NewInt(t.Unix()), big.NewInt(1000))
		return x.Add(x, big.NewInt(int64(t.Nanosecond()/1_000_000)))
	}
	if c := ms(a).Cmp(ms(b)); c != 0 {
		return c
	}
	return strings.Compare(ida, idb)
}
