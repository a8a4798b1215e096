package redisstore_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/redisstore"
)

var _ = Describe("redisstore layout version", func() {
	for _, ln := range lanes {
		Describe(ln.name, func() {
			var (
				ctx    = context.Background()
				c      *redis.Client
				ns     string
				prefix string
			)
			BeforeEach(func() {
				c = ln.connect()
				ns = fmt.Sprintf("layout%d", namespaces.Add(1))
				prefix = redisstore.Prefix(ns)
			})

			open := func(batch int) *redisstore.Store {
				GinkgoHelper()
				return newStore(c, store.Config{Namespace: ns, BatchSize: batch})
			}
			nsKeys := func() []string {
				GinkgoHelper()
				keys, err := c.Keys(ctx, prefix+"*").Result()
				Expect(err).NotTo(HaveOccurred())
				return keys
			}
			// layoutKey is the layout key's value, "" when there is none.
			layoutKey := func() string {
				GinkgoHelper()
				v, err := c.Get(ctx, redisstore.LayoutKey(ns)).Result()
				if err == redis.Nil {
					return ""
				}
				Expect(err).NotTo(HaveOccurred())
				return v
			}
			version := func(s *redisstore.Store) int {
				GinkgoHelper()
				v, err := s.LayoutVersion(ctx)
				Expect(err).NotTo(HaveOccurred())
				return v
			}
			add := func(s *redisstore.Store, ids ...string) {
				GinkgoHelper()
				for i, id := range ids {
					_, err := s.Add(ctx, deadEntry(id, t0.Add(time.Duration(i)*time.Second)), t0.Add(time.Minute))
					Expect(err).NotTo(HaveOccurred())
				}
			}
			// unversioned makes the namespace's data look written by a
			// faultline before layout versions: no layout key.
			unversioned := func() {
				GinkgoHelper()
				Expect(c.Del(ctx, redisstore.LayoutKey(ns)).Err()).To(Succeed())
			}

			It("is stamped by a store's first write into an empty namespace, and never by a read", func() {
				s := open(0)
				Expect(version(s)).To(Equal(0))
				_, err := s.Stats(ctx)
				Expect(err).NotTo(HaveOccurred())
				_, err = s.List(ctx, dlq.Filter{}, "", 10)
				Expect(err).NotTo(HaveOccurred())
				Expect(s.CheckLayout(ctx)).To(Succeed())
				Expect(nsKeys()).To(BeEmpty(), "reads write nothing")

				add(s, "j1")
				Expect(layoutKey()).To(Equal("1"))
				Expect(version(s)).To(Equal(redisstore.LayoutVersion))
				Expect(s.CheckLayout(ctx)).To(Succeed())

				// An audit record is a write too.
				Expect(c.Del(ctx, nsKeys()...).Err()).To(Succeed())
				a := open(0)
				_, err = a.Audit(ctx, dlq.AuditRecord{At: t0, By: "ops", Via: "cli", Action: "purge"})
				Expect(err).NotTo(HaveOccurred())
				Expect(layoutKey()).To(Equal("1"))
			})

			It("leaves data written before versions unstamped: 0, for Upgrade", func() {
				add(open(0), "j1")
				unversioned()
				s := open(0)
				add(s, "j2")
				Expect(layoutKey()).To(BeEmpty())
				Expect(version(s)).To(Equal(0))
				Expect(s.CheckLayout(ctx)).To(Succeed())
			})

			It("refuses a newer layout, naming both versions, and writes nothing into it", func() {
				add(open(0), "j1")
				Expect(c.Set(ctx, redisstore.LayoutKey(ns), "7", 0).Err()).To(Succeed())
				s := open(0)
				Expect(version(s)).To(Equal(7))
				err := s.CheckLayout(ctx)
				Expect(err).To(MatchError(redisstore.ErrNewerLayout))
				Expect(err.Error()).To(And(ContainSubstring("layout version 7"), ContainSubstring("layout version 1"),
					ContainSubstring("use a newer faultline")))

				_, err = s.Add(ctx, deadEntry("j2", t0), t0.Add(time.Minute))
				Expect(err).To(MatchError(redisstore.ErrNewerLayout))
				_, err = s.Audit(ctx, dlq.AuditRecord{At: t0, Action: "requeue"})
				Expect(err).To(MatchError(redisstore.ErrNewerLayout))
				_, err = s.Upgrade(ctx, false)
				Expect(err).To(MatchError(redisstore.ErrNewerLayout))
				Expect(c.HKeys(ctx, prefix+":dlq:entries").Val()).To(Equal([]string{"j1"}))
				Expect(c.Exists(ctx, redisstore.AuditStreamKey(ns)).Val()).To(BeZero())
				Expect(layoutKey()).To(Equal("7"))

				// A layout this build cannot read at all is refused too.
				Expect(c.Set(ctx, redisstore.LayoutKey(ns), "v2-beta", 0).Err()).To(Succeed())
				_, err = open(0).Add(ctx, deadEntry("j3", t0), t0.Add(time.Minute))
				Expect(err).To(MatchError(redisstore.ErrNewerLayout))
				Expect(err.Error()).To(ContainSubstring(`"v2-beta"`))
				Expect(open(0).CheckLayout(ctx)).NotTo(Succeed())
			})

			It("upgrades nothing in an empty namespace or one at this layout", func() {
				s := open(0)
				rep, err := s.Upgrade(ctx, false)
				Expect(err).NotTo(HaveOccurred())
				Expect(rep.Empty).To(BeTrue())
				Expect(rep.Stamped).To(BeFalse())
				Expect(nsKeys()).To(BeEmpty())

				add(s, "j1")
				rep, err = s.Upgrade(ctx, false)
				Expect(err).NotTo(HaveOccurred())
				Expect(rep.Current).To(BeTrue())
				Expect(rep.From).To(Equal(redisstore.LayoutVersion))
				Expect(rep.Checked).To(BeZero())
			})

			Describe("of data with indexes missing or wrong", func() {
				const n = 40
				var s *redisstore.Store
				BeforeEach(func() {
					s = open(7)
					ids := make([]string, n)
					for i := range ids {
						ids[i] = entryID(i)
					}
					add(s, ids...)
					Expect(s.Quarantine(ctx, entryID(1), "poison", t0.Add(2*time.Minute))).To(Succeed())
					unversioned()

					raw, err := c.HGet(ctx, prefix+":dlq:entries", entryID(2)).Result()
					Expect(err).NotTo(HaveOccurred())
					e := deadEntry("raw-1", t0.Add(time.Hour))
					e.LastFailedAt, e.FirstFailedAt, e.Status = t0.Add(time.Hour), t0.Add(time.Hour), dlq.Failed
					b, err := dlq.Encode(e)
					Expect(err).NotTo(HaveOccurred())
					pipe := c.TxPipeline()
					// An entry written without any index.
					pipe.HSet(ctx, prefix+":dlq:entries", "raw-1", b)
					// Its meta lost, and another's place in the time index.
					pipe.Del(ctx, prefix+":dlq:m:"+entryID(3))
					pipe.ZRem(ctx, prefix+":dlq:bytime", entryID(4))
					// One in a second status index; the quarantined one out of its own.
					pipe.ZAdd(ctx, prefix+":dlq:st:deleted", redis.Z{Score: 1, Member: entryID(5)})
					pipe.ZRem(ctx, prefix+":dlq:st:quarantined", entryID(1))
					// A meta of before the error-text filter: no folded text.
					pipe.HDel(ctx, prefix+":dlq:etx", entryID(7))
					// Bytes replaced in place by ones that do not decode.
					pipe.HSet(ctx, prefix+":dlq:entries", entryID(6), `{"job": truncated`)
					// A stray: indexed, with meta, counted, but with no entry.
					pipe.HSet(ctx, prefix+":dlq:m:ghost", "rev", "1", "st", "failed", "sev", "medium", "cls", "permanent", "task", "charge", "att", "0", "et", "")
					pipe.ZAdd(ctx, prefix+":dlq:bytime", redis.Z{Score: 5, Member: "ghost"})
					pipe.ZAdd(ctx, prefix+":dlq:st:failed", redis.Z{Score: 5, Member: "ghost"})
					for _, counter := range []string{"st:failed", "sev:medium", "cls:permanent", "task:charge"} {
						pipe.HIncrBy(ctx, prefix+":dlq:stats", counter, 1)
					}
					// A counter off by some.
					pipe.HIncrBy(ctx, prefix+":dlq:stats", "st:requeued", 3)
					_, err = pipe.Exec(ctx)
					Expect(err).NotTo(HaveOccurred())
					Expect(raw).NotTo(BeEmpty())
				})

				// dump is every key of the namespace with its value (miniredis
				// has no DUMP for most types).
				dump := func() map[string]string {
					GinkgoHelper()
					out := map[string]string{}
					for _, k := range nsKeys() {
						var v any
						var err error
						switch typ := c.Type(ctx, k).Val(); typ {
						case "string":
							v, err = c.Get(ctx, k).Result()
						case "hash":
							v, err = c.HGetAll(ctx, k).Result()
						case "zset":
							v, err = c.ZRangeWithScores(ctx, k, 0, -1).Result()
						case "stream":
							v, err = c.XRange(ctx, k, "-", "+").Result()
						default:
							Fail(fmt.Sprintf("key %s of type %q", k, typ))
						}
						Expect(err).NotTo(HaveOccurred())
						out[k] = fmt.Sprint(v)
					}
					return out
				}
				listed := func() []string {
					GinkgoHelper()
					var ids []string
					cursor := ""
					for {
						page, err := s.List(ctx, dlq.Filter{}, cursor, 100)
						Expect(err).NotTo(HaveOccurred())
						for _, e := range page.Entries {
							ids = append(ids, e.ID())
						}
						if cursor = page.Next; cursor == "" {
							return ids
						}
					}
				}

				It("counts in a dry run, writing nothing, then rebuilds them and stamps the layout; again, it finds nothing", func() {
					before := dump()
					rep, err := s.Upgrade(ctx, true)
					Expect(err).NotTo(HaveOccurred())
					Expect(rep).To(Equal(redisstore.UpgradeReport{Namespace: ns, From: 0, To: 1, DryRun: true,
						Checked: n + 1, Fixed: 7, Corrupt: 1, Strays: 1, Counters: 3}))
					Expect(dump()).To(Equal(before), "a dry run writes nothing")

					rep, err = s.Upgrade(ctx, false)
					Expect(err).NotTo(HaveOccurred())
					Expect(rep).To(Equal(redisstore.UpgradeReport{Namespace: ns, From: 0, To: 1,
						Checked: n + 1, Fixed: 7, Corrupt: 1, Strays: 1, Counters: 1, Stamped: true}),
						"once the entries are re-indexed, only the counter of no index is off")
					Expect(layoutKey()).To(Equal("1"))

					st, err := s.Stats(ctx)
					Expect(err).NotTo(HaveOccurred())
					Expect(st.Total).To(Equal(n + 1))
					Expect(st.Corrupt).To(Equal(1))
					Expect(st.ByStatus).To(Equal(map[string]int{"failed": n - 1, "quarantined": 1}))
					Expect(st.ByTask).To(Equal(map[string]int{"charge": n}))
					Expect(listed()).To(HaveLen(n+1), "every entry listed once, the stray gone")
					Expect(listed()).To(ContainElements("raw-1", entryID(3), entryID(4), entryID(6)))
					Expect(c.Exists(ctx, prefix+":dlq:m:ghost").Val()).To(BeZero())
					Expect(c.ZScore(ctx, prefix+":dlq:st:deleted", entryID(5)).Err()).To(Equal(redis.Nil))
					q, err := s.List(ctx, dlq.Filter{Statuses: []dlq.Status{dlq.Quarantined}}, "", 10)
					Expect(err).NotTo(HaveOccurred())
					Expect(q.Entries).To(HaveLen(1))
					Expect(q.Entries[0].ID()).To(Equal(entryID(1)))

					// Idempotent: with the key gone again, a second run fixes nothing.
					unversioned()
					before = dump()
					rep, err = s.Upgrade(ctx, false)
					Expect(err).NotTo(HaveOccurred())
					Expect(rep).To(Equal(redisstore.UpgradeReport{Namespace: ns, From: 0, To: 1, Checked: n + 1, Corrupt: 1, Stamped: true}))
					after := dump()
					Expect(after).To(HaveKey(redisstore.LayoutKey(ns)))
					delete(after, redisstore.LayoutKey(ns))
					Expect(after).To(Equal(before), "a run with nothing to fix writes the layout key only")
				})
			})
		})
	}
})
