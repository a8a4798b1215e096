package memstore_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/memstore"
)

// playUnshared makes the same moves on a store (unshared or not) whose
// observer moves jobs itself, from its callbacks, and returns the events
// heard, in order, and the jobs dequeued followed by the store's counts.
func playUnshared(unshared bool) ([]string, []string) {
	ctx := context.Background()
	var heard []string
	var s *memstore.Store
	s, err := memstore.New(store.Config{DLQCapacity: 1, Observer: func(e disposition.Event) {
		heard = append(heard, e.String())
		switch {
		case e.JobID == "a" && e.Reason == disposition.Enqueued:
			// A move from a callback: heard after the move that caused it.
			Expect(s.Enqueue(ctx, charge("a-child"), e.At)).To(Succeed())
		case e.JobID == "b" && e.Reason == disposition.Acked:
			Expect(s.Enqueue(ctx, charge("b-child"), e.At)).To(Succeed())
		case e.JobID == "a-child" && e.Reason == disposition.Leased:
			// A callback's move whose own callback moves another job.
			Expect(s.Enqueue(ctx, charge("grandchild"), e.At)).To(Succeed())
		}
	}})
	Expect(err).NotTo(HaveOccurred())
	if unshared {
		s.Unshared()
	}
	Expect(s.Enqueue(ctx, charge("a"), t0)).To(Succeed())
	Expect(s.Enqueue(ctx, charge("b"), t0)).To(Succeed())
	var got []string
	for i := range 6 {
		now := t0.Add(time.Duration(i) * time.Second)
		j, l, ok, err := s.Dequeue(ctx, job.DefaultQueue, now, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		if !ok {
			break
		}
		got = append(got, j.ID)
		switch i % 3 {
		case 0:
			Expect(s.Retry(ctx, l, j, now, now)).To(Succeed())
		case 1:
			Expect(s.Ack(ctx, l, j, now)).To(Succeed())
		default:
			Expect(s.Release(ctx, l, j, now)).To(Succeed())
		}
		_, err = s.ForwardDue(ctx, now, 10)
		Expect(err).NotTo(HaveOccurred())
	}
	c, err := s.Counts(ctx)
	Expect(err).NotTo(HaveOccurred())
	_, err = s.Add(ctx, entryOf(charge("dead"), t0), t0) // a DLQ move, under the lock
	Expect(err).NotTo(HaveOccurred())
	return heard, append(got, fmt.Sprintf("%+v", c))
}

var _ = Describe("An unshared store", func() {
	It("hears the same events, in the same order, as a shared one, callbacks' own moves included", func() {
		shared, sharedGot := playUnshared(false)
		unshared, unsharedGot := playUnshared(true)
		Expect(shared).To(ContainElement(ContainSubstring("grandchild")))
		Expect(unshared).To(Equal(shared))
		Expect(unsharedGot).To(Equal(sharedGot))
	})

	It("keeps working after an observer panics", func() {
		ctx := context.Background()
		boom := true
		var heard []string
		s, err := memstore.New(store.Config{Observer: func(e disposition.Event) {
			if boom {
				boom = false
				panic("observer bug")
			}
			heard = append(heard, e.JobID)
		}})
		Expect(err).NotTo(HaveOccurred())
		s.Unshared()
		Expect(func() { _ = s.Enqueue(ctx, charge("a"), t0) }).To(PanicWith("observer bug"))
		Expect(s.Enqueue(ctx, charge("b"), t0)).To(Succeed())
		Expect(heard).To(Equal([]string{"b"}))
		c, err := s.Counts(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Queued).To(Equal(2), "the move happened before its callback")
	})
})
