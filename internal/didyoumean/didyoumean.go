// Package didyoumean suggests, for a misspelt name, the closest of the
// names that were possible: the "did you mean …?" of faultline's error
// messages (rule files, scenario files, fault models, built-in scenarios).
package didyoumean

import (
	"strings"
	"unicode/utf8"
)

// Distance returns the Levenshtein distance between a and b, counted in
// runes.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// Closest returns the candidate nearest to s, compared case-insensitively,
// when it is near enough to be a likely typo: at most max(2, n/2) edits
// for a name of n runes, and fewer edits than s has runes. Failing that, it
// returns a candidate that contains s, when s has at least four runes ("crash"
// for "worker-crash"). It returns "" when no candidate is close, and for an
// empty or very long s (over 64 bytes: no one misspells a paragraph).
func Closest(s string, candidates []string) string {
	if s == "" || len(s) > 64 {
		return ""
	}
	ls := strings.ToLower(s)
	n := utf8.RuneCountInString(s)
	best, bestD := "", -1
	for _, c := range candidates {
		if d := Distance(ls, strings.ToLower(c)); bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	if bestD >= 0 && bestD <= max(2, n/2) && bestD < n {
		return best
	}
	if n >= 4 {
		for _, c := range candidates {
			if strings.Contains(strings.ToLower(c), ls) {
				return c
			}
		}
	}
	return ""
}
