package alert_test

import (
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/alert/sink"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/clock"
)

// slackServer plays Slack's incoming webhook: each request takes the next
// scripted answer; once the script is used up it answers "ok".
type slackServer struct {
	*httptest.Server
	mu      sync.Mutex
	script  []func(w http.ResponseWriter)
	bodies  [][]byte
	release chan struct{}
}

func newSlackServer(script ...func(w http.ResponseWriter)) *slackServer {
	GinkgoHelper()
	s := &slackServer{script: script, release: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		var answer func(http.ResponseWriter)
		if len(s.script) > 0 {
			answer, s.script = s.script[0], s.script[1:]
		}
		if answer == nil {
			s.bodies = append(s.bodies, body)
		}
		s.mu.Unlock()
		if answer == nil {
			_, _ = io.WriteString(w, "ok")
			return
		}
		answer(w)
	}))
	DeferCleanup(func() {
		close(s.release) // let a hanging handler return before Close waits on it
		s.Close()
	})
	return s
}

func (s *slackServer) accepted() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.bodies...)
}

func answer(code int, body string, header ...string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}

var _ = Describe("Alerter delivering to Slack over HTTP", func() {
	var (
		clk *clock.Virtual
		ops *sink.Memory
	)
	BeforeEach(func() {
		clk = clock.NewVirtual(t0)
		ops = &sink.Memory{}
	})

	newAlerter := func(srv *slackServer) *alert.Alerter {
		GinkgoHelper()
		slack, err := sink.NewSlack(sink.SlackConfig{URL: srv.URL + "/services/T000/B000/SUPERSECRET", Timeout: 300 * time.Millisecond})
		Expect(err).NotTo(HaveOccurred())
		a, err := alert.New(alert.Config{
			Receivers:       []alert.Receiver{{Name: "slack", Sink: slack, Fallback: "ops"}, {Name: "ops", Sink: ops}},
			DefaultReceiver: "slack",
			Redactor:        maskRedactor{},
		}, clk, rand.New(rand.NewPCG(3, 4)))
		Expect(err).NotTo(HaveOccurred())
		return a
	}
	critical := func(a *alert.Alerter) {
		a.JobFailed(alert.Failure{JobID: "pay-1", Task: "charge", Dependency: "payment-gateway", Class: classify.Critical,
			Severity: classify.High, Source: classify.Auth, Attempts: 1, Err: "401 invalid api key"})
	}

	It("redelivers after 429 (both Retry-After forms), 500 and a hanging answer, and loses nothing", func() {
		srv := newSlackServer(
			answer(429, "rate_limited", "Retry-After", "30"),
			answer(500, "oops"),
			answer(429, "rate_limited", "Retry-After", t0.Add(2*time.Minute).Format(http.TimeFormat)),
			nil, // filled below: hangs until the client times out
		)
		srv.script[3] = func(w http.ResponseWriter) { <-srv.release }
		a := newAlerter(srv)
		critical(a)

		clk.RunUntil(t0.Add(30 * time.Second)) // group wait → attempt 1: 429, Retry-After 30s
		Expect(srv.accepted()).To(BeEmpty())
		clk.RunUntil(t0.Add(60 * time.Second)) // attempt 2: 500, backoff ≤ 2s
		clk.RunUntil(t0.Add(63 * time.Second)) // attempt 3: 429 until t0+2m
		Expect(srv.accepted()).To(BeEmpty())
		clk.RunUntil(t0.Add(2 * time.Minute)) // attempt 4 hangs; the client gives up
		Expect(srv.accepted()).To(BeEmpty())
		clk.RunUntil(t0.Add(3 * time.Minute)) // attempt 5: ok
		Expect(srv.accepted()).To(HaveLen(1))
		Expect(string(srv.accepted()[0])).To(ContainSubstring("charge"))
		st := a.Stats()
		Expect(st.FailedRetryable).To(Equal(uint64(4)))
		Expect(st.Sent).To(Equal(uint64(1)))
		Expect(a.Pending()).To(BeEmpty())
	})

	DescribeTable("holds messages for a misconfigured Slack, copies them to the fallback receiver at once and tells it why",
		func(code int, body string) {
			srv := newSlackServer(answer(code, body), answer(code, body))
			a := newAlerter(srv)
			critical(a)
			clk.RunUntil(t0.Add(30 * time.Second)) // the group wait: refused
			Expect(srv.accepted()).To(BeEmpty())
			Expect(a.Pending()).To(HaveLen(1), "the page is kept for Slack")
			var names []string
			for _, n := range ops.Sent() {
				for _, x := range n.Alerts {
					names = append(names, x.Name)
					if x.Name == alert.NameReceiverMisconfigure {
						Expect(x.Summary).To(ContainSubstring(body))
						Expect(x.Summary).NotTo(ContainSubstring("SUPERSECRET"))
					}
				}
			}
			Expect(names).To(ConsistOf(alert.NameJobFailed, alert.NameReceiverMisconfigure), "the page's copy and the refusal, at once")

			clk.RunUntil(t0.Add(20 * time.Minute)) // fixed after the second refusal
			Expect(srv.accepted()).To(HaveLen(2), "the held page, then its resolution, in that order")
			Expect(string(srv.accepted()[0])).To(ContainSubstring(`"text":"[FIRING:1] high`))
			Expect(string(srv.accepted()[1])).To(ContainSubstring(`"text":"[RESOLVED:1] high`))
			Expect(a.Pending()).To(BeEmpty())
			var told []string
			for _, n := range ops.Sent() {
				for _, x := range n.Alerts {
					told = append(told, x.Name+":"+x.Status.String())
				}
			}
			Expect(told).To(ConsistOf(
				alert.NameJobFailed+":firing", alert.NameReceiverMisconfigure+":firing",
				alert.NameJobFailed+":resolved", alert.NameReceiverMisconfigure+":resolved",
			), "the fallback that took the page hears it resolved, and that Slack is fixed")
		},
		Entry("403 invalid_token", 403, "invalid_token"),
		Entry("410 channel_is_archived", 410, "channel_is_archived"),
	)
})
