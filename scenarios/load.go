package scenarios

import (
	"bytes"
	"fmt"

	"github.com/goccy/go-yaml"
)

// Parse decodes one document strictly (unknown keys are errors).
func Parse(name string, data []byte) (*Document, error) {
	var d Document
	dec := yaml.NewDecoder(bytes.NewReader(data), yaml.Strict())
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("%s: %s", name, yaml.FormatError(err, false, true))
	}
	return &d, nil
}
