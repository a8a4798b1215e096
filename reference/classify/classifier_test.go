package classify_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/failure"
)

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// deep wraps err n levels with %w, as real call stacks do.
func deep(err error, n int) error {
	for i := range n {
		err = fmt.Errorf("layer %d: %w", i, err)
	}
	return err
}

func httpErr(code int, retryAfter string) error {
	h := http.Header{}
	if retryAfter != "" {
		h.Set("Retry-After", retryAfter)
	}
	return &failure.HTTPError{Code: code, Header: h}
}

func jsonErr() error {
	var v map[string]any
	return json.Unmarshal([]byte("{not json"), &v)
}

func atoiErr() error {
	_, err := strconv.Atoi("forty-two")
	return err
}

var _ = Describe("Classifier with the default rules", func() {
	var c *classify.Classifier
	BeforeEach(func() { c = classify.Default() })

	type want struct {
		class    classify.Class
		severity classify.Severity
		source   classify.Source
		rule     string
	}
	expectClass := func(err error, scope classify.Scope, w want) {
		GinkgoHelper()
		got := c.Classify(err, scope)
		Expect(got.Class).To(Equal(w.class), "class of %q (rule %s)", err, got.Rule)
		Expect(got.Severity).To(Equal(w.severity), "severity of %q", err)
		Expect(got.Source).To(Equal(w.source), "source of %q", err)
		if w.rule != "" {
			Expect(got.Rule).To(Equal(w.rule))
		}
	}
	anywhere := classify.Scope{Dependency: "inventory-api", Task: "sync", Now: now}
	gateway := classify.Scope{Dependency: classify.PaymentGateway, Task: "charge", Now: now}
	smtp := classify.Scope{Dependency: "smtp", Task: "send-email", Now: now}
	stopping := classify.Scope{Dependency: "inventory-api", Task: "sync", Now: now, ShuttingDown: true}
	gatewayStopping := classify.Scope{Dependency: classify.PaymentGateway, Task: "charge", Now: now, ShuttingDown: true}

	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: &os.SyscallError{Syscall: "read", Err: syscall.ECONNRESET}}
	netTimeout := &url.Error{Op: "Post", URL: "https://api.example/v1", Err: &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}}

	DescribeTable("maps real-shaped errors, wrapped deep, to class, severity and source",
		func(err error, scope classify.Scope, w want) {
			expectClass(err, scope, w)
			expectClass(deep(err, 5), scope, w)
		},
		Entry("connection refused", refused, anywhere, want{classify.Transient, classify.Medium, classify.Network, "connection-error"}),
		Entry("connection reset", reset, anywhere, want{classify.Transient, classify.Medium, classify.Network, "connection-error"}),
		Entry("a read timeout inside url.Error", netTimeout, anywhere, want{classify.Transient, classify.Medium, classify.Network, "timeout"}),
		Entry("context.DeadlineExceeded", context.DeadlineExceeded, anywhere, want{classify.Transient, classify.Medium, classify.Network, "timeout"}),
		Entry("a DNS timeout", &net.DNSError{Err: "i/o timeout", Name: "api.example", IsTimeout: true}, anywhere, want{classify.Transient, classify.Medium, classify.Network, "timeout"}),
		Entry("a temporary DNS failure", &net.DNSError{Err: "server misbehaving", Name: "api.example", IsTemporary: true}, anywhere, want{classify.Transient, classify.Medium, classify.Network, "network-error"}),
		Entry("no such host (retried, but loud)", &net.DNSError{Err: "no such host", Name: "api.exmaple", IsNotFound: true}, anywhere, want{classify.Transient, classify.High, classify.System, "dns-not-found"}),
		Entry("401", httpErr(401, ""), anywhere, want{classify.Critical, classify.High, classify.Auth, "auth-status"}),
		Entry("403", httpErr(403, ""), anywhere, want{classify.Critical, classify.High, classify.Auth, "auth-status"}),
		Entry("402", httpErr(402, ""), anywhere, want{classify.Permanent, classify.Low, classify.Data, "card-declined"}),
		Entry("404", httpErr(404, ""), anywhere, want{classify.Permanent, classify.Low, classify.Data, "http-4xx"}),
		Entry("408", httpErr(408, ""), anywhere, want{classify.Transient, classify.Medium, classify.Dependency, "http-timeout"}),
		Entry("429", httpErr(429, "30"), anywhere, want{classify.RateLimited, classify.Medium, classify.Dependency, "rate-limited"}),
		Entry("500", httpErr(500, ""), anywhere, want{classify.Transient, classify.Medium, classify.Dependency, "http-5xx"}),
		Entry("503", httpErr(503, ""), anywhere, want{classify.Transient, classify.Medium, classify.Dependency, "http-5xx"}),
		Entry("504 from an SMTP relay", httpErr(504, ""), smtp, want{classify.Transient, classify.Medium, classify.Dependency, "http-timeout"}),
		Entry("504 from the payment gateway", httpErr(504, ""), gateway, want{classify.Indeterminate, classify.Medium, classify.Dependency, "payment-ambiguous-5xx"}),
		Entry("500 from the payment gateway", httpErr(500, ""), gateway, want{classify.Indeterminate, classify.Medium, classify.Dependency, "payment-ambiguous-5xx"}),
		Entry("503 from the payment gateway (not processed)", httpErr(503, ""), gateway, want{classify.Transient, classify.Medium, classify.Dependency, "http-5xx"}),
		Entry("a timeout from the payment gateway", context.DeadlineExceeded, gateway, want{classify.Indeterminate, classify.Medium, classify.Dependency, "payment-timeout"}),
		Entry("the gateway's own timeout error", &failure.TimeoutError{Op: "POST /v1/charges", After: 30 * time.Second}, gateway, want{classify.Indeterminate, classify.Medium, classify.Dependency, "payment-timeout"}),
		Entry("a refused dial to the payment gateway (nothing sent)", refused, gateway, want{classify.Transient, classify.Medium, classify.Network, "payment-dial-failed"}),
		Entry("a connection reset mid-charge", reset, gateway, want{classify.Indeterminate, classify.Medium, classify.Dependency, "payment-connection-lost"}),
		Entry("card declined: insufficient funds", &failure.CardError{Code: "card_declined", Decline: "insufficient_funds"}, gateway, want{classify.Permanent, classify.Low, classify.Data, "card-declined"}),
		Entry("card declined: do not honor", &failure.CardError{Code: "card_declined", Decline: "do_not_honor"}, gateway, want{classify.Permanent, classify.Low, classify.Data, "card-declined"}),
		Entry("expired card", &failure.CardError{Code: "expired_card"}, gateway, want{classify.Permanent, classify.Low, classify.Data, "card-declined"}),
		Entry("card declined: processing error", &failure.CardError{Code: "card_declined", Decline: "processing_error"}, gateway, want{classify.Transient, classify.Low, classify.Dependency, "card-decline-retryable"}),
		Entry("card declined: try again later", &failure.CardError{Code: "card_declined", Decline: "try_again_later"}, gateway, want{classify.Transient, classify.Low, classify.Dependency, "card-decline-retryable"}),
		Entry("authentication failure", failure.ErrAuthentication, gateway, want{classify.Critical, classify.High, classify.Auth, "auth-error"}),
		Entry("permission denied on a local file (the worker's host, not the dependency)", &fs.PathError{Op: "open", Path: "/etc/key", Err: fs.ErrPermission}, anywhere, want{classify.Critical, classify.High, classify.System, "permission-denied"}),
		Entry("an unknown certificate authority", x509.UnknownAuthorityError{}, anywhere, want{classify.Critical, classify.High, classify.System, "tls-certificate"}),
		Entry("bad data (ValueError)", failure.ErrInvalidInput, anywhere, want{classify.Permanent, classify.Low, classify.Data, "bad-data"}),
		Entry("missing key (KeyError)", failure.ErrMissingKey, anywhere, want{classify.Permanent, classify.Low, classify.Data, "bad-data"}),
		Entry("a number that is not one", atoiErr(), anywhere, want{classify.Permanent, classify.Low, classify.Data, "bad-data"}),
		Entry("malformed JSON", jsonErr(), anywhere, want{classify.Permanent, classify.Low, classify.Data, "bad-data-kind"}),
		Entry("unexpected EOF", io.ErrUnexpectedEOF, anywhere, want{classify.Transient, classify.Medium, classify.Network, "connection-error"}),
		Entry("a shutdown", context.Canceled, stopping, want{classify.Canceled, classify.Low, classify.System, "shutdown"}),
		Entry("a cancellation that is not a shutdown", context.Canceled, anywhere, want{classify.Transient, classify.Medium, classify.System, "canceled"}),
		Entry("a cancellation mid-charge, even at shutdown", context.Canceled, gatewayStopping, want{classify.Indeterminate, classify.Medium, classify.Dependency, "payment-canceled"}),
		Entry("an auth failure beside a cancellation (a fan-out)", errors.Join(httpErr(401, ""), fmt.Errorf("sibling: %w", context.Canceled)), anywhere, want{classify.Critical, classify.High, classify.Auth, "auth-status"}),
		Entry("a connection closed after the charge was sent (EOF)", &url.Error{Op: "Post", URL: "https://gw/v1/charges", Err: io.EOF}, gateway, want{classify.Indeterminate, classify.Medium, classify.Dependency, "payment-connection-lost"}),
		Entry("a read error from the gateway", &net.OpError{Op: "read", Net: "tcp", Err: errors.New("tls: bad record MAC")}, gateway, want{classify.Indeterminate, classify.Medium, classify.Dependency, "payment-network-error"}),
		Entry("anything else from the gateway", errors.New("flux capacitor misaligned"), gateway, want{classify.Indeterminate, classify.Medium, classify.Dependency, "payment-unknown"}),
		Entry("a text-only timeout from the gateway", errors.New("upstream timed out"), gateway, want{classify.Indeterminate, classify.Medium, classify.Dependency, "payment-unknown"}),
		Entry("job data quoted by a wrapper never matches a message rule", fmt.Errorf("parse sku %q: %w", "forbidden-fruit", errors.New("bad sku")), anywhere, want{classify.Transient, classify.Medium, classify.System, "fallback"}),
		Entry("a text-only timeout", errors.New("upstream timed out waiting for reply"), anywhere, want{classify.Transient, classify.Medium, classify.Network, "message-timeout"}),
		Entry("a text-only auth failure", errors.New("401 Unauthorized: invalid token"), anywhere, want{classify.Critical, classify.High, classify.Auth, "message-auth"}),
		Entry("something nobody foresaw", errors.New("flux capacitor misaligned"), anywhere, want{classify.Transient, classify.Medium, classify.System, "fallback"}),
		Entry("a joined error holding an auth failure", errors.Join(io.EOF, failure.ErrAuthentication), anywhere, want{classify.Critical, classify.High, classify.Auth, "auth-error"}),
	)

	It("returns the zero classification for a nil error", func() {
		Expect(c.Classify(nil, anywhere)).To(Equal(classify.Classification{}))
	})

	It("carries the status and resolves Retry-After given in seconds", func() {
		got := c.Classify(deep(httpErr(429, "120"), 3), anywhere)
		Expect(got.Status).To(Equal(429))
		Expect(got.RetryAfter).To(Equal(120 * time.Second))
	})

	It("resolves Retry-After given as an HTTP date against the scope's time", func() {
		date := now.Add(90 * time.Second).Format(http.TimeFormat)
		got := c.Classify(httpErr(429, date), anywhere)
		Expect(got.Class).To(Equal(classify.RateLimited))
		Expect(got.RetryAfter).To(Equal(90 * time.Second))
	})

	It("keeps a Retry-After hint on a 503 too", func() {
		got := c.Classify(httpErr(503, "7"), anywhere)
		Expect(got.Class).To(Equal(classify.Transient))
		Expect(got.RetryAfter).To(Equal(7 * time.Second))
	})

	It("reads a RetryAfter() hint set by the code that made the error", func() {
		got := c.Classify(failure.WithRetryAfter(httpErr(429, ""), 3*time.Second), anywhere)
		Expect(got.RetryAfter).To(Equal(3 * time.Second))
	})

	It("ignores a malformed Retry-After rather than guessing", func() {
		got := c.Classify(httpErr(429, "soon, probably"), anywhere)
		Expect(got.Class).To(Equal(classify.RateLimited))
		Expect(got.RetryAfter).To(BeZero())
	})

	It("lists its rules, and a change to the copy leaves the classifier alone", func() {
		rules := c.Rules()
		Expect(rules).NotTo(BeEmpty())
		for i := range rules {
			rules[i].Class = classify.Critical
		}
		Expect(c.Classify(httpErr(402, ""), anywhere).Class).To(Equal(classify.Permanent))
	})

	It("does not crash on an error whose methods panic (a typed nil)", func() {
		var typedNil *nilUnsafeError
		var err error = typedNil
		got := c.Classify(fmt.Errorf("charge: %w", err), gateway)
		Expect(got.Rule).To(Equal("panic"))
		Expect(got.Class).To(Equal(classify.Transient))
	})

	It("caps a RetryAfter() hint and ignores an HTTP date without a time to resolve it", func() {
		got := c.Classify(failure.WithRetryAfter(httpErr(429, ""), 1_000_000*time.Hour), anywhere)
		Expect(got.RetryAfter).To(Equal(365 * 24 * time.Hour))
		noTime := classify.Scope{Dependency: "x"}
		got = c.Classify(httpErr(429, now.Add(time.Minute).Format(http.TimeFormat)), noTime)
		Expect(got.RetryAfter).To(BeZero())
		got = c.Classify(httpErr(429, "12"), noTime)
		Expect(got.RetryAfter).To(Equal(12*time.Second), "seconds need no time")
	})
})

