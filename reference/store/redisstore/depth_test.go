package redisstore_test

import (
	. "github.com/onsi/ginkgo/v2"
	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/reference/dlq/dlqtest"
	"github.com/faultline/faultline/reference/store"
)

var _ = Describe("redisstore depth stream", func() {
	for _, ln := range lanes {
		Describe(ln.name, func() {
			// As the audit specs do: a miniredis per harness, the process's
			// redis-server shared per spec.
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

			dlqtest.ExerciseDepthRecorder(func(limit int) dlqtest.DepthHarness {
				s := newStore(client(), store.Config{})
				s.SetDepthCap(limit)
				// XADD MAXLEN ~ drops whole stream nodes: a real Redis keeps
				// up to a node more than the cap; miniredis trims exactly.
				slack := 100
				if ln.name == "on miniredis" {
					slack = 0
				}
				return dlqtest.DepthHarness{Recorder: s, Slack: slack}
			})
		})
	}
})
