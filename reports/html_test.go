package reports_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gcustom"
	"github.com/onsi/gomega/types"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/worker"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
	"github.com/faultline/faultline/sim"
)

// htmlLenientClassifier is the reference classifier with one bug: it calls a
// critical failure (a revoked API key) transient, so the job is retried
// instead of paging a person. It makes a real run fail.
type htmlLenientClassifier struct{ inner worker.Classifier }

var _ worker.Classifier = htmlLenientClassifier{}

func (c htmlLenientClassifier) Classify(err error, scope classify.Scope) classify.Classification {
	v := c.inner.Classify(err, scope)
	if v.Class == classify.Critical {
		v.Class, v.Severity = classify.Transient, classify.Medium
	}
	return v
}

// htmlBrokenClassifier plugs htmlLenientClassifier into a run.
var htmlBrokenClassifier = sim.WithClassifier(func(sim.Env) (worker.Classifier, error) {
	return htmlLenientClassifier{classify.Default()}, nil
})

// htmlBuiltinResult runs a built-in scenario with seed 1 and annotates the
// result as the CLI does.
func htmlBuiltinResult(name string, opts ...sim.Option) *reports.Result {
	GinkgoHelper()
	l, err := scenarios.LoadBuiltin(name)
	Expect(err).NotTo(HaveOccurred())
	opts = append([]sim.Option{sim.WithSeed(1), sim.WithReproduce("faultline run " + name + " --seed 1")}, opts...)
	res, err := sim.Run(context.Background(), l.Scenario, opts...)
	Expect(err).NotTo(HaveOccurred())
	scenarios.Annotate(res, l, "builtin:"+name)
	return res
}

// htmlOf writes r as HTML.
func htmlOf(r *reports.Result) string {
	GinkgoHelper()
	var buf bytes.Buffer
	Expect(reports.WriteHTML(&buf, r)).To(Succeed())
	return buf.String()
}

var (
	htmlTagRE    = regexp.MustCompile(`(?s)<[^>]*>`)
	htmlHiddenRE = regexp.MustCompile(`(?s)<(script|style)[^>]*>.*?</(script|style)>`)
	htmlSpaceRE  = regexp.MustCompile(`\s+`)
)

// htmlText is the page's text as a reader sees it: no tags, no style or
// script, entities decoded, white space collapsed.
func htmlText(page string) string {
	s := htmlHiddenRE.ReplaceAllString(page, " ")
	s = htmlTagRE.ReplaceAllString(s, " ")
	return htmlSpaceRE.ReplaceAllString(html.UnescapeString(s), " ")
}

// oneSpaced collapses runs of white space, as a browser shows text.
func oneSpaced(s string) string { return htmlSpaceRE.ReplaceAllString(s, " ") }

// appearInOrder succeeds when a string holds each part, each after the one
// before it.
func appearInOrder(parts ...string) types.GomegaMatcher {
	return gcustom.MakeMatcher(func(s string) (bool, error) {
		at := 0
		for _, p := range parts {
			i := strings.Index(s[at:], p)
			if i < 0 {
				return false, nil
			}
			at += i + len(p)
		}
		return true, nil
	}).WithTemplate("Expected the page to hold, in this order:\n{{format .Data 1}}", parts)
}

// htmlTimelineData decodes the downsampled series the page's script reads.
func htmlTimelineData(page string) (d struct {
	X []float64 `json:"x"`
	T []int64   `json:"t"`
	S []struct {
		Name string  `json:"name"`
		V    []int64 `json:"v"`
	} `json:"s"`
}) {
	GinkgoHelper()
	m := regexp.MustCompile(`(?s)<script type="application/json" id="timeline-data">(.*?)</script>`).FindStringSubmatch(page)
	Expect(m).To(HaveLen(2), "the page has no timeline data")
	Expect(json.Unmarshal([]byte(m[1]), &d)).To(Succeed())
	return d
}

