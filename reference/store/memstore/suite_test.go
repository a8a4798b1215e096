package memstore_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/dlq/dlqtest"
	"github.com/faultline/faultline/reference/queue/queuetest"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/memstore"
)

func TestMemstore(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Memstore Suite")
}

// newStore builds a memstore for a conformance spec.
func newStore(cfg store.Config) *memstore.Store {
	GinkgoHelper()
	s, err := memstore.New(cfg)
	Expect(err).NotTo(HaveOccurred())
	return s
}

var _ = Describe("memstore", func() {
	queuetest.Exercise(func(cfg store.Config) queuetest.Harness {
		s := newStore(cfg)
		return queuetest.Harness{Queue: s, DLQ: s}
	})
	dlqtest.Exercise(func(cfg store.Config) dlqtest.Harness {
		s := newStore(cfg)
		return dlqtest.Harness{Queue: s, DLQ: s, Corrupt: s.PlantRaw}
	})
})
