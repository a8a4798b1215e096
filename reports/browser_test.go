package reports_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reports"
)

// The HTML report opened in headless Chromium (the Debian package chromium,
// or the browser at $CHROME_PATH). Without a browser these specs skip, unless
// FAULTLINE_REQUIRE_BROWSER=1 (CI sets it), when they fail.
//
// The README's screenshot (docs/report-screenshot.png) is made with:
//
//	FAULTLINE_SCREENSHOT=docs/report-screenshot.png go test ./reports -run TestReports -ginkgo.focus 'README screenshot'
//
// (a relative path is taken from the module's root).

const (
	// browserStartTimeout is how long Chromium may take to start: generous,
	// for two busy cores.
	browserStartTimeout = 60 * time.Second
	// pageTimeout bounds loading a report and each check on it.
	pageTimeout = 30 * time.Second
	// The browser's viewport.
	viewportW, viewportH = 1280, 1600
	// readmeShotH is the README screenshot's height, at viewportW: a failing
	// run's verdict, what failed, and the whole timeline with its legend.
	readmeShotH = 2100
)

// chromiumPath returns the browser to drive: $CHROME_PATH, else
// /usr/bin/chromium, else "".
func chromiumPath() string {
	for _, p := range []string{os.Getenv("CHROME_PATH"), "/usr/bin/chromium"} {
		if p == "" {
			continue
		}
		if p, err := exec.LookPath(p); err == nil {
			return p
		}
	}
	return ""
}

// startBrowser starts headless Chromium for the rest of the container and
// returns its context; each report opens in a tab of its own.
func startBrowser(path string) context.Context {
	GinkgoHelper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox, // CI runs as root
		chromedp.DisableGPU,
		chromedp.WindowSize(viewportW, viewportH),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	DeferCleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(allocCtx)
	DeferCleanup(cancel)
	// The first run starts the browser; it must not have a deadline (that
	// would stop the browser), so wait for it here instead.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(ctx) }()
	var err error
	Eventually(started).WithTimeout(browserStartTimeout).Should(Receive(&err), "Chromium at %s did not start within %s", path, browserStartTimeout)
	Expect(err).NotTo(HaveOccurred(), "start Chromium at %s", path)
	return ctx
}

// openedReport is a report loaded in a tab, with what the tab saw.
type openedReport struct {
	ctx  context.Context
	url  string
	file string

	mu       sync.Mutex
	problems []string // console errors and warnings, exceptions, browser log errors
	requests []string // every URL the tab asked for
}

func (o *openedReport) seen() (problems, requests []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.problems...), append([]string(nil), o.requests...)
}

// openReport writes r as HTML into a file and opens it in a new tab of the
// browser, recording console messages, exceptions and requests from the
// start.
func openReport(browser context.Context, r *reports.Result, name string) *openedReport {
	GinkgoHelper()
	file := filepath.Join(GinkgoT().TempDir(), name+".html")
	f, err := os.Create(file)
	Expect(err).NotTo(HaveOccurred())
	Expect(reports.WriteHTML(f, r)).To(Succeed())
	Expect(f.Close()).To(Succeed())

	ctx, cancel := chromedp.NewContext(browser)
	DeferCleanup(cancel)
	o := &openedReport{ctx: ctx, file: file, url: (&url.URL{Scheme: "file", Path: file}).String()}
	Expect(chromedp.Listen(ctx, func(ev any) {
		o.mu.Lock()
		defer o.mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				o.problems = append(o.problems, fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(args, " ")))
			}
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			o.problems = append(o.problems, fmt.Sprintf("exception at %d:%d: %s", d.LineNumber, d.ColumnNumber, msg))
		case *log.EventEntryAdded:
			// The browser's own log: a Content-Security-Policy violation,
			// a failed load.
			if e := ev.Entry; e.Level == log.EntryLevelError || e.Level == log.EntryLevelWarning {
				o.problems = append(o.problems, fmt.Sprintf("browser log %s (%s): %s %s", e.Level, e.Source, e.Text, e.URL))
			}
		case *network.EventRequestWillBeSent:
			o.requests = append(o.requests, ev.Request.URL)
		}
	})).To(Succeed())

	loadCtx, done := context.WithTimeout(ctx, pageTimeout)
	defer done()
	Expect(chromedp.Do(loadCtx,
		chromedp.Navigate(o.url),
		chromedp.WaitVisible("#verdict"),
	)).To(Succeed(), "open %s", o.url)
	return o
}

