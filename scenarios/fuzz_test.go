package scenarios_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/faultline/faultline/scenarios"
)

// FuzzLoad checks that no input makes the loader panic: Parse reports a
// *LoadError with positions or a document that Convert takes and that
// Marshal writes back to the same document; LoadFS follows the input's
// includes (to itself, too) without panicking either.
func FuzzLoad(f *testing.F) {
	for _, pattern := range []string{"testdata/valid/*.yaml", "testdata/valid/*/*.yaml", "testdata/broken/*.yaml", "testdata/broken/*/*.yaml"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Add([]byte(scenarios.ReferenceExample))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := scenarios.Parse("fuzz.yaml", data)
		if err != nil {
			var le *scenarios.LoadError
			if !errors.As(err, &le) || len(le.Diagnostics) == 0 || !errors.Is(err, scenarios.ErrInvalid) {
				t.Fatalf("Parse: want a *LoadError with diagnostics, got %#v", err)
			}
			for _, d := range le.Diagnostics {
				if d.File != "fuzz.yaml" || d.Line < 1 || d.Col < 1 || d.Message == "" {
					t.Fatalf("a diagnostic without a position or a message: %#v", d)
				}
			}
		} else {
			scenarios.Convert(doc, nil)
			out, err := scenarios.Marshal(doc)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			back, err := scenarios.Parse("marshalled.yaml", out)
			if err != nil {
				t.Fatalf("Parse(Marshal(d)): %v\n%s", err, out)
			}
			again, err := scenarios.Marshal(back)
			if err != nil || !bytes.Equal(again, out) {
				t.Fatalf("Marshal(Parse(Marshal(d))) differs from Marshal(d) (%v):\n%s\n%s", err, out, again)
			}
		}
		fsys := fstest.MapFS{"s.yaml": {Data: data}, "f.yaml": {Data: data}, "a.yaml": {Data: data}, "rules.yaml": {Data: data}}
		_, _ = scenarios.LoadFS(fsys, "s.yaml")
	})
}
