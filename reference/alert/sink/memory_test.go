package sink_test

import (
	"context"
	"errors"
	"net/http"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/alert/sink"
	"github.com/faultline/faultline/reference/alert/sink/sinktest"
	"github.com/faultline/faultline/reference/failure"
)

var _ = Describe("Memory", func() {
	var m *sink.Memory

	BeforeEach(func() {
		m = &sink.Memory{}
	})

	It("records what it accepts, in order", func() {
		a, b := sinktest.Notification(), sinktest.Notification()
		b.ID = 43
		Expect(m.Send(ctx(), a)).To(Succeed())
		Expect(m.Send(ctx(), b)).To(Succeed())
		Expect(m.Sent()).To(Equal([]alert.Notification{a, b}))
		Expect(m.Attempts()).To(Equal(2))
	})

	It("keeps copies, safe from the caller and from readers", func() {
		n := sinktest.Notification()
		Expect(m.Send(ctx(), n)).To(Succeed())
		n.Alerts[0].Labels["task"] = "changed"
		n.Alerts[0].Jobs[0].ID = "changed"
		got := m.Sent()
		got[0].Alerts[0].Summary = "changed"
		Expect(m.Sent()).To(Equal([]alert.Notification{sinktest.Notification()}))
	})

	It("plays failures through Fail, not recording rejected notifications", func() {
		outage := 2
		m.Fail = func(n alert.Notification) error {
			if outage > 0 {
				outage--
				return &failure.HTTPError{Code: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"30"}}}
			}
			return nil
		}
		for range 2 {
			err := m.Send(ctx(), sinktest.Notification())
			var herr *failure.HTTPError
			Expect(errors.As(err, &herr)).To(BeTrue())
			Expect(herr.RetryAfterHeader()).To(Equal("30"))
		}
		Expect(m.Sent()).To(BeEmpty())
		Expect(m.Send(ctx(), sinktest.Notification())).To(Succeed())
		Expect(m.Sent()).To(HaveLen(1))
		Expect(m.Attempts()).To(Equal(3))
	})

	It("lets Fail read the sink without deadlocking", func() {
		m.Fail = func(alert.Notification) error {
			_ = m.Sent()
			_ = m.Attempts()
			return nil
		}
		Expect(m.Send(ctx(), sinktest.Notification())).To(Succeed())
	})

	It("rejects a notification when the context is done", func() {
		c, cancel := context.WithCancel(ctx())
		cancel()
		Expect(m.Send(c, sinktest.Notification())).To(MatchError(context.Canceled))
		Expect(m.Sent()).To(BeEmpty())
		Expect(m.Attempts()).To(Equal(1))
	})

	It("is safe for concurrent use", func() {
		m.Fail = func(n alert.Notification) error {
			if n.ID%2 == 1 {
				return errors.New("odd")
			}
			return nil
		}
		const senders, each = 8, 50
		var wg sync.WaitGroup
		for s := range senders {
			wg.Go(func() {
				defer GinkgoRecover()
				for i := range each {
					n := sinktest.Notification()
					n.ID = uint64(s*each + i)
					_ = m.Send(ctx(), n)
					_ = m.Sent()
					_ = m.Attempts()
				}
			})
		}
		wg.Wait()
		Expect(m.Attempts()).To(Equal(senders * each))
		Expect(m.Sent()).To(HaveLen(senders * each / 2))
	})
})
