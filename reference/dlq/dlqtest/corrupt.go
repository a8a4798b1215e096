package dlqtest

import (
	"bytes"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/store"
)

// exerciseCorrupt declares the specs of corrupt entries.
func exerciseCorrupt(newHarness func(cfg store.Config) Harness) {
	Describe("corrupt entries", func() {
		var (
			cfg store.Config
			f   *fixture
		)
		BeforeEach(func() { cfg = store.Config{} })
		JustBeforeEach(func() { f = build(newHarness, cfg) })

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
}
