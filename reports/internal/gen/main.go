// Command gen writes the report's generated file, its JSON Schema.
// `go generate ./reports` runs it from the reports directory.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/faultline/faultline/reports"
)

func main() {
	out := flag.String("o", "schema/report.schema.json", "where to write the JSON Schema")
	flag.Parse()
	if err := write(*out, reports.Schema()); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func write(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
