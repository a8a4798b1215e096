package redact

import "strings"

// pair locates one key/separator pair in free text: password=, "token": ,
// api_key: , 'secret' => , \"pwd\":. The key is s[keyStart:keyEnd], the
// separator s[sepStart:sepEnd], and the value starts at valueStart, after
// the blanks that follow the separator.
type pair struct{ keyStart, keyEnd, sepStart, sepEnd, valueStart int }

// nextPair finds the first pair whose separator is at or after from. A key
// is a run of letters, digits, '_' and '-', then an optional quote (itself
// optionally escaped), then blanks; the separator is one of => := == : =.
// It scans each separator once and walks back to its key, so it runs in
// linear time.
func nextPair(s string, from int) (pair, bool) {
	for from < len(s) {
		i := strings.IndexAny(s[from:], ":=")
		if i < 0 {
			break
		}
		i += from
		sepEnd := i + 1
		if sepEnd < len(s) && (s[i] == '=' && (s[sepEnd] == '>' || s[sepEnd] == '=') || s[i] == ':' && s[sepEnd] == '=') {
			sepEnd++
		}
		from = sepEnd
		k := i
		for k > 0 && (s[k-1] == ' ' || s[k-1] == '\t') {
			k--
		}
		if k > 0 && (s[k-1] == '"' || s[k-1] == '\'') {
			k--
			if k > 0 && s[k-1] == '\\' {
				k--
			}
		}
		keyEnd := k
		for k > 0 && isKeyChar(s[k-1]) {
			k--
		}
		if k == keyEnd {
			continue
		}
		v := sepEnd
		for v < len(s) && (s[v] == ' ' || s[v] == '\t') {
			v++
		}
		return pair{keyStart: k, keyEnd: keyEnd, sepStart: i, sepEnd: sepEnd, valueStart: v}, true
	}
	return pair{}, false
}

func isKeyChar(c byte) bool { return isAlnum(c) || c == '_' || c == '-' }

// valueMode says where an unquoted value ends.
type valueMode int

const (
	// wordValue ends at a blank or a delimiter: key=value, key:value.
	wordValue valueMode = iota
	// lineValue runs to the end of the line, the next pair, a closing
	// bracket it did not open, or a closing quote: "key: value with
	// spaces".
	lineValue
	// headerValue is a lineValue that does not stop at the next pair: a
	// Cookie header holds several name=value pairs, all of them secret.
	headerValue
)

// keyKind says how a sensitive key's value is masked.
type keyKind int

const (
	plainKey  keyKind = iota // the value becomes the mask
	authKey                  // Authorization: a known scheme is kept
	cookieKey                // Cookie, Set-Cookie: the rest of the line goes
)

// kindOf classifies a sensitive key.
func kindOf(key string) keyKind {
	switch normalizeKey(key) {
	case "authorization", "proxyauthorization":
		return authKey
	case "cookie", "setcookie":
		return cookieKey
	}
	return plainKey
}

// maxBracketValue bounds the search for the closing bracket of a [...] or
// {...} value: an unclosed bracket costs at most this many bytes of
// scanning before the value is read as a plain word instead.
const maxBracketValue = 16 << 10

