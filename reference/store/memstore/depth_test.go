package memstore_test

import (
	. "github.com/onsi/ginkgo/v2"

	"github.com/faultline/faultline/reference/dlq/dlqtest"
	"github.com/faultline/faultline/reference/store"
)

var _ = Describe("memstore depth stream", func() {
	dlqtest.ExerciseDepthRecorder(func(limit int) dlqtest.DepthHarness {
		s := newStore(store.Config{})
		s.SetDepthCap(limit)
		return dlqtest.DepthHarness{Recorder: s}
	})
})
