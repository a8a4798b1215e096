package ui

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/faultline/faultline/metrics"
	"github.com/faultline/faultline/reference/dlq"
)

//go:embed assets/*.html assets/*.css assets/*.js
var assets embed.FS

// The cookie that binds a browser's CSRF token, and the form field that
// carries the token. Served over HTTPS (TLS, or a proxy's with
// InsecureHTTP) the cookie is Secure and carries the __Host- prefix, so no
// sibling host and no plain-HTTP page can plant it; on plain-HTTP loopback a
// browser refuses a __Host- cookie, so it goes by its plain name.
const (
	csrfCookieHost  = "__Host-faultline_csrf"
	csrfCookiePlain = "faultline_csrf"
	csrfField       = "csrf"
)

// server is the handler New returns.
type server struct {
	cfg     Config
	secret  []byte
	hosts   map[string]bool
	pages   map[string]*template.Template
	mux     *http.ServeMux
	logMu   sync.Mutex
	metrics *metrics.Set
}

// New returns the UI and API handler for cfg: mount it at "/" of a server
// (its paths are absolute). It refuses a Config whose security does not
// hold (a *ConfigError naming the field).
func New(cfg Config) (http.Handler, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &server{cfg: cfg, secret: make([]byte, 32), hosts: map[string]bool{}, mux: http.NewServeMux(), metrics: newMetrics(cfg)}
	if _, err := rand.Read(s.secret); err != nil {
		return nil, fmt.Errorf("ui: make the CSRF secret: %w", err)
	}
	host, _, _ := net.SplitHostPort(cfg.Listen)
	for _, h := range append([]string{host, "localhost", "127.0.0.1", "::1"}, cfg.Hosts...) {
		h = strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"))
		if h != "" && h != "0.0.0.0" && h != "::" {
			s.hosts[h] = true
		}
	}
	var err error
	if s.pages, err = parsePages(); err != nil {
		return nil, err
	}
	s.routes()
	return s, nil
}

func parsePages() (map[string]*template.Template, error) {
	names, err := fs.Glob(assets, "assets/*.html")
	if err != nil {
		return nil, fmt.Errorf("ui: list templates: %w", err)
	}
	out := map[string]*template.Template{}
	for _, n := range names {
		if n == "assets/layout.html" {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(assets, "assets/layout.html", n)
		if err != nil {
			return nil, fmt.Errorf("ui: parse %s: %w", n, err)
		}
		out[strings.TrimSuffix(strings.TrimPrefix(n, "assets/"), ".html")] = t
	}
	return out, nil
}

func (s *server) routes() {
	m := s.mux
	static := http.FileServerFS(mustSub(assets, "assets"))
	m.Handle("GET /static/", http.StripPrefix("/static/", staticOnly(static)))
	// No icon: answered without an error, so a browser logs none.
	m.HandleFunc("GET /metrics", s.serveMetrics)
	m.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	if s.cfg.Seed != nil {
		m.HandleFunc("GET /{$}", s.page(s.pgSeedList))
		m.HandleFunc("GET /seed/entry", s.page(s.pgSeedEntry))
		m.HandleFunc("POST /seed/requeue", s.post(s.pgSeedRequeue))
		m.HandleFunc("GET /seed/bulk", s.page(s.pgSeedBulkConfirm))
		m.HandleFunc("POST /seed/bulk", s.post(s.pgSeedBulk))
	} else {
		m.HandleFunc("GET /{$}", s.page(s.pgDashboard))
		m.HandleFunc("GET /entries", s.page(s.pgList))
		m.HandleFunc("GET /entries/{id}", s.page(s.pgEntry))
		m.HandleFunc("POST /entries/{id}/requeue", s.post(s.pgRequeue))
		m.HandleFunc("POST /entries/{id}/edit", s.post(s.pgEdit))
		m.HandleFunc("POST /entries/{id}/delete", s.post(s.pgMove("delete")))
		m.HandleFunc("POST /entries/{id}/restore", s.post(s.pgMove("restore")))
		m.HandleFunc("POST /entries/{id}/quarantine", s.post(s.pgMove("quarantine")))
		m.HandleFunc("GET /bulk", s.page(s.pgBulkConfirm))
		m.HandleFunc("POST /bulk", s.post(s.pgBulk))
		m.HandleFunc("GET /audit", s.page(s.pgAudit))
	}
	for _, rt := range s.apiRoutes() {
		m.HandleFunc(rt.pattern, rt.h)
	}
	m.HandleFunc("/api/", s.api(func(w http.ResponseWriter, r *http.Request, _ string) {
		apiError(w, http.StatusNotFound, "no such API route: "+r.Method+" "+r.URL.Path, "")
	}))
	m.HandleFunc("/", s.page(func(w http.ResponseWriter, r *http.Request, v *view) {
		s.fail(w, r, v, http.StatusNotFound, "Not found", "There is no page at "+r.URL.Path+".")
	}))
}

// apiRoute is one route of /api/v1/.
type apiRoute struct {
	pattern string
	h       http.HandlerFunc
}

// apiRoutes are the API's routes, every one described by openapi.json (a
// spec checks both ways).
func (s *server) apiRoutes() []apiRoute {
	if s.cfg.Seed != nil {
		return []apiRoute{
			{"GET /api/v1/openapi.json", serveOpenAPI},
			{"GET /api/v1/seed/entries", s.api(s.apiSeedList)},
			{"GET /api/v1/seed/entry", s.api(s.apiSeedGet)},
			{"POST /api/v1/seed/requeue", s.api(s.apiSeedRequeue)},
		}
	}
	return []apiRoute{
		{"GET /api/v1/openapi.json", serveOpenAPI},
		{"GET /api/v1/stats", s.api(s.apiStats)},
		{"GET /api/v1/depth", s.api(s.apiDepth)},
		{"GET /api/v1/entries", s.api(s.apiList)},
		{"GET /api/v1/entries/{id}", s.api(s.apiGet)},
		{"POST /api/v1/entries/{id}/requeue", s.api(s.apiRequeueOne)},
		{"POST /api/v1/entries/{id}/delete", s.api(s.apiMove("delete"))},
		{"POST /api/v1/entries/{id}/restore", s.api(s.apiMove("restore"))},
		{"POST /api/v1/entries/{id}/quarantine", s.api(s.apiMove("quarantine"))},
		{"POST /api/v1/entries/{id}/edit", s.api(s.apiEdit)},
		{"POST /api/v1/requeue", s.api(s.apiBulk("requeue"))},
		{"POST /api/v1/delete", s.api(s.apiBulk("delete"))},
		{"GET /api/v1/audit", s.api(s.apiAudit)},
	}
}

func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	return sub
}

