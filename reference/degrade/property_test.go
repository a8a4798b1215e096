package degrade_test

import (
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"pgregory.net/rapid"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/reference/degrade"
)

// allClasses includes None and an out-of-range class, which Failure accepts.
var allClasses = []classify.Class{
	classify.None, classify.Transient, classify.RateLimited, classify.Indeterminate,
	classify.Permanent, classify.Critical, classify.Canceled, classify.Class(200),
}

// allSources includes SourceNone and an out-of-range source, which Failure
// accepts.
var allSources = []classify.Source{
	classify.SourceNone, classify.Network, classify.Data, classify.Auth,
	classify.System, classify.Dependency, classify.Source(200),
}

// drawVerdict draws any classification Failure may be given.
func drawVerdict(t *rapid.T) classify.Classification {
	return classify.Classification{
		Class:  rapid.SampledFrom(allClasses).Draw(t, "class"),
		Source: rapid.SampledFrom(allSources).Draw(t, "source"),
	}
}

// drawConfig draws a valid configuration with small numbers, so that the
// breaker visits every state within a short run.
func drawConfig(t *rapid.T) degrade.BreakerConfig {
	sec := func(label string, lo, hi int) time.Duration {
		return time.Duration(rapid.IntRange(lo, hi).Draw(t, label)) * time.Second
	}
	open := sec("open", 1, 10)
	return degrade.BreakerConfig{
		Name:                "prop",
		ConsecutiveFailures: rapid.IntRange(1, 6).Draw(t, "consecutive"),
		FailureRatePercent:  rapid.IntRange(1, 100).Draw(t, "rate"),
		MinThroughput:       rapid.IntRange(1, 10).Draw(t, "minThroughput"),
		Window:              sec("window", 1, 20),
		Buckets:             rapid.IntRange(1, 10).Draw(t, "buckets"),
		OpenDuration:        open,
		MaxOpenDuration:     open * time.Duration(rapid.IntRange(1, 30).Draw(t, "maxOpenFactor")),
		BackoffFactor:       rapid.IntRange(1, 4).Draw(t, "backoff"),
		StablePeriod:        sec("stable", 1, 60),
		HalfOpenProbes:      rapid.IntRange(1, 4).Draw(t, "probes"),
		SuccessesToClose:    rapid.IntRange(1, 4).Draw(t, "successes"),
		ProbeTimeout:        sec("probeTimeout", 1, 20),
		RampUp:              rapid.SampledFrom([]time.Duration{degrade.NoRampUp, time.Second, 30 * time.Second}).Draw(t, "rampUp"),
		RampStartPercent:    rapid.IntRange(1, 100).Draw(t, "rampStart"),
		CountedSources: rapid.SampledFrom([][]classify.Source{
			nil,
			{classify.Network},
			{classify.Dependency, classify.Auth},
		}).Draw(t, "countedSources"),
	}
}

