package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/redisstore"
)

// streamLen is the MAXLEN of the specs' streams that must not trim.
const streamLen = 10_000

// heard returns what the observer heard, as the stream carries it: At in
// UTC, to the millisecond.
func (e *events) heard() []disposition.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]disposition.Event, len(e.all))
	for i, ev := range e.all {
		ev.At = time.UnixMilli(ev.At.UnixMilli()).UTC()
		out[i] = ev
	}
	return out
}

// readAll reads a store's whole event stream from its start, in steps of
// seven entries, and expects no gap.
func readAll(s *redisstore.Store) []disposition.Event { return readAllBy(s, 7) }

// readAllBy reads a store's whole event stream from its start, in steps of
// count entries, and expects no gap.
func readAllBy(s *redisstore.Store, count int) []disposition.Event {
	GinkgoHelper()
	var out []disposition.Event
	after := redisstore.StreamStart
	for {
		got, err := s.ReadEvents(context.Background(), after, count, 0)
		Expect(err).NotTo(HaveOccurred())
		if len(got) == 0 {
			return out
		}
		for _, g := range got {
			Expect(g.Prev).To(Equal(after), "each entry names the one before it")
			out = append(out, g.Event)
			after = g.ID
		}
	}
}

// moreMoves makes the moves workload does not: an eviction, a dead letter
// parked by a full DLQ and flushed, and a batch whose merge with a requeued
// entry happens after its own moves. It needs DLQCapacity 2; evict picks
// the policy.
func moreMoves(s *redisstore.Store, evict bool) {
	GinkgoHelper()
	ctx := context.Background()
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	if evict {
		for i, id := range []string{"v1", "v2", "v3"} {
			_, err := s.Add(ctx, deadEntry(id, at(time.Duration(i)*time.Second)), at(time.Duration(i)*time.Second))
			Expect(err).NotTo(HaveOccurred())
		}
		return
	}
	for _, id := range []string{"p1", "p2"} {
		_, err := s.Add(ctx, deadEntry(id, t0), t0)
		Expect(err).NotTo(HaveOccurred())
	}
	Expect(s.Enqueue(ctx, job.Job{ID: "k", Task: "charge", Attempts: 2}, t0)).To(Succeed())
	j, l, ok, err := s.Dequeue(ctx, job.DefaultQueue, at(time.Second), time.Minute)
	Expect(err).NotTo(HaveOccurred())
	Expect(ok).To(BeTrue())
	e := deadEntry("k", at(time.Second))
	e.Job = j
	res, err := s.DeadLetter(ctx, l, e, at(time.Second))
	Expect(err).NotTo(HaveOccurred())
	Expect(res.Held).To(BeTrue(), "the full DLQ parks the dead letter")
	out, err := s.Requeue(ctx, "p1", oneMore, at(2*time.Second))
	Expect(err).NotTo(HaveOccurred())
	Expect(out).To(Equal(dlq.OutcomeRequeued))
	fl, err := s.FlushHeld(ctx, at(3*time.Second), 10)
	Expect(err).NotTo(HaveOccurred())
	Expect(fl.Written).To(Equal([]string{"k"}))
	// p1's job comes back dead: a batch of p1 (merged after the script)
	// and a new entry (written by it)
	j, l, ok, err = s.Dequeue(ctx, job.DefaultQueue, at(4*time.Second), time.Minute)
	Expect(err).NotTo(HaveOccurred())
	Expect(ok).To(BeTrue())
	Expect(s.Ack(ctx, l, j, at(4*time.Second))).To(Succeed())
	Expect(s.Delete(ctx, "p2", "ops", at(5*time.Second))).To(Succeed())
	Expect(s.Delete(ctx, "k", "ops", at(5*time.Second))).To(Succeed())
	_, err = s.AddBatch(ctx, []dlq.Entry{deadEntry("p1", at(5*time.Second)), deadEntry("n1", at(5*time.Second))}, at(5*time.Second))
	Expect(err).NotTo(HaveOccurred())
}

// liar is a go-redis hook that, when armed, lets the next script run and
// then loses its reply: the caller gets errLost, as when the connection
// breaks after Redis ran the script.
type liar struct{ armed bool }

var errLost = errors.New("reply lost by the spec")

func (h *liar) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *liar) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *liar) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if name := cmd.Name(); (name == "evalsha" || name == "eval") && h.armed && err == nil {
			h.armed = false
			cmd.SetErr(errLost)
			return errLost
		}
		return err
	}
}

