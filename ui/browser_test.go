package ui_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/ui"
)

// The UI driven in headless Chromium (the Debian package chromium, or the
// browser at $CHROME_PATH). Without a browser these specs skip, unless
// FAULTLINE_REQUIRE_BROWSER=1 (CI sets it), when they fail. The browser
// start, skip and require logic is reports/browser_test.go's.

const (
	// browserStartTimeout is how long Chromium may take to start: generous,
	// for two busy cores.
	browserStartTimeout = 60 * time.Second
	// pageTimeout bounds each step in the tab; stepTimeout an Eventually
	// waiting for a page the step loads.
	pageTimeout = 30 * time.Second
	stepTimeout = 15 * time.Second
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

// startBrowser starts headless Chromium for the rest of the container.
func startBrowser(path string) context.Context {
	GinkgoHelper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox, // CI runs as root
		chromedp.DisableGPU,
		chromedp.WindowSize(1280, 1200),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	DeferCleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(allocCtx)
	DeferCleanup(cancel)
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(ctx) }()
	var err error
	Eventually(started).WithTimeout(browserStartTimeout).Should(Receive(&err), "Chromium at %s did not start within %s", path, browserStartTimeout)
	Expect(err).NotTo(HaveOccurred(), "start Chromium at %s", path)
	return ctx
}

// tab is one browser tab with the problems it saw: console errors and
// warnings, exceptions, the browser's own log errors (a CSP violation).
type tab struct {
	ctx      context.Context
	mu       sync.Mutex
	problems []string
}

func (t *tab) seen() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.problems...)
}

func openTab(browser context.Context) *tab {
	GinkgoHelper()
	ctx, cancel := chromedp.NewContext(browser)
	DeferCleanup(cancel)
	t := &tab{ctx: ctx}
	Expect(chromedp.Listen(ctx, func(ev any) {
		t.mu.Lock()
		defer t.mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				t.problems = append(t.problems, fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(args, " ")))
			}
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			t.problems = append(t.problems, fmt.Sprintf("exception at %d:%d: %s", d.LineNumber, d.ColumnNumber, msg))
		case *log.EventEntryAdded:
			if e := ev.Entry; e.Level == log.EntryLevelError || e.Level == log.EntryLevelWarning {
				t.problems = append(t.problems, fmt.Sprintf("browser log %s (%s): %s %s", e.Level, e.Source, e.Text, e.URL))
			}
		}
	})).To(Succeed())
	return t
}

// do runs steps in the tab, bounded by pageTimeout.
func (t *tab) do(steps ...chromedp.Action[chromedp.Void]) {
	GinkgoHelper()
	ctx, done := context.WithTimeout(t.ctx, pageTimeout)
	defer done()
	Expect(chromedp.Do(ctx, steps...)).To(Succeed())
}

// clickTry bounds one try of click.
const clickTry = 5 * time.Second

// click clicks the element sel matches, trying again while the page a
// click or a form loaded replaces the document under chromedp's cached
// node tree ("Could not find node with given id", a flake of about one
// run in ten): a failed try clicked nothing (it fails resolving the node,
// before the mouse event).
func (t *tab) click(sel string) {
	GinkgoHelper()
	Eventually(func() error {
		ctx, done := context.WithTimeout(t.ctx, clickTry)
		defer done()
		return chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel)))
	}).WithTimeout(stepTimeout).Should(Succeed(), "click %s", sel)
}

// eval returns a JavaScript expression's value in the tab.
func eval[T any](t *tab, js string) T {
	GinkgoHelper()
	ctx, done := context.WithTimeout(t.ctx, pageTimeout)
	defer done()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	Expect(err).NotTo(HaveOccurred(), js)
	return v
}

// textJS is the text of the first element sel matches, "" when none does.
func textJS(sel string) string {
	return fmt.Sprintf(`(function(){var e=document.querySelector(%q);return e?e.textContent:""})()`, sel)
}

// text is the text of the first element sel matches, "" when none does.
func text(t *tab, sel string) string {
	GinkgoHelper()
	return eval[string](t, textJS(sel))
}

// poll returns a function for Eventually that evaluates js while a click
// loads the next page: an evaluation the navigation interrupts ("target
// navigated") is the zero value, to be tried again.
func poll[T any](t *tab, js string) func() T {
	return func() T {
		ctx, done := context.WithTimeout(t.ctx, pageTimeout)
		defer done()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
		if err != nil {
			var zero T
			return zero
		}
		return v
	}
}

// rowsJS lists the entry IDs of a list page.
const rowsJS = `Array.prototype.map.call(document.querySelectorAll("tr[data-id]"), function(r){return r.dataset.id})`

