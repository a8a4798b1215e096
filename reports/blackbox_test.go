package reports_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reports"
)

// The writers on a black-box drill: what it could not observe is listed
// with why, never passed; its system under test and its lost and trimmed
// jobs are shown; its command line passes the redactor.
var _ = Describe("A black-box drill's report", func() {
	text := func(r *reports.Result, o reports.TextOptions) string {
		GinkgoHelper()
		return string(written(func(w io.Writer) error { return reports.WriteText(w, r, o) }))
	}

	It("passes when its only non-passes are not observable, and the text lists each with why", func() {
		r := blackBoxPassing()
		Expect(r.Failed()).To(BeFalse())
		out := text(r, reports.TextOptions{})
		Expect(out).To(HavePrefix("PASS  charge-queue"))
		Expect(out).To(ContainSubstring("; 2 expectations held, 1 not observable\n"))
		Expect(out).To(ContainSubstring("\n  invariants: 5 passed, 2 not observable\n"))
		Expect(out).To(ContainSubstring("Not observable from outside (3): judged neither passed nor failed\n" +
			"    ○ invariant legal-move: the system's moves between its own queues happen inside it;"))
		Expect(out).To(ContainSubstring("    ○ expectation requeues = 0: not observable from outside the system"))
		Expect(out).NotTo(ContainSubstring("✗"), "nothing is failed")
	})

	It("never lists a not-observable item as held, passed or failed in the verbose text", func() {
		out := text(blackBoxRun(), reports.TextOptions{Verbose: true})
		Expect(out).To(ContainSubstring("    ○ legal-move: not observable from outside: the system's moves"))
		Expect(out).NotTo(MatchRegexp(`✓ legal-move|✗ legal-move|✗ requeues`))
		Expect(out).To(ContainSubstring("  ✗ lost = 0\n"), "a judged expectation that failed is listed as failed")
	})

	It("heads a failing text report with the lost and trimmed jobs, and describes the system under test", func() {
		out := text(blackBoxRun(), reports.TextOptions{})
		lines := strings.Split(out, "\n")
		Expect(lines[3]).To(HavePrefix("  ✗ Lost: 12 jobs (charge-40, charge-41, "))
		Expect(lines[3]).To(ContainSubstring("charge-49, …): neither succeeded, nor in the DLQ, nor queued at the end"))
		Expect(lines[4]).To(Equal("  ✗ Trimmed: 2 jobs (charge-7, charge-9): trimmed from the DLQ by no declared mechanism"))
		Expect(out).To(ContainSubstring("  System under test (black box):\n    command: ./bin/charge-worker --redis redis://:[REDACTED]@127.0.0.1:6390/0 --api-key=[REDACTED]\n    copies: 2\n"))
		Expect(out).To(ContainSubstring("    drain: waited up to 30s after the scenario's end; every job settled at +1m4.25s\n    DLQ reads: 61 (1 failed)\n"))
	})

	It("counts every trimmed job exactly, though it lists at most 100", func() {
		r := blackBoxRun()
		x := r.Live.External
		x.Trimmed = nil
		for i := range reports.MaxListedViolations {
			x.Trimmed = append(x.Trimmed, fmt.Sprintf("charge-%d", i))
		}
		x.TrimmedCount = 300
		out := text(r, reports.TextOptions{})
		Expect(out).To(ContainSubstring("  ✗ Trimmed: 300 jobs (charge-0, "))
		Expect(out).NotTo(ContainSubstring("at least"))
	})

	It("says a system found running was started by nobody, and when some jobs never settled", func() {
		r := blackBoxPassing()
		r.Live.External.Command, r.Live.External.Running, r.Live.External.SettledAtMs = "", true, -1
		r.Live.External.Ready, r.Live.External.PageWait = "", nil
		out := text(r, reports.TextOptions{})
		Expect(out).To(ContainSubstring("    command: already running: the drill started nothing, so it could not crash or stall it\n    inject:"))
		Expect(out).NotTo(ContainSubstring("copies:"))
		Expect(out).To(ContainSubstring("some jobs never settled"))
	})

	It("counts past the listed lost jobs when the list is capped", func() {
		r := blackBoxRun()
		r.Live.External.Lost = nil
		for range reports.MaxListedViolations {
			r.Live.External.Lost = append(r.Live.External.Lost, "j")
		}
		r.Ledger.Lost = 250
		Expect(text(r, reports.TextOptions{})).To(ContainSubstring("✗ Lost: 250 jobs (j, j, j, j, j, j, j, j, j, j, …)"))
	})

	It("skips each not-observable item in JUnit with why, never as a passed test case", func() {
		out := string(written(func(w io.Writer) error { return reports.WriteJUnit(w, []*reports.Result{blackBoxPassing()}) }))
		Expect(out).To(ContainSubstring(`<testsuite name="charge-queue (seed 7)" tests="10" failures="0" errors="0" skipped="3" time="0">`))
		Expect(out).To(ContainSubstring(`<testcase name="invariant: legal-move" classname="charge-queue (seed 7)" time="0">
      <skipped message="not observable: the system&#39;s moves between its own queues happen inside it; the drill sees the calls, the alerts and the DLQ"></skipped>`))
		Expect(out).To(ContainSubstring(`<skipped message="not observable from outside the system (a black-box drill counts`))
	})

	It("lists a passing black-box run's not-observable items in the Markdown summary", func() {
		out := string(written(func(w io.Writer) error {
			return reports.WriteMarkdown(w, []*reports.Result{blackBoxPassing()})
		}))
		Expect(out).To(HavePrefix("## faultline: ✅ 1 run passed"))
		Expect(out).To(ContainSubstring("**Not observable from outside** (black-box drills that passed"))
		Expect(out).To(ContainSubstring("- charge-queue (seed 7): invariant legal-move: the system's moves"))
	})

	Context("in HTML", func() {
		It("lists what it could not observe in a section of its own, visible, with why", func() {
			page := htmlOf(blackBoxRun())
			t := htmlText(page)
			Expect(t).To(ContainSubstring("Not observable from outside (3)"))
			Expect(t).To(ContainSubstring("○ not observable invariant legal-move the system's moves between its own queues happen inside it"))
			Expect(t).To(ContainSubstring("○ not observable expectation requeues = 0 not observable from outside the system"))
			Expect(page).To(ContainSubstring(`<a href="#not-observable">Not observable</a>`))
			Expect(t).To(ContainSubstring("Invariants: which ran, and what became of each (3 passed, 2 failed, 2 not observable)"))
			Expect(t).To(ContainSubstring("All expectations: 1 held, 1 failed, 1 not observable"))
			Expect(t).To(ContainSubstring("1 of 2 expectations failed; 2 invariants were violated (14 times in all); 3 not observable from outside."))
			Expect(t).NotTo(ContainSubstring("✘ failed requeues"))
		})

		It("says nothing failed of a run whose only non-passes are not observable, and names them", func() {
			t := htmlText(htmlOf(blackBoxPassing()))
			Expect(t).To(ContainSubstring("✔ PASSED"))
			Expect(t).To(ContainSubstring("✔ nothing failed All 2 expectations held (1 more not observable) and no invariant was violated; 3 not observable from outside."))
			Expect(t).To(ContainSubstring("Not observable from outside (3)"))
		})

		It("describes the system under test, its lost and trimmed jobs marked, its command redacted", func() {
			page := htmlOf(blackBoxRun())
			t := htmlText(page)
			Expect(t).To(ContainSubstring("System under test (black box) command ./bin/charge-worker --redis redis://:[REDACTED]@127.0.0.1:6390/0 --api-key=[REDACTED] copies 2 inject seed preset: LPUSH charge:default DLQ redis lists charge:dead_letter"))
			Expect(t).To(ContainSubstring("Lost ✘ 12 jobs (charge-40, charge-41,"))
			Expect(t).To(ContainSubstring("Trimmed ✘ 2 jobs (charge-7, charge-9): trimmed from the DLQ by no declared mechanism"))
		})
	})

	It("changes between not observable and anything else are shown, never a regression", func() {
		old, new := blackBoxPassing(), blackBoxPassing()
		new.Expectations[0].Verdict, new.Expectations[0].Actual = reports.NotObservable, "not observable from outside"
		for i := range new.Invariants {
			if new.Invariants[i].Name == "no-double-charge" {
				new.Invariants[i].Verdict, new.Invariants[i].Note = reports.NotObservable, "the layout names no charge"
			}
			if new.Invariants[i].Name == "legal-move" {
				new.Invariants[i].Verdict, new.Invariants[i].Note = reports.Passed, ""
			}
		}
		d := reports.Diff(old, new)
		Expect(d.Changes).To(ConsistOf(
			reports.Change{Kind: reports.ChangeExpectation, What: "dead-lettered with task charge = 2", Old: "passed (actual 2)", New: "not-observable (actual not observable from outside)"},
			reports.Change{Kind: reports.ChangeViolation, What: "no-double-charge checked", Old: "checked", New: "not observable (the layout names no charge)"},
			reports.Change{Kind: reports.ChangeViolation, What: "legal-move checked", Old: "not observable (the system's moves between its own queues happen inside it; the drill sees the calls, the alerts and the DLQ)", New: "checked"},
		))
		Expect(d.Regression).To(BeFalse())
		back := reports.Diff(new, old)
		Expect(back.Changes).To(HaveLen(3))
		Expect(back.Regression).To(BeFalse())

		// A new expectation that cannot be observed is no regression; a
		// new one that fails still is.
		more := blackBoxPassing()
		more.Expectations = append(more.Expectations, reports.Expectation{Name: "requeued = 1", Actual: "not observable", Verdict: reports.NotObservable})
		Expect(reports.Diff(old, more).Regression).To(BeFalse())
		more.Expectations[len(more.Expectations)-1].Verdict = reports.Failed
		Expect(reports.Diff(old, more).Regression).To(BeTrue())
	})

	It("never lets a secret of its command line out, in any format", func() {
		r := blackBoxRun()
		var txt, js, page, junit, md bytes.Buffer
		Expect(reports.WriteText(&txt, r, reports.TextOptions{Verbose: true})).To(Succeed())
		Expect(reports.WriteJSON(&js, r)).To(Succeed())
		Expect(reports.WriteHTML(&page, r)).To(Succeed())
		Expect(reports.WriteJUnit(&junit, []*reports.Result{r})).To(Succeed())
		Expect(reports.WriteMarkdown(&md, []*reports.Result{r})).To(Succeed())
		for name, out := range map[string]string{"text": txt.String(), "json": js.String(), "html": page.String(), "junit": junit.String(), "md": md.String()} {
			Expect(out).To(ContainSubstring("charge-worker"), name)
			Expect(out).NotTo(ContainSubstring(blackBoxRedisPw), name)
			Expect(out).NotTo(ContainSubstring(blackBoxAPIKey), name)
		}
		Expect(r.Live.External.Command).To(ContainSubstring(blackBoxAPIKey), "the result itself is not changed")
	})
})

