package ui_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	seedlayout "github.com/faultline/faultline/layout/seed"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/ui"
)

// The reviewer's repros (issue 16), on the miniredis lane.
var _ = Describe("the web UI against issue 16's attacks", func() {
	var hs *harness
	BeforeEach(func() { hs = newHarness(lanes[0].url(), ui.Config{}) })

	// addIDs writes a failed entry for each id.
	addIDs := func(ids ...string) {
		GinkgoHelper()
		for i, id := range ids {
			e := entryAt(id, "charge", classify.Medium, classify.Transient, time.Duration(10-i)*time.Minute, `{"amount":1}`, "boom")
			_, err := hs.store.Add(context.Background(), e, time.Now())
			Expect(err).NotTo(HaveOccurred())
		}
	}
	// follow resolves a link or form action of the page at base as a
	// browser does.
	follow := func(base, ref string) string {
		GinkgoHelper()
		b, err := url.Parse("http://" + specHost + base)
		Expect(err).NotTo(HaveOccurred())
		r, err := url.Parse(html.UnescapeString(ref))
		Expect(err).NotTo(HaveOccurred())
		return b.ResolveReference(r).RequestURI()
	}

	Describe("entry IDs in links and form actions", func() {
		tricky := []string{"a/../victim", "z?reveal=1", "x#y", "..", "sp ace%2F"}
		BeforeEach(func() { addIDs(append([]string{"victim"}, tricky...)...) })

		It("links every row of the list to its own entry, whatever its ID holds", func() {
			body := hs.get("/entries").Body.String()
			for _, id := range tricky {
				m := regexp.MustCompile(`<a href="([^"]*)">` + regexp.QuoteMeta(html.EscapeString(id)) + `</a>`).FindStringSubmatch(body)
				Expect(m).NotTo(BeNil(), "a row link for %q", id)
				rec := hs.get(follow("/entries", m[1]))
				Expect(rec.Code).To(Equal(http.StatusOK), "the link for %q: %s", id, m[1])
				Expect(rec.Body.String()).To(ContainSubstring(`<code id="entry-id">`+html.EscapeString(id)+`</code>`), "the link for %q", id)
				Expect(rec.Body.String()).To(ContainSubstring("(secrets masked)"), "the link for %q reveals nothing", id)
			}
		})

		It("makes the Delete button of entry a/../victim delete that entry, not victim", func() {
			page := "/entries/" + url.PathEscape("a/../victim")
			rec := hs.get(page)
			Expect(rec.Code).To(Equal(http.StatusOK))
			body := rec.Body.String()
			m := regexp.MustCompile(`action="([^"]*/delete)"`).FindStringSubmatch(body)
			Expect(m).NotTo(BeNil())
			tok := csrfRE.FindStringSubmatch(body)[1]
			rec = hs.postForm(follow(page, m[1]), url.Values{"csrf": {tok}})
			Expect(rec.Code).To(Equal(http.StatusSeeOther))
			Expect(hs.status("victim")).To(Equal("failed"))
			Expect(hs.status("a/../victim")).To(Equal("deleted"))
			// The redirect lands on the same entry.
			rec = hs.get(follow(page, rec.Header().Get("Location")))
			Expect(rec.Body.String()).To(ContainSubstring(`<code id="entry-id">a/../victim</code>`))
		})

		It("escapes the ID in every form action of the entry page", func() {
			for _, id := range tricky {
				page := "/entries/" + url.PathEscape(id)
				if id == ".." {
					page = "/entries/%2E%2E"
				}
				rec := hs.get(page)
				Expect(rec.Code).To(Equal(http.StatusOK), id)
				for _, m := range regexp.MustCompile(`action="(/entries/[^"]*)"`).FindAllStringSubmatch(rec.Body.String(), -1) {
					u, err := url.Parse(follow(page, m[1]))
					Expect(err).NotTo(HaveOccurred())
					Expect(u.RawQuery).To(BeEmpty(), "action %s of %q", m[1], id)
					Expect(u.Fragment).To(BeEmpty(), "action %s of %q", m[1], id)
					seg := regexp.MustCompile(`^/entries/([^/]+)/[a-z]+$`).FindStringSubmatch(u.EscapedPath())
					Expect(seg).NotTo(BeNil(), "action %s of %q is /entries/ID/verb", m[1], id)
					got, err := url.PathUnescape(seg[1])
					Expect(err).NotTo(HaveOccurred())
					Expect(got).To(Equal(id))
				}
			}
		})
	})

	Describe("a bulk action's plan", func() {
		// confirm loads a confirmation and returns its form's fields.
		confirm := func(path string) url.Values {
			GinkgoHelper()
			rec := hs.get(path)
			Expect(rec.Code).To(Equal(http.StatusOK))
			form := url.Values{}
			for _, m := range regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`).FindAllStringSubmatch(rec.Body.String(), -1) {
				form.Add(m[1], html.UnescapeString(m[2]))
			}
			Expect(form.Get("plan")).NotTo(BeEmpty())
			return form
		}
		addLate := func() {
			GinkgoHelper()
			// Entries outside the confirmed filter, dying after the confirmation.
			for _, id := range []string{"late-1", "late-2"} {
				e := entryAt(id, "email", classify.Medium, classify.Transient, 0, `{}`, "boom")
				_, err := hs.store.Add(context.Background(), e, time.Now())
				Expect(err).NotTo(HaveOccurred())
			}
		}

		It("refuses a POST that drops the confirmed filter and sets a later cut-off, naming what changed; nothing moves", func() {
			form := confirm("/bulk?action=delete&task=charge")
			Expect(form.Get("stated")).To(Equal("3"))
			addLate()
			crafted := url.Values{"csrf": form["csrf"], "action": {"delete"}, "cut_off": {"2999-01-01T00:00:00Z"}, "stated": form["stated"], "plan": form["plan"]}
			rec := hs.postForm("/bulk", crafted)
			Expect(rec.Code).To(Equal(http.StatusBadRequest))
			Expect(rec.Body.String()).To(ContainSubstring("filter"))
			crafted.Set("task", "charge")
			rec = hs.postForm("/bulk", crafted)
			Expect(rec.Code).To(Equal(http.StatusBadRequest))
			Expect(rec.Body.String()).To(ContainSubstring("cut_off"))
			for _, id := range []string{"ord-1", "ord-2", "ord-3", "xss-4", "late-1"} {
				Expect(hs.status(id)).NotTo(Equal("deleted"), id)
			}
		})

		It("refuses a POST without the signed plan, or with a forged or altered one", func() {
			form := confirm("/bulk?action=delete&task=charge")
			noPlan := url.Values{}
			for k, v := range form {
				if k != "plan" {
					noPlan[k] = v
				}
			}
			Expect(hs.postForm("/bulk", noPlan).Code).To(Equal(http.StatusBadRequest))
			forged := url.Values{}
			for k, v := range noPlan {
				forged[k] = v
			}
			forged.Set("plan", form.Get("plan")+"0")
			rec := hs.postForm("/bulk", forged)
			Expect(rec.Code).To(Equal(http.StatusBadRequest))
			Expect(rec.Body.String()).To(ContainSubstring("plan"))
			forged.Set("stated", "4")
			forged.Set("plan", form.Get("plan"))
			rec = hs.postForm("/bulk", forged)
			Expect(rec.Code).To(Equal(http.StatusBadRequest))
			Expect(rec.Body.String()).To(ContainSubstring("stated"))
			Expect(hs.status("ord-1")).To(Equal("failed"))
			// The form as confirmed runs.
			rec = hs.postForm("/bulk", form)
			Expect(rec.Code).To(Equal(http.StatusOK), rec.Body.String())
			Expect(rec.Body.String()).To(ContainSubstring(`moved <strong id="r-moved">3</strong>`))
			Expect(hs.status("xss-4")).To(Equal("failed"))
		})

		It("refuses a selection of IDs other than the confirmed one", func() {
			form := confirm("/bulk?action=delete&id=ord-1")
			form.Add("id", "ord-2")
			rec := hs.postForm("/bulk", form)
			Expect(rec.Code).To(Equal(http.StatusBadRequest))
			Expect(rec.Body.String()).To(ContainSubstring("id"))
			Expect(hs.status("ord-2")).To(Equal("failed"))
		})

		It("makes the API's run carry its dry run's plan, refusing another filter, cut-off or operator", func() {
			api := newHarnessOn(hs, func(c *ui.Config) { c.Tokens = map[string]string{"alice": aliceToken, "bob": bobToken} })
			filter := map[string][]string{"task": {"charge"}}
			dry := decodeJSON(api.api(http.MethodPost, "/api/v1/delete", aliceToken, map[string]any{"filter": filter, "dry_run": true}))
			Expect(dry).To(HaveKeyWithValue("stated", 3.0))
			Expect(dry["plan"]).NotTo(BeEmpty())
			addLate()
			for _, c := range []struct {
				field string
				token string
				body  map[string]any
			}{
				{"plan", aliceToken, map[string]any{"filter": filter, "stated": 3, "cut_off": dry["cut_off"]}},
				{"filter", aliceToken, map[string]any{"stated": 3, "cut_off": dry["cut_off"], "plan": dry["plan"]}},
				{"cut_off", aliceToken, map[string]any{"filter": filter, "stated": 3, "cut_off": "2999-01-01T00:00:00Z", "plan": dry["plan"]}},
				{"plan", bobToken, map[string]any{"filter": filter, "stated": 3, "cut_off": dry["cut_off"], "plan": dry["plan"]}},
			} {
				rec := api.api(http.MethodPost, "/api/v1/delete", c.token, c.body)
				Expect(rec.Code).To(Equal(http.StatusBadRequest), "%v", c.body)
				Expect(decodeJSON(rec)).To(HaveKeyWithValue("field", c.field))
			}
			Expect(hs.status("ord-1")).To(Equal("failed"))
			Expect(hs.status("late-1")).To(Equal("failed"))
			rec := api.api(http.MethodPost, "/api/v1/delete", aliceToken, map[string]any{"filter": filter, "stated": 3, "cut_off": dry["cut_off"], "plan": dry["plan"]})
			Expect(rec.Code).To(Equal(http.StatusOK), rec.Body.String())
			Expect(decodeJSON(rec)).To(HaveKeyWithValue("moved", 3.0))
			Expect(hs.status("late-1")).To(Equal("failed"))
		})
	})

	It("runs a seed bulk requeue only with a cut-off this server's count signed", func() {
		sh, c := newSeedHarness(lanes[0].url(), true, nil)
		body := sh.get("/seed/bulk?status=failed").Body.String()
		csrf := csrfRE.FindStringSubmatch(body)[1]
		cutoff := regexp.MustCompile(`name="cutoff" value="([^"]+)"`).FindStringSubmatch(body)[1]
		// Dead-lettered after the count: a made-up cut-off would take it.
		Expect(c.LPush(context.Background(), "t:dead_letter", seedEntry("late", 9, "late failure")).Err()).To(Succeed())
		payload, _, _ := strings.Cut(cutoff, ".")
		raw, err := base64.RawURLEncoding.DecodeString(payload)
		Expect(err).NotTo(HaveOccurred())
		var cut seedlayout.Cutoff
		Expect(json.Unmarshal(raw, &cut)).To(Succeed())
		for i := range cut.Lists {
			cut.Lists[i].Length += 100
		}
		raised, err := json.Marshal(cut)
		Expect(err).NotTo(HaveOccurred())
		for _, forged := range []string{
			base64.RawURLEncoding.EncodeToString(raised),                         // unsigned
			base64.RawURLEncoding.EncodeToString(raised) + cutoff[len(payload):], // another cut-off's signature
		} {
			rec := sh.postForm("/seed/bulk", url.Values{"csrf": {csrf}, "status": {"failed"}, "cutoff": {forged}, "stated": {"3"}})
			Expect(rec.Code).To(Equal(http.StatusBadRequest))
			Expect(rec.Body.String()).To(ContainSubstring("cutoff"))
		}
		Expect(c.LLen(context.Background(), "t:default").Val()).To(BeZero())
		rec := sh.postForm("/seed/bulk", url.Values{"csrf": {csrf}, "status": {"failed"}, "cutoff": {cutoff}, "stated": {"3"}})
		Expect(rec.Code).To(Equal(http.StatusOK), rec.Body.String())
		Expect(c.LRange(context.Background(), "t:default", 0, -1).Val()).NotTo(ContainElement(ContainSubstring("late")))
	})

	Describe("the CSRF token", func() {
		It("is bound to who signed in: a token another operator obtained for a planted cookie is refused", func() {
			toks := map[string]string{"alice": aliceToken, "bob": bobToken}
			alice := newHarnessOn(hs, func(c *ui.Config) { c.Tokens = toks })
			fixed := &http.Cookie{Name: "faultline_csrf", Value: "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}
			bob := &harness{store: hs.store, h: alice.h, cookies: []*http.Cookie{fixed},
				auth: func(r *http.Request) { r.SetBasicAuth("bob", bobToken) }}
			bobTok := bob.csrf()
			alice.cookies = []*http.Cookie{fixed}
			alice.auth = func(r *http.Request) { r.SetBasicAuth("alice", aliceToken) }
			rec := alice.postForm("/entries/ord-2/delete", url.Values{"csrf": {bobTok}})
			Expect(rec.Code).To(Equal(http.StatusForbidden))
			Expect(hs.status("ord-2")).To(Equal("failed"))
			rec = alice.postForm("/entries/ord-2/delete", url.Values{"csrf": {alice.csrf()}})
			Expect(rec.Code).To(Equal(http.StatusSeeOther))
			Expect(hs.status("ord-2")).To(Equal("deleted"))
		})

		It("rides a __Host- cookie, Secure, HttpOnly and SameSite=Strict, when the browser comes over HTTPS", func() {
			for i, mut := range []func(*ui.Config){
				func(c *ui.Config) { c.TLS = true },
				func(c *ui.Config) { c.InsecureHTTP = true }, // a proxy serves HTTPS
			} {
				b := newHarnessOn(hs, mut)
				rec := b.get("/entries/ord-2")
				Expect(rec.Code).To(Equal(http.StatusOK))
				Expect(rec.Result().Cookies()).To(ConsistOf(And(
					HaveField("Name", "__Host-faultline_csrf"), HaveField("Secure", true), HaveField("HttpOnly", true),
					HaveField("SameSite", http.SameSiteStrictMode), HaveField("Path", "/"), HaveField("Domain", ""))))
				tok := csrfRE.FindStringSubmatch(rec.Body.String())[1]
				id := []string{"ord-2", "ord-3"}[i]
				Expect(b.postForm("/entries/"+id+"/quarantine", url.Values{"csrf": {tok}, "reason": {"spec"}}).Code).To(Equal(http.StatusSeeOther))
				Expect(hs.status(id)).To(Equal("quarantined"))
			}
			// Plain-HTTP loopback: a browser refuses a __Host- cookie that is not Secure.
			Expect(hs.get("/entries/ord-2").Result().Cookies()).To(ConsistOf(And(
				HaveField("Name", "faultline_csrf"), HaveField("HttpOnly", true), HaveField("SameSite", http.SameSiteStrictMode))))
		})

		It("refuses, even with a valid token, a POST the browser says came from another site or origin", func() {
			tok := hs.csrf()
			for _, hdr := range []map[string]string{
				{"Sec-Fetch-Site": "cross-site"},
				{"Sec-Fetch-Site": "same-site"}, // another port of 127.0.0.1
				{"Origin": "http://evil.example"},
				{"Origin": "http://127.0.0.1:3000"},
				{"Origin": "null"},
			} {
				req := httptest.NewRequest(http.MethodPost, "/entries/ord-2/delete", strings.NewReader(url.Values{"csrf": {tok}}.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				for k, v := range hdr {
					req.Header.Set(k, v)
				}
				rec := hs.do(req)
				Expect(rec.Code).To(Equal(http.StatusForbidden), "%v", hdr)
				Expect(hs.status("ord-2")).To(Equal("failed"), "%v", hdr)
			}
			req := httptest.NewRequest(http.MethodPost, "/entries/ord-2/delete", strings.NewReader(url.Values{"csrf": {tok}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", "http://"+specHost)
			req.Header.Set("Sec-Fetch-Site", "same-origin")
			Expect(hs.do(req).Code).To(Equal(http.StatusSeeOther))
			Expect(hs.status("ord-2")).To(Equal("deleted"))
		})
	})

	Describe("lesser defects", func() {
		It("masks a secret quoted in a note or a filter, in the log line and the audit record", func() {
			tok := hs.csrf()
			Expect(hs.postForm("/entries/ord-1/quarantine", url.Values{"csrf": {tok}, "reason": {"customer password=hunter2 leaked"}}).Code).To(Equal(http.StatusSeeOther))
			e := entryAt("leak-1", "charge", classify.Medium, classify.Transient, time.Minute, `{}`, "gateway rejected key sk_live_abcdefghijklmnop")
			_, err := hs.store.Add(context.Background(), e, time.Now())
			Expect(err).NotTo(HaveOccurred())
			body := hs.get("/bulk?action=requeue&error-text=sk_live_abcdefghijklmnop").Body.String()
			form := url.Values{}
			for _, m := range regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`).FindAllStringSubmatch(body, -1) {
				form.Add(m[1], html.UnescapeString(m[2]))
			}
			Expect(form.Get("stated")).To(Equal("1"))
			rec := hs.postForm("/bulk", form)
			Expect(rec.Code).To(Equal(http.StatusOK), rec.Body.String())
			Expect(hs.status("leak-1")).To(Equal("requeued"))
			page, err := hs.store.AuditLog(context.Background(), "", 100)
			Expect(err).NotTo(HaveOccurred())
			Expect(page.Records).To(ContainElements(HaveField("Action", "quarantine"), HaveField("Phase", "done")))
			for _, rec := range page.Records {
				Expect(rec.Note).NotTo(ContainSubstring("hunter2"))
				Expect(rec.Filter).NotTo(ContainSubstring("sk_live_abcdefghijklmnop"))
			}
			Expect(hs.log.lines()).NotTo(BeEmpty())
			lines := hs.log.lines()
			Expect(lines).To(ContainElement(HaveKeyWithValue("note", ContainSubstring("[REDACTED]"))))
			for _, l := range lines {
				Expect(fmt.Sprint(l["note"], l["filter"])).NotTo(Or(ContainSubstring("hunter2"), ContainSubstring("sk_live_abcdefghijklmnop")))
			}
		})

		It("shows only its own texts for a redirect's codes: a crafted ?done= or &outcome= is not echoed", func() {
			body := hs.get("/entries/ord-1?done=" + url.QueryEscape("Session expired: call +1 555 0100")).Body.String()
			Expect(body).NotTo(ContainSubstring("Session expired"))
			body = hs.get("/entries/ord-1?done=requeue&outcome=" + url.QueryEscape("call +1 555 0100")).Body.String()
			Expect(body).To(ContainSubstring(`<p class="notice" id="notice">requeue</p>`))
			Expect(body).NotTo(ContainSubstring("555 0100"))
		})

		It("sets a Content-Security-Policy on redirects and plain errors too", func() {
			tok := hs.csrf()
			rec := hs.postForm("/entries/ord-2/quarantine", url.Values{"csrf": {tok}, "reason": {"r"}})
			Expect(rec.Code).To(Equal(http.StatusSeeOther))
			Expect(rec.Header().Get("Content-Security-Policy")).To(ContainSubstring("default-src 'none'"))
			for _, p := range []string{"/entries/../audit", "/static/layout.html"} {
				Expect(hs.get(p).Header().Get("Content-Security-Policy")).To(ContainSubstring("default-src 'none'"), p)
			}
		})

		It("takes the bearer scheme in any case, and refuses a tokens file giving two names one token", func() {
			api := newHarnessOn(hs, func(c *ui.Config) { c.Tokens = map[string]string{"alice": aliceToken} })
			for _, scheme := range []string{"bearer", "BEARER", "Bearer"} {
				req := httptest.NewRequest(http.MethodGet, "/api/v1/stats", nil)
				req.Header.Set("Authorization", scheme+" "+aliceToken)
				Expect(api.do(req).Code).To(Equal(http.StatusOK), scheme)
			}
			path := filepath.Join(GinkgoT().TempDir(), "tokens")
			Expect(os.WriteFile(path, []byte("alice:"+aliceToken+"\nbob:"+aliceToken+"\n"), 0o600)).To(Succeed())
			_, err := ui.ReadTokens(path)
			Expect(err).To(MatchError(And(ContainSubstring("line 2"), ContainSubstring("own token"))))
		})
	})
})
