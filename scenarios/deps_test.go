package scenarios_test

import (
	"os/exec"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("the package's dependencies", func() {
	It("include neither the simulator (sim) nor the drills (drill), so that a judge can read a scenario without the engine", func() {
		out, err := exec.Command("go", "list", "-deps", "github.com/faultline/faultline/scenarios").CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "go list -deps: %s", out)
		deps := strings.Fields(string(out))
		Expect(deps).To(ContainElement("github.com/faultline/faultline/scenarios"))
		for _, p := range deps {
			for _, banned := range []string{"github.com/faultline/faultline/sim", "github.com/faultline/faultline/drill"} {
				Expect(p == banned || strings.HasPrefix(p, banned+"/")).To(BeFalse(), "scenarios depends on %s", p)
			}
		}
	})
})
