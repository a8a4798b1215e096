package memstore_test

import (
	"context"
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/memstore"
)

// call is one call of a step hook.
type call struct {
	op      string
	step    int
	pending []string
}

var _ = Describe("memstore step hook (another client inside one operation)", func() {
	ctx := context.Background()
	now := t0.Add(time.Hour)
	opts := dlq.RequeueOptions{Budget: dlq.OneMoreAttempt, By: "operator"}
	var s *memstore.Store

	BeforeEach(func() {
		s = newStore(store.Config{BatchSize: 2})
		for i, id := range []string{"a", "b", "c", "d", "e"} {
			_, err := s.Add(ctx, entryOf(charge(id), t0.Add(time.Duration(i)*time.Minute)), t0.Add(time.Duration(i)*time.Minute))
			Expect(err).NotTo(HaveOccurred())
		}
	})

	status := func(id string) dlq.Status {
		GinkgoHelper()
		e, err := s.Get(ctx, id)
		Expect(err).NotTo(HaveOccurred())
		return e.Status
	}

	It("is told the operation, the step and the entries left, before the pick and between batches", func() {
		var calls []call
		s.SetStepHook(func(_ context.Context, op string, step int, pending []string) error {
			calls = append(calls, call{op, step, pending})
			return nil
		})
		res, err := s.RequeueMatching(ctx, dlq.Filter{}, opts, now, false)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Requeued).To(Equal(5))
		Expect(calls).To(Equal([]call{
			{memstore.OpRequeueMatching, 0, nil},
			{memstore.OpRequeueMatching, 1, []string{"c", "d", "e"}},
			{memstore.OpRequeueMatching, 2, []string{"e"}},
		}))
	})

	It("costs nothing and changes nothing without a hook", func() {
		s.SetStepHook(nil)
		res, err := s.RequeueMatching(ctx, dlq.Filter{}, opts, now, false)
		Expect(err).NotTo(HaveOccurred())
		Expect(res).To(Equal(dlq.BulkResult{Matched: 5, Requeued: 5, Batches: 3}))
	})

	It("skips an entry deleted between the batches of a bulk requeue: the recheck refuses a changed entry", func() {
		s.SetStepHook(func(ctx context.Context, _ string, step int, pending []string) error {
			if step != 1 {
				return nil
			}
			return s.Delete(ctx, pending[0], "other", now)
		})
		res, err := s.RequeueMatching(ctx, dlq.Filter{}, opts, now, false)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Matched).To(Equal(5))
		Expect(res.Requeued).To(Equal(4))
		Expect(res.Changed).To(Equal(1))
		Expect(status("c")).To(Equal(dlq.Deleted), "the other client's delete stands")
	})

	It("skips an entry whose payload was edited between the batches: the edit is not reverted", func() {
		s.SetStepHook(func(ctx context.Context, _ string, step int, pending []string) error {
			if step != 1 {
				return nil
			}
			_, err := s.EditPayload(ctx, pending[0], []byte(`{"cents":1}`), "other", now)
			return err
		})
		res, err := s.RequeueMatching(ctx, dlq.Filter{}, opts, now, false)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Changed).To(Equal(1))
		e, err := s.Get(ctx, "c")
		Expect(err).NotTo(HaveOccurred())
		Expect(string(e.Job.Payload)).To(Equal(`{"cents":1}`))
		Expect(e.Status).To(Equal(dlq.Failed))
	})

	It("skips an entry another client requeued between the batches: each job is requeued once", func() {
		s.SetStepHook(func(ctx context.Context, _ string, step int, pending []string) error {
			if step != 1 {
				return nil
			}
			_, err := s.Requeue(ctx, pending[0], opts, now)
			return err
		})
		res, err := s.RequeueMatching(ctx, dlq.Filter{}, opts, now, false)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Requeued).To(Equal(4))
		Expect(res.Skipped).To(Equal(1))
		e, err := s.Get(ctx, "c")
		Expect(err).NotTo(HaveOccurred())
		Expect(e.Requeues).To(Equal(1))
	})

	It("leaves out an entry that failed at the requeue's own instant, written before the pick: the cut-off", func() {
		s.SetStepHook(func(ctx context.Context, _ string, step int, _ []string) error {
			if step != 0 {
				return nil
			}
			_, err := s.Add(ctx, entryOf(charge("e"), now), now)
			return err
		})
		res, err := s.RequeueMatching(ctx, dlq.Filter{}, opts, now, false)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Matched).To(Equal(4))
		Expect(status("e")).To(Equal(dlq.Failed))
	})

	It("stops a bulk delete after the step whose hook fails, with the error wrapped and the rest untouched", func() {
		boom := errors.New("connection reset")
		s.SetStepHook(func(_ context.Context, op string, step int, _ []string) error {
			if op == memstore.OpDeleteMatching && step == 1 {
				return boom
			}
			return nil
		})
		res, err := s.DeleteMatching(ctx, dlq.Filter{}, "operator", now, false)
		Expect(err).To(MatchError(boom))
		Expect(err.Error()).To(ContainSubstring("after step 1"))
		Expect(res.Requeued).To(Equal(2))
		Expect(status("a")).To(Equal(dlq.Deleted))
		Expect(status("c")).To(Equal(dlq.Failed))
	})
})