var _ = Describe("redisstore, event stream", func() {
	for _, ln := range lanes {
		Describe(ln.name, func() {
			var (
				ctx context.Context
				c   *redis.Client
			)
			BeforeEach(func() {
				ctx = context.Background()
				c = ln.connect()
			})

			It("carries every move, in the order the observer hears them, under the namespace's hash tag", func() {
				ev := &events{}
				s := newStore(c, store.Config{Observer: ev.hear, EventStream: streamLen})
				workload(s)
				Expect(readAll(s)).To(Equal(ev.heard()))

				reasons := map[disposition.Reason]bool{}
				for _, e := range ev.heard() {
					reasons[e.Reason] = true
				}
				for _, cfg := range []store.Config{
					{Overflow: store.EvictOldest, DLQCapacity: 2},
					{Overflow: store.Reject, DLQCapacity: 2},
				} {
					ev := &events{}
					cfg.Observer, cfg.EventStream = ev.hear, streamLen
					s := newStore(c, cfg)
					moreMoves(s, cfg.Overflow == store.EvictOldest)
					Expect(readAll(s)).To(Equal(ev.heard()), "policy %s", cfg.Overflow)
					for _, e := range ev.heard() {
						reasons[e.Reason] = true
					}
				}
				Expect(reasons).To(HaveLen(14), "every reason a store gives: %v", reasons)

				key := redisstore.EventStreamKey(s.Config().Namespace)
				Expect(key).To(Equal(redisstore.Prefix(s.Config().Namespace) + ":events"))
				Expect(keySlot(key)).To(Equal(keySlot(redisstore.Prefix(s.Config().Namespace))))
				n, err := c.Exists(ctx, key).Result()
				Expect(err).NotTo(HaveOccurred())
				Expect(n).To(Equal(int64(1)))
			})

			It("records a move whose reply was lost exactly once, though the caller and its observer never heard of it", func() {
				h := &liar{}
				c.AddHook(h)
				ev := &events{}
				s := newStore(c, store.Config{Observer: ev.hear, EventStream: streamLen})
				Expect(s.Load(ctx)).To(Succeed()) // EVALSHA finds every script: one call per move
				Expect(s.Enqueue(ctx, job.Job{ID: "a", Task: "charge"}, t0)).To(Succeed())

				h.armed = true
				_, _, _, err := s.Dequeue(ctx, job.DefaultQueue, t0.Add(time.Second), time.Minute)
				Expect(err).To(MatchError(errLost))
				// the job is leased all the same: its lease expires and it comes back
				n, err := s.RecoverExpired(ctx, t0.Add(2*time.Minute), 10)
				Expect(err).NotTo(HaveOccurred())
				Expect(n).To(Equal(1))
				j, l, ok, err := s.Dequeue(ctx, job.DefaultQueue, t0.Add(3*time.Minute), time.Minute)
				Expect(err).NotTo(HaveOccurred())
				Expect(ok).To(BeTrue())

				h.armed = true
				Expect(s.Ack(ctx, l, j, t0.Add(4*time.Minute))).To(MatchError(errLost))
				// the caller's retry gets the guarded answer, and no second event
				Expect(s.Ack(ctx, l, j, t0.Add(5*time.Minute))).To(MatchError(queue.ErrLeaseLost))

				Expect(ev.count(disposition.Leased)).To(Equal(1))
				Expect(ev.count(disposition.Acked)).To(Equal(0))
				ms := func(d time.Duration) time.Time { return t0.Add(d) }
				ev1 := func(from, to disposition.State, r disposition.Reason, at time.Time) disposition.Event {
					return disposition.Event{JobID: "a", Task: "charge", From: from, To: to, Reason: r, At: at}
				}
				Expect(readAll(s)).To(Equal([]disposition.Event{
					ev1(disposition.None, disposition.Queued, disposition.Enqueued, t0),
					ev1(disposition.Queued, disposition.InFlight, disposition.Leased, ms(time.Second)),
					ev1(disposition.InFlight, disposition.Queued, disposition.LeaseExpired, ms(2*time.Minute)),
					ev1(disposition.Queued, disposition.InFlight, disposition.Leased, ms(3*time.Minute)),
					ev1(disposition.InFlight, disposition.Succeeded, disposition.Acked, ms(4*time.Minute)),
				}))
			})

			It("writes no stream when it is off", func() {
				ev := &events{}
				s := newStore(c, store.Config{Observer: ev.hear})
				workload(s)
				Expect(ev.all).NotTo(BeEmpty())
				n, err := c.Exists(ctx, redisstore.EventStreamKey(s.Config().Namespace)).Result()
				Expect(err).NotTo(HaveOccurred())
				Expect(n).To(BeZero())
				got, err := s.ReadEvents(ctx, "0", 10, 0)
				Expect(err).NotTo(HaveOccurred())
				Expect(got).To(BeEmpty())
			})

			It("stays bounded by MAXLEN ~, and tells a reader that fell behind what it missed", func() {
				const maxlen, moves = 20, 450
				s := newStore(c, store.Config{EventStream: maxlen})
				key := redisstore.EventStreamKey(s.Config().Namespace)
				enqueue := func(i int) {
					GinkgoHelper()
					Expect(s.Enqueue(ctx, job.Job{ID: fmt.Sprintf("j%04d", i), Task: "charge"}, t0)).To(Succeed())
				}
				// A reader that keeps up sees every move, with no gap.
				after, seen, firstRead := "0", 0, ""
				for i := range moves {
					enqueue(i)
					if i%10 == 9 {
						got, err := s.ReadEvents(ctx, after, 0, 0)
						Expect(err).NotTo(HaveOccurred())
						if firstRead == "" {
							firstRead = got[0].ID
						}
						for _, g := range got {
							Expect(g.Event.JobID).To(Equal(fmt.Sprintf("j%04d", seen)))
							seen++
							after = g.ID
						}
					}
				}
				Expect(seen).To(Equal(moves))
				// The stream holds about MAXLEN entries: Redis trims whole
				// nodes (stream-node-max-entries, 100 by default).
				n, err := c.XLen(ctx, key).Result()
				Expect(err).NotTo(HaveOccurred())
				Expect(n).To(And(BeNumerically(">=", maxlen), BeNumerically("<=", maxlen+100)))

				// A reader from the start lost the oldest moves.
				got, err := s.ReadEvents(ctx, "0", 0, 0)
				Expect(err).To(MatchError(redisstore.ErrEventsTrimmed))
				Expect(got).To(HaveLen(int(n)))
				Expect(got[len(got)-1].Event.JobID).To(Equal(fmt.Sprintf("j%04d", moves-1)))
				// So did one that read the first move and then fell behind.
				_, err = s.ReadEvents(ctx, firstRead, 1, 0)
				Expect(err).To(MatchError(redisstore.ErrEventsTrimmed))
				first, err := c.XRange(ctx, key, "-", "+").Result()
				Expect(err).NotTo(HaveOccurred())
				_, err = s.ReadEvents(ctx, first[0].ID, 1, 0)
				Expect(err).NotTo(HaveOccurred(), "the stream's first entry follows it")
				enqueue(moves)
				_, err = s.ReadEvents(ctx, after, 0, 0)
				Expect(err).NotTo(HaveOccurred(), "a reader at the tail missed nothing")
			})

			It("hands a blocked reader the next move as it happens", func() {
				s := newStore(c, store.Config{EventStream: streamLen})
				got, err := s.ReadEvents(ctx, "0", 10, 10*time.Millisecond)
				Expect(err).NotTo(HaveOccurred())
				Expect(got).To(BeEmpty(), "nothing yet: it waited and came back")
				done := make(chan []redisstore.StreamEvent, 1)
				go func() {
					defer GinkgoRecover()
					got, err := s.ReadEvents(ctx, "0", 10, 10*time.Second)
					Expect(err).NotTo(HaveOccurred())
					done <- got
				}()
				Consistently(done, 50*time.Millisecond).ShouldNot(Receive())
				Expect(s.Enqueue(ctx, job.Job{ID: "a", Task: "charge"}, t0)).To(Succeed())
				var read []redisstore.StreamEvent
				Eventually(done, 10*time.Second).Should(Receive(&read))
				Expect(read).To(HaveLen(1))
				Expect(read[0].Event).To(Equal(disposition.Event{JobID: "a", Task: "charge", From: disposition.None,
					To: disposition.Queued, Reason: disposition.Enqueued, At: t0}))
			})

			It("follows the stream until its context ends", func() {
				s := newStore(c, store.Config{EventStream: streamLen})
				for _, id := range []string{"a", "b"} {
					Expect(s.Enqueue(ctx, job.Job{ID: id, Task: "charge"}, t0)).To(Succeed())
				}
				fctx, cancel := context.WithCancel(ctx)
				var seen []string
				err := s.FollowEvents(fctx, "0", 5*time.Millisecond, func(e redisstore.StreamEvent) error {
					seen = append(seen, e.Event.JobID)
					if len(seen) == 2 {
						Expect(s.Enqueue(ctx, job.Job{ID: "c", Task: "charge"}, t0)).To(Succeed())
					}
					if len(seen) == 3 {
						cancel()
					}
					return nil
				})
				Expect(err).To(MatchError(context.Canceled))
				Expect(seen).To(Equal([]string{"a", "b", "c"}))
				stop := errors.New("enough")
				Expect(s.FollowEvents(ctx, "0", time.Millisecond, func(redisstore.StreamEvent) error { return stop })).To(MatchError(stop))
			})

			It("refuses a negative MAXLEN", func() {
				_, err := redisstore.New(c, store.Config{EventStream: -1})
				Expect(err).To(MatchError(store.ErrInvalidConfig))
			})
		})
	}
})