// staticOnly serves the CSS and JS assets, never the templates.
func staticOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, ".css") && !strings.HasSuffix(r.URL.Path, ".js") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		h.ServeHTTP(w, r)
	})
}

// ServeHTTP checks the Host header (DNS rebinding), sets the security
// headers and routes.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	// Every answer carries a policy, redirects and plain errors too; a page
	// replaces it with its nonce's, the API with its own.
	h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
	if s.cfg.TLS {
		h.Set("Strict-Transport-Security", "max-age=31536000")
	}
	if !s.hostAllowed(r.Host) {
		http.Error(w, fmt.Sprintf("refused: the Host header %q is not a name this server answers to (allowed: %s); add it with --host if a proxy uses it", r.Host, strings.Join(s.allowedHosts(), ", ")), http.StatusMisdirectedRequest)
		return
	}
	defer s.observe(r, time.Now())
	s.mux.ServeHTTP(w, r)
}

func (s *server) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	return s.hosts[host]
}

func (s *server) allowedHosts() []string {
	out := make([]string, 0, len(s.hosts))
	for h := range s.hosts {
		out = append(out, h)
	}
	sortStrings(out)
	return out
}

// who authenticates r: with tokens, basic auth (pages) or a bearer token;
// without, the OS user. ok is false when a token is required and none
// matched.
func (s *server) who(r *http.Request, bearerOnly bool) (string, bool) {
	if len(s.cfg.Tokens) == 0 {
		return s.cfg.User, !bearerOnly
	}
	if tok, ok := bearer(r.Header.Get("Authorization")); ok {
		if name := tokenName(s.cfg.Tokens, strings.TrimSpace(tok)); name != "" {
			return name, true
		}
		return "", false
	}
	if bearerOnly {
		return "", false
	}
	user, pass, ok := r.BasicAuth()
	if !ok {
		return "", false
	}
	name := tokenName(s.cfg.Tokens, pass)
	if name == "" || subtle.ConstantTimeCompare([]byte(name), []byte(user)) != 1 {
		return "", false
	}
	return name, true
}

