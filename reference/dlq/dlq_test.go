package dlq_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
)

func TestDLQ(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "DLQ Suite")
}

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

var _ = Describe("entry encoding", func() {
	entry := func() dlq.Entry {
		return dlq.Entry{
			Job:           job.Job{ID: "pay-1", Task: "charge", IdempotencyKey: "k1", KeyRecordedAt: t0, Attempts: 4},
			History:       []dlq.Failure{{At: t0, Attempt: 1, Error: "http 504", ErrorType: "*failure.HTTPError", Verdict: classify.Classification{Class: classify.Transient, Severity: classify.Medium, Source: classify.Dependency, Rule: "http-timeout"}}},
			Verdict:       classify.Classification{Class: classify.Transient, Severity: classify.Medium, Source: classify.Dependency},
			FirstFailedAt: t0, LastFailedAt: t0, Reason: "exhausted-attempts", SourceQueue: "payments", Status: dlq.Failed,
			Changes: []dlq.StatusChange{{At: t0, To: dlq.Failed, By: "worker"}},
		}
	}

	It("round-trips, version included", func() {
		raw, err := dlq.Encode(entry())
		Expect(err).NotTo(HaveOccurred())
		got := dlq.Decode("pay-1", raw)
		Expect(got.Corrupt).To(BeFalse(), got.DecodeError)
		want := entry()
		want.Version = dlq.EncodingVersion
		Expect(got).To(Equal(want))
		Expect(got.ErrorType()).To(Equal("*failure.HTTPError"))
		Expect(got.Severity()).To(Equal(classify.Medium))
	})

	It("round-trips the zero values too (written as none and empty, read back as such)", func() {
		e := entry()
		e.Verdict, e.Status = classify.Classification{}, 0
		raw, err := dlq.Encode(e)
		Expect(err).NotTo(HaveOccurred())
		got := dlq.Decode("pay-1", raw)
		Expect(got.Corrupt).To(BeFalse(), got.DecodeError)
		Expect(got.Verdict).To(Equal(classify.Classification{}))
	})

	DescribeTable("shows what it cannot read as corrupt, with the bytes, never dropping them",
		func(raw string, why string) {
			got := dlq.Decode("pay-1", []byte(raw))
			Expect(got.Corrupt).To(BeTrue())
			Expect(got.ID()).To(Equal("pay-1"))
			Expect(string(got.Raw)).To(Equal(raw))
			Expect(got.DecodeError).To(ContainSubstring(why))
		},
		Entry("not JSON", "\x00\x01binary", "invalid character"),
		Entry("no version", `{"job":{"id":"pay-1","task":"t"}}`, "no version"),
		Entry("a newer version", `{"version":99,"job":{"id":"pay-1","task":"t"}}`, "newer than this faultline's"),
		Entry("another job's entry", `{"version":1,"job":{"id":"other","task":"t"}}`, `stored as "pay-1"`),
		Entry("an unknown status", `{"version":1,"job":{"id":"pay-1","task":"t"},"status":"vanished"}`, "unknown DLQ status"),
	)

	It("parses status names and refuses others", func() {
		for _, st := range dlq.Statuses {
			v, err := dlq.ParseStatus(st.String())
			Expect(err).NotTo(HaveOccurred())
			Expect(v).To(Equal(st))
		}
		_, err := dlq.ParseStatus("gone")
		Expect(err).To(MatchError(`unknown DLQ status "gone" (allowed: failed, requeued, deleted, quarantined)`))
		Expect(dlq.OutcomeAlreadyRequeued.String()).To(Equal("already-requeued"))
	})
})

var _ = Describe("MergeHistory", func() {
	It("adds only the failures not already recorded, so a retried add is not counted twice", func() {
		a := dlq.Failure{At: t0, Attempt: 1, Error: "http 504"}
		b := dlq.Failure{At: t0.Add(time.Second), Attempt: 2, Error: "http 504"}
		c := dlq.Failure{At: t0.Add(2 * time.Second), Attempt: 3, Error: "http 500"}
		Expect(dlq.MergeHistory([]dlq.Failure{a, b}, []dlq.Failure{b, c})).To(Equal([]dlq.Failure{a, b, c}))
		Expect(dlq.MergeHistory(nil, []dlq.Failure{a})).To(Equal([]dlq.Failure{a}))
	})
})
