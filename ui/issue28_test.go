package ui_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/ui"
)

// Issue 28: what a newcomer tripped on, on the miniredis lane.
var _ = Describe("the UI as a newcomer meets it (issue 28)", func() {
	Describe("ages", func() {
		It("prints an entry 8110 hours old as 338d ago on the dashboard, as faultline dlq stats does", func() {
			now := time.Now()
			hs := newHarness(lanes[0].url(), ui.Config{Now: func() time.Time { return now }})
			old := entryAt("old-1", "charge", classify.Medium, classify.Transient, 0, `{}`, "gateway timeout")
			old.LastFailedAt = now.Add(-(8110*time.Hour + 52*time.Minute + 32*time.Second))
			old.FirstFailedAt = old.LastFailedAt.Add(-time.Minute)
			for i := range old.History {
				old.History[i].At = old.LastFailedAt
			}
			_, err := hs.store.Add(context.Background(), old, now)
			Expect(err).NotTo(HaveOccurred())
			body := hs.get("/").Body.String()
			Expect(body).To(ContainSubstring(`<a href="/entries/old-1">old-1</a>, 338d ago`))
			Expect(body).NotTo(ContainSubstring("8110h"))
			Expect(body).To(MatchRegexp(`<a href="/entries/xss-4">xss-4</a>, 20m0s ago`), "below an hour: minutes and seconds")
		})
	})
})