// secureCookie says the browser reaches the UI over HTTPS: TLS here, or a
// proxy's (InsecureHTTP: the proxy terminates TLS).
func (s *server) secureCookie() bool { return s.cfg.TLS || s.cfg.InsecureHTTP }

func (s *server) csrfCookieName() string {
	if s.secureCookie() {
		return csrfCookieHost
	}
	return csrfCookiePlain
}

// bearer returns the token of an Authorization header of the Bearer scheme
// (a scheme's name is case-insensitive, RFC 9110).
func bearer(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return tok, true
}

// csrfToken returns the CSRF token of the browser's cookie and who,
// setting the cookie when the browser has none: the token is an HMAC of
// who and the cookie under the process's secret, so a page from another
// site can neither read nor forge it, and a token obtained under one
// identity is no use to another.
func (s *server) csrfToken(w http.ResponseWriter, r *http.Request, who string) string {
	c, err := r.Cookie(s.csrfCookieName())
	val := ""
	if err == nil && len(c.Value) >= 22 {
		val = c.Value
	} else {
		b := make([]byte, 18)
		_, _ = rand.Read(b)
		val = base64.RawURLEncoding.EncodeToString(b)
		http.SetCookie(w, &http.Cookie{Name: s.csrfCookieName(), Value: val, Path: "/", HttpOnly: true,
			Secure: s.secureCookie(), SameSite: http.SameSiteStrictMode})
	}
	return s.sign(who, val)
}

// sign is the CSRF token of who and cookie value v (who is length-prefixed,
// so no two pairs share a message).
func (s *server) sign(who, v string) string {
	return s.mac("csrf", []byte(strconv.Itoa(len(who))+":"+who+"\x00"+v))
}

// csrfOK checks a POST's token against its cookie and who.
func (s *server) csrfOK(r *http.Request, who string) bool {
	c, err := r.Cookie(s.csrfCookieName())
	if err != nil || c.Value == "" {
		return false
	}
	got := r.PostFormValue(csrfField)
	return got != "" && hmac.Equal([]byte(got), []byte(s.sign(who, c.Value)))
}

// crossSite says why a state-changing POST comes from another site (""
// when it does not): defence in depth behind the token, for a browser
// that sends Sec-Fetch-Site or Origin. Another port of the same host is
// "same-site" to a browser, yet another server: only same-origin passes.
func (s *server) crossSite(r *http.Request) string {
	switch site := strings.ToLower(r.Header.Get("Sec-Fetch-Site")); site {
	case "cross-site", "same-site":
		return "the browser says the form came from another site (Sec-Fetch-Site: " + site + ")"
	case "same-origin":
		// The browser's own word; its Origin is "null" under this UI's
		// Referrer-Policy: no-referrer.
		return ""
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return ""
	}
	u, err := url.Parse(o)
	if err != nil || u.Host == "" {
		return fmt.Sprintf("the form's Origin %q is not this server", cutText(o, 80))
	}
	if strings.EqualFold(u.Host, r.Host) {
		return ""
	}
	// A proxy's name (--host) may differ from the Host the proxy forwards.
	for _, h := range s.cfg.Hosts {
		if strings.EqualFold(u.Hostname(), strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")) {
			return ""
		}
	}
	return fmt.Sprintf("the form's Origin %q is not this server (%s)", cutText(o, 80), r.Host)
}

// nonce returns a fresh CSP nonce.
func nonce() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// setCSP sets the page's Content-Security-Policy: scripts and styles only
// from the binary's assets carrying this response's nonce; nothing inline.
func setCSP(w http.ResponseWriter, n string) {
	w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'nonce-"+n+"'; style-src 'nonce-"+n+
		"'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
}

// view is what every page template gets.
type view struct {
	Title     string
	Nonce     string
	CSRF      string
	Who       string
	Namespace string
	Target    string
	Auditing  bool
	// Seed says the UI serves the seed layout.
	Seed bool
	Data any
}

