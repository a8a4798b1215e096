//go:build !race

package sim_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The speed spec is built without the race detector only: the detector
// slows the simulator's shared-memory work many times more than the bare
// loop's plain slices (1/44 measured in CI's race lane), so the ratio
// there says nothing about the simulator. `go test ./...` runs it.
var _ = Describe("The simulator's speed beside a bare event loop, without the race detector", func() {
	// A ratio, not a time: both run in this process, one after the other,
	// each measured in the CPU time it used, so a loaded or slow CI machine
	// slows both and the ratio stays put, where an absolute bound would
	// fail on a busy runner and pass a real regression on a fast one. The
	// threshold is half the ratio measured (issue 31: the smaller of 1/8
	// and half of it): BenchmarkSim1MRatio's ratio was 0.075 to 0.087 on
	// 2026-12-07 (1/13 to 1/11.5; this spec's shorter runs 1/14), far
	// below the aim (1/4), so only a real regression (the simulator at half
	// its speed: an allocation or a map lookup too many per event, say)
	// trips it; the best of a few rounds takes the noise of a short run
	// out.
	It("keeps at least 1/26 of the bare loop's jobs per second", func() {
		const rounds = 5
		bestSim, bestBare := 0.0, 0.0
		for range rounds {
			t, err := ratioRun(1000, 41*time.Second+time.Minute) // ~41,000 jobs
			Expect(err).NotTo(HaveOccurred())
			bestSim, bestBare = max(bestSim, perSec(t.simJobs, t.simCPU)), max(bestBare, perSec(t.bareJobs, t.bareCPU))
		}
		ratio := bestSim / bestBare
		GinkgoWriter.Printf("simulator %.0f jobs/s, bare loop %.0f jobs/s (CPU time), ratio 1/%.1f\n", bestSim, bestBare, 1/ratio)
		Expect(ratio).To(BeNumerically(">=", 1.0/26),
			"the simulator runs %.0f jobs/s against the bare loop's %.0f: 1/%.1f", bestSim, bestBare, 1/ratio)
	})

})