var _ = Describe("Classifier with custom rules", func() {
	It("applies rules in order, first match wins, within their scope", func() {
		c, err := classify.New(append([]classify.Rule{
			{Name: "smtp-any-5xx-is-permanent-for-newsletters", Dependency: "smtp-*", Task: "newsletter",
				Match: classify.Match{Status: []classify.StatusRange{{500, 599}}}, Class: classify.Permanent, Severity: classify.Low, Source: classify.Dependency},
		}, classify.DefaultRules()...))
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Classify(httpErr(503, ""), classify.Scope{Dependency: "smtp-eu", Task: "newsletter"}).Rule).To(Equal("smtp-any-5xx-is-permanent-for-newsletters"))
		Expect(c.Classify(httpErr(503, ""), classify.Scope{Dependency: "smtp-eu", Task: "receipt"}).Class).To(Equal(classify.Transient))
		Expect(c.Classify(httpErr(503, ""), classify.Scope{Dependency: "sms", Task: "newsletter"}).Class).To(Equal(classify.Transient))
	})

	It("requires every criterion of a match", func() {
		c, err := classify.New([]classify.Rule{{Name: "slow-429", Match: classify.Match{Status: []classify.StatusRange{classify.Status(429)}, RetryAfter: true},
			Class: classify.RateLimited, Severity: classify.Low, Source: classify.Dependency}})
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Classify(httpErr(429, "5"), classify.Scope{}).Rule).To(Equal("slow-429"))
		Expect(c.Classify(httpErr(429, ""), classify.Scope{}).Rule).To(Equal("fallback"))
	})

	It("matches a team's own error type once registered", func() {
		reg := classify.DefaultRegistry()
		Expect(reg.RegisterKind(classify.KindOf[*quotaError]("acme.QuotaError", nil))).To(Succeed())
		Expect(reg.RegisterKind(classify.KindOf[*quotaError]("acme.QuotaError", nil))).To(MatchError(classify.ErrDuplicateName))
		rs, err := classify.ParseRules("acme.yaml", []byte("rules:\n  - name: quota\n    match: {kind: [acme.QuotaError]}\n    class: rate-limited\n    severity: low\n    source: dependency\n"), reg)
		Expect(err).NotTo(HaveOccurred())
		c, err := rs.Classifier()
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Classify(deep(&quotaError{}, 2), classify.Scope{}).Class).To(Equal(classify.RateLimited))
	})

	It("refuses rules without a verdict, with a bad pattern or a bad status range, naming each", func() {
		_, err := classify.New([]classify.Rule{
			{Name: "no-class", Severity: classify.Low, Source: classify.Data},
			{Name: "bad-glob", Dependency: "pay[", Class: classify.Permanent, Severity: classify.Low, Source: classify.Data},
			{Name: "bad-status", Match: classify.Match{Status: []classify.StatusRange{{600, 700}}}, Class: classify.Permanent, Severity: classify.Low, Source: classify.Data},
			{Class: classify.Permanent, Severity: classify.Low, Source: classify.Data},
			{Name: "no-class", Class: classify.Permanent, Severity: classify.Low, Source: classify.Data},
		})
		Expect(err).To(HaveOccurred())
		var re *classify.RuleError
		Expect(errors.As(err, &re)).To(BeTrue())
		Expect(err.Error()).To(ContainSubstring("rules[0].class: a class is required"))
		Expect(err.Error()).To(ContainSubstring(`rules[1].dependency: bad pattern "pay["`))
		Expect(err.Error()).To(ContainSubstring("rules[2].match.status[0]: status range 600-700"))
		Expect(err.Error()).To(ContainSubstring("rules[3].name: a rule needs a name"))
		Expect(err.Error()).To(ContainSubstring(`rules[4].name: rule name "no-class" is also rules[0]'s`))
	})
})

