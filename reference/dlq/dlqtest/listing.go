package dlqtest

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/store"
)

// exerciseListing declares the specs of listing and stats.
func exerciseListing(newHarness func(cfg store.Config) Harness) {
	Describe("listing and stats", func() {
		var (
			cfg store.Config
			f   *fixture
		)
		BeforeEach(func() { cfg = store.Config{} })
		JustBeforeEach(func() { f = build(newHarness, cfg) })

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
}

// exercisePagination declares the specs of pagination.
func exercisePagination(newHarness func(cfg store.Config) Harness) {
	Describe("pagination", func() {
		var (
			cfg store.Config
			f   *fixture
		)
		BeforeEach(func() { cfg = store.Config{} })
		JustBeforeEach(func() { f = build(newHarness, cfg) })

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
}
