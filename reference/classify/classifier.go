package classify

import (
	"errors"
	"fmt"
	"net/http"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/faultline/faultline/reference/internal/mutant"
)

// The marker interfaces the classifier looks for along an error's chain. A
// team's own error types classify like the built-in ones by implementing
// them.
type (
	// StatusCoder is an error that carries an HTTP status code.
	StatusCoder interface {
		error
		StatusCode() int
	}
	// DeclineCoder is a card decline carrying the issuer's decline code.
	DeclineCoder interface {
		error
		DeclineCode() string
	}
	// RetryAfterer carries a dependency's hint of when to try again.
	RetryAfterer interface {
		error
		RetryAfter() time.Duration
	}
	// RetryAfterHeaderer carries a raw Retry-After header: delay-seconds or
	// an HTTP date, resolved against the classification's time.
	RetryAfterHeaderer interface {
		error
		RetryAfterHeader() string
	}
	// Timeouter is an error that knows whether it is a timeout (net.Error,
	// context.DeadlineExceeded, os.ErrDeadlineExceeded, url.Error).
	Timeouter interface {
		error
		Timeout() bool
	}
	// Temporarier is an error that knows whether it is temporary.
	Temporarier interface {
		error
		Temporary() bool
	}
)

// Scope is where an error happened: the dependency that was called and the
// job's task, so that rules can mean different things in different places,
// and the time of the classification, against which an HTTP-date Retry-After
// is resolved.
type Scope struct {
	Dependency string
	Task       string
	// Now resolves an HTTP-date Retry-After. When it is zero, such a hint
	// is ignored rather than resolved against the year 1.
	Now time.Time
	// ShuttingDown says the worker's own context was canceled because the
	// worker is stopping: a context.Canceled is then a release, not a
	// failure (the default "shutdown" rule).
	ShuttingDown bool
}

// StatusRange is an inclusive range of HTTP status codes.
type StatusRange struct{ Lo, Hi int }

// Status returns the range holding only code.
func Status(code int) StatusRange { return StatusRange{code, code} }

// Match says which errors a rule applies to. Every criterion that is set must
// hold; within a list criterion, any element may match. An empty Match
// matches every error.
type Match struct {
	// Is matches when errors.Is(err, target) holds for any target.
	Is []error
	// Kinds matches when any kind is in the error's chain (errors.As).
	Kinds []Kind
	// Status matches when the chain carries an HTTP status (StatusCoder) in
	// any range.
	Status []StatusRange
	// Timeout, when set, requires a Timeouter in the chain reporting true.
	Timeout bool
	// Temporary, when set, requires a Temporarier in the chain reporting
	// true.
	Temporary bool
	// DeclineCodes matches when the chain carries a DeclineCoder with any of
	// these codes.
	DeclineCodes []string
	// RetryAfter, when set, requires a Retry-After hint in the chain.
	RetryAfter bool
	// Message matches the text of the innermost error of the chain (the
	// last one reached through Unwrap() error), so that data a wrapper
	// quotes ("parse sku \"forbidden-fruit\"") cannot match; the last
	// resort, for errors that carry nothing else.
	Message *regexp.Regexp
	// ShuttingDown, when set, requires Scope.ShuttingDown.
	ShuttingDown bool
}

// Rule is one line of the classification table.
type Rule struct {
	// Name identifies the rule in classifications and reports.
	Name string
	// Dependency limits the rule to calls to matching dependencies: a name,
	// or a path.Match pattern such as "payment-*". Empty means any.
	Dependency string
	// Task limits the rule to jobs of matching tasks, like Dependency.
	Task  string
	Match Match
	// The verdict when the rule matches. All three are required.
	Class    Class
	Severity Severity
	Source   Source
}

// Fallback is the verdict for an error no rule matches: transient, so that
// the retry policy's attempt limit decides, and medium, so that it is seen
// (the seed's WARNING default). An unknown failure is never silently dropped.
var Fallback = Classification{Class: Transient, Severity: Medium, Source: System, Rule: "fallback"}

// Classifier applies an ordered rule table: the first matching rule wins. It
// is immutable after New and safe for concurrent use.
type Classifier struct {
	rules    []compiledRule
	fallback Classification
}

type compiledRule struct {
	Rule
	depGlob, taskGlob bool
}

