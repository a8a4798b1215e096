package seed_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/layout"
	"github.com/faultline/faultline/layout/adapter"
	"github.com/faultline/faultline/layout/seed"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/memstore"
	"github.com/faultline/faultline/reference/store/redisstore"
)

const prefix = "app:"

var now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// pushOne LPUSHes an entry onto dead_letter as the tutorial's send_to_dlq
// would.
func pushOne(ctx context.Context, c redis.Cmdable, task string) {
	GinkgoHelper()
	Expect(c.LPush(ctx, prefix+"dead_letter",
		fmt.Sprintf(`{"job": {"task": %q}, "error": "late", "retries": 3, "failed_at": "2026-12-01T11:00:00.000001", "status": "failed"}`, task)).Err()).To(Succeed())
}

func find(es []seed.Entry, pred func(e seed.Entry) bool) seed.Entry {
	GinkgoHelper()
	for _, e := range es {
		if pred(e) {
			return e
		}
	}
	Fail("no such entry")
	return seed.Entry{}
}

func byTask(task string) func(seed.Entry) bool {
	return func(e seed.Entry) bool {
		return e.Invalid == "" && strings.Contains(string(e.Bytes), `"task": "`+task+`"`)
	}
}

var _ = Describe("a DLQ in the tutorial's layout", func() {
	for _, lane := range lanes {
		Context(lane.name, func() {
			var (
				ctx context.Context
				c   *redis.Client
			)
			BeforeEach(func() {
				ctx = context.Background()
				c = lane.connect()
				writeFixture(c, prefix)
			})

			It("lists every entry in pages, corrupt ones kept, as the layout's reader reads them", func() {
				all := listAll(ctx, c, prefix, seed.Filter{}, 2)
				Expect(all).To(HaveLen(9))
				r, err := adapter.NewReader(layout.DLQ{Preset: layout.PresetSeed, Prefix: prefix}, adapter.Env{Redis: c})
				Expect(err).NotTo(HaveOccurred())
				want, err := r.Read(ctx)
				Expect(err).NotTo(HaveOccurred())
				Expect(all).To(HaveLen(len(want)))
				for i, e := range all {
					Expect(e.Parsed.Source).To(Equal(want[i].Source))
					Expect(e.Parsed.Raw).To(Equal(want[i].Raw))
				}
				corrupt := find(all, func(e seed.Entry) bool { return e.Invalid != "" })
				Expect(string(corrupt.Bytes)).To(Equal(`{"job": {"task": "payment", "amo`))
				Expect(find(all, func(e seed.Entry) bool { return e.Key == prefix+"dlq:high" }).Parsed.Severity).To(Equal("HIGH"))
				// positions count from the tail: the oldest of dead_letter is 0
				Expect(all[5].Key).To(Equal(prefix + "dead_letter"))
				Expect(all[5].Position).To(BeZero())
				Expect(all[0].Position).To(BeEquivalentTo(5))
			})

			It("keeps its cursor through pushes at the head: nothing repeated, nothing skipped", func() {
				p1, err := seed.List(ctx, c, prefix, seed.Filter{}, "", 3)
				Expect(err).NotTo(HaveOccurred())
				pushOne(ctx, c, "late-1")
				pushOne(ctx, c, "late-2")
				var rest []seed.Entry
				for cur := p1.Next; cur != ""; {
					p, err := seed.List(ctx, c, prefix, seed.Filter{}, cur, 3)
					Expect(err).NotTo(HaveOccurred())
					rest, cur = append(rest, p.Entries...), p.Next
				}
				got := append(p1.Entries, rest...)
				Expect(got).To(HaveLen(9))
				seen := map[string]bool{}
				for _, e := range got {
					k := fmt.Sprintf("%s/%d", e.Key, e.Position)
					Expect(seen).NotTo(HaveKey(k))
					seen[k] = true
					Expect(string(e.Bytes)).NotTo(ContainSubstring("late-"))
				}
			})

			It("filters by severity, status and text", func() {
				Expect(listAll(ctx, c, prefix, seed.Filter{Severities: []string{"high"}}, 10)).To(HaveLen(1))
				Expect(listAll(ctx, c, prefix, seed.Filter{Text: "smtp"}, 10)).To(HaveLen(2))
				Expect(listAll(ctx, c, prefix, seed.Filter{Lists: []string{"dead_letter"}, Statuses: []string{"failed"}}, 10)).To(HaveLen(5))
				_, err := seed.List(ctx, c, prefix, seed.Filter{}, "nonsense", 10)
				Expect(err).To(MatchError(seed.ErrCursor))
			})

			It("requeues the entry listed, even after a push at the head, as the tutorial's code would read it", func() {
				all := listAll(ctx, c, prefix, seed.Filter{}, 50)
				pay := find(all, byTask("payment"))
				pushOne(ctx, c, "late") // shifts every index from the head
				o, err := seed.Requeue(ctx, c, prefix, pay.Ref(), seed.RequeueOptions{})
				Expect(err).NotTo(HaveOccurred())
				Expect(o).To(Equal(seed.Requeued))
				Expect(c.LRange(ctx, prefix+"default", 0, -1).Val()).To(Equal([]string{`{"task": "payment", "amount": 100}`}))
				marked := strings.Replace(string(pay.Bytes), `"status": "failed"`, `"status": "reprocessing"`, 1)
				Expect(c.LIndex(ctx, prefix+"dead_letter", -(pay.Position + 1)).Val()).To(Equal(marked))

				By("a second requeue of the same ref does nothing")
				o, err = seed.Requeue(ctx, c, prefix, pay.Ref(), seed.RequeueOptions{})
				Expect(err).NotTo(HaveOccurred())
				Expect(o).To(Equal(seed.AlreadyReprocessing))
				Expect(c.LLen(ctx, prefix+"default").Val()).To(BeEquivalentTo(1))

				By("an entry changed since listed (the tutorial's delete) is refused")
				email := find(all, byTask("email"))
				idx := -(email.Position + 1)
				Expect(c.LSet(ctx, prefix+"dead_letter", idx, strings.Replace(string(email.Bytes), `"failed"`, `"deleted"`, 1)).Err()).To(Succeed())
				o, err = seed.Requeue(ctx, c, prefix, email.Ref(), seed.RequeueOptions{})
				Expect(err).NotTo(HaveOccurred())
				Expect(o).To(Equal(seed.Changed))

				By("a position past the list, and a corrupt entry")
				gone := pay.Ref()
				gone.Position = 1000
				Expect(seed.Requeue(ctx, c, prefix, gone, seed.RequeueOptions{})).To(Equal(seed.NotFound))
				corrupt := find(all, func(e seed.Entry) bool { return e.Invalid != "" })
				Expect(seed.Requeue(ctx, c, prefix, corrupt.Ref(), seed.RequeueOptions{})).To(Equal(seed.NotRequeueable))
				Expect(c.LLen(ctx, prefix+"default").Val()).To(BeEquivalentTo(1))

				By("one of two byte-identical entries: only that one is marked")
				twins := []seed.Entry{}
				for _, e := range all {
					if strings.Contains(string(e.Bytes), `"task": "report"}, "error": "timeout"`) {
						twins = append(twins, e)
					}
				}
				Expect(twins).To(HaveLen(2))
				Expect(seed.Requeue(ctx, c, prefix, twins[1].Ref(), seed.RequeueOptions{To: "retry"})).To(Equal(seed.Requeued))
				Expect(c.LIndex(ctx, prefix+"dead_letter", -(twins[0].Position + 1)).Val()).To(Equal(string(twins[0].Bytes)))
				Expect(c.LLen(ctx, prefix+"retry").Val()).To(BeEquivalentTo(1))

				_, err = seed.Requeue(ctx, c, prefix, seed.Ref{Key: "elsewhere"}, seed.RequeueOptions{})
				Expect(err).To(MatchError(seed.ErrRef))
			})

			It("requeues all a filter selects once, in batches, leaving what is pushed during the run", func() {
				f := seed.Filter{Statuses: []string{"failed"}}
				dry, err := seed.RequeueAll(ctx, c, prefix, f, seed.RequeueOptions{DryRun: true})
				Expect(err).NotTo(HaveOccurred())
				Expect(dry.Requeued).To(Equal(8)) // the corrupt one has no status to match
				Expect(c.Exists(ctx, prefix+"default").Val()).To(BeZero())

				res, err := seed.RequeueAll(ctx, c, prefix, f, seed.RequeueOptions{Batch: 3})
				Expect(err).NotTo(HaveOccurred())
				Expect(res.Requeued).To(Equal(8))
				Expect(res.Batches).To(BeNumerically(">=", 3))
				Expect(c.LLen(ctx, prefix+"default").Val()).To(BeEquivalentTo(8))

				pushOne(ctx, c, "late")
				again, err := seed.RequeueAll(ctx, c, prefix, seed.Filter{}, seed.RequeueOptions{})
				Expect(err).NotTo(HaveOccurred())
				Expect(again.Requeued).To(Equal(1)) // only the new one
				Expect(again.AlreadyReprocessing).To(Equal(8))
				Expect(again.NotRequeueable).To(Equal(1))
				Expect(c.LLen(ctx, prefix+"default").Val()).To(BeEquivalentTo(9))
			})

			It("leaves, in a bulk requeue, an entry the seed marks deleted, unless the filter asks for deleted ones", func() {
				email := find(listAll(ctx, c, prefix, seed.Filter{}, 50), byTask("email"))
				Expect(c.LSet(ctx, prefix+"dead_letter", -(email.Position + 1), strings.Replace(string(email.Bytes), `"failed"`, `"deleted"`, 1)).Err()).To(Succeed())
				f := seed.Filter{Lists: []string{"dead_letter"}}
				res, err := seed.RequeueAll(ctx, c, prefix, f, seed.RequeueOptions{})
				Expect(err).NotTo(HaveOccurred())
				Expect([]int{res.Matched, res.Requeued, res.DeletedInSeed, res.NotRequeueable}).To(Equal([]int{6, 4, 1, 1}))
				Expect(c.LRange(ctx, prefix+"default", 0, -1).Val()).NotTo(ContainElement(ContainSubstring("email")))

				f.Statuses = []string{"deleted"}
				res, err = seed.RequeueAll(ctx, c, prefix, f, seed.RequeueOptions{})
				Expect(err).NotTo(HaveOccurred())
				Expect([]int{res.Matched, res.Requeued}).To(Equal([]int{1, 1}))
				Expect(c.LRange(ctx, prefix+"default", 0, 0).Val()).To(ConsistOf(ContainSubstring("email")))
			})

			It("moves, after a count, only the entries that count saw: none pushed since, and follows a trim", func() {
				f := seed.Filter{Lists: []string{"dead_letter"}, Statuses: []string{"failed"}}
				dry, err := seed.RequeueAll(ctx, c, prefix, f, seed.RequeueOptions{DryRun: true})
				Expect(err).NotTo(HaveOccurred())
				Expect(dry.Requeued).To(Equal(5))
				Expect(dry.Cutoff.Count()).To(BeEquivalentTo(6))
				pushOne(ctx, c, "while-the-prompt-is-open-1")
				pushOne(ctx, c, "while-the-prompt-is-open-2")
				res, err := seed.RequeueAll(ctx, c, prefix, f, seed.RequeueOptions{Cutoff: &dry.Cutoff})
				Expect(err).NotTo(HaveOccurred())
				Expect([]int{res.Matched, res.Requeued}).To(Equal([]int{5, 5}), "matched, requeued")
				Expect(c.LRange(ctx, prefix+"default", 0, -1).Val()).NotTo(ContainElement(ContainSubstring("while-the-prompt")))
				Expect(c.LIndex(ctx, prefix+"dead_letter", 0).Val()).To(ContainSubstring(`"status": "failed"`), "the newest is untouched")

				By("a full dlq:* list trimmed between the count and the run")
				vals := make([]any, 10)
				for i := range vals {
					vals[i] = fmt.Sprintf(`{"job": {"task": "low-%d"}, "error": "e", "type": "ValueError", "severity": "LOW", "retries": 1, "timestamp": "t%d"}`, i, i)
				}
				Expect(c.Del(ctx, prefix+"dlq:low", prefix+"default").Err()).To(Succeed())
				Expect(c.LPush(ctx, prefix+"dlq:low", vals...).Err()).To(Succeed())
				low := seed.Filter{Lists: []string{"dlq:low"}}
				dry, err = seed.RequeueAll(ctx, c, prefix, low, seed.RequeueOptions{DryRun: true})
				Expect(err).NotTo(HaveOccurred())
				Expect(dry.Requeued).To(Equal(10))
				for i := range 3 {
					Expect(c.LPush(ctx, prefix+"dlq:low", fmt.Sprintf(`{"job": {"task": "late-%d"}, "error": "e", "severity": "LOW"}`, i)).Err()).To(Succeed())
					Expect(c.LTrim(ctx, prefix+"dlq:low", 0, 9).Err()).To(Succeed())
				}
				res, err = seed.RequeueAll(ctx, c, prefix, low, seed.RequeueOptions{Cutoff: &dry.Cutoff, Batch: 4})
				Expect(err).NotTo(HaveOccurred())
				Expect([]int{res.Matched, res.Requeued, res.Changed}).To(Equal([]int{7, 7, 0}), "matched, requeued, changed: the three oldest were trimmed away")
				queued := c.LRange(ctx, prefix+"default", 0, -1).Val()
				Expect(queued).To(HaveLen(7))
				Expect(queued).NotTo(ContainElement(ContainSubstring("late-")))
				Expect(queued).To(ContainElement(`{"task": "low-9"}`))
			})

			Describe("migrate", func() {
				var st *redisstore.Store
				BeforeEach(func() {
					var err error
					st, err = redisstore.New(c, store.Config{Namespace: "mig"})
					Expect(err).NotTo(HaveOccurred())
				})
				lens := func() []int64 {
					var out []int64
					for _, k := range seed.Keys(prefix) {
						out = append(out, c.LLen(ctx, k).Val())
					}
					return out
				}

				It("copies every entry once, corrupt ones with their bytes, and a rerun copies nothing new", func() {
					before := lens()
					res, err := seed.Migrate(ctx, c, prefix, "mig", st, now)
					Expect(err).NotTo(HaveOccurred())
					Expect(res.Seen).To(Equal(9))
					Expect(res.Migrated).To(Equal(9))
					Expect(res.Corrupt).To(Equal(1))
					Expect(res.Created).To(Equal(8)) // and the corrupt one kept as corrupt
					Expect(lens()).To(Equal(before))

					stats, err := st.Stats(ctx)
					Expect(err).NotTo(HaveOccurred())
					Expect(stats.Total).To(Equal(9))
					Expect(stats.Corrupt).To(Equal(1))
					ids := c.HGetAll(ctx, seed.MarkerKey(prefix, "mig")).Val()
					Expect(ids).To(HaveLen(9))
					var corrupt, charge dlq.Entry
					for _, v := range ids {
						e, err := st.Get(ctx, seed.MarkerID(v))
						Expect(err).NotTo(HaveOccurred())
						if e.Corrupt {
							corrupt = e
						}
						if e.Job.Task == "charge" {
							charge = e
						}
					}
					Expect(string(corrupt.Raw)).To(Equal(`{"job": {"task": "payment", "amo`))
					Expect(charge.Job.ID).To(Equal("job-7"))
					Expect(charge.History).To(HaveLen(1))
					Expect(charge.History[0].Error).To(Equal("card declined"))
					Expect(charge.Job.Attempts).To(Equal(1))
					var payload map[string]any
					Expect(json.Unmarshal(charge.Job.Payload, &payload)).To(Succeed())
					Expect(payload).To(HaveKeyWithValue("amount", BeEquivalentTo(70)))

					again, err := seed.Migrate(ctx, c, prefix, "mig", st, now)
					Expect(err).NotTo(HaveOccurred())
					Expect(again.Migrated).To(BeZero())
					Expect(again.Already).To(Equal(9))

					By("a run stopped between its writes and its marker writes nothing twice")
					Expect(c.Del(ctx, seed.MarkerKey(prefix, "mig")).Err()).To(Succeed())
					third, err := seed.Migrate(ctx, c, prefix, "mig", st, now)
					Expect(err).NotTo(HaveOccurred())
					Expect(third.Migrated).To(BeZero())
					Expect(c.HLen(ctx, seed.MarkerKey(prefix, "mig")).Val()).To(BeEquivalentTo(9))
					stats, err = st.Stats(ctx)
					Expect(err).NotTo(HaveOccurred())
					Expect(stats.Total).To(Equal(9))
				})

				It("keeps one marker per namespace: the same lists migrate whole into a second namespace, and each reruns idempotently", func() {
					res, err := seed.Migrate(ctx, c, prefix, "mig", st, now)
					Expect(err).NotTo(HaveOccurred())
					Expect(res.Migrated).To(Equal(9))
					other, err := redisstore.New(c, store.Config{Namespace: "mig2"})
					Expect(err).NotTo(HaveOccurred())
					res, err = seed.Migrate(ctx, c, prefix, "mig2", other, now)
					Expect(err).NotTo(HaveOccurred())
					Expect([]int{res.Migrated, res.Already}).To(Equal([]int{9, 0}), "migrated, already: nothing is taken as done for another namespace")
					for _, s := range []*redisstore.Store{st, other} {
						stats, err := s.Stats(ctx)
						Expect(err).NotTo(HaveOccurred())
						Expect(stats.Total).To(Equal(9))
					}
					Expect(c.HLen(ctx, seed.MarkerKey(prefix, "mig")).Val()).To(BeEquivalentTo(9))
					Expect(c.HLen(ctx, seed.MarkerKey(prefix, "mig2")).Val()).To(BeEquivalentTo(9))

					By("a rerun into the second, after its marker was lost mid-run, writes nothing twice")
					Expect(c.Del(ctx, seed.MarkerKey(prefix, "mig2")).Err()).To(Succeed())
					res, err = seed.Migrate(ctx, c, prefix, "mig2", other, now)
					Expect(err).NotTo(HaveOccurred())
					Expect(res.Migrated).To(BeZero())
					stats, err := other.Stats(ctx)
					Expect(err).NotTo(HaveOccurred())
					Expect(stats.Total).To(Equal(9))
					res, err = seed.Migrate(ctx, c, prefix, "mig", st, now)
					Expect(err).NotTo(HaveOccurred())
					Expect([]int{res.Migrated, res.Already}).To(Equal([]int{0, 9}))
				})

				It("takes an entry the seed marks after its migration for the same entry: not migrated twice, its faultline entry soft-deleted", func() {
					_, err := seed.Migrate(ctx, c, prefix, "mig", st, now)
					Expect(err).NotTo(HaveOccurred())
					all := listAll(ctx, c, prefix, seed.Filter{}, 50)
					Expect(seed.Requeue(ctx, c, prefix, find(all, byTask("payment")).Ref(), seed.RequeueOptions{})).To(Equal(seed.Requeued))
					auth := find(all, byTask("auth")) // a dlq:* entry: the mark adds a status
					Expect(seed.Requeue(ctx, c, prefix, auth.Ref(), seed.RequeueOptions{})).To(Equal(seed.Requeued))

					res, err := seed.Migrate(ctx, c, prefix, "mig", st, now)
					Expect(err).NotTo(HaveOccurred())
					Expect([]int{res.Migrated, res.Already, res.Deleted}).To(Equal([]int{0, 9, 2}), "migrated, already, soft-deleted")
					stats, err := st.Stats(ctx)
					Expect(err).NotTo(HaveOccurred())
					Expect(stats.Total).To(Equal(9))
					Expect(stats.ByStatus).To(HaveKeyWithValue(dlq.Deleted.String(), 2))

					res, err = seed.Migrate(ctx, c, prefix, "mig", st, now)
					Expect(err).NotTo(HaveOccurred())
					Expect([]int{res.Migrated, res.Already, res.Deleted}).To(Equal([]int{0, 9, 0}))
				})

				It("loses no entry pushed while it runs", func() {
					pusher := &pushing{Store: st, push: func() { pushOne(ctx, c, "during") }}
					_, err := seed.Migrate(ctx, c, prefix, "mig", pusher, now)
					Expect(err).NotTo(HaveOccurred())
					_, err = seed.Migrate(ctx, c, prefix, "mig", st, now) // takes what the first left
					Expect(err).NotTo(HaveOccurred())
					stats, err := st.Stats(ctx)
					Expect(err).NotTo(HaveOccurred())
					Expect(stats.Total).To(Equal(9 + pusher.pushed))
					Expect(pusher.pushed).To(BeNumerically(">", 1))
				})

				It("into a store that cannot keep corrupt entries, migrates the rest and names what it left", func() {
					mem, err := memstore.New(store.Config{Namespace: "mig"})
					Expect(err).NotTo(HaveOccurred())
					res, err := seed.Migrate(ctx, c, prefix, "mig", mem, now)
					Expect(err).To(MatchError(seed.ErrNotMigrated))
					Expect(res.Migrated).To(Equal(8))
					Expect(res.Left).To(ConsistOf(HaveField("Reason", ContainSubstring("cannot keep a corrupt entry"))))
					Expect(c.HLen(ctx, seed.MarkerKey(prefix, "mig")).Val()).To(BeEquivalentTo(8))
				})

				It("marks as deleted what the seed marked reprocessing", func() {
					all := listAll(ctx, c, prefix, seed.Filter{}, 50)
					Expect(seed.Requeue(ctx, c, prefix, find(all, byTask("payment")).Ref(), seed.RequeueOptions{})).To(Equal(seed.Requeued))
					res, err := seed.Migrate(ctx, c, prefix, "mig", st, now)
					Expect(err).NotTo(HaveOccurred())
					Expect(res.Deleted).To(Equal(1))
				})
			})

			Describe("Get", func() {
				It("reads one entry by its position and digest in one LINDEX, no LRANGE", func() {
					all := listAll(ctx, c, prefix, seed.Filter{}, 50)
					pay := find(all, byTask("payment"))
					h := &counter{}
					c.AddHook(h)
					e, where, err := seed.Get(ctx, c, prefix, "dead_letter", pay.Position, seed.Digest(pay.Bytes)[:12])
					Expect(err).NotTo(HaveOccurred())
					Expect(where).To(Equal(seed.At))
					Expect(e.Bytes).To(Equal(pay.Bytes))
					Expect(e.Position).To(Equal(pay.Position))
					Expect(e.Parsed.Source).To(Equal(pay.Parsed.Source))
					Expect(e.Parsed.NoID).To(Equal("no job ID at job.id"), "the tutorial's job has no ID")
					Expect(e.Parsed.Corrupt).To(BeEmpty(), "and is no less valid for it")
					Expect(h.lranges()).To(BeEmpty())

					e, where, err = seed.Get(ctx, c, prefix, "dead_letter", pay.Position, "")
					Expect(err).NotTo(HaveOccurred())
					Expect([]any{where, string(e.Bytes)}).To(Equal([]any{seed.At, string(pay.Bytes)}))
				})

				It("knows a marked entry for the one named, never its byte-identical twin below", func() {
					var twins []seed.Entry
					for _, e := range listAll(ctx, c, prefix, seed.Filter{}, 50) {
						if strings.Contains(string(e.Bytes), `"task": "report"}, "error": "timeout"`) {
							twins = append(twins, e)
						}
					}
					Expect(twins).To(HaveLen(2))
					newer := twins[0]
					Expect(newer.Position).To(BeNumerically(">", twins[1].Position))
					d := seed.Digest(newer.Bytes)[:12]
					Expect(seed.Requeue(ctx, c, prefix, newer.Ref(), seed.RequeueOptions{})).To(Equal(seed.Requeued))
					e, where, err := seed.Get(ctx, c, prefix, "dead_letter", newer.Position, d)
					Expect(err).NotTo(HaveOccurred())
					Expect(where).To(Equal(seed.Restatused))
					Expect(e.Position).To(Equal(newer.Position))
					Expect(e.Status()).To(Equal(seed.Reprocessing))

					By("a dlq:* entry, whose mark adds a status")
					auth := find(listAll(ctx, c, prefix, seed.Filter{Lists: []string{"dlq:high"}}, 50), byTask("auth"))
					Expect(seed.Requeue(ctx, c, prefix, auth.Ref(), seed.RequeueOptions{})).To(Equal(seed.Requeued))
					_, where, err = seed.Get(ctx, c, prefix, "dlq:high", auth.Position, seed.Digest(auth.Bytes)[:12])
					Expect(err).NotTo(HaveOccurred())
					Expect(where).To(Equal(seed.Restatused))
				})

				It("follows an entry a trim moved down, says when the one there changed, and when there is none", func() {
					vals := make([]any, 10)
					for i := range vals {
						vals[i] = fmt.Sprintf(`{"job": {"task": "t%d"}, "error": "e", "type": "ValueError", "severity": "LOW", "retries": 1, "timestamp": "x"}`, i)
					}
					Expect(c.Del(ctx, prefix+"dlq:low").Err()).To(Succeed())
					Expect(c.LPush(ctx, prefix+"dlq:low", vals...).Err()).To(Succeed())
					listed := find(listAll(ctx, c, prefix, seed.Filter{Lists: []string{"dlq:low"}}, 50), byTask("t5"))
					Expect(listed.Position).To(BeEquivalentTo(5))
					d := seed.Digest(listed.Bytes)[:12]

					By("three pushes onto the full list, trimmed as the tutorial does: every entry moves down by three")
					for i := range 3 {
						Expect(c.LPush(ctx, prefix+"dlq:low", fmt.Sprintf(`{"job": {"task": "new%d"}}`, i)).Err()).To(Succeed())
						Expect(c.LTrim(ctx, prefix+"dlq:low", 0, 9).Err()).To(Succeed())
					}
					h := &counter{}
					c.AddHook(h)
					e, where, err := seed.Get(ctx, c, prefix, "dlq:low", 5, d)
					Expect(err).NotTo(HaveOccurred())
					Expect(where).To(Equal(seed.Moved))
					Expect(e.Position).To(BeEquivalentTo(2))
					Expect(e.Bytes).To(Equal(listed.Bytes))
					Expect(h.lranges()).To(HaveLen(1))
					Expect(h.lranges()[0]).To(BeNumerically("<=", seed.MoveScan))

					By("an entry replaced in place")
					Expect(c.LSet(ctx, prefix+"dlq:low", -3, `{"job": {"task": "other"}}`).Err()).To(Succeed())
					e, where, err = seed.Get(ctx, c, prefix, "dlq:low", 2, d)
					Expect(err).NotTo(HaveOccurred())
					Expect(where).To(Equal(seed.ChangedAt))
					Expect(string(e.Bytes)).To(Equal(`{"job": {"task": "other"}}`))

					By("a position past the list")
					_, where, err = seed.Get(ctx, c, prefix, "dlq:low", 99, d)
					Expect(err).NotTo(HaveOccurred())
					Expect(where).To(Equal(seed.Gone))
					_, where, err = seed.Get(ctx, c, prefix, "dlq:low", 99, "")
					Expect(err).NotTo(HaveOccurred())
					Expect(where).To(Equal(seed.Gone), "no digest: nothing to look for below")

					_, _, err = seed.Get(ctx, c, prefix, "dlq:nope", 0, "")
					Expect(err).To(MatchError(seed.ErrRef))
					_, _, err = seed.Get(ctx, c, prefix, "dlq:low", 0, "xyz")
					Expect(err).To(MatchError(seed.ErrDigest))
				})
			})

			It("reads a 100,000-entry list in LRANGE-bounded pages", func() {
				n := 100_000
				if strings.Contains(lane.name, "miniredis") {
					n = 20_000 // miniredis is slow to fill; the bounds are the same
				}
				for i := 0; i < n; i += 1000 {
					vals := make([]any, 1000)
					for j := range vals {
						vals[j] = fmt.Sprintf(`{"job": {"task": "t%d"}, "error": "e", "retries": 3, "status": "failed"}`, i+j)
					}
					Expect(c.LPush(ctx, prefix+"dlq:low", vals...).Err()).To(Succeed())
				}
				h := &counter{}
				c.AddHook(h)
				cur := ""
				for range 3 {
					p, err := seed.List(ctx, c, prefix, seed.Filter{Lists: []string{"dlq:low"}}, cur, 100)
					Expect(err).NotTo(HaveOccurred())
					Expect(p.Entries).To(HaveLen(100))
					cur = p.Next
				}
				Expect(h.lranges()).To(Equal([]int64{100, 100, 100}))

				By("a filter that selects nothing reads at most MaxScan elements per call")
				h.cmds = nil
				p, err := seed.List(ctx, c, prefix, seed.Filter{Text: "no such error"}, "", 100)
				Expect(err).NotTo(HaveOccurred())
				Expect(p.Entries).To(BeEmpty())
				Expect(p.Next).NotTo(BeEmpty())
				Expect(p.Scanned).To(Equal(seed.MaxScan))
				for _, r := range h.lranges() {
					Expect(r).To(BeNumerically(">", 0))
					Expect(r).To(BeNumerically("<=", seed.ChunkSize))
				}
			})
		})
	}
})

// pushing is a Target that LPUSHes a new seed entry on each of its first
// adds, while the migration runs.
type pushing struct {
	*redisstore.Store
	push   func()
	pushed int
}

func (p *pushing) Add(ctx context.Context, e dlq.Entry, now time.Time) (dlq.AddResult, error) {
	if p.pushed < 3 {
		p.push()
		p.pushed++
	}
	return p.Store.Add(ctx, e, now)
}
