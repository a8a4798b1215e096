package sink

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultTimeout bounds one delivery by an HTTP sink when its config names
// neither a Timeout nor a Client with one. An HTTP client without a timeout
// can hang a delivery, and with it the alerter's outbox, forever.
const DefaultTimeout = 10 * time.Second

// MaxBodyExcerpt is the most bytes of an error answer's body kept in a
// *failure.HTTPError: enough for "channel_is_archived" or a short JSON error,
// never a whole HTML error page.
const MaxBodyExcerpt = 256

// maxDrain bounds how much of an answer's body is read and thrown away so the
// connection can be reused; a larger body costs a new connection instead.
const maxDrain = 64 << 10

// ConfigError is a sink configuration that cannot work. It names the field
// and says why, and never holds the field's value: a webhook URL, a routing
// key or a header value may be a credential.
type ConfigError struct {
	// Field names the config field, e.g. "URL", "Timeout", "Headers".
	Field string
	// Reason says what is wrong, e.g. "is required".
	Reason string
}

// Error returns e.g. "sink config: URL: is required".
func (e *ConfigError) Error() string {
	return "sink config: " + e.Field + ": " + e.Reason
}

// validateURL checks that raw is an absolute http or https URL. Its error
// never contains raw.
func validateURL(raw string) error {
	if raw == "" {
		return &ConfigError{Field: "URL", Reason: "is required"}
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse's error quotes the URL: drop it.
		return &ConfigError{Field: "URL", Reason: "cannot be parsed as a URL"}
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return &ConfigError{Field: "URL", Reason: "must be an absolute http or https URL"}
	}
	if u.Host == "" {
		return &ConfigError{Field: "URL", Reason: "has no host"}
	}
	return nil
}

// validateTimeout rejects a negative timeout; zero means the default.
func validateTimeout(d time.Duration) error {
	if d < 0 {
		return &ConfigError{Field: "Timeout", Reason: fmt.Sprintf("must not be negative, got %s", d)}
	}
	return nil
}

// defaultTimeout is the timeout a config gets when it sets none: its
// client's, else DefaultTimeout.
func defaultTimeout(timeout time.Duration, client *http.Client) time.Duration {
	switch {
	case timeout != 0:
		return timeout
	case client != nil && client.Timeout > 0:
		return client.Timeout
	default:
		return DefaultTimeout
	}
}

// newClient returns a copy of client (a new one when nil) with the given
// timeout and, when wrap is set, its transport wrapped. The caller's client
// and transport are never modified.
func newClient(client *http.Client, timeout time.Duration, wrap func(http.RoundTripper) http.RoundTripper) *http.Client {
	var c http.Client
	if client != nil {
		c = *client
	}
	c.Timeout = timeout
	if wrap != nil {
		base := c.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		c.Transport = wrap(base)
	}
	return &c
}

// validHeaderName reports whether name is an HTTP token (RFC 9110 5.1).
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// validHeaderValue reports whether value can be sent as a header value: no
// control characters but tab, so it cannot split the request.
func validHeaderValue(value string) bool {
	for i := 0; i < len(value); i++ {
		if c := value[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}
