package scenarios

import (
	"encoding/json"

	"github.com/faultline/faultline/reference/redact"
	"github.com/faultline/faultline/reports"
)

// Annotate completes a result with what the simulator does not know: the
// scenario file as the user named it (a built-in as "builtin:NAME"), the
// hash of its effective document, and that document — includes merged,
// defaults filled in — with secrets masked by the default redactor (tokens,
// passwords, API keys, card numbers in payload templates).
func Annotate(res *reports.Result, l *Loaded, file string) {
	res.ScenarioFile = file
	res.ScenarioHash = l.Hash
	res.Config = RedactedConfig(l)
}

// RedactedConfig returns l's effective document as a JSON object, secrets
// masked.
func RedactedConfig(l *Loaded) map[string]any {
	b, err := json.Marshal(Effective(l))
	if err != nil {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil
	}
	return redact.Default().Fields(m)
}
