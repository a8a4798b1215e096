package ui_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/reference/store/redisstore/redistest"
	"github.com/faultline/faultline/ui"
)

// specHost is the Host header of the specs' requests: the listen address.
const specHost = "127.0.0.1:8080"

// xssPayload and xssError are an entry's payload and error text that
// would run script if a page did not escape them.
const (
	xssPayload = `{"note":"<script>alert('payload')</script>","amount":5}`
	xssError   = `<img src=x onerror="alert('error')"> gateway said no`
)

// lane is a Redis the specs run on: it returns its URL.
type lane struct {
	name string
	url  func() string
}

var lanes = []lane{
	{"miniredis", func() string { return "redis://" + redistest.Mini(GinkgoRandomSeed()).Addr() + "/0" }},
	{"redis-server", redistest.Real},
}

// entryAt is a dead job of task failing with class and severity ago
// before now.
func entryAt(id, task string, sev classify.Severity, class classify.Class, ago time.Duration, payload, errText string) dlq.Entry {
	at := time.Now().Add(-ago).Truncate(time.Millisecond)
	v := classify.Classification{Class: class, Severity: sev, Rule: "spec-rule"}
	return dlq.Entry{
		Job: job.Job{ID: id, Task: task, Queue: task + "s", Payload: []byte(payload), Attempts: 2, EnqueuedAt: at.Add(-time.Minute)},
		History: []dlq.Failure{
			{At: at.Add(-30 * time.Second), Attempt: 1, Error: "first try failed", ErrorType: "*net.OpError", Verdict: v},
			{At: at, Attempt: 2, Error: errText, ErrorType: "*failure.HTTPError", Verdict: v},
		},
		FirstFailedAt: at.Add(-30 * time.Second), LastFailedAt: at, Verdict: v, Reason: class.String(),
	}
}

// seed writes the specs' entries: two medium, one high (with an API key in
// its payload), one low whose payload and error are XSS attempts.
func seed(s dlq.Store) {
	GinkgoHelper()
	ctx := context.Background()
	for _, e := range []dlq.Entry{
		entryAt("ord-1", "charge", classify.High, classify.Critical, 50*time.Minute, `{"amount":100,"api_key":"sk_live_abcdefghijklmnop"}`, "card declined"),
		entryAt("ord-2", "charge", classify.Medium, classify.Transient, 40*time.Minute, `{"amount":200}`, "http 502 from gateway"),
		entryAt("ord-3", "charge", classify.Medium, classify.Indeterminate, 30*time.Minute, `{"amount":300}`, "timeout"),
		entryAt("xss-4", "email", classify.Low, classify.Permanent, 20*time.Minute, xssPayload, xssError),
	} {
		_, err := s.Add(ctx, e, time.Now())
		Expect(err).NotTo(HaveOccurred())
	}
}

// syncBuffer is a Config.Log the specs read while the handler writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// lines returns the JSON lines written so far.
func (s *syncBuffer) lines() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		Expect(json.Unmarshal([]byte(l), &m)).To(Succeed(), "log line %q", l)
		out = append(out, m)
	}
	return out
}

// harness is the handler on a seeded store, driven by httptest.
type harness struct {
	store   *redisstore.Store
	h       http.Handler
	log     *syncBuffer
	cookies []*http.Cookie
	auth    func(*http.Request)
	cfg     ui.Config
}

// newHarness seeds a store on the Redis at url and serves it with cfg's
// security settings (Store, Log and Listen filled in).
func newHarness(url string, cfg ui.Config) *harness {
	GinkgoHelper()
	client := redisstore.NewClient(url)
	DeferCleanup(client.Close)
	s, err := redisstore.New(client, store.Config{Namespace: "ops"})
	Expect(err).NotTo(HaveOccurred())
	seed(s)
	hs := &harness{store: s, log: &syncBuffer{}}
	if cfg.Store == nil {
		cfg.Store = s
	}
	cfg.Log, cfg.Namespace, cfg.User = hs.log, "ops", "spec-user"
	if cfg.Listen == "" {
		cfg.Listen = specHost
	}
	hs.cfg = cfg
	hs.h, err = ui.New(cfg)
	Expect(err).NotTo(HaveOccurred())
	return hs
}