var _ = Describe("faultline ui in a browser", Ordered, ContinueOnFailure, Label("browser"), func() {
	var (
		browser context.Context
		hs      *harness
		base    string
		t       *tab
	)

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
		hs = newHarness("redis://"+lanesMini()+"/0", ui.Config{})
		srv := httptest.NewServer(hs.h)
		DeferCleanup(srv.Close)
		base = srv.URL
		t = openTab(browser)
	})

	It("opens the list, with its script running under the CSP", func() {
		t.do(chromedp.Navigate(base+"/entries"), chromedp.WaitVisible(chromedp.CSS("#filter")))
		Expect(eval[[]string](t, rowsJS)).To(Equal([]string{"xss-4", "ord-3", "ord-2", "ord-1"}))
		// ui.js disables the selection's buttons until a row is selected.
		Expect(eval[bool](t, `document.getElementById("requeue-selected").disabled`)).To(BeTrue())
		t.do(chromedp.Click(chromedp.CSS("#select-all")))
		Expect(eval[bool](t, `document.getElementById("requeue-selected").disabled`)).To(BeFalse())
	})

	It("filters by severity with the form", func() {
		t.do(chromedp.SendKeys(chromedp.CSS(`#filter input[name="severity"]`), "medium"), chromedp.Click(chromedp.CSS("#apply")))
		Eventually(poll[[]string](t, rowsJS)).WithTimeout(stepTimeout).Should(Equal([]string{"ord-3", "ord-2"}))
		Expect(text(t, "#filter-text")).To(Equal(`--severity="medium"`))
	})

	It("requeues one entry and shows its status change", func() {
		t.click(`a[href="/entries/ord-2"]`)
		Eventually(poll[string](t, textJS("#status"))).WithTimeout(stepTimeout).Should(Equal("failed"))
		t.click("#requeue")
		Eventually(poll[string](t, textJS("#status"))).WithTimeout(stepTimeout).Should(Equal("requeued"))
		Expect(text(t, "#notice")).To(Equal("requeue: requeued"))
		Expect(hs.status("ord-2")).To(Equal("requeued"))
	})

	It("bulk-requeues the filtered set after a confirmation stating the count", func() {
		t.do(chromedp.Navigate(base+"/entries?severity=medium"), chromedp.WaitVisible(chromedp.CSS("#bulk-requeue")))
		t.click("#bulk-requeue")
		Eventually(poll[string](t, textJS("#stated"))).WithTimeout(stepTimeout).Should(Equal("1"), "ord-3 only: ord-2 is requeued already")
		Expect(text(t, "#confirm-filter")).To(Equal(`--severity="medium"`))
		t.click("#confirm")
		Eventually(poll[string](t, textJS("#summary"))).WithTimeout(stepTimeout).Should(HavePrefix("stated 1, moved 1, skipped 0"))
		Expect(hs.status("ord-3")).To(Equal("requeued"))
		Expect(hs.status("ord-1")).To(Equal("failed"))
	})

	It("edits a payload", func() {
		t.do(chromedp.Navigate(base+"/entries/ord-1?reveal=1"), chromedp.WaitVisible(chromedp.CSS("#edit-payload")))
		t.do(chromedp.SetValue(chromedp.CSS("#edit-payload"), `{"amount": 101, "api_key": "sk_live_abcdefghijklmnop"}`), chromedp.Click(chromedp.CSS("#save")))
		Eventually(poll[string](t, textJS("#notice"))).WithTimeout(stepTimeout).Should(Equal("edit: saved"))
		e, err := hs.store.Get(context.Background(), "ord-1")
		Expect(err).NotTo(HaveOccurred())
		Expect(string(e.Job.Payload)).To(Equal(`{"amount":101,"api_key":"sk_live_abcdefghijklmnop"}`))
		Expect(text(t, "#payload")).To(ContainSubstring(`"amount": 101`))
	})

	It("shows the XSS payload and error as text", func() {
		t.do(chromedp.Navigate(base+"/entries/xss-4?reveal=1"), chromedp.WaitVisible(chromedp.CSS("#payload")))
		Expect(text(t, "#payload")).To(ContainSubstring(`"note": "<script>alert('payload')</script>"`))
		Expect(text(t, "table.history")).To(ContainSubstring(`<img src=x onerror="alert('error')"> gateway said no`))
		Expect(eval[int](t, `document.querySelectorAll("main script, main img").length`)).To(BeZero())
		t.do(chromedp.Navigate(base+"/entries"), chromedp.WaitVisible(chromedp.CSS("#filter")))
		Expect(eval[int](t, `document.querySelectorAll("main script, main img").length`)).To(BeZero())
	})

	It("logs no console error or warning, no exception and no CSP violation", func() {
		Expect(eval[string](t, "document.readyState")).To(Equal("complete"))
		Expect(t.seen()).To(BeEmpty())
	})
})
