package worker_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/worker"
)

var _ = Describe("An unshared MemoryHistory", func() {
	It("keeps, hands out and forgets failures as a shared one does", func() {
		at := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
		for _, unshared := range []bool{false, true} {
			h := worker.NewMemoryHistory()
			if unshared {
				h.Unshared()
			}
			Expect(h.Failures("a")).To(BeNil(), "a job that never failed has no history")
			h.Record("a", dlq.Failure{At: at, Attempt: 1, Error: "503"})
			h.Record("a", dlq.Failure{At: at.Add(time.Second), Attempt: 2, Error: "timeout"})
			h.Record("b", dlq.Failure{At: at, Attempt: 1, Error: "declined"})
			fs := h.Failures("a")
			Expect(fs).To(HaveLen(2))
			Expect(fs[1].Error).To(Equal("timeout"))
			Expect(cap(fs)).To(Equal(2), "capped: an append by the caller copies")
			Expect(h.Len()).To(Equal(2))
			h.Forget("a")
			Expect(h.Failures("a")).To(BeNil())
			Expect(h.Len()).To(Equal(1))
		}
	})
})
