// Package redact masks secrets before anything leaves the process: the job
// payloads and error texts that alerts (Slack, webhooks, logs) and reports
// carry.
//
// A Redactor is built once from a Config by New (or shared, by Default) and
// is immutable, deterministic and safe for concurrent use. Everything
// faultline sends out of the process passes it: reports (reports.Redact),
// the CLI's output and errors, printed scenarios, logs, alerts. It has five
// entry points:
//
//   - String masks secrets inside free text: card numbers that pass the Luhn
//     check (not identifiers whose digits pass it by chance: Redis stream
//     IDs, epoch-millisecond times, UUIDs of digits), credentials after Bearer, Basic and Token, the values of
//     sensitive keys in key=value, key: value and JSON pairs, URL passwords
//     (redis://:PW@host too), Slack, Discord, Teams and PagerDuty webhook
//     URLs, well-known token shapes (Slack, Stripe, GitHub,
//     AWS, JWT) and the configured Patterns. It is idempotent.
//   - Fields returns a redacted deep copy of a JSON-like payload: the value
//     of a sensitive key is masked whole, every other string goes through
//     String.
//   - Header returns a redacted copy of an http.Header.
//   - URL returns a URL safe to print: scheme, host and first path segment.
//   - FileName returns a text masked, then reduced to file-name characters
//     ("leaky [CARD ****1111]" becomes "leaky_CARD-1111"): for a file named
//     after something a user wrote, such as a scenario's name.
//
// The formats are fixed so that a masked text stays readable and masking it
// again changes nothing:
//
//	secret values          [REDACTED]              (Config.Mask)
//	card numbers           [CARD ****4242]         (last four digits kept)
//	Authorization values   Bearer [REDACTED]       (a known scheme is kept)
//	URL parts              https://host/first/****?key=****
//	unparseable URLs       [REDACTED URL]
//
// NewHandler wraps a slog.Handler so that every log record is masked the
// same way (message, string and error attributes, sensitive keys).
//
// Stored data is never redacted — a DLQ keeps the payload it must requeue —
// so masking happens on the way out, and the one exception is Policy: an
// operator tool may show a field (Payload, ErrorText, Scenario) unmasked
// only because the person running it asked with an explicit flag, such as
// faultline run --shrunk-out.
//
// SecretURL holds a URL that is itself a credential, such as a Slack
// incoming-webhook URL, in a config struct: every way of printing, logging
// or encoding it gives the redacted form, and only Reveal returns the real
// one.
//
// Redaction is a last line of defence, built on patterns: it catches the
// secrets that have a recognisable shape or a telling key, not a password
// pasted into prose. Keep secrets out of payloads and errors in the first
// place; run what still goes out through a Redactor.
package redact
