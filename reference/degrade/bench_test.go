package degrade_test

import (
	"testing"
	"time"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/reference/degrade"
)

// BenchmarkAllowRecord measures the closed-state hot path: one Allow and one
// Record of a success, on the virtual clock.
func BenchmarkAllowRecord(b *testing.B) {
	clk := clock.NewVirtual(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	br, err := degrade.NewBreaker(degrade.BreakerConfig{Name: "bench"}, clk)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		p, err := br.Allow()
		if err != nil {
			b.Fatal(err)
		}
		br.Record(p, degrade.Success())
	}
}

// BenchmarkAllowRecordReal is the same path on the wall clock, as the live
// runner drives it.
func BenchmarkAllowRecordReal(b *testing.B) {
	br, err := degrade.NewBreaker(degrade.BreakerConfig{Name: "bench"}, clock.Real{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		p, err := br.Allow()
		if err != nil {
			b.Fatal(err)
		}
		br.Record(p, degrade.Success())
	}
}

// BenchmarkAllowOpen measures a rejection by an open breaker.
func BenchmarkAllowOpen(b *testing.B) {
	clk := clock.NewVirtual(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	br, err := degrade.NewBreaker(degrade.BreakerConfig{Name: "bench", OpenDuration: time.Hour, MaxOpenDuration: time.Hour}, clk)
	if err != nil {
		b.Fatal(err)
	}
	p, _ := br.Allow()
	br.Record(p, degrade.Failure(classify.Classification{Class: classify.Critical, Severity: classify.High, Source: classify.Auth}))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := br.Allow(); err == nil {
			b.Fatal("admitted while open")
		}
	}
}

// BenchmarkRecordFailure measures the closed-state path of a failure that is
// weighed by class and source: an Allow and the Record of a transient
// failure, alternately from the network (counted) and from the worker's own
// system (ignored), with successes in between so that the breaker never
// trips.
func BenchmarkRecordFailure(b *testing.B) {
	clk := clock.NewVirtual(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	br, err := degrade.NewBreaker(degrade.BreakerConfig{Name: "bench"}, clk)
	if err != nil {
		b.Fatal(err)
	}
	network := classify.Classification{Class: classify.Transient, Severity: classify.Medium, Source: classify.Network, Rule: "timeout"}
	system := classify.Classification{Class: classify.Transient, Severity: classify.Medium, Source: classify.System, Rule: "fallback"}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		p, err := br.Allow()
		if err != nil {
			b.Fatal(err)
		}
		switch i % 4 {
		case 0:
			br.Record(p, degrade.Failure(network))
		case 2:
			br.Record(p, degrade.Failure(system))
		default:
			br.Record(p, degrade.Success())
		}
		i++
	}
}
