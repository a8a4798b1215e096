package dlqtest

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/store"
)

// ExercisePayloadEditor declares the conformance specs of dlq.PayloadEditor,
// for a backend whose Harness.DLQ implements it; newHarness is Exercise's.
// The specs pin down: the payload is replaced and nothing else of the entry
// changes (status, times, failures, listing order) but one StatusChange{At:
// now, From: status, To: status, By: by, Reason: dlq.EditReason(old, new)}
// appended; Failed and Quarantined entries may be edited, Requeued, Deleted
// and corrupt ones are refused with dlq.ErrWrongStatus, an unknown ID with
// dlq.ErrNotFound, a payload over Config.MaxPayload with job.ErrInvalid,
// each changing nothing; a requeue after an edit sends the edited payload.
func ExercisePayloadEditor(newHarness func(cfg store.Config) Harness) {
	Describe("dlq.PayloadEditor conformance", func() {
		var (
			cfg store.Config
			f   *fixture
			ed  dlq.PayloadEditor
		)
		BeforeEach(func() { cfg = store.Config{} })
		JustBeforeEach(func() {
			f = build(newHarness, cfg)
			var ok bool
			ed, ok = f.d.(dlq.PayloadEditor)
			Expect(ok).To(BeTrue(), "the harness's DLQ (%T) does not implement dlq.PayloadEditor", f.d)
		})

		edit := func(id, payload string, d time.Duration) (dlq.Entry, error) {
			return ed.EditPayload(f.ctx, id, []byte(payload), "alice", at(d))
		}

		It("replaces the payload and records the edit, who made it, and nothing else", func() {
			f.add(deadEntry(newJob("j1"), at(time.Second)), time.Second)
			f.add(deadEntry(newJob("j2"), at(2*time.Second)), 2*time.Second)
			before := f.get("j1")
			old := before.Job.Payload

			got, err := edit("j1", `{"order":"j1","cents":999}`, time.Minute)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(got.Job.Payload)).To(Equal(`{"order":"j1","cents":999}`))

			after := f.get("j1")
			Expect(string(after.Job.Payload)).To(Equal(`{"order":"j1","cents":999}`))
			Expect(after.Status).To(Equal(dlq.Failed))
			Expect(changes(after)).To(Equal([]string{change(0, dlq.Failed, time.Second), change(dlq.Failed, dlq.Failed, time.Minute)}))
			last := after.Changes[len(after.Changes)-1]
			Expect(last.By).To(Equal("alice"))
			Expect(last.Reason).To(Equal(dlq.EditReason(old, []byte(`{"order":"j1","cents":999}`))))
			Expect(last.Reason).To(HavePrefix("payload edited: "))

			want := before.Job
			want.Payload = []byte(`{"order":"j1","cents":999}`)
			equalJob(after.Job, want)
			equalHistory(after.History, before.History)
			Expect(after.LastFailedAt).To(BeTemporally("==", before.LastFailedAt))
			Expect(after.FirstFailedAt).To(BeTemporally("==", before.FirstFailedAt))
			Expect(f.listIDs(dlq.Filter{}, 10)).To(Equal([]string{"j2", "j1"}))
			Expect(f.listIDs(dlq.Filter{Statuses: []dlq.Status{dlq.Failed}}, 10)).To(Equal([]string{"j2", "j1"}))
			Expect(f.stats().ByStatus).To(HaveKeyWithValue("failed", 2))

			// A requeue sends the edited job.
			Expect(f.requeue("j1", oneMore, 2*time.Minute)).To(Equal(dlq.OutcomeRequeued))
			j, _ := f.dequeue(job.DefaultQueue, 2*time.Minute)
			Expect(string(j.Payload)).To(Equal(`{"order":"j1","cents":999}`))
		})

		It("edits a quarantined entry, keeping it quarantined", func() {
			f.add(deadEntry(newJob("j1"), at(time.Second)), time.Second)
			Expect(f.d.Quarantine(f.ctx, "j1", "poison", at(2*time.Second))).To(Succeed())
			_, err := edit("j1", `{}`, 3*time.Second)
			Expect(err).NotTo(HaveOccurred())
			e := f.get("j1")
			Expect(e.Status).To(Equal(dlq.Quarantined))
			Expect(changes(e)[len(e.Changes)-1]).To(Equal(change(dlq.Quarantined, dlq.Quarantined, 3*time.Second)))
		})

		It("refuses requeued, deleted and corrupt entries and unknown IDs, changing nothing", func() {
			f.add(deadEntry(newJob("rq"), at(time.Second)), time.Second)
			f.add(deadEntry(newJob("del"), at(time.Second)), time.Second)
			Expect(f.requeue("rq", oneMore, 2*time.Second)).To(Equal(dlq.OutcomeRequeued))
			Expect(f.d.Delete(f.ctx, "del", "bob", at(2*time.Second))).To(Succeed())
			f.corrupt("bad", []byte(`{"job": truncated`))
			before := map[string]dlq.Entry{"rq": f.get("rq"), "del": f.get("del")}

			for _, id := range []string{"rq", "del", "bad"} {
				_, err := edit(id, `{}`, time.Minute)
				Expect(err).To(MatchError(dlq.ErrWrongStatus), id)
			}
			_, err := edit("ghost", `{}`, time.Minute)
			Expect(err).To(MatchError(dlq.ErrNotFound))

			for id, b := range before {
				a := f.get(id)
				Expect(a.Job.Payload).To(Equal(b.Job.Payload), id)
				Expect(changes(a)).To(Equal(changes(b)), id)
			}
			Expect(f.get("bad").Corrupt).To(BeTrue())
		})

		When("the payload is over the store's bound", func() {
			BeforeEach(func() { cfg.MaxPayload = 64 })

			It("refuses it with job.ErrInvalid, changing nothing", func() {
				f.add(deadEntry(newJob("j1"), at(time.Second)), time.Second)
				before := f.get("j1")
				_, err := edit("j1", `{"pad":"`+string(make([]byte, 80))+`"}`, time.Minute)
				Expect(err).To(MatchError(job.ErrInvalid))
				after := f.get("j1")
				Expect(after.Job.Payload).To(Equal(before.Job.Payload))
				Expect(changes(after)).To(Equal(changes(before)))
			})
		})
	})
}
