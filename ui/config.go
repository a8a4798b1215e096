package ui

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/faultline/faultline/metrics"
	"github.com/faultline/faultline/reference/dlq"
)

// DefaultListen is where `faultline ui` listens when not told: loopback
// only.
const DefaultListen = "127.0.0.1:8080"

// DefaultPageSize is how many entries a list page shows.
const DefaultPageSize = 50

// MaxPageSize bounds a list page (the API's limit parameter).
const MaxPageSize = 1000

// Config says what the UI serves and who may use it.
type Config struct {
	// Store is the DLQ the UI reads and changes (required). The optional
	// interfaces of dlq (BulkDeleter, Auditor, RevisionEditor) are found
	// by type assertion; an action whose interface is missing is shown
	// as unavailable.
	Store dlq.Store
	// Seed, instead of Store, serves a DLQ in the tutorial's layout
	// (`faultline ui --layout seed`): its list, entries and safe requeue.
	Seed *SeedConfig
	// Namespace and Target name the DLQ on every page (Target never with
	// a password).
	Namespace, Target string
	// Listen is the address the handler is served on. It decides the
	// security defaults: off loopback, Tokens are required, and TLS (or
	// InsecureHTTP).
	Listen string
	// Hosts are extra names the Host header may carry (a proxy's name);
	// the listen host, localhost, 127.0.0.1 and [::1] are always allowed.
	// Any other Host is refused (DNS rebinding).
	Hosts []string
	// Tokens maps a name to its token. With tokens, every request needs
	// one (pages: HTTP basic auth, user NAME, password TOKEN; the API:
	// "Authorization: Bearer TOKEN"), and the name is the audit's "who".
	// Without tokens (loopback only) pages and the API's reads (GET) need
	// none, "who" is User, and the API's moves (POST) are refused.
	Tokens map[string]string
	// TLS says the handler is served over TLS. Off loopback, TLS or
	// InsecureHTTP (a proxy terminates TLS) is required.
	TLS, InsecureHTTP bool
	// User is "who" without tokens: the OS user.
	User string
	// Log receives one JSON line per action (the server's stdout);
	// nil discards them.
	Log io.Writer
	// Now is the clock (default time.Now).
	Now func() time.Time
	// PageSize is the list's page size (default DefaultPageSize).
	PageSize int
	// Metrics is where /metrics is served from (the project's names and
	// labels, package metrics); nil: a Set of its own, labelled with
	// Namespace.
	Metrics *metrics.Set
}

// ConfigError is a Config field that is missing or not allowed.
type ConfigError struct {
	// Field is the Config field (or the command's flag, for the command).
	Field string
	// Reason says what is wrong and how to fix it.
	Reason string
	// Err is a sentinel the error matches (ErrNotLoopback), or nil.
	Err error
}

// Error gives the reason first (a "Tokens: ..." prefix would read as a
// secret to the redactor the CLI prints errors through).
func (e *ConfigError) Error() string { return e.Reason + " (field " + e.Field + ")" }

// Unwrap returns Err.
func (e *ConfigError) Unwrap() error { return e.Err }

// ErrNotLoopback is matched by the ConfigError of a listen address off
// loopback without the tokens or the TLS it requires.
var ErrNotLoopback = errors.New("listen address is not loopback")

// WithDefaults returns c with its defaults filled in.
func (c Config) WithDefaults() Config {
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.PageSize <= 0 {
		c.PageSize = DefaultPageSize
	}
	if c.User == "" {
		c.User = "unknown"
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	return c
}

// Validate checks c (after WithDefaults) and names the bad field.
func (c Config) Validate() error {
	switch {
	case c.Store == nil && c.Seed == nil:
		return &ConfigError{Field: "Store", Reason: "required: the DLQ to serve (or Seed, a DLQ in the seed layout)"}
	case c.Store != nil && c.Seed != nil:
		return &ConfigError{Field: "Seed", Reason: "give Store or Seed, not both"}
	case c.Seed != nil && c.Seed.Client == nil:
		return &ConfigError{Field: "Seed", Reason: "required: Seed.Client, the Redis holding the seed lists"}
	}
	return c.ValidateSecurity()
}

// ValidateSecurity checks the listen address, tokens and TLS of c (after
// WithDefaults): what Validate checks but the store, so a command can
// refuse an unsafe configuration before it connects to anything.
func (c Config) ValidateSecurity() error {
	host, _, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return &ConfigError{Field: "Listen", Reason: fmt.Sprintf("expected host:port, got %q", c.Listen)}
	}
	for name, tok := range c.Tokens {
		if name == "" || strings.ContainsAny(name, ":\n") {
			return &ConfigError{Field: "Tokens", Reason: fmt.Sprintf("a token's name must be non-empty without ':' (got %q)", name)}
		}
		if len(tok) < MinTokenLen {
			return &ConfigError{Field: "Tokens", Reason: fmt.Sprintf("the token of %q is shorter than %d characters", name, MinTokenLen)}
		}
	}
	if IsLoopback(host) {
		return nil
	}
	if len(c.Tokens) == 0 {
		return &ConfigError{Field: "Tokens", Err: ErrNotLoopback, Reason: fmt.Sprintf("listening on %s (not loopback) requires named tokens (--tokens FILE, lines name:token); or listen on 127.0.0.1", c.Listen)}
	}
	if !c.TLS && !c.InsecureHTTP {
		return &ConfigError{Field: "TLS", Err: ErrNotLoopback, Reason: fmt.Sprintf("listening on %s (not loopback) requires TLS (--tls-cert and --tls-key), or --insecure-http when a proxy in front terminates TLS", c.Listen)}
	}
	return nil
}

// MinTokenLen is the shortest token accepted.
const MinTokenLen = 16

// IsLoopback reports whether host (no port) is a loopback name or address:
// localhost, 127.0.0.0/8, ::1. "" (every interface) is not.
func IsLoopback(host string) bool {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ReadTokens reads a tokens file: one "name:token" a line; blank lines and
// lines starting with '#' are skipped. A malformed line is an error naming
// its line number (never its token). Messages name the file as the
// command's --tokens.
func ReadTokens(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read the --tokens file: %w", err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, tok, ok := strings.Cut(line, ":")
		name, tok = strings.TrimSpace(name), strings.TrimSpace(tok)
		switch {
		case !ok || name == "" || tok == "":
			return nil, fmt.Errorf("the --tokens file %s, line %d: expected name:token", path, n)
		case len(tok) < MinTokenLen:
			return nil, fmt.Errorf("the --tokens file %s, line %d: the token of %q is shorter than %d characters", path, n, name, MinTokenLen)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("the --tokens file %s, line %d: the name %q is given twice", path, n, name)
		}
		for other, t := range out {
			if t == tok {
				return nil, fmt.Errorf("the --tokens file %s, line %d: %q has the token of %q: each name needs its own token", path, n, name, other)
			}
		}
		out[name] = tok
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read the --tokens file %s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the --tokens file %s has no tokens (lines name:token)", path)
	}
	return out, nil
}

// tokenName returns the name of tok, comparing every token in constant
// time, or "" when no token matches.
func tokenName(tokens map[string]string, tok string) string {
	// Digests of equal length: the comparison's time says nothing of the
	// token's length or of where it first differs.
	got := sha256.Sum256([]byte(tok))
	found := ""
	for name, t := range tokens {
		want := sha256.Sum256([]byte(t))
		if subtle.ConstantTimeCompare(want[:], got[:]) == 1 {
			found = name
		}
	}
	return found
}
