package dlq_test

import (
	"errors"
	"net/url"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/dlq"
)

var _ = Describe("FilterSpec: the one filter syntax of the CLI and the web UI", func() {
	now := t0

	It("parses every field, durations ago from now", func() {
		s := dlq.FilterSpec{Severities: []string{"high", " low"}, Tasks: []string{"charge"}, Classes: []string{"permanent"},
			ErrorTypes: []string{"*failure.HTTPError"}, Statuses: []string{"failed", "Quarantined"}, Since: "2h", Until: "30m", ErrorText: "Declined"}
		f, err := s.Parse(now)
		Expect(err).NotTo(HaveOccurred())
		Expect(f.Severities).To(Equal([]classify.Severity{classify.High, classify.Low}))
		Expect(f.Classes).To(Equal([]classify.Class{classify.Permanent}))
		Expect(f.Statuses).To(Equal([]dlq.Status{dlq.Failed, dlq.Quarantined}))
		Expect(f.Tasks).To(Equal([]string{"charge"}))
		Expect(f.ErrorTypes).To(Equal([]string{"*failure.HTTPError"}))
		Expect(f.Since).To(Equal(now.Add(-2 * time.Hour)))
		Expect(f.Until).To(Equal(now.Add(-30 * time.Minute)))
		Expect(f.ErrorText).To(Equal("Declined"))
	})

	It("reads days and RFC 3339 times", func() {
		f, err := (&dlq.FilterSpec{Since: "7d", Until: "2026-11-30T11:00:00Z"}).Parse(now)
		Expect(err).NotTo(HaveOccurred())
		Expect(f.Since).To(Equal(now.Add(-7 * 24 * time.Hour)))
		Expect(f.Until).To(Equal(time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)))
	})

	DescribeTable("names the field that does not parse, and what it allows",
		func(s dlq.FilterSpec, field, says string) {
			_, err := s.Parse(now)
			var fe *dlq.FieldError
			Expect(errors.As(err, &fe)).To(BeTrue(), "%v", err)
			Expect(fe.Field).To(Equal(field))
			Expect(err.Error()).To(ContainSubstring(says))
		},
		Entry("severity", dlq.FilterSpec{Severities: []string{"urgent"}}, dlq.FieldSeverity, "urgent"),
		Entry("class", dlq.FilterSpec{Classes: []string{"flaky"}}, dlq.FieldClass, "flaky"),
		Entry("status", dlq.FilterSpec{Statuses: []string{"gone"}}, dlq.FieldStatus, "allowed: failed, requeued, deleted, quarantined"),
		Entry("since", dlq.FilterSpec{Since: "yesterday"}, dlq.FieldSince, "RFC 3339"),
		Entry("a negative duration", dlq.FilterSpec{Until: "-2h"}, dlq.FieldUntil, "duration ago"),
		Entry("since after until", dlq.FilterSpec{Since: "1h", Until: "2h"}, dlq.FieldSince, "must be before until"),
	)

	It("round-trips through query parameters and renders in the CLI's flag syntax", func() {
		s := dlq.FilterSpec{Severities: []string{"high", "medium"}, Tasks: []string{"charge"}, Since: "2h", ErrorText: `card "declined"`}
		v := s.Values()
		back := dlq.FilterSpecFromValues(v)
		Expect(back).To(Equal(s))
		Expect(s.String()).To(Equal(`--severity="high,medium" --task="charge" --since="2h" --error-text="card \"declined\""`))
		Expect((&dlq.FilterSpec{}).String()).To(BeEmpty())
		Expect((&dlq.FilterSpec{}).Empty()).To(BeTrue())
		Expect(s.Empty()).To(BeFalse())
	})

	It("reads repeated and comma-separated query parameters alike", func() {
		v := url.Values{"severity": {"high,low", "medium"}, "task": {" a ", ""}}
		s := dlq.FilterSpecFromValues(v)
		Expect(s.Severities).To(Equal([]string{"high", "low", "medium"}))
		Expect(s.Tasks).To(Equal([]string{"a"}))
	})
})

// FuzzFilterSpec: no query string makes the parser panic, and a spec that
// parses renders to query parameters that read back to the same filter.
func FuzzFilterSpec(f *testing.F) {
	for _, s := range []string{"severity=high&since=2h", "status=failed,quarantined&until=2026-01-02T15:04:05Z", "since=1e300d", "since=%ff", "error-text=%00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		v, err := url.ParseQuery(q)
		if err != nil {
			return
		}
		s := dlq.FilterSpecFromValues(v)
		a, err := s.Parse(t0)
		_ = s.String()
		if err != nil {
			return
		}
		back := dlq.FilterSpecFromValues(s.Values())
		b, err := back.Parse(t0)
		if err != nil {
			t.Fatalf("%q parsed, its rendering %q does not: %v", q, s.Values().Encode(), err)
		}
		if !a.Since.Equal(b.Since) || !a.Until.Equal(b.Until) || len(a.Severities) != len(b.Severities) || a.ErrorText != b.ErrorText {
			t.Fatalf("%q: %+v != %+v", q, a, b)
		}
	})
}