type quotaError struct{}

func (*quotaError) Error() string { return "quota exceeded" }

var _ = Describe("names of classes, severities and sources", func() {
	It("round-trip through text and refuse unknown names", func() {
		for _, cl := range classify.Classes {
			b, err := cl.MarshalText()
			Expect(err).NotTo(HaveOccurred())
			var back classify.Class
			Expect(back.UnmarshalText(b)).To(Succeed())
			Expect(back).To(Equal(cl))
		}
		for _, s := range classify.Severities {
			v, err := classify.ParseSeverity(s.String())
			Expect(err).NotTo(HaveOccurred())
			Expect(v).To(Equal(s))
		}
		for _, s := range classify.Sources {
			v, err := classify.ParseSource(s.String())
			Expect(err).NotTo(HaveOccurred())
			Expect(v).To(Equal(s))
		}
		v, err := classify.ParseClass("Rate_Limited")
		Expect(err).NotTo(HaveOccurred())
		Expect(v).To(Equal(classify.RateLimited))
		_, err = classify.ParseClass("fatal")
		Expect(err).To(MatchError(`unknown class "fatal" (allowed: transient, rate-limited, indeterminate, permanent, critical, canceled)`))
		Expect(classify.Class(200).String()).To(Equal("class(200)"))
		_, err = classify.Class(200).MarshalText()
		Expect(err).To(HaveOccurred())
	})

	It("says which classes can be retried at all", func() {
		Expect(classify.Transient.Retryable()).To(BeTrue())
		Expect(classify.RateLimited.Retryable()).To(BeTrue())
		Expect(classify.Indeterminate.Retryable()).To(BeTrue())
		Expect(classify.Permanent.Retryable()).To(BeFalse())
		Expect(classify.Critical.Retryable()).To(BeFalse())
		Expect(classify.Canceled.Retryable()).To(BeFalse())
	})
})

