package worker_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/worker"
	"github.com/faultline/faultline/reference/worker/workertest"
)

var _ = Describe("An unshared MemoryHistory", func() {
	It("keeps, hands out and forgets failures as a shared one does", func() {
		at := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
		for _, unshared := range []bool{false, true} {
			h := worker.NewMemoryHistory()
			if unshared {
				h.Unshared()
			}
			Expect(h.Failures(context.Background(), "a")).To(BeNil(), "a job that never failed has no history")
			_ = h.Record(context.Background(), "a", dlq.Failure{At: at, Attempt: 1, Error: "503"})
			_ = h.Record(context.Background(), "a", dlq.Failure{At: at.Add(time.Second), Attempt: 2, Error: "timeout"})
			_ = h.Record(context.Background(), "b", dlq.Failure{At: at, Attempt: 1, Error: "declined"})
			fs, err := h.Failures(context.Background(), "a")
			Expect(err).NotTo(HaveOccurred())
			Expect(fs).To(HaveLen(2))
			Expect(fs[1].Error).To(Equal("timeout"))
			Expect(cap(fs)).To(Equal(2), "capped: an append by the caller copies")
			Expect(h.Len()).To(Equal(2))
			_ = h.Forget(context.Background(), "a")
			Expect(h.Failures(context.Background(), "a")).To(BeNil())
			Expect(h.Len()).To(Equal(1))
		}
	})
})

var _ = Describe("MemoryHistory", func() {
	workertest.ExerciseHistory(func() worker.History { return worker.NewMemoryHistory() }, false)
})