// pairs masks the values of pairs whose key is sensitive.
func (r *Redactor) pairs(s string) string {
	if strings.IndexByte(s, ':') < 0 && strings.IndexByte(s, '=') < 0 {
		return s
	}
	var b strings.Builder
	last, skip := 0, 0
	for p, ok := nextPair(s, 0); ok; p, ok = nextPair(s, p.sepEnd) {
		if p.keyStart < skip {
			continue // inside a value already handled
		}
		sep := s[p.sepStart:p.sepEnd]
		if sep == "==" || strings.HasPrefix(s[p.sepEnd:], "//") {
			continue // a comparison or a URL's scheme, not a pair
		}
		key := s[p.keyStart:p.keyEnd]
		if !r.sensitive(key) {
			continue
		}
		kind := kindOf(key)
		blanks := p.valueStart > p.sepEnd
		mode := wordValue
		if sep == ":" && blanks {
			mode = lineValue
			if kind == cookieKey {
				mode = headerValue
			}
		}
		start := p.valueStart
		if blanks && kind != cookieKey && startsPair(s, start) {
			continue // "password= user=bob": an empty value, then the next pair
		}
		end, repl, changed := r.value(s, start, mode, kind == authKey)
		skip = end
		if changed {
			b.WriteString(s[last:start])
			b.WriteString(repl)
			last = end
		}
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// value finds the value starting at s[p] and returns its end and, if it is
// not masked yet, its masked replacement. auth keeps an Authorization
// value's scheme.
func (r *Redactor) value(s string, p int, mode valueMode, auth bool) (end int, repl string, changed bool) {
	if p >= len(s) {
		return p, "", false
	}
	if !strings.HasPrefix(s[p:], r.mask) {
		switch c := s[p]; {
		case c == '"' || c == '\'':
			return r.quoted(s, p, s[p:p+1], auth)
		case c == '\\' && p+1 < len(s) && s[p+1] == '"':
			return r.quoted(s, p, `\"`, auth)
		case (c == '[' || c == '{') && mode == wordValue:
			if e := closeBracket(s, p); e > 0 {
				// The word goes on after the bracket, as it would have
				// without one: "[CARD ****4242]!" is one value.
				e, _ = r.extent(s, e, wordValue)
				return e, r.mask, true
			}
		}
		if auth {
			if e, repl, changed, ok := r.authValue(s, p, mode); ok {
				return e, repl, changed
			}
		}
	}
	e, masked := r.extent(s, p, mode)
	if e == p || masked {
		return e, "", false
	}
	return e, r.mask, true
}

// quoted handles a value in quotes q (", ' or \"), keeping the quotes. A
// value whose closing quote is missing (a truncated line) is masked to the
// end of the line.
func (r *Redactor) quoted(s string, p int, q string, auth bool) (end int, repl string, changed bool) {
	cs := p + len(q)
	ce, end := -1, -1
	for i := cs; i < len(s); i++ {
		c := s[i]
		if c == '\n' || c == '\r' {
			break
		}
		if q == `\"` {
			if strings.HasPrefix(s[i:], q) {
				ce, end = i, i+len(q)
				break
			}
			continue
		}
		if c == '\\' {
			i++
			continue
		}
		if c == q[0] {
			ce, end = i, i+1
			break
		}
	}
	closing := q
	if ce < 0 {
		ce = lineEnd(s, cs)
		end, closing = ce, ""
	}
	content := s[cs:ce]
	if content == "" {
		return end, "", false
	}
	masked := r.mask
	if auth {
		masked = r.maskAuth(content)
	}
	if masked == content {
		return end, "", false
	}
	return end, q + masked + closing, true
}

// authValue handles an unquoted Authorization value that starts with a known
// scheme: it keeps "Bearer " and masks the credential. ok is false if the
// value does not start with a scheme and a credential.
func (r *Redactor) authValue(s string, p int, mode valueMode) (end int, repl string, changed, ok bool) {
	k := p
	for k < len(s) && isSchemeChar(s[k]) {
		k++
	}
	if !knownScheme(s[p:k]) {
		return 0, "", false, false
	}
	w := k
	for w < len(s) && (s[w] == ' ' || s[w] == '\t') {
		w++
	}
	if w == k {
		return 0, "", false, false
	}
	e, masked := r.extent(s, w, mode)
	if e == w {
		return 0, "", false, false
	}
	if masked {
		return e, "", false, true
	}
	return e, s[p:w] + r.mask, true, true
}

// extent returns the end of the unquoted value starting at s[p], and whether
// that value is exactly the mask. A mask inside the value is skipped whole,
// so that its brackets do not end the value.
func (r *Redactor) extent(s string, p int, mode valueMode) (end int, masked bool) {
	start := p
	if strings.HasPrefix(s[p:], r.mask) {
		start = p + len(r.mask)
	}
	i := start
	if mode == wordValue {
		for i < len(s) {
			if s[i] == r.mask[0] && strings.HasPrefix(s[i:], r.mask) {
				i += len(r.mask)
				continue
			}
			if endsWord(s[i]) {
				break
			}
			i++
		}
		return i, start > p && i == start
	}
	depth := 0
loop:
	for i < len(s) {
		c := s[i]
		if c == r.mask[0] && strings.HasPrefix(s[i:], r.mask) {
			i += len(r.mask)
			continue
		}
		switch c {
		case '\n', '\r':
			break loop
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			if depth == 0 {
				break loop
			}
			depth--
		case ' ', '\t':
			if depth == 0 && mode == lineValue && startsPair(s, i+1) {
				break loop
			}
		case '"', '\'':
			// A quote closing the string the pair sits in, not an
			// apostrophe inside a word.
			if i+1 == len(s) || !isAlnum(s[i+1]) {
				break loop
			}
		}
		i++
	}
	for i > start && strings.IndexByte(" \t\v\f,;", s[i-1]) >= 0 {
		i--
	}
	return i, start > p && i == start
}

// endsWord reports whether c ends an unquoted word value.
func endsWord(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '\v', '\f', '"', '\'', ',', ';', '&', '<', '>', ')', ']', '}':
		return true
	}
	return false
}

// startsPair reports whether s[j:] starts another key: or key= pair, which
// ends a line value: an optionally quoted key that starts with a letter,
// then ':' (not "://") or '=' (not "==").
func startsPair(s string, j int) bool {
	k := j
	if k < len(s) && (s[k] == '"' || s[k] == '\'') {
		k++
	}
	if k >= len(s) || !isLetter(s[k]) {
		return false
	}
	for k < len(s) && isKeyChar(s[k]) {
		k++
	}
	if k < len(s) && s[k] == '\\' {
		k++
	}
	if k < len(s) && (s[k] == '"' || s[k] == '\'') {
		k++
	}
	for k < len(s) && (s[k] == ' ' || s[k] == '\t') {
		k++
	}
	switch {
	case k >= len(s):
		return false
	case s[k] == ':':
		return !strings.HasPrefix(s[k:], "://")
	case s[k] == '=':
		return !strings.HasPrefix(s[k:], "==")
	}
	return false
}

// closeBracket returns the index after the bracket that closes the one at
// s[p], or -1 if there is none within maxBracketValue bytes. Brackets inside
// double-quoted strings do not count.
func closeBracket(s string, p int) int {
	open := s[p]
	shut := byte(']')
	if open == '{' {
		shut = '}'
	}
	depth, inString := 0, false
	limit := min(len(s), p+maxBracketValue)
	for i := p; i < limit; i++ {
		c := s[i]
		switch {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == open:
			depth++
		case c == shut:
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return -1
}

// lineEnd returns the index of the first line break at or after p, or
// len(s).
func lineEnd(s string, p int) int {
	if i := strings.IndexAny(s[p:], "\r\n"); i >= 0 {
		return p + i
	}
	return len(s)
}

// maskAuth masks an Authorization value, keeping a known scheme:
// "Bearer abc" becomes "Bearer [REDACTED]", anything else the mask.
func (r *Redactor) maskAuth(v string) string {
	k := 0
	for k < len(v) && isSchemeChar(v[k]) {
		k++
	}
	w := k
	for w < len(v) && (v[w] == ' ' || v[w] == '\t') {
		w++
	}
	if w > k && w < len(v) && knownScheme(v[:k]) {
		return v[:w] + r.mask
	}
	return r.mask
}

// knownSchemes are the HTTP authentication schemes whose name Authorization
// masking keeps, lower-cased.
var knownSchemes = []string{
	"basic", "bearer", "token", "digest", "negotiate", "ntlm", "oauth",
	"dpop", "hoba", "mutual", "apikey", "aws4-hmac-sha256",
}

func knownScheme(w string) bool {
	for _, k := range knownSchemes {
		if strings.EqualFold(w, k) {
			return true
		}
	}
	return false
}

func isSchemeChar(c byte) bool { return isAlnum(c) || c == '-' }

func isLetter(c byte) bool { return ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') }
