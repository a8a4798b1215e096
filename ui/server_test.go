package ui_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/ui"
)

const (
	aliceToken = "alice-token-0123456789abcdef"
	bobToken   = "bob-token-0123456789abcdefgh"
)

var _ = Describe("ui.New's security configuration", func() {
	store := bare{}
	It("refuses a listen address off loopback without tokens, naming the field", func() {
		_, err := ui.New(ui.Config{Store: store, Listen: "0.0.0.0:8080"})
		Expect(err).To(MatchError(ui.ErrNotLoopback))
		var ce *ui.ConfigError
		Expect(errors.As(err, &ce)).To(BeTrue())
		Expect(ce.Field).To(Equal("Tokens"))
		Expect(err.Error()).To(ContainSubstring("--tokens"))
	})
	It("refuses tokens off loopback without TLS unless a proxy terminates it", func() {
		toks := map[string]string{"alice": aliceToken}
		_, err := ui.New(ui.Config{Store: store, Listen: "10.1.2.3:8443", Tokens: toks})
		var ce *ui.ConfigError
		Expect(errors.As(err, &ce)).To(BeTrue())
		Expect(ce.Field).To(Equal("TLS"))
		Expect(err).To(MatchError(ui.ErrNotLoopback))
		_, err = ui.New(ui.Config{Store: store, Listen: "10.1.2.3:8443", Tokens: toks, InsecureHTTP: true})
		Expect(err).NotTo(HaveOccurred())
		_, err = ui.New(ui.Config{Store: store, Listen: "10.1.2.3:8443", Tokens: toks, TLS: true})
		Expect(err).NotTo(HaveOccurred())
	})
	It("serves loopback without tokens, and refuses short tokens and a missing store", func() {
		for _, l := range []string{"127.0.0.1:8080", "localhost:1", "[::1]:8080", ""} {
			_, err := ui.New(ui.Config{Store: store, Listen: l})
			Expect(err).NotTo(HaveOccurred(), l)
		}
		_, err := ui.New(ui.Config{Store: store, Tokens: map[string]string{"alice": "short"}})
		Expect(err).To(MatchError(ContainSubstring("shorter than")))
		_, err = ui.New(ui.Config{})
		Expect(err).To(MatchError(ContainSubstring("Store")))
	})
})

