package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/ui"
)

// seedEntry is a dead_letter entry as the tutorial writes it.
func seedEntry(task string, n int, errText string) string {
	b, err := json.Marshal(map[string]any{"job": map[string]any{"task": task, "n": n, "api_key": "sk_live_abcdefghijklmnop"},
		"error": errText, "retries": 3, "failed_at": "2026-01-02T03:04:05", "status": "failed"})
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}

// seedSevEntry is a dlq:SEVERITY record as the tutorial writes it.
func seedSevEntry(task, sev, errText string) string {
	b, err := json.Marshal(map[string]any{"job": map[string]any{"task": task}, "error": errText, "type": "TimeoutError",
		"severity": sev, "retries": 2, "timestamp": "2026-01-02T03:04:05"})
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}

// newSeedHarness writes a small seed DLQ (prefix "t:") and serves it.
func newSeedHarness(redisURL string, requeue bool, tokens map[string]string) (*harness, *redis.Client) {
	GinkgoHelper()
	c := redisstore.NewClient(redisURL)
	DeferCleanup(c.Close)
	ctx := context.Background()
	Expect(c.LPush(ctx, "t:dead_letter", seedEntry("payment", 1, "Gateway timeout"), seedEntry("email", 2, `<script>alert(1)</script> SMTP error`)).Err()).To(Succeed())
	Expect(c.LPush(ctx, "t:dlq:high", seedSevEntry("charge", "HIGH", "card network down")).Err()).To(Succeed())
	Expect(c.LPush(ctx, "t:dead_letter", `{"job": {"task": "payment", "amo`).Err()).To(Succeed()) // corrupt
	hs := &harness{log: &syncBuffer{}}
	cfg := ui.Config{Seed: &ui.SeedConfig{Client: c, Prefix: "t:", Requeue: requeue}, Namespace: "t:", Listen: specHost, Log: hs.log, User: "spec-user", Tokens: tokens}
	hs.cfg = cfg
	var err error
	hs.h, err = ui.New(cfg)
	Expect(err).NotTo(HaveOccurred())
	return hs, c
}

var refRE = regexp.MustCompile(`data-ref="([^"]+)"`)

