package dlqtest

import (
	"context"
	"fmt"
	"strings"
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

// ExerciseOps declares the conformance specs of what the operator tools need
// beyond dlq.Store (dlq/ops.go): the error-text filter, Stats.Newest, the
// skip reasons of a bulk run, dlq.BulkDeleter, dlq.Importer and
// dlq.RevisionEditor, for a backend whose Harness.DLQ implements all of
// them; newHarness is Exercise's. The specs pin down:
//
//   - Filter.ErrorText selects the entries whose last failure's error text
//     holds it under Unicode simple case folding (É and é, the Kelvin sign
//     and k, ẞ and ß are equal; ß and "ss" are not), at any length of
//     text, in List, RequeueMatching and DeleteMatching alike; earlier
//     failures do not count, and corrupt entries never match it.
//   - Stats.Newest and NewestID are those of the Failed entry with the
//     latest LastFailedAt (the highest ID among equal times); zero when no
//     entry is Failed.
//   - A bulk run's Skipped is the sum of Changed (the entry was written
//     since the run read it: failed again, edited, moved), Gone (removed),
//     Busy (its job is queued or in flight) and Invalid (it cannot be moved
//     as it is: a payload over Config.MaxPayload). To act between a run's
//     reading of an entry and its move, the specs hand the run a context
//     that runs a hook on its k-th Err call, for k = 1, 2, …: a store must
//     look at its context between its steps (so that a run can be
//     interrupted there), and some k must land between a read and a move.
//   - DeleteMatching picks as RequeueMatching does, soft-deletes like
//     Delete (By is recorded; Restore undoes it), never deletes an entry
//     that failed again during the run, counts on a dry run, and two runs at
//     once delete each entry once.
//   - AddIfAbsent writes an entry without a status as Add does, and one
//     with a status exactly as given (an import of an export: status,
//     status history and requeue count kept, no change of its own; only a
//     dead status is a dead letter's event), and writes
//     nothing (false) when the job has an entry (of any status, corrupt
//     ones included) or is queued, in flight, scheduled, in the fallback
//     queue or held; it obeys the capacity like Add; of concurrent imports
//     of one entry exactly one writes.
//   - EditPayloadAt edits as EditPayload when rev is dlq.Revision of the
//     entry as it is, and refuses any other rev with dlq.ErrChanged,
//     changing nothing.
func ExerciseOps(newHarness func(cfg store.Config) Harness) {
	Describe("dlq operator extensions conformance", func() {
		var (
			cfg store.Config
			f   *fixture
		)
		BeforeEach(func() { cfg = store.Config{} })
		JustBeforeEach(func() { f = build(newHarness, cfg) })

		deleter := func() dlq.BulkDeleter {
			GinkgoHelper()
			d, ok := f.d.(dlq.BulkDeleter)
			Expect(ok).To(BeTrue(), "the harness's DLQ (%T) does not implement dlq.BulkDeleter", f.d)
			return d
		}
		importer := func() dlq.Importer {
			GinkgoHelper()
			d, ok := f.d.(dlq.Importer)
			Expect(ok).To(BeTrue(), "the harness's DLQ (%T) does not implement dlq.Importer", f.d)
			return d
		}
		editor := func() dlq.RevisionEditor {
			GinkgoHelper()
			d, ok := f.d.(dlq.RevisionEditor)
			Expect(ok).To(BeTrue(), "the harness's DLQ (%T) does not implement dlq.RevisionEditor", f.d)
			return d
		}
		// addText adds a failed entry for id at T0+d whose last failure's
		// error text is text.
		addText := func(id, text string, d time.Duration) {
			GinkgoHelper()
			e := deadEntry(newJob(id), at(d))
			e.History[0].Error = text
			f.add(e, d)
		}
		texts := func(text string) []string {
			GinkgoHelper()
			return f.listIDs(dlq.Filter{ErrorText: text}, 3)
		}

		Describe("the error-text filter", func() {
			It("selects by the last failure's error text, case-insensitively, never a corrupt entry", func() {
				e := deadEntry(newJob("a"), at(time.Second))
				e.History = []dlq.Failure{
					{At: at(500 * time.Millisecond), Attempt: 1, Error: "dial tcp: Connection Refused", Verdict: e.Verdict},
					{At: at(time.Second), Attempt: 2, Error: "POST /charge: Gateway TIMEOUT after 30s", Verdict: e.Verdict},
				}
				f.add(e, time.Second)
				addText("b", "card declined", 2*time.Second)
				addText("c", "upstream timeout", 3*time.Second)
				f.corrupt("bad", []byte(`{"error": "timeout", truncated`))

				Expect(texts("timeout")).To(Equal([]string{"c", "a"}))
				Expect(texts("TimeOut")).To(Equal([]string{"c", "a"}))
				Expect(texts("gateway timeout after")).To(Equal([]string{"a"}))
				Expect(texts("connection refused")).To(BeEmpty(), "an earlier failure's text does not count")
				Expect(texts("truncated")).To(BeEmpty(), "a corrupt entry never matches the error text")
				Expect(f.listIDs(dlq.Filter{}, 10)).To(ContainElement("bad"))
				Expect(f.listIDs(dlq.Filter{ErrorText: "timeout", Since: at(2 * time.Second)}, 10)).To(Equal([]string{"c"}))
				Expect(f.listIDs(dlq.Filter{ErrorText: "declined", Severities: []classify.Severity{classify.High}}, 10)).To(BeEmpty())

				r, err := f.d.RequeueMatching(f.ctx, dlq.Filter{ErrorText: "TIMEOUT"}, oneMore, at(time.Hour), true)
				Expect(err).NotTo(HaveOccurred())
				Expect(r.Matched).To(Equal(2))
				r, err = deleter().DeleteMatching(f.ctx, dlq.Filter{ErrorText: "Timeout"}, "ops", at(time.Hour), false)
				Expect(err).NotTo(HaveOccurred())
				Expect(r.Matched).To(Equal(2))
				Expect(r.Requeued).To(Equal(2))
				Expect(f.get("a").Status).To(Equal(dlq.Deleted))
				Expect(f.get("c").Status).To(Equal(dlq.Deleted))
				Expect(f.get("b").Status).To(Equal(dlq.Failed))
				Expect(f.get("bad").Corrupt).To(BeTrue())
			})

			It("folds Unicode simply: é and É, the Kelvin sign and k, ẞ and ß, σ ς and Σ match; ß and ss do not", func() {
				addText("fr", "ÉCHEC du paiement", time.Second)
				addText("kelvin", "sensor read 300\u212a", 2*time.Second)
				addText("de", "unknown straße", 3*time.Second)
				addText("el", "ο ΣΊΣΥΦΟΣ failed", 4*time.Second)

				Expect(texts("échec")).To(Equal([]string{"fr"}))
				Expect(texts("ÉCHEC DU")).To(Equal([]string{"fr"}))
				Expect(texts("300k")).To(Equal([]string{"kelvin"}))
				Expect(texts("STRAẞE")).To(Equal([]string{"de"}))
				Expect(texts("STRASSE")).To(BeEmpty(), "simple folding maps one rune to one: ß is not ss")
				Expect(texts("σίσυφος")).To(Equal([]string{"el"}))

				r, err := f.d.RequeueMatching(f.ctx, dlq.Filter{ErrorText: "Échec"}, oneMore, at(time.Hour), false)
				Expect(err).NotTo(HaveOccurred())
				Expect(r.Requeued).To(Equal(1))
				Expect(f.get("fr").Status).To(Equal(dlq.Requeued))
			})

			It("finds text anywhere in a long error, past any copy a store keeps for its index", func() {
				long := strings.Repeat("é", 700) + " and at the very end: Deadline EXCEEDED"
				addText("long", long, time.Second)
				addText("short", "deadline exceeded", 2*time.Second)
				addText("other", strings.Repeat("x", 2000), 3*time.Second)
				Expect(texts("deadline exceeded")).To(Equal([]string{"short", "long"}))
				Expect(texts("ÉÉÉ")).To(Equal([]string{"long"}))
				Expect(texts(strings.Repeat("x", 1500))).To(Equal([]string{"other"}))
				r, err := deleter().DeleteMatching(f.ctx, dlq.Filter{ErrorText: "DEADLINE"}, "ops", at(time.Hour), true)
				Expect(err).NotTo(HaveOccurred())
				Expect(r.Matched).To(Equal(2))
			})

			It("pages a sparse match across many entries, each exactly once", func() {
				var want []string
				for i := range 60 {
					text := "card declined"
					if i%7 == 3 {
						text = fmt.Sprintf("Timeout #%d", i)
						want = append([]string{fmt.Sprintf("t%02d", i)}, want...)
					}
					addText(fmt.Sprintf("t%02d", i), text, time.Duration(i)*time.Second)
				}
				Expect(texts("timeout")).To(Equal(want))
				Expect(f.listIDs(dlq.Filter{ErrorText: "TIMEOUT"}, 1)).To(Equal(want))
			})
		})

		Describe("Stats.Newest", func() {
			It("is the Failed entry with the latest last failure, the highest ID among equal times", func() {
				st := f.stats()
				Expect(st.Newest.IsZero()).To(BeTrue())
				Expect(st.NewestID).To(BeEmpty())

				f.add(deadEntry(newJob("a"), at(time.Second)), time.Second)
				f.add(deadEntry(newJob("c"), at(3*time.Second)), 3*time.Second)
				f.add(deadEntry(newJob("b"), at(3*time.Second)), 3*time.Second)
				f.add(deadEntry(newJob("d"), at(5*time.Second)), 5*time.Second)
				Expect(f.d.Quarantine(f.ctx, "d", "poison", at(6*time.Second))).To(Succeed())
				f.corrupt("zzz", []byte(`not json`))

				st = f.stats()
				Expect(st.NewestID).To(Equal("c"))
				Expect(st.Newest).To(BeTemporally("==", at(3*time.Second)))
				Expect(st.OldestID).To(Equal("a"))

				Expect(f.d.Delete(f.ctx, "c", "ops", at(7*time.Second))).To(Succeed())
				Expect(f.stats().NewestID).To(Equal("b"))
				Expect(f.requeue("b", oneMore, 8*time.Second)).To(Equal(dlq.OutcomeRequeued))
				st = f.stats()
				Expect(st.NewestID).To(Equal("a"))
				Expect(st.Newest).To(BeTemporally("==", at(time.Second)))
				Expect(f.requeue("a", oneMore, 8*time.Second)).To(Equal(dlq.OutcomeRequeued))
				st = f.stats()
				Expect(st.NewestID).To(BeEmpty())
				Expect(st.Newest.IsZero()).To(BeTrue())
			})
		})

		Describe("skip reasons", func() {
			expectSum := func(r dlq.BulkResult) {
				GinkgoHelper()
				Expect(r.Changed+r.Gone+r.Busy+r.Invalid).To(Equal(r.Skipped), "the skip reasons sum to Skipped: %+v", r)
				Expect(r.Requeued+r.Skipped).To(Equal(r.Matched), "%+v", r)
			}

			It("counts a busy job as Busy", func() {
				f.add(deadEntry(newJob("free"), at(time.Second)), time.Second)
				f.enqueue(newJob("busy"), 0)
				f.add(deadEntry(newJob("busy"), at(time.Second)), time.Second)
				r, err := f.d.RequeueMatching(f.ctx, dlq.Filter{}, oneMore, at(time.Hour), false)
				Expect(err).NotTo(HaveOccurred())
				Expect(r).To(Equal(dlq.BulkResult{Matched: 2, Requeued: 1, Skipped: 1, Busy: 1, Batches: r.Batches}))
				expectSum(r)
			})

			When("an entry's payload is over the store's bound", func() {
				BeforeEach(func() { cfg.MaxPayload = 64 })

				It("counts it as Invalid, leaves it Failed and requeues the others", func() {
					f.add(deadEntry(newJob("ok"), at(time.Second)), time.Second)
					big := deadEntry(newJob("big"), at(2*time.Second))
					big.Job.Payload = []byte(`{"pad":"` + strings.Repeat("p", 100) + `"}`)
					big.Status, big.FirstFailedAt, big.LastFailedAt = dlq.Failed, at(2*time.Second), at(2*time.Second)
					big.Changes = []dlq.StatusChange{{At: at(2 * time.Second), To: dlq.Failed}}
					raw, err := dlq.Encode(big)
					Expect(err).NotTo(HaveOccurred())
					f.corrupt("big", raw) // written by a store with a larger bound
					Expect(f.get("big").Corrupt).To(BeFalse())

					r, err := f.d.RequeueMatching(f.ctx, dlq.Filter{}, oneMore, at(time.Hour), false)
					Expect(err).NotTo(HaveOccurred())
					Expect(r).To(Equal(dlq.BulkResult{Matched: 2, Requeued: 1, Skipped: 1, Invalid: 1, Batches: r.Batches}))
					Expect(f.get("big").Status).To(Equal(dlq.Failed))
					Expect(f.get("ok").Status).To(Equal(dlq.Requeued))
					Expect(f.counts()).To(Equal(queue.Counts{Queued: 1}))
				})
			})

			// Entries: gone (purged during the run), again (fails again
			// during the run), busy (its job queued), fine.
			setup := func() {
				GinkgoHelper()
				f.add(deadEntry(newJob("gone"), at(time.Second)), time.Second)
				f.add(deadEntry(newJob("again"), at(2*time.Second)), 2*time.Second)
				f.enqueue(newJob("busy"), 0)
				f.add(deadEntry(newJob("busy"), at(3*time.Second)), 3*time.Second)
				f.add(deadEntry(newJob("fine"), at(4*time.Second)), 4*time.Second)
			}
			// meddle purges "gone" and makes "again" fail again after the
			// run's cut-off (T0+1h), from inside the run.
			meddle := func(f *fixture) func() {
				return func() {
					defer GinkgoRecover()
					n, err := f.d.Purge(context.Background(), at(1500*time.Millisecond), at(61*time.Minute))
					Expect(err).NotTo(HaveOccurred())
					Expect(n).To(Equal(1))
					again := deadEntry(newJob("again"), at(61*time.Minute))
					again.History[0].Attempt = 9
					_, err = f.d.Add(context.Background(), again, at(61*time.Minute))
					Expect(err).NotTo(HaveOccurred())
				}
			}

			It("counts entries purged during a requeue run as Gone, those that failed again as Changed, and never requeues those", func() {
				interleaved := false
				for k := 1; k <= 16 && !interleaved; k++ {
					f = build(newHarness, cfg)
					setup()
					ctx := newHookCtx(k, meddle(f))
					r, err := f.d.RequeueMatching(ctx, dlq.Filter{}, oneMore, at(time.Hour), false)
					Expect(err).NotTo(HaveOccurred())
					Expect(ctx.fired()).To(BeTrue(), "the run never looked at its context (k=%d): the specs act between its steps through it", k)
					expectSum(r)
					Expect(r.Busy).To(Equal(1))
					Expect(f.get("fine").Status).To(Equal(dlq.Requeued))
					Expect(f.get("busy").Status).To(Equal(dlq.Failed))
					again := f.get("again")
					Expect(again.Status).To(Equal(dlq.Failed), "k=%d", k)
					Expect(again.LastFailedAt).To(BeTemporally("==", at(61*time.Minute)))
					f.expectGone("gone")
					interleaved = r.Gone == 1 && r.Changed == 1
					if interleaved {
						Expect(r).To(Equal(dlq.BulkResult{Matched: 4, Requeued: 1, Skipped: 3, Gone: 1, Changed: 1, Busy: 1, Batches: r.Batches}))
						Expect(changes(again)[len(again.Changes)-1]).To(Equal(change(dlq.Failed, dlq.Failed, 61*time.Minute)))
					}
				}
				Expect(interleaved).To(BeTrue(), "no context check of the run fell between its reading of the entries and their move")
			})

			It("counts them alike in a delete run, and never deletes an entry that failed again during it", func() {
				interleaved := false
				for k := 1; k <= 16 && !interleaved; k++ {
					f = build(newHarness, cfg)
					setup()
					ctx := newHookCtx(k, meddle(f))
					r, err := deleter().DeleteMatching(ctx, dlq.Filter{}, "ops", at(time.Hour), false)
					Expect(err).NotTo(HaveOccurred())
					Expect(ctx.fired()).To(BeTrue(), "the run never looked at its context (k=%d)", k)
					expectSum(r)
					Expect(r.Busy).To(BeZero(), "a delete moves no job: a busy one is no reason to skip")
					Expect(f.get("fine").Status).To(Equal(dlq.Deleted))
					Expect(f.get("busy").Status).To(Equal(dlq.Deleted))
					again := f.get("again")
					Expect(again.Status).To(Equal(dlq.Failed), "k=%d: the entry failed again during the run", k)
					last := again.Changes[len(again.Changes)-1]
					Expect(last.To).To(Equal(dlq.Failed))
					Expect(last.At).To(BeTemporally("==", at(61*time.Minute)))
					f.expectGone("gone")
					interleaved = r.Gone == 1 && r.Changed == 1
					if interleaved {
						Expect(r).To(Equal(dlq.BulkResult{Matched: 4, Requeued: 2, Skipped: 2, Gone: 1, Changed: 1, Batches: r.Batches}))
					}
				}
				Expect(interleaved).To(BeTrue(), "no context check of the run fell between its reading of the entries and their move")
			})
		})

		Describe("DeleteMatching", func() {
			It("soft-deletes the Failed entries matching the filter that failed before the cut-off, recording who", func() {
				f.add(failing(newJob("low"), at(time.Second), classify.Low, classify.Transient, "*net.OpError"), time.Second)
				f.add(deadEntry(newJob("m1"), at(2*time.Second)), 2*time.Second)
				f.add(deadEntry(newJob("m2"), at(time.Minute)), time.Minute)
				f.add(deadEntry(newJob("late"), at(2*time.Minute)), 2*time.Minute)
				f.add(deadEntry(newJob("poison"), at(3*time.Second)), 3*time.Second)
				Expect(f.d.Quarantine(f.ctx, "poison", "poison", at(4*time.Second))).To(Succeed())
				f.corrupt("bad", []byte(`{`))
				f.take()

				medium := dlq.Filter{Severities: []classify.Severity{classify.Medium}}
				r, err := deleter().DeleteMatching(f.ctx, medium, "alice", at(time.Minute), true)
				Expect(err).NotTo(HaveOccurred())
				Expect(r).To(Equal(dlq.BulkResult{DryRun: true, Matched: 1, Batches: r.Batches}), "a dry run counts: m2 is not before the cut-off")
				Expect(f.get("m1").Status).To(Equal(dlq.Failed))

				r, err = deleter().DeleteMatching(f.ctx, medium, "alice", at(time.Minute), false)
				Expect(err).NotTo(HaveOccurred())
				Expect(r.Matched).To(Equal(1))
				Expect(r.Requeued).To(Equal(1))
				Expect(r.Skipped).To(BeZero())
				m1 := f.get("m1")
				Expect(m1.Status).To(Equal(dlq.Deleted))
				Expect(changes(m1)).To(Equal([]string{change(0, dlq.Failed, 2*time.Second), change(dlq.Failed, dlq.Deleted, time.Minute)}))
				Expect(m1.Changes[len(m1.Changes)-1].By).To(Equal("alice"))
				Expect(f.get("m2").Status).To(Equal(dlq.Failed))
				Expect(f.get("late").Status).To(Equal(dlq.Failed))
				Expect(f.get("poison").Status).To(Equal(dlq.Quarantined), "the zero status filter picks Failed entries only")
				Expect(f.take()).To(BeEmpty(), "a delete moves no job")

				r, err = deleter().DeleteMatching(f.ctx, dlq.Filter{Statuses: []dlq.Status{dlq.Quarantined}}, "bob", at(time.Hour), false)
				Expect(err).NotTo(HaveOccurred())
				Expect(r.Requeued).To(Equal(1))
				Expect(f.get("poison").Status).To(Equal(dlq.Deleted))
				Expect(f.d.Restore(f.ctx, "poison", "bob", at(2*time.Hour))).To(Succeed())
				Expect(f.get("poison").Status).To(Equal(dlq.Quarantined))
				Expect(f.get("bad").Corrupt).To(BeTrue())
				expectMap(f.stats().ByStatus, map[string]int{"failed": 3, "deleted": 1, "quarantined": 1}, "ByStatus")
			})

			When("BatchSize is 10", func() {
				BeforeEach(func() { cfg.BatchSize = 10 })

				It("deletes 25 entries in at least 3 bounded steps", func() {
					for i := range 25 {
						f.add(deadEntry(newJob(fmt.Sprintf("b%02d", i)), at(time.Duration(i)*time.Second)), time.Duration(i)*time.Second)
					}
					r, err := deleter().DeleteMatching(f.ctx, dlq.Filter{}, "ops", at(time.Hour), false)
					Expect(err).NotTo(HaveOccurred())
					Expect(r.Matched).To(Equal(25))
					Expect(r.Requeued).To(Equal(25))
					Expect(r.Batches).To(BeNumerically(">=", 3))
					expectMap(f.stats().ByStatus, map[string]int{"deleted": 25}, "ByStatus")
				})

				It("deletes each of 1,000 entries exactly once when two runs race over them", func() {
					const n = 1000
					for i := range n {
						f.add(deadEntry(newJob(fmt.Sprintf("race-%04d", i)), at(time.Duration(i)*time.Millisecond)), time.Duration(i)*time.Millisecond)
					}
					var (
						wg      sync.WaitGroup
						results [2]dlq.BulkResult
						errs    [2]error
					)
					for g := range 2 {
						wg.Go(func() {
							defer GinkgoRecover()
							results[g], errs[g] = deleter().DeleteMatching(context.Background(), dlq.Filter{}, fmt.Sprintf("run%d", g), at(time.Hour), false)
						})
					}
					wg.Wait()
					Expect(errs[0]).NotTo(HaveOccurred())
					Expect(errs[1]).NotTo(HaveOccurred())
					Expect(results[0].Requeued+results[1].Requeued).To(Equal(n), "%+v", results)
					for _, r := range results {
						Expect(r.Requeued + r.Skipped).To(BeNumerically("<=", r.Matched))
						Expect(r.Changed).To(Equal(r.Skipped), "the other run's deletes are changes: %+v", r)
					}
					expectMap(f.stats().ByStatus, map[string]int{"deleted": n}, "ByStatus")
					for _, id := range f.listIDs(dlq.Filter{}, 500) {
						deletes := 0
						for _, c := range f.get(id).Changes {
							if c.To == dlq.Deleted {
								deletes++
							}
						}
						Expect(deletes).To(Equal(1), "entry %s deleted %d times", id, deletes)
					}
				})
			})
		})

		Describe("AddIfAbsent", func() {
			It("writes an absent entry as Add does", func() {
				e := deadEntry(newJob("imp"), at(time.Second))
				e.LastFailedAt = at(time.Second)
				res, ok, err := importer().AddIfAbsent(f.ctx, e, at(time.Minute))
				Expect(err).NotTo(HaveOccurred())
				Expect(ok).To(BeTrue())
				Expect(res.Created).To(BeTrue())
				Expect(res.Evicted).To(BeEmpty())
				got := f.get("imp")
				Expect(got.Status).To(Equal(dlq.Failed))
				Expect(got.Version).To(Equal(dlq.EncodingVersion))
				Expect(got.LastFailedAt).To(BeTemporally("==", at(time.Second)))
				Expect(changes(got)).To(Equal([]string{change(0, dlq.Failed, time.Minute)}))
				equalJob(got.Job, e.Job)
				equalHistory(got.History, e.History)
				Expect(f.take()).To(Equal([]string{ev("imp", none, dead, disposition.DeadLetter, time.Minute, 0)}))
				Expect(f.stats().Total).To(Equal(1))
			})

			It("restores an exported entry exactly as given: status, status history, failures, requeue count", func() {
				for _, st := range []dlq.Status{dlq.Requeued, dlq.Failed, dlq.Deleted} {
					id := "exp-" + st.String()
					e := deadEntry(newJob(id), at(time.Second))
					e.LastFailedAt, e.FirstFailedAt = at(time.Second), at(time.Second)
					e.SourceQueue = "payments"
					e.Status, e.Requeues = st, 1
					e.Changes = []dlq.StatusChange{
						{At: at(time.Second), To: dlq.Failed, By: "worker"},
						{At: at(2 * time.Second), From: dlq.Failed, To: st, By: "alice", Reason: "exported"},
					}
					_, ok, err := importer().AddIfAbsent(f.ctx, e, at(time.Minute))
					Expect(err).NotTo(HaveOccurred())
					Expect(ok).To(BeTrue())
					got := f.get(id)
					Expect(got.Status).To(Equal(st))
					Expect(got.Requeues).To(Equal(1))
					Expect(got.SourceQueue).To(Equal("payments"))
					Expect(got.LastFailedAt).To(BeTemporally("==", at(time.Second)))
					Expect(got.Changes).To(HaveLen(2), "no status change of the import's own")
					Expect(got.Changes[1].By).To(Equal("alice"))
					equalHistory(got.History, e.History)
					Expect(f.stats().ByStatus).To(HaveKeyWithValue(st.String(), 1))
				}
				// Only the dead ones are dead letters again; the requeued one
				// is a record of a job that is elsewhere.
				evs := f.take()
				Expect(evs).To(HaveLen(2), "%v", evs)
				Expect(evs).NotTo(ContainElement(ContainSubstring("exp-requeued")))
			})

			It("writes nothing when the job has an entry, of any status, corrupt ones too", func() {
				f.add(deadEntry(newJob("failed"), at(time.Second)), time.Second)
				f.add(deadEntry(newJob("requeued"), at(time.Second)), time.Second)
				Expect(f.requeue("requeued", oneMore, 2*time.Second)).To(Equal(dlq.OutcomeRequeued))
				f.drainIDs(job.DefaultQueue, 2*time.Second)
				f.add(deadEntry(newJob("deleted"), at(time.Second)), time.Second)
				Expect(f.d.Delete(f.ctx, "deleted", "ops", at(2*time.Second))).To(Succeed())
				f.corrupt("bad", []byte(`{`))
				before := map[string]dlq.Entry{}
				for _, id := range []string{"failed", "requeued", "deleted"} {
					before[id] = f.get(id)
				}
				f.take()
				for _, id := range []string{"failed", "requeued", "deleted", "bad"} {
					res, ok, err := importer().AddIfAbsent(f.ctx, deadEntry(newJob(id), at(time.Minute)), at(time.Minute))
					Expect(err).NotTo(HaveOccurred(), id)
					Expect(ok).To(BeFalse(), id)
					Expect(res).To(Equal(dlq.AddResult{}), id)
				}
				for id, b := range before {
					a := f.get(id)
					Expect(changes(a)).To(Equal(changes(b)), id)
					Expect(a.History).To(HaveLen(len(b.History)), id)
				}
				Expect(f.get("bad").Corrupt).To(BeTrue())
				Expect(f.take()).To(BeEmpty())
			})

			It("writes nothing while a job of that ID is queued, in flight, scheduled, in the fallback queue or held", func() {
				for _, id := range []string{"inflight", "scheduled", "fallback", "held"} {
					f.enqueue(newJob(id), 0)
					j, l := f.dequeue(job.DefaultQueue, 0)
					Expect(j.ID).To(Equal(id))
					switch id {
					case "scheduled":
						Expect(f.q.Retry(f.ctx, l, j, at(time.Hour), at(0))).To(Succeed())
					case "fallback":
						Expect(f.q.Divert(f.ctx, l, j, at(0))).To(Succeed())
					case "held":
						Expect(f.d.Hold(f.ctx, l, deadEntry(j, at(0)), at(0))).To(Succeed())
					}
				}
				f.enqueue(newJob("queued"), 0)
				c := f.counts()
				Expect(c.Queued + c.InFlight + c.Scheduled + c.Fallback + c.Held).To(Equal(5))
				for _, id := range []string{"queued", "inflight", "scheduled", "fallback", "held"} {
					_, ok, err := importer().AddIfAbsent(f.ctx, deadEntry(newJob(id), at(time.Minute)), at(time.Minute))
					Expect(err).NotTo(HaveOccurred(), id)
					Expect(ok).To(BeFalse(), id)
				}
				Expect(f.stats().Total).To(BeZero())
				Expect(f.counts()).To(Equal(c))
			})

			It("writes an entry once when many import it at once", func() {
				const n = 16
				var (
					wg    sync.WaitGroup
					wrote atomic.Int32
				)
				for range n {
					wg.Go(func() {
						defer GinkgoRecover()
						_, ok, err := importer().AddIfAbsent(context.Background(), deadEntry(newJob("once"), at(time.Second)), at(time.Minute))
						Expect(err).NotTo(HaveOccurred())
						if ok {
							wrote.Add(1)
						}
					})
				}
				wg.Wait()
				Expect(wrote.Load()).To(Equal(int32(1)))
				got := f.get("once")
				Expect(got.History).To(HaveLen(1))
				Expect(got.Changes).To(HaveLen(1))
				Expect(f.take()).To(HaveLen(1))
			})

			When("the DLQ is full and rejects", func() {
				BeforeEach(func() {
					cfg.DLQCapacity = 1
					cfg.Overflow = store.Reject
				})

				It("refuses with ErrFull, writing nothing, and reports the overflow", func() {
					_, ok, err := importer().AddIfAbsent(f.ctx, deadEntry(newJob("first"), at(time.Second)), at(time.Second))
					Expect(err).NotTo(HaveOccurred())
					Expect(ok).To(BeTrue())
					_, ok, err = importer().AddIfAbsent(f.ctx, deadEntry(newJob("second"), at(2*time.Second)), at(2*time.Second))
					Expect(err).To(MatchError(dlq.ErrFull))
					Expect(ok).To(BeFalse())
					f.expectGone("second")
					Expect(f.stats().Rejected).To(Equal(1))
					Expect(f.rec.Overflows()).To(HaveLen(1))
					Expect(f.rec.Overflows()[0].JobID).To(Equal("second"))
				})
			})

			When("the DLQ is full and evicts the oldest", func() {
				BeforeEach(func() {
					cfg.DLQCapacity = 1
					cfg.Overflow = store.EvictOldest
				})

				It("evicts to make room and reports it", func() {
					_, ok, err := importer().AddIfAbsent(f.ctx, deadEntry(newJob("first"), at(time.Second)), at(time.Second))
					Expect(err).NotTo(HaveOccurred())
					Expect(ok).To(BeTrue())
					res, ok, err := importer().AddIfAbsent(f.ctx, deadEntry(newJob("second"), at(2*time.Second)), at(2*time.Second))
					Expect(err).NotTo(HaveOccurred())
					Expect(ok).To(BeTrue())
					Expect(res.Evicted).To(Equal([]string{"first"}))
					f.expectGone("first")
					Expect(f.stats().Evicted).To(Equal(1))
					Expect(f.rec.Overflows()).To(HaveLen(1))
					Expect(f.rec.Overflows()[0].Evicted).To(Equal([]string{"first"}))
				})
			})
		})

		Describe("EditPayloadAt", func() {
			It("edits at the revision read and refuses a stale one with ErrChanged, changing nothing", func() {
				f.add(deadEntry(newJob("j1"), at(time.Second)), time.Second)
				read := f.get("j1")
				rev := dlq.Revision(&read)
				Expect(f.get("j1")).To(WithTransform(func(e dlq.Entry) string { return dlq.Revision(&e) }, Equal(rev)), "a revision is stable while nothing changes")

				got, err := editor().EditPayloadAt(f.ctx, "j1", rev, []byte(`{"cents":1}`), "alice", at(time.Minute))
				Expect(err).NotTo(HaveOccurred())
				Expect(string(got.Job.Payload)).To(Equal(`{"cents":1}`))
				after := f.get("j1")
				Expect(dlq.Revision(&after)).NotTo(Equal(rev))

				_, err = editor().EditPayloadAt(f.ctx, "j1", rev, []byte(`{"cents":2}`), "bob", at(2*time.Minute))
				Expect(err).To(MatchError(dlq.ErrChanged))
				now := f.get("j1")
				Expect(string(now.Job.Payload)).To(Equal(`{"cents":1}`))
				Expect(changes(now)).To(Equal(changes(after)))

				// A failure in between changes the revision too.
				rev = dlq.Revision(&now)
				again := deadEntry(newJob("j1"), at(3*time.Minute))
				again.Job.Payload = now.Job.Payload
				f.add(again, 3*time.Minute)
				_, err = editor().EditPayloadAt(f.ctx, "j1", rev, []byte(`{"cents":3}`), "bob", at(4*time.Minute))
				Expect(err).To(MatchError(dlq.ErrChanged))
				Expect(string(f.get("j1").Job.Payload)).To(Equal(`{"cents":1}`))

				_, err = editor().EditPayloadAt(f.ctx, "ghost", rev, []byte(`{}`), "bob", at(4*time.Minute))
				Expect(err).To(MatchError(dlq.ErrNotFound))
			})
		})
	})
}

// hookCtx is a context whose k-th Err call runs a hook first (once): how
// the specs act from inside a bulk run, between its steps.
type hookCtx struct {
	context.Context
	k     int64
	calls atomic.Int64
	done  atomic.Bool
	hook  func()
}

func newHookCtx(k int, hook func()) *hookCtx {
	return &hookCtx{Context: context.Background(), k: int64(k), hook: hook}
}

// Err runs the hook on the k-th call, then reports no error.
func (c *hookCtx) Err() error {
	if c.calls.Add(1) == c.k {
		c.hook()
		c.done.Store(true)
	}
	return nil
}

func (c *hookCtx) fired() bool { return c.done.Load() }
