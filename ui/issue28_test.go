package ui_test

import (
	"context"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/ui"
)

// Issue 28: what a newcomer tripped on, on the miniredis lane.
var _ = Describe("the UI as a newcomer meets it (issue 28)", func() {
	Describe("the audit stream", func() {
		// A record as any tool may have written it: the CLI's --reason,
		// --by and filter are stored as the operator typed them.
		leaky := dlq.AuditRecord{At: time.Now(), By: "ops redis://:hunter2@host", Via: "cli", Action: "requeue", Phase: "done",
			Filter: "--error-text redis://:hunter2@host", Stated: 1, Moved: 1,
			Note: "token leaked: Bearer abcdefghijklmnop123, see redis://:hunter2@host"}
		write := func(hs *harness) {
			GinkgoHelper()
			_, err := hs.store.Audit(context.Background(), leaky)
			Expect(err).NotTo(HaveOccurred())
		}

		It("shows a record's reason, who and filter masked on /audit, as faultline dlq audit prints them", func() {
			hs := newHarness(lanes[0].url(), ui.Config{})
			write(hs)
			rec := hs.get("/audit")
			Expect(rec.Code).To(Equal(http.StatusOK))
			body := rec.Body.String()
			Expect(body).To(ContainSubstring("token leaked: Bearer [REDACTED], see redis://:[REDACTED]@host"))
			Expect(body).To(ContainSubstring("--error-text redis://:[REDACTED]@host"), "a filter printed when the record names no IDs")
			Expect(body).To(ContainSubstring("ops redis://:[REDACTED]@host"))
			Expect(body).NotTo(ContainSubstring("abcdefghijklmnop123"))
			Expect(body).NotTo(ContainSubstring("hunter2"))
		})

		It("answers the API's audit masked too", func() {
			hs := newHarness(lanes[0].url(), ui.Config{Tokens: map[string]string{"alice": aliceToken}})
			write(hs)
			rec := hs.api(http.MethodGet, "/api/v1/audit", aliceToken, nil)
			Expect(rec.Code).To(Equal(http.StatusOK))
			Expect(decodeJSON(rec)["records"]).To(ContainElement(SatisfyAll(
				HaveKeyWithValue("note", "token leaked: Bearer [REDACTED], see redis://:[REDACTED]@host"),
				HaveKeyWithValue("filter", "--error-text redis://:[REDACTED]@host"),
				HaveKeyWithValue("by", "ops redis://:[REDACTED]@host"))))
			Expect(rec.Body.String()).NotTo(ContainSubstring("abcdefghijklmnop123"))
			Expect(rec.Body.String()).NotTo(ContainSubstring("hunter2"))
		})
	})

	Describe("ages", func() {
		It("prints an entry 8110 hours old as 338d ago on the dashboard, as faultline dlq stats does", func() {
			now := time.Now()
			hs := newHarness(lanes[0].url(), ui.Config{Now: func() time.Time { return now }})
			old := entryAt("old-1", "charge", classify.Medium, classify.Transient, 0, `{}`, "gateway timeout")
			old.LastFailedAt = now.Add(-(8110*time.Hour + 52*time.Minute + 32*time.Second))
			old.FirstFailedAt = old.LastFailedAt.Add(-time.Minute)
			for i := range old.History {
				old.History[i].At = old.LastFailedAt
			}
			_, err := hs.store.Add(context.Background(), old, now)
			Expect(err).NotTo(HaveOccurred())
			body := hs.get("/").Body.String()
			Expect(body).To(ContainSubstring(`<a href="/entries/old-1">old-1</a>, 338d ago`))
			Expect(body).NotTo(ContainSubstring("8110h"))
			Expect(body).To(MatchRegexp(`<a href="/entries/xss-4">xss-4</a>, 20m0s ago`), "below an hour: minutes and seconds")
		})
	})

	Describe("the JSON API on loopback without --tokens", func() {
		var hs *harness
		BeforeEach(func() { hs = newHarness(lanes[0].url(), ui.Config{}) })

		It("answers reads (GET) without a token, as pages are served; the OS user is who", func() {
			for _, path := range []string{"/api/v1/stats", "/api/v1/entries", "/api/v1/entries/ord-2", "/api/v1/audit", "/api/v1/depth"} {
				rec := hs.api(http.MethodGet, path, "", nil)
				Expect(rec.Code).To(Equal(http.StatusOK), "%s: %s", path, rec.Body.String())
				Expect(rec.Header().Get("Content-Type")).To(Equal("application/json"), path)
			}
			Expect(decodeJSON(hs.api(http.MethodGet, "/api/v1/stats", "", nil))).To(HaveKeyWithValue("total", BeNumerically("==", 4)))
		})

		It("refuses every move (POST) without a token, saying to start the UI with --tokens, and changes nothing", func() {
			for _, path := range []string{"/api/v1/entries/ord-2/requeue", "/api/v1/entries/ord-2/delete", "/api/v1/requeue", "/api/v1/delete"} {
				rec := hs.api(http.MethodPost, path, "", map[string]any{})
				Expect(rec.Code).To(Equal(http.StatusUnauthorized), path)
				Expect(decodeJSON(rec)["error"]).To(ContainSubstring("start faultline ui with --tokens"), path)
			}
			for _, m := range []string{http.MethodPut, http.MethodDelete, http.MethodPatch} {
				rec := hs.api(m, "/api/v1/entries/ord-2", "", nil)
				Expect(rec.Code).To(Equal(http.StatusUnauthorized), m)
				Expect(decodeJSON(rec)["error"]).To(ContainSubstring("--tokens"), m)
			}
			Expect(hs.status("ord-2")).To(Equal("failed"))
		})

		It("still refuses a foreign Host header on a read (DNS rebinding)", func() {
			rec := hs.do(newReq(http.MethodGet, "/api/v1/entries/ord-1", "attacker.test", ""))
			Expect(rec.Code).To(Equal(http.StatusMisdirectedRequest))
			Expect(rec.Body.String()).NotTo(ContainSubstring("ord-1\""))
		})

		It("needs a token for everything once tokens are configured, on loopback and off it", func() {
			for _, cfg := range []ui.Config{
				{Tokens: map[string]string{"alice": aliceToken}},
				{Listen: "10.1.2.3:8443", Tokens: map[string]string{"alice": aliceToken}, InsecureHTTP: true},
			} {
				h := newHarnessOn(hs, func(c *ui.Config) {
					c.Tokens, c.InsecureHTTP = cfg.Tokens, cfg.InsecureHTTP
					if cfg.Listen != "" {
						c.Listen = cfg.Listen
					}
				})
				for _, path := range []string{"/api/v1/stats", "/api/v1/entries", "/api/v1/audit"} {
					Expect(h.api(http.MethodGet, path, "", nil).Code).To(Equal(http.StatusUnauthorized), "%s on %s", path, cfg.Listen)
					Expect(h.api(http.MethodGet, path, aliceToken, nil).Code).To(Equal(http.StatusOK), "%s on %s", path, cfg.Listen)
				}
				Expect(h.api(http.MethodPost, "/api/v1/entries/ord-2/requeue", "", map[string]any{}).Code).To(Equal(http.StatusUnauthorized))
				Expect(h.get("/").Code).To(Equal(http.StatusUnauthorized), "pages too")
			}
			Expect(hs.status("ord-2")).To(Equal("failed"))
		})
	})
})
