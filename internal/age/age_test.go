package age_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/internal/age"
)

func TestAge(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Age Suite")
}

var _ = Describe("Format", func() {
	DescribeTable("prints an age as a person reads it, the UI and the CLI alike",
		func(d time.Duration, want string) { Expect(age.Format(d)).To(Equal(want)) },
		Entry("negative (a clock ahead of the store's)", -5*time.Second, "0s"),
		Entry("none", time.Duration(0), "0s"),
		Entry("under a second", 400*time.Millisecond, "0s"),
		Entry("seconds, rounded", 44*time.Second+600*time.Millisecond, "45s"),
		Entry("minutes and seconds", 12*time.Minute+5*time.Second, "12m5s"),
		Entry("a round minute", 20*time.Minute, "20m0s"),
		Entry("just under an hour rounds up to it", time.Hour-300*time.Millisecond, "1h0m"),
		Entry("hours and minutes, rounded to the minute", 3*time.Hour+12*time.Minute+20*time.Second, "3h12m"),
		Entry("just under two days", 47*time.Hour+59*time.Minute, "47h59m"),
		Entry("two days", 48*time.Hour, "2d"),
		Entry("just under two days rounds up to them", 47*time.Hour+59*time.Minute+40*time.Second, "2d"),
		Entry("days, rounded to the nearest", 8110*time.Hour+52*time.Minute+32*time.Second, "338d"),
		Entry("days, rounded down below the half", 8100*time.Hour, "338d"),
		Entry("days, rounded down below the half, just", 8099*time.Hour, "337d"),
	)
})
