package oracle_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/oracle"
)

func TestOracle(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Oracle Suite")
}

var _ = Describe("the package's dependencies", func() {
	It("include neither the simulator (sim), the drills (drill) nor the CLI (cmd), so that the oracle judges a history without any driver", func() {
		out, err := exec.Command("go", "list", "-deps", "github.com/faultline/faultline/oracle").CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "go list -deps: %s", out)
		deps := strings.Fields(string(out))
		Expect(deps).To(ContainElement("github.com/faultline/faultline/oracle"))
		for _, p := range deps {
			for _, banned := range []string{"github.com/faultline/faultline/sim", "github.com/faultline/faultline/drill", "github.com/faultline/faultline/cmd"} {
				Expect(p == banned || strings.HasPrefix(p, banned+"/")).To(BeFalse(), "oracle depends on %s", p)
			}
		}
	})
})

var _ = Describe("A history", func() {
	// A real drill's history (sim's fixture: requeue-reset-attempts at
	// --time-scale 50), as the drill wrote it.
	fixture := func() []byte {
		f, err := os.Open("../sim/testdata/late-store-rerun.history.json.gz")
		Expect(err).NotTo(HaveOccurred())
		defer f.Close()
		z, err := gzip.NewReader(f)
		Expect(err).NotTo(HaveOccurred())
		b, err := io.ReadAll(z)
		Expect(err).NotTo(HaveOccurred())
		return b
	}

	It("round-trips through Write and Read byte for byte", func() {
		in := fixture()
		h, err := oracle.Read(bytes.NewReader(in))
		Expect(err).NotTo(HaveOccurred())
		Expect(h.Version).To(Equal(oracle.HistoryVersion))
		Expect(h.Events).NotTo(BeEmpty())
		Expect(h.Attempts).NotTo(BeEmpty())
		var out bytes.Buffer
		Expect(oracle.Write(&out, h)).To(Succeed())
		Expect(out.String()).To(Equal(string(in)))
	})

	It("is refused by Read when it is not a history, with an error matching ErrHistory", func() {
		for _, in := range []string{
			"",
			"not json",
			`{"scenario": "x"}`,
			`{"historyVersion": 99, "scenario": "x", "timeScale": 1, "durationMs": 1000, "workers": ["w1"]}`,
			`{"historyVersion": 1, "scenario": "x", "timeScale": 1, "durationMs": 1000, "workers": ["w1"]}`,
		} {
			h, err := oracle.Read(strings.NewReader(in))
			Expect(err).To(HaveOccurred(), "%q", in)
			Expect(errors.Is(err, oracle.ErrHistory)).To(BeTrue(), "%q: %v", in, err)
			Expect(h).To(BeNil())
		}
	})
})
