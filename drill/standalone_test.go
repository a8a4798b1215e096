package drill_test

import (
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/drill/workerproc"
)

// The standalone reference worker (faultline worker --scenario) keeps the
// wall clock's times (issue 28): its dead letters were stamped with the
// scenario's virtual start date (2026-01-05), so fresh entries read
// "333d ago" and a purge of old entries removed them.
var _ = Describe("The standalone reference worker's clock", func() {
	file := filepath.Join("testdata", "mutations", "drill.yaml")
	env := func(kv map[string]string) func(string) string {
		return func(k string) string { return kv[k] }
	}
	// The scenario's command is `faultline` on PATH.
	BeforeEach(func() {
		GinkgoT().Setenv("PATH", filepath.Dir(faultlineBin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	})
	base := map[string]string{"FAULTLINE_REDIS_URL": "redis://127.0.0.1:1/0", "FAULTLINE_NAMESPACE": "ns", "FAULTLINE_TIME_SCALE": "10",
		"FAULTLINE_DEPENDENCY_PAYMENTS": "http://127.0.0.1:1/call"}

	It("reads the wall clock at its origin: the process's start without one", func() {
		cfg, err := workerproc.StandaloneConfig(file, env(base))
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Start).To(BeTemporally("~", time.Now(), 5*time.Second), "not the scenario's virtual start")
		Expect(cfg.Origin).To(Equal(cfg.Start))
	})

	It("shares the drill's origin (FAULTLINE_CLOCK_ORIGIN), so that copies and restarts agree on the time", func() {
		origin := time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)
		kv := map[string]string{"FAULTLINE_CLOCK_ORIGIN": origin.Format(time.RFC3339Nano)}
		for k, v := range base {
			kv[k] = v
		}
		cfg, err := workerproc.StandaloneConfig(file, env(kv))
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Start).To(Equal(origin))
		Expect(cfg.Origin).To(Equal(origin))
		kv["FAULTLINE_CLOCK_ORIGIN"] = "yesterday"
		_, err = workerproc.StandaloneConfig(file, env(kv))
		Expect(err).To(MatchError(ContainSubstring(`FAULTLINE_CLOCK_ORIGIN="yesterday": not an RFC 3339 time`)))
	})
})
