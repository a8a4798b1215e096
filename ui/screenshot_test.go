package ui_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/ui"
)

// The README's screenshot of the dashboard (docs/ui-screenshot.png) is
// made with:
//
//	FAULTLINE_UI_SCREENSHOT=docs/ui-screenshot.png go test ./ui -run TestUI -ginkgo.focus 'README screenshot'
//
// (a relative path is taken from the module's root). Without the variable
// the spec writes it to $FAULTLINE_ARTIFACTS (default
// $TMPDIR/faultline-artifacts), so CI keeps the picture of every run.

// uiShotW and uiShotH are the screenshot's size.
const uiShotW, uiShotH = 1280, 900

var _ = Describe("faultline ui's README screenshot", Label("browser"), func() {
	It("writes the README screenshot of the dashboard mid-incident (to FAULTLINE_UI_SCREENSHOT, else an artifact)", func() {
		path := chromiumPath()
		if path == "" {
			msg := "no Chromium at $CHROME_PATH or /usr/bin/chromium (install the Debian package chromium)"
			if os.Getenv("FAULTLINE_REQUIRE_BROWSER") == "1" {
				Fail(msg + ", and FAULTLINE_REQUIRE_BROWSER=1")
			}
			Skip(msg)
		}
		out := os.Getenv("FAULTLINE_UI_SCREENSHOT")
		if out == "" {
			out = uiArtifact("ui-screenshot.png")
		} else if !filepath.IsAbs(out) {
			out = filepath.Join(moduleRoot(), out)
		}

		hs := newHarness("redis://"+lanesMini()+"/0", ui.Config{})
		incident(hs)
		srv := httptest.NewServer(hs.h)
		DeferCleanup(srv.Close)
		t := openTab(startBrowser(path))
		t.do(chromedp.EmulateViewport(uiShotW, uiShotH), chromedp.Navigate(srv.URL+"/?hours=6"), chromedp.WaitVisible(chromedp.CSS("#trend-chart")))
		ctx, done := context.WithTimeout(t.ctx, pageTimeout)
		defer done()
		shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		Expect(err).NotTo(HaveOccurred())
		Expect(shot).To(HavePrefix("\x89PNG"))
		Expect(os.MkdirAll(filepath.Dir(out), 0o755)).To(Succeed())
		Expect(os.WriteFile(out, shot, 0o644)).To(Succeed())
		Expect(t.seen()).To(BeEmpty(), "no console error, exception or CSP violation")
		AddReportEntry("README screenshot", out, ReportEntryVisibilityAlways)
	})
})

// incident adds to the seeded entries a gateway outage's: 40 payments
// dead-lettered over the last two hours, and the depth samples a DLQ
// monitor recorded once a minute over six hours, the depth climbing
// through the outage.
func incident(hs *harness) {
	GinkgoHelper()
	ctx := context.Background()
	for i := range 40 {
		sev, class := classify.Medium, classify.Transient
		if i%4 == 0 {
			sev, class = classify.High, classify.Indeterminate
		}
		task := []string{"charge", "refund", "payout"}[i%3]
		e := entryAt(fmt.Sprintf("pay-%03d", i), task, sev, class, time.Duration(120-3*i)*time.Minute, `{"amount":100}`, "http 503 from payment gateway")
		_, err := hs.store.Add(ctx, e, time.Now())
		Expect(err).NotTo(HaveOccurred())
	}
	now := time.Now()
	for m := 360; m >= 0; m-- {
		depth, high := 4, 1 // the four entries failed before the outage
		if m < 120 {        // the outage: 40 more over two hours
			depth += 40 * (120 - m) / 120
			high += 10 * (120 - m) / 120
		}
		Expect(hs.store.RecordDepth(ctx, dlq.DepthSample{At: now.Add(-time.Duration(m) * time.Minute), Waiting: depth,
			BySeverity: map[string]int{"high": high, "medium": depth - high}})).To(Succeed())
	}
}

// uiArtifact is where a spec writes a file CI keeps: $FAULTLINE_ARTIFACTS,
// else $TMPDIR/faultline-artifacts.
func uiArtifact(name string) string {
	GinkgoHelper()
	dir := os.Getenv("FAULTLINE_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "faultline-artifacts")
	}
	Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
	return filepath.Join(dir, name)
}

// moduleRoot is the directory of go.mod, above the package's.
func moduleRoot() string {
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
