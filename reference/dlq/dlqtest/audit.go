package dlqtest

import (
	"context"
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/dlq"
)

// AuditHarness is one backend's audit stream for ExerciseAuditor.
type AuditHarness struct {
	// Auditor is the stream under test, empty.
	Auditor dlq.Auditor
	// Slack is how many records beyond its cap the stream may keep: 0 for
	// a store that trims exactly, about a stream node (100 by default) for
	// Redis's approximate XADD MAXLEN ~.
	Slack int
}

// ExerciseAuditor declares the conformance specs of dlq.Auditor.
// newHarness builds an empty stream capped at limit records. The specs pin
// down: Audit returns the record's ID (the caller's ID is ignored) and
// AuditLog gives the records back whole, newest first; a page of limit
// records ends with Next, the cursor of the next page, "" exactly when no
// older record follows; a cursor is exclusive (the next page starts with
// the record before it) and a record appended after a page was read never
// shows on the pages after it; a full stream drops its oldest records
// first, keeping between limit and limit+Slack of the newest; a record
// keeps its first dlq.MaxAuditIDs IDs and its counts whole; concurrent appends
// are all kept, each under its own ID. A limit below 1 and a cursor the
// stream did not hand out are errors.
func ExerciseAuditor(newHarness func(limit int) AuditHarness) {
	Describe("dlq.Auditor conformance", func() {
		var (
			ctx   = context.Background()
			limit int
			h     AuditHarness
			a     dlq.Auditor
		)
		BeforeEach(func() { limit = 10_000 })
		JustBeforeEach(func() {
			h = newHarness(limit)
			a = h.Auditor
			Expect(a).NotTo(BeNil(), "the harness has no Auditor")
			page, err := a.AuditLog(ctx, "", 10)
			Expect(err).NotTo(HaveOccurred())
			Expect(page.Records).To(BeEmpty(), "the factory must build an empty stream")
		})

		// record is the n-th record of a run, acted n seconds after T0.
		record := func(n int) dlq.AuditRecord {
			return dlq.AuditRecord{
				At: at(time.Duration(n) * time.Second), By: "alice", Via: "cli", Action: "requeue", Phase: "done",
				IDs: []string{fmt.Sprintf("j%d", n)}, Filter: "--task charge", CutOff: at(time.Duration(n) * time.Second),
				Stated: n, Moved: n, Skipped: 0, Note: fmt.Sprintf("run %d", n),
			}
		}
		appendAll := func(from, to int) []string {
			GinkgoHelper()
			var ids []string
			for n := from; n <= to; n++ {
				id, err := a.Audit(ctx, record(n))
				Expect(err).NotTo(HaveOccurred())
				Expect(id).NotTo(BeEmpty())
				ids = append(ids, id)
			}
			return ids
		}
		// readAll pages through the whole stream, pageSize at a time.
		readAll := func(pageSize int) []dlq.AuditRecord {
			GinkgoHelper()
			var out []dlq.AuditRecord
			cursor := ""
			for range 10_000 {
				page, err := a.AuditLog(ctx, cursor, pageSize)
				Expect(err).NotTo(HaveOccurred())
				Expect(len(page.Records)).To(BeNumerically("<=", pageSize))
				out = append(out, page.Records...)
				if page.Next == "" {
					return out
				}
				Expect(page.Records).To(HaveLen(pageSize), "a page short of the limit is the last one")
				Expect(page.Next).To(Equal(page.Records[len(page.Records)-1].ID), "Next is the last record's ID")
				cursor = page.Next
			}
			Fail("the stream's pages never end")
			return nil
		}
		idsOf := func(rs []dlq.AuditRecord) []string {
			out := make([]string, len(rs))
			for i, r := range rs {
				out[i] = r.ID
			}
			return out
		}
		reversed := func(s []string) []string {
			out := make([]string, len(s))
			for i, v := range s {
				out[len(s)-1-i] = v
			}
			return out
		}
		notes := func(rs []dlq.AuditRecord) []string {
			out := make([]string, len(rs))
			for i, r := range rs {
				out[i] = r.Note
			}
			return out
		}

		It("appends records and reads them back whole, newest first, under the IDs it returned", func() {
			r := record(1)
			r.ID = "the caller's ID is ignored"
			first, err := a.Audit(ctx, r)
			Expect(err).NotTo(HaveOccurred())
			Expect(first).NotTo(Equal(r.ID))
			ids := append([]string{first}, appendAll(2, 3)...)

			page, err := a.AuditLog(ctx, "", 10)
			Expect(err).NotTo(HaveOccurred())
			Expect(page.Next).To(BeEmpty())
			Expect(idsOf(page.Records)).To(Equal(reversed(ids)))
			for i, got := range page.Records {
				want := record(3 - i)
				want.ID = ids[2-i]
				Expect(got.At).To(BeTemporally("==", want.At))
				Expect(got.CutOff).To(BeTemporally("==", want.CutOff))
				got.At, got.CutOff, want.At, want.CutOff = time.Time{}, time.Time{}, time.Time{}, time.Time{}
				Expect(got).To(Equal(want))
			}

			// A one-step action: no phase, filter or cut-off.
			id, err := a.Audit(ctx, dlq.AuditRecord{At: at(time.Minute), By: "bob", Via: "ui", Action: "quarantine",
				IDs: []string{"j9"}, Stated: 1, Moved: 1, Note: "poison"})
			Expect(err).NotTo(HaveOccurred())
			page, err = a.AuditLog(ctx, "", 1)
			Expect(err).NotTo(HaveOccurred())
			Expect(page.Records).To(HaveLen(1))
			got := page.Records[0]
			Expect(got.ID).To(Equal(id))
			Expect(got.Phase).To(BeEmpty())
			Expect(got.Filter).To(BeEmpty())
			Expect(got.CutOff.IsZero()).To(BeTrue())
			Expect(got.Action).To(Equal("quarantine"))
			Expect(page.Next).To(Equal(id), "an older record follows")
		})

		It("pages with exclusive cursors: every record once, in order, none appended later", func() {
			ids := appendAll(1, 7)
			for _, size := range []int{1, 3, 7, 8} {
				Expect(idsOf(readAll(size))).To(Equal(reversed(ids)), "pages of %d", size)
			}

			first, err := a.AuditLog(ctx, "", 3)
			Expect(err).NotTo(HaveOccurred())
			Expect(notes(first.Records)).To(Equal([]string{"run 7", "run 6", "run 5"}))
			appendAll(8, 9)
			second, err := a.AuditLog(ctx, first.Next, 3)
			Expect(err).NotTo(HaveOccurred())
			Expect(notes(second.Records)).To(Equal([]string{"run 4", "run 3", "run 2"}))
			last, err := a.AuditLog(ctx, second.Next, 3)
			Expect(err).NotTo(HaveOccurred())
			Expect(notes(last.Records)).To(Equal([]string{"run 1"}))
			Expect(last.Next).To(BeEmpty())

			// The oldest record's ID as a cursor: nothing before it.
			end, err := a.AuditLog(ctx, ids[0], 3)
			Expect(err).NotTo(HaveOccurred())
			Expect(end.Records).To(BeEmpty())
			Expect(end.Next).To(BeEmpty())
		})

		It("refuses a limit below 1 and a cursor it did not hand out", func() {
			appendAll(1, 2)
			_, err := a.AuditLog(ctx, "", 0)
			Expect(err).To(HaveOccurred())
			for _, c := range []string{"not-a-cursor", "12-", "-3", "1-2-3"} {
				_, err = a.AuditLog(ctx, c, 5)
				Expect(err).To(HaveOccurred(), "cursor %q", c)
			}
		})

		When("the stream is full", func() {
			BeforeEach(func() { limit = 10 })

			It("drops the oldest records first, keeping the newest", func() {
				n := limit + h.Slack + 50
				ids := appendAll(1, n)
				kept := idsOf(readAll(25))
				Expect(len(kept)).To(BeNumerically(">=", limit))
				Expect(len(kept)).To(BeNumerically("<=", limit+h.Slack))
				Expect(kept).To(Equal(reversed(ids)[:len(kept)]), "the newest records, none missing between them")
			})
		})

		It("keeps the first dlq.MaxAuditIDs IDs of a record and its counts whole", func() {
			r := record(1)
			r.IDs = nil
			for i := range 3 * dlq.MaxAuditIDs {
				r.IDs = append(r.IDs, fmt.Sprintf("job-%04d", i))
			}
			r.Stated, r.Moved, r.Skipped = 3*dlq.MaxAuditIDs, 3*dlq.MaxAuditIDs-2, 2
			_, err := a.Audit(ctx, r)
			Expect(err).NotTo(HaveOccurred())
			page, err := a.AuditLog(ctx, "", 1)
			Expect(err).NotTo(HaveOccurred())
			Expect(page.Records).To(HaveLen(1))
			got := page.Records[0]
			Expect(got.IDs).To(Equal(r.IDs[:dlq.MaxAuditIDs]))
			Expect([]int{got.Stated, got.Moved, got.Skipped}).To(Equal([]int{3 * dlq.MaxAuditIDs, 3*dlq.MaxAuditIDs - 2, 2}))
			Expect(r.IDs).To(HaveLen(3*dlq.MaxAuditIDs), "the caller's record is not changed")
		})

		It("keeps every one of concurrent appends, each under its own ID", func() {
			const writers, each = 8, 25
			var (
				wg  sync.WaitGroup
				mu  sync.Mutex
				ids []string
			)
			for w := range writers {
				wg.Add(1)
				go func() {
					defer GinkgoRecover()
					defer wg.Done()
					for i := range each {
						r := record(i)
						r.By = fmt.Sprintf("writer-%d", w)
						id, err := a.Audit(ctx, r)
						Expect(err).NotTo(HaveOccurred())
						mu.Lock()
						ids = append(ids, id)
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			all := readAll(60)
			Expect(idsOf(all)).To(ConsistOf(ids))
			perWriter := map[string]int{}
			for _, r := range all {
				perWriter[r.By]++
			}
			Expect(perWriter).To(HaveLen(writers))
			for by, n := range perWriter {
				Expect(n).To(Equal(each), by)
			}
		})
	})
}
