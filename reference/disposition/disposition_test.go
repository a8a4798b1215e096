package disposition_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/disposition"
)

func TestDisposition(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Disposition Suite")
}

var _ = Describe("Event", func() {
	It("reads as a sentence, in UTC", func() {
		e := disposition.Event{JobID: "j1", From: disposition.Queued, To: disposition.InFlight, Reason: disposition.Leased,
			At: time.Date(2026, 1, 1, 1, 0, 0, 0, time.FixedZone("CET", 3600))}
		Expect(e.String()).To(Equal("j1 queued→in-flight (leased) at 2026-01-01T00:00:00Z"))
		Expect(disposition.State(42).String()).To(Equal("state(42)"))
	})
})
