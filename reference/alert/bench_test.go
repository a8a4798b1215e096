package alert_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/alert/sink"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/clock"
)

// BenchmarkJobFailed measures one job failure reported to the alerter (a
// deduplicated occurrence of a firing alert), with the virtual clock advanced
// every 1,000 failures so that flushes and deliveries run too:
//
//	go test ./reference/alert -run '^$' -bench JobFailed -benchmem
func BenchmarkJobFailed(b *testing.B) {
	clk := clock.NewVirtual(t0)
	a, err := alert.New(alert.Config{
		Receivers:       []alert.Receiver{{Name: "pager", Sink: &sink.Memory{}}},
		DefaultReceiver: "pager",
		Redactor:        maskRedactor{},
	}, clk, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		b.Fatal(err)
	}
	tasks := []string{"charge", "refund", "email", "report"}
	f := alert.Failure{JobID: "j", Dependency: "gw", Class: classify.Transient, Severity: classify.Medium, Source: classify.Dependency, Attempts: 2, Err: "http 503"}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		f.Task = tasks[i%len(tasks)]
		a.JobFailed(f)
		i++
		if i%1000 == 0 {
			clk.Advance(time.Second)
		}
	}
}
