package redact

import "strings"

// Card numbers are 13 to 19 digits long (ISO/IEC 7812).
const (
	minCardDigits = 13
	maxCardDigits = 19
)

// CardMask returns the text that replaces a card number whose last four
// digits are last4: "[CARD ****4242]". The format is fixed, whatever
// Config.Mask says, so that a reader can still tell two cards apart.
func CardMask(last4 string) string {
	return "[CARD ****" + last4 + "]"
}

// group is one run of digits, s[start:end].
type group struct{ start, end int }

// cards masks card numbers. A candidate is a run of digit groups separated
// by single spaces or dashes; any window of whole consecutive groups holding
// 13 to 19 digits, with no letter or digit glued to either end, is a card if
// it passes the Luhn check. Windows are tried left to right, longest first,
// and do not overlap.
func (r *Redactor) cards(s string) string {
	digits := 0
	for i := 0; i < len(s) && digits < minCardDigits; i++ {
		if isDigit(s[i]) {
			digits++
		}
	}
	if digits < minCardDigits {
		return s
	}
	var (
		b      strings.Builder
		last   int
		stack  [24]group
		groups = stack[:0]
	)
	for i := 0; i < len(s); {
		if !isDigit(s[i]) {
			i++
			continue
		}
		// Collect the run of groups starting at i.
		groups = groups[:0]
		j := i
		for {
			k := j
			for k < len(s) && isDigit(s[k]) {
				k++
			}
			groups = append(groups, group{j, k})
			if k+1 < len(s) && (s[k] == ' ' || s[k] == '-') && isDigit(s[k+1]) {
				j = k + 1
				continue
			}
			break
		}
		runEnd := groups[len(groups)-1].end
		if identifier(s, groups) {
			i = runEnd
			continue
		}
		for g := 0; g < len(groups); {
			h := r.cardWindow(s, groups, g, i, runEnd)
			if h < 0 {
				g++
				continue
			}
			start, end := groups[g].start, groups[h].end
			b.WriteString(s[last:start])
			b.WriteString(CardMask(lastDigits(s[start:end], 4)))
			last = end
			g = h + 1
		}
		i = runEnd
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// cardWindow returns the last group of the longest card number starting at
// groups[g], or -1. The run of groups spans s[runStart:runEnd].
func (r *Redactor) cardWindow(s string, groups []group, g, runStart, runEnd int) int {
	if g == 0 && runStart > 0 && isAlnum(s[runStart-1]) {
		return -1
	}
	found, n := -1, 0
	for h := g; h < len(groups); h++ {
		n += groups[h].end - groups[h].start
		if n > maxCardDigits {
			break
		}
		if n < minCardDigits {
			continue
		}
		if h == len(groups)-1 && runEnd < len(s) && isAlnum(s[runEnd]) {
			break
		}
		if h == g && epochMs(s[groups[g].start:groups[g].end]) {
			continue
		}
		if luhn(s[groups[g].start:groups[h].end]) {
			found = h
		}
	}
	return found
}

// identifier reports whether a run of digit groups has the shape of an
// identifier whose digits may pass the Luhn check by chance: a Redis stream
// ID (a millisecond time, a dash, a sequence: 1796456271893-0) or a UUID
// of digits (8-4-4-4-12, dashed). No card is written so.
func identifier(s string, groups []group) bool {
	dashed := func() bool {
		for k := 1; k < len(groups); k++ {
			if s[groups[k].start-1] != '-' {
				return false
			}
		}
		return true
	}
	switch len(groups) {
	case 2:
		return epochMs(s[groups[0].start:groups[0].end]) && dashed()
	case 5:
		for k, n := range [5]int{8, 4, 4, 4, 12} {
			if groups[k].end-groups[k].start != n {
				return false
			}
		}
		return dashed()
	}
	return false
}

// epochMs reports whether digits, one group of ASCII digits, reads as a
// Unix time in milliseconds from 2001-09-09 to 2096-10-02 (13 digits, the
// first 1 to 3): a timestamp, not a card — a 13-digit card is a Visa,
// whose numbers start with 4.
func epochMs(digits string) bool {
	return len(digits) == 13 && digits[0] >= '1' && digits[0] <= '3'
}

// luhn reports whether the digits of s, ignoring separators, pass the Luhn
// check.
func luhn(s string) bool {
	sum, double := 0, false
	for i := len(s) - 1; i >= 0; i-- {
		c := s[i]
		if !isDigit(c) {
			continue
		}
		d := int(c - '0')
		if double {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
		double = !double
	}
	return sum%10 == 0
}

// lastDigits returns the last n digits of s, ignoring separators.
func lastDigits(s string, n int) string {
	var buf [8]byte
	i := len(buf)
	for j := len(s) - 1; j >= 0 && i > len(buf)-n; j-- {
		if isDigit(s[j]) {
			i--
			buf[i] = s[j]
		}
	}
	return string(buf[i:])
}

// cardDigits reports whether digits, a string of ASCII digits, is a card
// number on its own, for numbers in payloads.
func cardDigits(digits string) bool {
	if len(digits) < minCardDigits || len(digits) > maxCardDigits {
		return false
	}
	for i := 0; i < len(digits); i++ {
		if !isDigit(digits[i]) {
			return false
		}
	}
	return !epochMs(digits) && luhn(digits)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isAlnum(c byte) bool {
	return isDigit(c) || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}
