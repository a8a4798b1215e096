package degrade_test

import (
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/reference/degrade"
)

var _ = Describe("BreakerConfig", func() {
	It("fills every zero field with its default", func() {
		c := degrade.BreakerConfig{Name: "gateway"}.WithDefaults()
		Expect(c).To(Equal(degrade.BreakerConfig{
			Name:                "gateway",
			ConsecutiveFailures: 5,
			FailureRatePercent:  50,
			MinThroughput:       20,
			Window:              10 * time.Second,
			Buckets:             10,
			OpenDuration:        5 * time.Second,
			MaxOpenDuration:     5 * time.Minute,
			BackoffFactor:       2,
			StablePeriod:        time.Minute,
			HalfOpenProbes:      1,
			SuccessesToClose:    3,
			ProbeTimeout:        10 * time.Second,
			RampUp:              30 * time.Second,
			RampStartPercent:    10,
			SyncInterval:        250 * time.Millisecond,
			CountedClasses:      []classify.Class{classify.Transient, classify.RateLimited, classify.Indeterminate, classify.Critical},
			ForceOpenClasses:    []classify.Class{classify.Critical},
			CountedSources:      []classify.Source{classify.Network, classify.Dependency, classify.Auth},
		}))
		Expect(c.Validate()).To(Succeed())
	})

	It("keeps an empty ForceOpenClasses, which turns forced opening off", func() {
		c := degrade.BreakerConfig{Name: "x", ForceOpenClasses: []classify.Class{}}.WithDefaults()
		Expect(c.ForceOpenClasses).To(BeEmpty())
		Expect(c.ForceOpenClasses).NotTo(BeNil())
		Expect(c.Validate()).To(Succeed())
	})

	DescribeTable("Validate names the bad field",
		func(mutate func(*degrade.BreakerConfig), field string) {
			c := degrade.BreakerConfig{Name: "gateway"}.WithDefaults()
			mutate(&c)
			err := c.Validate()
			var ce *degrade.ConfigError
			Expect(errors.As(err, &ce)).To(BeTrue(), "got %v", err)
			Expect(ce.Field).To(Equal(field))
			Expect(err).To(MatchError(degrade.ErrInvalidConfig))
			Expect(err.Error()).To(ContainSubstring(field))
			_, err = degrade.NewBreaker(c, clock.NewVirtual(t0))
			Expect(errors.As(err, &ce)).To(BeTrue())
			Expect(ce.Field).To(Equal(field))
		},
		Entry(nil, func(c *degrade.BreakerConfig) { c.Name = "" }, "Name"),
		Entry(nil, func(c *degrade.BreakerConfig) { c.ConsecutiveFailures = -1 }, "ConsecutiveFailures"),
		Entry(nil, func(c *degrade.BreakerConfig) { c.FailureRatePercent = 101 }, "FailureRatePercent"),
		Entry(nil, func(c *degrade.BreakerConfig) { c.MinThroughput = -3 }, "MinThroughput"),
		Entry(nil, func(c *degrade.BreakerConfig) { c.Window = -time.Second }, "Window"),
		Entry(nil, func(c *degrade.BreakerConfig) { c.Buckets = degrade.MaxBuckets + 1 }, "Buckets"),
		Entry("buckets narrower than a nanosecond", func(c *degrade.BreakerConfig) { c.Window = 5; c.Buckets = 10 }, "Buckets"),
		Entry(nil, func(c *degrade.BreakerConfig) { c.OpenDuration = -1 }, "OpenDuration"),
		Entry(nil, func(c *degrade.BreakerConfig) { c.MaxOpenDuration = time.Second }, "MaxOpenDuration"),
		Entry(nil, func(c *degrade.BreakerConfig) { c.BackoffFactor = -2 }, "BackoffFactor"),
		Entry(nil, func(c *degrade.BreakerConfig) { c.StablePeriod = -1 }, "StablePeriod"),
		Entry(nil, func(c *degrade.BreakerConfig) { c.HalfOpenProbes = -1 }, "HalfOpenProbes"),
		Entry(nil, func(c *degrade.BreakerConfig) { c.SuccessesToClose = -1 }, "SuccessesToClose"),
		Entry(nil, func(c *degrade.BreakerConfig) { c.ProbeTimeout = -1 }, "ProbeTimeout"),
		Entry(nil, func(c *degrade.BreakerConfig) { c.RampStartPercent = 101 }, "RampStartPercent"),
		Entry(nil, func(c *degrade.BreakerConfig) { c.CountedClasses = []classify.Class{} }, "CountedClasses"),
		Entry(nil, func(c *degrade.BreakerConfig) {
			c.CountedClasses = []classify.Class{classify.Transient, classify.Permanent}
		}, "CountedClasses[1]"),
		Entry(nil, func(c *degrade.BreakerConfig) { c.CountedClasses = []classify.Class{classify.Canceled} }, "CountedClasses[0]"),
		Entry(nil, func(c *degrade.BreakerConfig) { c.ForceOpenClasses = []classify.Class{classify.Class(99)} }, "ForceOpenClasses[0]"),
		Entry(nil, func(c *degrade.BreakerConfig) { c.ForceOpenClasses = []classify.Class{classify.None} }, "ForceOpenClasses[0]"),
		Entry(nil, func(c *degrade.BreakerConfig) { c.CountedSources = []classify.Source{} }, "CountedSources"),
		Entry("the worker's own system", func(c *degrade.BreakerConfig) {
			c.CountedSources = []classify.Source{classify.Network, classify.System}
		}, "CountedSources[1]"),
		Entry("the job's data", func(c *degrade.BreakerConfig) { c.CountedSources = []classify.Source{classify.Data} }, "CountedSources[0]"),
		Entry(nil, func(c *degrade.BreakerConfig) { c.CountedSources = []classify.Source{classify.SourceNone} }, "CountedSources[0]"),
		Entry(nil, func(c *degrade.BreakerConfig) {
			c.CountedSources = []classify.Source{classify.Auth, classify.Dependency, classify.Source(99)}
		}, "CountedSources[2]"),
	)

	It("accepts any non-empty subset of Network, Dependency and Auth as CountedSources", func() {
		for _, sources := range [][]classify.Source{
			{classify.Network}, {classify.Dependency}, {classify.Auth},
			{classify.Auth, classify.Network}, degrade.DefaultCountedSources(),
		} {
			c := degrade.BreakerConfig{Name: "x", CountedSources: sources}.WithDefaults()
			Expect(c.Validate()).To(Succeed(), "%v", sources)
		}
	})

	It("accepts NoRampUp", func() {
		c := degrade.BreakerConfig{Name: "x", RampUp: degrade.NoRampUp}.WithDefaults()
		Expect(c.RampUp).To(Equal(degrade.NoRampUp))
		Expect(c.Validate()).To(Succeed())
	})

	It("rejects a nil clock", func() {
		_, err := degrade.NewBreaker(degrade.BreakerConfig{Name: "x"}, nil)
		Expect(err).To(MatchError(degrade.ErrInvalidConfig))
	})

	It("does not share the caller's class slices", func() {
		counted := []classify.Class{classify.Transient}
		clk := clock.NewVirtual(t0)
		b := newBreaker(degrade.BreakerConfig{CountedClasses: counted, ConsecutiveFailures: 1}, clk)
		counted[0] = classify.RateLimited
		fail(b, 1, rateLimited)
		Expect(b.State()).To(Equal(degrade.Closed))
		fail(b, 1, netTimeout)
		Expect(b.State()).To(Equal(degrade.Open))
	})

	It("does not share the caller's source slice", func() {
		sources := []classify.Source{classify.Network}
		clk := clock.NewVirtual(t0)
		b := newBreaker(degrade.BreakerConfig{CountedSources: sources, ConsecutiveFailures: 1}, clk)
		sources[0] = classify.Dependency
		fail(b, 1, serverError)
		Expect(b.State()).To(Equal(degrade.Closed))
		fail(b, 1, netTimeout)
		Expect(b.State()).To(Equal(degrade.Open))
	})

	It("gives fresh default slices, so that no caller can change the default for everyone", func() {
		degrade.DefaultCountedSources()[0] = classify.System
		Expect(degrade.DefaultCountedSources()).To(Equal([]classify.Source{classify.Network, classify.Dependency, classify.Auth}))
	})
})

var _ = Describe("FallbackConfig", func() {
	It("fills every zero field with its default", func() {
		Expect(degrade.FallbackConfig{}.WithDefaults()).To(Equal(degrade.FallbackConfig{
			BatchSize: 100, DrainInterval: time.Second, DrainTimeout: 5 * time.Second,
		}))
	})

	DescribeTable("Validate names the bad field",
		func(c degrade.FallbackConfig, field string) {
			var ce *degrade.ConfigError
			Expect(errors.As(c.WithDefaults().Validate(), &ce)).To(BeTrue())
			Expect(ce.Field).To(Equal(field))
		},
		Entry(nil, degrade.FallbackConfig{BatchSize: -1}, "BatchSize"),
		Entry(nil, degrade.FallbackConfig{DrainInterval: -1}, "DrainInterval"),
		Entry(nil, degrade.FallbackConfig{DrainTimeout: -1}, "DrainTimeout"),
	)
})