// newHarnessOn is another browser on hs's store: a handler of its own
// (changed by mut), no cookies.
func newHarnessOn(hs *harness, mut ...func(*ui.Config)) *harness {
	GinkgoHelper()
	cfg := hs.cfg
	out := &harness{store: hs.store, log: &syncBuffer{}}
	cfg.Log = out.log
	for _, m := range mut {
		m(&cfg)
	}
	out.cfg = cfg
	var err error
	out.h, err = ui.New(cfg)
	Expect(err).NotTo(HaveOccurred())
	return out
}

// miniFor starts a miniredis for the spec.
func miniFor() *miniredis.Miniredis {
	GinkgoHelper()
	return redistest.Mini(GinkgoRandomSeed())
}

// lanesMini returns the address of a miniredis for the spec.
func lanesMini() string {
	GinkgoHelper()
	return miniFor().Addr()
}

// do sends a request with the harness's Host, cookies and auth, and keeps
// the cookies the answer sets.
func (hs *harness) do(req *http.Request) *httptest.ResponseRecorder {
	GinkgoHelper()
	if req.Host == "" || req.Host == "example.com" {
		req.Host = specHost
	}
	for _, c := range hs.cookies {
		req.AddCookie(c)
	}
	if hs.auth != nil {
		hs.auth(req)
	}
	rec := httptest.NewRecorder()
	hs.h.ServeHTTP(rec, req)
	hs.cookies = append(hs.cookies, rec.Result().Cookies()...)
	return rec
}

func (hs *harness) get(path string) *httptest.ResponseRecorder {
	GinkgoHelper()
	return hs.do(httptest.NewRequest(http.MethodGet, path, nil))
}

func (hs *harness) postForm(path string, vals url.Values) *httptest.ResponseRecorder {
	GinkgoHelper()
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(vals.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return hs.do(req)
}

// api sends a JSON request with a bearer token ("" for none).
func (hs *harness) api(method, path, token string, body any) *httptest.ResponseRecorder {
	GinkgoHelper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		Expect(err).NotTo(HaveOccurred())
		r = bytes.NewReader(b)
	}
	req := httptest.NewRequest(method, path, r)
	req.Host = specHost
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	hs.h.ServeHTTP(rec, req)
	return rec
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

var planRE = regexp.MustCompile(`name="plan" value="([^"]+)"`)

// planIn returns the signed plan a bulk confirmation page's form carries.
func planIn(body string) string {
	GinkgoHelper()
	m := planRE.FindStringSubmatch(body)
	Expect(m).NotTo(BeNil(), "a signed plan on the confirmation")
	return m[1]
}

// csrf loads an entry page and returns its CSRF token (the cookie it is
// bound to is kept).
func (hs *harness) csrf() string {
	GinkgoHelper()
	rec := hs.get("/entries/ord-2")
	Expect(rec.Code).To(Equal(http.StatusOK))
	m := csrfRE.FindStringSubmatch(rec.Body.String())
	Expect(m).NotTo(BeNil(), "a CSRF token on the entry page")
	return m[1]
}

// status returns entry id's status.
func (hs *harness) status(id string) string {
	GinkgoHelper()
	e, err := hs.store.Get(context.Background(), id)
	Expect(err).NotTo(HaveOccurred())
	return e.Status.String()
}

// decodeJSON reads a recorder's JSON body.
func decodeJSON(rec *httptest.ResponseRecorder) map[string]any {
	GinkgoHelper()
	var m map[string]any
	Expect(json.Unmarshal(rec.Body.Bytes(), &m)).To(Succeed(), "body %s", rec.Body.String())
	return m
}

// bare hides a store's optional interfaces: a store with Store's methods
// only.
type bare struct{ dlq.Store }
