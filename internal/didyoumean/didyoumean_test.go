package didyoumean_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/internal/didyoumean"
)

func TestDidYouMean(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "DidYouMean Suite")
}

var _ = Describe("Closest", func() {
	names := []string{"retry", "duration", "dead-lettered", "worker-crash", "payment-challenge"}
	DescribeTable("suggests a likely typo and nothing else",
		func(s, want string) { Expect(didyoumean.Closest(s, names)).To(Equal(want)) },
		Entry("a transposition", "retyr", "retry"),
		Entry("a dropped letter", "duraton", "duration"),
		Entry("case", "DURATION", "duration"),
		Entry("a part of a longer name", "crash", "worker-crash"),
		Entry("far from everything", "banana", ""),
		Entry("too short to guess", "x", ""),
		Entry("empty", "", ""),
		Entry("two edits in a long name", "payment-challange", "payment-challenge"),
	)
	It("measures edits in runes", func() {
		Expect(didyoumean.Distance("héllo", "hello")).To(Equal(1))
		Expect(didyoumean.Distance("", "abc")).To(Equal(3))
	})
})
