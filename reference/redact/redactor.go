package redact

import (
	"bytes"
	"regexp"
	"strings"

	"github.com/faultline/faultline/reference/internal/mutant"
)

// Redactor masks secrets in free text, payloads, headers and URLs. It is
// immutable once built and safe for concurrent use; it reads no clock and
// starts no goroutine.
type Redactor struct {
	mask      string
	keys      map[string]struct{}
	fragments []string
	patterns  []*regexp.Regexp
}

// New returns a Redactor for cfg.WithDefaults(), or a *ConfigError naming the
// field it rejected. Every regular expression is compiled here, not per call.
func New(cfg Config) (*Redactor, error) {
	return compile(cfg.WithDefaults())
}

// defaultRedactor is built once; a Redactor is never mutated after New, so
// sharing it is safe.
var defaultRedactor = mustNew(Config{})

func mustNew(cfg Config) *Redactor {
	r, err := New(cfg)
	if err != nil {
		panic("redact: default configuration rejected: " + err.Error())
	}
	return r
}

// Default returns the Redactor of the zero Config: DefaultKeys,
// DefaultKeyFragments, no extra patterns, DefaultMask. It is shared and
// immutable.
func Default() *Redactor { return defaultRedactor }

// Mask returns the string that replaces a masked value.
func (r *Redactor) Mask() string { return r.mask }

// maxRounds bounds String's passes. One pass of the built-in rules leaves
// nothing for a second (the property specs and the fuzz test check this);
// more are needed when a Config.Patterns mask exposes another rule's match,
// as when masking "acct_abc" in "acct_abc4242424242424242" leaves a card
// number no longer glued to a word.
const maxRounds = 4

// String masks the secrets in the free text s and returns the result. It
// masks, in this order:
//
//   - the password of a URL's userinfo: "postgres://app:[REDACTED]@db:5432/x";
//   - the secret part of a Slack webhook URL:
//     "https://hooks.slack.com/services/[REDACTED]", and of Discord,
//     Microsoft Teams and PagerDuty integration URLs;
//   - well-known token shapes, whole: Slack tokens (xoxb-, xoxp-, xapp-, ...),
//     Stripe secret and restricted keys (sk_live_, sk_test_, rk_live_,
//     rk_test_) and webhook secrets (whsec_), GitHub tokens (ghp_, gho_,
//     ghu_, ghs_, ghr_, github_pat_), AWS access key ids (AKIA, ASIA) and
//     JWTs;
//   - card numbers: 13 to 19 digits, optionally in groups separated by
//     single spaces or dashes, not glued to a letter or digit, that pass the
//     Luhn check. They become "[CARD ****4242]", keeping the last four
//     digits; digit runs that fail the check (order ids, timestamps) are
//     left alone;
//   - the value of a key=value, key: value, "key": "value" or key => value
//     pair whose key is sensitive (see Config.Keys), keeping any quotes
//     ("password=[REDACTED]", `"token": "[REDACTED]"`). After "key: " the
//     value runs to the end of the line or the next pair; otherwise to the
//     next space or delimiter. An Authorization value keeps its scheme:
//     "Authorization: Bearer [REDACTED]";
//   - the credential after "Bearer", "Basic" or "Token" (any case), keeping
//     the word, when it looks like one: it has a digit or one of -._~+/=, an
//     upper-case letter after its first character, or 20 characters or
//     more. So "Bearer abc123" is masked but "token expired" is not;
//   - matches of Config.Patterns.
//
// String applies these rules until the text stops changing, so it is
// idempotent: String(String(s)) == String(s), whatever s (provided
// Config.Patterns do not match across a mask and its neighbours). It never
// panics.
func (r *Redactor) String(s string) string {
	for range maxRounds {
		next := r.once(s)
		if next == s {
			return s
		}
		s = next
	}
	return s
}

// once applies every rule once, in order. Each rule returns its input
// unchanged, without allocating, when it finds nothing.
func (r *Redactor) once(s string) string {
	if s == "" {
		return s
	}
	s = r.userinfo(s)
	s = r.slackHooks(s)
	s = r.tokens(s)
	if !mutant.On("redact/cards-kept") {
		s = r.cards(s)
	}
	s = r.pairs(s)
	if !mutant.On("redact/bearer-kept") {
		s = r.schemes(s)
	}
	s = r.custom(s)
	return s
}

