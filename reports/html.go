package reports

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The HTML report is one self-contained file: the template, its CSS and its
// script are embedded here and inlined into every report, the charts are
// inline SVG drawn from the model, and a Content-Security-Policy that allows
// nothing but the inlined style and script keeps the page off the network.
//
//go:embed html/report.html.tmpl html/report.css html/report.js
var htmlAssets embed.FS

// ErrNilResult is returned, wrapped, by WriteHTML when it is given no
// result to write.
var ErrNilResult = errors.New("no result to write")

// Caps on what one HTML report shows, so that a long run's report stays
// small and quick to open; each capped list says how many it left out.
const (
	// htmlMaxPoints is the most points a time series is drawn with (about
	// 600; a 10-minute run's 601 samples are drawn as they are): longer
	// series are downsampled to the maximum of each bucket, so spikes stay.
	htmlMaxPoints = 610
	// htmlMaxRows caps each table (alerts, DLQ, transitions, fates, steps).
	htmlMaxRows = 500
	// htmlMaxViolations caps the violations shown with their trails.
	htmlMaxViolations = 20
	// htmlMaxMarks caps the markers of one timeline row.
	htmlMaxMarks = 2000
	// htmlMaxLaneRows caps the breaker and receiver rows of the timeline.
	htmlMaxLaneRows = 12
)

// WriteHTML writes r as one self-contained HTML file: the verdict and what
// failed first (with what a black-box drill could not observe, and its
// system under test), then a timeline chart of faults, breakers, alerts and queue
// depths, then the confusion matrix, where the jobs ended, the DLQ, alerts,
// breaker transitions, faults, operator steps and the configuration that
// ran. Every string of the model is escaped; the page loads nothing.
func WriteHTML(w io.Writer, r *Result) error {
	if r == nil {
		return fmt.Errorf("write html report: %w", ErrNilResult)
	}
	r = Redact(r)
	t, err := htmlTemplate()
	if err != nil {
		return fmt.Errorf("write html report: %w", err)
	}
	var buf bytes.Buffer
	buf.Grow(128 << 10)
	if err := t.Execute(&buf, newHTMLView(r)); err != nil {
		return fmt.Errorf("write html report %s: %w", r.Scenario, err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("write html report %s: %w", r.Scenario, err)
	}
	return nil
}

// htmlPage is what the template needs besides the view: the inlined assets
// and the policy that admits exactly them.
type htmlPage struct {
	tmpl *template.Template
	css  template.CSS
	js   template.JS
	csp  string
}

var htmlTemplate = sync.OnceValues(func() (*htmlPage, error) {
	read := func(name string) (string, error) {
		b, err := htmlAssets.ReadFile("html/" + name)
		return string(b), err
	}
	src, err := read("report.html.tmpl")
	if err != nil {
		return nil, err
	}
	css, err := read("report.css")
	if err != nil {
		return nil, err
	}
	js, err := read("report.js")
	if err != nil {
		return nil, err
	}
	t, err := template.New("report").Funcs(htmlFuncs).Parse(src)
	if err != nil {
		return nil, fmt.Errorf("parse report template: %w", err)
	}
	hash := func(s string) string {
		sum := sha256.Sum256([]byte(s))
		return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	}
	return &htmlPage{
		tmpl: t,
		css:  template.CSS(css),
		js:   template.JS(js),
		// Nothing may load: no fetch, no image, no font, no frame; the one
		// style sheet and the one script run because their hashes match.
		csp: "default-src 'none'; style-src " + hash(css) + "; script-src " + hash(js) +
			"; img-src 'none'; base-uri 'none'; form-action 'none'",
	}, nil
})

// Execute renders v with the page's assets.
func (p *htmlPage) Execute(w io.Writer, v *htmlView) error {
	v.CSS, v.JS, v.CSP = p.css, p.js, p.csp
	return p.tmpl.Execute(w, v)
}

var htmlFuncs = template.FuncMap{
	"at":  htmlOffset,
	"num": htmlNum,
}

// htmlOffset formats a virtual offset in milliseconds as "+3m0.031s".
func htmlOffset(ms int64) string {
	if ms == 0 {
		return "+0s"
	}
	if ms < 0 {
		return "-" + (time.Duration(-ms) * time.Millisecond).String()
	}
	return "+" + (time.Duration(ms) * time.Millisecond).String()
}

// htmlTickLabel formats an axis tick compactly: "+0", "+45s", "+1m30s",
// "+24h".
func htmlTickLabel(ms int64) string {
	if ms == 0 {
		return "+0"
	}
	var b strings.Builder
	b.WriteByte('+')
	if h := ms / 3_600_000; h > 0 {
		b.WriteString(strconv.FormatInt(h, 10) + "h")
		ms %= 3_600_000
	}
	if m := ms / 60_000; m > 0 {
		b.WriteString(strconv.FormatInt(m, 10) + "m")
		ms %= 60_000
	}
	if ms > 0 {
		b.WriteString(strconv.FormatFloat(float64(ms)/1000, 'f', -1, 64) + "s")
	}
	return b.String()
}

// htmlNum formats a count with thousands separators: 12,345.
func htmlNum(v any) string {
	var n int64
	switch v := v.(type) {
	case int:
		n = int64(v)
	case int64:
		n = v
	default:
		return fmt.Sprint(v)
	}
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
