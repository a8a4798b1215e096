package redisstore_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/redisstore"
)

// Named timeouts of the subprocess specs.
const (
	helperStartTimeout = 20 * time.Second // the test binary starts and builds its store
	helperKillTimeout  = 20 * time.Second // a killed helper is reaped
)

// t0 is the virtual instant the Redis-specific specs start at.
var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

var oneMore = dlq.RequeueOptions{Budget: dlq.OneMoreAttempt, By: "ops"}

// events records what a store's observer hears, from any goroutine.
type events struct {
	mu  sync.Mutex
	all []disposition.Event
}

func (e *events) hear(ev disposition.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, ev)
}

func (e *events) count(r disposition.Reason) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, ev := range e.all {
		if ev.Reason == r {
			n++
		}
	}
	return n
}

// deadEntry is a DLQ entry of job id with one permanent failure.
func deadEntry(id string, t time.Time) dlq.Entry {
	v := classify.Classification{Class: classify.Permanent, Severity: classify.Medium, Source: classify.Dependency, Rule: "declined"}
	return dlq.Entry{
		Job:     job.Job{ID: id, Task: "charge", Payload: []byte(`{"cents":1299}`), IdempotencyKey: "idem-" + id},
		History: []dlq.Failure{{At: t, Attempt: 3, Error: "card declined", ErrorType: "*failure.HTTPError", Verdict: v}},
		Verdict: v,
		Reason:  "permanent failure",
	}
}

// entryID names the i-th entry of a bulk spec.
func entryID(i int) string { return fmt.Sprintf("e%05d", i) }

// fill adds n Failed entries, a millisecond apart, through AddBatch.
func fill(s *redisstore.Store, n int) {
	GinkgoHelper()
	for start := 0; start < n; start += 1000 {
		var batch []dlq.Entry
		for i := start; i < min(start+1000, n); i++ {
			batch = append(batch, deadEntry(entryID(i), t0))
		}
		_, err := s.AddBatch(context.Background(), batch, t0.Add(time.Duration(start)*time.Millisecond))
		Expect(err).NotTo(HaveOccurred())
	}
}

// expectConsistent checks that a requeue of entries e00000..e(n-1), however
// interrupted, left each entry either Failed and off the queue or Requeued
// once and on the queue exactly once, and that the counters agree. It
// returns how many were requeued.
func expectConsistent(s *redisstore.Store, c *redis.Client, n int) int {
	GinkgoHelper()
	ctx := context.Background()
	onQueue, err := c.LRange(ctx, redisstore.Prefix(s.Config().Namespace)+":q:"+job.DefaultQueue, 0, -1).Result()
	Expect(err).NotTo(HaveOccurred())
	queued := map[string]bool{}
	for _, id := range onQueue {
		Expect(queued[id]).To(BeFalse(), "job %s is on the queue twice", id)
		queued[id] = true
	}
	requeued := 0
	for i := range n {
		id := entryID(i)
		e, err := s.Get(ctx, id)
		Expect(err).NotTo(HaveOccurred(), "entry %s is lost", id)
		switch e.Status {
		case dlq.Requeued:
			requeued++
			Expect(queued[id]).To(BeTrue(), "entry %s says requeued, but its job is not on the queue", id)
			Expect(e.Requeues).To(Equal(1), "entry %s", id)
		case dlq.Failed:
			Expect(queued[id]).To(BeFalse(), "entry %s says failed, but its job is on the queue", id)
			Expect(e.Requeues).To(BeZero(), "entry %s", id)
		default:
			Fail(fmt.Sprintf("entry %s is %s", id, e.Status))
		}
	}
	Expect(queued).To(HaveLen(requeued), "the queue holds exactly the requeued jobs")
	counts, err := s.Counts(ctx)
	Expect(err).NotTo(HaveOccurred())
	Expect(counts.Queued).To(Equal(requeued))
	st, err := s.Stats(ctx)
	Expect(err).NotTo(HaveOccurred())
	Expect(st.ByStatus[dlq.Requeued.String()]).To(Equal(requeued))
	Expect(st.ByStatus[dlq.Failed.String()]).To(Equal(n - requeued))
	return requeued
}