var _ = Describe("WriteHTML", func() {
	Context("on a run that failed (payment-challenge with a classifier that calls critical failures transient)", func() {
		var (
			res  *reports.Result
			page string
			text string
		)
		BeforeEach(func() {
			res = htmlBuiltinResult("payment-challenge", htmlBrokenClassifier)
			Expect(res.Verdict).To(Equal(reports.Failed))
			page = htmlOf(res)
			text = htmlText(page)
		})

		It("puts the verdict and what failed first, then every section in order", func() {
			Expect(page).To(appearInOrder(`id="verdict"`, `id="failures"`, `id="timeline"`, `id="confusion"`,
				`id="fates"`, `id="dlq"`, `id="alerts"`, `id="breakers"`, `id="faults"`, `id="steps"`, `id="config"`))
			Expect(text).To(ContainSubstring("✘ FAILED payment-challenge"))
			Expect(text).To(ContainSubstring(fmt.Sprintf("3 of %d expectations failed; 2 invariants were violated (2 times in all).", len(res.Expectations))))
			Expect(text).NotTo(ContainSubstring("stopped"), "a violation no longer stops the run")
		})

		It("shows each failed expectation with what was expected and what happened", func() {
			failures := text[strings.Index(text, "What failed"):strings.Index(text, "All expectations:")]
			n := 0
			for _, e := range res.Expectations {
				if e.Verdict != reports.Failed {
					Expect(failures).NotTo(ContainSubstring(e.Name))
					continue
				}
				n++
				Expect(failures).To(ContainSubstring(fmt.Sprintf("✘ failed %s %s %s", e.Name, e.Expected, e.Actual)))
			}
			Expect(n).To(Equal(3))
			Expect(failures).To(ContainSubstring(fmt.Sprintf("Failed expectations (3 of %d)", len(res.Expectations))))
		})

		It("shows the violation with the job's trail, and the command that reproduces it", func() {
			v := res.Violations[0]
			Expect(text).To(appearInOrder("Reproduce", "faultline run payment-challenge --seed 1",
				"✘ violated no-retry-of-permanent-or-critical at +3m0.061s — job pay-auth", v.Message,
				"The job's trail, oldest first (seed 1):", oneSpaced(v.Trail[0]), oneSpaced(v.Trail[1]), oneSpaced(v.Trail[2])))
		})

		It("marks the misclassified critical failure and its retry in the confusion matrix", func() {
			Expect(page).To(ContainSubstring(`<td class="n miss">✗ 1</td>`))
			Expect(page).To(ContainSubstring(`<td class="n bad">⚠ 1</td>`))
			Expect(text).To(ContainSubstring("critical ✗ 1 0 0 0 1 ⚠ 1 0"))
		})

		It("draws each violation across the timeline", func() {
			Expect(strings.Count(page, `<g class="mark violation">`)).To(Equal(2))
			Expect(text).To(ContainSubstring("✘ no-retry-of-permanent-or-critical"))
			Expect(text).To(ContainSubstring("✘ critical-failure-paged"))
		})

		It("lists which invariants ran and what became of each", func() {
			Expect(text).To(ContainSubstring("Invariants: which ran, and what became of each"))
			Expect(text).To(ContainSubstring("✘ violated critical-failure-paged 1"))
			Expect(text).To(ContainSubstring("✔ held conservation 0"))
		})
	})

	Context("on a run that passed (payment-challenge)", func() {
		var (
			res  *reports.Result
			page string
			text string
		)
		BeforeEach(func() {
			res = htmlBuiltinResult("payment-challenge")
			Expect(res.Verdict).To(Equal(reports.Passed))
			page = htmlOf(res)
			text = htmlText(page)
		})

		It("says that nothing failed", func() {
			Expect(text).To(ContainSubstring("✔ PASSED payment-challenge"))
			Expect(text).To(ContainSubstring(fmt.Sprintf("✔ nothing failed All %d expectations held and no invariant was violated.", len(res.Expectations))))
			Expect(page).NotTo(ContainSubstring(`class="violation"`))
		})

		It("draws a row per fault under its target, with its windows and hits", func() {
			for _, f := range res.Faults {
				Expect(text).To(ContainSubstring(fmt.Sprintf("%s (%d hits)", f.Name, f.Hits)))
			}
			Expect(strings.Count(page, `<rect class="window"`)).To(Equal(len(res.Faults)))
			Expect(text).To(ContainSubstring("dependency/payment-gateway"))
			Expect(text).To(ContainSubstring("dependency/smtp"))
		})

		It("draws the breaker's states as a band, each named", func() {
			Expect(page).To(MatchRegexp(`<text class="band-label"[^>]*>open</text>`))
			Expect(page).To(MatchRegexp(`<text class="band-label"[^>]*>closed</text>`))
			Expect(strings.Count(page, `class="band f-open"`)).To(BeNumerically(">=", 2))
		})

		It("draws a page as a marker of its own, one per page", func() {
			pages := 0
			for _, d := range res.Alerts.Deliveries {
				if d.Status == "firing" && d.Severity == "high" {
					pages++
				}
			}
			Expect(pages).To(BeNumerically(">", 0))
			chart := page[strings.Index(page, `<svg id="timeline-chart"`):strings.Index(page, `</svg>`)]
			Expect(strings.Count(chart, `<path class="marker page"`)).To(Equal(pages))
			Expect(strings.Count(chart, `<path class="marker firing"`) + strings.Count(chart, `<path class="marker resolved"`)).
				To(Equal(len(res.Alerts.Deliveries) - pages))
		})

		It("stacks the queue and DLQ series with axes, units and a legend", func() {
			Expect(page).To(ContainSubstring(`Jobs in the system, stacked (count of jobs)`))
			Expect(page).To(ContainSubstring(`DLQ depth by severity, stacked (count of entries)`))
			Expect(text).To(ContainSubstring("time since the start of the run (virtual)"))
			Expect(text).To(ContainSubstring("+0 +1m +2m +3m +4m +5m +6m +7m +8m +9m +10m"))
			for _, name := range []string{"queued", "in flight", "waiting to retry", "fallback (batch queue)", "DLQ high", "DLQ medium", "DLQ low",
				"breaker open", "breaker half-open", "page (firing, high severity)", "fault window (schedule on)"} {
				Expect(page).To(MatchRegexp(`<li><svg class="swatch[^"]*"[^>]*>.*?</svg> %s</li>`, regexp.QuoteMeta(name)))
			}
			d := htmlTimelineData(page)
			Expect(d.X).To(HaveLen(len(res.Series.AtMs)))
		})

		It("shows the job fates, the DLQ, the alerts, the transitions, the faults, the steps and the config", func() {
			Expect(text).To(ContainSubstring("Where the 2,872 jobs created ended."))
			Expect(text).To(ContainSubstring("succeeded 2,861 99.6 %"))
			Expect(text).To(ContainSubstring("pay-auth charge dead-lettered dead-lettered high critical 0 0 yes"))
			Expect(text).To(ContainSubstring(fmt.Sprintf("%d entries; showing the first %d by job ID", res.DLQ.Total, len(res.DLQ.Entries))))
			Expect(text).To(ContainSubstring("http 401 Unauthorized: API key revoked or expired: authentication failed"))
			Expect(text).To(ContainSubstring("▲ page slack-oncall job-failed high firing"))
			Expect(text).To(ContainSubstring("+4m0.567s payment-gateway (w2) closed open fleet-consecutive-failures"))
			Expect(text).To(ContainSubstring("+4m0.574s payment-gateway (w5) closed open fleet-opened"))
			Expect(text).To(ContainSubstring("gateway-timeouts dependency/payment-gateway gateway-timeout indeterminate 39 +1m0.13s +1m43.589s +1m0s–+2m0s"))
			Expect(text).To(ContainSubstring("+9m0s requeue matched 34, requeued 34, skipped 0 ✔ done"))
			Expect(text).To(ContainSubstring(`"name": "payment-challenge"`))
		})

		It("writes the same bytes every time", func() {
			Expect(htmlOf(res)).To(Equal(page))
		})
	})

	Context("as a file to open anywhere", func() {
		var page string
		BeforeEach(func() {
			page = htmlOf(htmlBuiltinResult("payment-challenge"))
		})

		It("loads nothing: no external script, style, image, font or link", func() {
			Expect(page).To(HavePrefix("<!DOCTYPE html>"))
			Expect(page).NotTo(MatchRegexp(`(?i)\ssrc\s*=`))
			Expect(page).NotTo(MatchRegexp(`(?i)<link\b`))
			Expect(page).NotTo(MatchRegexp(`(?i)@import|@font-face`))
			Expect(page).NotTo(MatchRegexp(`url\([^#]`))
			for _, m := range regexp.MustCompile(`\shref="([^"]*)"`).FindAllStringSubmatch(page, -1) {
				Expect(m[1]).To(HavePrefix("#"))
			}
			Expect(strings.Count(page, "<script")).To(Equal(2), "the script and its data")
			Expect(strings.Count(page, "<style")).To(Equal(1))
		})

		It("allows its own style and script by hash and nothing else", func() {
			hash := func(re string) string {
				m := regexp.MustCompile(re).FindStringSubmatch(page)
				Expect(m).To(HaveLen(2))
				sum := sha256.Sum256([]byte(m[1]))
				return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
			}
			m := regexp.MustCompile(`<meta http-equiv="Content-Security-Policy" content="([^"]*)">`).FindStringSubmatch(page)
			Expect(m).To(HaveLen(2))
			csp := html.UnescapeString(m[1])
			Expect(csp).To(HavePrefix("default-src 'none';"))
			Expect(csp).To(ContainSubstring("style-src " + hash(`(?s)<style>(.*?)</style>`) + ";"))
			Expect(csp).To(ContainSubstring("script-src " + hash(`(?s)<script>(.*?)</script>`) + ";"))
			Expect(csp).To(ContainSubstring("img-src 'none'"))
		})

		It("reads printed and without colour: print rules, and every state in words or symbols", func() {
			Expect(page).To(ContainSubstring("@media print"))
			Expect(page).To(ContainSubstring("print-color-adjust: exact"))
			text := htmlText(page)
			Expect(text).To(ContainSubstring("✔ PASSED"))
			Expect(text).To(ContainSubstring("✔ passed lost = 0"))
			Expect(page).To(MatchRegexp(`<text class="band-label"[^>]*>half-open|open|closed</text>`))
		})
	})

	It("escapes every string of the model", func() {
		evil := `<script>alert(1)</script>"><img src=x onerror=alert(2)>`
		r := htmlFabricated(200, 20)
		r.Scenario, r.Description, r.Error, r.Reproduce = evil, evil, evil, evil
		r.Expectations = append(r.Expectations, reports.Expectation{Name: evil, Expected: evil, Actual: evil, Verdict: reports.Failed})
		r.Violations = []reports.Violation{{Invariant: evil, Message: evil, JobID: evil, Trail: []string{evil}}}
		r.Alerts.Deliveries[0].Summary, r.Alerts.Deliveries[0].Receiver, r.Alerts.Deliveries[0].Fingerprint = evil, evil, evil
		r.Alerts.ByReceiver[evil] = 1
		r.Alerts.PagesByFingerprint[evil] = 1
		r.DLQ.Entries[0].Error, r.DLQ.Entries[0].JobID = evil, evil
		r.DLQ.BySeverity[evil] = 1
		r.Series.DLQBySeverity[evil] = make([]int64, len(r.Series.AtMs))
		r.Faults[0].Name, r.Faults[0].Target = evil, evil
		r.Breakers[0].Breaker = evil
		r.Steps[0].Detail, r.Steps[0].Error = evil, evil
		r.Fates[0].JobID = evil
		r.Confusion[0].True = evil
		r.Confusion[0].Said[evil] = 1
		r.Config = map[string]any{"metadata": map[string]any{"description": evil}}

		page := htmlOf(r)
		Expect(strings.Count(page, "<script")).To(Equal(2), "only the report's own script and data")
		Expect(page).NotTo(ContainSubstring("<img"))
		Expect(page).To(ContainSubstring("&lt;script&gt;alert(1)&lt;/script&gt;&#34;&gt;&lt;img src=x onerror=alert(2)&gt;"))
		Expect(htmlText(page)).To(ContainSubstring(evil))
		d := htmlTimelineData(page)
		Expect(d.S).To(ContainElement(HaveField("Name", "DLQ "+evil)))
	})

	Context("on a long run (10,001 samples, 500 deliveries, a flapping breaker)", func() {
		var (
			r    *reports.Result
			page string
		)
		BeforeEach(func() {
			r = htmlFabricated(10_001, 500)
			page = htmlOf(r)
		})

		It("stays under 2 MB", func() {
			Expect(len(page)).To(BeNumerically("<", 2<<20))
			AddReportEntry("HTML report for 10,001 samples and 500 deliveries", fmt.Sprintf("%d bytes", len(page)), ReportEntryVisibilityAlways)
			if os.Getenv("FAULTLINE_ARTIFACTS") != "" {
				Expect(os.WriteFile(browserArtifact("report-10001-samples.html"), []byte(page), 0o644)).To(Succeed())
			}
		})

		It("draws each series with at most about 600 points, the largest of each bucket, so a htmlSpike survives", func() {
			d := htmlTimelineData(page)
			Expect(len(d.X)).To(BeNumerically("<=", 611))
			Expect(d.T).To(HaveLen(len(d.X)))
			Expect(d.T[0]).To(BeZero())
			Expect(d.T[len(d.T)-1]).To(Equal(r.Series.AtMs[len(r.Series.AtMs)-1]))
			Expect(d.S).To(HaveLen(4 + len(r.Series.DLQBySeverity)))
			for _, s := range d.S {
				Expect(s.V).To(HaveLen(len(d.X)), s.Name)
			}
			Expect(d.S[0].Name).To(Equal("queued"))
			Expect(htmlMaxOf(d.S[0].V)).To(Equal(int64(htmlSpike)))
			for _, m := range regexp.MustCompile(`<path class="area" d="([^"]*)"`).FindAllStringSubmatch(page, -1) {
				Expect(strings.Count(m[1], "L")).To(BeNumerically("<=", 2*611))
			}
			Expect(htmlText(page)).To(MatchRegexp(`each drawn point is the largest value over \+2m26\.88s of samples`))
			Expect(page).To(MatchRegexp(`<text class="axis y"[^>]*>%s</text>`, "60,000"))
		})

		It("keeps the flapping breaker's band and the transitions table small", func() {
			Expect(strings.Count(page, `<rect class="band `)).To(BeNumerically("<=", 1200))
			Expect(strings.Count(page, `<rect class="band f-open"`)).To(BeNumerically(">", 100))
			Expect(htmlText(page)).To(ContainSubstring(fmt.Sprintf("…and %d more transitions.", len(r.Breakers)-500)))
		})

		It("caps the DLQ list and says how many entries there are", func() {
			Expect(htmlText(page)).To(ContainSubstring("Showing 500 of 1,000 entries."))
		})
	})

	Context("on odd results", func() {
		It("refuses no result", func() {
			err := reports.WriteHTML(&bytes.Buffer{}, nil)
			Expect(err).To(MatchError(reports.ErrNilResult))
		})

		It("writes an empty result", func() {
			text := htmlText(htmlOf(&reports.Result{}))
			Expect(text).To(ContainSubstring("? NO VERDICT"))
			Expect(text).To(ContainSubstring("The result has no time series, faults, breakers, alerts or steps to draw."))
			Expect(text).To(ContainSubstring("No failure was classified."))
		})

		It("says an interrupted run was interrupted, its expectations not evaluated, and marks where it stopped", func() {
			r := interruptedRun()
			n := len(r.Expectations)
			text := htmlText(htmlOf(r))
			Expect(text).To(ContainSubstring("⏹ INTERRUPTED dlq-basics"))
			Expect(text).To(ContainSubstring(fmt.Sprintf("%d expectations not evaluated; no invariant was violated; the run stopped at +1m0s of +5m0s.", n)))
			Expect(text).To(ContainSubstring("Interrupted: run stopped at +1m0s: context canceled"))
			Expect(text).To(ContainSubstring(fmt.Sprintf("⏹ not evaluated %d expectations were not evaluated: the run did not reach its end.", n)))
			Expect(text).To(ContainSubstring("– not checked conservation 0 not checked to the end: the run was interrupted at +1m0s"))
			Expect(text).To(ContainSubstring(fmt.Sprintf("All expectations: 0 held, 0 failed, %d not evaluated", n)))
			Expect(text).NotTo(ContainSubstring("✔ nothing failed"))
		})

		It("warns of a fault that never hit, and fails one that had to", func() {
			r := passingRun()
			r.Warnings = []string{"fault smtp-busy (latency on dependency/smtp) never hit"}
			r.Faults[1].Hits, r.Faults[1].RequireHits = 0, false
			r.Faults[2].Hits, r.Faults[2].RequireHits = 0, true
			page := htmlOf(r)
			text := htmlText(page)
			Expect(text).To(ContainSubstring("⚠ Warning: fault smtp-busy (latency on dependency/smtp) never hit"))
			Expect(text).To(ContainSubstring("0 ⚠ never hit"))
			Expect(text).To(ContainSubstring("0 ✘ never hit (required)"))
		})

		It("bounds the time axis of an absurdly long run: ten-odd ticks, at once", func() {
			for _, ms := range []int64{math.MaxInt64, 1e12, reports.MaxDurationMs} {
				r := htmlFabricated(50, 5)
				r.DurationMs, r.EndedAtMs = ms, ms
				start := time.Now()
				d := htmlTimelineData(htmlOf(r))
				Expect(time.Since(start)).To(BeNumerically("<", 2*time.Second), "%d ms", ms)
				Expect(strings.Count(htmlOf(r), `<line x1=`)).To(BeNumerically("<", 200))
				_ = d
			}
			page := htmlOf(func() *reports.Result { r := htmlFabricated(50, 5); r.DurationMs = 1e12; return r }())
			ticks := regexp.MustCompile(`<g class="axis x top">(.*?)</g>`).FindStringSubmatch(page)
			Expect(ticks).To(HaveLen(2))
			labels := regexp.MustCompile(`>([^<]+)</text>`).FindAllStringSubmatch(ticks[1], -1)
			Expect(len(labels)).To(BeNumerically("<=", 12))
			Expect(len(labels)).To(BeNumerically(">=", 5))
			Expect(html.UnescapeString(labels[1][1])).To(Equal("+48000h"), "2,000 days a tick over 11,574 days")
		})

		It("says why an errored run stopped", func() {
			text := htmlText(htmlOf(&reports.Result{Verdict: reports.Errored, Error: "open store: connection refused", DurationMs: 60_000}))
			Expect(text).To(ContainSubstring("⚠ ERRORED"))
			Expect(text).To(ContainSubstring("Error: open store: connection refused"))
		})

		It("draws series whose columns are shorter than their times", func() {
			r := htmlFabricated(50, 5)
			r.Series.Queued = r.Series.Queued[:10]
			r.Series.Breakers["api"] = r.Series.Breakers["api"][:3]
			d := htmlTimelineData(htmlOf(r))
			Expect(d.S[0].V).To(HaveLen(50))
			Expect(d.S[0].V[20]).To(BeZero())
		})

		It("returns the writer's error", func() {
			err := reports.WriteHTML(htmlFailingWriter{}, htmlFabricated(10, 1))
			Expect(err).To(MatchError(ContainSubstring("disk full")))
			Expect(errors.Is(err, errHTMLDiskFull)).To(BeTrue())
		})
	})
})