// A black-box drill's HTML report in the browser: the not-observable
// section is on the page, not folded away.
var _ = Describe("A black-box drill's HTML report in a browser", Ordered, Label("browser"), func() {
	var report *openedReport

	BeforeAll(func() {
		path := chromiumPath()
		if path == "" {
			msg := "no Chromium at $CHROME_PATH or /usr/bin/chromium (install the Debian package chromium)"
			if os.Getenv("FAULTLINE_REQUIRE_BROWSER") == "1" {
				Fail(msg + ", and FAULTLINE_REQUIRE_BROWSER=1")
			}
			Skip(msg)
		}
		report = openReport(startBrowser(path), blackBoxRun(), "blackbox-failing")
	})

	It("shows the not-observable section and the system under test, visible without a click", func() {
		Expect(inTab(report, chromedp.Text("#not-observable h3"))).To(Equal("Not observable from outside (3)"))
		visible := evalInTab[bool](report, `(() => {
			const s = document.querySelector('#not-observable');
			const r = s.getBoundingClientRect();
			return s.checkVisibility() && r.height > 40 && !s.closest('details');
		})()`)
		Expect(visible).To(BeTrue())
		rows := evalInTab[[]string](report, `[...document.querySelectorAll('#not-observable tbody tr')].map(tr => [...tr.cells].map(c => c.textContent.trim()).join(' '))`)
		Expect(rows).To(HaveLen(3))
		Expect(rows[0]).To(HavePrefix("○ not observable invariant legal-move"))
		Expect(evalInTab[bool](report, `document.querySelector('#system-under-test').checkVisibility()`)).To(BeTrue())
		Expect(evalInTab[string](report, `document.querySelector('#system-under-test .failed').textContent`)).To(ContainSubstring("12 jobs"))
		problems, _ := report.seen()
		Expect(problems).To(BeEmpty())
	})
})
