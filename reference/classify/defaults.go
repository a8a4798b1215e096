package classify

import "regexp"

// PaymentGateway is the dependency name the default payment rules are scoped
// to. A team whose gateway has another name copies those rules with its own
// (in a rule file, `dependency:` on each).
const PaymentGateway = "payment-gateway"

// RetryableDeclineCodes are the card decline codes that mean "the issuer or
// processor had a problem, try again", unlike a real refusal.
var RetryableDeclineCodes = []string{"processing_error", "try_again_later", "issuer_not_available", "reenter_transaction", "approve_with_id"}

// DefaultRules returns the built-in rule table, a new copy each call. It
// reproduces the seed's classification and corrects its naive spots:
//
//   - connection errors and timeouts are transient/medium (the seed's
//     WARNING), bad data (value, type, key errors) permanent/low (DEBUG), and
//     permission or authentication failures critical/high (CRITICAL);
//   - the payment challenge: a declined card is permanent, except the few
//     decline codes that mean "try again"; a timeout or an ambiguous 5xx from
//     the payment gateway is indeterminate, because the charge may have gone
//     through (retried only with an idempotency key), and so is anything
//     else it answers that no rule knows; a failed dial to it is transient,
//     because nothing was sent; an authentication failure is critical and
//     pages;
//   - HTTP statuses: 401/403/407 critical, 429 rate-limited, 408 and 5xx
//     transient, other 4xx permanent;
//   - context.Canceled is not a failure when the worker is shutting down
//     (Scope.ShuttingDown): the job is released; any other cancellation is
//     transient, and on the payment gateway indeterminate;
//   - message patterns only as a last resort, on the innermost error's text
//     (not the job data a wrapper may quote); and anything unmatched falls to
//     Fallback (transient/medium), never to silence.
func DefaultRules() []Rule {
	r := DefaultRegistry()
	is := func(names ...string) []error {
		out := make([]error, len(names))
		for i, n := range names {
			out[i] = r.mustSentinel(n)
		}
		return out
	}
	kinds := func(names ...string) []Kind {
		out := make([]Kind, len(names))
		for i, n := range names {
			out[i] = r.mustKind(n)
		}
		return out
	}
	rule := func(name string, m Match, c Class, sev Severity, src Source) Rule {
		return Rule{Name: name, Match: m, Class: c, Severity: sev, Source: src}
	}
	payment := func(rr Rule) Rule {
		rr.Dependency = PaymentGateway
		return rr
	}
	return []Rule{
		// Card declines, wherever they come from.
		rule("card-decline-retryable", Match{DeclineCodes: RetryableDeclineCodes}, Transient, Low, Dependency),
		rule("card-declined", Match{Status: []StatusRange{Status(402)}}, Permanent, Low, Data),

		// The payment gateway: once a charge may have been sent, an error
		// without an answer leaves its outcome unknown. Only a failed dial
		// is known not to have sent anything.
		payment(rule("payment-dial-failed", Match{Kinds: kinds("net.OpError/dial")}, Transient, Medium, Network)),
		payment(rule("payment-connect-refused", Match{Is: is("syscall.ECONNREFUSED")}, Transient, Medium, Network)),
		payment(rule("payment-timeout", Match{Timeout: true}, Indeterminate, Medium, Dependency)),
		payment(rule("payment-ambiguous-5xx", Match{Status: []StatusRange{Status(500), Status(502), Status(504)}}, Indeterminate, Medium, Dependency)),
		payment(rule("payment-connection-lost", Match{Is: is("io.EOF", "io.ErrUnexpectedEOF", "syscall.ECONNRESET", "syscall.EPIPE", "syscall.ETIMEDOUT", "net.ErrClosed")}, Indeterminate, Medium, Dependency)),
		payment(rule("payment-network-error", Match{Kinds: kinds("net.OpError")}, Indeterminate, Medium, Dependency)),
		// Canceled mid-charge, even by a shutdown: the request may be out.
		payment(rule("payment-canceled", Match{Is: is("context.Canceled")}, Indeterminate, Medium, Dependency)),

		// A shutdown is not a failure: the job is released, no attempt used.
		rule("shutdown", Match{Is: is("context.Canceled"), ShuttingDown: true}, Canceled, Low, System),

		// Authentication and permission: a person must act.
		rule("auth-status", Match{Status: []StatusRange{Status(401), Status(403), Status(407)}}, Critical, High, Auth),
		rule("auth-error", Match{Is: is("failure.ErrAuthentication")}, Critical, High, Auth),
		rule("permission-denied", Match{Is: is("fs.ErrPermission")}, Critical, High, System),
		rule("tls-certificate", Match{Kinds: kinds("x509.UnknownAuthorityError", "x509.CertificateInvalidError", "x509.HostnameError", "tls.CertificateVerificationError")}, Critical, High, System),
		// NXDOMAIN is often a deploy or a negative-cache blip: retried, but
		// loud.
		rule("dns-not-found", Match{Kinds: kinds("net.DNSError/not-found")}, Transient, High, System),

		// A cancellation that is not a shutdown (a parent's deadline, a
		// caller giving up) is a failure like any other, and uses an attempt:
		// released for ever, it would never end.
		rule("canceled", Match{Is: is("context.Canceled")}, Transient, Medium, System),

		// HTTP statuses.
		rule("rate-limited", Match{Status: []StatusRange{Status(429)}}, RateLimited, Medium, Dependency),
		rule("http-timeout", Match{Status: []StatusRange{Status(408), Status(504)}}, Transient, Medium, Dependency),
		rule("http-5xx", Match{Status: []StatusRange{{500, 599}}}, Transient, Medium, Dependency),
		rule("http-4xx", Match{Status: []StatusRange{{400, 499}}}, Permanent, Low, Data),

		// Network and timeouts.
		rule("timeout", Match{Timeout: true}, Transient, Medium, Network),
		rule("connection-error", Match{Is: is("syscall.ECONNREFUSED", "syscall.ECONNRESET", "syscall.ECONNABORTED", "syscall.ETIMEDOUT", "syscall.EPIPE", "syscall.EHOSTUNREACH", "syscall.ENETUNREACH", "io.ErrUnexpectedEOF", "net.ErrClosed")}, Transient, Medium, Network),
		rule("network-error", Match{Kinds: kinds("net.OpError", "net.DNSError")}, Transient, Medium, Network),
		rule("temporary", Match{Temporary: true}, Transient, Medium, System),

		// Bad data: the seed's ValueError, TypeError and KeyError.
		rule("bad-data", Match{Is: is("failure.ErrInvalidInput", "failure.ErrMissingKey", "strconv.ErrSyntax", "strconv.ErrRange")}, Permanent, Low, Data),
		rule("bad-data-kind", Match{Kinds: kinds("json.SyntaxError", "json.UnmarshalTypeError", "strconv.NumError", "time.ParseError", "base64.CorruptInputError")}, Permanent, Low, Data),

		// Last resort: the innermost error's message.
		rule("message-auth", Match{Message: regexp.MustCompile(`(?i)\b(unauthori[sz]ed|forbidden|permission denied|access denied|invalid (api[ _-]?)?(token|key|credentials)|authentication failed)\b`)}, Critical, High, Auth),
		// Whatever else the payment gateway answers leaves the charge's
		// outcome unknown.
		payment(rule("payment-unknown", Match{}, Indeterminate, Medium, Dependency)),
		rule("message-timeout", Match{Message: regexp.MustCompile(`(?i)\b(timed? ?out|timeout|deadline exceeded)\b`)}, Transient, Medium, Network),
		rule("message-connection", Match{Message: regexp.MustCompile(`(?i)\b(connection (refused|reset|closed)|broken pipe|no route to host|network is unreachable)\b`)}, Transient, Medium, Network),
	}
}
