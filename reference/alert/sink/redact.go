package sink

import (
	"errors"
	"net/url"
	"slices"
	"strings"
)

// minSecret is the shortest URL part scrubbed from error texts: a shorter
// part is no secret, and replacing it everywhere would mangle messages.
const minSecret = 4

// redactor hides a webhook URL. The URL is a credential (whoever holds it can
// post), so it appears in errors and output only as scheme://host/ plus the
// first path segment plus "/****".
type redactor struct {
	// url is the redacted form.
	url string
	// secrets are the URL's secret parts as they may appear in a message,
	// longest first, each with what replaces it.
	secrets []secret
}

// secret is a part of a URL to hide, and what shows instead.
type secret struct {
	text, replacement string
}

// newRedactor returns the redactor for raw, a URL that passed validateURL.
func newRedactor(raw string) redactor {
	u, err := url.Parse(raw)
	if err != nil {
		return redactor{url: "****", secrets: []secret{{raw, "****"}}}
	}
	r := redactor{url: redactURL(u)}
	add := func(text, replacement string) {
		if len(text) >= minSecret && !slices.ContainsFunc(r.secrets, func(s secret) bool { return s.text == text }) {
			r.secrets = append(r.secrets, secret{text, replacement})
		}
	}
	add(raw, r.url)
	add(u.String(), r.url)
	path := strings.TrimPrefix(r.url, u.Scheme+"://"+u.Host)
	for _, p := range []string{u.EscapedPath(), u.Path} {
		add(p, path)
		add(afterFirstSegment(p), "****")
	}
	add(u.RawQuery, "****")
	if pw, ok := u.User.Password(); ok {
		add(pw, "****")
	}
	slices.SortStableFunc(r.secrets, func(a, b secret) int { return len(b.text) - len(a.text) })
	return r
}

// redactURL returns scheme://host/first/**** when the path has more than one
// segment, else scheme://host/****. Query, fragment and user info are dropped.
func redactURL(u *url.URL) string {
	s := u.Scheme + "://" + u.Host + "/"
	path := strings.TrimPrefix(u.EscapedPath(), "/")
	if first, rest, ok := strings.Cut(path, "/"); ok && first != "" && rest != "" {
		s += first + "/"
	}
	return s + "****"
}

// afterFirstSegment returns what follows a path's first segment, the part of
// a Slack webhook URL (/services/T…/B…/secret) that is the credential.
func afterFirstSegment(path string) string {
	_, rest, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	return rest
}

// text returns s with every secret part of the URL replaced, for texts that
// come from elsewhere: a server may echo the request path in its error page.
func (r redactor) text(s string) string {
	for _, sec := range r.secrets {
		s = strings.ReplaceAll(s, sec.text, sec.replacement)
	}
	return s
}

// leaks reports whether s contains a secret part of the URL.
func (r redactor) leaks(s string) bool {
	return slices.ContainsFunc(r.secrets, func(sec secret) bool { return strings.Contains(s, sec.text) })
}

// err returns err with the URL hidden. A *url.Error, where net/http puts the
// request URL, is rebuilt with the redacted URL, keeping its cause (and so
// Timeout()) intact. Any other error whose text still holds a secret is
// replaced by a redactedError, which keeps errors.Is but not the chain.
func (r redactor) err(err error) error {
	if err == nil {
		return nil
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return &url.Error{Op: uerr.Op, URL: r.url, Err: r.err(uerr.Err)}
	}
	if !r.leaks(err.Error()) {
		return err
	}
	return &redactedError{msg: r.text(err.Error()), cause: err}
}

// redactedError is an error whose text held a secret. It does not unwrap, as
// its cause's text holds the secret, but it answers errors.Is and Timeout for
// its cause, so a redacted timeout is still a timeout.
type redactedError struct {
	msg   string
	cause error
}

// Error returns the cause's text with the secret replaced.
func (e *redactedError) Error() string { return e.msg }

// Is reports whether the cause matches target.
func (e *redactedError) Is(target error) bool { return errors.Is(e.cause, target) }

// Timeout reports whether the cause is a timeout.
func (e *redactedError) Timeout() bool {
	var t interface{ Timeout() bool }
	return errors.As(e.cause, &t) && t.Timeout()
}

// Temporary reports false; it exists so a redactedError is a net.Error.
func (e *redactedError) Temporary() bool { return false }
