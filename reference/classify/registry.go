package classify

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/faultline/faultline/reference/failure"
)

// Kind matches errors of one Go type, optionally narrowed by a predicate on
// the value: the errors.As of a rule. Rule files cannot name Go types, so
// kinds are registered in a Registry under a name such as "net.OpError".
type Kind struct {
	// Name is how rule files refer to the kind.
	Name  string
	match func(error) bool
}

// KindOf returns a kind matching the first error of type E in an error's
// chain (as errors.AsType finds it) for which pred, if not nil, holds.
func KindOf[E error](name string, pred func(E) bool) Kind {
	return Kind{Name: name, match: func(err error) bool {
		e, ok := errors.AsType[E](err)
		return ok && (pred == nil || pred(e))
	}}
}

// Matches reports whether err's chain holds an error of the kind.
func (k Kind) Matches(err error) bool {
	return k.match != nil && k.match(err)
}

// Registry names the error kinds and sentinel errors that rule files may
// refer to. It is not safe for concurrent modification; fill it before
// parsing rules.
type Registry struct {
	kinds     map[string]Kind
	sentinels map[string]error
}

// ErrDuplicateName is returned when a kind or sentinel name is registered
// twice.
var ErrDuplicateName = errors.New("name already registered")

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{kinds: map[string]Kind{}, sentinels: map[string]error{}}
}

// RegisterKind adds a kind under its name.
func (r *Registry) RegisterKind(k Kind) error {
	if k.Name == "" || k.match == nil {
		return fmt.Errorf("register kind %q: a kind needs a name and a matcher (use KindOf)", k.Name)
	}
	if _, dup := r.kinds[k.Name]; dup {
		return fmt.Errorf("register kind %q: %w", k.Name, ErrDuplicateName)
	}
	r.kinds[k.Name] = k
	return nil
}

// RegisterSentinel adds a sentinel error, matched with errors.Is.
func (r *Registry) RegisterSentinel(name string, err error) error {
	if name == "" || err == nil {
		return fmt.Errorf("register sentinel %q: a sentinel needs a name and a non-nil error", name)
	}
	if _, dup := r.sentinels[name]; dup {
		return fmt.Errorf("register sentinel %q: %w", name, ErrDuplicateName)
	}
	r.sentinels[name] = err
	return nil
}

// Kind returns the kind registered under name.
func (r *Registry) Kind(name string) (Kind, bool) {
	k, ok := r.kinds[name]
	return k, ok
}

// Sentinel returns the sentinel registered under name.
func (r *Registry) Sentinel(name string) (error, bool) {
	e, ok := r.sentinels[name]
	return e, ok
}

// KindNames returns the registered kind names, sorted.
func (r *Registry) KindNames() []string { return sortedKeys(r.kinds) }

// SentinelNames returns the registered sentinel names, sorted.
func (r *Registry) SentinelNames() []string { return sortedKeys(r.sentinels) }

func sortedKeys[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// mustKind and mustSentinel look up built-ins; a missing one is a bug in this
// package, caught by its tests.
func (r *Registry) mustKind(name string) Kind {
	k, ok := r.kinds[name]
	if !ok {
		panic("classify: built-in kind " + name + " is not registered")
	}
	return k
}

func (r *Registry) mustSentinel(name string) error {
	e, ok := r.sentinels[name]
	if !ok {
		panic("classify: built-in sentinel " + name + " is not registered")
	}
	return e
}

// DefaultRegistry returns a new registry holding the built-in kinds and
// sentinels: the standard library's network, context, I/O, parsing and TLS
// errors and the failure package's sentinels. Add a team's own with
// RegisterKind and RegisterSentinel.
func DefaultRegistry() *Registry {
	r := NewRegistry()
	kinds := []Kind{
		KindOf[*net.OpError]("net.OpError", nil),
		// A failed dial never sent the request, so even a non-idempotent call
		// may be retried.
		KindOf("net.OpError/dial", func(e *net.OpError) bool { return e.Op == "dial" }),
		KindOf[*net.DNSError]("net.DNSError", nil),
		KindOf("net.DNSError/not-found", func(e *net.DNSError) bool { return e.IsNotFound }),
		KindOf[*url.Error]("url.Error", nil),
		KindOf[*os.SyscallError]("os.SyscallError", nil),
		KindOf[*json.SyntaxError]("json.SyntaxError", nil),
		KindOf[*json.UnmarshalTypeError]("json.UnmarshalTypeError", nil),
		KindOf[*strconv.NumError]("strconv.NumError", nil),
		KindOf[*time.ParseError]("time.ParseError", nil),
		KindOf[base64.CorruptInputError]("base64.CorruptInputError", nil),
		KindOf[x509.UnknownAuthorityError]("x509.UnknownAuthorityError", nil),
		KindOf[x509.CertificateInvalidError]("x509.CertificateInvalidError", nil),
		KindOf[x509.HostnameError]("x509.HostnameError", nil),
		KindOf[*tls.CertificateVerificationError]("tls.CertificateVerificationError", nil),
		KindOf[*failure.HTTPError]("failure.HTTPError", nil),
		KindOf[*failure.CardError]("failure.CardError", nil),
		KindOf[*failure.TimeoutError]("failure.TimeoutError", nil),
	}
	for _, k := range kinds {
		_ = r.RegisterKind(k) // names above are distinct
	}
	sentinels := []struct {
		name string
		err  error
	}{
		{"context.Canceled", context.Canceled},
		{"context.DeadlineExceeded", context.DeadlineExceeded},
		{"os.ErrDeadlineExceeded", os.ErrDeadlineExceeded},
		{"io.EOF", io.EOF},
		{"io.ErrUnexpectedEOF", io.ErrUnexpectedEOF},
		{"io.ErrClosedPipe", io.ErrClosedPipe},
		{"net.ErrClosed", net.ErrClosed},
		{"fs.ErrPermission", fs.ErrPermission},
		{"os.ErrPermission", os.ErrPermission},
		{"fs.ErrNotExist", fs.ErrNotExist},
		{"syscall.ECONNREFUSED", syscall.ECONNREFUSED},
		{"syscall.ECONNRESET", syscall.ECONNRESET},
		{"syscall.ECONNABORTED", syscall.ECONNABORTED},
		{"syscall.ETIMEDOUT", syscall.ETIMEDOUT},
		{"syscall.EPIPE", syscall.EPIPE},
		{"syscall.EHOSTUNREACH", syscall.EHOSTUNREACH},
		{"syscall.ENETUNREACH", syscall.ENETUNREACH},
		{"strconv.ErrSyntax", strconv.ErrSyntax},
		{"strconv.ErrRange", strconv.ErrRange},
		{"failure.ErrAuthentication", failure.ErrAuthentication},
		{"failure.ErrInvalidInput", failure.ErrInvalidInput},
		{"failure.ErrMissingKey", failure.ErrMissingKey},
	}
	for _, s := range sentinels {
		_ = r.RegisterSentinel(s.name, s.err) // names above are distinct
	}
	return r
}