// finish completes an interrupted requeue-all and checks every entry was
// requeued exactly once.
func finish(s *redisstore.Store, c *redis.Client, n int) {
	GinkgoHelper()
	_, err := s.RequeueMatching(context.Background(), dlq.Filter{}, oneMore, t0.Add(time.Hour), false)
	Expect(err).NotTo(HaveOccurred())
	Expect(expectConsistent(s, c, n)).To(Equal(n))
}

// errCut is the error of a call the cutter interrupted.
var errCut = errors.New("interrupted by the spec")

// cutter is a go-redis hook that interrupts the at-th script call of a
// client: before it is sent (the script never runs) or after it ran (its
// reply is lost, as when the caller dies while Redis runs the script).
type cutter struct {
	mu    sync.Mutex
	calls int
	at    int
	after bool
}

func (c *cutter) arm(at int, after bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls, c.at, c.after = 0, at, after
}

func (c *cutter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *cutter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (c *cutter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if name := cmd.Name(); name != "evalsha" && name != "eval" {
			return next(ctx, cmd)
		}
		c.mu.Lock()
		c.calls++
		hit, after := c.calls == c.at, c.after
		c.mu.Unlock()
		if hit && !after {
			cmd.SetErr(errCut)
			return errCut
		}
		err := next(ctx, cmd)
		if hit {
			cmd.SetErr(errCut)
			return errCut
		}
		return err
	}
}

// crc16 is Redis Cluster's key checksum (CRC16-CCITT, XMODEM).
func crc16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc ^= uint16(c) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// keySlot is CLUSTER KEYSLOT: the slot of a key's hash tag, or of the key.
func keySlot(key string) uint16 {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return crc16([]byte(key)) % 16384
}

// workload runs every move of the queue and the DLQ once or more.
func workload(s *redisstore.Store) {
	GinkgoHelper()
	ctx := context.Background()
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		Expect(s.Enqueue(ctx, job.Job{ID: id, Task: "charge", Queue: "payments"}, t0)).To(Succeed())
	}
	lease := func(want string) (job.Job, queue.Lease) {
		GinkgoHelper()
		j, l, ok, err := s.Dequeue(ctx, "payments", at(time.Second), time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeTrue())
		Expect(j.ID).To(Equal(want))
		return j, l
	}
	j, l := lease("a")
	l, err := s.Heartbeat(ctx, l, at(2*time.Second), time.Minute)
	Expect(err).NotTo(HaveOccurred())
	Expect(s.Ack(ctx, l, j, at(3*time.Second))).To(Succeed())
	j, l = lease("b")
	Expect(s.Retry(ctx, l, j, at(time.Minute), at(3*time.Second))).To(Succeed())
	j, l = lease("c")
	Expect(s.Release(ctx, l, j, at(3*time.Second))).To(Succeed())
	j, l = lease("c")
	Expect(s.Divert(ctx, l, j, at(3*time.Second))).To(Succeed())
	d := deadEntry("d", at(4*time.Second))
	d.Job, l = lease("d")
	_, err = s.DeadLetter(ctx, l, d, at(4*time.Second))
	Expect(err).NotTo(HaveOccurred())
	_, err = s.ForwardDue(ctx, at(time.Hour), 10)
	Expect(err).NotTo(HaveOccurred())
	lease("e")
	_, err = s.RecoverExpired(ctx, at(2*time.Hour), 10)
	Expect(err).NotTo(HaveOccurred())
	_, _, err = s.DrainBatch(ctx, at(2*time.Hour), 10)
	Expect(err).NotTo(HaveOccurred())
	_, err = s.Counts(ctx)
	Expect(err).NotTo(HaveOccurred())
	Expect(s.Enqueue(ctx, job.Job{ID: "h", Task: "charge", Queue: "held"}, t0)).To(Succeed())
	hj, hl, ok, err := s.Dequeue(ctx, "held", at(time.Second), time.Minute)
	Expect(err).NotTo(HaveOccurred())
	Expect(ok).To(BeTrue())
	he := deadEntry("h", at(time.Second))
	he.Job = hj
	Expect(s.Hold(ctx, hl, he, at(time.Second))).To(Succeed())
	_, err = s.FlushHeld(ctx, at(2*time.Second), 10)
	Expect(err).NotTo(HaveOccurred())

	_, err = s.Add(ctx, deadEntry("x", t0), at(time.Minute))
	Expect(err).NotTo(HaveOccurred())
	_, err = s.AddBatch(ctx, []dlq.Entry{deadEntry("y", t0), deadEntry("z", t0)}, at(time.Minute))
	Expect(err).NotTo(HaveOccurred())
	Expect(s.WriteRaw(ctx, "raw", []byte("{not json"))).To(Succeed())
	_, err = s.Get(ctx, "x")
	Expect(err).NotTo(HaveOccurred())
	_, err = s.List(ctx, dlq.Filter{}, "", 2)
	Expect(err).NotTo(HaveOccurred())
	_, err = s.Stats(ctx)
	Expect(err).NotTo(HaveOccurred())
	Expect(s.Delete(ctx, "x", "ops", at(time.Hour))).To(Succeed())
	Expect(s.Restore(ctx, "x", "ops", at(time.Hour))).To(Succeed())
	Expect(s.Quarantine(ctx, "y", "poison", at(time.Hour))).To(Succeed())
	_, err = s.Requeue(ctx, "z", oneMore, at(time.Hour))
	Expect(err).NotTo(HaveOccurred())
	_, err = s.RequeueMatching(ctx, dlq.Filter{}, oneMore, at(time.Hour), false)
	Expect(err).NotTo(HaveOccurred())
	_, err = s.Purge(ctx, at(time.Hour), at(time.Hour))
	Expect(err).NotTo(HaveOccurred())
	// an ack and the next lease in one step, then the last ack
	for _, id := range []string{"f", "g"} {
		Expect(s.Enqueue(ctx, job.Job{ID: id, Task: "charge", Queue: "tail"}, at(time.Hour))).To(Succeed())
	}
	fj, fl, ok, err := s.Dequeue(ctx, "tail", at(time.Hour), time.Minute)
	Expect(err).NotTo(HaveOccurred())
	Expect(ok).To(BeTrue())
	ack, gj, gl, _, ok, err := s.AckDequeue(ctx, fl, fj, []string{"tail"}, at(time.Hour), time.Minute)
	Expect(err).NotTo(HaveOccurred())
	Expect(ack).NotTo(HaveOccurred())
	Expect(ok).To(BeTrue())
	Expect(s.Ack(ctx, gl, gj, at(time.Hour))).To(Succeed())
}