// inTab runs an action on the report's tab, bounded by pageTimeout.
func inTab[T any](o *openedReport, a chromedp.Action[T]) T {
	GinkgoHelper()
	ctx, done := context.WithTimeout(o.ctx, pageTimeout)
	defer done()
	v, err := chromedp.Run(ctx, a)
	Expect(err).NotTo(HaveOccurred())
	return v
}

// evalInTab runs JavaScript in the report's tab and returns its value.
func evalInTab[T any](o *openedReport, js string) T {
	GinkgoHelper()
	return inTab(o, chromedp.Evaluate[T](js))
}

// pageScreenshot captures the whole page as PNG, past the viewport.
func pageScreenshot() chromedp.Action[[]byte] {
	return func(ctx context.Context, t *chromedp.Target) ([]byte, error) {
		m, err := cdp.Call(ctx, t, page.GetLayoutMetrics, cdp.Empty{})
		if err != nil {
			return nil, err
		}
		size := &dom.Rect{Width: viewportW, Height: viewportH}
		if m.CSSContentSize != nil {
			size = m.CSSContentSize
		}
		r, err := cdp.Call(ctx, t, page.CaptureScreenshot, page.CaptureScreenshotParams{
			Format:                page.CaptureScreenshotFormatPng,
			CaptureBeyondViewport: new(true),
			FromSurface:           new(true),
			Clip:                  &page.Viewport{X: 0, Y: 0, Width: max(size.Width, viewportW), Height: size.Height, Scale: 1},
		})
		if err != nil {
			return nil, err
		}
		return r.Data, nil
	}
}

// browserArtifact returns where a test artifact goes: $FAULTLINE_ARTIFACTS, or
// the system's temporary directory.
func browserArtifact(name string) string {
	GinkgoHelper()
	dir := os.Getenv("FAULTLINE_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "faultline-artifacts")
	}
	Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
	return filepath.Join(dir, name)
}

// browserModuleRoot is the directory of go.mod, above the package's.
func browserModuleRoot() string {
	GinkgoHelper()
	dir, err := os.Getwd()
	Expect(err).NotTo(HaveOccurred())
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		Expect(parent).NotTo(Equal(dir), "no go.mod above the package")
		dir = parent
	}
}

