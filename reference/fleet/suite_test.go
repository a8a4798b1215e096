package fleet_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/fleet"
	"github.com/faultline/faultline/reference/fleet/fleettest"
)

func TestFleet(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "fleet")
}

var _ = Describe("the memory store", func() {
	fleettest.Exercise(func() fleettest.Harness {
		l := fleet.NewMemoryLeader()
		return fleettest.Harness{Leader: l, Log: fleet.NewMemoryLog(l)}
	})
})
