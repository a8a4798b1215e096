package ui_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/fleet"
	"github.com/faultline/faultline/ui"
)

// sample returns the value of the series of name whose labels include
// every label given ("k", "v", ...), or -1 when there is none.
func sample(body, name string, labels ...string) float64 {
	GinkgoHelper()
	re := `(?m)^` + regexp.QuoteMeta(name) + `\{((?:[^"}]|"[^"]*")*)\} (\S+)$`
	for _, m := range regexp.MustCompile(re).FindAllStringSubmatch(body, -1) {
		ok := true
		for i := 0; i+1 < len(labels); i += 2 {
			if !regexp.MustCompile(`(^|,)` + regexp.QuoteMeta(labels[i]) + `="` + regexp.QuoteMeta(labels[i+1]) + `"`).MatchString(m[1]) {
				ok = false
			}
		}
		if ok {
			v, err := strconv.ParseFloat(m[2], 64)
			Expect(err).NotTo(HaveOccurred())
			return v
		}
	}
	return -1
}

// packageNames are the names package metrics defines (its doc's table).
var packageNames = []string{"faultline_job_moves_total", "faultline_jobs", "faultline_dlq_depth", "faultline_dlq_oldest_age_seconds",
	"faultline_pages_total", "faultline_notifications_total", "faultline_breaker_state", "faultline_fault_active",
	"faultline_fault_hits_total", "faultline_dlq_requeues_total", "faultline_dlq_deletes_total", "faultline_errors_total",
	"faultline_request_duration_seconds", "faultline_label_values_bucketed_total",
	"faultline_fleet_leader", "faultline_fleet_leader_term", "faultline_fleet_relay_backlog"}

var _ = Describe("the UI's /metrics", func() {
	for _, ln := range lanes {
		Context("on "+ln.name, func() {
			var hs *harness
			BeforeEach(func() { hs = newHarness(ln.url(), ui.Config{}) })
			scrape := func() string {
				GinkgoHelper()
				rec := hs.get("/metrics")
				Expect(rec.Code).To(Equal(http.StatusOK))
				return rec.Body.String()
			}

			It("serves the DLQ's depth by severity and oldest age, under the drills' names and labels", func() {
				body := scrape()
				Expect(sample(body, "faultline_dlq_depth", "severity", "high", "namespace", "ops")).To(Equal(1.0))
				Expect(sample(body, "faultline_dlq_depth", "severity", "medium")).To(Equal(2.0))
				Expect(sample(body, "faultline_dlq_depth", "severity", "low")).To(Equal(1.0))
				Expect(sample(body, "faultline_dlq_depth", "severity", "none")).To(Equal(0.0))
				Expect(sample(body, "faultline_dlq_oldest_age_seconds", "namespace", "ops")).To(BeNumerically(">", 40*60))
				names := regexp.MustCompile(`(?m)^# TYPE (\S+) `).FindAllStringSubmatch(body, -1)
				Expect(names).NotTo(BeEmpty())
				for _, n := range names {
					Expect(n[1]).To(BeElementOf(packageNames), "a name of package metrics")
				}
			})

			It("counts requeues, deletes and failed actions by action, and request latency by route pattern", func() {
				tok := hs.csrf()
				Expect(hs.postForm("/entries/ord-2/requeue", url.Values{"csrf": {tok}}).Code).To(Equal(http.StatusSeeOther))
				Expect(hs.postForm("/entries/ord-3/delete", url.Values{"csrf": {tok}}).Code).To(Equal(http.StatusSeeOther))
				Expect(hs.postForm("/entries/no-such-entry/requeue", url.Values{"csrf": {tok}}).Code).To(Equal(http.StatusNotFound))
				Expect(hs.postForm("/entries/ord-3/delete", url.Values{"csrf": {tok}}).Code).To(Equal(http.StatusConflict))

				body := scrape()
				Expect(sample(body, "faultline_dlq_requeues_total")).To(Equal(1.0))
				Expect(sample(body, "faultline_dlq_deletes_total")).To(Equal(1.0))
				Expect(sample(body, "faultline_errors_total", "op", "requeue")).To(Equal(1.0))
				Expect(sample(body, "faultline_errors_total", "op", "delete")).To(Equal(1.0))
				Expect(sample(body, "faultline_request_duration_seconds_count", "op", "POST /entries/{id}/requeue")).To(Equal(2.0))
				Expect(sample(body, "faultline_request_duration_seconds_count", "op", "GET /entries/{id}")).To(Equal(1.0))
				Expect(body).NotTo(ContainSubstring("ord-2"), "an entry's ID is never a label")
				Expect(body).NotTo(ContainSubstring("no-such-entry"))
			})

			It("shows the standalone workers' leader and the relay's backlog, on /metrics and the dashboard", func() {
				body := scrape()
				Expect(sample(body, "faultline_fleet_leader_term")).To(Equal(0.0), "never claimed")
				Expect(body).NotTo(ContainSubstring("faultline_fleet_leader{"))
				Expect(hs.get("/").Body.String()).To(ContainSubstring("none: no standalone worker (faultline worker --scenario) has claimed it; relay log: 0 waiting"))

				ctx := context.Background()
				_, err := hs.store.ClaimLeader(ctx, fleet.DefaultRole, "w2/77", time.Now(), time.Minute)
				Expect(err).NotTo(HaveOccurred())
				Expect(hs.store.AppendAlerts(ctx, [][]byte{[]byte(`{}`), []byte(`{}`)})).To(Succeed())
				body = scrape()
				Expect(sample(body, "faultline_fleet_leader", "worker", "w2/77")).To(Equal(1.0))
				Expect(sample(body, "faultline_fleet_leader_term")).To(Equal(1.0))
				Expect(sample(body, "faultline_fleet_relay_backlog")).To(Equal(2.0))
				Expect(hs.get("/").Body.String()).To(MatchRegexp(`id="leader">Fleet leader [^<]*: w2/77 \(term 1; its lease runs to [^<]*\); relay log: 2 waiting`))

				Expect(hs.store.ResignLeader(ctx, fleet.DefaultRole, "w2/77")).To(Succeed())
				body = scrape()
				Expect(body).NotTo(ContainSubstring("faultline_fleet_leader{"), "no leader, no series")
				Expect(hs.get("/").Body.String()).To(ContainSubstring("none: the last leader resigned (term 1)"))
			})

			It("takes a bearer token when the UI has tokens", func() {
				other := newHarnessOn(hs, func(c *ui.Config) { c.Tokens = map[string]string{"alice": aliceToken} })
				rec := other.api(http.MethodGet, "/metrics", "", nil)
				Expect(rec.Code).To(Equal(http.StatusUnauthorized))
				rec = other.api(http.MethodGet, "/metrics", bobToken, nil)
				Expect(rec.Code).To(Equal(http.StatusUnauthorized))
				rec = other.api(http.MethodGet, "/metrics", aliceToken, nil)
				Expect(rec.Code).To(Equal(http.StatusOK))
				Expect(sample(rec.Body.String(), "faultline_dlq_depth", "severity", "medium")).To(Equal(2.0))
			})
		})
	}
})