// RuleError reports a rule that cannot be used, with its place in a rule file
// when it came from one.
type RuleError struct {
	File      string
	Line, Col int
	// Field is the path of the offending field, e.g. "rules[2].class".
	Field string
	Msg   string
	// Hint suggests a fix, e.g. `did you mean "transient"?`.
	Hint string
	// Err is the underlying error, if any.
	Err error
}

// Error returns "file:line:col: field: message; hint".
func (e *RuleError) Error() string {
	var b strings.Builder
	if e.File != "" || e.Line > 0 {
		file := e.File
		if file == "" {
			file = "<rules>"
		}
		fmt.Fprintf(&b, "%s:%d:%d: ", file, e.Line, e.Col)
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if e.Hint != "" {
		b.WriteString("; ")
		b.WriteString(e.Hint)
	}
	return b.String()
}

// Unwrap returns the underlying error.
func (e *RuleError) Unwrap() error { return e.Err }

// New returns a classifier for rules, in order, with Fallback for errors no
// rule matches. A rule without a class, severity or source, or with a bad
// scope pattern, is a *RuleError naming it.
func New(rules []Rule) (*Classifier, error) {
	return NewWithFallback(rules, Fallback)
}

// NewWithFallback is New with a chosen verdict for unmatched errors.
func NewWithFallback(rules []Rule, fallback Classification) (*Classifier, error) {
	var errs []error
	c := &Classifier{rules: make([]compiledRule, 0, len(rules)), fallback: fallback}
	if c.fallback.Rule == "" {
		c.fallback.Rule = "fallback"
	}
	if err := checkVerdict("fallback", fallback.Class, fallback.Severity, fallback.Source); err != nil {
		errs = append(errs, err)
	}
	seen := make(map[string]int, len(rules))
	for i, r := range rules {
		field := fmt.Sprintf("rules[%d]", i)
		if r.Name == "" {
			errs = append(errs, &RuleError{Field: field + ".name", Msg: "a rule needs a name"})
		} else if j, dup := seen[r.Name]; dup {
			errs = append(errs, &RuleError{Field: field + ".name", Msg: fmt.Sprintf("rule name %q is also rules[%d]'s", r.Name, j), Hint: "names identify rules in reports; give each its own"})
		} else {
			seen[r.Name] = i
		}
		if err := checkVerdict(field, r.Class, r.Severity, r.Source); err != nil {
			errs = append(errs, err)
		}
		cr := compiledRule{Rule: r}
		for _, p := range []struct {
			field, pattern string
			glob           *bool
		}{{".dependency", r.Dependency, &cr.depGlob}, {".task", r.Task, &cr.taskGlob}} {
			if strings.ContainsAny(p.pattern, `*?[\`) {
				if _, err := path.Match(p.pattern, ""); err != nil {
					errs = append(errs, &RuleError{Field: field + p.field, Msg: fmt.Sprintf("bad pattern %q", p.pattern), Err: err})
				}
				*p.glob = true
			}
		}
		for j, s := range r.Match.Status {
			if s.Lo < 100 || s.Hi > 599 || s.Lo > s.Hi {
				errs = append(errs, &RuleError{Field: fmt.Sprintf("%s.match.status[%d]", field, j), Msg: fmt.Sprintf("status range %d-%d is not within 100-599", s.Lo, s.Hi)})
			}
		}
		for j, k := range r.Match.Kinds {
			if k.match == nil {
				errs = append(errs, &RuleError{Field: fmt.Sprintf("%s.match.kind[%d]", field, j), Msg: fmt.Sprintf("kind %q has no matcher (build kinds with KindOf)", k.Name)})
			}
		}
		for j, e := range r.Match.Is {
			if e == nil {
				errs = append(errs, &RuleError{Field: fmt.Sprintf("%s.match.is[%d]", field, j), Msg: "nil sentinel"})
			}
		}
		c.rules = append(c.rules, cr)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}

func checkVerdict(field string, c Class, sev Severity, src Source) error {
	switch {
	case c == None || int(c) >= len(classNames):
		return &RuleError{Field: field + ".class", Msg: "a class is required", Hint: "one of " + strings.Join(classNames[1:], ", ")}
	case sev == SeverityNone || int(sev) >= len(severityNames):
		return &RuleError{Field: field + ".severity", Msg: "a severity is required", Hint: "one of " + strings.Join(severityNames[1:], ", ")}
	case src == SourceNone || int(src) >= len(sourceNames):
		return &RuleError{Field: field + ".source", Msg: "a source is required", Hint: "one of " + strings.Join(sourceNames[1:], ", ")}
	}
	return nil
}

// Default returns a classifier with DefaultRules.
func Default() *Classifier {
	c, err := New(DefaultRules())
	if err != nil {
		panic("classify: the default rules are invalid: " + err.Error())
	}
	return c
}

// Rules returns a copy of the classifier's rule table, in order.
func (c *Classifier) Rules() []Rule {
	out := make([]Rule, len(c.rules))
	for i, r := range c.rules {
		out[i] = r.Rule
	}
	return out
}

// Classify returns the verdict of the first rule matching err in scope, or
// the fallback. A nil error has the zero Classification (class None).
//
// An error whose methods panic (a typed nil pointer in an error interface,
// the classic Go gotcha, or a buggy Error method) does not crash the worker:
// it gets the fallback verdict with Rule "panic".
func (c *Classifier) Classify(err error, scope Scope) Classification {
	verdict, _ := c.classify(err, scope)
	return verdict
}

// classify is Classify; pure reports whether the verdict depends on
// nothing but the error and the scope's dependency, task and shutdown
// flag — not on scope.Now (an HTTP-date Retry-After) nor on a panic — so
// that a Memo may remember it for an error that answers the same every
// time.
func (c *Classifier) classify(err error, scope Scope) (verdict Classification, pure bool) {
	if err == nil {
		return Classification{}, true
	}
	defer func() {
		if recover() != nil {
			verdict = c.fallback
			verdict.Rule = "panic"
			pure = false
		}
	}()
	f := facts{err: err}
	verdict = c.fallback
	for i := range c.rules {
		r := &c.rules[i]
		if (r.inScope(scope) || mutant.On("classify/ignore-scope")) && r.Match.matches(&f, &scope) {
			verdict = Classification{Class: r.Class, Severity: r.Severity, Source: r.Source, Rule: r.Name}
			if mutant.On("classify/last-match-wins") {
				continue
			}
			break
		}
	}
	if mutant.On("classify/critical-as-permanent") && verdict.Class == Critical {
		verdict.Class = Permanent
	}
	verdict.Status = f.status()
	verdict.RetryAfter = f.retryAfter(scope.Now)
	if mutant.On("classify/drop-retry-after") {
		verdict.RetryAfter = 0
	}
	return verdict, !f.hintIsRaw
}

func (r *compiledRule) inScope(s Scope) bool {
	return scopeMatch(r.Dependency, r.depGlob, s.Dependency) && scopeMatch(r.Task, r.taskGlob, s.Task)
}

func scopeMatch(pattern string, glob bool, name string) bool {
	if pattern == "" {
		return true
	}
	if !glob {
		return pattern == name
	}
	ok, _ := path.Match(pattern, name) // validated in New
	return ok
}

func (m *Match) matches(f *facts, scope *Scope) bool {
	if m.ShuttingDown && !scope.ShuttingDown {
		return false
	}
	if len(m.Status) > 0 {
		st := f.status()
		ok := false
		for _, r := range m.Status {
			if st >= r.Lo && st <= r.Hi {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	if m.Timeout {
		if t, ok := errors.AsType[Timeouter](f.err); !ok || !t.Timeout() {
			return false
		}
	}
	if m.Temporary {
		if t, ok := errors.AsType[Temporarier](f.err); !ok || !t.Temporary() {
			return false
		}
	}
	if len(m.DeclineCodes) > 0 {
		d, ok := errors.AsType[DeclineCoder](f.err)
		if !ok {
			return false
		}
		code := d.DeclineCode()
		found := false
		for _, c := range m.DeclineCodes {
			if c == code {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if m.RetryAfter && !f.hasRetryAfter() {
		return false
	}
	if len(m.Is) > 0 {
		found := false
		for _, target := range m.Is {
			if errors.Is(f.err, target) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if len(m.Kinds) > 0 {
		found := false
		for _, k := range m.Kinds {
			if k.Matches(f.err) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if m.Message != nil && !m.Message.MatchString(f.message()) {
		return false
	}
	return true
}

// facts caches what the rules ask of one error, so each is looked up along
// the chain at most once per classification.
type facts struct {
	err       error
	code      int
	codeDone  bool
	msg       string
	msgDone   bool
	hintDone  bool
	hint      time.Duration
	hasHint   bool
	hintRaw   string
	hintIsRaw bool
}

func (f *facts) status() int {
	if !f.codeDone {
		f.codeDone = true
		if s, ok := errors.AsType[StatusCoder](f.err); ok {
			f.code = s.StatusCode()
		}
	}
	return f.code
}

func (f *facts) message() string {
	if !f.msgDone {
		f.msgDone = true
		leaf := f.err
		for range 100 { // a bound, in case of a cycle
			next := errors.Unwrap(leaf)
			if next == nil {
				break
			}
			leaf = next
		}
		f.msg = leaf.Error()
	}
	return f.msg
}

func (f *facts) findHint() {
	if f.hintDone {
		return
	}
	f.hintDone = true
	if r, ok := errors.AsType[RetryAfterer](f.err); ok {
		f.hint, f.hasHint = min(r.RetryAfter(), maxRetryAfter), true
		return
	}
	if r, ok := errors.AsType[RetryAfterHeaderer](f.err); ok {
		if raw := strings.TrimSpace(r.RetryAfterHeader()); raw != "" {
			f.hintRaw, f.hintIsRaw, f.hasHint = raw, true, true
		}
	}
}

func (f *facts) hasRetryAfter() bool {
	f.findHint()
	return f.hasHint
}

func (f *facts) retryAfter(now time.Time) time.Duration {
	f.findHint()
	if !f.hasHint {
		return 0
	}
	d := f.hint
	if f.hintIsRaw {
		d, _ = ParseRetryAfter(f.hintRaw, now)
	}
	return max(d, 0)
}

// maxRetryAfter bounds a parsed hint so that absurd values cannot overflow
// time arithmetic downstream; the retry policy applies its own, smaller cap.
const maxRetryAfter = 365 * 24 * time.Hour

// ParseRetryAfter reads a Retry-After header value (RFC 9110 §10.2.3):
// delay-seconds, or an HTTP date resolved against now. A date in the past is
// a zero delay. It reports false for a value that is neither, and for a date
// when now is zero. Hints are capped at a year.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if v[0] >= '0' && v[0] <= '9' {
		secs, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			if errors.Is(err, strconv.ErrRange) {
				return maxRetryAfter, true
			}
			return 0, false
		}
		if secs > uint64(maxRetryAfter/time.Second) {
			return maxRetryAfter, true
		}
		return time.Duration(secs) * time.Second, true
	}
	if now.IsZero() {
		return 0, false // an HTTP date needs a time to be resolved against
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return min(max(t.Sub(now), 0), maxRetryAfter), true
}

// String describes the match for listings, e.g.
// `status=[500,502] timeout kind=[net.OpError]`; "any error" when empty.
func (m Match) String() string {
	var parts []string
	if len(m.Is) > 0 {
		names := make([]string, len(m.Is))
		for i, e := range m.Is {
			names[i] = strconv.Quote(e.Error())
		}
		parts = append(parts, "is=["+strings.Join(names, ",")+"]")
	}
	if len(m.Kinds) > 0 {
		names := make([]string, len(m.Kinds))
		for i, k := range m.Kinds {
			names[i] = k.Name
		}
		parts = append(parts, "kind=["+strings.Join(names, ",")+"]")
	}
	if len(m.Status) > 0 {
		codes := make([]string, len(m.Status))
		for i, s := range m.Status {
			codes[i] = strconv.Itoa(s.Lo)
			if s.Hi != s.Lo {
				codes[i] += "-" + strconv.Itoa(s.Hi)
			}
		}
		parts = append(parts, "status=["+strings.Join(codes, ",")+"]")
	}
	if m.Timeout {
		parts = append(parts, "timeout")
	}
	if m.Temporary {
		parts = append(parts, "temporary")
	}
	if len(m.DeclineCodes) > 0 {
		parts = append(parts, "declineCode=["+strings.Join(m.DeclineCodes, ",")+"]")
	}
	if m.RetryAfter {
		parts = append(parts, "retryAfter")
	}
	if m.Message != nil {
		parts = append(parts, "message=/"+m.Message.String()+"/")
	}
	if m.ShuttingDown {
		parts = append(parts, "shuttingDown")
	}
	if len(parts) == 0 {
		return "any error"
	}
	return strings.Join(parts, " ")
}
