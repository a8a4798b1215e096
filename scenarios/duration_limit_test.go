package scenarios_test

import (
	"math"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/scenarios"
)

var _ = Describe("the limit on a run's duration", func() {
	const day = 24 * time.Hour
	file := func(duration string) string {
		GinkgoHelper()
		p := filepath.Join(GinkgoT().TempDir(), "s.yaml")
		Expect(os.WriteFile(p, []byte("apiVersion: faultline/v1\nkind: Scenario\nmetadata: {name: s}\nduration: "+duration+"\n"+pingWorkload), 0o600)).To(Succeed())
		return p
	}

	It("refuses 292 years at the duration, naming the limit and the flag that lifts it", func() {
		f := file("2562047h")
		_, err := scenarios.Load(f)
		Expect(err).To(reportExactly(f + ":4:11: duration: a run of 2562047h (106751 days), more than the limit of 9600h (400 days); shorten it or lift the limit with --max-duration"))
		Expect(err).To(MatchError(scenarios.ErrInvalid))
	})

	It("takes 400 days by default, so that a scenario of nights runs", func() {
		Expect(scenarios.DefaultMaxDuration).To(Equal(400 * day))
		_, err := scenarios.Load(file("9600h"))
		Expect(err).NotTo(HaveOccurred())
		_, err = scenarios.Load(file("9600h1ms"))
		Expect(err).To(HaveOccurred())
	})

	It("is lifted by RunLimits.MaxDuration (faultline --max-duration), and lowered", func() {
		l, err := scenarios.Limits{Run: scenarios.RunLimits{MaxDuration: math.MaxInt64}}.Load(file("2562047h"))
		Expect(err).NotTo(HaveOccurred())
		Expect(l.Scenario.Limits.MaxDuration).To(Equal(time.Duration(math.MaxInt64)))
		f := file("2h")
		_, err = scenarios.Limits{Run: scenarios.RunLimits{MaxDuration: time.Hour}}.Load(f)
		Expect(err).To(reportExactly(f + ":4:11: duration: a run of 2h, more than the limit of 1h; shorten it or lift the limit with --max-duration"))
	})

	It("is matched by ErrLimit in Validate", func() {
		sc := scenarios.Scenario{Name: "s", Duration: 500 * day}
		Expect(sc.WithDefaults().Validate()).To(MatchError(scenarios.ErrLimit))
	})
})
