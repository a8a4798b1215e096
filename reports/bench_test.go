package reports_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/faultline/faultline/reports"
)

// BenchmarkWriters writes a large run (10,000 samples of every series, 500
// deliveries, 1,000 breaker transitions, 100 DLQ entries) in every format
// this package writes besides HTML, each alone and all together.
func BenchmarkWriters(b *testing.B) {
	r := largeResult()
	rs := []*reports.Result{r}
	writers := []struct {
		name  string
		write func(w io.Writer) error
	}{
		{"json", func(w io.Writer) error { return reports.WriteJSON(w, r) }},
		{"junit", func(w io.Writer) error { return reports.WriteJUnit(w, rs) }},
		{"markdown", func(w io.Writer) error { return reports.WriteMarkdown(w, rs) }},
		{"text", func(w io.Writer) error { return reports.WriteText(w, r, reports.TextOptions{}) }},
		{"text-verbose", func(w io.Writer) error {
			return reports.WriteText(w, r, reports.TextOptions{Verbose: true, Color: true})
		}},
	}
	for _, wr := range writers {
		b.Run(wr.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := wr.write(io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("all", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, wr := range writers {
				if err := wr.write(io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// BenchmarkRead reads the large run back from its JSON.
func BenchmarkRead(b *testing.B) {
	data, err := largeResult().JSON()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := reports.Read(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}