var _ = Describe("faultline's web UI", func() {
	for _, ln := range lanes {
		Context("on "+ln.name, func() {
			var hs *harness
			BeforeEach(func() { hs = newHarness(ln.url(), ui.Config{}) })

			Describe("security", func() {
				It("refuses a POST without a CSRF token (403) and changes nothing", func() {
					rec := hs.postForm("/entries/ord-2/requeue", url.Values{"budget": {"one"}})
					Expect(rec.Code).To(Equal(http.StatusForbidden))
					Expect(rec.Body.String()).To(ContainSubstring("CSRF"))
					Expect(hs.status("ord-2")).To(Equal("failed"))
				})
				It("refuses a CSRF token bound to another browser's cookie", func() {
					other := newHarnessOn(hs)
					tok := other.csrf()
					hs.csrf() // this browser's own cookie
					rec := hs.postForm("/entries/ord-2/delete", url.Values{"csrf": {tok}})
					Expect(rec.Code).To(Equal(http.StatusForbidden))
					Expect(hs.status("ord-2")).To(Equal("failed"))
				})
				It("refuses a foreign Host header (DNS rebinding), on pages, posts and the API", func() {
					tok := hs.csrf()
					for _, req := range []*http.Request{
						newReq(http.MethodGet, "/entries", "evil.example:8080", ""),
						newReq(http.MethodPost, "/entries/ord-2/requeue", "evil.example", url.Values{"csrf": {tok}}.Encode()),
						newReq(http.MethodGet, "/api/v1/stats", "attacker.test", ""),
					} {
						rec := hs.do(req)
						Expect(rec.Code).To(Equal(http.StatusMisdirectedRequest), req.URL.Path)
						Expect(rec.Body.String()).To(ContainSubstring("is not a name this server answers to"))
					}
					Expect(hs.status("ord-2")).To(Equal("failed"))
					for _, h := range []string{"localhost:8080", "127.0.0.1", "[::1]:8080"} {
						Expect(hs.do(newReq(http.MethodGet, "/", h, "")).Code).To(Equal(http.StatusOK), h)
					}
				})
				It("sets a Content-Security-Policy without inline script; the page's script carries its nonce", func() {
					rec := hs.get("/entries")
					csp := rec.Header().Get("Content-Security-Policy")
					Expect(csp).To(ContainSubstring("default-src 'none'"))
					Expect(csp).NotTo(ContainSubstring("unsafe-inline"))
					m := regexp.MustCompile(`script-src 'nonce-([^']+)'`).FindStringSubmatch(csp)
					Expect(m).NotTo(BeNil())
					Expect(rec.Body.String()).To(ContainSubstring(`<script src="/static/ui.js" nonce="` + m[1] + `"`))
					Expect(rec.Body.String()).NotTo(MatchRegexp(`<script>|<script [^>]*>[^<]`), "no inline script")
					Expect(hs.get("/static/ui.js").Code).To(Equal(http.StatusOK))
					Expect(hs.get("/static/layout.html").Code).To(Equal(http.StatusNotFound))
				})
				It("serves the API's reads without tokens configured, as pages are, and refuses its moves (401)", func() {
					Expect(hs.api(http.MethodGet, "/api/v1/stats", "", nil).Code).To(Equal(http.StatusOK))
					rec := hs.api(http.MethodPost, "/api/v1/entries/ord-2/requeue", "", map[string]any{})
					Expect(rec.Code).To(Equal(http.StatusUnauthorized))
					Expect(decodeJSON(rec)["error"]).To(ContainSubstring("--tokens"))
					Expect(hs.status("ord-2")).To(Equal("failed"))
				})
			})

			Describe("pages", func() {
				It("shows the dashboard's counts and the oldest and newest entries", func() {
					body := hs.get("/").Body.String()
					Expect(body).To(ContainSubstring(`<strong id="total">4</strong>`))
					Expect(body).To(ContainSubstring(`href="/entries?severity=medium">medium</a></td><td class="n">2<`))
					Expect(body).To(ContainSubstring(`href="/entries/ord-1">ord-1</a>`))
					Expect(body).To(ContainSubstring(`href="/entries/xss-4">xss-4</a>`))
				})
				It("lists newest first with the CLI's filters and cursor pages", func() {
					h2 := newHarnessOn(hs, func(c *ui.Config) { c.PageSize = 2 })
					body := h2.get("/entries").Body.String()
					Expect(order(body)).To(Equal([]string{"xss-4", "ord-3"}))
					next := regexp.MustCompile(`id="next" href="([^"]+)"`).FindStringSubmatch(body)
					Expect(next).NotTo(BeNil())
					body = h2.get(strings.ReplaceAll(next[1], "&amp;", "&")).Body.String()
					Expect(order(body)).To(Equal([]string{"ord-2", "ord-1"}))
					medium := hs.get("/entries?severity=medium").Body.String()
					Expect(order(medium)).To(Equal([]string{"ord-3", "ord-2"}))
					Expect(medium).To(ContainSubstring(`id="bulk-requeue" href="/bulk?action=requeue&amp;severity=medium"`), "the bulk link carries the filter")
					Expect(order(hs.get("/entries?task=charge&class=critical,transient").Body.String())).To(Equal([]string{"ord-2", "ord-1"}))
					Expect(hs.get("/entries?cursor=not-a-cursor").Code).To(Equal(http.StatusBadRequest))
					Expect(order(hs.get("/entries?error-text=HTTP+502").Body.String())).To(Equal([]string{"ord-2"}))
				})
				It("answers a malformed filter with 400 naming the field", func() {
					for q, field := range map[string]string{"severity=urgent": "severity", "since=yesterday": "since", "status=gone": "status", "class=x": "class"} {
						rec := hs.get("/entries?" + q)
						Expect(rec.Code).To(Equal(http.StatusBadRequest), q)
						Expect(rec.Body.String()).To(ContainSubstring(`Bad filter: <code>`+field+`</code>`), q)
					}
				})
				It("answers an unknown ID with a 404 page", func() {
					rec := hs.get("/entries/no-such-job")
					Expect(rec.Code).To(Equal(http.StatusNotFound))
					Expect(rec.Body.String()).To(ContainSubstring("No such entry"))
					Expect(rec.Body.String()).To(ContainSubstring("no-such-job"))
					Expect(hs.get("/nowhere").Code).To(Equal(http.StatusNotFound))
				})
				It("renders payloads and error texts as text (XSS)", func() {
					for _, path := range []string{"/entries/xss-4", "/entries/xss-4?reveal=1", "/entries"} {
						body := hs.get(path).Body.String()
						Expect(body).NotTo(ContainSubstring("<script>alert"), path)
						Expect(body).NotTo(ContainSubstring("<img src=x"), path)
						Expect(body).To(ContainSubstring("&lt;img src=x onerror=&#34;alert(&#39;error&#39;)&#34;&gt;"), path)
					}
					Expect(hs.get("/entries/xss-4").Body.String()).To(ContainSubstring("&lt;script&gt;alert(&#39;payload&#39;)&lt;/script&gt;"))
				})
				It("masks secrets in a payload unless revealed", func() {
					Expect(hs.get("/entries/ord-1").Body.String()).NotTo(ContainSubstring("sk_live_abcdefghijklmnop"))
					Expect(hs.get("/entries/ord-1?reveal=1").Body.String()).To(ContainSubstring("sk_live_abcdefghijklmnop"))
				})
			})

			Describe("moves", func() {
				It("requeues one entry with the budget chosen, audits it and logs one JSON line", func() {
					tok := hs.csrf()
					rec := hs.postForm("/entries/ord-2/requeue", url.Values{"csrf": {tok}, "budget": {"reset"}})
					Expect(rec.Code).To(Equal(http.StatusSeeOther))
					Expect(rec.Header().Get("Location")).To(Equal("/entries/ord-2?done=requeue&outcome=requeued"))
					Expect(hs.status("ord-2")).To(Equal("requeued"))
					Expect(hs.get(rec.Header().Get("Location")).Body.String()).To(ContainSubstring(`<td id="status">requeued</td>`))
					log := hs.log.lines()
					Expect(log).To(HaveLen(1))
					Expect(log[0]).To(HaveKeyWithValue("action", "requeue"))
					Expect(log[0]).To(HaveKeyWithValue("via", "ui"))
					Expect(log[0]).To(HaveKeyWithValue("by", "spec-user"))
					Expect(log[0]).To(HaveKeyWithValue("moved", 1.0))
					page, err := hs.store.AuditLog(context.Background(), "", 10)
					Expect(err).NotTo(HaveOccurred())
					Expect(page.Records).To(ContainElement(And(HaveField("Action", "requeue"), HaveField("Via", "ui"), HaveField("IDs", []string{"ord-2"}))))
					Expect(hs.get("/audit").Body.String()).To(MatchRegexp(`<td>spec-user</td><td>ui</td><td>requeue</td><td></td><td>ord-2</td><td>1</td><td>1</td><td>0</td>`))
				})
				It("deletes, restores and quarantines (a reason required)", func() {
					tok := hs.csrf()
					Expect(hs.postForm("/entries/ord-3/delete", url.Values{"csrf": {tok}}).Code).To(Equal(http.StatusSeeOther))
					Expect(hs.status("ord-3")).To(Equal("deleted"))
					Expect(hs.postForm("/entries/ord-3/restore", url.Values{"csrf": {tok}}).Code).To(Equal(http.StatusSeeOther))
					Expect(hs.status("ord-3")).To(Equal("failed"))
					rec := hs.postForm("/entries/ord-3/quarantine", url.Values{"csrf": {tok}})
					Expect(rec.Code).To(Equal(http.StatusBadRequest))
					Expect(rec.Body.String()).To(ContainSubstring(`<code id="field">reason</code>`))
					Expect(hs.postForm("/entries/ord-3/quarantine", url.Values{"csrf": {tok}, "reason": {"crashes the parser"}}).Code).To(Equal(http.StatusSeeOther))
					Expect(hs.status("ord-3")).To(Equal("quarantined"))
					Expect(hs.postForm("/entries/no-such/delete", url.Values{"csrf": {tok}}).Code).To(Equal(http.StatusNotFound))
				})
				It("bulk-requeues the filtered set: the confirmation states the count and takes the cut-off; a later failure is left", func() {
					body := hs.get("/bulk?action=requeue&severity=medium").Body.String()
					Expect(body).To(ContainSubstring(`<strong id="stated">2</strong>`))
					Expect(body).To(ContainSubstring(`--severity=&#34;medium&#34;`))
					cut := regexp.MustCompile(`name="cut_off" value="([^"]+)"`).FindStringSubmatch(body)
					Expect(cut).NotTo(BeNil())
					tok := csrfRE.FindStringSubmatch(body)[1]
					// A medium entry failing after the count was shown.
					late := entryAt("ord-late", "charge", classify.Medium, classify.Transient, -time.Second, `{}`, "late")
					_, err := hs.store.Add(context.Background(), late, time.Now())
					Expect(err).NotTo(HaveOccurred())
					rec := hs.postForm("/bulk", url.Values{"csrf": {tok}, "action": {"requeue"}, "severity": {"medium"}, "cut_off": {cut[1]}, "stated": {"2"}, "budget": {"one"}, "plan": {planIn(body)}})
					Expect(rec.Code).To(Equal(http.StatusOK))
					Expect(rec.Body.String()).To(ContainSubstring(`stated <strong id="r-stated">2</strong>, moved <strong id="r-moved">2</strong>, skipped <strong id="r-skipped">0</strong>`))
					Expect(hs.status("ord-2")).To(Equal("requeued"))
					Expect(hs.status("ord-3")).To(Equal("requeued"))
					Expect(hs.status("ord-late")).To(Equal("failed"))
					Expect(hs.status("ord-1")).To(Equal("failed"))
					phases := []any{}
					for _, l := range hs.log.lines() {
						phases = append(phases, l["phase"])
						Expect(l).To(HaveKeyWithValue("filter", `--severity="medium"`))
					}
					Expect(phases).To(Equal([]any{"started", "done"}))
				})
				It("bulk-deletes selected rows after a confirmation", func() {
					body := hs.get("/bulk?action=delete&id=ord-1&id=ord-2&id=nope").Body.String()
					Expect(body).To(ContainSubstring(`<strong id="stated">2</strong>`))
					tok := csrfRE.FindStringSubmatch(body)[1]
					rec := hs.postForm("/bulk", url.Values{"csrf": {tok}, "action": {"delete"}, "id": {"ord-1", "ord-2", "nope"}, "stated": {"2"}, "plan": {planIn(body)}})
					Expect(rec.Code).To(Equal(http.StatusOK))
					Expect(rec.Body.String()).To(ContainSubstring(`moved <strong id="r-moved">2</strong>`))
					Expect(hs.status("ord-1")).To(Equal("deleted"))
				})
				It("edits a payload guarded by its revision: a stale form is refused, not overwritten", func() {
					tok := hs.csrf()
					e, err := hs.store.Get(context.Background(), "ord-2")
					Expect(err).NotTo(HaveOccurred())
					rev := dlq.Revision(&e)
					rec := hs.postForm("/entries/ord-2/edit", url.Values{"csrf": {tok}, "revision": {rev}, "payload": {`{"amount": `}})
					Expect(rec.Code).To(Equal(http.StatusBadRequest))
					Expect(rec.Body.String()).To(ContainSubstring("<code>payload</code>"))
					rec = hs.postForm("/entries/ord-2/edit", url.Values{"csrf": {tok}, "revision": {rev}, "payload": {`{"amount": 250}`}})
					Expect(rec.Code).To(Equal(http.StatusSeeOther))
					e, _ = hs.store.Get(context.Background(), "ord-2")
					Expect(string(e.Job.Payload)).To(Equal(`{"amount":250}`))
					// The same (now stale) revision again: another operator's form.
					rec = hs.postForm("/entries/ord-2/edit", url.Values{"csrf": {tok}, "revision": {rev}, "payload": {`{"amount": 999}`}})
					Expect(rec.Code).To(Equal(http.StatusConflict))
					Expect(rec.Body.String()).To(ContainSubstring("changed since you opened it"))
					Expect(rec.Body.String()).To(ContainSubstring(`{&#34;amount&#34;: 999}`), "the operator's text is kept")
					e, _ = hs.store.Get(context.Background(), "ord-2")
					Expect(string(e.Job.Payload)).To(Equal(`{"amount":250}`))
					// Edit then requeue.
					rec = hs.postForm("/entries/ord-2/edit", url.Values{"csrf": {tok}, "revision": {dlq.Revision(&e)}, "payload": {`{"amount":251}`}, "requeue": {"1"}})
					Expect(rec.Code).To(Equal(http.StatusSeeOther))
					Expect(hs.status("ord-2")).To(Equal("requeued"))
				})
			})
		})
	}

	It("says an action is unavailable when the store lacks its interface", func() {
		hs0 := newHarness("redis://"+lanesMini()+"/0", ui.Config{})
		hs := newHarnessOn(hs0, func(c *ui.Config) { c.Store = bare{hs0.store} })
		Expect(hs.get("/").Body.String()).To(ContainSubstring("payload edit (the store lacks dlq.RevisionEditor)"))
		Expect(hs.get("/entries/ord-2?reveal=1").Body.String()).To(ContainSubstring("unavailable: the store lacks dlq.RevisionEditor"))
		tok := hs.csrf()
		rec := hs.postForm("/entries/ord-2/edit", url.Values{"csrf": {tok}, "revision": {"x"}, "payload": {`{}`}})
		Expect(rec.Code).To(Equal(http.StatusNotImplemented))
		rec = hs.get("/bulk?action=delete&severity=low")
		Expect(rec.Code).To(Equal(http.StatusNotImplemented))
		Expect(rec.Body.String()).To(ContainSubstring("dlq.BulkDeleter"))
	})

	It("shows a clear page, not a stack trace, when Redis is down", func() {
		m := miniFor()
		hs := newHarness("redis://"+m.Addr()+"/0", ui.Config{})
		m.Close()
		for _, path := range []string{"/", "/entries", "/entries/ord-1"} {
			rec := hs.get(path)
			Expect(rec.Code).To(Equal(http.StatusServiceUnavailable), path)
			Expect(rec.Body.String()).To(ContainSubstring("could not be reached"), path)
			Expect(rec.Body.String()).NotTo(ContainSubstring("goroutine"), path)
		}
	})
})

