package reports_test

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reports"
)

// update rewrites the golden files instead of comparing with them:
// go test ./reports -update
var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

const goldenDir = "testdata/golden"

// forGolden blanks what a golden file must not hold: the tool version.
func forGolden(r *reports.Result) *reports.Result {
	r.ToolVersion = ""
	return r
}

// expectGolden compares got with the golden file name, or rewrites it
// with -update.
func expectGolden(name string, got []byte) {
	GinkgoHelper()
	path := filepath.Join(goldenDir, name)
	if *update {
		Expect(os.MkdirAll(goldenDir, 0o755)).To(Succeed())
		Expect(os.WriteFile(path, got, 0o644)).To(Succeed())
		return
	}
	want, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred(), "no golden file: run `go test ./reports -update`")
	Expect(string(got)).To(Equal(string(want)), "%s differs: if the change is meant, run `go test ./reports -update` and review the diff", path)
}

// written returns what write wrote.
func written(write func(w io.Writer) error) []byte {
	GinkgoHelper()
	var b bytes.Buffer
	Expect(write(&b)).To(Succeed())
	return b.Bytes()
}

var _ = Describe("The golden files", func() {
	var passing, failing *reports.Result

	BeforeEach(func() {
		passing, failing = passingRun(), failingRun()
		passing.ToolVersion, failing.ToolVersion = "v0.0.0-test", "v0.0.0-test"
		passing, failing = forGolden(passing), forGolden(failing)
	})

	It("match the JSON of a passing and a failing run", func() {
		expectGolden("passing.json", written(func(w io.Writer) error { return reports.WriteJSON(w, passing) }))
		expectGolden("failing.json", written(func(w io.Writer) error { return reports.WriteJSON(w, failing) }))
	})

	It("match the JUnit XML of both runs", func() {
		expectGolden("runs.junit.xml", written(func(w io.Writer) error { return reports.WriteJUnit(w, []*reports.Result{passing, failing}) }))
	})

	It("match the Markdown summary of both runs", func() {
		expectGolden("runs.md", written(func(w io.Writer) error { return reports.WriteMarkdown(w, []*reports.Result{passing, failing}) }))
	})

	It("match the text report, plain and verbose", func() {
		expectGolden("passing.txt", written(func(w io.Writer) error { return reports.WriteText(w, passing, reports.TextOptions{}) }))
		expectGolden("failing.txt", written(func(w io.Writer) error { return reports.WriteText(w, failing, reports.TextOptions{}) }))
		expectGolden("failing-verbose.txt", written(func(w io.Writer) error {
			return reports.WriteText(w, failing, reports.TextOptions{Verbose: true})
		}))
	})

	It("match the diff of payment-challenge with a classifier that calls auth failures transient", func() {
		d := reports.Diff(forGolden(fixedRun()), failing)
		expectGolden("payment-challenge.diff.txt", written(func(w io.Writer) error { return reports.WriteDiff(w, d) }))
	})

	It("match every format of a black-box drill: its system under test, what it lost, what it could not observe", func() {
		failing, passing := blackBoxRun(), blackBoxPassing()
		expectGolden("blackbox.json", written(func(w io.Writer) error { return reports.WriteJSON(w, failing) }))
		expectGolden("blackbox.txt", written(func(w io.Writer) error { return reports.WriteText(w, failing, reports.TextOptions{}) }))
		expectGolden("blackbox-verbose.txt", written(func(w io.Writer) error {
			return reports.WriteText(w, failing, reports.TextOptions{Verbose: true})
		}))
		expectGolden("blackbox-passing.txt", written(func(w io.Writer) error { return reports.WriteText(w, passing, reports.TextOptions{}) }))
		expectGolden("blackbox.md", written(func(w io.Writer) error { return reports.WriteMarkdown(w, []*reports.Result{passing, failing}) }))
		expectGolden("blackbox.junit.xml", written(func(w io.Writer) error { return reports.WriteJUnit(w, []*reports.Result{failing}) }))
	})

	It("are the same bytes on every run of the simulator", func() {
		again, err := runBuiltin(passingScenario)
		Expect(err).NotTo(HaveOccurred())
		first, err := passingJSON()
		Expect(err).NotTo(HaveOccurred())
		Expect(again).To(Equal(first))
	})
})
