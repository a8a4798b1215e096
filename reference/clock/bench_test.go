package clock_test

import (
	"testing"
	"time"

	"github.com/faultline/faultline/reference/clock"
)

// BenchmarkVirtualSchedule measures one timer scheduled and fired on a
// virtual clock holding 10,000 pending timers, the simulator's event loop in
// miniature:
//
//	go test ./reference/clock -run '^$' -bench Virtual -benchmem
func BenchmarkVirtualSchedule(b *testing.B) {
	v := clock.NewVirtual(time.Unix(0, 0))
	noop := func() {}
	for i := range 10_000 {
		v.AfterFunc(time.Duration(i)*time.Millisecond, noop)
	}
	b.ReportAllocs()
	for b.Loop() {
		v.AfterFunc(10*time.Second, noop)
		v.Step()
	}
}

// BenchmarkVirtualScheduleNoTimer is BenchmarkVirtualSchedule with
// Schedule, the simulator's path for events it never stops: no allocation.
func BenchmarkVirtualScheduleNoTimer(b *testing.B) {
	v := clock.NewVirtual(time.Unix(0, 0))
	noop := func() {}
	for i := range 10_000 {
		v.Schedule(time.Duration(i)*time.Millisecond, noop)
	}
	b.ReportAllocs()
	for b.Loop() {
		v.Schedule(10*time.Second, noop)
		v.Step()
	}
}