var _ = Describe("ParseRetryAfter", func() {
	DescribeTable("reads both forms and refuses garbage",
		func(v string, d time.Duration, ok bool) {
			got, gotOK := classify.ParseRetryAfter(v, now)
			Expect(gotOK).To(Equal(ok))
			Expect(got).To(Equal(d))
		},
		Entry("seconds", "120", 120*time.Second, true),
		Entry("zero", "0", time.Duration(0), true),
		Entry("padded", "  5 ", 5*time.Second, true),
		Entry("an HTTP date", now.Add(time.Hour).Format(http.TimeFormat), time.Hour, true),
		Entry("a date in the past", now.Add(-time.Hour).Format(http.TimeFormat), time.Duration(0), true),
		Entry("an absurd number of seconds is capped, not overflowed", "99999999999999999999999", 365*24*time.Hour, true),
		Entry("negative", "-5", time.Duration(0), false),
		Entry("words", "tomorrow", time.Duration(0), false),
		Entry("empty", "", time.Duration(0), false),
	)
})

var _ = Describe("Match.String", func() {
	It("describes every criterion for listings", func() {
		rule := classify.DefaultRules()
		byName := map[string]classify.Rule{}
		for _, r := range rule {
			byName[r.Name] = r
		}
		Expect(byName["payment-ambiguous-5xx"].Match.String()).To(Equal("status=[500,502,504]"))
		Expect(byName["http-5xx"].Match.String()).To(Equal("status=[500-599]"))
		Expect(byName["canceled"].Match.String()).To(Equal(`is=["context canceled"]`))
		Expect(byName["shutdown"].Match.String()).To(Equal(`is=["context canceled"] shuttingDown`))
		Expect(byName["network-error"].Match.String()).To(Equal("kind=[net.OpError,net.DNSError]"))
		Expect(byName["payment-timeout"].Match.String()).To(Equal("timeout"))
		Expect(classify.Match{}.String()).To(Equal("any error"))
	})
})

// nilUnsafeError's methods dereference their receiver, as most do.
type nilUnsafeError struct{ code int }

func (e *nilUnsafeError) Error() string   { return "status " + fmt.Sprint(e.code) }
func (e *nilUnsafeError) StatusCode() int { return e.code }