var _ = Describe("the JSON API", func() {
	var hs *harness
	BeforeEach(func() {
		hs = newHarness("redis://"+lanesMini()+"/0", ui.Config{Tokens: map[string]string{"alice": aliceToken, "bob": bobToken}})
	})

	It("refuses a missing or wrong bearer token (401) and changes nothing", func() {
		for _, tok := range []string{"", "wrong-token-0123456789abcdef", aliceToken + "x"} {
			rec := hs.api(http.MethodPost, "/api/v1/entries/ord-2/requeue", tok, map[string]any{})
			Expect(rec.Code).To(Equal(http.StatusUnauthorized), tok)
			rec = hs.api(http.MethodGet, "/api/v1/entries", tok, nil)
			Expect(rec.Code).To(Equal(http.StatusUnauthorized), tok)
		}
		Expect(hs.status("ord-2")).To(Equal("failed"))
	})

	It("asks pages for a token too (basic auth), and the token's name acts", func() {
		Expect(hs.get("/").Code).To(Equal(http.StatusUnauthorized))
		hs.auth = func(r *http.Request) { r.SetBasicAuth("bob", aliceToken) }
		Expect(hs.get("/").Code).To(Equal(http.StatusUnauthorized), "alice's token under bob's name")
		hs.auth = func(r *http.Request) { r.SetBasicAuth("bob", bobToken) }
		Expect(hs.get("/").Body.String()).To(ContainSubstring(`<code id="who">bob</code>`))
		tok := hs.csrf()
		Expect(hs.postForm("/entries/ord-2/requeue", url.Values{"csrf": {tok}}).Code).To(Equal(http.StatusSeeOther))
		page, err := hs.store.AuditLog(context.Background(), "", 1)
		Expect(err).NotTo(HaveOccurred())
		Expect(page.Records[0].By).To(Equal("bob"))
	})

	It("lists with cursors and filters, gets, and counts", func() {
		rec := hs.api(http.MethodGet, "/api/v1/entries?limit=3", aliceToken, nil)
		Expect(rec.Code).To(Equal(http.StatusOK))
		body := decodeJSON(rec)
		Expect(body["entries"]).To(HaveLen(3))
		next := body["next"].(string)
		Expect(next).NotTo(BeEmpty())
		body = decodeJSON(hs.api(http.MethodGet, "/api/v1/entries?limit=3&cursor="+url.QueryEscape(next), aliceToken, nil))
		Expect(body["entries"]).To(ConsistOf(HaveKeyWithValue("id", "ord-1")))
		rec = hs.api(http.MethodGet, "/api/v1/entries?severity=urgent", aliceToken, nil)
		Expect(rec.Code).To(Equal(http.StatusBadRequest))
		Expect(decodeJSON(rec)).To(HaveKeyWithValue("field", "severity"))
		rec = hs.api(http.MethodGet, "/api/v1/entries/nope", aliceToken, nil)
		Expect(rec.Code).To(Equal(http.StatusNotFound))
		e := decodeJSON(hs.api(http.MethodGet, "/api/v1/entries/ord-1", aliceToken, nil))
		Expect(e).To(HaveKeyWithValue("status", "failed"))
		Expect(e["payload"]).NotTo(HaveKeyWithValue("api_key", "sk_live_abcdefghijklmnop"))
		st := decodeJSON(hs.api(http.MethodGet, "/api/v1/stats", aliceToken, nil))
		Expect(st).To(And(HaveKeyWithValue("total", 4.0), HaveKeyWithValue("oldest_id", "ord-1"), HaveKeyWithValue("newest_id", "xss-4")))
	})

	It("requeues in bulk: a dry run gives the count and cut-off the run carries; every step audited as api", func() {
		filter := map[string][]string{"task": {"charge"}}
		dry := decodeJSON(hs.api(http.MethodPost, "/api/v1/requeue", aliceToken, map[string]any{"filter": filter, "dry_run": true}))
		Expect(dry).To(HaveKeyWithValue("stated", 3.0))
		Expect(hs.status("ord-1")).To(Equal("failed"))
		rec := hs.api(http.MethodPost, "/api/v1/requeue", aliceToken, map[string]any{"filter": filter})
		Expect(rec.Code).To(Equal(http.StatusBadRequest), "no stated count")
		rec = hs.api(http.MethodPost, "/api/v1/requeue", aliceToken, map[string]any{"filter": filter, "stated": 3, "cut_off": dry["cut_off"], "plan": dry["plan"], "budget": "reset"})
		Expect(rec.Code).To(Equal(http.StatusOK), rec.Body.String())
		Expect(decodeJSON(rec)).To(And(HaveKeyWithValue("moved", 3.0), HaveKeyWithValue("stated", 3.0)))
		page, err := hs.store.AuditLog(context.Background(), "", 10)
		Expect(err).NotTo(HaveOccurred())
		Expect(page.Records).To(ContainElements(
			And(HaveField("Via", "api"), HaveField("By", "alice"), HaveField("Phase", "started"), HaveField("Stated", 3)),
			And(HaveField("Via", "api"), HaveField("Phase", "done"), HaveField("Moved", 3), HaveField("Filter", `--task="charge"`))))
	})

	It("edits with a revision (409 when stale), quarantines with a reason, deletes and restores", func() {
		e := decodeJSON(hs.api(http.MethodGet, "/api/v1/entries/ord-3", aliceToken, nil))
		rev := e["revision"].(string)
		rec := hs.api(http.MethodPost, "/api/v1/entries/ord-3/edit", aliceToken, map[string]any{"payload": map[string]any{"amount": 301}, "revision": rev})
		Expect(rec.Code).To(Equal(http.StatusOK), rec.Body.String())
		rec = hs.api(http.MethodPost, "/api/v1/entries/ord-3/edit", bobToken, map[string]any{"payload": map[string]any{"amount": 1}, "revision": rev})
		Expect(rec.Code).To(Equal(http.StatusConflict))
		Expect(decodeJSON(rec)["error"]).To(ContainSubstring("changed"))
		rec = hs.api(http.MethodPost, "/api/v1/entries/ord-3/quarantine", aliceToken, map[string]any{})
		Expect(rec.Code).To(Equal(http.StatusBadRequest))
		Expect(decodeJSON(rec)).To(HaveKeyWithValue("field", "reason"))
		Expect(hs.api(http.MethodPost, "/api/v1/entries/ord-3/quarantine", aliceToken, map[string]any{"reason": "poison"}).Code).To(Equal(http.StatusOK))
		Expect(hs.status("ord-3")).To(Equal("quarantined"))
		Expect(hs.api(http.MethodPost, "/api/v1/entries/ord-3/delete", aliceToken, nil).Code).To(Equal(http.StatusOK))
		Expect(decodeJSON(hs.api(http.MethodPost, "/api/v1/entries/ord-3/restore", aliceToken, nil))).To(HaveKeyWithValue("status", "quarantined"))
		Expect(hs.api(http.MethodPost, "/api/v1/entries/ord-3/requeue", aliceToken, map[string]any{"budget": "all"}).Code).To(Equal(http.StatusBadRequest))
		Expect(decodeJSON(hs.api(http.MethodPost, "/api/v1/entries/ord-3/requeue", aliceToken, nil))).To(HaveKeyWithValue("outcome", "requeued"))
		audit := decodeJSON(hs.api(http.MethodGet, "/api/v1/audit", aliceToken, nil))
		Expect(audit["records"]).To(ContainElement(And(HaveKeyWithValue("action", "quarantine"), HaveKeyWithValue("note", "poison"), HaveKeyWithValue("via", "api"))))
		dry := decodeJSON(hs.api(http.MethodPost, "/api/v1/delete", aliceToken, map[string]any{"filter": map[string][]string{"severity": {"low"}}, "dry_run": true}))
		Expect(dry).To(HaveKeyWithValue("stated", 1.0))
	})
})

