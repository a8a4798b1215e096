package memstore_test

import (
	. "github.com/onsi/ginkgo/v2"

	"github.com/faultline/faultline/reference/dlq/dlqtest"
	"github.com/faultline/faultline/reference/store"
)

var _ = Describe("memstore operator extensions", func() {
	dlqtest.ExerciseOps(func(cfg store.Config) dlqtest.Harness {
		s := newStore(cfg)
		return dlqtest.Harness{Queue: s, DLQ: s, Corrupt: s.PlantRaw}
	})
})
