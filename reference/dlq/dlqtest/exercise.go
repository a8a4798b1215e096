package dlqtest

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/store"
)

// The states, short.
const (
	none     = disposition.None
	queued   = disposition.Queued
	inFlight = disposition.InFlight
	dead     = disposition.DeadLettered
)

// oneMore and reset are the two budgets of an operator's requeue.
var (
	oneMore = dlq.RequeueOptions{Budget: dlq.OneMoreAttempt, By: "ops"}
	reset   = dlq.RequeueOptions{Budget: dlq.ResetAttempts, By: "ops"}
)

// dequeueAny tries to lease a job from each of the default and "emails"
// queues at T0+d.
func dequeueAny(f *fixture, d time.Duration) (job.Job, bool, error) {
	for _, q := range []string{job.DefaultQueue, "emails"} {
		j, _, ok, err := f.q.Dequeue(f.ctx, q, at(d), TTL)
		if err != nil || ok {
			return j, ok, err
		}
	}
	return job.Job{}, false, nil
}

// Exercise declares the dlq.Store conformance specs, including a property
// over random operation sequences. newHarness builds a fresh, empty backend
// from cfg for each spec (and may be called many times in one spec: the
// property builds one per run); the suite sets cfg.Observer and
// cfg.OnOverflow to record what the backend reports, so the factory must
// pass cfg through.
func Exercise(newHarness func(cfg store.Config) Harness) {
	Describe("dlq.Store conformance", func() {
		var (
			cfg store.Config
			f   *fixture
		)
		BeforeEach(func() { cfg = store.Config{} })
		JustBeforeEach(func() { f = build(newHarness, cfg) })

		Describe("DeadLetter", func() {
			It("moves a leased job into the DLQ in one step, with its history", func() {
				j := newJob("j1")
				j.Attempts = 3
				e := deadEntry(j, at(5*time.Second))
				r := f.kill(j, 5*time.Second, e)
				Expect(r.Created).To(BeTrue())
				Expect(r.Evicted).To(BeEmpty())
				Expect(f.counts()).To(Equal(queue.Counts{}))

				got := f.get("j1")
				Expect(got.Corrupt).To(BeFalse())
				Expect(got.Version).To(Equal(dlq.EncodingVersion))
				equalJob(got.Job, j)
				equalHistory(got.History, e.History)
				Expect(got.FirstFailedAt).To(BeTemporally("==", at(5*time.Second)))
				Expect(got.LastFailedAt).To(BeTemporally("==", at(5*time.Second)))
				Expect(got.Verdict).To(Equal(e.Verdict))
				Expect(got.Reason).To(Equal(e.Reason))
				Expect(got.SourceQueue).To(Equal(job.DefaultQueue))
				Expect(got.Status).To(Equal(dlq.Failed))
				Expect(changes(got)).To(Equal([]string{change(0, dlq.Failed, 5*time.Second)}))
				Expect(got.Requeues).To(BeZero())
				Expect(got.AutoRetries).To(BeZero())
				Expect(got.Severity()).To(Equal(classify.Medium))
				Expect(got.ErrorType()).To(Equal("*failure.HTTPError"))

				Expect(f.take()).To(Equal([]string{
					ev("j1", none, queued, disposition.Enqueued, 5*time.Second, 3),
					ev("j1", queued, inFlight, disposition.Leased, 5*time.Second, 3),
					ev("j1", inFlight, dead, disposition.DeadLetter, 5*time.Second, 3),
				}))
			})

			It("keeps the source queue of a job of another queue", func() {
				j := newJob("e1")
				j.Queue = "emails"
				f.kill(j, 0, deadEntry(j, T0))
				Expect(f.get("e1").SourceQueue).To(Equal("emails"))
			})

			It("is fenced by the lease: a late dead-letter of a job that came back writes nothing", func() {
				f.enqueue(newJob("j1"), 0)
				_, stale := f.dequeue(job.DefaultQueue, 0)
				n, err := f.q.RecoverExpired(f.ctx, stale.Expires, 10)
				Expect(err).NotTo(HaveOccurred())
				Expect(n).To(Equal(1))
				f.take()

				_, err = f.d.DeadLetter(f.ctx, stale, deadEntry(newJob("j1"), at(time.Minute)), at(time.Minute))
				Expect(err).To(MatchError(queue.ErrLeaseLost))
				f.expectGone("j1")
				Expect(f.stats().Total).To(BeZero())
				Expect(f.counts()).To(Equal(queue.Counts{Queued: 1}))
				Expect(f.take()).To(BeEmpty())
			})

			It("extends the history of a job that dies again after a requeue, keeping one entry", func() {
				j := newJob("j1")
				j.Attempts = 3
				e1 := deadEntry(j, at(10*time.Second))
				f.kill(j, 10*time.Second, e1)
				Expect(f.requeue("j1", reset, time.Minute)).To(Equal(dlq.OutcomeRequeued))

				got, l := f.dequeue(job.DefaultQueue, 90*time.Second)
				Expect(got.Attempts).To(BeZero())
				got.Attempts = 1
				e2 := failing(got, at(2*time.Minute), classify.High, classify.Critical, "*failure.AuthError")
				r, err := f.d.DeadLetter(f.ctx, l, e2, at(2*time.Minute))
				Expect(err).NotTo(HaveOccurred())
				Expect(r.Created).To(BeFalse())
				Expect(r.Evicted).To(BeEmpty())

				e := f.get("j1")
				equalHistory(e.History, append(append([]dlq.Failure{}, e1.History...), e2.History...))
				equalJob(e.Job, got)
				Expect(e.FirstFailedAt).To(BeTemporally("==", at(10*time.Second)))
				Expect(e.LastFailedAt).To(BeTemporally("==", at(2*time.Minute)))
				Expect(e.Verdict).To(Equal(e2.Verdict))
				Expect(e.Status).To(Equal(dlq.Failed))
				Expect(e.Requeues).To(Equal(1))
				Expect(changes(e)).To(Equal([]string{
					change(0, dlq.Failed, 10*time.Second),
					change(dlq.Failed, dlq.Requeued, time.Minute),
					change(dlq.Requeued, dlq.Failed, 2*time.Minute),
				}))
				st := f.stats()
				Expect(st.Total).To(Equal(1))
				expectMap(st.ByStatus, map[string]int{"failed": 1}, "ByStatus")
				Expect(f.take()[3:]).To(Equal([]string{
					ev("j1", dead, queued, disposition.Requeued, time.Minute, 0),
					ev("j1", queued, inFlight, disposition.Leased, 90*time.Second, 0),
					ev("j1", inFlight, dead, disposition.DeadLetter, 2*time.Minute, 1),
				}))
			})

			It("refuses an invalid entry job with job.ErrInvalid, leaving the lease in force", func() {
				f.enqueue(newJob("j1"), 0)
				_, l := f.dequeue(job.DefaultQueue, 0)
				f.take()
				_, err := f.d.DeadLetter(f.ctx, l, deadEntry(job.Job{}, T0), T0)
				Expect(err).To(MatchError(job.ErrInvalid))
				_, err = f.d.DeadLetter(f.ctx, l, deadEntry(newJob("j2"), T0), T0)
				Expect(err).To(MatchError(job.ErrInvalid))
				f.expectGone("j1")
				f.expectGone("j2")
				Expect(f.counts()).To(Equal(queue.Counts{InFlight: 1}))
				Expect(f.take()).To(BeEmpty())
				Expect(f.q.Ack(f.ctx, l, newJob("j1"), T0)).To(Succeed())
			})
		})

		Describe("Add", func() {
			It("creates an entry for a job not in the DLQ", func() {
				j := newJob("imp")
				j.Attempts = 5
				e := deadEntry(j, at(-time.Hour))
				r := f.add(e, time.Second)
				Expect(r).To(Equal(dlq.AddResult{Created: true}))
				got := f.get("imp")
				equalJob(got.Job, j)
				equalHistory(got.History, e.History)
				Expect(got.Status).To(Equal(dlq.Failed))
				Expect(got.SourceQueue).To(Equal(job.DefaultQueue))
				Expect(got.FirstFailedAt).To(BeTemporally("==", at(time.Second)))
				Expect(got.LastFailedAt).To(BeTemporally("==", at(time.Second)))
				Expect(f.take()).To(Equal([]string{ev("imp", none, dead, disposition.DeadLetter, time.Second, 5)}))
			})

			It("keeps the first failure's time the caller gives, never a time after the add", func() {
				e := deadEntry(newJob("first"), at(time.Second))
				e.FirstFailedAt = at(-time.Minute) // the job's first failed attempt
				f.add(e, time.Second)
				Expect(f.get("first").FirstFailedAt).To(BeTemporally("==", at(-time.Minute)))
				f.take()
				late := deadEntry(newJob("late"), at(time.Second))
				late.FirstFailedAt = at(time.Hour)
				f.add(late, 2*time.Second)
				Expect(f.get("late").FirstFailedAt).To(BeTemporally("==", at(2*time.Second)))
				f.take()
			})

			It("is idempotent per job ID: a second add extends the history and creates nothing", func() {
				e1 := deadEntry(newJob("imp"), at(time.Second))
				f.add(e1, time.Second)
				f.take()
				e2 := failing(newJob("imp"), at(time.Minute), classify.Low, classify.Transient, "*net.OpError")
				r := f.add(e2, time.Minute)
				Expect(r.Created).To(BeFalse())
				Expect(r.Evicted).To(BeEmpty())
				got := f.get("imp")
				equalHistory(got.History, append(append([]dlq.Failure{}, e1.History...), e2.History...))
				Expect(got.FirstFailedAt).To(BeTemporally("==", at(time.Second)))
				Expect(got.LastFailedAt).To(BeTemporally("==", at(time.Minute)))
				Expect(got.Verdict).To(Equal(e2.Verdict))
				Expect(got.Status).To(Equal(dlq.Failed))
				Expect(changes(got)).To(Equal([]string{change(0, dlq.Failed, time.Second), change(dlq.Failed, dlq.Failed, time.Minute)}))
				Expect(f.stats().Total).To(Equal(1))
				Expect(f.take()).To(BeEmpty(), "the job was dead-lettered already")
			})

			It("keeps a source queue the entry names", func() {
				e := deadEntry(newJob("imp"), T0)
				e.SourceQueue = "legacy"
				f.add(e, 0)
				Expect(f.get("imp").SourceQueue).To(Equal("legacy"))
				Expect(f.requeue("imp", oneMore, time.Second)).To(Equal(dlq.OutcomeRequeued))
				j, _ := f.dequeue("legacy", 2*time.Second)
				Expect(j.ID).To(Equal("imp"))
			})

			When("MaxPayload is small", func() {
				BeforeEach(func() { cfg.MaxPayload = 8 })

				DescribeTable("refuses an invalid job with job.ErrInvalid and writes nothing",
					func(j job.Job) {
						_, err := f.d.Add(f.ctx, deadEntry(j, T0), T0)
						Expect(err).To(MatchError(job.ErrInvalid))
						st := f.stats()
						Expect(st.Total).To(BeZero())
						p, err := f.d.List(f.ctx, dlq.Filter{}, "", 10)
						Expect(err).NotTo(HaveOccurred())
						Expect(p.Entries).To(BeEmpty())
						Expect(f.take()).To(BeEmpty())
					},
					Entry("the zero job", job.Job{}),
					Entry("an empty ID", job.Job{Task: "charge"}),
					Entry("an empty task", job.Job{ID: "x"}),
					Entry("a payload over MaxPayload", job.Job{ID: "x", Task: "charge", Payload: []byte("123456789")}),
				)
			})
		})

		Describe("Get", func() {
			It("reports an unknown ID with ErrNotFound", func() {
				_, err := f.d.Get(f.ctx, "nobody")
				Expect(err).To(MatchError(dlq.ErrNotFound))
			})
		})

		Describe("listing and stats", func() {
			// The fixture: six entries of every status, one minute apart.
			//
			//	id  task    severity class         error type          last failed  status
			//	a   charge  low      transient     *net.OpError        T0+1m        failed
			//	b   charge  medium   permanent     *failure.HTTPError  T0+2m        failed
			//	c   refund  high     critical      *failure.HTTPError  T0+3m        failed
			//	d   email   medium   rate-limited  *failure.HTTPError  T0+4m        requeued
			//	e   refund  low      permanent     *json.SyntaxError   T0+5m        deleted
			//	f   charge  high     indeterminate *url.Error          T0+6m        quarantined
			type row struct {
				id, task string
				sev      classify.Severity
				class    classify.Class
				errType  string
			}
			rows := []row{
				{"a", "charge", classify.Low, classify.Transient, "*net.OpError"},
				{"b", "charge", classify.Medium, classify.Permanent, "*failure.HTTPError"},
				{"c", "refund", classify.High, classify.Critical, "*failure.HTTPError"},
				{"d", "email", classify.Medium, classify.RateLimited, "*failure.HTTPError"},
				{"e", "refund", classify.Low, classify.Permanent, "*json.SyntaxError"},
				{"f", "charge", classify.High, classify.Indeterminate, "*url.Error"},
			}
			JustBeforeEach(func() {
				for i, r := range rows {
					j := newJob(r.id)
					j.Task = r.task
					d := time.Duration(i+1) * time.Minute
					f.add(failing(j, at(d), r.sev, r.class, r.errType), d)
				}
				Expect(f.requeue("d", oneMore, 10*time.Minute)).To(Equal(dlq.OutcomeRequeued))
				Expect(f.d.Delete(f.ctx, "e", "ops", at(10*time.Minute))).To(Succeed())
				Expect(f.d.Quarantine(f.ctx, "f", "poison", at(10*time.Minute))).To(Succeed())
				f.take()
			})

			It("lists every entry, newest first", func() {
				p, err := f.d.List(f.ctx, dlq.Filter{}, "", 10)
				Expect(err).NotTo(HaveOccurred())
				Expect(p.Next).To(BeEmpty())
				ids := make([]string, len(p.Entries))
				for i, e := range p.Entries {
					ids[i] = e.ID()
					Expect(e.Corrupt).To(BeFalse())
				}
				Expect(ids).To(Equal([]string{"f", "e", "d", "c", "b", "a"}))
				Expect(p.Entries[2].Status).To(Equal(dlq.Requeued))
				Expect(p.Entries[5].Job.Task).To(Equal("charge"))
				Expect(p.Entries[5].ErrorType()).To(Equal("*net.OpError"))
			})

			DescribeTable("selects by every Filter field, any element of a list matching, every field holding",
				func(filter dlq.Filter, want []string) {
					Expect(f.listIDs(filter, 2)).To(Equal(want), "paged by 2")
					Expect(f.listIDs(filter, 100)).To(Equal(want), "in one page")
				},
				Entry("nothing set", dlq.Filter{}, []string{"f", "e", "d", "c", "b", "a"}),
				Entry("one severity", dlq.Filter{Severities: []classify.Severity{classify.Medium}}, []string{"d", "b"}),
				Entry("two severities", dlq.Filter{Severities: []classify.Severity{classify.Low, classify.High}}, []string{"f", "e", "c", "a"}),
				Entry("a task", dlq.Filter{Tasks: []string{"refund"}}, []string{"e", "c"}),
				Entry("two tasks", dlq.Filter{Tasks: []string{"email", "refund"}}, []string{"e", "d", "c"}),
				Entry("classes", dlq.Filter{Classes: []classify.Class{classify.Permanent, classify.Critical}}, []string{"e", "c", "b"}),
				Entry("an error type", dlq.Filter{ErrorTypes: []string{"*failure.HTTPError"}}, []string{"d", "c", "b"}),
				Entry("a status", dlq.Filter{Statuses: []dlq.Status{dlq.Failed}}, []string{"c", "b", "a"}),
				Entry("inactive statuses", dlq.Filter{Statuses: []dlq.Status{dlq.Requeued, dlq.Deleted}}, []string{"e", "d"}),
				Entry("quarantined", dlq.Filter{Statuses: []dlq.Status{dlq.Quarantined}}, []string{"f"}),
				Entry("Since, inclusive", dlq.Filter{Since: at(3 * time.Minute)}, []string{"f", "e", "d", "c"}),
				Entry("Until, exclusive", dlq.Filter{Until: at(3 * time.Minute)}, []string{"b", "a"}),
				Entry("a time range", dlq.Filter{Since: at(2 * time.Minute), Until: at(5 * time.Minute)}, []string{"d", "c", "b"}),
				Entry("task and severity", dlq.Filter{Tasks: []string{"charge"}, Severities: []classify.Severity{classify.High}}, []string{"f"}),
				Entry("tasks and status", dlq.Filter{Tasks: []string{"charge", "refund"}, Statuses: []dlq.Status{dlq.Failed}}, []string{"c", "b", "a"}),
				Entry("every field", dlq.Filter{
					Severities: []classify.Severity{classify.Medium, classify.High},
					Tasks:      []string{"charge", "refund"},
					Classes:    []classify.Class{classify.Permanent, classify.Critical},
					ErrorTypes: []string{"*failure.HTTPError"},
					Statuses:   []dlq.Status{dlq.Failed},
					Since:      at(2 * time.Minute),
					Until:      at(3*time.Minute + time.Millisecond),
				}, []string{"c", "b"}),
				Entry("no match", dlq.Filter{Tasks: []string{"nothing"}}, nil),
			)

			It("summarises the store exactly", func() {
				st := f.stats()
				Expect(st.Total).To(Equal(6))
				Expect(st.Corrupt).To(BeZero())
				expectMap(st.BySeverity, map[string]int{"low": 2, "medium": 2, "high": 2}, "BySeverity")
				expectMap(st.ByTask, map[string]int{"charge": 3, "refund": 2, "email": 1}, "ByTask")
				expectMap(st.ByClass, map[string]int{"transient": 1, "permanent": 2, "critical": 1, "rate-limited": 1, "indeterminate": 1}, "ByClass")
				expectMap(st.ByStatus, map[string]int{"failed": 3, "requeued": 1, "deleted": 1, "quarantined": 1}, "ByStatus")
				Expect(st.Oldest).To(BeTemporally("==", at(time.Minute)))
				Expect(st.OldestID).To(Equal("a"))
				Expect(st.Evicted).To(BeZero())
				Expect(st.Rejected).To(BeZero())

				Expect(f.requeue("a", oneMore, 11*time.Minute)).To(Equal(dlq.OutcomeRequeued))
				Expect(f.d.Restore(f.ctx, "e", "ops", at(11*time.Minute))).To(Succeed())
				st = f.stats()
				expectMap(st.ByStatus, map[string]int{"failed": 3, "requeued": 2, "quarantined": 1, "deleted": 0}, "ByStatus")
				Expect(st.Oldest).To(BeTemporally("==", at(2*time.Minute)), "the oldest Failed entry")
				Expect(st.OldestID).To(Equal("b"))
				n, err := f.d.Purge(f.ctx, at(time.Hour), at(time.Hour))
				Expect(err).NotTo(HaveOccurred())
				Expect(n).To(Equal(6))
				st = f.stats()
				Expect(st.Total).To(BeZero())
				Expect(st.Oldest.IsZero()).To(BeTrue())
				Expect(st.OldestID).To(BeEmpty())
				expectMap(st.ByStatus, nil, "ByStatus")
				expectMap(st.BySeverity, nil, "BySeverity")
			})

			It("continues a listing after its cursor: a newer entry does not show up, an older one does, nothing repeats", func() {
				p, err := f.d.List(f.ctx, dlq.Filter{}, "", 3)
				Expect(err).NotTo(HaveOccurred())
				Expect(p.Next).NotTo(BeEmpty())
				f.add(deadEntry(newJob("newer"), at(time.Hour)), time.Hour)
				f.add(deadEntry(newJob("older"), at(-time.Hour)), -time.Hour)
				_, err = f.d.Purge(f.ctx, at(time.Minute+time.Millisecond), at(time.Hour)) // "a" and "older" go
				Expect(err).NotTo(HaveOccurred())
				f.add(deadEntry(newJob("older2"), at(-time.Hour)), -time.Hour)
				var ids []string
				for cursor := p.Next; cursor != ""; {
					p, err = f.d.List(f.ctx, dlq.Filter{}, cursor, 1)
					Expect(err).NotTo(HaveOccurred())
					for _, e := range p.Entries {
						ids = append(ids, e.ID())
					}
					cursor = p.Next
				}
				Expect(ids).To(Equal([]string{"c", "b", "older2"}))
			})
		})

		Describe("pagination", func() {
			// 25 entries over 5 instants: p00 failed at T0, p01 at T0+1m,
			// ..., p05 at T0 again; the listing is newest first, ID
			// descending among equal times.
			var want []string
			JustBeforeEach(func() {
				for i := range 25 {
					id := fmt.Sprintf("p%02d", i)
					d := time.Duration(i%5) * time.Minute
					f.add(deadEntry(newJob(id), at(d)), d)
				}
				want = nil
				for m := 4; m >= 0; m-- {
					for i := 20 + m; i >= 0; i -= 5 {
						want = append(want, fmt.Sprintf("p%02d", i))
					}
				}
			})

			DescribeTable("covers every entry exactly once, in order, whatever the page size",
				func(limit int) {
					Expect(f.listIDs(dlq.Filter{}, limit)).To(Equal(want))
				},
				Entry("1", 1), Entry("4", 4), Entry("5 (pages end on ties)", 5), Entry("7", 7),
				Entry("25 (one full page)", 25), Entry("100", 100),
			)

			It("ends with an empty Next exactly when nothing follows", func() {
				p, err := f.d.List(f.ctx, dlq.Filter{}, "", 25)
				Expect(err).NotTo(HaveOccurred())
				Expect(p.Entries).To(HaveLen(25))
				Expect(p.Next).To(BeEmpty())
				p, err = f.d.List(f.ctx, dlq.Filter{}, "", 24)
				Expect(err).NotTo(HaveOccurred())
				Expect(p.Next).NotTo(BeEmpty())
				p, err = f.d.List(f.ctx, dlq.Filter{}, p.Next, 24)
				Expect(err).NotTo(HaveOccurred())
				Expect(p.Entries).To(HaveLen(1))
				Expect(p.Entries[0].ID()).To(Equal("p00"))
				Expect(p.Next).To(BeEmpty())
			})

			It("pages a filtered listing", func() {
				Expect(f.listIDs(dlq.Filter{Since: at(3 * time.Minute)}, 3)).To(Equal(want[:10]))
				Expect(f.listIDs(dlq.Filter{Until: at(time.Minute)}, 2)).To(Equal(want[20:]))
			})

			It("lists an empty store as one empty page", func() {
				g := build(newHarness, store.Config{})
				p, err := g.d.List(g.ctx, dlq.Filter{}, "", 10)
				Expect(err).NotTo(HaveOccurred())
				Expect(p.Entries).To(BeEmpty())
				Expect(p.Next).To(BeEmpty())
			})
		})

		Describe("a dead-lettered job's ID", func() {
			It("cannot be enqueued anew while its entry holds it, so it is never in two places", func() {
				f.kill(newJob("p"), time.Second, deadEntry(newJob("p"), at(time.Second)))
				f.take()
				Expect(f.q.Enqueue(f.ctx, newJob("p"), at(2*time.Second))).To(MatchError(queue.ErrDeadLettered))
				Expect(f.counts()).To(Equal(queue.Counts{}))
				Expect(f.take()).To(BeEmpty())

				Expect(f.d.Delete(f.ctx, "p", "ops", at(3*time.Second))).To(Succeed())
				Expect(f.q.Enqueue(f.ctx, newJob("p"), at(4*time.Second))).To(MatchError(queue.ErrDeadLettered), "a deleted entry can be restored")

				Expect(f.d.Restore(f.ctx, "p", "ops", at(5*time.Second))).To(Succeed())
				Expect(f.requeue("p", oneMore, 6*time.Second)).To(Equal(dlq.OutcomeRequeued))
				Expect(f.drainIDs(job.DefaultQueue, 7*time.Second)).To(Equal([]string{"p"}))
				f.take()
				Expect(f.q.Enqueue(f.ctx, newJob("p"), at(8*time.Second))).To(Succeed(), "a requeued entry is only a record")
			})
		})

		Describe("Requeue", func() {
			It("sends the job back to the tail of its source queue with one more attempt", func() {
				j := newJob("j1")
				j.Attempts = 3
				f.kill(j, time.Second, deadEntry(j, at(time.Second)))
				f.enqueue(newJob("waiting"), 2*time.Second)
				f.take()

				Expect(f.requeue("j1", oneMore, time.Minute)).To(Equal(dlq.OutcomeRequeued))
				Expect(f.counts()).To(Equal(queue.Counts{Queued: 2}))
				e := f.get("j1")
				Expect(e.Status).To(Equal(dlq.Requeued))
				Expect(e.Requeues).To(Equal(1))
				Expect(e.AutoRetries).To(BeZero())
				Expect(changes(e)).To(Equal([]string{change(0, dlq.Failed, time.Second), change(dlq.Failed, dlq.Requeued, time.Minute)}))
				Expect(e.Changes[1].By).To(Equal("ops"))
				Expect(f.take()).To(Equal([]string{ev("j1", dead, queued, disposition.Requeued, time.Minute, 3)}))

				w, _ := f.dequeue(job.DefaultQueue, 2*time.Minute)
				Expect(w.ID).To(Equal("waiting"))
				got, _ := f.dequeue(job.DefaultQueue, 2*time.Minute)
				equalJob(got, j)
			})

			It("resets the attempts when asked to", func() {
				j := newJob("j1")
				j.Attempts = 3
				f.kill(j, time.Second, deadEntry(j, at(time.Second)))
				f.take()
				Expect(f.requeue("j1", reset, time.Minute)).To(Equal(dlq.OutcomeRequeued))
				Expect(f.take()).To(Equal([]string{ev("j1", dead, queued, disposition.Requeued, time.Minute, 0)}))
				got, _ := f.dequeue(job.DefaultQueue, 2*time.Minute)
				want := j
				want.Attempts = 0
				equalJob(got, want)
			})

			It("sends the job to another queue of the namespace", func() {
				f.kill(newJob("j1"), time.Second, deadEntry(newJob("j1"), at(time.Second)))
				o, err := f.d.Requeue(f.ctx, "j1", dlq.RequeueOptions{Queue: "manual", Budget: dlq.ResetAttempts}, at(time.Minute))
				Expect(err).NotTo(HaveOccurred())
				Expect(o).To(Equal(dlq.OutcomeRequeued))
				_, _, ok, err := f.q.Dequeue(f.ctx, job.DefaultQueue, at(time.Minute), TTL)
				Expect(err).NotTo(HaveOccurred())
				Expect(ok).To(BeFalse())
				got, l := f.dequeue("manual", time.Minute)
				Expect(got.ID).To(Equal("j1"))
				Expect(got.QueueName()).To(Equal("manual"))
				Expect(l.Queue).To(Equal("manual"))
				Expect(f.get("j1").SourceQueue).To(Equal(job.DefaultQueue))
			})

			It("answers a retried requeue with AlreadyRequeued and changes nothing", func() {
				f.kill(newJob("j1"), time.Second, deadEntry(newJob("j1"), at(time.Second)))
				Expect(f.requeue("j1", oneMore, time.Minute)).To(Equal(dlq.OutcomeRequeued))
				f.take()
				Expect(f.requeue("j1", oneMore, 2*time.Minute)).To(Equal(dlq.OutcomeAlreadyRequeued))
				Expect(f.requeue("j1", reset, 2*time.Minute)).To(Equal(dlq.OutcomeAlreadyRequeued))
				Expect(f.counts()).To(Equal(queue.Counts{Queued: 1}))
				Expect(f.get("j1").Requeues).To(Equal(1))
				Expect(f.take()).To(BeEmpty())
				// Still AlreadyRequeued after the job succeeded: a retried
				// call must not run it twice.
				j, l := f.dequeue(job.DefaultQueue, 3*time.Minute)
				j.Attempts++ // the extra attempt, which succeeded
				Expect(f.q.Ack(f.ctx, l, j, at(3*time.Minute))).To(Succeed())
				Expect(f.requeue("j1", oneMore, 4*time.Minute)).To(Equal(dlq.OutcomeAlreadyRequeued))
				Expect(f.counts()).To(Equal(queue.Counts{}))
			})

			It("answers NotFound for an unknown ID", func() {
				Expect(f.requeue("nobody", oneMore, 0)).To(Equal(dlq.OutcomeNotFound))
				Expect(f.counts()).To(Equal(queue.Counts{}))
				Expect(f.take()).To(BeEmpty())
			})

			It("answers Busy while a job with that ID is queued or in flight, and requeues it once it is gone", func() {
				f.enqueue(newJob("j1"), 0)
				f.add(deadEntry(newJob("j1"), T0), 0) // an import of a job that is live
				f.take()
				Expect(f.requeue("j1", oneMore, time.Second)).To(Equal(dlq.OutcomeBusy))
				j, l := f.dequeue(job.DefaultQueue, 2*time.Second)
				Expect(f.requeue("j1", oneMore, 3*time.Second)).To(Equal(dlq.OutcomeBusy))
				Expect(f.get("j1").Status).To(Equal(dlq.Failed))
				Expect(f.counts()).To(Equal(queue.Counts{InFlight: 1}))
				j.Attempts++
				Expect(f.q.Ack(f.ctx, l, j, at(4*time.Second))).To(Succeed())
				f.take()
				Expect(f.requeue("j1", oneMore, 5*time.Second)).To(Equal(dlq.OutcomeRequeued))
				Expect(f.counts()).To(Equal(queue.Counts{Queued: 1}))
			})

			It("answers Busy while the job waits for a retry or in the fallback queue", func() {
				f.enqueue(newJob("s1"), 0)
				f.enqueue(newJob("f1"), 0)
				j, l := f.dequeue(job.DefaultQueue, 0)
				Expect(f.q.Retry(f.ctx, l, j, at(time.Hour), T0)).To(Succeed())
				j, l = f.dequeue(job.DefaultQueue, 0)
				Expect(f.q.Divert(f.ctx, l, j, T0)).To(Succeed())
				f.add(deadEntry(newJob("s1"), T0), 0)
				f.add(deadEntry(newJob("f1"), T0), 0)
				Expect(f.requeue("s1", oneMore, time.Second)).To(Equal(dlq.OutcomeBusy))
				Expect(f.requeue("f1", oneMore, time.Second)).To(Equal(dlq.OutcomeBusy))
				Expect(f.counts()).To(Equal(queue.Counts{Scheduled: 1, Fallback: 1}))
			})

			It("answers NotRequeueable for a deleted entry until it is restored", func() {
				f.kill(newJob("j1"), time.Second, deadEntry(newJob("j1"), at(time.Second)))
				Expect(f.d.Delete(f.ctx, "j1", "ops", at(time.Minute))).To(Succeed())
				f.take()
				Expect(f.requeue("j1", oneMore, 2*time.Minute)).To(Equal(dlq.OutcomeNotRequeueable))
				Expect(f.counts()).To(Equal(queue.Counts{}))
				Expect(f.take()).To(BeEmpty())
				Expect(f.d.Restore(f.ctx, "j1", "ops", at(3*time.Minute))).To(Succeed())
				Expect(f.requeue("j1", oneMore, 4*time.Minute)).To(Equal(dlq.OutcomeRequeued))
			})

			It("lets only an operator requeue a quarantined entry", func() {
				f.kill(newJob("j1"), time.Second, deadEntry(newJob("j1"), at(time.Second)))
				Expect(f.d.Quarantine(f.ctx, "j1", "poison", at(time.Minute))).To(Succeed())
				auto := dlq.RequeueOptions{Budget: dlq.OneMoreAttempt, By: "auto-retry", Auto: true}
				Expect(f.requeue("j1", auto, 2*time.Minute)).To(Equal(dlq.OutcomeNotRequeueable))
				Expect(f.get("j1").Status).To(Equal(dlq.Quarantined))
				Expect(f.requeue("j1", oneMore, 3*time.Minute)).To(Equal(dlq.OutcomeRequeued))
				e := f.get("j1")
				Expect(e.Status).To(Equal(dlq.Requeued))
				Expect(changes(e)[2:]).To(Equal([]string{change(dlq.Quarantined, dlq.Requeued, 3*time.Minute)}))
			})

			It("counts the auto-retry's requeues", func() {
				f.kill(newJob("j1"), time.Second, deadEntry(newJob("j1"), at(time.Second)))
				auto := dlq.RequeueOptions{Budget: dlq.OneMoreAttempt, By: "auto-retry", Auto: true}
				Expect(f.requeue("j1", auto, time.Minute)).To(Equal(dlq.OutcomeRequeued))
				e := f.get("j1")
				Expect(e.Requeues).To(Equal(1))
				Expect(e.AutoRetries).To(Equal(1))
				Expect(e.Changes[len(e.Changes)-1].By).To(Equal("auto-retry"))
			})

			It("refuses a requeue that states no budget, changing nothing", func() {
				f.kill(newJob("j1"), time.Second, deadEntry(newJob("j1"), at(time.Second)))
				f.take()
				_, err := f.d.Requeue(f.ctx, "j1", dlq.RequeueOptions{By: "ops"}, at(time.Minute))
				Expect(err).To(HaveOccurred())
				_, err = f.d.RequeueMatching(f.ctx, dlq.Filter{}, dlq.RequeueOptions{By: "ops"}, at(time.Minute), false)
				Expect(err).To(HaveOccurred())
				Expect(f.get("j1").Status).To(Equal(dlq.Failed))
				Expect(f.counts()).To(Equal(queue.Counts{}))
				Expect(f.take()).To(BeEmpty())
			})

			It("carries the idempotency key from the first attempt through dead-letter, requeue and dequeue", func() {
				j := newJob("pay-1")
				j.IdempotencyKey = "charge-7f3a"
				j.KeyRecordedAt = at(-time.Second)
				f.enqueue(j, 0)
				got, l := f.dequeue(job.DefaultQueue, 0)
				got.Attempts = 1
				got.FirstAttemptAt = T0
				_, err := f.d.DeadLetter(f.ctx, l, deadEntry(got, at(time.Second)), at(time.Second))
				Expect(err).NotTo(HaveOccurred())
				Expect(f.get("pay-1").Job.IdempotencyKey).To(Equal("charge-7f3a"))
				Expect(f.requeue("pay-1", reset, time.Minute)).To(Equal(dlq.OutcomeRequeued))
				again, l := f.dequeue(job.DefaultQueue, 2*time.Minute)
				Expect(again.IdempotencyKey).To(Equal("charge-7f3a"))
				Expect(again.KeyRecordedAt).To(BeTemporally("==", j.KeyRecordedAt))
				Expect(again.FirstAttemptAt).To(BeTemporally("==", T0))
				again.Attempts = 1
				_, err = f.d.DeadLetter(f.ctx, l, deadEntry(again, at(3*time.Minute)), at(3*time.Minute))
				Expect(err).NotTo(HaveOccurred())
				Expect(f.requeue("pay-1", dlq.RequeueOptions{Queue: "manual", Budget: dlq.OneMoreAttempt}, 4*time.Minute)).To(Equal(dlq.OutcomeRequeued))
				third, _ := f.dequeue("manual", 5*time.Minute)
				Expect(third.IdempotencyKey).To(Equal("charge-7f3a"))
				Expect(third.KeyRecordedAt).To(BeTemporally("==", j.KeyRecordedAt))
			})
		})

		Describe("RequeueMatching", func() {
			// addAt adds a failed entry for id of the given severity at T0+d.
			addAt := func(id string, sev classify.Severity, d time.Duration) {
				GinkgoHelper()
				j := newJob(id)
				j.Attempts = 2
				f.add(failing(j, at(d), sev, classify.Transient, "*net.OpError"), d)
			}

			It("requeues every Failed entry matching the filter, oldest first, and says so", func() {
				addAt("m3", classify.Low, 3*time.Minute)
				addAt("m1", classify.Medium, time.Minute)
				addAt("m2", classify.High, 2*time.Minute)
				addAt("m0", classify.Low, time.Minute) // ties with m1: the lower ID first
				addAt("gone", classify.Low, 0)
				Expect(f.d.Delete(f.ctx, "gone", "ops", at(4*time.Minute))).To(Succeed())
				f.take()

				r, err := f.d.RequeueMatching(f.ctx, dlq.Filter{}, oneMore, at(time.Hour), false)
				Expect(err).NotTo(HaveOccurred())
				Expect(r.DryRun).To(BeFalse())
				Expect(r.Matched).To(Equal(4))
				Expect(r.Requeued).To(Equal(4))
				Expect(r.Skipped).To(BeZero())
				Expect(r.Batches).To(BeNumerically(">=", 1))
				Expect(f.take()).To(Equal([]string{
					ev("m0", dead, queued, disposition.Requeued, time.Hour, 2),
					ev("m1", dead, queued, disposition.Requeued, time.Hour, 2),
					ev("m2", dead, queued, disposition.Requeued, time.Hour, 2),
					ev("m3", dead, queued, disposition.Requeued, time.Hour, 2),
				}))
				Expect(f.drainIDs(job.DefaultQueue, time.Hour)).To(Equal([]string{"m0", "m1", "m2", "m3"}))
				Expect(f.get("m1").Status).To(Equal(dlq.Requeued))
				Expect(f.get("gone").Status).To(Equal(dlq.Deleted))

				r, err = f.d.RequeueMatching(f.ctx, dlq.Filter{}, oneMore, at(2*time.Hour), false)
				Expect(err).NotTo(HaveOccurred())
				Expect(r.Matched).To(BeZero())
				Expect(r.Requeued).To(BeZero())
			})

			It("requeues by filter: reprocessed 1 medium-severity job", func() {
				addAt("low", classify.Low, time.Minute)
				addAt("medium", classify.Medium, time.Minute)
				addAt("high", classify.High, time.Minute)
				r, err := f.d.RequeueMatching(f.ctx, dlq.Filter{Severities: []classify.Severity{classify.Medium}}, reset, at(time.Hour), false)
				Expect(err).NotTo(HaveOccurred())
				Expect(r.Matched).To(Equal(1))
				Expect(r.Requeued).To(Equal(1))
				j, _ := f.dequeue(job.DefaultQueue, time.Hour)
				Expect(j.ID).To(Equal("medium"))
				Expect(j.Attempts).To(BeZero())
				expectMap(f.stats().ByStatus, map[string]int{"failed": 2, "requeued": 1}, "ByStatus")
			})

			It("counts on a dry run and changes nothing", func() {
				addAt("a", classify.Low, time.Minute)
				addAt("b", classify.Medium, 2*time.Minute)
				addAt("c", classify.Medium, 3*time.Minute)
				f.take()
				r, err := f.d.RequeueMatching(f.ctx, dlq.Filter{Severities: []classify.Severity{classify.Medium}}, oneMore, at(time.Hour), true)
				Expect(err).NotTo(HaveOccurred())
				Expect(r.DryRun).To(BeTrue())
				Expect(r.Matched).To(Equal(2))
				Expect(r.Requeued).To(BeZero())
				Expect(f.counts()).To(Equal(queue.Counts{}))
				expectMap(f.stats().ByStatus, map[string]int{"failed": 3}, "ByStatus")
				Expect(f.take()).To(BeEmpty())
			})

			It("leaves entries whose last failure is not before the cut-off", func() {
				addAt("before", classify.Low, time.Minute-time.Millisecond)
				addAt("at", classify.Low, time.Minute)
				addAt("after", classify.Low, 2*time.Minute)
				r, err := f.d.RequeueMatching(f.ctx, dlq.Filter{}, oneMore, at(time.Minute), true)
				Expect(err).NotTo(HaveOccurred())
				Expect(r.Matched).To(Equal(1))
				r, err = f.d.RequeueMatching(f.ctx, dlq.Filter{}, oneMore, at(time.Minute), false)
				Expect(err).NotTo(HaveOccurred())
				Expect(r.Matched).To(Equal(1))
				Expect(r.Requeued).To(Equal(1))
				Expect(f.get("before").Status).To(Equal(dlq.Requeued))
				Expect(f.get("at").Status).To(Equal(dlq.Failed))
				Expect(f.get("after").Status).To(Equal(dlq.Failed))
			})

			It("skips an entry whose job is busy and counts it", func() {
				addAt("free", classify.Low, time.Minute)
				f.enqueue(newJob("busy"), 0)
				addAt("busy", classify.Low, time.Minute)
				r, err := f.d.RequeueMatching(f.ctx, dlq.Filter{}, oneMore, at(time.Hour), false)
				Expect(err).NotTo(HaveOccurred())
				Expect(r.Matched).To(Equal(2))
				Expect(r.Requeued).To(Equal(1))
				Expect(r.Skipped).To(Equal(1))
				Expect(f.get("busy").Status).To(Equal(dlq.Failed))
				Expect(f.counts()).To(Equal(queue.Counts{Queued: 2}))
			})

			It("picks quarantined entries only when the filter asks for them and an operator runs it", func() {
				addAt("failed", classify.Low, time.Minute)
				addAt("poison", classify.Low, time.Minute)
				Expect(f.d.Quarantine(f.ctx, "poison", "poison", at(2*time.Minute))).To(Succeed())
				both := dlq.Filter{Statuses: []dlq.Status{dlq.Failed, dlq.Quarantined}}
				auto := dlq.RequeueOptions{Budget: dlq.OneMoreAttempt, By: "auto-retry", Auto: true}

				r, err := f.d.RequeueMatching(f.ctx, dlq.Filter{}, oneMore, at(time.Hour), true)
				Expect(err).NotTo(HaveOccurred())
				Expect(r.Matched).To(Equal(1), "the zero filter picks Failed entries only")
				r, err = f.d.RequeueMatching(f.ctx, both, auto, at(time.Hour), true)
				Expect(err).NotTo(HaveOccurred())
				Expect(r.Matched).To(Equal(1), "the auto-retry never picks quarantined entries")
				r, err = f.d.RequeueMatching(f.ctx, dlq.Filter{Statuses: []dlq.Status{dlq.Quarantined}}, oneMore, at(time.Hour), false)
				Expect(err).NotTo(HaveOccurred())
				Expect(r.Matched).To(Equal(1))
				Expect(r.Requeued).To(Equal(1))
				Expect(f.get("poison").Status).To(Equal(dlq.Requeued))
				Expect(f.get("failed").Status).To(Equal(dlq.Failed))
			})

			When("BatchSize is 10", func() {
				BeforeEach(func() { cfg.BatchSize = 10 })

				It("requeues 25 entries in at least 3 bounded steps", func() {
					for i := range 25 {
						addAt(fmt.Sprintf("b%02d", i), classify.Low, time.Duration(i)*time.Second)
					}
					r, err := f.d.RequeueMatching(f.ctx, dlq.Filter{}, oneMore, at(time.Hour), false)
					Expect(err).NotTo(HaveOccurred())
					Expect(r.Matched).To(Equal(25))
					Expect(r.Requeued).To(Equal(25))
					Expect(r.Batches).To(BeNumerically(">=", 3))
					Expect(f.counts()).To(Equal(queue.Counts{Queued: 25}))
				})
			})

			It("requeues each of 10,000 entries exactly once when two runs race over them", Label("slow"), func() {
				const n = 10_000
				for i := range n {
					j := newJob(fmt.Sprintf("race-%05d", i))
					f.add(deadEntry(j, at(time.Duration(i)*time.Millisecond)), time.Duration(i)*time.Millisecond)
				}
				f.take()
				before := len(f.allEvents())
				var (
					wg      sync.WaitGroup
					results [2]dlq.BulkResult
					errs    [2]error
				)
				for g := range 2 {
					wg.Go(func() {
						defer GinkgoRecover()
						results[g], errs[g] = f.d.RequeueMatching(context.Background(), dlq.Filter{}, oneMore, at(time.Hour), false)
					})
				}
				wg.Wait()
				Expect(errs[0]).NotTo(HaveOccurred())
				Expect(errs[1]).NotTo(HaveOccurred())
				Expect(results[0].Requeued+results[1].Requeued).To(Equal(n), "%+v", results)
				for _, r := range results {
					Expect(r.Matched).To(BeNumerically("<=", n))
					Expect(r.Requeued + r.Skipped).To(BeNumerically("<=", r.Matched))
				}
				Expect(f.counts()).To(Equal(queue.Counts{Queued: n}))
				st := f.stats()
				expectMap(st.ByStatus, map[string]int{"requeued": n}, "ByStatus")

				events := f.allEvents()[before:]
				Expect(events).To(HaveLen(n))
				ids := map[string]bool{}
				for _, e := range events {
					if e.Reason != disposition.Requeued || ids[e.JobID] {
						Fail(fmt.Sprintf("event %v: want each job requeued once", e))
					}
					ids[e.JobID] = true
				}
				dequeued := map[string]bool{}
				for {
					j, _, ok, err := f.q.Dequeue(f.ctx, job.DefaultQueue, at(2*time.Hour), TTL)
					Expect(err).NotTo(HaveOccurred())
					if !ok {
						break
					}
					if dequeued[j.ID] {
						Fail(fmt.Sprintf("job %s dequeued twice: it was requeued twice", j.ID))
					}
					dequeued[j.ID] = true
				}
				Expect(dequeued).To(HaveLen(n))
			})
		})

		Describe("Delete, Restore and Quarantine", func() {
			JustBeforeEach(func() {
				f.kill(newJob("j1"), time.Second, deadEntry(newJob("j1"), at(time.Second)))
				f.take()
			})

			It("soft-deletes an entry and restores it to Failed", func() {
				Expect(f.d.Delete(f.ctx, "j1", "alice", at(time.Minute))).To(Succeed())
				e := f.get("j1")
				Expect(e.Status).To(Equal(dlq.Deleted))
				Expect(e.Changes[len(e.Changes)-1].By).To(Equal("alice"))
				Expect(f.d.Delete(f.ctx, "j1", "alice", at(2*time.Minute))).To(MatchError(dlq.ErrWrongStatus))
				Expect(f.d.Restore(f.ctx, "j1", "bob", at(3*time.Minute))).To(Succeed())
				e = f.get("j1")
				Expect(e.Status).To(Equal(dlq.Failed))
				Expect(changes(e)).To(Equal([]string{
					change(0, dlq.Failed, time.Second),
					change(dlq.Failed, dlq.Deleted, time.Minute),
					change(dlq.Deleted, dlq.Failed, 3*time.Minute),
				}))
				Expect(e.Changes[2].By).To(Equal("bob"))
				Expect(f.d.Restore(f.ctx, "j1", "bob", at(4*time.Minute))).To(MatchError(dlq.ErrWrongStatus))
				Expect(f.take()).To(BeEmpty(), "no job moved")
			})

			It("restores a deleted quarantined entry to Quarantined", func() {
				Expect(f.d.Quarantine(f.ctx, "j1", "poison", at(time.Minute))).To(Succeed())
				Expect(f.d.Delete(f.ctx, "j1", "alice", at(2*time.Minute))).To(Succeed())
				Expect(f.d.Restore(f.ctx, "j1", "alice", at(3*time.Minute))).To(Succeed())
				Expect(f.get("j1").Status).To(Equal(dlq.Quarantined))
			})

			It("quarantines a Failed entry with its reason", func() {
				Expect(f.d.Quarantine(f.ctx, "j1", "failed 3 auto-retries", at(time.Minute))).To(Succeed())
				e := f.get("j1")
				Expect(e.Status).To(Equal(dlq.Quarantined))
				Expect(e.Changes[len(e.Changes)-1].Reason).To(Equal("failed 3 auto-retries"))
				Expect(changes(e)[1]).To(Equal(change(dlq.Failed, dlq.Quarantined, time.Minute)))
				Expect(f.d.Quarantine(f.ctx, "j1", "again", at(2*time.Minute))).To(MatchError(dlq.ErrWrongStatus))
				st := f.stats()
				expectMap(st.ByStatus, map[string]int{"quarantined": 1}, "ByStatus")
				Expect(st.Oldest.IsZero()).To(BeTrue(), "Oldest looks at Failed entries only")
				Expect(f.take()).To(BeEmpty())
			})

			It("refuses every status change of a requeued entry with ErrWrongStatus", func() {
				Expect(f.requeue("j1", oneMore, time.Minute)).To(Equal(dlq.OutcomeRequeued))
				Expect(f.d.Delete(f.ctx, "j1", "ops", at(2*time.Minute))).To(MatchError(dlq.ErrWrongStatus))
				Expect(f.d.Restore(f.ctx, "j1", "ops", at(2*time.Minute))).To(MatchError(dlq.ErrWrongStatus))
				Expect(f.d.Quarantine(f.ctx, "j1", "x", at(2*time.Minute))).To(MatchError(dlq.ErrWrongStatus))
				Expect(f.get("j1").Status).To(Equal(dlq.Requeued))
			})

			It("reports an unknown ID with ErrNotFound", func() {
				Expect(f.d.Delete(f.ctx, "nobody", "ops", T0)).To(MatchError(dlq.ErrNotFound))
				Expect(f.d.Restore(f.ctx, "nobody", "ops", T0)).To(MatchError(dlq.ErrNotFound))
				Expect(f.d.Quarantine(f.ctx, "nobody", "x", T0)).To(MatchError(dlq.ErrNotFound))
			})
		})

		Describe("Purge", func() {
			JustBeforeEach(func() {
				for i, id := range []string{"a", "b", "c", "d", "e", "f"} {
					d := time.Duration(i+1) * time.Minute
					f.add(deadEntry(newJob(id), at(d)), d)
				}
				Expect(f.requeue("d", oneMore, 10*time.Minute)).To(Equal(dlq.OutcomeRequeued))
				Expect(f.d.Delete(f.ctx, "e", "ops", at(10*time.Minute))).To(Succeed())
				Expect(f.d.Quarantine(f.ctx, "f", "poison", at(10*time.Minute))).To(Succeed())
				f.take()
			})

			It("removes the entries of every status that last failed before the age, and reports the dead jobs leaving", func() {
				n, err := f.d.Purge(f.ctx, at(3*time.Minute), at(time.Hour))
				Expect(err).NotTo(HaveOccurred())
				Expect(n).To(Equal(2), "a and b; c failed at the bound, not before it")
				f.expectGone("a")
				f.expectGone("b")
				f.get("c")

				n, err = f.d.Purge(f.ctx, at(5*time.Minute), at(2*time.Hour))
				Expect(err).NotTo(HaveOccurred())
				Expect(n).To(Equal(2), "c, and d (requeued)")
				n, err = f.d.Purge(f.ctx, at(time.Hour), at(3*time.Hour))
				Expect(err).NotTo(HaveOccurred())
				Expect(n).To(Equal(2), "e (deleted) and f (quarantined)")
				Expect(f.stats().Total).To(BeZero())
				Expect(f.take()).To(Equal([]string{
					ev("a", dead, none, ReasonPurged, time.Hour, 0),
					ev("b", dead, none, ReasonPurged, time.Hour, 0),
					ev("c", dead, none, ReasonPurged, 2*time.Hour, 0),
					ev("e", dead, none, ReasonPurged, 3*time.Hour, 0),
					ev("f", dead, none, ReasonPurged, 3*time.Hour, 0),
				}))
				Expect(f.counts()).To(Equal(queue.Counts{Queued: 1}), "the requeued job is untouched")
			})

			It("purges nothing when nothing is that old", func() {
				n, err := f.d.Purge(f.ctx, at(time.Minute), at(time.Hour))
				Expect(err).NotTo(HaveOccurred())
				Expect(n).To(BeZero())
				Expect(f.stats().Total).To(Equal(6))
			})

			When("BatchSize is 4", func() {
				BeforeEach(func() { cfg.BatchSize = 4 })

				It("purges more entries than a batch", func() {
					for i := range 20 {
						f.add(deadEntry(newJob(fmt.Sprintf("x%02d", i)), T0), 0)
					}
					n, err := f.d.Purge(f.ctx, at(time.Hour), at(time.Hour))
					Expect(err).NotTo(HaveOccurred())
					Expect(n).To(Equal(26))
					Expect(f.stats().Total).To(BeZero())
				})
			})
		})

		Describe("Hold", func() {
			It("parks a leased job with its decided dead letter, fenced by the lease, and FlushHeld writes it with its failure time", func() {
				j := newJob("j1")
				f.enqueue(j, 0)
				got, l := f.dequeue(job.DefaultQueue, time.Second)
				got.Attempts = 1
				e := deadEntry(got, at(time.Second))
				e.LastFailedAt = at(time.Second)
				f.take()
				Expect(f.d.Hold(f.ctx, l, e, at(2*time.Second))).To(Succeed())
				Expect(f.counts()).To(Equal(queue.Counts{Held: 1}))
				Expect(f.take()).To(Equal([]string{ev("j1", inFlight, disposition.Held, disposition.HeldBack, 2*time.Second, 1)}))
				f.expectGone("j1")
				Expect(f.d.Hold(f.ctx, l, e, at(2*time.Second))).To(MatchError(queue.ErrLeaseLost), "a retried hold is fenced")
				_, err := f.d.DeadLetter(f.ctx, l, e, at(2*time.Second))
				Expect(err).To(MatchError(queue.ErrLeaseLost))
				Expect(f.stats().Rejected).To(BeZero(), "a hold is no overflow")

				res, err := f.d.FlushHeld(f.ctx, at(time.Minute), 100)
				Expect(err).NotTo(HaveOccurred())
				Expect(res).To(Equal(dlq.FlushResult{Written: []string{"j1"}}))
				Expect(f.take()).To(Equal([]string{ev("j1", disposition.Held, dead, disposition.DeadLetter, time.Minute, 1)}))
				Expect(f.counts()).To(Equal(queue.Counts{}))
				stored := f.get("j1")
				Expect(stored.LastFailedAt).To(BeTemporally("==", at(time.Second)), "the failure's time, not the write's")
				Expect(stored.Status).To(Equal(dlq.Failed))
				Expect(changes(stored)).To(Equal([]string{change(0, dlq.Failed, time.Minute)}))
				res, err = f.d.FlushHeld(f.ctx, at(time.Minute), 100)
				Expect(err).NotTo(HaveOccurred())
				Expect(res).To(Equal(dlq.FlushResult{}))
			})

			It("refuses a stale lease and writes nothing", func() {
				f.enqueue(newJob("j1"), 0)
				j, l := f.dequeue(job.DefaultQueue, 0)
				Expect(f.q.Ack(f.ctx, l, j, at(time.Second))).To(Succeed())
				Expect(f.d.Hold(f.ctx, l, deadEntry(j, at(time.Second)), at(time.Second))).To(MatchError(queue.ErrLeaseLost))
				Expect(f.counts()).To(Equal(queue.Counts{}))
			})

			It("merges a held dead letter with the entry its job had from an earlier death", func() {
				j := newJob("j1")
				f.kill(j, 0, deadEntry(j, at(0)))
				Expect(f.requeue("j1", oneMore, time.Second)).To(Equal(dlq.OutcomeRequeued))
				got, l := f.dequeue(job.DefaultQueue, 2*time.Second)
				got.Attempts = 1
				e := deadEntry(got, at(2*time.Second))
				e.LastFailedAt = at(2 * time.Second)
				Expect(f.d.Hold(f.ctx, l, e, at(2*time.Second))).To(Succeed())
				Expect(f.requeue("j1", oneMore, 3*time.Second)).To(Equal(dlq.OutcomeAlreadyRequeued), "held: not requeued twice")
				_, err := f.d.FlushHeld(f.ctx, at(time.Minute), 10)
				Expect(err).NotTo(HaveOccurred())
				stored := f.get("j1")
				Expect(stored.History).To(HaveLen(2))
				Expect(stored.Status).To(Equal(dlq.Failed))
				Expect(stored.LastFailedAt).To(BeTemporally("==", at(2*time.Second)))
			})

			When("the policy is EvictOldest", func() {
				BeforeEach(func() {
					cfg.DLQCapacity = 1
					cfg.Overflow = store.EvictOldest
				})

				It("evicts to make room for a held dead letter as it writes it", func() {
					f.kill(newJob("a"), 0, deadEntry(newJob("a"), at(0)))
					f.enqueue(newJob("b"), time.Second)
					j, l := f.dequeue(job.DefaultQueue, time.Second)
					Expect(f.d.Hold(f.ctx, l, deadEntry(j, at(time.Second)), at(time.Second))).To(Succeed())
					res, err := f.d.FlushHeld(f.ctx, at(time.Minute), 10)
					Expect(err).NotTo(HaveOccurred())
					Expect(res).To(Equal(dlq.FlushResult{Written: []string{"b"}, Evicted: []string{"a"}}))
					f.expectGone("a")
					Expect(f.stats().Evicted).To(Equal(1))
				})
			})
		})

		Describe("capacity", func() {
			// fill adds n entries, i failing at T0+i minutes.
			fill := func(ids ...string) {
				GinkgoHelper()
				for i, id := range ids {
					d := time.Duration(i) * time.Minute
					f.add(deadEntry(newJob(id), at(d)), d)
				}
			}

			When("the policy is Reject", func() {
				BeforeEach(func() {
					cfg.DLQCapacity = 2
					cfg.Overflow = store.Reject
				})

				It("refuses a new entry with ErrFull, writes nothing, and reports the overflow", func() {
					fill("a", "b")
					f.take()
					_, err := f.d.Add(f.ctx, deadEntry(newJob("c"), at(time.Hour)), at(time.Hour))
					Expect(err).To(MatchError(dlq.ErrFull))
					f.expectGone("c")
					st := f.stats()
					Expect(st.Total).To(Equal(2))
					Expect(st.Rejected).To(Equal(1))
					Expect(st.Evicted).To(BeZero())
					Expect(f.take()).To(BeEmpty())
					ov := f.rec.Overflows()
					Expect(ov).To(HaveLen(1))
					Expect(ov[0].Policy).To(Equal(store.Reject))
					Expect(ov[0].JobID).To(Equal("c"))
					Expect(ov[0].Capacity).To(Equal(2))
					Expect(ov[0].At).To(BeTemporally("==", at(time.Hour)))
					Expect(ov[0].Evicted).To(BeEmpty())
					Expect(ov[0].Namespace).NotTo(BeEmpty())
				})

				It("parks a dead letter it refuses in the held set in the same step, with its entry, and reports the overflow", func() {
					fill("a", "b")
					j := newJob("c")
					f.enqueue(j, time.Hour)
					got, l := f.dequeue(job.DefaultQueue, time.Hour)
					f.take()
					got.Attempts = 1
					e := deadEntry(got, at(time.Hour))
					e.LastFailedAt = at(time.Hour)
					r, err := f.d.DeadLetter(f.ctx, l, e, at(time.Hour))
					Expect(err).NotTo(HaveOccurred())
					Expect(r).To(Equal(dlq.AddResult{Held: true}))
					f.expectGone("c")
					Expect(f.counts()).To(Equal(queue.Counts{Held: 1}), "held, no longer in flight: it can never be recovered and run again")
					Expect(f.take()).To(Equal([]string{ev("c", inFlight, disposition.Held, disposition.HeldBack, time.Hour, 1)}))
					st := f.stats()
					Expect(st.Rejected).To(Equal(1))
					Expect(st.Held).To(Equal(1))
					Expect(st.HeldOldest).To(BeTemporally("==", at(time.Hour)))
					Expect(st.Total).To(Equal(2), "a held job is not in the DLQ")
					ov := f.rec.Overflows()
					Expect(ov).To(HaveLen(1))
					Expect(ov[0].JobID).To(Equal("c"))
					Expect(ov[0].Held).To(BeTrue())

					By("the old lease is dead: no heartbeat, no completion, no recovery")
					_, err = f.q.Heartbeat(f.ctx, l, at(time.Hour), TTL)
					Expect(err).To(MatchError(queue.ErrLeaseLost))
					Expect(f.q.Ack(f.ctx, l, got, at(time.Hour))).To(MatchError(queue.ErrLeaseLost))
					n, err := f.q.RecoverExpired(f.ctx, at(time.Hour+2*TTL), 100)
					Expect(err).NotTo(HaveOccurred())
					Expect(n).To(BeZero())
					Expect(f.q.Enqueue(f.ctx, newJob("c"), at(time.Hour))).To(MatchError(queue.ErrDuplicate))
					_, ok, err := dequeueAny(f, time.Hour+2*TTL)
					Expect(err).NotTo(HaveOccurred())
					Expect(ok).To(BeFalse(), "a held job is never leased again")
				})

				It("refuses a dead letter with ErrFull and ErrHeldFull, leaving it in flight, once the held set is at its bound", func() {
					fill("a", "b")
					for _, id := range []string{"c", "d", "e"} {
						f.enqueue(newJob(id), time.Hour)
					}
					for range 2 {
						j, l := f.dequeue(job.DefaultQueue, time.Hour)
						e := deadEntry(j, at(time.Hour))
						e.LastFailedAt = at(time.Hour)
						r, err := f.d.DeadLetter(f.ctx, l, e, at(time.Hour))
						Expect(err).NotTo(HaveOccurred())
						Expect(r.Held).To(BeTrue())
					}
					je, le := f.dequeue(job.DefaultQueue, time.Hour)
					f.take()
					_, err := f.d.DeadLetter(f.ctx, le, deadEntry(je, at(time.Hour)), at(time.Hour))
					Expect(err).To(MatchError(dlq.ErrFull))
					Expect(err).To(MatchError(dlq.ErrHeldFull))
					Expect(f.counts()).To(Equal(queue.Counts{InFlight: 1, Held: 2}), "the held set is bounded by the DLQ's capacity by default")
					Expect(f.take()).To(BeEmpty())
					Expect(f.stats().Rejected).To(Equal(3))
					ov := f.rec.Overflows()
					Expect(ov).To(HaveLen(3))
					Expect(ov[2].Held).To(BeFalse())
					Expect(f.d.Hold(f.ctx, le, deadEntry(je, at(time.Hour)), at(time.Hour))).To(MatchError(dlq.ErrHeldFull))
					je.Attempts++
					Expect(f.q.Ack(f.ctx, le, je, at(time.Hour))).To(Succeed(), "the lease is still the job's")
				})

				It("writes held dead letters once there is room, oldest first, with their failure times, and not before", func() {
					fill("a", "b")
					for i, id := range []string{"c", "d"} {
						d := time.Hour + time.Duration(i)*time.Second
						f.enqueue(newJob(id), d)
						j, l := f.dequeue(job.DefaultQueue, d)
						j.Attempts = 2
						e := deadEntry(j, at(d))
						e.LastFailedAt = at(d)
						r, err := f.d.DeadLetter(f.ctx, l, e, at(d))
						Expect(err).NotTo(HaveOccurred())
						Expect(r.Held).To(BeTrue())
					}
					f.take()
					res, err := f.d.FlushHeld(f.ctx, at(2*time.Hour), 10)
					Expect(err).NotTo(HaveOccurred())
					Expect(res).To(Equal(dlq.FlushResult{Left: 2, Full: true}), "no room yet")
					Expect(f.stats().Rejected).To(Equal(2), "a held entry the DLQ still refuses is not counted again")
					Expect(f.rec.Overflows()).To(HaveLen(2))

					Expect(f.requeue("a", oneMore, 2*time.Hour)).To(Equal(dlq.OutcomeRequeued))
					f.take()
					res, err = f.d.FlushHeld(f.ctx, at(3*time.Hour), 10)
					Expect(err).NotTo(HaveOccurred())
					Expect(res).To(Equal(dlq.FlushResult{Written: []string{"c"}, Left: 1, Full: true}))
					Expect(f.take()).To(Equal([]string{ev("c", disposition.Held, dead, disposition.DeadLetter, 3*time.Hour, 2)}))
					c := f.get("c")
					Expect(c.Status).To(Equal(dlq.Failed))
					Expect(c.LastFailedAt).To(BeTemporally("==", at(time.Hour)), "the failure's time, not the write's")
					Expect(c.Job.Attempts).To(Equal(2))
					Expect(f.counts()).To(Equal(queue.Counts{Queued: 1, Held: 1}))
					st := f.stats()
					Expect(st.Held).To(Equal(1))
					Expect(st.HeldOldest).To(BeTemporally("==", at(time.Hour+time.Second)))

					Expect(f.d.Delete(f.ctx, "b", "ops", at(3*time.Hour))).To(Succeed())
					res, err = f.d.FlushHeld(f.ctx, at(4*time.Hour), 10)
					Expect(err).NotTo(HaveOccurred())
					Expect(res).To(Equal(dlq.FlushResult{Written: []string{"d"}}))
					Expect(f.get("d").LastFailedAt).To(BeTemporally("==", at(time.Hour+time.Second)))
					Expect(f.counts()).To(Equal(queue.Counts{Queued: 1}))
				})

				It("flushes a bounded batch", func() {
					fill("a", "b")
					for _, id := range []string{"c", "d"} {
						f.enqueue(newJob(id), time.Hour)
						j, l := f.dequeue(job.DefaultQueue, time.Hour)
						_, err := f.d.DeadLetter(f.ctx, l, deadEntry(j, at(time.Hour)), at(time.Hour))
						Expect(err).NotTo(HaveOccurred())
					}
					Expect(f.d.Delete(f.ctx, "a", "ops", at(time.Hour))).To(Succeed())
					Expect(f.d.Delete(f.ctx, "b", "ops", at(time.Hour))).To(Succeed())
					res, err := f.d.FlushHeld(f.ctx, at(time.Hour), 1)
					Expect(err).NotTo(HaveOccurred())
					Expect(res).To(Equal(dlq.FlushResult{Written: []string{"c"}, Left: 1}))
					res, err = f.d.FlushHeld(f.ctx, at(time.Hour), 0)
					Expect(err).NotTo(HaveOccurred())
					Expect(res).To(Equal(dlq.FlushResult{Left: 1}))
				})

				Describe("a new dead letter while dead letters are held", func() {
					// holdC fills the DLQ and parks c's dead letter in the
					// held set, failed at T0+1h.
					holdC := func() {
						GinkgoHelper()
						fill("a", "b")
						f.enqueue(newJob("c"), time.Hour)
						j, l := f.dequeue(job.DefaultQueue, time.Hour)
						e := deadEntry(j, at(time.Hour))
						e.LastFailedAt = at(time.Hour)
						r, err := f.d.DeadLetter(f.ctx, l, e, at(time.Hour))
						Expect(err).NotTo(HaveOccurred())
						Expect(r.Held).To(BeTrue())
					}

					It("does not take a freed slot ahead of them: the held ones are written first, oldest first, and it is parked behind them", func() {
						holdC()
						Expect(f.requeue("a", oneMore, 2*time.Hour)).To(Equal(dlq.OutcomeRequeued))
						ja, _ := f.dequeue(job.DefaultQueue, 2*time.Hour)
						Expect(ja.ID).To(Equal("a"), "the requeued job, leased again")
						f.enqueue(newJob("d"), 2*time.Hour)
						jd, ld := f.dequeue(job.DefaultQueue, 2*time.Hour)
						Expect(jd.ID).To(Equal("d"))
						f.take()

						r, err := f.d.DeadLetter(f.ctx, ld, deadEntry(jd, at(3*time.Hour)), at(3*time.Hour))
						Expect(err).NotTo(HaveOccurred())
						Expect(r).To(Equal(dlq.AddResult{Held: true}), "the slot was c's: d waits behind it")
						Expect(f.take()).To(Equal([]string{
							ev("c", disposition.Held, dead, disposition.DeadLetter, 3*time.Hour, 0),
							ev("d", inFlight, disposition.Held, disposition.HeldBack, 3*time.Hour, 0),
						}), "c's move first, as FlushHeld makes it")
						Expect(f.get("c").LastFailedAt).To(BeTemporally("==", at(time.Hour)))
						f.expectGone("d")
						st := f.stats()
						Expect(st.Held).To(Equal(1))
						Expect(st.HeldOldest).To(BeTemporally("==", at(3*time.Hour)))
						Expect(f.counts()).To(Equal(queue.Counts{InFlight: 1, Held: 1}))

						By("the next room is d's, not that of a dead letter after it")
						Expect(f.d.Delete(f.ctx, "b", "ops", at(4*time.Hour))).To(Succeed())
						_, err = f.d.Add(f.ctx, deadEntry(newJob("e"), at(4*time.Hour)), at(4*time.Hour))
						Expect(err).To(MatchError(dlq.ErrFull), "d took the room first")
						Expect(f.take()).To(Equal([]string{ev("d", disposition.Held, dead, disposition.DeadLetter, 4*time.Hour, 0)}))
						Expect(f.stats().Held).To(BeZero())
						f.expectGone("e")
					})

					It("is written after them when there is room for all, and an add waits the same way", func() {
						holdC()
						Expect(f.d.Delete(f.ctx, "a", "ops", at(2*time.Hour))).To(Succeed())
						Expect(f.d.Delete(f.ctx, "b", "ops", at(2*time.Hour))).To(Succeed())
						f.take()
						r := f.add(deadEntry(newJob("d"), at(3*time.Hour)), 3*time.Hour)
						Expect(r.Held).To(BeFalse())
						Expect(f.take()).To(Equal([]string{
							ev("c", disposition.Held, dead, disposition.DeadLetter, 3*time.Hour, 0),
							ev("d", disposition.None, dead, disposition.DeadLetter, 3*time.Hour, 0),
						}))
						Expect(f.get("d").Status).To(Equal(dlq.Failed))
						st := f.stats()
						Expect(st.Held).To(BeZero())
						Expect(st.Rejected).To(Equal(1), "c's refusal only")
						res, err := f.d.FlushHeld(f.ctx, at(3*time.Hour), 10)
						Expect(err).NotTo(HaveOccurred())
						Expect(res).To(Equal(dlq.FlushResult{}))
					})
				})

				It("parks or loses each of 200 dead letters racing their leases' recovery, never both: every job in exactly one place", func() {
					fill("a", "b")
					const n = 200
					leases := make([]queue.Lease, n)
					jobs := make([]job.Job, n)
					for i := range n {
						f.enqueue(newJob(fmt.Sprintf("r%03d", i)), time.Hour)
						jobs[i], leases[i] = f.dequeue(job.DefaultQueue, time.Hour)
					}
					f.take()
					late := at(time.Hour + 2*TTL) // every lease has expired
					var (
						wg     sync.WaitGroup
						parked atomic.Int64
						full   atomic.Int64
						lost   atomic.Int64
					)
					for i := range n {
						wg.Go(func() {
							defer GinkgoRecover()
							r, err := f.d.DeadLetter(context.Background(), leases[i], deadEntry(jobs[i], late), late)
							switch {
							case err == nil && r.Held:
								parked.Add(1)
							case errors.Is(err, dlq.ErrHeldFull):
								full.Add(1)
							case errors.Is(err, queue.ErrLeaseLost):
								lost.Add(1)
							default:
								Fail(fmt.Sprintf("DeadLetter(%s) = %+v, %v", jobs[i].ID, r, err))
							}
						})
					}
					wg.Go(func() {
						defer GinkgoRecover()
						for range n {
							_, err := f.q.RecoverExpired(context.Background(), late, 7)
							Expect(err).NotTo(HaveOccurred())
						}
					})
					wg.Wait()
					Expect(parked.Load()).To(BeNumerically("<=", 2), "the held set's bound")
					Expect(parked.Load() + full.Load() + lost.Load()).To(BeEquivalentTo(n))
					c := f.counts()
					Expect(c.Held).To(BeEquivalentTo(parked.Load()))
					Expect(c.Held+c.Queued+c.InFlight).To(Equal(n), "%+v", c)
					where := map[string]disposition.State{}
					for _, e := range f.allEvents()[f.seen:] {
						Expect(e.From).To(Equal(cmp.Or(where[e.JobID], inFlight)), "event %v: the job was elsewhere", e)
						where[e.JobID] = e.To
					}
					held := 0
					for _, st := range where {
						if st == disposition.Held {
							held++
						}
					}
					Expect(held).To(Equal(c.Held))
				})

				When("requeued and deleted entries count toward the capacity", func() {
					BeforeEach(func() { cfg.CountInactive = true })

					It("writes the oldest held dead letter first when its own entry already counts (it takes no room), then parks the new one", func() {
						fill("a", "b")
						Expect(f.requeue("a", oneMore, time.Hour)).To(Equal(dlq.OutcomeRequeued), "a's entry stays, and counts")
						ja, la := f.dequeue(job.DefaultQueue, time.Hour)
						Expect(ja.ID).To(Equal("a"))
						ja.Attempts = 1
						Expect(f.d.Hold(f.ctx, la, deadEntry(ja, at(time.Hour)), at(time.Hour))).To(Succeed())
						f.enqueue(newJob("d"), 2*time.Hour)
						jd, ld := f.dequeue(job.DefaultQueue, 2*time.Hour)
						f.take()

						r, err := f.d.DeadLetter(f.ctx, ld, deadEntry(jd, at(2*time.Hour)), at(2*time.Hour))
						Expect(err).NotTo(HaveOccurred())
						Expect(r).To(Equal(dlq.AddResult{Held: true}), "no room for d")
						Expect(f.take()).To(Equal([]string{
							ev("a", disposition.Held, dead, disposition.DeadLetter, 2*time.Hour, 1),
							ev("d", inFlight, disposition.Held, disposition.HeldBack, 2*time.Hour, 0),
						}), "a, written over its own entry, before d is parked")
						Expect(f.get("a").Status).To(Equal(dlq.Failed))
						Expect(f.counts()).To(Equal(queue.Counts{Held: 1}))
					})
				})

				When("HeldCapacity is 3", func() {
					BeforeEach(func() { cfg.HeldCapacity = 3 })

					It("bounds the held set by it instead of the DLQ's capacity", func() {
						fill("a", "b")
						held := 0
						for _, id := range []string{"c", "d", "e", "f"} {
							f.enqueue(newJob(id), time.Hour)
							j, l := f.dequeue(job.DefaultQueue, time.Hour)
							r, err := f.d.DeadLetter(f.ctx, l, deadEntry(j, at(time.Hour)), at(time.Hour))
							if err == nil && r.Held {
								held++
							}
						}
						Expect(held).To(Equal(3))
						Expect(f.counts()).To(Equal(queue.Counts{InFlight: 1, Held: 3}))
					})
				})
				It("extends an entry already counted without an overflow", func() {
					fill("a", "b")
					r := f.add(deadEntry(newJob("a"), at(time.Hour)), time.Hour)
					Expect(r.Created).To(BeFalse())
					Expect(f.stats().Rejected).To(BeZero())
					Expect(f.rec.Overflows()).To(BeEmpty())
				})

				It("does not count requeued and deleted entries by default", func() {
					fill("a", "b")
					Expect(f.requeue("a", oneMore, time.Hour)).To(Equal(dlq.OutcomeRequeued))
					f.add(deadEntry(newJob("c"), at(time.Hour)), time.Hour)
					Expect(f.d.Delete(f.ctx, "b", "ops", at(time.Hour))).To(Succeed())
					f.add(deadEntry(newJob("d"), at(time.Hour)), time.Hour)
					_, err := f.d.Add(f.ctx, deadEntry(newJob("e"), at(time.Hour)), at(time.Hour))
					Expect(err).To(MatchError(dlq.ErrFull))
					_, err = f.d.Add(f.ctx, deadEntry(newJob("a"), at(time.Hour)), at(time.Hour))
					Expect(err).To(MatchError(dlq.ErrFull), "a requeued entry that dies again needs room")
					Expect(f.get("a").Status).To(Equal(dlq.Requeued))
					Expect(f.stats().Total).To(Equal(4))
					Expect(f.stats().Rejected).To(Equal(2))
				})

				When("CountInactive is set", func() {
					BeforeEach(func() { cfg.CountInactive = true })

					It("counts requeued and deleted entries too", func() {
						fill("a", "b")
						Expect(f.requeue("a", oneMore, time.Hour)).To(Equal(dlq.OutcomeRequeued))
						_, err := f.d.Add(f.ctx, deadEntry(newJob("c"), at(time.Hour)), at(time.Hour))
						Expect(err).To(MatchError(dlq.ErrFull))
						Expect(f.d.Delete(f.ctx, "b", "ops", at(time.Hour))).To(Succeed())
						_, err = f.d.Add(f.ctx, deadEntry(newJob("c"), at(time.Hour)), at(time.Hour))
						Expect(err).To(MatchError(dlq.ErrFull))
						r := f.add(deadEntry(newJob("a"), at(time.Hour)), time.Hour)
						Expect(r.Created).To(BeFalse(), "a requeued entry that dies again is counted already")
						Expect(f.stats().Rejected).To(Equal(2))
					})
				})
			})

			When("the policy is EvictOldest", func() {
				BeforeEach(func() {
					cfg.DLQCapacity = 2
					cfg.Overflow = store.EvictOldest
				})

				It("evicts the oldest entry in the same step, and reports it", func() {
					fill("a", "b")
					f.take()
					r := f.add(deadEntry(newJob("c"), at(time.Hour)), time.Hour)
					Expect(r.Created).To(BeTrue())
					Expect(r.Evicted).To(Equal([]string{"a"}))
					f.expectGone("a")
					f.get("b")
					f.get("c")
					st := f.stats()
					Expect(st.Total).To(Equal(2))
					Expect(st.Evicted).To(Equal(1))
					Expect(st.Rejected).To(BeZero())
					Expect(f.take()).To(Equal([]string{
						ev("a", dead, none, disposition.Evicted, time.Hour, 0),
						ev("c", none, dead, disposition.DeadLetter, time.Hour, 0),
					}))
					ov := f.rec.Overflows()
					Expect(ov).To(HaveLen(1))
					Expect(ov[0].Policy).To(Equal(store.EvictOldest))
					Expect(ov[0].JobID).To(Equal("c"))
					Expect(ov[0].Evicted).To(Equal([]string{"a"}))
					Expect(ov[0].Capacity).To(Equal(2))
					Expect(ov[0].At).To(BeTemporally("==", at(time.Hour)))
				})

				It("evicts to make room for a dead-lettered job", func() {
					fill("a", "b")
					f.take()
					r := f.kill(newJob("c"), time.Hour, deadEntry(newJob("c"), at(time.Hour)))
					Expect(r.Evicted).To(Equal([]string{"a"}))
					Expect(f.take()).To(Equal([]string{
						ev("c", none, queued, disposition.Enqueued, time.Hour, 0),
						ev("c", queued, inFlight, disposition.Leased, time.Hour, 0),
						ev("a", dead, none, disposition.Evicted, time.Hour, 0),
						ev("c", inFlight, dead, disposition.DeadLetter, time.Hour, 0),
					}))
					Expect(f.counts()).To(Equal(queue.Counts{}))
					Expect(f.stats().Evicted).To(Equal(1))
				})

				It("judges age by the last failure, the lowest ID first among equal times", func() {
					fill("a", "b")
					f.add(deadEntry(newJob("a"), at(2*time.Hour)), 2*time.Hour) // a is now the newest
					r := f.add(deadEntry(newJob("c"), at(3*time.Hour)), 3*time.Hour)
					Expect(r.Evicted).To(Equal([]string{"b"}))
					f.add(deadEntry(newJob("y"), at(3*time.Hour)), 3*time.Hour) // evicts a
					r = f.add(deadEntry(newJob("z"), at(3*time.Hour)), 3*time.Hour)
					Expect(r.Evicted).To(Equal([]string{"c"}), "c and y failed at the same time")
					Expect(f.stats().Evicted).To(Equal(3))
				})

				It("evicts only counted entries, leaving requeued records alone by default", func() {
					fill("a", "b")
					Expect(f.requeue("a", oneMore, time.Hour)).To(Equal(dlq.OutcomeRequeued))
					r := f.add(deadEntry(newJob("c"), at(time.Hour)), time.Hour)
					Expect(r.Evicted).To(BeEmpty())
					r = f.add(deadEntry(newJob("d"), at(time.Hour)), time.Hour)
					Expect(r.Evicted).To(Equal([]string{"b"}))
					Expect(f.get("a").Status).To(Equal(dlq.Requeued))
				})

				When("CountInactive is set", func() {
					BeforeEach(func() { cfg.CountInactive = true })

					It("evicts a requeued record, which moves no job", func() {
						fill("a", "b")
						Expect(f.requeue("a", oneMore, time.Hour)).To(Equal(dlq.OutcomeRequeued))
						f.take()
						r := f.add(deadEntry(newJob("c"), at(time.Hour)), time.Hour)
						Expect(r.Evicted).To(Equal([]string{"a"}))
						Expect(f.take()).To(Equal([]string{ev("c", none, dead, disposition.DeadLetter, time.Hour, 0)}))
						Expect(f.counts()).To(Equal(queue.Counts{Queued: 1}), "the requeued job is untouched")
						Expect(f.stats().Evicted).To(Equal(1))
					})
				})
			})
		})

		Describe("corrupt entries", func() {
			newer := mustEncode(deadEntry(newJob("v2"), T0))
			newer = bytes.Replace(newer, []byte(`"version":1`), []byte(`"version":2`), 1)
			other := mustEncode(deadEntry(newJob("other"), T0))
			raws := []struct {
				id  string
				raw []byte
			}{
				{"garbage", []byte("{{{ not json")},
				{"empty", []byte{}},
				{"v2", newer},
				{"unversioned", []byte(`{"job":{"id":"unversioned","task":"charge"},"status":"failed"}`)},
				{"misfiled", other},
			}

			JustBeforeEach(func() {
				f.add(deadEntry(newJob("good1"), at(time.Minute)), time.Minute)
				f.add(deadEntry(newJob("good2"), at(2*time.Minute)), 2*time.Minute)
				for _, r := range raws {
					f.corrupt(r.id, r.raw)
				}
				f.take()
			})

			It("returns each as a corrupt entry with its raw bytes", func() {
				for _, r := range raws {
					e, err := f.d.Get(f.ctx, r.id)
					Expect(err).NotTo(HaveOccurred(), r.id)
					Expect(e.Corrupt).To(BeTrue(), r.id)
					Expect(e.ID()).To(Equal(r.id))
					Expect(bytes.Equal(e.Raw, r.raw)).To(BeTrue(), "%s: raw %q", r.id, e.Raw)
					Expect(e.DecodeError).NotTo(BeEmpty(), r.id)
				}
				Expect(f.get("good1").Corrupt).To(BeFalse())
			})

			It("lists them after the entries whose time is known, each exactly once", func() {
				Expect(f.listIDs(dlq.Filter{}, 2)).To(Equal([]string{"good2", "good1", "v2", "unversioned", "misfiled", "garbage", "empty"}))
				p, err := f.d.List(f.ctx, dlq.Filter{}, "", 100)
				Expect(err).NotTo(HaveOccurred())
				for _, e := range p.Entries[2:] {
					Expect(e.Corrupt).To(BeTrue(), e.ID())
					Expect(e.DecodeError).NotTo(BeEmpty(), e.ID())
				}
				Expect(bytes.Equal(p.Entries[2].Raw, newer)).To(BeTrue())
			})

			It("is replaced, bytes kept, when its job dies again: in every backend alike", func() {
				r := f.kill(newJob("garbage"), 3*time.Minute, deadEntry(newJob("garbage"), at(3*time.Minute)))
				Expect(r.Evicted).To(BeEmpty())
				e := f.get("garbage")
				Expect(e.Corrupt).To(BeFalse())
				Expect(e.Status).To(Equal(dlq.Failed))
				Expect(string(e.Superseded)).To(Equal("{{{ not json"))
				Expect(f.stats().Corrupt).To(Equal(4))
			})

			It("counts them in Stats", func() {
				st := f.stats()
				Expect(st.Total).To(Equal(7))
				Expect(st.Corrupt).To(Equal(5))
				expectMap(st.ByStatus, map[string]int{"failed": 2}, "ByStatus")
				expectMap(st.ByTask, map[string]int{"charge": 2}, "ByTask")
				Expect(st.OldestID).To(Equal("good1"))
			})

			It("never requeues them nor changes their status, and keeps their bytes", func() {
				for _, r := range raws {
					Expect(f.requeue(r.id, oneMore, time.Hour)).To(Equal(dlq.OutcomeNotRequeueable), r.id)
					Expect(f.d.Delete(f.ctx, r.id, "ops", at(time.Hour))).To(MatchError(dlq.ErrWrongStatus), r.id)
					Expect(f.d.Restore(f.ctx, r.id, "ops", at(time.Hour))).To(MatchError(dlq.ErrWrongStatus), r.id)
					Expect(f.d.Quarantine(f.ctx, r.id, "x", at(time.Hour))).To(MatchError(dlq.ErrWrongStatus), r.id)
					e := f.get(r.id)
					Expect(e.Corrupt).To(BeTrue())
					Expect(bytes.Equal(e.Raw, r.raw)).To(BeTrue(), r.id)
				}
				r, err := f.d.RequeueMatching(f.ctx, dlq.Filter{}, oneMore, at(time.Hour), false)
				Expect(err).NotTo(HaveOccurred())
				Expect(r.Matched).To(Equal(2))
				Expect(r.Requeued).To(Equal(2))
				Expect(f.counts()).To(Equal(queue.Counts{Queued: 2}))
				Expect(f.stats().Corrupt).To(Equal(5))
			})

			It("purges them", func() {
				n, err := f.d.Purge(f.ctx, at(-time.Hour), at(time.Hour))
				Expect(err).NotTo(HaveOccurred())
				Expect(n).To(Equal(5))
				for _, r := range raws {
					f.expectGone(r.id)
				}
				st := f.stats()
				Expect(st.Total).To(Equal(2))
				Expect(st.Corrupt).To(BeZero())
				Expect(f.take()).To(BeEmpty(), "no job of the system left")
			})
		})

		describeConservation(newHarness)
		exerciseTies(newHarness)
	})
}

// mustEncode encodes e as a store would, Failed.
func mustEncode(e dlq.Entry) []byte {
	e.Status = dlq.Failed
	e.LastFailedAt, e.FirstFailedAt = T0, T0
	b, err := dlq.Encode(e)
	if err != nil {
		panic(err)
	}
	return b
}