// newReq is a request with a Host header and, for a POST, a form body.
func newReq(method, path, host, form string) *http.Request {
	req, err := http.NewRequest(method, "http://"+host+path, strings.NewReader(form))
	Expect(err).NotTo(HaveOccurred())
	req.Host = host
	if form != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	return req
}

// order returns the entry IDs of a list page, in order.
func order(body string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<tr data-id="([^"]+)">`).FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// brokenAudit is a store whose audit stream refuses every write.
type brokenAudit struct{ *redisstore.Store }

func (brokenAudit) Audit(context.Context, dlq.AuditRecord) (string, error) {
	return "", errors.New("audit stream is read-only")
}

var _ = Describe("an audit stream that cannot be written", func() {
	It("stops a bulk move before it moves anything, and says a one-step move was not audited", func() {
		hs0 := newHarness("redis://"+lanesMini()+"/0", ui.Config{})
		hs := newHarnessOn(hs0, func(c *ui.Config) { c.Store = brokenAudit{hs0.store} })
		body := hs.get("/bulk?action=requeue&task=charge").Body.String()
		Expect(body).To(ContainSubstring(`<strong id="stated">3</strong>`))
		cut := regexp.MustCompile(`name="cut_off" value="([^"]+)"`).FindStringSubmatch(body)[1]
		tok := csrfRE.FindStringSubmatch(body)[1]
		rec := hs.postForm("/bulk", url.Values{"csrf": {tok}, "action": {"requeue"}, "task": {"charge"}, "cut_off": {cut}, "stated": {"3"}, "plan": {planIn(body)}})
		Expect(rec.Code).To(Equal(http.StatusInternalServerError))
		Expect(rec.Body.String()).To(ContainSubstring("nothing moved"))
		Expect(hs.status("ord-1")).To(Equal("failed"))
		rec = hs.postForm("/entries/ord-1/requeue", url.Values{"csrf": {tok}})
		Expect(rec.Code).To(Equal(http.StatusSeeOther))
		Expect(hs.get(rec.Header().Get("Location")).Body.String()).To(ContainSubstring("requeued (but not audited: the audit record could not be written; the server log line has the error)"))
		Expect(hs.log.lines()).To(ContainElement(HaveKeyWithValue("audit_error", "write the audit record: audit stream is read-only")))
	})
})