var _ = Describe("Breaker properties", func() {
	It("keeps its invariants under any sequence of operations", func() {
		rapid.Check(GinkgoT(), func(t *rapid.T) {
			clk := clock.NewVirtual(t0)
			cfg := drawConfig(t)
			b, err := degrade.NewBreaker(cfg, clk)
			counted := map[classify.Source]bool{}
			for _, s := range cfg.WithDefaults().CountedSources {
				counted[s] = true
			}
			if err != nil {
				t.Fatalf("NewBreaker: %v", err)
			}
			var events []degrade.Transition
			b.OnStateChange(func(tr degrade.Transition) { events = append(events, tr) })
			var outstanding []degrade.Permit

			t.Repeat(map[string]func(*rapid.T){
				"allow": func(t *rapid.T) {
					before, until, now := b.State(), b.OpenUntil(), clk.Now()
					p, err := b.Allow()
					after := b.State()
					switch {
					case err == nil:
						outstanding = append(outstanding, p)
						if after == degrade.Open {
							t.Fatalf("admitted while open")
						}
						if before == degrade.Open && now.Before(until) {
							t.Fatalf("admitted before the open duration elapsed")
						}
						if p.IsProbe() != (after == degrade.HalfOpen) {
							t.Fatalf("probe permit %v in state %v", p.IsProbe(), after)
						}
					case errors.Is(err, degrade.ErrOpen):
						if after != degrade.Open {
							t.Fatalf("ErrOpen in state %v", after)
						}
					case errors.Is(err, degrade.ErrProbeLimit):
						if after != degrade.HalfOpen || b.OutstandingProbes() != cfg.HalfOpenProbes {
							t.Fatalf("ErrProbeLimit in state %v with %d probes out", after, b.OutstandingProbes())
						}
					case errors.Is(err, degrade.ErrRampUp):
						if after != degrade.Closed {
							t.Fatalf("ErrRampUp in state %v", after)
						}
					default:
						t.Fatalf("unexpected error %v", err)
					}
				},
				"record": func(t *rapid.T) {
					if len(outstanding) == 0 {
						t.Skip("no outstanding permit")
					}
					i := rapid.IntRange(0, len(outstanding)-1).Draw(t, "permit")
					p := outstanding[i]
					outstanding = append(outstanding[:i], outstanding[i+1:]...)
					var o degrade.Outcome
					var (
						v      classify.Classification
						failed bool
					)
					switch rapid.IntRange(0, 2).Draw(t, "outcome") {
					case 0:
						o = degrade.Success()
					case 1:
						v, failed = drawVerdict(t), true
						o = degrade.Failure(v)
					default:
						o = degrade.Canceled()
					}
					before := b.Stats()
					b.Record(p, o)
					// A failure from a source that is not counted (the
					// worker's own host, the job's data, none) never counts
					// and never moves the breaker, whatever its class.
					if after := b.Stats(); failed && !counted[v.Source] &&
						(after.State != before.State || after.CountedFailures != before.CountedFailures || after.ForcedOpens != before.ForcedOpens) {
						t.Fatalf("failure %v from an uncounted source moved the breaker: %+v -> %+v", v, before, after)
					}
				},
				"recordBogus": func(t *rapid.T) {
					b.Record(degrade.Permit{}, degrade.Failure(classify.Classification{Class: classify.Critical, Source: classify.Auth}))
				},
				"advance": func(t *rapid.T) {
					clk.Advance(time.Duration(rapid.Int64Range(0, int64(30*time.Second)).Draw(t, "advance")))
				},
				"": func(t *rapid.T) {
					state := b.State()
					probes := b.OutstandingProbes()
					if probes > cfg.HalfOpenProbes {
						t.Fatalf("%d probes outstanding, limit %d", probes, cfg.HalfOpenProbes)
					}
					if state != degrade.HalfOpen && probes != 0 {
						t.Fatalf("%d probes outstanding in state %v", probes, state)
					}
					if state == degrade.Open && !b.OpenUntil().After(clk.Now()) {
						t.Fatalf("still open at %v, open until %v", clk.Now(), b.OpenUntil())
					}
					from := degrade.Closed
					for i, tr := range events {
						if tr.From != from || !legal(tr.From, tr.To) {
							t.Fatalf("transition %d: %v -> %v after %v", i, tr.From, tr.To, from)
						}
						if i > 0 && tr.At.Before(events[i-1].At) {
							t.Fatalf("transition %d goes back in time", i)
						}
						if tr.To == degrade.Open && (tr.OpenFor < cfg.OpenDuration || tr.OpenFor > cfg.MaxOpenDuration) {
							t.Fatalf("open for %v, outside [%v, %v]", tr.OpenFor, cfg.OpenDuration, cfg.MaxOpenDuration)
						}
						from = tr.To
					}
					if from != state {
						t.Fatalf("state %v, last transition to %v", state, from)
					}
					s := b.Stats()
					if n := s.ToOpen + s.ToHalfOpen + s.ToClosed; n != uint64(len(events)) || s.Generation != n+1 {
						t.Fatalf("stats count %d transitions, generation %d; listener saw %d", n, s.Generation, len(events))
					}
				},
			})
		})
	})

	It("never panics in NewBreaker, whatever the config, and runs any config it accepts", func() {
		durations := rapid.OneOf(
			rapid.Int64(),
			rapid.Int64Range(-int64(time.Minute), int64(time.Hour)),
			rapid.SampledFrom([]int64{0, -1, 1, int64(degrade.NoRampUp), 1<<63 - 1, -1 << 63}),
		)
		dur := func(t *rapid.T, label string) time.Duration {
			return time.Duration(durations.Draw(t, label))
		}
		ints := rapid.OneOf(rapid.Int(), rapid.IntRange(-5, 200))
		classes := rapid.OneOf(
			rapid.Just[[]classify.Class](nil),
			rapid.SliceOf(rapid.Map(rapid.Uint8(), func(u uint8) classify.Class { return classify.Class(u) })),
			rapid.SliceOf(rapid.SampledFrom(allClasses)),
		)
		sources := rapid.OneOf(
			rapid.Just[[]classify.Source](nil),
			rapid.SliceOf(rapid.Map(rapid.Uint8(), func(u uint8) classify.Source { return classify.Source(u) })),
			rapid.SliceOf(rapid.SampledFrom(allSources)),
		)
		rapid.Check(GinkgoT(), func(t *rapid.T) {
			cfg := degrade.BreakerConfig{
				Name:                rapid.SampledFrom([]string{"", "x"}).Draw(t, "name"),
				ConsecutiveFailures: ints.Draw(t, "consecutive"),
				FailureRatePercent:  ints.Draw(t, "rate"),
				MinThroughput:       ints.Draw(t, "minThroughput"),
				Window:              dur(t, "window"),
				Buckets:             ints.Draw(t, "buckets"),
				OpenDuration:        dur(t, "open"),
				MaxOpenDuration:     dur(t, "maxOpen"),
				BackoffFactor:       ints.Draw(t, "backoff"),
				StablePeriod:        dur(t, "stable"),
				HalfOpenProbes:      ints.Draw(t, "probes"),
				SuccessesToClose:    ints.Draw(t, "successes"),
				ProbeTimeout:        dur(t, "probeTimeout"),
				RampUp:              dur(t, "rampUp"),
				RampStartPercent:    ints.Draw(t, "rampStart"),
				CountedClasses:      classes.Draw(t, "counted"),
				ForceOpenClasses:    classes.Draw(t, "force"),
				CountedSources:      sources.Draw(t, "sources"),
			}
			clk := clock.NewVirtual(t0)
			b, err := degrade.NewBreaker(cfg, clk)
			if err != nil {
				var ce *degrade.ConfigError
				if !errors.As(err, &ce) || ce.Field == "" || !errors.Is(err, degrade.ErrInvalidConfig) {
					t.Fatalf("error %v is not a *ConfigError naming a field", err)
				}
				return
			}
			// Drive the accepted breaker through every state.
			for range 3 {
				for _, c := range allClasses {
					for _, s := range allSources {
						if p, err := b.Allow(); err == nil {
							b.Record(p, degrade.Failure(classify.Classification{Class: c, Source: s}))
						}
					}
				}
				clk.Advance(time.Duration(rapid.Int64Range(0, 1<<62).Draw(t, "advance")))
				for range 5 {
					if p, err := b.Allow(); err == nil {
						b.Record(p, degrade.Success())
					}
				}
			}
		})
	})
})
