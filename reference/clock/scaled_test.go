package clock_test

import (
	"math"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/clock"
)

var _ = Describe("Scaled", func() {
	var (
		wall *clock.Virtual
		s    *clock.Scaled
	)
	scenarioStart := time.Date(2030, 5, 1, 0, 0, 0, 0, time.UTC)
	BeforeEach(func() {
		wall = clock.NewVirtual(epoch)
		var err error
		s, err = clock.NewScaled(scenarioStart, epoch, 10, wall)
		Expect(err).NotTo(HaveOccurred())
	})

	It("runs scenario time K times faster than the wall clock", func() {
		Expect(s.Now()).To(Equal(scenarioStart))
		wall.Advance(6 * time.Second)
		Expect(s.Elapsed()).To(Equal(time.Minute))
		Expect(s.Now()).To(Equal(scenarioStart.Add(time.Minute)))
	})

	It("fires a timer after d of scenario time, d/K of wall time", func() {
		fired := false
		s.AfterFunc(30*time.Second, func() { fired = true })
		wall.Advance(2999 * time.Millisecond)
		Expect(fired).To(BeFalse())
		wall.Advance(time.Millisecond)
		Expect(fired).To(BeTrue())
		Expect(s.WallAt(30 * time.Second)).To(Equal(epoch.Add(3 * time.Second)))
	})

	It("restarts at a later origin: scenario time begins again there, read safely while it moves", func() {
		wall.Advance(5 * time.Second)
		s.Restart(epoch.Add(7 * time.Second))
		Expect(s.Origin()).To(Equal(epoch.Add(7 * time.Second)))
		Expect(s.Elapsed()).To(Equal(-20 * time.Second))
		wall.Advance(3 * time.Second)
		Expect(s.Elapsed()).To(Equal(10 * time.Second))
		Expect(s.WallAt(0)).To(Equal(epoch.Add(7 * time.Second)))
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range 1000 {
				_ = s.Elapsed()
			}
		}()
		for i := range 1000 {
			s.Restart(epoch.Add(time.Duration(i) * time.Millisecond))
		}
		<-done
	})

	It("keeps a positive duration positive on the wall", func() {
		s3, err := clock.NewScaled(scenarioStart, epoch, 3, wall)
		Expect(err).NotTo(HaveOccurred())
		Expect(s3.ToWall(time.Nanosecond)).To(Equal(time.Nanosecond))
		Expect(s3.ToWall(10 * time.Nanosecond)).To(Equal(4 * time.Nanosecond))
	})

	It("refuses a factor below 1 or not finite", func() {
		for _, k := range []float64{0, 0.5, -1, math.NaN(), math.Inf(1)} {
			_, err := clock.NewScaled(scenarioStart, epoch, k, wall)
			Expect(err).To(MatchError(clock.ErrScale), "k=%v", k)
		}
	})
})
