package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/internal/conformance"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/reference/store/redisstore/redistest"
)

// The Redis Cluster lane: the conformance suites on a real three-node
// cluster the suite starts (redis-server --cluster-enabled yes ×3, joined by
// redis-cli --cluster create). Every key of a namespace carries the hash
// tag {faultline:NS}, so a namespace is one slot on one node and every
// script runs on that node; the cluster client routes each script by its
// first key, the namespace's prefix.
var _ = Describe("on a Redis Cluster", Label("cluster"), func() {
	// One client per spec, as the real lane shares one: the stores a spec
	// builds on one namespace (a restarted process) share its event check.
	var shared *redis.ClusterClient
	BeforeEach(func() { shared = nil })
	client := func() *redis.ClusterClient {
		GinkgoHelper()
		if shared == nil {
			shared = redisstore.NewClusterClient(redistest.RealCluster().Addrs)
			DeferCleanup(shared.Close)
		}
		return shared
	}

	conformanceSuites(func() redis.UniversalClient { return client() })
})

var _ = Describe("a namespace on a Redis Cluster", Label("cluster"), func() {
	ctx := context.Background()

	It("is one slot: several namespaces spread over the nodes", func() {
		cl := redistest.RealCluster()
		c := redisstore.NewClusterClient(cl.Addrs)
		DeferCleanup(c.Close)
		owners := map[string][]string{}
		for i := range 12 {
			ns := fmt.Sprintf("spread%d", i)
			s := newStore(c, store.Config{Namespace: ns})
			Expect(s.Enqueue(ctx, clusterJob(ns+"-j"), conformance.T0)).To(Succeed())
			slot := int(c.ClusterKeySlot(ctx, redisstore.Prefix(ns)).Val())
			owner, err := cl.Owner(ctx, slot)
			Expect(err).NotTo(HaveOccurred())
			owners[owner] = append(owners[owner], ns)
		}
		Expect(len(owners)).To(BeNumerically(">=", 2), "12 namespaces all on one node: %v", owners)
		for addr, nss := range owners {
			n := redis.NewClient(&redis.Options{Addr: addr})
			keys, err := n.Keys(ctx, "{faultline:*").Result()
			_ = n.Close()
			Expect(err).NotTo(HaveOccurred())
			for _, k := range keys {
				ns := strings.TrimPrefix(k[:strings.Index(k, "}")], "{faultline:")
				Expect(nss).To(ContainElement(ns), "key %s of namespace %s is on %s, which does not serve its slot", k, ns, addr)
			}
		}
	})

	// A cluster client resends a command whose connection broke; a script
	// must not be resent behind its caller's back (it may have run: the
	// caller's own retry gets the script's guarded answer instead).
	It("does not resend a script whose reply was lost", func() {
		cl := redistest.RealCluster()
		c := redisstore.NewClusterClient(cl.Addrs)
		DeferCleanup(c.Close)
		h := &lostReply{}
		c.OnNewNode(func(n *redis.Client) { n.AddHook(h) })
		s := newStore(c, store.Config{Namespace: "lost"})
		Expect(s.Enqueue(ctx, clusterJob("first"), conformance.T0)).To(Succeed())
		sent := h.sent.Load()
		h.armed.Store(true)
		err := s.Enqueue(ctx, clusterJob("lost-1"), conformance.T0)
		Expect(err).To(MatchError(io.EOF), "the caller hears that the reply was lost")
		Expect(h.sent.Load()-sent).To(Equal(int64(1)), "the script was sent once")
		Expect(s.Enqueue(ctx, clusterJob("lost-1"), conformance.T0)).To(MatchError(queue.ErrDuplicate), "it ran: the caller's retry is told so")
		counts, err := s.Counts(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(counts.Queued).To(Equal(2))
	})

	// The resharding of a namespace's slot while its workers run: the
	// slot's keys go over in MIGRATE batches while workers lease, ack and
	// dead-letter. Every script declares two keys that never exist (the
	// prefix and its guard), so while the slot is half moved every script
	// is answered TRYAGAIN by both nodes, runs nowhere, and is tried again
	// by the client: no script ever runs on half of a namespace.
	It("loses nothing when the namespace's slot is resharded in the middle of a run", func() {
		cl := redistest.RealCluster()
		c := redisstore.NewClusterClient(cl.Addrs)
		DeferCleanup(c.Close)
		tryAgain := &tryAgains{}
		c.OnNewNode(func(n *redis.Client) { n.AddHook(tryAgain) })
		const ns, total, workers = "reshard", 1200, 4
		s := newStore(c, store.Config{Namespace: ns})
		now := conformance.T0
		for i := range total {
			Expect(s.Enqueue(ctx, clusterJob("r"+strconv.Itoa(i)), now)).To(Succeed())
		}
		var (
			mu       sync.Mutex
			acked    = map[string]int{}
			dead     = map[string]int{}
			done     atomic.Int64
			failures atomic.Int64
			wg       sync.WaitGroup
		)
		stop := make(chan struct{})
		// retry calls a move until it answers; an error the cluster client
		// gave up on is counted and the move sent again.
		retry := func(move func() error) error {
			for {
				err := move()
				if err == nil || errors.Is(err, queue.ErrLeaseLost) {
					return err
				}
				failures.Add(1)
				select {
				case <-stop: // the spec failed and ends: stop retrying
					return err
				case <-time.After(5 * time.Millisecond):
				}
			}
		}
		for range workers {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					var (
						j  job.Job
						l  queue.Lease
						ok bool
					)
					Expect(retry(func() (err error) {
						j, l, ok, err = s.Dequeue(ctx, "charge", now, time.Hour)
						return err
					})).To(Succeed())
					if !ok {
						time.Sleep(2 * time.Millisecond)
						continue
					}
					n, _ := strconv.Atoi(strings.TrimPrefix(j.ID, "r"))
					if n%5 == 0 {
						e := dlq.Entry{Job: j, History: []dlq.Failure{{At: now, Attempt: 1, Error: "declined", Verdict: clusterVerdict}}, Verdict: clusterVerdict, Reason: "permanent"}
						Expect(retry(func() error { _, err := s.DeadLetter(ctx, l, e, now); return err })).To(Succeed(), "dead-letter %s", j.ID)
						mu.Lock()
						dead[j.ID]++
						mu.Unlock()
					} else {
						Expect(retry(func() error { return s.Ack(ctx, l, j, now) })).To(Succeed(), "ack %s", j.ID)
						mu.Lock()
						acked[j.ID]++
						mu.Unlock()
					}
					done.Add(1)
				}
			}()
		}
		DeferCleanup(func() { close(stop); wg.Wait() })

		Eventually(done.Load).WithTimeout(time.Minute).Should(BeNumerically(">=", total/4))
		slot := int(c.ClusterKeySlot(ctx, redisstore.Prefix(ns)).Val())
		from, err := cl.Owner(ctx, slot)
		Expect(err).NotTo(HaveOccurred())
		to := cl.Addrs[0]
		if to == from {
			to = cl.Addrs[1]
		}
		atMove := done.Load()
		// After each batch the slot is half moved: wait until the workers'
		// scripts have met it (a TRYAGAIN) before the next batch goes.
		Expect(cl.MigrateSlot(ctx, slot, to, 20, func(int) {
			Eventually(tryAgain.n.Load).WithTimeout(10*time.Second).Should(BeNumerically(">", 0), "no script met the half-moved slot")
		})).To(Succeed())
		GinkgoWriter.Printf("slot %d moved from %s to %s after %d of %d jobs, at %d; %d scripts answered TRYAGAIN\n", slot, from, to, atMove, total, done.Load(), tryAgain.n.Load())
		Expect(done.Load()).To(BeNumerically("<", total), "the workers finished before the slot moved: the spec proves nothing")
		Eventually(done.Load).WithTimeout(time.Minute).Should(BeNumerically("==", total))

		owner, err := cl.Owner(ctx, slot)
		Expect(err).NotTo(HaveOccurred())
		Expect(owner).To(Equal(to))
		counts, err := s.Counts(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(counts).To(Equal(queue.Counts{}), "nothing left queued, in flight, scheduled or held")
		mu.Lock()
		defer mu.Unlock()
		var inDLQ []string
		cursor := ""
		for {
			p, err := s.List(ctx, dlq.Filter{}, cursor, 500)
			Expect(err).NotTo(HaveOccurred())
			for _, e := range p.Entries {
				inDLQ = append(inDLQ, e.Job.ID)
			}
			if cursor = p.Next; cursor == "" {
				break
			}
		}
		Expect(inDLQ).To(HaveLen(len(dead)), "one DLQ entry per dead-lettered job")
		for _, id := range inDLQ {
			Expect(dead).To(HaveKeyWithValue(id, 1), "%s is in the DLQ", id)
		}
		for i := range total {
			id := "r" + strconv.Itoa(i)
			Expect(acked[id]+dead[id]).To(Equal(1), "%s: acked %d times, dead-lettered %d times", id, acked[id], dead[id])
		}
		GinkgoWriter.Printf("%d acked, %d dead-lettered, %d calls the client gave up on and the worker sent again\n", len(acked), len(dead), failures.Load())
	})
})

