package oracle_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/scenarios"
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
		f, err := os.Open("testdata/late-store-rerun.history.json.gz")
		Expect(err).NotTo(HaveOccurred())
		defer f.Close()
		z, err := gzip.NewReader(f)
		Expect(err).NotTo(HaveOccurred())
		b, err := io.ReadAll(z)
		Expect(err).NotTo(HaveOccurred())
		return b
	}

	It("loads as version 1, and goes through Write (version 2) and Read unchanged, smaller, and again byte for byte", func() {
		in := fixture()
		h, err := oracle.Read(bytes.NewReader(in))
		Expect(err).NotTo(HaveOccurred())
		Expect(h.Version).To(Equal(1))
		Expect(h.Events).NotTo(BeEmpty())
		Expect(h.Attempts).NotTo(BeEmpty())
		var v2 bytes.Buffer
		Expect(oracle.Write(&v2, h)).To(Succeed())
		Expect(v2.String()).To(HavePrefix(`{"historyVersion":2,"records":[`))
		Expect(json.Valid(v2.Bytes())).To(BeTrue(), "a version 2 history is one JSON document")
		Expect(v2.Len()).To(BeNumerically("<", len(in)), "its events name jobs by index")
		back, err := oracle.Read(bytes.NewReader(v2.Bytes()))
		Expect(err).NotTo(HaveOccurred())
		Expect(back.Version).To(Equal(2))
		back.Version = 1
		Expect(back).To(Equal(h))

		var again bytes.Buffer
		Expect(oracle.Write(&again, back)).To(Succeed())
		Expect(again.String()).To(Equal(v2.String()))
	})

	It("names a job again after the writer let it go, and refuses a record naming a job the table does not hold", func() {
		var b bytes.Buffer
		hw := oracle.NewHistoryWriter(&b)
		hw.Job(oracle.Job{ID: "a", Task: "t", Outcome: "ok"})
		hw.Event(oracle.Event{JobID: "a", Task: "t", From: "none", To: "queued", Reason: "enqueued"})
		hw.Forget("a")
		hw.Event(oracle.Event{JobID: "a", Task: "t", From: "succeeded", To: "queued", Reason: "requeued"})
		hw.Call(oracle.Call{JobID: "stranger", Dependency: "d"})
		Expect(hw.Close(&oracle.History{Scenario: "x", TimeScale: 1, DurationMs: 1000, Workers: []string{"w1"}, Snapshots: []oracle.Snapshot{{}}})).To(Succeed())
		h, err := oracle.Read(&b)
		Expect(err).NotTo(HaveOccurred())
		Expect(h.Jobs).To(HaveLen(1), "a job named but not made is not the producer's")
		Expect(h.Events).To(HaveLen(2))
		Expect(h.Events[1]).To(And(HaveField("JobID", "a"), HaveField("Task", "t")))
		Expect(h.Calls).To(ConsistOf(HaveField("JobID", "stranger")))
		Expect(h.Snapshots).To(HaveLen(1))

		bad := `{"historyVersion":2,"records":[{"event":{"i":3,"atMs":0}}],"history":{"scenario":"x","timeScale":1,"durationMs":1000,"workers":["w1"]}}`
		_, err = oracle.Read(strings.NewReader(bad))
		Expect(errors.Is(err, oracle.ErrHistory)).To(BeTrue())
		Expect(err).To(MatchError(ContainSubstring("names job 3, which the job table before it does not hold")))
	})

	It("is refused by Read when it is not a history, with an error matching ErrHistory", func() {
		for _, in := range []string{
			"",
			"not json",
			`{"scenario": "x"}`,
			`{"historyVersion": 99, "scenario": "x", "timeScale": 1, "durationMs": 1000, "workers": ["w1"]}`,
			`{"historyVersion": 1, "scenario": "x", "timeScale": 1, "durationMs": 1000, "workers": ["w1"]}`,
			`{"historyVersion":2,"records":[`,
			`{"historyVersion":2,"records":[{"nothing":{}}],"history":{}}`,
			`{"historyVersion":2,"records":[],"history":{"scenario":"x","simulated":true,"timeScale":1,"durationMs":1000,"workers":["w1"]}}`,
		} {
			h, err := oracle.Read(strings.NewReader(in))
			Expect(err).To(HaveOccurred(), "%q", in)
			Expect(errors.Is(err, oracle.ErrHistory)).To(BeTrue(), "%q: %v", in, err)
			Expect(h).To(BeNil())
		}
	})
})

var _ = Describe("The scenario format's reference page", func() {
	It("ends with what a black-box drill can judge, as the checks declare it (go generate ./scenarios)", func() {
		checkedIn, err := os.ReadFile("../docs/scenario-format.md")
		Expect(err).NotTo(HaveOccurred())
		Expect(string(checkedIn)).To(Equal(string(scenarios.Reference())+string(oracle.BlackBoxObservability())), "stale: run `go generate ./scenarios`")
		Expect(string(oracle.BlackBoxObservability())).To(And(
			ContainSubstring("| `transient-retried` | judged when the retry policy is declared (`system.external.policy`) |"),
			ContainSubstring("| `legal-move` | not observable — it reads the store's disposition events:")))
	})
})