var _ = Describe("The HTML report in a browser", Ordered, ContinueOnFailure, Label("browser"), func() {
	var browser context.Context

	BeforeAll(func() {
		path := chromiumPath()
		if path == "" {
			msg := "no Chromium at $CHROME_PATH or /usr/bin/chromium (install the Debian package chromium)"
			if os.Getenv("FAULTLINE_REQUIRE_BROWSER") == "1" {
				Fail(msg + ", and FAULTLINE_REQUIRE_BROWSER=1")
			}
			Skip(msg)
		}
		browser = startBrowser(path)
	})

	Context("opening a failing run's report from a file", func() {
		var (
			res    *reports.Result
			report *openedReport
		)
		BeforeAll(func() {
			res = htmlBuiltinResult("payment-challenge", htmlBrokenClassifier)
			Expect(res.Verdict).To(Equal(reports.Failed))
			report = openReport(browser, res, "payment-challenge-failing")
		})

		It("logs no console error or warning and throws no exception", func() {
			// A round trip, so that every event sent before it is in.
			Expect(evalInTab[string](report, "document.readyState")).To(Equal("complete"))
			problems, _ := report.seen()
			Expect(problems).To(BeEmpty())
		})

		It("asks for nothing but the file itself", func() {
			Expect(evalInTab[int](report, "performance.getEntriesByType('resource').length")).To(BeZero())
			_, requests := report.seen()
			Expect(requests).To(ConsistOf(report.url))
		})

		It("shows the verdict", func() {
			Expect(inTab(report, chromedp.Text("#verdict .badge"))).To(Equal("✘ FAILED"))
			Expect(inTab(report, chromedp.Text("#verdict .headline"))).To(ContainSubstring("expectations failed; 2 invariants were violated"))
		})

		It("shows each failed expectation by name, above the timeline", func() {
			names := evalInTab[[]string](report, `[...document.querySelectorAll('#failures .failed-expectations .exp-name')].map(e => e.textContent.trim())`)
			var want []string
			for _, e := range res.Expectations {
				if e.Verdict == reports.Failed {
					want = append(want, "✘ failed "+e.Name)
				}
			}
			Expect(names).To(Equal(want))
			Expect(evalInTab[bool](report, `document.querySelector('#failures').compareDocumentPosition(document.querySelector('#timeline')) === Node.DOCUMENT_POSITION_FOLLOWING`)).To(BeTrue())
			Expect(inTab(report, chromedp.Text("#failures .violation"))).To(ContainSubstring("no-retry-of-permanent-or-critical"))
		})

		It("draws the charts", func() {
			Expect(evalInTab[int](report, `document.querySelectorAll('svg#timeline-chart').length`)).To(Equal(1))
			for sel, least := range map[string]int{
				"svg#timeline-chart rect.window":         len(res.Faults),
				"svg#timeline-chart rect.band":           1,
				"svg#timeline-chart path.marker.firing":  1,
				"svg#timeline-chart path.area":           2,
				"svg#timeline-chart g.mark.violation":    1,
				"svg#timeline-chart .axis.x.bottom text": 5,
				"#timeline .legend li":                   10,
				"table.confusion td.miss":                1,
				"table.fates svg.bar":                    8,
			} {
				Expect(evalInTab[int](report, fmt.Sprintf("document.querySelectorAll(%q).length", sel))).To(BeNumerically(">=", least), sel)
			}
			box := evalInTab[map[string]float64](report, `(() => { const r = document.querySelector('svg#timeline-chart').getBoundingClientRect(); return {w: r.width, h: r.height}; })()`)
			Expect(box["w"]).To(BeNumerically(">", 800))
			Expect(box["h"]).To(BeNumerically(">", 300))
		})

		It("reads the timeline's values at the pointer", func() {
			readout := evalInTab[string](report, `(() => {
				const svg = document.querySelector('svg#timeline-chart');
				const r = svg.getBoundingClientRect();
				svg.dispatchEvent(new PointerEvent('pointermove', {clientX: r.left + r.width * 0.25, clientY: r.top + r.height * 0.8, bubbles: true}));
				return document.getElementById('timeline-readout').textContent;
			})()`)
			Expect(readout).To(MatchRegexp(`^\+[\dhms.]+ — queued \d+ · in flight \d+ · waiting to retry \d+ · fallback \(batch queue\) \d+ · DLQ `))
			Expect(evalInTab[string](report, `document.querySelector('svg#timeline-chart .cursor').getAttribute('visibility')`)).To(Equal("visible"))
			problems, _ := report.seen()
			Expect(problems).To(BeEmpty())
		})

		It("saves a full-page screenshot as a test artifact", func() {
			png := inTab(report, pageScreenshot())
			Expect(png).To(HavePrefix("\x89PNG"))
			path := browserArtifact("report-payment-challenge-failing.png")
			Expect(os.WriteFile(path, png, 0o644)).To(Succeed())
			html, err := os.ReadFile(report.file)
			Expect(err).NotTo(HaveOccurred())
			Expect(os.WriteFile(browserArtifact("report-payment-challenge-failing.html"), html, 0o644)).To(Succeed())
			AddReportEntry("screenshot of the failing report", path, ReportEntryVisibilityAlways)
			fmt.Fprintf(GinkgoWriter, "screenshot of the failing report: %s\n", path)
		})
	})

	It("writes the README screenshot of a failing run's report (to FAULTLINE_SCREENSHOT, else an artifact)", func() {
		out := os.Getenv("FAULTLINE_SCREENSHOT")
		if out == "" {
			out = browserArtifact("readme-screenshot.png")
		} else if !filepath.IsAbs(out) {
			out = filepath.Join(browserModuleRoot(), out)
		}
		report := openReport(browser, htmlBuiltinResult("payment-challenge", htmlBrokenClassifier), "payment-challenge-readme")
		inTab(report, chromedp.EmulateViewport(viewportW, readmeShotH))
		shot := inTab(report, chromedp.CaptureScreenshot())
		Expect(shot).To(HavePrefix("\x89PNG"))
		Expect(os.MkdirAll(filepath.Dir(out), 0o755)).To(Succeed())
		Expect(os.WriteFile(out, shot, 0o644)).To(Succeed())
		problems, requests := report.seen()
		Expect(problems).To(BeEmpty())
		Expect(requests).To(ConsistOf(report.url))
		AddReportEntry("README screenshot", out, ReportEntryVisibilityAlways)
	})
})
