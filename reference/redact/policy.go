package redact

import "slices"

// Field names a kind of value an output may show. Output is masked by
// default; a Policy lists the fields one output may show as they are.
type Field string

// The fields a Policy can reveal.
const (
	// Payload is a job's payload, as a DLQ entry keeps it to requeue it.
	Payload Field = "payload"
	// ErrorText is the error a job failed with, as a DLQ entry keeps it.
	ErrorText Field = "error"
	// Scenario is a scenario document, as a file to run again: faultline
	// run --shrunk-out writes the shrunk scenario with this field revealed,
	// so that the file still reproduces the failure.
	Scenario Field = "scenario"
)

// Policy is the one exception to "everything that leaves the process is
// masked": an operator tool may show a stored field unmasked, and only
// because the person running it said so with an explicit flag (faultline's
// --shrunk-out, an operator's --reveal=payload). The zero Policy reveals
// nothing. Stored data is never redacted — a DLQ keeps the payload it must
// requeue — so the choice is made here, on the way out, one field at a time.
//
// A tool builds a Policy from its flags, never from a file or an
// environment variable, and passes every value it prints through Text or
// Fields with the field it belongs to.
type Policy struct {
	// Reveal lists the fields shown unmasked.
	Reveal []Field
	// Redactor masks every other field; nil means Default().
	Redactor *Redactor
}

// Reveals reports whether p shows field f unmasked.
func (p Policy) Reveals(f Field) bool { return slices.Contains(p.Reveal, f) }

func (p Policy) redactor() *Redactor {
	if p.Redactor == nil {
		return Default()
	}
	return p.Redactor
}

// Text returns s as the output may show it: s itself if p reveals f,
// otherwise s masked by the Redactor's String.
func (p Policy) Text(f Field, s string) string {
	if p.Reveals(f) {
		return s
	}
	return p.redactor().String(s)
}

// Fields returns m as the output may show it: m itself if p reveals f,
// otherwise a masked copy made by the Redactor's Fields.
func (p Policy) Fields(f Field, m map[string]any) map[string]any {
	if p.Reveals(f) {
		return m
	}
	return p.redactor().Fields(m)
}
