package redisstore_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/reference/dlq/dlqtest"
	"github.com/faultline/faultline/reference/store"
)

var _ = Describe("redisstore payload edits", func() {
	for _, ln := range lanes {
		Describe(ln.name, func() {
			// As the conformance suites do (suite_test.go): a miniredis per
			// harness, the process's redis-server shared per spec.
			var shared *redis.Client
			client := func() *redis.Client {
				if ln.name == "on miniredis" {
					return ln.connect()
				}
				if shared == nil {
					shared = ln.connect()
				}
				return shared
			}
			BeforeEach(func() { shared = nil })

			dlqtest.ExercisePayloadEditor(func(cfg store.Config) dlqtest.Harness {
				s := streamed(client(), cfg)
				return dlqtest.Harness{Queue: s, DLQ: s, Corrupt: func(id string, raw []byte) {
					GinkgoHelper()
					Expect(s.WriteRaw(context.Background(), id, raw)).To(Succeed())
				}}
			})
		})
	}
})
