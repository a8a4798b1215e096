package demo_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/cmd/faultline/internal/demo"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/memstore"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/reference/store/redisstore/redistest"
	"github.com/faultline/faultline/ui"
)

func TestDemo(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Demo Suite")
}

func play(seed uint64) string {
	GinkgoHelper()
	var out bytes.Buffer
	err := demo.Run(context.Background(), &out, demo.Options{Seed: seed, Name: "memory",
		NewBackend: func(cfg store.Config) (demo.Backend, error) { return memstore.New(cfg) }})
	Expect(err).NotTo(HaveOccurred(), out.String())
	return out.String()
}

var _ = Describe("the payment challenge", func() {
	It("reaches the seed's outcomes and accounts for every job, the same way every time", func() {
		out := play(1)
		Expect(out).To(ContainSubstring("attempt 1: permanent/low/data (card-declined) → dead-lettered (permanent)"))
		Expect(out).To(ContainSubstring("attempt 1: indeterminate/medium/dependency (payment-timeout) → dead-lettered (indeterminate-without-key)"))
		Expect(out).To(ContainSubstring("attempt 4: transient/medium/dependency (http-timeout) → dead-lettered (exhausted)"), "DLQ after 3 retries")
		Expect(out).To(ContainSubstring("attempt 1: critical/high/auth (auth-status) → dead-lettered (critical)"))
		Expect(out).To(ContainSubstring("on-call ← [FIRING high] charge job pay-12 dead-lettered on payment-gateway: http 401 Unauthorized: invalid api key [REDACTED]"))
		Expect(out).To(ContainSubstring("breaker open: diverted to the batch queue"))
		Expect(out).To(ContainSubstring("breaker payment-gateway: half-open → closed (probes-succeeded)"))
		Expect(out).To(ContainSubstring("operator: reprocessed 1 transient medium-severity jobs from the DLQ"))
		Expect(out).To(ContainSubstring("operator: left pay-3 in the DLQ: its charge timed out with no idempotency key"),
			"a timed-out charge without a key is never requeued as if that were safe")
		pay3 := out[strings.Index(out, "pay-3 —"):]
		pay3 = pay3[:strings.Index(pay3, "\n\n")]
		Expect(pay3).NotTo(ContainSubstring("requeued from the DLQ"), "pay-3's timed-out charge is not requeued")
		Expect(pay3).NotTo(ContainSubstring("attempt 2"), "pay-3 is never charged again")
		Expect(out).To(MatchRegexp(`every job accounted for: 13 created = \d+ succeeded \+ \d+ in the DLQ .* ✓`))
		Expect(out).NotTo(ContainSubstring("sk_live_51Hdemo"), "secrets never printed")

		Expect(play(1)).To(Equal(out), "same seed, same report, byte for byte")
		Expect(play(2)).NotTo(Equal(out), "another seed draws other jitter")
	})
})

var _ = Describe("what the demo prints", func() {
	It("has every secret masked, whatever the store holds", func() {
		var out bytes.Buffer
		err := demo.Run(context.Background(), &out, demo.Options{Seed: 1, Name: "redis at redis://:h6RedisPw@cache:6379 (Bearer h6BearerTok3n0123456789)",
			NewBackend: func(cfg store.Config) (demo.Backend, error) { return memstore.New(cfg) }})
		Expect(err).NotTo(HaveOccurred())
		Expect(out.String()).To(ContainSubstring("on redis at redis://:[REDACTED]@cache:6379 (Bearer [REDACTED])"))
		Expect(out.String()).NotTo(ContainSubstring("h6RedisPw"))
		Expect(out.String()).NotTo(ContainSubstring("h6BearerTok3n0123456789"))
		Expect(out.String()).NotTo(ContainSubstring("4242 4242 4242 4242"), "the charges' card number")
	})
})

var _ = Describe("the demo in the web UI", func() {
	// dashboard plays the demo on a miniredis-backed store, as faultline
	// demo --backend redis does, and serves the UI on it at now.
	dashboard := func(opts demo.Options, now time.Time, path string) string {
		GinkgoHelper()
		client := redisstore.NewClient(redistest.Mini(GinkgoRandomSeed()).Addr())
		DeferCleanup(client.Close)
		var backend demo.Backend
		opts.Name = "miniredis"
		opts.NewBackend = func(cfg store.Config) (demo.Backend, error) {
			b, err := redisstore.New(client, cfg)
			backend = b
			return b, err
		}
		var out bytes.Buffer
		Expect(demo.Run(context.Background(), &out, opts)).To(Succeed(), out.String())
		h, err := ui.New(ui.Config{Store: backend, Namespace: "demo", Now: func() time.Time { return now }})
		Expect(err).NotTo(HaveOccurred())
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8080"+path, nil))
		Expect(rec.Code).To(Equal(http.StatusOK))
		return rec.Body.String()
	}

	It("leaves a depth trend for the dashboard's chart: the last 24 hours, ending at the DLQ's depth", func() {
		end := demo.Start.Add(5 * time.Minute)
		body := dashboard(demo.Options{Seed: 1}, end, "/?hours=24")
		Expect(body).To(ContainSubstring(`<svg id="trend-chart"`))
		Expect(body).NotTo(ContainSubstring(`id="trend-empty"`))
		m := regexp.MustCompile(`(\d+) samples, the newest at [^:]+:\d\d:\d\dZ: (\d+) waiting; peak (\d+)`).FindStringSubmatch(body)
		Expect(m).NotTo(BeNil(), "the chart's legend")
		n, _ := strconv.Atoi(m[1])
		Expect(n).To(BeNumerically(">=", 24*4), "a sample every quarter hour at least")
		total := regexp.MustCompile(`<strong id="total">(\d+)</strong>`).FindStringSubmatch(body)
		Expect(total).NotTo(BeNil())
		waiting, _ := strconv.Atoi(m[2])
		all, _ := strconv.Atoi(total[1])
		Expect(waiting).To(And(BeNumerically(">", 0), BeNumerically("<=", all)), "the DLQ the demo leaves: its failed and quarantined entries")
		Expect(m[3]).To(Equal(m[2]), "the trend climbs to the depth the demo leaves")
	})

	It("ends the trend at the wall clock it is given, so faultline ui, on today's clock, draws it", func() {
		now := time.Date(2026, 12, 7, 2, 30, 0, 0, time.UTC)
		body := dashboard(demo.Options{Seed: 1, Now: func() time.Time { return now }}, now.Add(time.Minute), "/")
		Expect(body).To(ContainSubstring(`<svg id="trend-chart"`))
		Expect(body).To(ContainSubstring("the newest at 2026-12-07 02:30:00Z"))
	})
})
