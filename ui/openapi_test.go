package ui_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"sort"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/ui"
)

var _ = Describe("the API's OpenAPI document", func() {
	var (
		hs  *harness
		doc map[string]any
	)
	BeforeEach(func() {
		hs = newHarness(lanes[0].url(), ui.Config{Tokens: map[string]string{"alice": aliceToken}})
		rec := hs.api(http.MethodGet, "/api/v1/openapi.json", "", nil)
		Expect(rec.Code).To(Equal(http.StatusOK), "served without a token: it holds no data")
		Expect(rec.Header().Get("Content-Type")).To(Equal("application/json"))
		Expect(json.Unmarshal(rec.Body.Bytes(), &doc)).To(Succeed())
	})

	It("is OpenAPI 3.1 with bearer authentication", func() {
		Expect(doc["openapi"]).To(HavePrefix("3.1."))
		Expect(doc).To(HaveKeyWithValue("security", ConsistOf(HaveKey("bearer"))))
		Expect(doc).To(HaveKeyWithValue("components", HaveKeyWithValue("securitySchemes",
			HaveKeyWithValue("bearer", SatisfyAll(HaveKeyWithValue("type", "http"), HaveKeyWithValue("scheme", "bearer"))))))
		Expect(ui.OpenAPI()).To(MatchJSON(hs.api(http.MethodGet, "/api/v1/openapi.json", "", nil).Body.Bytes()))
	})

	It("describes every API route the router serves, and no other, in both layouts", func() {
		patterns := func(h http.Handler) []string {
			var out []string
			for _, p := range ui.APIPatterns(h) {
				method, path, ok := strings.Cut(p, " ")
				Expect(ok).To(BeTrue(), "pattern %q has a method", p)
				out = append(out, strings.ToLower(method)+" "+path)
			}
			sort.Strings(out)
			return out
		}
		seedHS, _ := newSeedHarness(lanes[0].url(), true, map[string]string{"alice": aliceToken})
		var faultline, seedOps []string
		for path, item := range doc["paths"].(map[string]any) {
			for method, op := range item.(map[string]any) {
				tags, _ := op.(map[string]any)["tags"].([]any)
				switch {
				case path == "/api/v1/openapi.json":
					faultline = append(faultline, method+" "+path)
					seedOps = append(seedOps, method+" "+path)
				case len(tags) > 0 && tags[0] == "seed layout":
					seedOps = append(seedOps, method+" "+path)
				default:
					faultline = append(faultline, method+" "+path)
				}
			}
		}
		sort.Strings(faultline)
		sort.Strings(seedOps)
		Expect(faultline).To(Equal(patterns(hs.h)), "faultline's layout: the router's API routes and the document's operations")
		Expect(seedOps).To(Equal(patterns(seedHS.h)), "the seed layout: the router's API routes and the document's operations tagged seed layout")
	})

	It("says reads go without a token on loopback when the server has no --tokens, and moves never do", func() {
		Expect(doc["info"].(map[string]any)["description"]).To(ContainSubstring("without --tokens"))
		for path, item := range doc["paths"].(map[string]any) {
			for method, op := range item.(map[string]any) {
				sec, declared := op.(map[string]any)["security"]
				switch {
				case path == "/api/v1/openapi.json":
					Expect(sec).To(BeEmpty(), "the document needs no token")
				case method == "get":
					Expect(sec).To(ConsistOf(HaveKey("bearer"), BeEmpty()), "%s %s: a bearer token, or none on loopback without --tokens", method, path)
				default:
					Expect(declared).To(BeFalse(), "%s %s: the document's bearer token, always", method, path)
				}
			}
		}
		Expect(doc["components"].(map[string]any)["responses"].(map[string]any)["Unauthorized"].(map[string]any)["description"]).
			To(ContainSubstring("a move without --tokens"))
	})

	It("declares each route's path parameters, and every reference resolves", func() {
		param := regexp.MustCompile(`\{([a-z_]+)\}`)
		for path, item := range doc["paths"].(map[string]any) {
			for method, op := range item.(map[string]any) {
				var declared []string
				params, _ := op.(map[string]any)["parameters"].([]any)
				for _, p := range params {
					if p.(map[string]any)["in"] == "path" {
						declared = append(declared, p.(map[string]any)["name"].(string))
					}
				}
				var want []string
				for _, m := range param.FindAllStringSubmatch(path, -1) {
					want = append(want, m[1])
				}
				Expect(declared).To(ConsistOf(want), "%s %s's path parameters", method, path)
				Expect(op).To(HaveKey("responses"), "%s %s", method, path)
			}
		}
		raw, err := json.Marshal(doc)
		Expect(err).NotTo(HaveOccurred())
		comps := doc["components"].(map[string]any)
		for _, m := range regexp.MustCompile(`"\$ref":"#/components/([a-zA-Z]+)/([a-zA-Z]+)"`).FindAllStringSubmatch(string(raw), -1) {
			Expect(comps).To(HaveKeyWithValue(m[1], HaveKey(m[2])), "the reference %s/%s", m[1], m[2])
		}
	})
})
