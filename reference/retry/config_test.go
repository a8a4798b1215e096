package retry_test

import (
	"errors"
	"math/rand/v2"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/retry"
)

var _ = Describe("Config", func() {
	It("fills every zero field with its default", func() {
		Expect(retry.Config{}.WithDefaults()).To(Equal(retry.Config{
			MaxAttempts:   retry.DefaultMaxAttempts,
			BaseDelay:     retry.DefaultBaseDelay,
			MaxDelay:      retry.DefaultMaxDelay,
			MaxRetryAfter: retry.DefaultMaxRetryAfter,
			Budget: retry.BudgetConfig{Burst: retry.DefaultBudgetBurst, Refill: retry.DefaultBudgetRefill,
				MaxWait: retry.DefaultMaxDelay},
		}))
		Expect(retry.DefaultMaxAttempts).To(Equal(4), "the seed's DLQ after 3 retries")
	})

	It("keeps the fields that are set, negative ones included", func() {
		cfg := retry.Config{MaxAttempts: -1, BaseDelay: 3 * time.Second, MaxDelay: time.Minute,
			MaxRetryAfter: time.Minute, Budget: retry.BudgetConfig{Disabled: true, Burst: 2, Refill: -time.Second, MaxWait: -time.Hour}}
		Expect(cfg.WithDefaults()).To(Equal(cfg))
	})

	It("defaults the budget's MaxWait to MaxDelay, after MaxDelay's own default", func() {
		Expect(retry.Config{MaxDelay: time.Minute}.WithDefaults().Budget.MaxWait).To(Equal(time.Minute))
		Expect(retry.Config{}.WithDefaults().Budget.MaxWait).To(Equal(retry.DefaultMaxDelay))
		Expect(retry.Config{MaxDelay: time.Minute, Budget: retry.BudgetConfig{MaxWait: time.Second}}.WithDefaults().Budget.MaxWait).To(Equal(time.Second))
	})

	It("gives the budget slots of Burst·Refill", func() {
		Expect(retry.Config{}.WithDefaults().Budget.Window()).To(Equal(time.Second))
		Expect(retry.BudgetConfig{Burst: 3, Refill: 250 * time.Millisecond}.Window()).To(Equal(750 * time.Millisecond))
	})

	It("accepts the zero config", func() {
		Expect(retry.Config{}.Validate()).To(Succeed())
	})

	DescribeTable("Validate names the bad field",
		func(cfg retry.Config, field string, value any) {
			err := cfg.Validate()
			var ce *retry.ConfigError
			Expect(errors.As(err, &ce)).To(BeTrue(), "Validate returned %v", err)
			Expect(ce.Field).To(Equal(field))
			Expect(ce.Value).To(Equal(value))
			Expect(ce.Reason).NotTo(BeEmpty())
			Expect(err).To(MatchError(retry.ErrInvalidConfig))
			Expect(err.Error()).To(ContainSubstring(field))

			_, err = retry.New(cfg, rand.New(rand.NewPCG(1, 2)))
			Expect(errors.As(err, &ce)).To(BeTrue(), "New returned %v", err)
			Expect(ce.Field).To(Equal(field))
		},
		Entry("negative MaxAttempts", retry.Config{MaxAttempts: -1}, "MaxAttempts", -1),
		Entry("negative BaseDelay", retry.Config{BaseDelay: -time.Second}, "BaseDelay", -time.Second),
		Entry("negative MaxDelay", retry.Config{MaxDelay: -time.Second}, "MaxDelay", -time.Second),
		Entry("MaxDelay below BaseDelay", retry.Config{BaseDelay: time.Minute, MaxDelay: time.Second}, "MaxDelay", time.Second),
		Entry("BaseDelay above the default MaxDelay", retry.Config{BaseDelay: time.Hour}, "MaxDelay", retry.DefaultMaxDelay),
		Entry("negative MaxRetryAfter", retry.Config{MaxRetryAfter: -time.Nanosecond}, "MaxRetryAfter", -time.Nanosecond),
		Entry("negative Burst", retry.Config{Budget: retry.BudgetConfig{Burst: -5}}, "Budget.Burst", -5),
		Entry("negative Refill", retry.Config{Budget: retry.BudgetConfig{Refill: -time.Millisecond}}, "Budget.Refill", -time.Millisecond),
		Entry("a bad budget even when disabled", retry.Config{Budget: retry.BudgetConfig{Disabled: true, Burst: -1}}, "Budget.Burst", -1),
		Entry("Burst × Refill overflowing", retry.Config{Budget: retry.BudgetConfig{Burst: 1 << 40, Refill: time.Hour}}, "Budget.Burst", 1<<40),
		Entry("Burst × Refill overflowing by one", retry.Config{Budget: retry.BudgetConfig{Burst: 2, Refill: 1<<62 + 1}}, "Budget.Burst", 2),
		Entry("negative MaxWait", retry.Config{Budget: retry.BudgetConfig{MaxWait: -time.Second}}, "Budget.MaxWait", -time.Second),
		Entry("negative MaxWait, budget disabled", retry.Config{Budget: retry.BudgetConfig{Disabled: true, MaxWait: -1}}, "Budget.MaxWait", time.Duration(-1)),
	)

	It("accepts the extremes that still fit", func() {
		Expect(retry.Config{MaxAttempts: 1, BaseDelay: 1, MaxDelay: 1<<63 - 1, MaxRetryAfter: 1<<63 - 1,
			Budget: retry.BudgetConfig{Burst: 1, Refill: 1<<63 - 1}}.Validate()).To(Succeed())
		Expect(retry.Config{Budget: retry.BudgetConfig{Burst: 1 << 62, Refill: 1}}.Validate()).To(Succeed())
		Expect(retry.Config{Budget: retry.BudgetConfig{Burst: 3, Refill: (1<<63 - 1) / 3, MaxWait: 1<<63 - 1}}.Validate()).To(Succeed())
	})

	It("makes New refuse a nil random source", func() {
		p, err := retry.New(retry.Config{}, nil)
		Expect(err).To(MatchError(retry.ErrNilRand))
		Expect(p).To(BeNil())
	})

	It("is returned, defaults applied, by Policy.Config", func() {
		p := newPolicy(retry.Config{MaxAttempts: 7}, 1)
		Expect(p.Config()).To(Equal(retry.Config{MaxAttempts: 7}.WithDefaults()))
	})
})

var _ = Describe("Action and Reason", func() {
	It("have names", func() {
		names := map[string]bool{}
		for _, a := range retry.Actions {
			b, err := a.MarshalText()
			Expect(err).NotTo(HaveOccurred())
			Expect(string(b)).To(Equal(a.String()))
			names[a.String()] = true
		}
		Expect(names).To(HaveKey("dead-letter"))
		Expect(names).To(HaveLen(3))
		for _, r := range retry.Reasons {
			b, err := r.MarshalText()
			Expect(err).NotTo(HaveOccurred())
			Expect(string(b)).To(Equal(r.String()))
			names[r.String()] = true
		}
		Expect(names).To(HaveLen(3 + 9))
		Expect(retry.BudgetDelay.String()).To(Equal("budget"))
	})

	It("name invalid values without pretending they are valid", func() {
		Expect(retry.Action(0).String()).To(Equal("action(0)"))
		Expect(retry.Reason(99).String()).To(Equal("reason(99)"))
		_, err := retry.Action(0).MarshalText()
		Expect(err).To(HaveOccurred())
		_, err = retry.Reason(0).MarshalText()
		Expect(err).To(HaveOccurred())
	})
})
