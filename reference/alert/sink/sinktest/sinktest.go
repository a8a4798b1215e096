// Package sinktest is a conformance suite for alert.Sink implementations
// that deliver over HTTP: it runs a sink against a local server playing every
// answer a receiver gives (accepted, rate limited with either form of
// Retry-After, down, misconfigured, hanging, gone) and checks the alert.Sink
// error contract, including that the URL, a credential, never leaks.
//
// Call DescribeHTTPSink at the top level of a Ginkgo suite:
//
//	var _ = sinktest.DescribeHTTPSink("Slack", func(url string, timeout time.Duration) (alert.Sink, error) {
//		return sink.NewSlack(sink.SlackConfig{URL: url, Timeout: timeout})
//	})
package sinktest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/failure"
)

// Secret is the part of the servers' URLs that must never appear in an
// error or in a sink's fmt output.
const Secret = "SUPERSECRET"

// SecretPath is the path the servers' URLs end in, shaped like a Slack
// incoming webhook's.
const SecretPath = "/services/T000/B000/" + Secret

// RetryAfterDate is the HTTP-date form of Retry-After the rate-limited
// server sends. It is fixed, so no test reads the clock.
const RetryAfterDate = "Wed, 21 Oct 2015 07:28:00 GMT"

// Timeouts of the contract's specs.
const (
	// SendTimeout is the client timeout of specs whose server answers.
	SendTimeout = 5 * time.Second
	// HangTimeout is the client timeout of the spec whose server never
	// answers: short, so the spec is quick.
	HangTimeout = 200 * time.Millisecond
)

// NewHTTPSink builds the sink under test, posting to url with the given
// client timeout.
type NewHTTPSink func(url string, timeout time.Duration) (alert.Sink, error)

// Notification returns a small firing notification: two alerts on the
// payment gateway, one with jobs.
func Notification() alert.Notification {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	return alert.Notification{
		ID:       42,
		Receiver: "payments-oncall",
		GroupKey: `{dependency="payment-gateway"}`,
		Alerts: []alert.Alert{{
			Fingerprint: "fp-charge-critical",
			Name:        "job-failed",
			Severity:    classify.High,
			Labels: alert.Labels{
				alert.LabelAlertName:  "job-failed",
				alert.LabelTask:       "charge",
				alert.LabelClass:      "critical",
				alert.LabelDependency: "payment-gateway",
				alert.LabelSource:     "worker",
			},
			Summary:   "charge failed: authentication failed",
			Count:     3,
			FirstSeen: t0,
			LastSeen:  t0.Add(2 * time.Minute),
			Jobs: []alert.JobRef{{
				ID: "job-1", Task: "charge", Attempts: 5, Class: classify.Critical,
				Error: "http 401 Unauthorized: invalid api key", At: t0,
			}, {
				ID: "job-2", Task: "charge", Attempts: 2, Class: classify.Critical,
				Error: "http 401 Unauthorized", At: t0.Add(time.Minute),
			}},
		}, {
			Fingerprint: "fp-auth-transient",
			Name:        "job-failed",
			Severity:    classify.Medium,
			Labels: alert.Labels{
				alert.LabelTask:       "auth",
				alert.LabelClass:      "transient",
				alert.LabelDependency: "payment-gateway",
			},
			Summary:   "auth failing: connection refused",
			Count:     1,
			FirstSeen: t0.Add(time.Minute),
			LastSeen:  t0.Add(time.Minute),
		}},
		StillFiring: 1,
		CreatedAt:   t0.Add(3 * time.Minute),
		Attempt:     1,
	}
}

// answer is one way a receiver answers.
type answer struct {
	code       int
	retryAfter string
	body       string
}

// serve starts a server running handler, stopped when the
// spec ends, and returns its URL with SecretPath.
func serve(handler http.HandlerFunc) string {
	GinkgoHelper()
	srv := httptest.NewServer(handler)
	DeferCleanup(srv.Close)
	return srv.URL + SecretPath
}

// answering returns a handler that checks the request and answers with a.
func answering(a answer) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		defer GinkgoRecover()
		Expect(r.Method).To(Equal(http.MethodPost))
		Expect(r.URL.Path).To(Equal(SecretPath))
		Expect(r.Header.Get("Content-Type")).To(HavePrefix("application/json"))
		_, _ = io.Copy(io.Discard, r.Body)
		if a.retryAfter != "" {
			w.Header().Set("Retry-After", a.retryAfter)
		}
		w.WriteHeader(a.code)
		_, _ = io.WriteString(w, a.body)
	}
}

// ExpectNoSecret fails the spec if s contains Secret.
func ExpectNoSecret(s string) {
	GinkgoHelper()
	Expect(s).NotTo(ContainSubstring(Secret), "the URL's secret leaked")
}

