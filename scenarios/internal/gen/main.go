// Command gen writes the scenario format's generated files: the JSON Schema
// and the reference page. `go generate ./scenarios` runs it from the
// scenarios directory.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/scenarios"
)

func main() {
	schema := flag.String("schema", "schema/scenario.schema.json", "where to write the JSON Schema")
	doc := flag.String("doc", "../docs/scenario-format.md", "where to write the reference page")
	flag.Parse()
	for _, f := range []struct {
		path string
		data []byte
	}{{*schema, scenarios.Schema()}, {*doc, append(scenarios.Reference(), oracle.BlackBoxObservability()...)}} {
		if err := write(f.path, f.data); err != nil {
			fmt.Fprintln(os.Stderr, "gen:", err)
			os.Exit(1)
		}
	}
}

func write(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
