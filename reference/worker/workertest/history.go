// Package workertest holds the conformance specs of a worker.History, where
// a pipeline keeps a job's failures between its attempts: the in-memory
// worker.MemoryHistory and the Redis store's both run ExerciseHistory, so a
// fleet's history (in the store) keeps what one process's does.
package workertest

import (
	"context"
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/worker"
)

// ExerciseHistory declares the worker.History conformance specs. newHistory
// returns a fresh, empty history for each spec; called twice in a spec, it
// must return two views of one history (two processes of a fleet), or
// histories of one process (a history in memory) for which the fleet spec
// does not apply: shared says which.
func ExerciseHistory(newHistory func() worker.History, shared bool) {
	Describe("worker.History conformance", func() {
		ctx := context.Background()
		at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		failure := func(n int) dlq.Failure {
			return dlq.Failure{At: at.Add(time.Duration(n) * time.Second), Attempt: n, Error: fmt.Sprintf("http 503 (%d)", n), ErrorType: "*failure.HTTPError",
				Verdict: classify.Classification{Class: classify.Transient, Severity: classify.Medium, Source: classify.Dependency, Rule: "http-5xx"}}
		}
		var h worker.History
		BeforeEach(func() { h = newHistory() })

		It("has no failures for a job that never failed", func() {
			fs, err := h.Failures(ctx, "j1")
			Expect(err).NotTo(HaveOccurred())
			Expect(fs).To(BeEmpty())
		})

		It("keeps a job's failures in order, every field, apart from other jobs'", func() {
			for n := 1; n <= 3; n++ {
				Expect(h.Record(ctx, "j1", failure(n))).To(Succeed())
			}
			Expect(h.Record(ctx, "j2", failure(9))).To(Succeed())
			fs, err := h.Failures(ctx, "j1")
			Expect(err).NotTo(HaveOccurred())
			Expect(fs).To(HaveLen(3))
			for i, f := range fs {
				want := failure(i + 1)
				Expect(f.At).To(BeTemporally("==", want.At))
				Expect(f.Attempt).To(Equal(want.Attempt))
				Expect(f.Error).To(Equal(want.Error))
				Expect(f.ErrorType).To(Equal(want.ErrorType))
				Expect(f.Verdict).To(Equal(want.Verdict))
			}
			other, err := h.Failures(ctx, "j2")
			Expect(err).NotTo(HaveOccurred())
			Expect(other).To(HaveLen(1))
		})

		It("forgets a job's failures, and only that job's", func() {
			Expect(h.Record(ctx, "j1", failure(1))).To(Succeed())
			Expect(h.Record(ctx, "j2", failure(1))).To(Succeed())
			Expect(h.Forget(ctx, "j1")).To(Succeed())
			fs, err := h.Failures(ctx, "j1")
			Expect(err).NotTo(HaveOccurred())
			Expect(fs).To(BeEmpty())
			fs, err = h.Failures(ctx, "j2")
			Expect(err).NotTo(HaveOccurred())
			Expect(fs).To(HaveLen(1))
			Expect(h.Forget(ctx, "never-failed")).To(Succeed())
		})

		It("takes failures from goroutines at once, losing none", func() {
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Go(func() {
					defer GinkgoRecover()
					for n := range 25 {
						Expect(h.Record(ctx, "j1", failure(g*100+n))).To(Succeed())
					}
				})
			}
			wg.Wait()
			fs, err := h.Failures(ctx, "j1")
			Expect(err).NotTo(HaveOccurred())
			Expect(fs).To(HaveLen(100))
		})

		if shared {
			It("is one history for every process of a fleet: a failure recorded in one is read and forgotten in another", func() {
				other := newHistory()
				Expect(h.Record(ctx, "j1", failure(1))).To(Succeed())
				Expect(other.Record(ctx, "j1", failure(2))).To(Succeed())
				fs, err := h.Failures(ctx, "j1")
				Expect(err).NotTo(HaveOccurred())
				Expect(fs).To(HaveLen(2))
				Expect(other.Forget(ctx, "j1")).To(Succeed())
				fs, err = h.Failures(ctx, "j1")
				Expect(err).NotTo(HaveOccurred())
				Expect(fs).To(BeEmpty())
			})
		}
	})
}