// DescribeHTTPSink declares the contract's specs for the sinks newSink
// builds.
func DescribeHTTPSink(name string, newSink NewHTTPSink) bool {
	return Describe(name+" HTTP sink contract", func() {
		var ctx context.Context

		BeforeEach(func() {
			ctx = context.Background()
		})

		send := func(url string, timeout time.Duration) error {
			GinkgoHelper()
			s, err := newSink(url, timeout)
			Expect(err).NotTo(HaveOccurred())
			for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%d", "%q"} {
				ExpectNoSecret(fmt.Sprintf(verb, s))
			}
			err = s.Send(ctx, Notification())
			if err != nil {
				ExpectNoSecret(err.Error())
				ExpectNoSecret(fmt.Sprintf("%+v", err))
			}
			return err
		}

		DescribeTable("an accepting answer returns nil",
			func(a answer) {
				Expect(send(serve(answering(a)), SendTimeout)).To(Succeed())
			},
			Entry("200 ok", answer{code: http.StatusOK, body: "ok"}),
			Entry("202 Accepted", answer{code: http.StatusAccepted, body: `{"status":"success"}`}),
			Entry("204 No Content", answer{code: http.StatusNoContent}),
		)

		DescribeTable("an error answer returns a *failure.HTTPError with its code, headers and body",
			func(a answer, wantBody string) {
				err := send(serve(answering(a)), SendTimeout)
				Expect(err).To(HaveOccurred())
				var herr *failure.HTTPError
				Expect(errors.As(err, &herr)).To(BeTrue(), "not an HTTPError: %v", err)
				Expect(herr.Code).To(Equal(a.code))
				Expect(herr.RetryAfterHeader()).To(Equal(a.retryAfter))
				Expect(herr.Body).To(Equal(wantBody))
				Expect(len(herr.Body)).To(BeNumerically("<=", 256))
				if wantBody != "" {
					Expect(err.Error()).To(ContainSubstring(wantBody))
				}
			},
			Entry("429 with delay-seconds", answer{http.StatusTooManyRequests, "30", "rate_limited"}, "rate_limited"),
			Entry("429 with an HTTP date", answer{http.StatusTooManyRequests, RetryAfterDate, "rate_limited"}, "rate_limited"),
			Entry("429 without Retry-After", answer{http.StatusTooManyRequests, "", ""}, ""),
			Entry("500", answer{http.StatusInternalServerError, "", "internal_error\n"}, "internal_error"),
			Entry("503 with Retry-After", answer{http.StatusServiceUnavailable, "120", "maintenance"}, "maintenance"),
			Entry("400 invalid_payload", answer{http.StatusBadRequest, "", "invalid_payload"}, "invalid_payload"),
			Entry("403 invalid_token", answer{http.StatusForbidden, "", "invalid_token"}, "invalid_token"),
			Entry("404 no_service", answer{http.StatusNotFound, "", "no_service"}, "no_service"),
			Entry("410 channel_is_archived", answer{http.StatusGone, "", "channel_is_archived"}, "channel_is_archived"),
			Entry("304, a 3xx that is no redirect", answer{http.StatusNotModified, "", ""}, ""),
		)

		It("keeps at most 256 bytes of a long body", func() {
			body := strings.Repeat("é", 1000)
			err := send(serve(answering(answer{code: http.StatusBadGateway, body: body})), SendTimeout)
			var herr *failure.HTTPError
			Expect(errors.As(err, &herr)).To(BeTrue())
			Expect(len(herr.Body)).To(BeNumerically("<=", 256))
			Expect(herr.Body).To(HavePrefix("éé"))
			Expect(strings.ToValidUTF8(herr.Body, "?")).To(Equal(herr.Body), "the excerpt cut a rune")
		})

		It("redacts the URL a server echoes in its body", func() {
			err := send(serve(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.WriteHeader(http.StatusNotFound)
				_, _ = fmt.Fprintf(w, "Cannot POST %s", r.URL.Path)
			}), SendTimeout)
			var herr *failure.HTTPError
			Expect(errors.As(err, &herr)).To(BeTrue())
			Expect(herr.Body).To(Equal("Cannot POST /services/****"))
			ExpectNoSecret(herr.Body)
		})

		It("returns a timeout, not an HTTPError, when the server hangs", func() {
			release := make(chan struct{})
			url := serve(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				select {
				case <-release:
				case <-r.Context().Done():
				}
			})
			DeferCleanup(func() { close(release) }) // before the server's Close
			err := send(url, HangTimeout)
			Expect(err).To(HaveOccurred())
			var herr *failure.HTTPError
			Expect(errors.As(err, &herr)).To(BeFalse(), "a timeout is not an HTTP answer")
			var nerr net.Error
			timedOut := errors.As(err, &nerr) && nerr.Timeout() || errors.Is(err, context.DeadlineExceeded)
			Expect(timedOut).To(BeTrue(), "not a timeout: %v", err)
		})

		It("returns the connection error, not an HTTPError, when nothing listens", func() {
			srv := httptest.NewServer(http.NotFoundHandler())
			url := srv.URL + SecretPath
			srv.Close()
			err := send(url, SendTimeout)
			Expect(err).To(HaveOccurred())
			var herr *failure.HTTPError
			Expect(errors.As(err, &herr)).To(BeFalse())
			var operr *net.OpError
			Expect(errors.As(err, &operr)).To(BeTrue(), "not a network error: %v", err)
		})

		It("returns the context's error when it is canceled", func() {
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(ctx)
			cancel()
			err := send(serve(answering(answer{code: http.StatusOK, body: "ok"})), SendTimeout)
			Expect(err).To(MatchError(context.Canceled))
		})
	})
}
