package seed_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/layout/seed"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/redisstore"
)

// The reviewer's reproductions (issue 14): a DLQ in the seed layout that
// keeps changing under faultline's migrate and requeue the way the
// tutorial changes it — purged in faultline, marked in place, pushed and
// trimmed during a run.
var _ = Describe("the seed layout under the tutorial's changes", func() {
	const p = "rv:"
	for _, lane := range lanes {
		Context(lane.name, func() {
			var (
				ctx context.Context
				c   *redis.Client
				st  *redisstore.Store
			)
			BeforeEach(func() {
				ctx = context.Background()
				c = lane.connect()
				var err error
				st, err = redisstore.New(c, store.Config{Namespace: "mig"})
				Expect(err).NotTo(HaveOccurred())
			})

			Describe("migrate", func() {
				It("is not blocked by a migrated entry purged from faultline that the seed then marks reprocessing", func() {
					key := p + "dead_letter"
					old := `{"job": {"task": "a"}, "error": "e", "retries": 3, "failed_at": "2026-11-01T11:00:00.000001", "status": "failed"}`
					Expect(c.LPush(ctx, key, old).Err()).To(Succeed())
					_, err := seed.Migrate(ctx, c, p, "mig", st, now)
					Expect(err).NotTo(HaveOccurred())
					n, err := st.Purge(ctx, now.Add(-7*24*time.Hour), now) // faultline dlq purge --older-than 7d
					Expect(err).NotTo(HaveOccurred())
					Expect(n).To(Equal(1))
					Expect(c.LSet(ctx, key, 0, strings.Replace(old, `"failed"}`, `"reprocessing"}`, 1)).Err()).To(Succeed())
					Expect(c.LPush(ctx, key, `{"job": {"task": "b"}, "error": "e", "retries": 3, "failed_at": "2026-12-01T11:00:00.000001", "status": "failed"}`).Err()).To(Succeed())

					res, err := seed.Migrate(ctx, c, p, "mig", st, now)
					Expect(err).NotTo(HaveOccurred())
					Expect([]int{res.Migrated, res.Already, res.Gone, res.Deleted}).To(Equal([]int{1, 1, 1, 0}), "migrated, already, gone, soft-deleted")
					marker := c.HGetAll(ctx, seed.MarkerKey(p, "mig")).Val()
					Expect(marker).To(HaveLen(2))
					Expect(marker).To(ContainElement(HaveSuffix("\tinactive")), "the purged one recorded as done")

					again, err := seed.Migrate(ctx, c, p, "mig", st, now)
					Expect(err).NotTo(HaveOccurred())
					Expect([]int{again.Migrated, again.Already, again.Gone}).To(Equal([]int{0, 2, 0}))
				})

				It("never soft-deletes, for a stale seed status, a new failure of the same job", func() {
					key := p + "dead_letter"
					old := `{"job": {"task": "charge", "id": "job-9"}, "error": "card declined", "retries": 1, "failed_at": "2026-12-01T10:00:00.000001", "status": "failed"}`
					Expect(c.LPush(ctx, key, old).Err()).To(Succeed())
					_, err := seed.Migrate(ctx, c, p, "mig", st, now)
					Expect(err).NotTo(HaveOccurred())
					By("the job is requeued in faultline and fails again there")
					e, err := st.Get(ctx, "job-9")
					Expect(err).NotTo(HaveOccurred())
					later := now.Add(time.Hour)
					e.History = []dlq.Failure{{At: later, Attempt: 2, Error: "card declined again"}}
					e.FirstFailedAt, e.LastFailedAt = later, later
					_, err = st.Add(ctx, e, later)
					Expect(err).NotTo(HaveOccurred())
					By("the tutorial marks its old entry reprocessing")
					Expect(c.LSet(ctx, key, 0, strings.Replace(old, `"failed"}`, `"reprocessing"}`, 1)).Err()).To(Succeed())

					res, err := seed.Migrate(ctx, c, p, "mig", st, later)
					Expect(err).NotTo(HaveOccurred())
					Expect([]int{res.Deleted, res.Superseded}).To(Equal([]int{0, 1}), "soft-deleted, superseded")
					cur, err := st.Get(ctx, "job-9")
					Expect(err).NotTo(HaveOccurred())
					Expect(cur.Status).To(Equal(dlq.Failed))
					Expect(c.HGetAll(ctx, seed.MarkerKey(p, "mig")).Val()).To(ConsistOf(HaveSuffix("\tinactive")), "recorded as done")
				})

				It("skips no entry there before the run and after it while the tutorial pushes and trims the full list", func() {
					key := p + "dlq:high"
					const capN = 2000
					for i := range capN {
						Expect(c.LPush(ctx, key, fmt.Sprintf(`{"job": {"task": "old-%d"}, "error": "e", "type": "ValueError", "severity": "HIGH", "retries": 1, "timestamp": "2026-12-01T10:00:00.%06d"}`, i, i)).Err()).To(Succeed())
					}
					tg := &trimming{Store: st, c: c, key: key, cap: capN, upTo: 100}
					res, err := seed.Migrate(ctx, c, p, "mig", tg, now)
					Expect(err).NotTo(HaveOccurred())
					Expect(res.Shifts).To(BeNumerically(">", 0), "the walk saw the list move")
					migrated := map[string]bool{}
					for _, v := range c.HGetAll(ctx, seed.MarkerKey(p, "mig")).Val() {
						e, err := st.Get(ctx, seed.MarkerID(v))
						Expect(err).NotTo(HaveOccurred())
						Expect(migrated).NotTo(HaveKey(e.Job.Task), "migrated once")
						migrated[e.Job.Task] = true
					}
					var missing []string
					for _, raw := range c.LRange(ctx, key, 0, -1).Val() {
						if i := strings.Index(raw, `"old-`); i >= 0 {
							task := raw[i+1 : i+1+strings.IndexByte(raw[i+1:], '"')]
							if !migrated[task] {
								missing = append(missing, task)
							}
						}
					}
					Expect(missing).To(BeEmpty(), "entries in the list before the run and after it, not migrated")
					Expect(res.Migrated).To(Equal(len(migrated)))
				})

				// Pins the documented limit (package doc, migrate --help): two
				// byte-identical entries cannot be told apart from a trim of
				// the oldest plus a push of a third.
				It("counts, after a trim and a push of a byte-identical entry, the new one as already migrated (documented)", func() {
					key := p + "dlq:high"
					entry := `{"job": {"task": "x"}, "error": "boom", "type": "ValueError", "severity": "HIGH", "retries": 3, "timestamp": "2026-12-01T11:00:00"}`
					Expect(c.LPush(ctx, key, entry, entry).Err()).To(Succeed())
					r1, err := seed.Migrate(ctx, c, p, "mig", st, now)
					Expect(err).NotTo(HaveOccurred())
					Expect(r1.Migrated).To(Equal(2))
					Expect(c.LPush(ctx, key, entry).Err()).To(Succeed())
					Expect(c.LTrim(ctx, key, 0, 1).Err()).To(Succeed())
					r2, err := seed.Migrate(ctx, c, p, "mig", st, now)
					Expect(err).NotTo(HaveOccurred())
					Expect([]int{r2.Migrated, r2.Already}).To(Equal([]int{0, 2}), "migrated, already")
				})
			})

			Describe("requeue --all", func() {
				key := p + "dlq:high"
				fill := func(from, n int) {
					GinkgoHelper()
					vals := make([]any, n)
					for i := range n {
						vals[i] = fmt.Sprintf(`{"job": {"task": "t-%d"}, "error": "e", "type": "ValueError", "severity": "HIGH", "retries": 1, "timestamp": "2026-12-01T10:00:00.%06d"}`, from+i, from+i)
					}
					Expect(c.LPush(ctx, key, vals...).Err()).To(Succeed())
				}
				count := func() seed.BulkResult {
					GinkgoHelper()
					r, err := seed.RequeueAll(ctx, c, p, seed.Filter{}, seed.RequeueOptions{DryRun: true})
					Expect(err).NotTo(HaveOccurred())
					return r
				}

				It("finds its cut-off after a trim moved it more than MoveScan places", func() {
					const capN = 1500
					fill(0, capN)
					dry := count()
					Expect(dry.Requeued).To(Equal(capN))
					fill(capN, 1200) // the tutorial: 1,200 dead letters, each LPUSH then LTRIM
					Expect(c.LTrim(ctx, key, 0, capN-1).Err()).To(Succeed())
					Expect(1200).To(BeNumerically(">", seed.MoveScan))

					res, err := seed.RequeueAll(ctx, c, p, seed.Filter{}, seed.RequeueOptions{Cutoff: &dry.Cutoff})
					Expect(err).NotTo(HaveOccurred())
					Expect(res.CutoffLost).To(BeEmpty())
					Expect(res.Requeued).To(Equal(capN-1200), "the counted entries still there")
					Expect(c.LLen(ctx, p+"default").Val()).To(BeEquivalentTo(capN - 1200))
				})

				It("names a list whose cut-off is gone, moving nothing in it", func() {
					fill(0, 10)
					dry := count()
					fill(10, 20)
					Expect(c.LTrim(ctx, key, 0, 9).Err()).To(Succeed()) // every counted entry trimmed away
					res, err := seed.RequeueAll(ctx, c, p, seed.Filter{}, seed.RequeueOptions{Cutoff: &dry.Cutoff})
					Expect(err).NotTo(HaveOccurred())
					Expect(res.CutoffLost).To(Equal([]string{key}))
					Expect(res.Requeued).To(BeZero())
					Expect(dry.MatchedByList).To(HaveKeyWithValue(key, 10))
				})
			})
		})
	}
})

// trimming is the namespace's store while the tutorial keeps dead-lettering
// into a full list (LPUSH then LTRIM 0 cap-1) during a migration: one push
// per Add, for the first upTo adds.
type trimming struct {
	*redisstore.Store
	c       *redis.Client
	key     string
	cap     int64
	n, upTo int
}

func (t *trimming) Add(ctx context.Context, e dlq.Entry, now time.Time) (dlq.AddResult, error) {
	if t.n++; t.n <= t.upTo {
		t.c.LPush(ctx, t.key, fmt.Sprintf(`{"job": {"task": "new-%d"}, "error": "e", "type": "ValueError", "severity": "HIGH", "retries": 1, "timestamp": "2026-12-01T11:30:00.%06d"}`, t.n, t.n))
		t.c.LTrim(ctx, t.key, 0, t.cap-1)
	}
	return t.Store.Add(ctx, e, now)
}
