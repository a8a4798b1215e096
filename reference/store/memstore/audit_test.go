package memstore_test

import (
	. "github.com/onsi/ginkgo/v2"

	"github.com/faultline/faultline/reference/dlq/dlqtest"
	"github.com/faultline/faultline/reference/store"
)

var _ = Describe("memstore audit stream", func() {
	dlqtest.ExerciseAuditor(func(limit int) dlqtest.AuditHarness {
		s := newStore(store.Config{})
		s.SetAuditCap(limit)
		return dlqtest.AuditHarness{Auditor: s}
	})
})
