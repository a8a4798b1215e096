package faults_test

import (
	"testing"
	"time"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/reference/classify"
)

// BenchmarkInjectorCall measures one call through a scenario of five faults:
//
//	go test ./faults -run '^$' -bench InjectorCall -benchmem
func BenchmarkInjectorCall(b *testing.B) {
	gw := faults.Target{Kind: faults.Dependency, Name: classify.PaymentGateway}
	other := faults.Target{Kind: faults.Dependency, Name: "inventory"}
	scenario := func(extra ...faults.Fault) *faults.Injector {
		fs := append([]faults.Fault{
			{Name: "later-timeouts", Target: gw, Model: faults.GatewayTimeout{}, Schedule: faults.During(time.Hour, 2*time.Hour)},
			{Name: "dlq-down", Target: faults.Target{Kind: faults.DLQStore}, Model: faults.StoreOutage{}},
			{Name: "flap-smtp", Target: faults.Target{Kind: faults.Dependency, Name: "smtp"}, Model: faults.Flapping{Jitter: time.Second}},
			{Name: "crashes", Target: faults.Target{Kind: faults.Worker}, Model: faults.WorkerCrash{}, Schedule: faults.Schedule{Every: &faults.Periodic{Period: time.Hour, Duty: 0.001}}},
		}, extra...)
		in, err := faults.NewInjector(1, fs)
		if err != nil {
			b.Fatal(err)
		}
		return in
	}
	run := func(b *testing.B, in *faults.Injector, t faults.Target) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			in.Call(t, faults.Call{At: time.Duration(i) * time.Millisecond % time.Hour})
		}
	}
	b.Run("no-fault-active", func(b *testing.B) {
		run(b, scenario(), gw)
	})
	b.Run("no-fault-for-target", func(b *testing.B) {
		run(b, scenario(), other)
	})
	b.Run("one-active-probability", func(b *testing.B) {
		run(b, scenario(faults.ErrorRate("gw-502", classify.PaymentGateway, 502, 0.1)), gw)
	})
	b.Run("periodic-jitter-probability", func(b *testing.B) {
		run(b, scenario(faults.Fault{Name: "gw-flaky", Target: gw, Model: faults.CardDeclined{Codes: []string{"do_not_honor", "try_again_later"}},
			Schedule: faults.Schedule{Probability: 0.3, Every: &faults.Periodic{Period: time.Minute, Duty: 0.5, Jitter: 10 * time.Second}}}), gw)
	})
	b.Run("latency-lognormal", func(b *testing.B) {
		run(b, scenario(faults.Fault{Name: "gw-slow", Target: gw, Model: faults.Latency{Distribution: faults.LatencyLogNormal}}), gw)
	})
}
