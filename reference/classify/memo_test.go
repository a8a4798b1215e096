package classify_test

import (
	"context"
	"errors"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/failure"
)

// valueErr is an error held by value: a Memo does not remember it.
type valueErr struct{ code int }

func (e valueErr) Error() string   { return http.StatusText(e.code) }
func (e valueErr) StatusCode() int { return e.code }

var _ = Describe("A Memo", func() {
	It("gives the Classifier's verdict, call for call, remembered or not", func() {
		c := classify.Default()
		m := c.Memo()
		date := now.Add(30 * time.Second).Format(http.TimeFormat)
		errs := []error{
			httpErr(503, ""), httpErr(429, "7"), httpErr(429, date), // an HTTP date: resolved against Now each time
			failure.WithRetryAfter(httpErr(503, ""), 3*time.Second),
			valueErr{502}, context.Canceled, errors.New("boom"), deep(httpErr(504, ""), 3),
		}
		scopes := []classify.Scope{
			{Dependency: "payment-gateway", Task: "charge"}, {Dependency: "smtp", Task: "email"},
			{Dependency: "smtp", Task: "email", ShuttingDown: true},
		}
		for round := range 3 {
			for i, err := range errs {
				for _, s := range scopes {
					s.Now = now.Add(time.Duration(round*10+i) * time.Second)
					Expect(m.Classify(err, s)).To(Equal(c.Classify(err, s)), "error %d (%v), scope %+v", i, err, s)
				}
			}
		}
		for i := range 40 { // more errors than the Memo holds: the oldest make room
			err := httpErr(500+i%10, "")
			s := scopes[i%2]
			Expect(m.Classify(err, s)).To(Equal(c.Classify(err, s)))
		}
		Expect(m.Classify(nil, scopes[0])).To(Equal(classify.Classification{}))
	})
})
