package reports_test

import (
	"bytes"
	"encoding/xml"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"

	"github.com/faultline/faultline/reports"
)

// The JUnit document as a CI reader sees it: the elements and attributes
// Jenkins, GitLab and GitHub's test-report actions read.
type (
	xSuites struct {
		XMLName  xml.Name `xml:"testsuites"`
		Tests    int      `xml:"tests,attr"`
		Failures int      `xml:"failures,attr"`
		Errors   int      `xml:"errors,attr"`
		Skipped  int      `xml:"skipped,attr"`
		Time     string   `xml:"time,attr"`
		Suites   []xSuite `xml:"testsuite"`
	}
	xSuite struct {
		Name       string      `xml:"name,attr"`
		Tests      int         `xml:"tests,attr"`
		Failures   int         `xml:"failures,attr"`
		Errors     int         `xml:"errors,attr"`
		Skipped    int         `xml:"skipped,attr"`
		Time       string      `xml:"time,attr"`
		Properties []xProperty `xml:"properties>property"`
		Cases      []xCase     `xml:"testcase"`
		SystemOut  string      `xml:"system-out"`
	}
	xProperty struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	}
	xCase struct {
		Name      string    `xml:"name,attr"`
		ClassName string    `xml:"classname,attr"`
		Time      string    `xml:"time,attr"`
		Failure   *xProblem `xml:"failure"`
		Error     *xProblem `xml:"error"`
		Skipped   *xProblem `xml:"skipped"`
	}
	xProblem struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",chardata"`
	}
)

// junitOf writes rs as JUnit XML and parses it back.
func junitOf(rs ...*reports.Result) xSuites {
	GinkgoHelper()
	var b bytes.Buffer
	Expect(reports.WriteJUnit(&b, rs)).To(Succeed())
	var doc xSuites
	Expect(xml.Unmarshal(b.Bytes(), &doc)).To(Succeed(), b.String())
	return doc
}

// simInvariants reads the names of the Inv* constants from the sources of
// the oracle (which holds the ledger's invariants) and the simulator
// (which holds the black-box and optional ones, and names the oracle's
// again without a literal), so that a new invariant cannot be left out of
// the reports.
func simInvariants() []string {
	GinkgoHelper()
	var files []string
	for _, dir := range []string{"../oracle", "../sim"} {
		fs, err := filepath.Glob(dir + "/*.go")
		Expect(err).NotTo(HaveOccurred())
		files = append(files, fs...)
	}
	var names []string
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		Expect(err).NotTo(HaveOccurred())
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if strings.HasPrefix(n.Name, "Inv") && ast.IsExported(n.Name) && i < len(vs.Values) {
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							s, err := strconv.Unquote(lit.Value)
							Expect(err).NotTo(HaveOccurred())
							names = append(names, s)
						}
					}
				}
			}
		}
	}
	return names
}

var _ = Describe("Invariants", func() {
	It("names every invariant the simulator checks, each with its rule", func() {
		var names []string
		for _, inv := range reports.Invariants() {
			names = append(names, inv.Name)
			Expect(inv.Rule).NotTo(BeEmpty(), inv.Name)
		}
		Expect(names).To(ConsistOf(simInvariants()))
		Expect(names).To(HaveLen(len(simInvariants())))
	})
})

// simulatedInvariants are the invariants the simulator checks in every
// run: every one but those only a black-box drill judges and those a
// scenario asks for (Optional).
func simulatedInvariants() []reports.Invariant {
	return slices.DeleteFunc(reports.Invariants(), func(inv reports.Invariant) bool { return inv.BlackBox || inv.Optional })
}

var _ = Describe("WriteJUnit", func() {
	It("lists a passing run's expectations and every invariant as passed test cases", func() {
		r := passingRun()
		doc := junitOf(r)
		Expect(doc.Suites).To(HaveLen(1))
		s := doc.Suites[0]
		want := len(r.Expectations) + len(simulatedInvariants())
		Expect(s).To(MatchFields(IgnoreExtras, Fields{
			"Name": Equal("dlq-basics (seed 1)"), "Tests": Equal(want), "Failures": BeZero(), "Errors": BeZero(), "Skipped": BeZero(), "Time": Equal("0"),
		}))
		Expect(s.Cases).To(HaveLen(want))
		for _, inv := range simulatedInvariants() {
			Expect(s.Cases).To(ContainElement(HaveField("Name", "invariant: "+inv.Name)))
		}
		for _, c := range s.Cases {
			Expect(c.ClassName).To(Equal(s.Name))
			Expect(c.Time).To(Equal("0"))
			Expect(c.Failure).To(BeNil())
			Expect(c.Error).To(BeNil())
		}
		Expect(doc).To(MatchFields(IgnoreExtras, Fields{"Tests": Equal(want), "Failures": BeZero(), "Errors": BeZero(), "Time": Equal("0")}))
	})

	It("fails each failed expectation with expected vs actual, and the violated invariant with the trail and the reproduce command", func() {
		r := failingRun()
		doc := junitOf(r)
		s := doc.Suites[0]
		Expect(s.Tests).To(Equal(len(r.Expectations) + len(simulatedInvariants())))
		Expect(s.Failures).To(Equal(failedExpectations(r)+2), "two invariants violated")
		Expect(doc.Failures).To(Equal(s.Failures))

		var failed []xCase
		for _, c := range s.Cases {
			if c.Failure != nil {
				failed = append(failed, c)
			}
		}
		Expect(failed).To(HaveLen(s.Failures))
		Expect(failed).To(ContainElement(SatisfyAll(
			HaveField("Name", "expect: a page within 1m0s of the first critical failure"),
			HaveField("Failure.Message", "expected ≤ 1m0s, got no page for a critical failure"),
			HaveField("Failure.Type", "expectation"),
			HaveField("Failure.Text", ContainSubstring("reproduce: faultline run payment-challenge --seed 1")),
		)))
		Expect(failed).To(ContainElement(SatisfyAll(
			HaveField("Name", "invariant: no-retry-of-permanent-or-critical"),
			HaveField("Failure.Message", ContainSubstring("job pay-auth: a critical failure (fault revoked-key) was scheduled for a retry")),
			HaveField("Failure.Type", "invariant no-retry-of-permanent-or-critical"),
			HaveField("Failure.Text", SatisfyAll(
				ContainSubstring("expected: a failure whose injected class is permanent or critical is never retried"),
				ContainSubstring("trail:\n  +3m0s  none → queued (enqueued)"),
				ContainSubstring("reproduce: faultline run payment-challenge --seed 1"),
			)),
		)))
		Expect(s.Properties).To(ContainElement(xProperty{"reproduce", "faultline run payment-challenge --seed 1"}))
		Expect(s.SystemOut).To(ContainSubstring("reproduce: faultline run payment-challenge --seed 1"))
	})

	It("writes an errored run as an <error>, its unchecked invariants skipped", func() {
		r := erroredRun()
		s := junitOf(r).Suites[0]
		Expect(s.Errors).To(Equal(1))
		Expect(s.Skipped).To(Equal(len(r.Expectations) + len(simulatedInvariants())))
		Expect(s.Cases[0]).To(MatchFields(IgnoreExtras, Fields{
			"Name":  Equal("run"),
			"Error": PointTo(MatchFields(IgnoreExtras, Fields{"Message": ContainSubstring("connection refused"), "Type": Equal("errored")})),
		}))
	})

	It("writes an interrupted run as an <error> of its own type, its expectations and invariants skipped, none passed", func() {
		r := interruptedRun()
		s := junitOf(r).Suites[0]
		Expect(s.Cases[0]).To(MatchFields(IgnoreExtras, Fields{
			"Name":  Equal("run"),
			"Error": PointTo(MatchFields(IgnoreExtras, Fields{"Message": Equal("interrupted: run stopped at +1m0s: context canceled"), "Type": Equal("interrupted")})),
		}))
		Expect(s.Errors).To(Equal(1))
		Expect(s.Failures).To(BeZero())
		Expect(s.Skipped).To(Equal(len(r.Expectations) + len(simulatedInvariants())))
		for _, c := range s.Cases[1:] {
			Expect(c.Skipped).NotTo(BeNil(), c.Name)
			Expect(c.Skipped.Message).To(ContainSubstring("the run was interrupted at +1m0s"))
		}
		Expect(s.Properties).To(ContainElement(xProperty{"verdict", "interrupted"}))
	})

	It("skips an invariant that was turned off: never listed as passed", func() {
		r := passingRun()
		r.Invariants[7] = reports.InvariantResult{Name: "critical-failure-paged", Verdict: reports.Skipped, Note: "turned off (invariants.pageWithin: off)"}
		s := junitOf(r).Suites[0]
		Expect(s.Skipped).To(Equal(1))
		Expect(s.Cases).To(ContainElement(SatisfyAll(HaveField("Name", "invariant: critical-failure-paged"),
			HaveField("Skipped.Message", "turned off (invariants.pageWithin: off)"))))
	})

	It("fails an invariant violated many times once, with the listed violations and the total", func() {
		s := junitOf(manyViolations()).Suites[0]
		Expect(s.Cases).To(ContainElement(SatisfyAll(
			HaveField("Name", "invariant: no-double-charge"),
			HaveField("Failure.Message", "the payment of job charge-0 was charged 2 times: the job has no idempotency key (and 249 more violations)"),
			HaveField("Failure.Text", SatisfyAll(
				ContainSubstring("actual:   the payment of job charge-9 was charged 2 times: the job has no idempotency key\nat +9s, job charge-9, seed 1\n"),
				ContainSubstring("actual:   the payment of job charge-99 was charged 2 times: the job has no idempotency key (at +1m39s, job charge-99)\n"),
				ContainSubstring("… and 150 more, not listed (250 in all)"),
			)),
		)))
	})

	It("puts the run's warnings in its system-out", func() {
		r := passingRun()
		r.Warnings = []string{"fault late (outage on dependency/smtp) never hit"}
		Expect(junitOf(r).Suites[0].SystemOut).To(ContainSubstring("warning: fault late (outage on dependency/smtp) never hit\n"))
	})

	It("writes the same bytes one run at a time through a spool file", func() {
		rs := []*reports.Result{passingRun(), failingRun(), interruptedRun()}
		var want bytes.Buffer
		Expect(reports.WriteJUnit(&want, rs)).To(Succeed())
		spool, err := os.CreateTemp(GinkgoT().TempDir(), "junit-*")
		Expect(err).NotTo(HaveOccurred())
		defer spool.Close()
		jw := reports.NewJUnitWriter(spool)
		for _, r := range rs {
			Expect(jw.Add(r)).To(Succeed())
		}
		var got bytes.Buffer
		Expect(jw.Finish(&got)).To(Succeed())
		Expect(got.String()).To(Equal(want.String()))
	})

	It("sums every suite into the root, one suite per run", func() {
		doc := junitOf(passingRun(), failingRun(), erroredRun())
		Expect(doc.Suites).To(HaveLen(3))
		var tests, failures, errs, skipped int
		for _, s := range doc.Suites {
			tests, failures, errs, skipped = tests+s.Tests, failures+s.Failures, errs+s.Errors, skipped+s.Skipped
			Expect(s.Cases).To(HaveLen(s.Tests))
		}
		Expect(doc).To(MatchFields(IgnoreExtras, Fields{"Tests": Equal(tests), "Failures": Equal(failures), "Errors": Equal(errs), "Skipped": Equal(skipped)}))
	})

	It("stays well-formed whatever the messages hold", func() {
		r := failingRun()
		r.Expectations[0].Name = `<b>"quoted" & 'apostrophe'</b> ]]> end`
		r.Expectations[0].Verdict = reports.Failed
		r.Violations[0].Message = "bad\x00byte\x1b[31m and ]]> CDATA end"
		r.Violations[0].Trail = append(r.Violations[0].Trail, "]]><script>alert(1)</script>")
		doc := junitOf(r)
		Expect(doc.Suites[0].Cases[0].Name).To(Equal(`expect: <b>"quoted" & 'apostrophe'</b> ]]> end`))
		Expect(doc.Suites[0].Cases).To(ContainElement(HaveField("Failure.Text", ContainSubstring("]]><script>alert(1)</script>"))))
	})

	It("writes an empty document for no runs", func() {
		doc := junitOf()
		Expect(doc.Suites).To(BeEmpty())
		Expect(doc.Tests).To(BeZero())
	})
})