// lostReply is a go-redis hook on a cluster's node clients that lets the
// next EVALSHA run on the node and then loses its reply (io.EOF), as a
// connection cut after Redis ran a script would; it counts the EVALSHAs
// that reach the nodes.
type lostReply struct {
	armed atomic.Bool
	sent  atomic.Int64
}

func (h *lostReply) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *lostReply) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *lostReply) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() != "evalsha" {
			return next(ctx, cmd)
		}
		h.sent.Add(1)
		err := next(ctx, cmd)
		if err == nil && h.armed.CompareAndSwap(true, false) {
			cmd.SetErr(io.EOF)
			return io.EOF
		}
		return err
	}
}

// tryAgains is a go-redis hook on a cluster's node clients that counts the
// commands a node answered TRYAGAIN (a slot half moved).
type tryAgains struct{ n atomic.Int64 }

func (h *tryAgains) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessPipelineHook counts too: the cluster client sends a redirected
// (ASK) command in a pipeline behind ASKING.
func (h *tryAgains) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			if c.Err() != nil && strings.HasPrefix(c.Err().Error(), "TRYAGAIN") {
				h.n.Add(1)
			}
		}
		return err
	}
}

func (h *tryAgains) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err != nil && strings.HasPrefix(err.Error(), "TRYAGAIN") {
			h.n.Add(1)
		}
		return err
	}
}

var clusterVerdict = classify.Classification{Class: classify.Permanent, Severity: classify.Low, Source: classify.Dependency, Rule: "declined"}

// clusterJob is a job of the cluster specs.
func clusterJob(id string) job.Job {
	return job.Job{ID: id, Task: "charge", Queue: "charge", Payload: []byte(`{"order":"` + id + `"}`)}
}