var _ = Describe("two bulk requeues of the same set at once", func() {
	for _, ln := range lanes {
		It("requeue each entry exactly once (UI and API, on "+ln.name+")", func() {
			hs := newHarness(ln.url(), ui.Config{Tokens: map[string]string{"alice": aliceToken}})
			hs.auth = func(r *http.Request) { r.SetBasicAuth("alice", aliceToken) }
			const n = 1000
			batch := make([]dlq.Entry, n)
			for i := range batch {
				batch[i] = entryAt(fmt.Sprintf("bulk-%04d", i), "bulk", classify.Medium, classify.Transient, time.Duration(i+1)*time.Second, `{}`, "502")
			}
			_, err := hs.store.AddBatch(context.Background(), batch, time.Now())
			Expect(err).NotTo(HaveOccurred())
			body := hs.get("/bulk?action=requeue&task=bulk").Body.String()
			Expect(body).To(ContainSubstring(fmt.Sprintf(`<strong id="stated">%d</strong>`, n)))
			cut := regexp.MustCompile(`name="cut_off" value="([^"]+)"`).FindStringSubmatch(body)[1]
			tok := csrfRE.FindStringSubmatch(body)[1]
			dry := decodeJSON(hs.api(http.MethodPost, "/api/v1/requeue", aliceToken, map[string]any{"filter": map[string][]string{"task": {"bulk"}}, "dry_run": true}))
			Expect(dry).To(HaveKeyWithValue("stated", float64(n)))

			var wg sync.WaitGroup
			var uiBody string
			var apiOut map[string]any
			wg.Go(func() {
				defer GinkgoRecover()
				rec := hs.postForm("/bulk", url.Values{"csrf": {tok}, "action": {"requeue"}, "task": {"bulk"}, "cut_off": {cut}, "stated": {strconv.Itoa(n)}, "plan": {planIn(body)}})
				Expect(rec.Code).To(Equal(http.StatusOK))
				uiBody = rec.Body.String()
			})
			wg.Go(func() {
				defer GinkgoRecover()
				rec := hs.api(http.MethodPost, "/api/v1/requeue", aliceToken, map[string]any{"filter": map[string][]string{"task": {"bulk"}}, "stated": n, "cut_off": dry["cut_off"], "plan": dry["plan"]})
				Expect(rec.Code).To(Equal(http.StatusOK))
				apiOut = decodeJSON(rec)
			})
			wg.Wait()
			uiMoved, err := strconv.Atoi(regexp.MustCompile(`id="r-moved">(\d+)<`).FindStringSubmatch(uiBody)[1])
			Expect(err).NotTo(HaveOccurred())
			Expect(uiMoved+int(apiOut["moved"].(float64))).To(Equal(n), "every entry moved by one run or the other, none twice")
			st, err := hs.store.Stats(context.Background())
			Expect(err).NotTo(HaveOccurred())
			Expect(st.ByStatus).To(HaveKeyWithValue("requeued", n))
			Expect(hs.log.lines()).To(HaveLen(4), "started and done of each run")
		})
	}
})
