package ui_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/ui"
)

var _ = Describe("the dashboard's depth trend", func() {
	for _, ln := range lanes {
		Context("on "+ln.name, func() {
			var hs *harness
			BeforeEach(func() { hs = newHarness(ln.url(), ui.Config{}) })

			record := func(ago time.Duration, waiting, high int) {
				GinkgoHelper()
				Expect(hs.store.RecordDepth(context.Background(), dlq.DepthSample{
					At: time.Now().Add(-ago), Waiting: waiting, BySeverity: map[string]int{"high": high, "medium": waiting - high},
				})).To(Succeed())
			}
			pointsRE := regexp.MustCompile(`class="line-total" points="([^"]*)"`)

			It("says where samples come from while there are none", func() {
				rec := hs.get("/")
				Expect(rec.Code).To(Equal(http.StatusOK))
				body := rec.Body.String()
				Expect(body).To(ContainSubstring(`id="trend-empty"`))
				Expect(body).To(ContainSubstring("No samples yet: the DLQ monitor writes them"))
				Expect(body).NotTo(ContainSubstring("<svg"))
			})

			It("draws the samples of the chosen span as an SVG line chart, without script", func() {
				record(30*time.Hour, 99, 0) // outside 24h
				for i := 0; i <= 120; i += 10 {
					record(time.Duration(120-i)*time.Minute, i/10, i/40)
				}
				rec := hs.get("/?hours=6")
				Expect(rec.Code).To(Equal(http.StatusOK))
				body := rec.Body.String()
				Expect(body).To(ContainSubstring(`<svg id="trend-chart"`))
				Expect(body).To(ContainSubstring("13 samples"))
				Expect(body).To(ContainSubstring("peak 12"))
				m := pointsRE.FindStringSubmatch(body)
				Expect(m).NotTo(BeNil())
				Expect(strings.Fields(m[1])).To(HaveLen(13), "one point per sample at this width")
				Expect(body).To(ContainSubstring(`class="line-high"`))
				Expect(body).NotTo(MatchRegexp(`<script>|<script [^s]|\son[a-z]+=`), "no inline script or handler")

				rec = hs.get("/?hours=72")
				Expect(rec.Code).To(Equal(http.StatusOK))
				Expect(rec.Body.String()).To(ContainSubstring("14 samples"))
				Expect(rec.Body.String()).To(ContainSubstring("peak 99"))
			})

			It("keeps one point per column of the chart, the highest, over a week of samples", func() {
				for i := range 2000 {
					record(time.Duration(2000-i)*5*time.Minute, i%7, 0)
				}
				rec := hs.get("/?hours=168")
				Expect(rec.Code).To(Equal(http.StatusOK))
				m := pointsRE.FindStringSubmatch(rec.Body.String())
				Expect(m).NotTo(BeNil())
				Expect(len(strings.Fields(m[1]))).To(BeNumerically("<=", 800))
				Expect(rec.Body.String()).To(ContainSubstring("peak 6"))
			})

			It("refuses an hours value it does not offer, naming the field", func() {
				rec := hs.get("/?hours=5")
				Expect(rec.Code).To(Equal(http.StatusBadRequest))
				Expect(rec.Body.String()).To(ContainSubstring("hours"))
				Expect(rec.Body.String()).To(ContainSubstring("1, 3, 6, 12, 24, 72, 168"))
			})

			It("says so when the store keeps no depth samples", func() {
				other := newHarnessOn(hs, func(c *ui.Config) { c.Store = bare{hs.store} })
				rec := other.get("/")
				Expect(rec.Code).To(Equal(http.StatusOK))
				Expect(rec.Body.String()).To(ContainSubstring("dlq.DepthRecorder"))
			})
		})
	}
})

var _ = Describe("the API's depth samples", func() {
	It("answers the samples of the span, oldest first, and refuses a span it does not offer", func() {
		hs := newHarness(lanes[0].url(), ui.Config{Tokens: map[string]string{"alice": aliceToken}})
		for _, ago := range []time.Duration{2 * time.Hour, time.Hour, time.Minute} {
			Expect(hs.store.RecordDepth(context.Background(), dlq.DepthSample{At: time.Now().Add(-ago), Waiting: int(ago / time.Minute)})).To(Succeed())
		}
		rec := hs.api(http.MethodGet, "/api/v1/depth?hours=1", aliceToken, nil)
		Expect(rec.Code).To(Equal(http.StatusOK), rec.Body.String())
		body := decodeJSON(rec)
		Expect(body["hours"]).To(BeNumerically("==", 1))
		Expect(body["samples"]).To(HaveLen(1))
		rec = hs.api(http.MethodGet, "/api/v1/depth?hours=3", aliceToken, nil)
		Expect(decodeJSON(rec)["samples"]).To(HaveLen(3))
		rec = hs.api(http.MethodGet, "/api/v1/depth?hours=2", aliceToken, nil)
		Expect(rec.Code).To(Equal(http.StatusBadRequest))
		Expect(decodeJSON(rec)["field"]).To(Equal("hours"))
	})
})
