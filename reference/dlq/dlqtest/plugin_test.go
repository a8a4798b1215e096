package dlqtest_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/dlq/dlqtest"
)

func TestDLQTest(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "DLQ Conformance Suite")
}

var _ = Describe("MapStore declaring everything", func() {
	dlqtest.ExerciseDeadLetters(func(capacity int) dlq.DeadLetters {
		return &dlqtest.MapStore{Caps: dlq.Caps{Delete: true, RequeueMatching: true, Quarantine: true, Capacity: true}, Capacity: capacity}
	})
})

var _ = Describe("MapStore declaring nothing", func() {
	dlqtest.ExerciseDeadLetters(func(capacity int) dlq.DeadLetters { return &dlqtest.MapStore{} })
})
