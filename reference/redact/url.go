package redact

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
)

const (
	// URLMask replaces the masked parts of a URL: the path after its first
	// segment, query values and the fragment. It is URL-safe, unlike
	// DefaultMask.
	URLMask = "****"
	// RedactedURL is what URL returns for a string that is not an absolute
	// URL with a host, since nothing of it is known to be safe to print.
	RedactedURL = "[REDACTED URL]"
)

// URL returns a form of the URL raw that is safe to print: the scheme, the
// host and the first path segment, then "/****" if the path goes on; the
// userinfo password removed (and the user name too if String would mask
// it); every query value and the fragment replaced by "****". So
//
//	https://hooks.slack.com/services/T000/B000/XXXX -> https://hooks.slack.com/services/****
//	postgres://app:pw@db:5432/orders?sslmode=disable -> postgres://app@db:5432/orders?sslmode=****
//
// A first segment that String would mask becomes "****" too. A string that
// does not parse as an absolute URL with a host becomes RedactedURL. URL is
// idempotent and never panics.
func (r *Redactor) URL(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Scheme == "" || u.Host == "" || u.Opaque != "" {
		return RedactedURL
	}
	var b strings.Builder
	b.WriteString(u.Scheme)
	b.WriteString("://")
	if u.User != nil {
		if name := u.User.Username(); name != "" {
			if name != URLMask && r.String(name) == name {
				b.WriteString(url.User(name).String())
			} else {
				b.WriteString(URLMask) // unescaped, so that URL is idempotent
			}
			b.WriteByte('@')
		}
	}
	b.WriteString(u.Host)
	b.WriteByte('/')
	seg, rest, more := strings.Cut(strings.TrimPrefix(u.EscapedPath(), "/"), "/")
	if r.String(seg) != seg {
		seg = URLMask
	}
	b.WriteString(seg)
	switch {
	case rest != "":
		b.WriteString("/" + URLMask)
	case more:
		b.WriteByte('/')
	}
	if u.RawQuery != "" {
		b.WriteByte('?')
		for i, part := range strings.Split(u.RawQuery, "&") {
			if i > 0 {
				b.WriteByte('&')
			}
			key, value, eq := strings.Cut(part, "=")
			if r.String(key) != key {
				key = URLMask
			}
			b.WriteString(key)
			if eq {
				b.WriteByte('=')
				if value != "" {
					b.WriteString(URLMask)
				}
			}
		}
	}
	if u.Fragment != "" {
		b.WriteString("#" + URLMask)
	}
	return b.String()
}

// ErrInvalidSecretURL is matched, with errors.Is, by every error
// NewSecretURL returns. Those errors never contain the URL they reject.
var ErrInvalidSecretURL = errors.New("redact: invalid secret URL")

// SecretURL is a URL that is a credential, such as a Slack incoming-webhook
// URL, held in a config struct. Every way of printing or encoding it (String,
// GoString, Format with any verb, MarshalText, MarshalJSON, LogValue) gives
// the redacted form of Redactor.URL; only Reveal returns the real URL, for
// the HTTP client. The real URL sits behind a pointer, so that even fmt's
// reflection over a struct holding a SecretURL in an unexported field prints
// an address, not the URL. The zero value is the absent URL and prints as "".
type SecretURL struct{ s *secretURL }

type secretURL struct{ raw, redacted string }

var (
	_ fmt.Stringer             = SecretURL{}
	_ fmt.GoStringer           = SecretURL{}
	_ fmt.Formatter            = SecretURL{}
	_ encoding.TextMarshaler   = SecretURL{}
	_ json.Marshaler           = SecretURL{}
	_ slog.LogValuer           = SecretURL{}
	_ encoding.TextUnmarshaler = (*SecretURL)(nil)
)

// NewSecretURL returns raw, with surrounding white space trimmed, as a
// SecretURL. raw must be an absolute http or https URL with a host, and must
// not already be redacted (contain "****"). The error wraps
// ErrInvalidSecretURL and never contains raw.
func NewSecretURL(raw string) (SecretURL, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return SecretURL{}, fmt.Errorf("%w: empty", ErrInvalidSecretURL)
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		// url.Parse's error quotes its input: never wrap it.
		return SecretURL{}, fmt.Errorf("%w: not a valid URL", ErrInvalidSecretURL)
	case u.Scheme != "http" && u.Scheme != "https":
		return SecretURL{}, fmt.Errorf("%w: must be an absolute http or https URL", ErrInvalidSecretURL)
	case u.Opaque != "" || u.Hostname() == "":
		return SecretURL{}, fmt.Errorf("%w: has no host", ErrInvalidSecretURL)
	case strings.Contains(raw, URLMask):
		return SecretURL{}, fmt.Errorf("%w: is already redacted (contains %q); give the real URL", ErrInvalidSecretURL, URLMask)
	}
	return SecretURL{&secretURL{raw: raw, redacted: Default().URL(raw)}}, nil
}

// Reveal returns the real URL, to hand to the HTTP client and nothing else.
func (s SecretURL) Reveal() string {
	if s.s == nil {
		return ""
	}
	return s.s.raw
}

// IsZero reports whether s holds no URL.
func (s SecretURL) IsZero() bool { return s.s == nil }

// String returns the redacted URL, or "" for the zero SecretURL.
func (s SecretURL) String() string {
	if s.s == nil {
		return ""
	}
	return s.s.redacted
}

// GoString returns the redacted URL in a Go-like form, for %#v.
func (s SecretURL) GoString() string {
	return "redact.SecretURL(" + strconv.Quote(s.String()) + ")"
}

// Format prints the redacted URL for every verb and flag, %q and %x
// included, and GoString for %#v.
func (s SecretURL) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = io.WriteString(f, s.GoString())
		return
	}
	_, _ = fmt.Fprintf(f, fmt.FormatString(f, verb), s.String())
}

// MarshalText returns the redacted URL: encoding a config never leaks it.
func (s SecretURL) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// MarshalJSON returns the redacted URL as a JSON string.
func (s SecretURL) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// LogValue returns the redacted URL, for log/slog.
func (s SecretURL) LogValue() slog.Value { return slog.StringValue(s.String()) }

// UnmarshalText sets s from a config file through NewSecretURL; empty text
// gives the zero SecretURL. Marshalling is deliberately one-way: the
// redacted text MarshalText writes is rejected here.
func (s *SecretURL) UnmarshalText(text []byte) error {
	if len(strings.TrimSpace(string(text))) == 0 {
		*s = SecretURL{}
		return nil
	}
	v, err := NewSecretURL(string(text))
	if err != nil {
		return err
	}
	*s = v
	return nil
}
