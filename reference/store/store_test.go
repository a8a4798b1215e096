package store_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/store"
)

func TestStore(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Store Suite")
}

var _ = Describe("Config", func() {
	It("has safe defaults: reject on overflow, nothing lost", func() {
		c := store.Config{}.WithDefaults()
		Expect(c.Namespace).To(Equal(store.DefaultNamespace))
		Expect(c.Overflow).To(Equal(store.Reject))
		Expect(c.DLQCapacity).To(Equal(store.DefaultDLQCapacity))
		Expect(c.Validate()).To(Succeed())
	})

	DescribeTable("names the invalid field",
		func(c store.Config, field string) {
			err := c.Validate()
			Expect(err).To(MatchError(store.ErrInvalidConfig))
			var ce *store.ConfigError
			Expect(err).To(BeAssignableToTypeOf(ce))
			Expect(err.(*store.ConfigError).Field).To(Equal(field))
		},
		Entry("a namespace with a brace (it would break the hash tag)", store.Config{Namespace: "a}b"}, "Namespace"),
		Entry("a negative payload limit", store.Config{MaxPayload: -1}, "MaxPayload"),
		Entry("a negative capacity", store.Config{DLQCapacity: -5}, "DLQCapacity"),
		Entry("an unknown policy", store.Config{Overflow: 9}, "Overflow"),
		Entry("a huge batch", store.Config{BatchSize: 1_000_000}, "BatchSize"),
	)

	It("names its policies", func() {
		Expect(store.Reject.String()).To(Equal("reject"))
		Expect(store.EvictOldest.String()).To(Equal("evict-oldest"))
	})
})
