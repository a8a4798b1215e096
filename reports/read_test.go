package reports_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reports"
)

// readString reads a stored report from s.
func readString(s string) (*reports.Result, error) { return reports.Read(strings.NewReader(s)) }

// readError expects Read to refuse s with a *ReadError and returns it.
func readError(s string) *reports.ReadError {
	GinkgoHelper()
	res, err := readString(s)
	Expect(res).To(BeNil())
	var re *reports.ReadError
	Expect(errors.As(err, &re)).To(BeTrue(), "want a *ReadError, got %T: %v", err, err)
	return re
}

// position returns the line and column (1-based) of byte offset off of s.
func position(s string, off int) (int, int) {
	line := strings.Count(s[:off], "\n") + 1
	col := len([]rune(s[strings.LastIndex(s[:off], "\n")+1 : off]))
	return line, col + 1
}

var _ = Describe("Read", func() {
	var stored string

	// current is how the stored report states its version.
	current := fmt.Sprintf(`"reportVersion": %d,`, reports.ReportVersion)

	BeforeEach(func() {
		data, err := failingJSON()
		Expect(err).NotTo(HaveOccurred())
		stored = string(data)
	})

	It("reads back what WriteJSON wrote, equal to the run", func() {
		for _, r := range []*reports.Result{passingRun(), failingRun(), largeResult()} {
			var b bytes.Buffer
			Expect(reports.WriteJSON(&b, r)).To(Succeed())
			back, err := reports.Read(&b)
			Expect(err).NotTo(HaveOccurred())
			Expect(back).To(Equal(r))
		}
	})

	It("says where a truncated file ends", func() {
		Expect(readError("{\n  \"reportVersion\": 1,\n  \"scenario\": \"x\",\n  \"seed\": 1").Error()).To(Equal(
			"line 4, column 12: the file ends in the middle of the report, after 54 bytes: it is truncated"))

		cut := stored[:len(stored)/2]
		re := readError(cut)
		line, col := position(cut, len(cut))
		Expect(re).To(HaveField("Offset", int64(len(cut))))
		Expect(re.Error()).To(Equal(fmt.Sprintf("line %d, column %d: the file ends in the middle of the report, after %d bytes: it is truncated", line, col, len(cut))))
		Expect(re.Line).To(BeNumerically(">", 100))
	})

	It("says a foreign JSON file is not a report, and what it holds", func() {
		schema, err := os.ReadFile("../scenarios/schema/scenario.schema.json")
		Expect(err).NotTo(HaveOccurred())
		re := readError(string(schema))
		Expect(re.Error()).To(HavePrefix(`line 1, column 1: not a faultline report: no reportVersion and no scenario (its keys: "$defs", "$id", "$schema",`))

		Expect(readError(`  {"scenario": "x", "seed": 1}`).Error()).To(Equal(`line 1, column 3: not a faultline report: no reportVersion (its keys: "scenario", "seed")`))
		Expect(readError("\n[1, 2]").Error()).To(Equal("line 2, column 1: not a faultline report: the file holds an array; a report is a JSON object with reportVersion and scenario"))
		Expect(readError("null").Error()).To(ContainSubstring("the file holds null"))
		Expect(readError("{}").Error()).To(ContainSubstring("(an empty object)"))
	})

	It("says what is wrong with a file that is not JSON, and where", func() {
		Expect(readError("reportVersion: 1\nscenario: x\n").Error()).To(Equal("line 1, column 1: not valid JSON: invalid character 'r' looking for beginning of value"))
		Expect(readError("{\n  \"reportVersion\": 1,\n  \"scenario\": x\n}").Error()).To(Equal("line 3, column 15: not valid JSON: invalid character 'x' looking for beginning of value"))
		Expect(readError("").Error()).To(Equal("line 1, column 1: the file is empty: a report is a JSON object"))
	})

	It("refuses a report from a newer faultline, naming both versions", func() {
		newer := strings.Replace(stored, current, fmt.Sprintf(`"reportVersion": %d,`, reports.ReportVersion+1), 1)
		res, err := readString(newer)
		Expect(res).To(BeNil())
		Expect(err).To(MatchError(reports.ErrNewerVersion))
		Expect(err.Error()).To(Equal(fmt.Sprintf("report from a newer faultline: reportVersion %d, this faultline reads up to %d; upgrade faultline to read it",
			reports.ReportVersion+1, reports.ReportVersion)))
		var ve *reports.NewerVersionError
		Expect(errors.As(err, &ve)).To(BeTrue())
		Expect(ve).To(Equal(&reports.NewerVersionError{Version: reports.ReportVersion + 1, Supported: reports.ReportVersion}))

		Expect(readError(strings.Replace(stored, current, `"reportVersion": 0,`, 1)).Error()).To(Equal(
			"line 2, column 20: reportVersion 0: no faultline writes it (the first is 1)"))
	})

	It("says which field has the wrong type, and where", func() {
		bad := strings.Replace(stored, `"seed": 1,`, `"seed": "1",`, 1)
		off := strings.Index(bad, `"1"`)
		line, col := position(bad, off)
		Expect(readError(bad).Error()).To(Equal(fmt.Sprintf(`line %d, column %d: seed: a string where a report has a non-negative integer`, line, col)))

		bad = strings.Replace(stored, current, `"reportVersion": "1",`, 1)
		Expect(readError(bad).Error()).To(Equal(`line 2, column 20: reportVersion: a string where a report has an integer`))

		// Deep in a list: the path names the index.
		i := strings.Index(stored, `"task": "send-receipt",`)
		j := i + strings.Index(stored[i:], `"created": `)
		k := j + strings.Index(stored[j:], ",")
		bad = stored[:j] + `"created": 282.5` + stored[k:]
		line, col = position(bad, j+len(`"created": `))
		Expect(readError(bad).Error()).To(Equal(fmt.Sprintf(`line %d, column %d: ledger.byTask[1].created: the number 282.5 where a report has an integer`, line, col)))

		i = strings.Index(stored, "\n  \"breakers\": [")
		j = i + strings.Index(stored[i:], "\n  ],")
		bad = stored[:i] + "\n  \"breakers\": {}," + stored[j+len("\n  ],"):]
		off = strings.Index(bad, `"breakers": {}`) + len(`"breakers": `)
		line, col = position(bad, off)
		Expect(readError(bad).Error()).To(Equal(fmt.Sprintf(`line %d, column %d: breakers: an object where a report has an array`, line, col)))

		bad = strings.Replace(stored, `"byReceiver": {`, `"byReceiver": {"x": true,`, 1)
		Expect(readError(bad).Msg).To(Equal(`alerts.byReceiver.x: a boolean where a report has an integer`))
	})

	It("refuses a verdict the report's version does not have", func() {
		bad := strings.Replace(stored, `"verdict": "failed",`, `"verdict": "flaky",`, 1)
		re := readError(bad)
		Expect(re.Msg).To(Equal(`verdict: "flaky" is not a verdict of a version-3 report (passed, failed, errored, interrupted or inconclusive)`))
		Expect(re.Line).To(Equal(8))

		bad = strings.Replace(stored, `"verdict": "passed"`, `"verdict": ""`, 1)
		Expect(readError(bad).Msg).To(Equal(`expectations[0].verdict: "" is not a verdict of a version-3 report (passed, failed, errored, skipped or not-observable)`))

		bad = strings.Replace(stored, `"verdict": "passed"`, `"verdict": "interrupted"`, 1)
		Expect(readError(bad).Msg).To(Equal(`expectations[0].verdict: "interrupted" is not a verdict of a version-3 report (passed, failed, errored, skipped or not-observable)`))

		bad = strings.Replace(stored, `"verdict": "failed",`, `"verdict": "not-observable",`, 1)
		Expect(readError(bad).Msg).To(Equal(`verdict: "not-observable" is not a verdict of a version-3 report (passed, failed, errored, interrupted or inconclusive)`), "never a run's verdict")

		i := strings.Index(stored, `"invariants": [`)
		j := i + strings.Index(stored[i:], `"verdict": "passed"`)
		bad = stored[:j] + `"verdict": "maybe"` + stored[j+len(`"verdict": "passed"`):]
		Expect(readError(bad).Msg).To(Equal(`invariants[0].verdict: "maybe" is not a verdict of a version-3 report (passed, failed, errored, skipped or not-observable)`))

		v1, err := os.ReadFile("testdata/v1/payment-challenge.failing.json")
		Expect(err).NotTo(HaveOccurred())
		bad = strings.Replace(string(v1), `"verdict": "failed",`, `"verdict": "interrupted",`, 1)
		Expect(readError(bad).Msg).To(Equal(`verdict: "interrupted" is not a verdict of a version-1 report (passed, failed or errored)`))
	})

	It("refuses a report missing its ledger or its verdict: zeros would state a run that never was", func() {
		for _, key := range []string{"ledger", "verdict"} {
			i := strings.Index(stored, "\n  \""+key+"\": ")
			Expect(i).To(BeNumerically(">", 0))
			renamed := stored[:i] + "\n  \"was-" + key + "\": " + stored[i+len("\n  \""+key+"\": "):]
			Expect(readError(renamed).Error()).To(Equal("line 1, column 1: an incomplete faultline report: no " + key + " (every report has them: was it cut or edited?)"))
		}
	})

	It("refuses a run length no run can have, with what the limit is", func() {
		for _, ms := range []string{"9223372036854775807", "-1", "9223372036855"} {
			bad := strings.Replace(stored, `"durationMs": 600000,`, `"durationMs": `+ms+`,`, 1)
			Expect(readError(bad).Msg).To(Equal("durationMs: " + ms + " ms is not a run length faultline can have (0 to about 292 years, what a duration holds)"))
		}
		bad := strings.Replace(stored, `"endedAtMs": 600000,`, `"endedAtMs": 9223372036854775807,`, 1)
		Expect(readError(bad).Msg).To(HavePrefix("endedAtMs: 9223372036854775807 ms is not a run length"))
		// The longest a report can state is read.
		long := strings.Replace(stored, `"durationMs": 600000,`, `"durationMs": 9223372036854,`, 1)
		_, err := readString(long)
		Expect(err).NotTo(HaveOccurred())
	})

	It("still reads a version-1 report, as version 1 meant it", func() {
		for _, name := range []string{"payment-challenge.failing.json", "dlq-basics.passing.json"} {
			f, err := os.Open("testdata/v1/" + name)
			Expect(err).NotTo(HaveOccurred())
			r, err := reports.Read(f)
			f.Close()
			Expect(err).NotTo(HaveOccurred(), name)
			Expect(r.ReportVersion).To(Equal(1))
			Expect(r.Invariants).To(BeNil(), "version 1 does not record them")
			// What version 1 meant: every invariant checked, the violated one failed.
			invs := r.InvariantResults()
			simulated := slices.DeleteFunc(reports.Invariants(), func(inv reports.Invariant) bool { return inv.BlackBox })
			Expect(invs).To(HaveLen(len(simulated)), "a version-1 report never judged a black-box invariant")
			for _, inv := range invs {
				want := reports.Passed
				if len(r.Violations) > 0 && inv.Name == r.Violations[0].Invariant {
					want = reports.Failed
				}
				Expect(inv.Verdict).To(Equal(want), inv.Name)
			}
		}
	})

	It("reads a version-3 report's not-observable invariants and expectations, and its black-box system", func() {
		var b bytes.Buffer
		Expect(reports.WriteJSON(&b, blackBoxRun())).To(Succeed())
		back, err := reports.Read(&b)
		Expect(err).NotTo(HaveOccurred())
		Expect(back.Invariants).To(ContainElement(HaveField("Verdict", reports.NotObservable)))
		Expect(back.Expectations).To(ContainElement(HaveField("Verdict", reports.NotObservable)))
		Expect(back.Live.External).To(HaveField("Lost", HaveLen(12)))
		Expect(back.Live.External.Command).To(ContainSubstring("[REDACTED]"), "written through the redactor")
		Expect(back.Live.External.Command).NotTo(ContainSubstring(blackBoxAPIKey))
	})

	It("refuses not-observable in a version-1 or version-2 report: those versions have no such verdict", func() {
		var b bytes.Buffer
		Expect(reports.WriteJSON(&b, blackBoxRun())).To(Succeed())
		v3 := b.String()
		Expect(v3).To(ContainSubstring(current))
		i := strings.Index(v3, `"not-observable"`)
		line, col := position(v3, i)
		for _, v := range []int{2, 1} {
			old := strings.Replace(v3, current, fmt.Sprintf(`"reportVersion": %d,`, v), 1)
			want := "passed, failed, errored or skipped"
			if v == 1 {
				want = "passed, failed or errored"
			}
			re := readError(old)
			Expect(re.Msg).To(Equal(fmt.Sprintf(`expectations[2].verdict: "not-observable" is not a verdict of a version-%d report (%s)`, v, want)))
			Expect([]int{re.Line, re.Col}).To(Equal([]int{line, col}))
		}
		// Its invariants alone are refused too.
		noExp := strings.Replace(v3, `"verdict": "not-observable"`, `"verdict": "skipped"`, 1)
		re := readError(strings.Replace(noExp, current, `"reportVersion": 2,`, 1))
		Expect(re.Msg).To(HavePrefix(`invariants[5].verdict: "not-observable" is not a verdict of a version-2 report`))
	})

	It("ignores keys it does not know: a newer faultline may add fields without a new reportVersion", func() {
		more := strings.Replace(stored, `"seed": 1,`, `"seed": 1, "someNewField": {"x": [1]},`, 1)
		res, err := readString(more)
		Expect(err).NotTo(HaveOccurred())
		Expect(res).To(Equal(failingRun()))
	})

	It("passes on a read failure, wrapped", func() {
		boom := errors.New("disk on fire")
		_, err := reports.Read(failingReader{boom})
		Expect(err).To(MatchError(boom))
	})
})

type failingReader struct{ err error }

func (f failingReader) Read([]byte) (int, error) { return 0, f.err }
