package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/redisstore"
)

// hookCall is one call of a step hook.
type hookCall struct {
	op      string
	step    int
	pending []string
}

var _ = Describe("redisstore step hook (faults inside one bulk move)", func() {
	for _, ln := range lanes {
		Describe(ln.name, func() {
			t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
			now := t0.Add(time.Hour)
			opts := dlq.RequeueOptions{Budget: dlq.OneMoreAttempt, By: "operator"}
			ids := []string{"a", "b", "c", "d", "e"}
			var s *redisstore.Store

			BeforeEach(func() {
				s = newStore(ln.connect(), store.Config{BatchSize: 2})
				DeferCleanup(func() { s.SetStepHook(nil) })
				for i, id := range ids {
					at := t0.Add(time.Duration(i) * time.Minute)
					_, err := s.Add(context.Background(), deadEntry(id, at), at)
					Expect(err).NotTo(HaveOccurred())
				}
			})

			// requeuedOnce expects every entry requeued exactly once.
			requeuedOnce := func() {
				GinkgoHelper()
				for _, id := range ids {
					e, err := s.Get(context.Background(), id)
					Expect(err).NotTo(HaveOccurred())
					Expect(e.Status).To(Equal(dlq.Requeued), id)
					Expect(e.Requeues).To(Equal(1), id)
				}
				st, err := s.Stats(context.Background())
				Expect(err).NotTo(HaveOccurred())
				Expect(st.ByStatus).To(Equal(map[string]int{"requeued": len(ids)}))
			}

			It("is told each step after the first, before its script, with the IDs the script moves", func() {
				var calls []hookCall
				s.SetStepHook(func(_ context.Context, op string, step int, pending []string) error {
					calls = append(calls, hookCall{op, step, pending})
					return nil
				})
				res, err := s.RequeueMatching(context.Background(), dlq.Filter{}, opts, now, false)
				Expect(err).NotTo(HaveOccurred())
				Expect(res.Requeued).To(Equal(5))
				Expect(calls).To(Equal([]hookCall{
					{redisstore.OpRequeueMatching, 1, []string{"c", "d"}},
					{redisstore.OpRequeueMatching, 2, []string{"e"}},
				}))
				requeuedOnce()
			})

			It("skips an entry another client deleted between two steps: the revision guard refuses it", func() {
				s.SetStepHook(func(ctx context.Context, _ string, step int, pending []string) error {
					if step != 1 {
						return nil
					}
					return s.Delete(ctx, pending[0], "other", now)
				})
				res, err := s.RequeueMatching(context.Background(), dlq.Filter{}, opts, now, false)
				Expect(err).NotTo(HaveOccurred())
				Expect(res.Requeued).To(Equal(4))
				Expect(res.Changed).To(Equal(1))
				e, err := s.Get(context.Background(), "c")
				Expect(err).NotTo(HaveOccurred())
				Expect(e.Status).To(Equal(dlq.Deleted))
			})

			DescribeTable("moves every entry exactly once when a step fails and the operator runs it again",
				func(fail error, movedFirst int) {
					s.SetStepHook(func(_ context.Context, _ string, step int, _ []string) error {
						if step == 1 {
							return fail
						}
						return nil
					})
					res, err := s.RequeueMatching(context.Background(), dlq.Filter{}, opts, now, false)
					Expect(err).To(MatchError(fail))
					Expect(err).To(MatchError(ContainSubstring("after step 1")))
					st, serr := s.Stats(context.Background())
					Expect(serr).NotTo(HaveOccurred())
					Expect(st.ByStatus["requeued"]).To(Equal(movedFirst), "the moves made before the failure stand")
					Expect(res.Requeued).To(BeNumerically("<=", movedFirst))

					// The operator runs it again, on a context of its own.
					res, err = s.RequeueMatching(context.Background(), dlq.Filter{}, opts, now.Add(time.Minute), false)
					Expect(err).NotTo(HaveOccurred())
					Expect(res.Requeued).To(Equal(len(ids) - movedFirst))
					requeuedOnce()
				},
				Entry("the connection lost before the second script", errors.New("connection reset"), 2),
				Entry("the second script's reply lost", fmt.Errorf("connection reset: %w", redisstore.ErrReplyLost), 4),
			)
		})
	}
})
