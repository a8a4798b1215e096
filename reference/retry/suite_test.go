package retry_test

import (
	"math/rand/v2"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/retry"
)

func TestRetry(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Retry Suite")
}

// epoch is the virtual time the specs start at.
var epoch = time.Date(2025, time.March, 1, 12, 0, 0, 0, time.UTC)

// newPolicy builds a policy for cfg with a random stream seeded by seed.
func newPolicy(cfg retry.Config, seed uint64) *retry.Policy {
	GinkgoHelper()
	p, err := retry.New(cfg, rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)))
	Expect(err).NotTo(HaveOccurred())
	return p
}