// userinfo masks the password of every "scheme://user:password@" in s. The
// password runs to the last '@' of the authority, so an unescaped '@' in it
// is masked too; a user name alone is left, since it is no credential.
func (r *Redactor) userinfo(s string) string {
	if strings.IndexByte(s, '@') < 0 {
		return s
	}
	var b strings.Builder
	last := 0
	for from := 0; ; {
		i := strings.Index(s[from:], "://")
		if i < 0 {
			break
		}
		i += from
		from = i + 3
		if !hasScheme(s[:i]) {
			continue
		}
		auth, end := i+3, i+3
		for end < len(s) && strings.IndexByte("/?#\t\n\f\r ", s[end]) < 0 {
			end++
		}
		at := strings.LastIndexByte(s[auth:end], '@')
		if at < 0 {
			continue
		}
		at += auth
		colon := strings.IndexByte(s[auth:at], ':')
		if colon < 0 || strings.IndexByte(s[auth:auth+colon], '@') >= 0 {
			continue
		}
		colon += auth
		from = at + 1
		if pw := s[colon+1 : at]; pw == "" || pw == r.mask {
			continue
		}
		b.WriteString(s[last : colon+1])
		b.WriteString(r.mask)
		last = at
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// hasScheme reports whether s ends with a URL scheme: a letter followed by
// letters, digits, '+', '.' or '-'.
func hasScheme(s string) bool {
	letter := false
	for i := len(s) - 1; i >= 0; i-- {
		c := s[i]
		if !isAlnum(c) && c != '+' && c != '.' && c != '-' {
			break
		}
		letter = letter || isLetter(c)
	}
	return letter
}

// slackHookRe matches a Slack incoming-webhook or workflow URL and captures
// the part after the fixed prefix, which is the credential.
var slackHookRe = regexp.MustCompile(`(?i:(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/)([A-Za-z0-9_/\-]+)`)

// webhookURLs are the other webhook URLs whose path is the credential:
// Discord, Microsoft Teams (Office 365 connectors and Power Automate
// workflows) and PagerDuty's generic integration URLs. Each captures the
// secret part after a fixed prefix; a marker must be in the text first.
var webhookURLs = []struct {
	marker string
	re     *regexp.Regexp
}{
	{"/api/webhooks/", regexp.MustCompile(`(?i:discord(?:app)?\.com/api/webhooks/)([A-Za-z0-9_/\-]+)`)},
	{"webhook.office.com", regexp.MustCompile(`(?i:\.webhook\.office\.com/webhookb2/)([A-Za-z0-9@_/\-]+)`)},
	{"logic.azure.com", regexp.MustCompile(`(?i:\.logic\.azure\.com(?::\d+)?/workflows/)([A-Za-z0-9_/\-]+)`)},
	{"pagerduty.com", regexp.MustCompile(`(?i:events\.(?:eu\.)?pagerduty\.com/integration/)([A-Za-z0-9]+)`)},
}

// slackHooks masks the credential part of Slack webhook URLs, and of the
// other webhook URLs listed in webhookURLs.
func (r *Redactor) slackHooks(s string) string {
	if containsFold(s, "hooks.slack.com") {
		s = r.maskGroups(s, slackHookRe, 1)
	}
	for _, h := range webhookURLs {
		if containsFold(s, h.marker) {
			s = r.maskGroups(s, h.re, 1)
		}
	}
	return s
}

// tokenShapes are well-known credential shapes, masked whole. Each is
// tried only if the text contains one of its markers, and each pattern
// starts with a literal where it can, which the regexp package skips to.
var tokenShapes = []struct {
	markers []string
	re      *regexp.Regexp
}{
	{[]string{"xox"}, regexp.MustCompile(`xox[abposre]-[0-9A-Za-z\-]+`)},                                 // Slack bot, user, app, refresh tokens
	{[]string{"xapp-"}, regexp.MustCompile(`xapp-[0-9A-Za-z\-]+`)},                                       // Slack app-level tokens
	{[]string{"_live_", "_test_"}, regexp.MustCompile(`(?:sk|rk)_(?:live|test)_[0-9A-Za-z]+`)},           // Stripe secret and restricted keys
	{[]string{"whsec_"}, regexp.MustCompile(`whsec_[0-9A-Za-z]+`)},                                       // Stripe webhook signing secrets
	{[]string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}, regexp.MustCompile(`gh[pousr]_[0-9A-Za-z]{20,}`)}, // GitHub tokens
	{[]string{"github_pat_"}, regexp.MustCompile(`github_pat_[0-9A-Za-z_]{20,}`)},                        // GitHub fine-grained tokens
	{[]string{"AKIA", "ASIA"}, regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`)},                      // AWS access key ids
	{[]string{"eyJ"}, regexp.MustCompile(`eyJ[0-9A-Za-z_\-]+\.eyJ[0-9A-Za-z_\-]+\.[0-9A-Za-z_\-]*`)},     // JWTs
}

// tokens masks every well-known credential shape in s.
func (r *Redactor) tokens(s string) string {
	for _, t := range tokenShapes {
		for _, m := range t.markers {
			if strings.Contains(s, m) {
				s = r.maskGroups(s, t.re, 0)
				break
			}
		}
	}
	return s
}

// schemes masks the credential after "Bearer", "Basic" or "Token" (any
// case, starting a word), keeping the word, when the credential looks like
// one (see looksLikeCredential). The credential starts with a letter or
// digit ("token == nil" has none) and stops at blanks, quotes and brackets.
func (r *Redactor) schemes(s string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); i++ {
		n := schemeWordAt(s, i)
		if n == 0 {
			continue
		}
		w := i + n
		for w < len(s) && (s[w] == ' ' || s[w] == '\t') {
			w++
		}
		if w == i+n || w == len(s) || !isAlnum(s[w]) {
			continue
		}
		end := w
		for end < len(s) && !endsCredential(s[end]) {
			end++
		}
		next := end
		// A sentence's full stop or colon is not part of the credential.
		for end > w && strings.IndexByte(".:!?", s[end-1]) >= 0 {
			end--
		}
		if cred := s[w:end]; cred == r.mask || !looksLikeCredential(cred) {
			continue
		}
		b.WriteString(s[last:w])
		b.WriteString(r.mask)
		last = end
		i = next - 1
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// schemeWordAt returns the length of the scheme word (bearer, basic, token,
// in any case) that starts a word at s[i], or 0.
func schemeWordAt(s string, i int) int {
	c := s[i] | 0x20 // lower-cases a letter
	if c != 'b' && c != 't' || i > 0 && (isAlnum(s[i-1]) || s[i-1] == '_') {
		return 0
	}
	for _, w := range [...]string{"bearer", "basic", "token"} {
		if len(s)-i >= len(w) && strings.EqualFold(s[i:i+len(w)], w) {
			return len(w)
		}
	}
	return 0
}

// endsCredential reports whether c ends a credential after a scheme word.
func endsCredential(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '\v', '\f', '"', '\'', '<', '>', '(', ')', '[', ']', '{', '}', ',', ';':
		return true
	}
	return false
}

// looksLikeCredential tells a credential from a word of prose: it has a digit
// or one of -._~+/=, an upper-case letter after its first character, or 20
// characters or more.
func looksLikeCredential(c string) bool {
	if len(c) >= 20 {
		return true
	}
	for i := 0; i < len(c); i++ {
		ch := c[i]
		switch {
		case '0' <= ch && ch <= '9', strings.IndexByte("-._~+/=", ch) >= 0:
			return true
		case i > 0 && 'A' <= ch && ch <= 'Z':
			return true
		}
	}
	return false
}

// custom masks the matches of Config.Patterns.
func (r *Redactor) custom(s string) string {
	for _, re := range r.patterns {
		s = r.maskGroups(s, re, 0)
	}
	return s
}

// maskGroups replaces capture group g (0 for the whole match) of every
// non-empty match of re in s with the mask. A group that already is the
// mask is left alone.
func (r *Redactor) maskGroups(s string, re *regexp.Regexp, g int) string {
	ms := re.FindAllStringSubmatchIndex(s, -1)
	if ms == nil {
		return s
	}
	var b strings.Builder
	last := 0
	changed := false
	for _, m := range ms {
		start, end := m[2*g], m[2*g+1]
		if start < 0 || start == end || s[start:end] == r.mask {
			continue
		}
		b.WriteString(s[last:start])
		b.WriteString(r.mask)
		last = end
		changed = true
	}
	if !changed {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// sensitive reports whether key names a secret: after normalisation it is
// one of the configured keys or contains one of the fragments.
func (r *Redactor) sensitive(key string) bool {
	var buf [64]byte
	n := buf[:0]
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c == '-' || c == '_' || c == ' ':
		case 'A' <= c && c <= 'Z':
			n = append(n, c+'a'-'A')
		default:
			n = append(n, c)
		}
	}
	if _, ok := r.keys[string(n)]; ok {
		return true
	}
	for _, f := range r.fragments {
		if bytes.Contains(n, []byte(f)) {
			return true
		}
	}
	return false
}

// containsFold reports whether s contains the lower-case ASCII word w, in any
// case.
func containsFold(s, w string) bool {
	first, upper := w[0], w[0]-'a'+'A'
	for i := 0; i+len(w) <= len(s); i++ {
		if c := s[i]; (c == first || c == upper) && strings.EqualFold(s[i:i+len(w)], w) {
			return true
		}
	}
	return false
}
