package failure_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/failure"
)

func TestFailure(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Failure Suite")
}

var _ = Describe("dependency errors", func() {
	It("describe an HTTP error answer and expose its status and Retry-After", func() {
		cause := errors.New("upstream closed")
		e := &failure.HTTPError{Code: 503, Header: http.Header{"Retry-After": {"30"}}, Body: "maintenance", Err: cause}
		Expect(e.Error()).To(Equal("http 503 Service Unavailable: maintenance: upstream closed"))
		Expect(e.StatusCode()).To(Equal(503))
		Expect(e.RetryAfterHeader()).To(Equal("30"))
		Expect(errors.Is(e, cause)).To(BeTrue())
		Expect((&failure.HTTPError{Code: 500}).RetryAfterHeader()).To(BeEmpty())
	})

	It("describe a bodyless HTTP error without allocating, and any code at all", func() {
		e := &failure.HTTPError{Code: 503}
		Expect(e.Error()).To(Equal("http 503 Service Unavailable"))
		Expect(testing.AllocsPerRun(100, func() { _ = e.Error() })).To(BeZero())
		Expect((&failure.HTTPError{Code: 429, Body: "slow down"}).Error()).To(Equal("http 429 Too Many Requests: slow down"))
		Expect((&failure.HTTPError{Code: 799}).Error()).To(Equal("http 799 "), "a code net/http does not name")
		Expect((&failure.HTTPError{Code: -1}).Error()).To(Equal("http -1 "))
	})

	It("describe a card decline like a card processor does", func() {
		e := &failure.CardError{Code: "card_declined", Decline: "insufficient_funds", Message: "Your card has insufficient funds."}
		Expect(e.Error()).To(Equal("card_declined (insufficient_funds): Your card has insufficient funds."))
		Expect(e.StatusCode()).To(Equal(402))
		Expect(e.DeclineCode()).To(Equal("insufficient_funds"))
		expired := &failure.CardError{Code: "expired_card", Status: 400}
		Expect(expired.DeclineCode()).To(Equal("expired_card"))
		Expect(expired.StatusCode()).To(Equal(400))
	})

	It("describe a timeout that says it is one", func() {
		e := &failure.TimeoutError{Op: "POST /v1/charges", After: 30 * time.Second}
		Expect(e.Error()).To(Equal("POST /v1/charges: timed out after 30s"))
		Expect(e.Timeout()).To(BeTrue())
	})

	It("attach a Retry-After hint without hiding the cause", func() {
		err := failure.WithRetryAfter(failure.ErrAuthentication, 5*time.Second)
		Expect(err).To(MatchError(failure.ErrAuthentication))
		Expect(err.Error()).To(Equal("authentication failed"))
		hinted, ok := errors.AsType[interface {
			error
			RetryAfter() time.Duration
		}](err)
		Expect(ok).To(BeTrue())
		Expect(hinted.RetryAfter()).To(Equal(5 * time.Second))
		Expect(failure.WithRetryAfter(nil, time.Second)).To(BeNil())
	})
	It("do not panic when a typed nil reaches an error interface", func() {
		var h *failure.HTTPError
		var c *failure.CardError
		var t *failure.TimeoutError
		Expect(h.Error()).To(Equal("http error <nil>"))
		Expect(h.StatusCode()).To(BeZero())
		Expect(h.RetryAfterHeader()).To(BeEmpty())
		Expect(h.Unwrap()).To(BeNil())
		Expect(c.Error()).To(Equal("card error <nil>"))
		Expect(c.DeclineCode()).To(BeEmpty())
		Expect(c.StatusCode()).To(Equal(402))
		Expect(t.Error()).To(Equal("timeout <nil>"))
	})
})