var errHTMLDiskFull = errors.New("disk full")

type htmlFailingWriter struct{}

func (htmlFailingWriter) Write([]byte) (int, error) { return 0, errHTMLDiskFull }

func htmlMaxOf(v []int64) int64 {
	var m int64
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

// htmlSpike is the one-sample peak htmlFabricated puts in the queue.
const htmlSpike = 54_321

// htmlFabricated makes a result the size of a 24-hour run at 100 jobs/s: n
// samples of every series over 24 hours, deliveries alerts, a breaker that
// flaps 5,000 times, 1,000 DLQ entries, 20 faults of 100 windows each.
func htmlFabricated(n, deliveries int) *reports.Result {
	rng := rand.New(rand.NewPCG(1, 2))
	const day = int64(24 * 60 * 60 * 1000)
	interval := max(day/int64(max(n-1, 1)), 1)
	r := &reports.Result{
		ReportVersion: reports.ReportVersion, Scenario: "day-at-100-per-second", Seed: 1,
		Verdict: reports.Failed, DurationMs: day, EndedAtMs: day,
		Reproduce: "faultline run day.yaml --seed 1",
		Ledger: reports.Ledger{Created: 8_640_000, Succeeded: 8_600_000, DeadLettered: 39_000, Scheduled: 1000,
			Attempts: 12_000_000, Retries: 3_000_000, DeadLetters: 40_000,
			ByTask: []reports.TaskTotals{{Task: "work", Created: 8_640_000, Succeeded: 8_600_000, DeadLettered: 39_000, Pending: 1000}}},
		Alerts: reports.Alerts{Notifications: int64(deliveries) * 3, Pages: 40, Truncated: true,
			ByReceiver: map[string]int64{"oncall": 40, "team": int64(deliveries)*3 - 40}, PagesByFingerprint: map[string]int64{"alertname=job-failed": 40}},
		DLQ:    reports.DLQ{Total: 1000, ByStatus: map[string]int{"failed": 1000}, BySeverity: map[string]int{"medium": 900, "high": 100}},
		Series: reports.Series{IntervalMs: interval, DLQBySeverity: map[string][]int64{}, Breakers: map[string][]string{}},
		Engine: reports.Engine{Events: 40_000_000, Jobs: 8_640_000, MaxQueue: htmlSpike},
		Config: map[string]any{"metadata": map[string]any{"name": "day"}, "duration": "24h"},
	}
	for i := range 30 {
		v := reports.Passed
		if i%10 == 0 {
			v = reports.Failed
		}
		r.Expectations = append(r.Expectations, reports.Expectation{Name: fmt.Sprintf("expectation %d holds", i), Expected: "= 0", Actual: "0", Verdict: v})
	}
	r.Violations = []reports.Violation{{Invariant: "no-lost-job", Message: "job work-1 vanished", JobID: "work-1", AtMs: day / 2, Seed: 1,
		Trail: []string{"+12h0m0s none → queued (enqueued), attempts 0"}}}
	s := &r.Series
	s.Scheduled, s.InFlight, s.Fallback = make([]int64, n), make([]int64, n), make([]int64, n)
	s.Queued = make([]int64, n)
	high, med := make([]int64, n), make([]int64, n)
	states := make([]string, n)
	for i := range n {
		s.AtMs = append(s.AtMs, int64(i)*interval)
		s.Queued[i] = int64(rng.IntN(200))
		s.InFlight[i] = int64(rng.IntN(64))
		s.Scheduled[i] = int64(rng.IntN(500))
		if i%1000 < 100 {
			s.Fallback[i] = int64(rng.IntN(300))
		}
		high[i], med[i] = int64(i/100), int64(i/10)
		states[i] = []string{"closed", "closed", "open", "half-open"}[rng.IntN(4)]
	}
	s.Queued[n/2+3] = htmlSpike
	s.DLQBySeverity["high"], s.DLQBySeverity["medium"] = high, med
	s.Breakers["api"] = states
	for i := range 5000 {
		from, to := "closed", "open"
		switch i % 3 {
		case 1:
			from, to = "open", "half-open"
		case 2:
			from, to = "half-open", "closed"
		}
		r.Breakers = append(r.Breakers, reports.Transition{AtMs: int64(i) * (day / 5000), Breaker: "primary", From: from, To: to, Reason: "consecutive-failures"})
	}
	for i := range deliveries {
		sev, status := "medium", "firing"
		if i%10 == 0 {
			sev = "high"
		}
		if i%7 == 0 {
			status = "resolved"
		}
		r.Alerts.Deliveries = append(r.Alerts.Deliveries, reports.Delivery{AtMs: int64(i) * (day / int64(deliveries)), Receiver: []string{"oncall", "team"}[i%2],
			Fingerprint: fmt.Sprintf("alertname=job-failed,task=work,n=%d", i%17), Name: "job-failed", Severity: sev, Status: status, Count: i%50 + 1,
			Summary: fmt.Sprintf("work job work-%d failed on api: http 503 Service Unavailable", i), Attempt: 1})
	}
	for i := range 1000 {
		r.DLQ.Entries = append(r.DLQ.Entries, reports.DLQEntry{JobID: fmt.Sprintf("work-%07d", i), Task: "work", Status: "failed", Class: "transient",
			Severity: "medium", Rule: "http-5xx", Attempts: 10, Reason: "exhausted", Error: "http 503 Service Unavailable",
			FirstFailedAtMs: int64(i) * 80_000, LastFailedAtMs: int64(i)*80_000 + 5000})
	}
	r.DLQ.Truncated = true
	for i := range 20 {
		f := reports.Fault{Name: fmt.Sprintf("fault-%d", i), Target: fmt.Sprintf("dependency/api-%d", i%4), Model: "outage", Class: "transient",
			Hits: 1000, FirstHitMs: 0, LastHitMs: day - 1, Truncated: true}
		for w := range 100 {
			from := int64(w)*(day/100) + int64(i)*60_000
			f.Windows = append(f.Windows, [2]int64{from, from + 120_000})
		}
		r.Faults = append(r.Faults, f)
	}
	for i := range 100 {
		r.Steps = append(r.Steps, reports.Step{AtMs: int64(i) * (day / 100), Kind: "requeue", Detail: "matched 10, requeued 10, skipped 0"})
	}
	for i := range 50 {
		r.Fates = append(r.Fates, reports.JobFate{JobID: fmt.Sprintf("job-%d", i), Task: "work", State: "succeeded", LastMove: "succeeded"})
	}
	r.Confusion = []reports.Confusion{
		{True: "transient", Total: 3_000_000, Said: map[string]int64{"transient": 3_000_000}, Routes: map[string]int64{"retry": 2_960_000, "dead-letter": 40_000}},
		{True: "critical", Total: 10, Said: map[string]int64{"critical": 10}, Routes: map[string]int64{"dead-letter": 10}},
	}
	return r
}

// BenchmarkWriteHTML writes the HTML report of a htmlFabricated 24-hour run:
// 10,001 samples of every series, 500 deliveries, 5,000 breaker
// transitions, 1,000 DLQ entries.
func BenchmarkWriteHTML(b *testing.B) {
	r := htmlFabricated(10_001, 500)
	var size int
	b.ReportAllocs()
	for b.Loop() {
		var buf bytes.Buffer
		if err := reports.WriteHTML(&buf, r); err != nil {
			b.Fatal(err)
		}
		size = buf.Len()
	}
	b.ReportMetric(float64(size), "bytes/report")
}

var _ = Describe("The HTML report of a drill", func() {
	It("says it ran on the wall clock, at which scale, and shows the observed latencies, as text", func() {
		res := htmlBuiltinResult("dlq-basics")
		res.Live = &reports.Live{TimeScale: 20, StartedAt: "2026-12-01T10:00:00Z", Workers: 4, Processes: map[string]int{"started": 4},
			Latencies: []reports.Latency{{What: "dependency <script>gw</script>", Calls: 12, P50Ms: 0.4, P95Ms: 2.5, P99Ms: 3, MaxMs: 7.25}},
			Aborted:   "abortIf.dlqDepth 5 crossed"}
		page := htmlOf(res)
		text := htmlText(page)
		Expect(text).To(ContainSubstring("not reproducible to the byte: time scale 20, 4 worker processes"))
		Expect(text).To(ContainSubstring("Faults stopped by the guard: abortIf.dlqDepth 5 crossed"))
		Expect(text).To(ContainSubstring("dependency <script>gw</script>"))
		Expect(page).NotTo(ContainSubstring("<script>gw</script>"))
		Expect(text).To(ContainSubstring("7.2 ms"))
	})
})