var _ = Describe("the seed layout in the UI", func() {
	for _, ln := range lanes {
		Context("on "+ln.name, func() {
			ctx := context.Background()

			It("lists the tutorial's lists read-only by default, payloads as text, secrets masked", func() {
				hs, c := newSeedHarness(ln.url(), false, nil)
				rec := hs.get("/")
				Expect(rec.Code).To(Equal(http.StatusOK))
				body := rec.Body.String()
				refs := refRE.FindAllStringSubmatch(body, -1)
				Expect(refs).To(HaveLen(4))
				Expect(body).To(ContainSubstring("Read-only"))
				Expect(body).NotTo(ContainSubstring(`id="bulk-requeue"`))
				Expect(body).NotTo(ContainSubstring("<script>alert(1)"))
				Expect(body).To(ContainSubstring("&lt;script&gt;alert(1)&lt;/script&gt; SMTP error"))

				rec = hs.get("/?severity=high")
				Expect(refRE.FindAllStringSubmatch(rec.Body.String(), -1)).To(HaveLen(1))
				rec = hs.get("/?task=charge")
				Expect(rec.Code).To(Equal(http.StatusBadRequest))
				Expect(rec.Body.String()).To(ContainSubstring("task"))
				rec = hs.get("/?status=lost")
				Expect(rec.Code).To(Equal(http.StatusBadRequest))

				// The entry page: the whole entry, masked, no requeue form.
				var ref string
				for _, m := range refs {
					if strings.HasPrefix(m[1], "dead_letter@1#") {
						ref = m[1]
					}
				}
				Expect(ref).NotTo(BeEmpty())
				rec = hs.get("/seed/entry?" + url.Values{"ref": {ref}}.Encode())
				Expect(rec.Code).To(Equal(http.StatusOK), rec.Body.String())
				Expect(rec.Body.String()).To(ContainSubstring("SMTP error"))
				Expect(rec.Body.String()).NotTo(ContainSubstring("sk_live_abcdefghijklmnop"))
				Expect(rec.Body.String()).NotTo(ContainSubstring(`id="requeue"`))
				Expect(hs.get("/seed/bulk").Code).To(Equal(http.StatusForbidden))

				// The API refuses a requeue (403), and nothing moves.
				api, c2 := newSeedHarness(ln.url(), false, map[string]string{"alice": aliceToken})
				rec = api.api(http.MethodPost, "/api/v1/seed/requeue", aliceToken, map[string]any{"ref": ref})
				Expect(rec.Code).To(Equal(http.StatusForbidden))
				Expect(decodeJSON(rec)["error"]).To(ContainSubstring("--allow-requeue"))
				rec = api.api(http.MethodPost, "/api/v1/seed/requeue", aliceToken, map[string]any{"dry_run": true})
				Expect(rec.Code).To(Equal(http.StatusForbidden))
				Expect(c.LLen(ctx, "t:default").Val()).To(BeZero())
				Expect(c2.LLen(ctx, "t:default").Val()).To(BeZero())
			})

			It("refuses an unknown ref with 404 and a malformed one with 400 naming it", func() {
				hs, _ := newSeedHarness(ln.url(), false, nil)
				rec := hs.get("/seed/entry?" + url.Values{"ref": {"dead_letter@99#000000000000"}}.Encode())
				Expect(rec.Code).To(Equal(http.StatusNotFound))
				rec = hs.get("/seed/entry?ref=nowhere@1")
				Expect(rec.Code).To(Equal(http.StatusBadRequest))
				Expect(rec.Body.String()).To(ContainSubstring(`id="field">ref<`))
			})

			It("requeues one entry safely, and a stale ref is refused, not applied to another", func() {
				hs, c := newSeedHarness(ln.url(), true, nil)
				refs := refRE.FindAllStringSubmatch(hs.get("/?list=dead_letter&status=failed").Body.String(), -1)
				Expect(refs).To(HaveLen(2), "the corrupt one has no status to match")
				ref := refs[0][1]
				page := hs.get("/seed/entry?" + url.Values{"ref": {ref}}.Encode())
				Expect(page.Body.String()).To(ContainSubstring(`id="requeue"`))
				csrf := csrfRE.FindStringSubmatch(page.Body.String())[1]
				rec := hs.postForm("/seed/requeue", url.Values{"csrf": {csrf}, "ref": {ref}})
				Expect(rec.Code).To(Equal(http.StatusSeeOther), rec.Body.String())
				Expect(c.LLen(ctx, "t:default").Val()).To(Equal(int64(1)))
				follow := hs.get(rec.Header().Get("Location"))
				Expect(follow.Body.String()).To(ContainSubstring("requeue: requeued"))
				Expect(follow.Body.String()).To(ContainSubstring(`id="status">reprocessing<`))

				// Again: the entry is marked now.
				rec = hs.postForm("/seed/requeue", url.Values{"csrf": {csrf}, "ref": {ref}})
				Expect(rec.Code).To(Equal(http.StatusSeeOther))
				Expect(hs.get(rec.Header().Get("Location")).Body.String()).To(ContainSubstring("already-reprocessing"))
				Expect(c.LLen(ctx, "t:default").Val()).To(Equal(int64(1)))
				Expect(hs.log.lines()).To(ContainElement(And(HaveKeyWithValue("action", "requeue"), HaveKeyWithValue("by", "spec-user"),
					HaveKeyWithValue("audit_error", ContainSubstring("audit stream")))))
			})

			It("bulk-requeues the filtered set after a confirmation stating the count, leaving entries dead-lettered since", func() {
				hs, c := newSeedHarness(ln.url(), true, nil)
				rec := hs.get("/seed/bulk?status=failed")
				Expect(rec.Code).To(Equal(http.StatusOK), rec.Body.String())
				body := rec.Body.String()
				Expect(body).To(ContainSubstring(`<strong id="count">3</strong>`))
				csrf := csrfRE.FindStringSubmatch(body)[1]
				cutoff := regexp.MustCompile(`name="cutoff" value="([^"]+)"`).FindStringSubmatch(body)[1]
				// Dead-lettered while the operator reads the confirmation.
				Expect(c.LPush(ctx, "t:dead_letter", seedEntry("late", 9, "late failure")).Err()).To(Succeed())

				rec = hs.postForm("/seed/bulk", url.Values{"csrf": {csrf}, "status": {"failed"}, "cutoff": {cutoff}, "stated": {"3"}})
				Expect(rec.Code).To(Equal(http.StatusOK), rec.Body.String())
				Expect(rec.Body.String()).To(ContainSubstring(`<strong id="moved">3</strong>`))
				Expect(c.LLen(ctx, "t:default").Val()).To(Equal(int64(3)))
				Expect(c.LRange(ctx, "t:default", 0, -1).Val()).NotTo(ContainElement(ContainSubstring("late")))
			})

			It("writes its moves to the audit stream it is given, as the CLI's seed requeue does", func() {
				hs, c := newSeedHarness(ln.url(), true, map[string]string{"alice": aliceToken})
				audit, err := redisstore.New(c, store.Config{Namespace: "ops"})
				Expect(err).NotTo(HaveOccurred())
				cfg := hs.cfg
				cfg.Seed.Audit = audit
				h, err := ui.New(cfg)
				Expect(err).NotTo(HaveOccurred())
				hs.h = h
				rec := hs.api(http.MethodPost, "/api/v1/seed/requeue", aliceToken, map[string]any{"filter": map[string][]string{"list": {"dlq:high"}}, "dry_run": true})
				count := decodeJSON(rec)
				rec = hs.api(http.MethodPost, "/api/v1/seed/requeue", aliceToken, map[string]any{"filter": map[string][]string{"list": {"dlq:high"}},
					"cutoff": count["cutoff"], "stated": 1})
				Expect(rec.Code).To(Equal(http.StatusOK), rec.Body.String())
				Expect(decodeJSON(rec)["audit_error"]).To(BeNil())
				page, err := audit.AuditLog(ctx, "", 10)
				Expect(err).NotTo(HaveOccurred())
				Expect(page.Records).To(HaveLen(2))
				Expect(page.Records[0]).To(And(HaveField("Phase", "done"), HaveField("By", "alice"), HaveField("Via", "api"),
					HaveField("Action", "requeue"), HaveField("Moved", 1), HaveField("Filter", "--list dlq:high")))
				Expect(page.Records[1].Phase).To(Equal("started"))
			})

			It("serves the same through the API, with a bearer token", func() {
				hs, c := newSeedHarness(ln.url(), true, map[string]string{"alice": aliceToken})
				rec := hs.api(http.MethodGet, "/api/v1/seed/entries?severity=high", aliceToken, nil)
				Expect(rec.Code).To(Equal(http.StatusOK), rec.Body.String())
				var page struct {
					Entries []ui.SeedRow `json:"entries"`
				}
				Expect(json.Unmarshal(rec.Body.Bytes(), &page)).To(Succeed())
				Expect(page.Entries).To(HaveLen(1))
				rec = hs.api(http.MethodGet, "/api/v1/seed/entry?"+url.Values{"ref": {page.Entries[0].Ref}}.Encode(), aliceToken, nil)
				Expect(rec.Code).To(Equal(http.StatusOK))
				Expect(decodeJSON(rec)["entry"]).To(ContainSubstring("card network down"))

				rec = hs.api(http.MethodPost, "/api/v1/seed/requeue", aliceToken, map[string]any{"filter": map[string][]string{"severity": {"high"}}, "dry_run": true})
				Expect(rec.Code).To(Equal(http.StatusOK), rec.Body.String())
				count := decodeJSON(rec)
				Expect(count["stated"]).To(BeNumerically("==", 1))
				rec = hs.api(http.MethodPost, "/api/v1/seed/requeue", aliceToken, map[string]any{"filter": map[string][]string{"severity": {"high"}},
					"cutoff": count["cutoff"], "stated": 1})
				Expect(rec.Code).To(Equal(http.StatusOK), rec.Body.String())
				Expect(decodeJSON(rec)["moved"]).To(BeNumerically("==", 1))
				Expect(c.LLen(ctx, "t:default").Val()).To(Equal(int64(1)))
				rec = hs.api(http.MethodPost, "/api/v1/seed/requeue", aliceToken, map[string]any{"ref": page.Entries[0].Ref})
				Expect(rec.Code).To(Equal(http.StatusOK))
				Expect(decodeJSON(rec)["outcome"]).To(Equal("already-reprocessing"))
				rec = hs.api(http.MethodPost, "/api/v1/seed/requeue", aliceToken, map[string]any{"filter": map[string][]string{"severity": {"high"}}})
				Expect(rec.Code).To(Equal(http.StatusBadRequest))
				Expect(decodeJSON(rec)["field"]).To(Equal("stated"))
				fmt.Fprintln(GinkgoWriter, hs.log.lines())
			})
		})
	}
})