var _ = Describe("redisstore, Redis-specific", func() {
	for _, ln := range lanes {
		Describe(ln.name, func() {
			var (
				ctx context.Context
				c   *redis.Client
				s   *redisstore.Store
				ev  *events
			)
			BeforeEach(func() {
				ctx = context.Background()
				c = ln.connect()
				ev = &events{}
				s = newStore(c, store.Config{Observer: ev.hear})
			})

			It("runs every one of its scripts", func() {
				workload(s)
				for _, h := range redisstore.ScriptHashes() {
					ok, err := c.ScriptExists(ctx, h).Result()
					Expect(err).NotTo(HaveOccurred())
					Expect(ok).To(Equal([]bool{true}), "script %s never ran", h)
				}
			})

			It("keeps every key of a namespace under its hash tag, in one cluster slot", func() {
				Expect(keySlot("123456789")).To(Equal(uint16(12739)), "CLUSTER KEYSLOT's test vector")
				workload(s)
				prefix := redisstore.Prefix(s.Config().Namespace)
				slot := keySlot(prefix)
				keys, err := c.Keys(ctx, "*").Result()
				Expect(err).NotTo(HaveOccurred())
				Expect(len(keys)).To(BeNumerically(">=", 8))
				for _, k := range keys {
					Expect(k).To(HavePrefix(prefix+":"), "key %q", k)
					Expect(keySlot(k)).To(Equal(slot), "key %q", k)
				}
			})

			It("drains held dead letters past one whose entry does not decode, writing it from its job with its bytes kept", func() {
				prefix := redisstore.Prefix(s.Config().Namespace)
				at := func(d time.Duration) time.Time { return t0.Add(d) }
				// hold leases job id and parks its dead letter at T0+d; raw,
				// when set, then replaces the parked entry's bytes.
				hold := func(id string, d time.Duration, raw []byte) {
					GinkgoHelper()
					j, l, ok, err := s.Dequeue(ctx, "payments", at(d), time.Minute)
					Expect(err).NotTo(HaveOccurred())
					Expect(ok).To(BeTrue())
					Expect(j.ID).To(Equal(id))
					e := deadEntry(id, at(d))
					e.Job = j
					Expect(s.Hold(ctx, l, e, at(d))).To(Succeed())
					if raw != nil {
						Expect(c.HSet(ctx, prefix+":job:"+id, "entry", raw).Err()).To(Succeed())
					}
				}
				newer := []byte(`{"version":2,"job":{"id":"x"},"shards":[1,2]}`)
				garbage := []byte("{{{ not json")
				for _, id := range []string{"x", "y"} {
					Expect(s.Enqueue(ctx, job.Job{ID: id, Task: "charge", Queue: "payments", Payload: []byte(`{"order":"` + id + `"}`)}, t0)).To(Succeed())
				}
				_, err := s.Add(ctx, deadEntry("z", t0), t0)
				Expect(err).NotTo(HaveOccurred())
				Expect(s.Requeue(ctx, "z", dlq.RequeueOptions{Budget: dlq.OneMoreAttempt, Queue: "payments"}, t0)).To(Equal(dlq.OutcomeRequeued))
				hold("x", time.Second, newer)
				hold("y", 2*time.Second, nil)
				hold("z", 3*time.Second, garbage)

				res, err := s.FlushHeld(ctx, at(time.Minute), 10)
				Expect(err).NotTo(HaveOccurred(), "the oldest held entry does not decode: it must not stall the rest")
				Expect(res).To(Equal(dlq.FlushResult{Written: []string{"x", "y", "z"}}))

				x, err := s.Get(ctx, "x")
				Expect(err).NotTo(HaveOccurred())
				Expect(x.Corrupt).To(BeFalse())
				Expect(x.Status).To(Equal(dlq.Failed))
				Expect(x.Reason).To(HavePrefix(redisstore.ReasonHeldCorrupt))
				Expect(x.Superseded).To(Equal(newer), "the undecodable bytes are kept")
				Expect(x.Job.Payload).To(MatchJSON(`{"order":"x"}`), "the job as the queue holds it")
				Expect(x.LastFailedAt).To(BeTemporally("==", at(time.Second)), "when it was parked")
				z, err := s.Get(ctx, "z")
				Expect(err).NotTo(HaveOccurred())
				Expect(z.Status).To(Equal(dlq.Failed))
				Expect(z.Requeues).To(Equal(1), "merged with the job's earlier entry")
				Expect(z.History).To(HaveLen(1))
				Expect(z.Superseded).To(Equal(garbage))

				st, err := s.Stats(ctx)
				Expect(err).NotTo(HaveOccurred())
				Expect(st.Held).To(BeZero())
				Expect(st.Total).To(Equal(3))
				Expect(st.ByStatus).To(Equal(map[string]int{"failed": 3}))
				var moved []string
				for _, e := range ev.all {
					if e.From == disposition.Held {
						Expect(e.To).To(Equal(disposition.DeadLettered))
						moved = append(moved, e.JobID)
					}
				}
				Expect(moved).To(Equal([]string{"x", "y", "z"}))
			})

			It("lists bytes planted with a raw HSET as corrupt, and adopts a foreign entry that decodes", func() {
				for i, id := range []string{"good1", "good2", "overwritten"} {
					_, err := s.Add(ctx, deadEntry(id, t0), t0.Add(time.Duration(i)*time.Minute))
					Expect(err).NotTo(HaveOccurred())
				}
				entries := redisstore.Prefix(s.Config().Namespace) + ":dlq:entries"
				Expect(c.HSet(ctx, entries, "overwritten", "{{{ not json").Err()).To(Succeed())
				Expect(c.HSet(ctx, entries, "alien", []byte{0xff, 0x00}).Err()).To(Succeed())
				foreign := deadEntry("foreign", t0)
				foreign.Status, foreign.LastFailedAt, foreign.FirstFailedAt = dlq.Failed, t0.Add(time.Hour), t0.Add(time.Hour)
				raw, err := dlq.Encode(foreign)
				Expect(err).NotTo(HaveOccurred())
				Expect(c.HSet(ctx, entries, "foreign", raw).Err()).To(Succeed())

				st, err := s.Stats(ctx)
				Expect(err).NotTo(HaveOccurred())
				Expect(st.Total).To(Equal(5))
				Expect(st.Corrupt).To(Equal(1), "the unindexed bytes are placed at once; the overwritten entry is known only once read")
				Expect(st.ByStatus).To(Equal(map[string]int{"failed": 4}))

				e, err := s.Get(ctx, "alien")
				Expect(err).NotTo(HaveOccurred())
				Expect(e.Corrupt).To(BeTrue())
				Expect(e.Raw).To(Equal([]byte{0xff, 0x00}))

				p, err := s.List(ctx, dlq.Filter{}, "", 100)
				Expect(err).NotTo(HaveOccurred())
				var ids []string
				for _, e := range p.Entries {
					ids = append(ids, e.ID())
					Expect(e.Corrupt).To(Equal(e.ID() == "overwritten" || e.ID() == "alien"), e.ID())
				}
				Expect(ids).To(Equal([]string{"foreign", "overwritten", "good2", "good1", "alien"}),
					"the overwritten entry keeps its place; the unindexed corrupt one has no time and comes last")

				st, err = s.Stats(ctx)
				Expect(err).NotTo(HaveOccurred())
				Expect(st.Total).To(Equal(5))
				Expect(st.Corrupt).To(Equal(2))
				Expect(st.ByStatus).To(Equal(map[string]int{"failed": 3}))

				Expect(s.Requeue(ctx, "foreign", oneMore, t0.Add(2*time.Hour))).To(Equal(dlq.OutcomeRequeued))
				Expect(s.Requeue(ctx, "overwritten", oneMore, t0.Add(2*time.Hour))).To(Equal(dlq.OutcomeNotRequeueable))
				n, err := s.Purge(ctx, t0.Add(3*time.Hour), t0.Add(3*time.Hour))
				Expect(err).NotTo(HaveOccurred())
				Expect(n).To(Equal(5))
				Expect(c.HLen(ctx, entries).Val()).To(BeZero())
			})

			It("moves a foreign entry that no read has indexed yet", func() {
				entries := redisstore.Prefix(s.Config().Namespace) + ":dlq:entries"
				for _, id := range []string{"f1", "f2"} {
					e := deadEntry(id, t0)
					e.Status, e.LastFailedAt, e.FirstFailedAt = dlq.Failed, t0, t0
					raw, err := dlq.Encode(e)
					Expect(err).NotTo(HaveOccurred())
					Expect(c.HSet(ctx, entries, id, raw).Err()).To(Succeed())
				}
				Expect(s.Requeue(ctx, "f1", oneMore, t0.Add(time.Hour))).To(Equal(dlq.OutcomeRequeued))
				Expect(s.Delete(ctx, "f2", "ops", t0.Add(time.Hour))).To(Succeed())
				st, err := s.Stats(ctx)
				Expect(err).NotTo(HaveOccurred())
				Expect(st.ByStatus).To(Equal(map[string]int{"requeued": 1, "deleted": 1}))
				Expect(st.Corrupt).To(BeZero())
			})

			It("adds in batches, merging entries that exist and reporting each failure by job", func() {
				s = newStore(c, store.Config{DLQCapacity: 3, BatchSize: 3, Observer: ev.hear})
				_, err := s.Add(ctx, deadEntry("old", t0), t0)
				Expect(err).NotTo(HaveOccurred())
				batch := []dlq.Entry{deadEntry("a", t0), deadEntry("old", t0), {Job: job.Job{ID: "no-task"}},
					deadEntry("b", t0), deadEntry("a", t0), deadEntry("c", t0)}
				res, err := s.AddBatch(ctx, batch, t0.Add(time.Minute))
				Expect(err).To(MatchError(job.ErrInvalid))
				Expect(err).To(MatchError(dlq.ErrFull))
				Expect(err.Error()).To(ContainSubstring("add c: "))
				Expect(res).To(Equal([]dlq.AddResult{{Created: true}, {}, {}, {Created: true}, {}, {}}))
				Expect(batch[0].Status).To(BeZero(), "the caller's entries are left as they were")
				// The merges re-send the same failure (a retried add): it is
				// recorded once.
				for id, n := range map[string]int{"old": 1, "a": 1, "b": 1} {
					e, err := s.Get(ctx, id)
					Expect(err).NotTo(HaveOccurred())
					Expect(e.History).To(HaveLen(n), id)
				}
				st, err := s.Stats(ctx)
				Expect(err).NotTo(HaveOccurred())
				Expect(st.Total).To(Equal(3))
				Expect(st.Rejected).To(Equal(1))
				Expect(ev.count(disposition.DeadLetter)).To(Equal(3), "old, a and b were created; the merges moved no job")
			})

			It("enqueues many in one round trip as it enqueues each, answering each job by itself, with scripts not yet loaded", func() {
				Expect(c.ScriptFlush(ctx).Err()).To(Succeed())
				Expect(s.Enqueue(ctx, job.Job{ID: "dup", Task: "t"}, t0)).To(Succeed())
				_, err := s.Add(ctx, deadEntry("dead", t0), t0)
				Expect(err).NotTo(HaveOccurred())
				Expect(c.ScriptFlush(ctx).Err()).To(Succeed())
				jobs := []job.Job{{ID: "a", Task: "t"}, {ID: "dup", Task: "t"}, {ID: "no-task"}, {ID: "dead", Task: "t"}, {ID: "b", Task: "t"}, {ID: "a", Task: "t"}}
				errs := s.EnqueueMany(ctx, jobs, t0.Add(time.Second))
				Expect(errs).To(HaveLen(6))
				Expect(errs[0]).NotTo(HaveOccurred())
				Expect(errs[1]).To(MatchError(queue.ErrDuplicate))
				Expect(errs[2]).To(MatchError(job.ErrInvalid))
				Expect(errs[3]).To(MatchError(queue.ErrDeadLettered))
				Expect(errs[4]).NotTo(HaveOccurred())
				Expect(errs[5]).To(MatchError(queue.ErrDuplicate), "the second a meets the first, enqueued just before it")
				Expect(ev.count(disposition.Enqueued)).To(Equal(3), "dup, then a and b")
				var got []string
				for {
					j, _, ok, err := s.Dequeue(ctx, "", t0.Add(2*time.Second), time.Minute)
					Expect(err).NotTo(HaveOccurred())
					if !ok {
						break
					}
					got = append(got, j.ID)
				}
				Expect(got).To(Equal([]string{"dup", "a", "b"}))
				canceled, cancel := context.WithCancel(ctx)
				cancel()
				for _, err := range s.EnqueueMany(canceled, []job.Job{{ID: "c", Task: "t"}}, t0) {
					Expect(err).To(MatchError(context.Canceled))
				}
			})

			It("refuses what it cannot work with, writing nothing", func() {
				_, err := redisstore.New(nil, store.Config{})
				Expect(err).To(HaveOccurred())
				_, err = redisstore.New(c, store.Config{Namespace: "no{braces}"})
				Expect(err).To(MatchError(store.ErrInvalidConfig))
				_, _, _, err = s.Dequeue(ctx, "", t0, 0)
				Expect(err).To(HaveOccurred())
				_, err = s.Heartbeat(ctx, queue.Lease{JobID: "x", Token: 1}, t0, -time.Second)
				Expect(err).To(HaveOccurred())
				_, err = s.List(ctx, dlq.Filter{}, "not-a-cursor", 10)
				Expect(err).To(HaveOccurred())
				keys, err := c.Keys(ctx, "*").Result()
				Expect(err).NotTo(HaveOccurred())
				Expect(keys).To(BeEmpty())
			})

			Describe("an interrupted requeue", func() {
				const n = 30
				var cut *cutter
				BeforeEach(func() {
					cut = &cutter{}
					c.AddHook(cut)
					s = newStore(c, store.Config{BatchSize: 7})
					Expect(s.Load(ctx)).To(Succeed())
				})

				It("loses and doubles nothing when cut before or after any of its scripts", func() {
					for _, after := range []bool{false, true} {
						for at := 1; ; at++ {
							By(fmt.Sprintf("cutting script call %d (after it ran: %v)", at, after))
							s = newStore(c, store.Config{BatchSize: 7})
							fill(s, n)
							cut.arm(at, after)
							_, err := s.RequeueMatching(ctx, dlq.Filter{}, oneMore, t0.Add(time.Hour), false)
							cut.arm(0, false)
							if err == nil {
								Expect(at).To(BeNumerically(">", 2), "the run has at least a scan and a move")
								Expect(expectConsistent(s, c, n)).To(Equal(n))
								break
							}
							Expect(err).To(MatchError(errCut))
							expectConsistent(s, c, n)
							finish(s, c, n)
						}
					}
				})

				It("loses and doubles nothing when its context is canceled between two steps", func() {
					cctx, cancel := context.WithCancel(ctx)
					defer cancel()
					requeues := 0
					s = newStore(c, store.Config{BatchSize: 7, Observer: func(e disposition.Event) {
						if e.Reason == disposition.Requeued {
							if requeues++; requeues == 10 {
								cancel()
							}
						}
					}})
					fill(s, n)
					_, err := s.RequeueMatching(cctx, dlq.Filter{}, oneMore, t0.Add(time.Hour), false)
					Expect(err).To(MatchError(context.Canceled))
					Expect(expectConsistent(s, c, n)).To(Equal(14), "two steps of 7 ran")
					finish(s, c, n)
				})
			})

			Describe("a requeue run by a process that is killed", func() {
				const n = 3000
				var addr string
				BeforeEach(func() {
					opt := c.Options()
					addr = fmt.Sprintf("redis://%s/%d", opt.Addr, opt.DB)
					fill(s, n)
				})

				// runHelper starts the test binary as a process that requeues
				// every entry of s's namespace, pausing after pause requeues
				// (0: never), and waits until it says it started. Its lines
				// of output arrive on the channel.
				runHelper := func(pause int) (*exec.Cmd, <-chan string) {
					GinkgoHelper()
					cmd := exec.Command(os.Args[0], "-test.run=^$")
					cmd.Env = append(os.Environ(), helperEnv+"=1", helperAddr+"="+addr, helperNS+"="+s.Config().Namespace,
						helperNow+"="+strconv.FormatInt(t0.Add(time.Hour).UnixMilli(), 10), helperPause+"="+strconv.Itoa(pause))
					cmd.Stderr = GinkgoWriter
					out, err := cmd.StdoutPipe()
					Expect(err).NotTo(HaveOccurred())
					Expect(cmd.Start()).To(Succeed())
					DeferCleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
					lines := make(chan string, 16)
					go func() {
						defer close(lines)
						sc := bufio.NewScanner(out)
						for sc.Scan() {
							lines <- sc.Text()
						}
					}()
					Eventually(lines).WithTimeout(helperStartTimeout).Should(Receive(Equal("started")))
					return cmd, lines
				}

				kill := func(cmd *exec.Cmd) {
					GinkgoHelper()
					Expect(cmd.Process.Signal(syscall.SIGKILL)).To(Succeed())
					done := make(chan error, 1)
					go func() { done <- cmd.Wait() }()
					Eventually(done).WithTimeout(helperKillTimeout).Should(Receive())
					// A script the helper sent before it died may still run
					// on the server (a pipelined walk has one in flight): look
					// only once the requeued count has stopped moving.
					last := -1
					Eventually(func() bool {
						st, err := s.Stats(ctx)
						Expect(err).NotTo(HaveOccurred())
						n := st.ByStatus[dlq.Requeued.String()]
						settled := n == last
						last = n
						return settled
					}).WithTimeout(helperKillTimeout).WithPolling(200 * time.Millisecond).Should(BeTrue())
				}

				It("loses and doubles nothing when the process dies between two steps", func() {
					cmd, lines := runHelper(100)
					Eventually(lines).WithTimeout(helperStartTimeout).Should(Receive(Equal("paused")))
					kill(cmd)
					requeued := expectConsistent(s, c, n)
					Expect(requeued).To(BeNumerically(">=", 100))
					Expect(requeued).To(BeNumerically("<", n))
					finish(s, c, n)
				})

				It("loses and doubles nothing when the process dies at any moment", func() {
					cmd, _ := runHelper(0)
					Eventually(func() int {
						st, err := s.Stats(ctx)
						Expect(err).NotTo(HaveOccurred())
						return st.ByStatus[dlq.Requeued.String()]
					}).WithTimeout(helperStartTimeout).WithPolling(time.Millisecond).Should(BeNumerically(">", 0))
					kill(cmd)
					requeued := expectConsistent(s, c, n)
					GinkgoWriter.Printf("the helper requeued %d of %d entries before it was killed\n", requeued, n)
					finish(s, c, n)
				})
			})

			It("builds clients that never ask a plain Redis for maintenance notifications, nor retry a script behind the caller's back", func() {
				opt := c.Options()
				Expect(opt.MaintNotificationsConfig).NotTo(BeNil())
				Expect(opt.MaintNotificationsConfig.Mode).To(Equal(maintnotifications.ModeDisabled))
				Expect(opt.MaxRetries).To(BeZero(), "go-redis reads MaxRetries -1 as no retries")
			})
		})
	}
})
