package redact

// Once applies r's rules a single time, for the specs that check that one
// pass of the built-in rules already settles the text.
func Once(r *Redactor, s string) string { return r.once(s) }
