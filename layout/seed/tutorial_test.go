package seed_test

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/layout/seed"
)

// tutorialWrites returns what the tutorial's own reprocess_single, in
// Python, would push and write for the entry b.
func tutorialWrites(b []byte) (job, marked string) {
	GinkgoHelper()
	cmd := exec.Command(python, "testdata/tutorial_marks.py")
	cmd.Stdin = bytes.NewReader(b)
	out, err := cmd.Output()
	Expect(err).NotTo(HaveOccurred())
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	Expect(lines).To(HaveLen(2))
	return lines[0], lines[1]
}

var _ = Describe("a requeue, beside the tutorial's own code", func() {
	for _, lane := range lanes {
		Context(lane.name, func() {
			var (
				ctx context.Context
				c   *redis.Client
			)
			BeforeEach(func() {
				ctx = context.Background()
				c = lane.connect()
				writeFixture(c, prefix)
			})

			It("pushes and writes byte for byte what Python's reprocess would, with a status or without", func() {
				for _, e := range listAll(ctx, c, prefix, seed.Filter{}, 50) {
					if e.Invalid != "" || e.Status() == seed.Reprocessing {
						continue
					}
					job, marked := tutorialWrites(e.Bytes)
					Expect(c.Del(ctx, prefix+"default").Err()).To(Succeed())
					Expect(seed.Requeue(ctx, c, prefix, e.Ref(), seed.RequeueOptions{})).To(Equal(seed.Requeued))
					Expect(c.LRange(ctx, prefix+"default", 0, -1).Val()).To(Equal([]string{job}), e.Key)
					Expect(c.LIndex(ctx, e.Key, -(e.Position+1)).Val()).To(Equal(marked), e.Key)
				}
			})

			It("requeues each listed entry exactly once while new ones are dead-lettered", func() {
				const n = 2000
				vals := make([]any, n)
				for i := range vals {
					vals[i] = fmt.Sprintf(`{"job": {"task": "old-%d"}, "error": "e", "retries": 3, "failed_at": "2026-12-01T10:00:00", "status": "failed"}`, i)
				}
				Expect(c.Del(ctx, prefix+"dead_letter").Err()).To(Succeed())
				Expect(c.LPush(ctx, prefix+"dead_letter", vals...).Err()).To(Succeed())
				var wg sync.WaitGroup
				stop := make(chan struct{})
				wg.Add(1)
				go func() {
					defer GinkgoRecover()
					defer wg.Done()
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						Expect(c.LPush(ctx, prefix+"dead_letter", fmt.Sprintf(`{"job": {"task": "new-%d"}, "error": "e", "retries": 3, "status": "failed"}`, i)).Err()).To(Succeed())
					}
				}()
				// two operators at once
				results := make([]seed.BulkResult, 2)
				var ops sync.WaitGroup
				for k := range results {
					ops.Add(1)
					go func() {
						defer GinkgoRecover()
						defer ops.Done()
						var err error
						results[k], err = seed.RequeueAll(ctx, c, prefix, seed.Filter{Lists: []string{"dead_letter"}}, seed.RequeueOptions{Batch: 50})
						Expect(err).NotTo(HaveOccurred())
					}()
				}
				ops.Wait()
				close(stop)
				wg.Wait()

				queued := map[string]int{}
				for _, j := range c.LRange(ctx, prefix+"default", 0, -1).Val() {
					queued[j]++
				}
				for i := range n {
					Expect(queued[fmt.Sprintf(`{"task": "old-%d"}`, i)]).To(Equal(1), "old-%d", i)
				}
				Expect(results[0].Requeued + results[1].Requeued).To(Equal(len(queued)))
				for _, r := range results {
					Expect(r.Changed + r.NotFound).To(BeZero())
				}
			})
		})
	}
})
