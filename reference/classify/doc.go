// Package classify decides what a job failure means: its class (transient,
// rate-limited, indeterminate, permanent, critical, canceled), its severity
// and its source.
//
// A Classifier walks an ordered table of rules; the first rule that matches
// wins. Rules match errors by errors.Is sentinels, by concrete types (the
// errors.As of the Go standard library, through a Registry of named kinds so
// that rule files can name them), by marker interfaces a dependency's errors
// may implement (Timeout() bool, Temporary() bool, StatusCode() int,
// DeclineCode() string, RetryAfter() time.Duration), by HTTP status, and, as a
// last resort, by message pattern. A rule may be scoped to a dependency or a
// task, because the same error means different things in different places: a
// 504 from the payment gateway is indeterminate (the charge may have gone
// through), a 504 from an SMTP relay is merely transient.
//
// A Memo remembers a Classifier's verdicts per error value and scope, for
// a driver whose errors never change once made (the simulator's faults).
//
// DefaultRules reproduces the classification of the seed document, corrected
// where it was naive, and ParseRules reads a rule table from YAML with
// line-and-column errors. The rule file's format — every key, the matchers,
// the scope patterns, the registered sentinel and kind names, and examples —
// is described in docs/rules-format.md at the repository's root (a spec
// loads its examples and checks it names every key).
package classify
