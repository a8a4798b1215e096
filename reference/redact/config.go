package redact

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// The defaults WithDefaults puts in the zero fields of a Config.
const (
	// DefaultMask replaces a masked value in free text and in payloads.
	DefaultMask = "[REDACTED]"
	// MaxDepth is how deep Fields follows nested maps and slices; a value
	// nested deeper is replaced by the mask. JSON-like data has no cycles,
	// but a payload built in code can, and the guard keeps Fields finite.
	MaxDepth = 32
)

// DefaultKeys returns the keys whose values are always masked, normalised
// (see Config.Keys). It returns a new slice on every call, so that a caller
// may append to it without touching anyone else's list.
func DefaultKeys() []string {
	return []string{
		"password", "passwd", "pwd", "secret", "token", "accesstoken",
		"refreshtoken", "idtoken", "apikey", "apisecret", "authorization",
		"proxyauthorization", "cookie", "setcookie", "session", "sessionid",
		"cvv", "cvc", "cvv2", "cvc2", "securitycode", "pin", "privatekey",
		"clientsecret", "webhookurl", "dsn", "connectionstring",
	}
}

// DefaultKeyFragments returns the fragments that make any key containing
// them sensitive ("stripe_secret_key", "github_token"). It returns a new
// slice on every call.
func DefaultKeyFragments() []string {
	return []string{"password", "secret", "token", "apikey"}
}

// Config tunes a Redactor. The zero value is usable: every zero field takes
// its default (see WithDefaults).
type Config struct {
	// Keys are the keys whose values are always masked: map keys in Fields,
	// header names in Header, and the key of a key=value, key: value or
	// "key":"value" pair in free text. They match case-insensitively,
	// ignoring '-', '_' and spaces, so "api_key", "API-Key" and "apikey" all
	// match "apikey". Nil means DefaultKeys(); an empty, non-nil slice means
	// no exact keys (KeyFragments still apply). To extend the default list,
	// append to DefaultKeys().
	Keys []string
	// KeyFragments make any key that contains one of them sensitive, after
	// the same normalisation as Keys. Nil means DefaultKeyFragments().
	KeyFragments []string
	// Patterns are extra regular expressions (RE2 syntax, as in package
	// regexp) whose matches in any string are replaced by Mask. A pattern
	// must not match the empty string, nor match inside Mask, or masking
	// would never settle.
	Patterns []string
	// Mask replaces a masked value. Default DefaultMask. It must not contain
	// quotes, backslashes or control characters, nor be changed by the
	// Redactor itself. Card numbers and
	// URLs have their own fixed formats (see Redactor.String and
	// Redactor.URL).
	Mask string
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.Keys == nil {
		c.Keys = DefaultKeys()
	}
	if c.KeyFragments == nil {
		c.KeyFragments = DefaultKeyFragments()
	}
	if c.Mask == "" {
		c.Mask = DefaultMask
	}
	return c
}

// Validate reports the first field of c that New would reject, as a
// *ConfigError naming it ("Patterns[2]"). It checks c with defaults applied,
// so a zero field is always valid. It never panics.
func (c Config) Validate() error {
	_, err := compile(c.WithDefaults())
	return err
}

// ErrInvalidConfig is matched, with errors.Is, by every *ConfigError.
var ErrInvalidConfig = errors.New("invalid redact config")

// ConfigError reports the configuration field New rejected.
type ConfigError struct {
	// Field names the field as spelt in Config, with its index for a list
	// ("Patterns[2]", "Keys[0]", "Mask").
	Field string
	// Value is the rejected value.
	Value any
	// Reason says what the field must be.
	Reason string
	// Err is the underlying error, if any: the *syntax.Error of a pattern
	// that does not compile.
	Err error
}

// Error names the field, its value and what is wrong with it.
func (e *ConfigError) Error() string {
	return fmt.Sprintf("redact: invalid %s %q: %s", e.Field, fmt.Sprint(e.Value), e.Reason)
}

// Unwrap returns ErrInvalidConfig and, if set, Err.
func (e *ConfigError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrInvalidConfig, e.Err}
	}
	return []error{ErrInvalidConfig}
}

// compile checks c, which has its defaults, and builds the Redactor it
// describes.
func compile(c Config) (*Redactor, error) {
	if i := strings.IndexFunc(c.Mask, func(c rune) bool {
		return c == '"' || c == '\'' || c == '\\' || c < ' ' || c == 0x7f
	}); i >= 0 {
		return nil, &ConfigError{Field: "Mask", Value: c.Mask,
			Reason: "must not contain quotes, backslashes or control characters: it is spliced into quoted strings"}
	}
	r := &Redactor{
		mask:      c.Mask,
		keys:      make(map[string]struct{}, len(c.Keys)),
		fragments: make([]string, 0, len(c.KeyFragments)),
	}
	for i, k := range c.Keys {
		n := normalizeKey(k)
		if n == "" {
			return nil, &ConfigError{Field: fmt.Sprintf("Keys[%d]", i), Value: k,
				Reason: "is empty once case, '-', '_' and spaces are ignored"}
		}
		r.keys[n] = struct{}{}
	}
	for i, f := range c.KeyFragments {
		n := normalizeKey(f)
		if n == "" {
			return nil, &ConfigError{Field: fmt.Sprintf("KeyFragments[%d]", i), Value: f,
				Reason: "is empty once case, '-', '_' and spaces are ignored; it would match every key"}
		}
		r.fragments = append(r.fragments, n)
	}
	for i, p := range c.Patterns {
		field := fmt.Sprintf("Patterns[%d]", i)
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, &ConfigError{Field: field, Value: p, Reason: "is not a valid RE2 regular expression: " + err.Error(), Err: err}
		}
		if re.MatchString("") {
			return nil, &ConfigError{Field: field, Value: p, Reason: "matches the empty string"}
		}
		if re.MatchString(c.Mask) {
			return nil, &ConfigError{Field: field, Value: p,
				Reason: fmt.Sprintf("matches inside the mask %q, so masked text would be masked again", c.Mask)}
		}
		r.patterns = append(r.patterns, re)
	}
	if got := r.once(c.Mask); got != c.Mask {
		return nil, &ConfigError{Field: "Mask", Value: c.Mask,
			Reason: fmt.Sprintf("is itself redacted (to %q), so masked text would be masked again", got)}
	}
	return r, nil
}

// normalizeKey lower-cases k and drops '-', '_' and spaces.
func normalizeKey(k string) string {
	var b strings.Builder
	b.Grow(len(k))
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c == '-' || c == '_' || c == ' ':
		case 'A' <= c && c <= 'Z':
			b.WriteByte(c + 'a' - 'A')
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