// page wraps a GET page handler: authentication, CSRF cookie, CSP.
func (s *server) page(h func(http.ResponseWriter, *http.Request, *view)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		who, ok := s.who(r, false)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Basic realm="faultline ui", charset="UTF-8"`)
			http.Error(w, "unauthorized: sign in with a token's name and the token (basic auth), or send Authorization: Bearer TOKEN", http.StatusUnauthorized)
			return
		}
		v := &view{Nonce: nonce(), Who: who, Namespace: s.cfg.Namespace, Target: s.cfg.Target, Seed: s.cfg.Seed != nil}
		_, v.Auditing = s.auditor()
		v.CSRF = s.csrfToken(w, r, who)
		setCSP(w, v.Nonce)
		h(w, r, v)
	}
}

// post wraps a state-changing form handler: a page whose POST must carry
// the CSRF token.
func (s *server) post(h func(http.ResponseWriter, *http.Request, *view)) http.HandlerFunc {
	return s.page(func(w http.ResponseWriter, r *http.Request, v *view) {
		r.Body = http.MaxBytesReader(w, r.Body, maxForm)
		if err := r.ParseForm(); err != nil {
			s.fail(w, r, v, http.StatusBadRequest, "Bad request", "The form could not be read: "+err.Error())
			return
		}
		if why := s.crossSite(r); why != "" {
			s.fail(w, r, v, http.StatusForbidden, "Refused: a form from another site",
				"This UI takes changes only from its own pages: "+why+". Nothing changed.")
			return
		}
		if !s.csrfOK(r, v.Who) {
			s.fail(w, r, v, http.StatusForbidden, "Refused: missing or wrong CSRF token",
				"Every change is a form of this UI carrying its token. Reload the page you came from and try again; nothing changed.")
			return
		}
		h(w, r, v)
	})
}

// maxForm bounds a form or API body: a payload edit is the largest.
const maxForm = 16 << 20

// render writes page name with v.
func (s *server) render(w http.ResponseWriter, status int, name string, v *view) {
	t := s.pages[name]
	var b strings.Builder
	if err := t.Execute(&b, v); err != nil {
		http.Error(w, "render "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

// problem is the error page's data.
type problem struct {
	Status  int
	Heading string
	Text    string
	Field   string
	Back    string
}

// fail renders the error page.
func (s *server) fail(w http.ResponseWriter, r *http.Request, v *view, status int, heading, text string) {
	v.Title = heading
	v.Data = problem{Status: status, Heading: heading, Text: text, Back: r.Referer()}
	s.render(w, status, "error", v)
}

// storeFail renders a store error: Redis down is a 503 saying so; an
// unknown entry a 404; anything else a 500 with the error's (masked) text.
func (s *server) storeFail(w http.ResponseWriter, r *http.Request, v *view, doing string, err error) {
	s.countErr(opRead, err)
	status, heading, text := classifyErr(doing, err)
	s.fail(w, r, v, status, heading, text)
}

func classifyErr(doing string, err error) (int, string, string) {
	switch {
	case errors.Is(err, dlq.ErrNotFound):
		return http.StatusNotFound, "Not found", "No DLQ entry with that ID (" + doing + ")."
	case unreachable(err):
		return http.StatusServiceUnavailable, "The DLQ's Redis could not be reached",
			"faultline ui could not reach the store while trying to " + doing + ": " + maskText(err.Error()) +
				". Nothing was changed by this request; check that Redis is up, then reload."
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, "Timed out", "The store did not answer in time (" + doing + "); reload to try again."
	}
	return http.StatusInternalServerError, "Store error", "Could not " + doing + ": " + maskText(err.Error())
}

// writeJSON writes v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// apiErr is the API's error body.
type apiErr struct {
	Error string `json:"error"`
	Field string `json:"field,omitempty"`
}

func apiError(w http.ResponseWriter, status int, msg, field string) {
	writeJSON(w, status, apiErr{Error: msg, Field: field})
}

// api wraps an API handler. With tokens, a bearer token is required (the
// API takes no CSRF token, and no cookie authenticates it). Without tokens
// (loopback only, Config.Validate) the reads (GET, HEAD) are served as the
// pages are, as the OS user; a move is refused: it has no CSRF token to
// carry, so any page the browser loads could send it.
func (s *server) api(h func(http.ResponseWriter, *http.Request, string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
		if len(s.cfg.Tokens) == 0 && r.Method != http.MethodGet && r.Method != http.MethodHead {
			apiError(w, http.StatusUnauthorized, "the API's moves need bearer tokens: start faultline ui with --tokens FILE (lines name:token); its reads (GET) need none on loopback", "")
			return
		}
		who, ok := s.who(r, len(s.cfg.Tokens) > 0)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="faultline ui"`)
			apiError(w, http.StatusUnauthorized, "missing or wrong bearer token (Authorization: Bearer TOKEN)", "")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxForm)
		h(w, r, who)
	}
}
