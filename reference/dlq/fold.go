package dlq

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The error-text filter (dlq.Filter.ErrorText) compares under Unicode
// simple case folding. Every store folds the same way, with FoldText: each
// rune is mapped to one representative of its simple-folding orbit (the
// lower case of the orbit's lowest rune, or that rune when its lower case
// is not in the orbit), so two texts are equal under simple folding
// exactly when their folds are equal, and a substring test on folds is a
// case-insensitive substring test.
// Invalid UTF-8 folds to U+FFFD, byte by byte, as JSON encoding stores it:
// the fold of an entry's text is the same before and after a round trip.
// Full folding (ß against "ss") is not applied: simple folding maps one
// rune to one rune.

// FoldRune returns r's representative under simple case folding.
func FoldRune(r rune) rune {
	if r < utf8.RuneSelf {
		// An ASCII letter's orbit holds its upper case as its lowest
		// rune (k's holds the Kelvin sign too, s's the long s).
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}
	low := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		low = min(low, f)
	}
	// The lowest rune's lower case, when it is in the orbit (it is for
	// every cased letter), reads better than the lowest rune itself and is
	// as canonical.
	if l := unicode.ToLower(low); l != low {
		for f := unicode.SimpleFold(low); f != low; f = unicode.SimpleFold(f) {
			if f == l {
				return l
			}
		}
	}
	return low
}

// FoldText returns the fold of s (see FoldRune): what Filter.ErrorText
// is compared under.
func FoldText(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || 'A' <= c && c <= 'Z' {
			ascii = false
			break
		}
	}
	if ascii {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		b.WriteRune(FoldRune(r))
	}
	return b.String()
}

// ContainsFold reports whether text holds needle under simple case
// folding; foldedNeedle is FoldText(needle).
func ContainsFold(text, foldedNeedle string) bool {
	return strings.Contains(FoldText(text), foldedNeedle)
}
