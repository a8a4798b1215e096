package cli_test

import (
	"fmt"
	"io"
	"runtime"
	"testing"

	"github.com/faultline/faultline/cmd/faultline/internal/cli"
)

// BenchmarkRunSeedsMemory runs payment-challenge on 10 and on 100 seeds
// with every report format a sweep writes, and reports the peak of the live
// heap (after a collection, measured after each run is printed, written and
// let go of): flat in the number of runs, where keeping every result cost
// about 150 KB a run.
//
//	go test ./cmd/faultline/internal/cli -run '^$' -bench RunSeedsMemory -benchtime 1x
func BenchmarkRunSeedsMemory(b *testing.B) {
	for _, n := range []int{10, 100} {
		b.Run(fmt.Sprintf("runs=%d", n), func(b *testing.B) {
			var peak uint64
			var ms runtime.MemStats
			undo := cli.SetAfterRelease(func() {
				runtime.GC()
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapAlloc)
			})
			defer undo()
			dir := b.TempDir()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				root := cli.New(io.Discard, io.Discard)
				root.SetArgs([]string{"run", "payment-challenge", "--seeds", fmt.Sprintf("1..%d", n), "--parallel", "2",
					"--report", "json,junit,md,html", "--report-dir", dir, "--no-shrink", "--progress", "never"})
				if err := root.Execute(); err != nil && cli.ExitCode(err) > cli.ExitFailed {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-live-MB")
		})
	}
}
