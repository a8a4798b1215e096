package redact

import (
	"strings"
	"unicode/utf8"
)

// FileName returns s masked by String and reduced to the characters a file
// name holds safely on every system: ASCII letters, digits, '.', '-' and
// '_'. A mask keeps a readable form — "[CARD ****1111]" becomes
// "CARD-1111", the Mask ("[REDACTED]") "REDACTED", RedactedURL
// "REDACTED-URL" — and every other character becomes '_'. Masking comes
// first because the file-name characters would hide a secret's shape from
// String: "4111 1111 1111 1111" is a card number, "4111_1111_1111_1111" is
// not one String recognises. So a file named from FileName(s) carries no
// secret String finds in s.
func (r *Redactor) FileName(s string) string {
	s = r.String(s)
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		if last4, ok := cardMaskAt(s[i:]); ok {
			b.WriteString("CARD-" + last4)
			i += len(CardMask(last4))
			continue
		}
		if strings.HasPrefix(s[i:], RedactedURL) {
			b.WriteString("REDACTED-URL")
			i += len(RedactedURL)
			continue
		}
		if r.mask != "" && strings.HasPrefix(s[i:], r.mask) {
			b.WriteString(maskWord(r.mask))
			i += len(r.mask)
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if fileNameChar(c) {
			b.WriteRune(c)
		} else {
			b.WriteByte('_')
		}
		i += size
	}
	return b.String()
}

// cardMaskAt reports whether s starts with a CardMask, and its last four
// digits.
func cardMaskAt(s string) (last4 string, ok bool) {
	const prefix = "[CARD ****"
	if len(s) < len(prefix)+5 || !strings.HasPrefix(s, prefix) || s[len(prefix)+4] != ']' {
		return "", false
	}
	last4 = s[len(prefix) : len(prefix)+4]
	for i := range len(last4) {
		if !isDigit(last4[i]) {
			return "", false
		}
	}
	return last4, true
}

// maskWord is mask in file-name characters: its letters, digits, '.', '-'
// and '_', spaces as '-', "REDACTED" if nothing is left.
func maskWord(mask string) string {
	var b strings.Builder
	for _, c := range mask {
		switch {
		case fileNameChar(c):
			b.WriteRune(c)
		case c == ' ':
			b.WriteByte('-')
		}
	}
	if w := strings.Trim(b.String(), "-"); w != "" {
		return w
	}
	return "REDACTED"
}

// fileNameChar reports whether c is safe in a file name everywhere.
func fileNameChar(c rune) bool {
	return c == '-' || c == '_' || c == '.' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}
