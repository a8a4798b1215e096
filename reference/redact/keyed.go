package redact

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// KeyedPrefix starts every keyed mask: "redacted-" + 12 hex digits. A
// keyed mask is a word of letters, digits and a hyphen, so a rule that
// masks a credential's shape (a webhook's path, a URL's password) still
// finds it where it stood: a file masked at rest, read and redacted again
// (a report of it), masks what the original would have.
const KeyedPrefix = "redacted-"

// Keyed masks what a Redactor masks with a keyed hash of it instead of one
// fixed mask: "Bearer redacted-3f9a0c1e2b4d". Equal secrets get equal
// masks under one key, so a file masked at rest (a drill's history) keeps
// which failures, entries and notifications carried the same secret; the
// key is drawn at random per Keyed and never stored, so the masks cannot
// be tested against a guess. Card numbers keep the Redactor's own mask
// (their last four digits). Texts in Keep (a scenario's planted secrets,
// public by construction: they are in the scenario file) are kept as they
// are, so a check that looks for them reads the masked file as it read the
// original. It is safe for concurrent use.
type Keyed struct {
	r        *Redactor
	sentinel string
	key      []byte
	keep     []string
	// placeholders stand for the kept texts while the Redactor runs: words
	// no rule masks, nor finds in real text.
	placeholders []string
}

// NewKeyed returns a Keyed of cfg's rules (its Mask is replaced) with a
// fresh random key, keeping the texts of keep.
func NewKeyed(cfg Config, keep []string) (*Keyed, error) {
	var seed [24]byte
	if _, err := rand.Read(seed[:]); err != nil {
		return nil, fmt.Errorf("redact: a key for keyed masks: %w", err)
	}
	// The sentinel is a word no text holds (16 random hex digits after a
	// fixed stem), which the rules leave alone and splice in as they
	// would the mask.
	cfg.Mask = "flmask" + hex.EncodeToString(seed[16:])
	r, err := New(cfg)
	if err != nil {
		return nil, err
	}
	k := &Keyed{r: r, sentinel: cfg.Mask, key: append([]byte(nil), seed[:16]...)}
	for i, t := range keep {
		if t == "" {
			continue
		}
		k.keep = append(k.keep, t)
		k.placeholders = append(k.placeholders, fmt.Sprintf("flkeep%s%d", hex.EncodeToString(seed[16:20]), i))
	}
	return k, nil
}

// String masks the secrets of s, each by its keyed hash.
func (k *Keyed) String(s string) string {
	if s == "" {
		return s
	}
	for i, t := range k.keep {
		s = strings.ReplaceAll(s, t, k.placeholders[i])
	}
	masked := k.r.String(s)
	if masked == s {
		return k.restore(s)
	}
	// masked is s with spans replaced by the sentinel: the text between
	// two of masked's literal runs, found in s in order, is a span. Only
	// masked's literal runs and hashes are written, so whatever the
	// alignment finds, nothing of a masked span is written as it was.
	parts := strings.Split(masked, k.sentinel)
	var b strings.Builder
	b.Grow(len(masked))
	b.WriteString(k.restore(parts[0]))
	pos := len(parts[0])
	if !strings.HasPrefix(s, parts[0]) {
		pos = 0
	}
	for _, lit := range parts[1:] {
		end := len(s)
		if lit != "" {
			if j := strings.Index(s[min(pos, len(s)):], lit); j >= 0 {
				end = min(pos, len(s)) + j
			}
		}
		b.WriteString(k.hash(s[min(pos, end):end]))
		b.WriteString(k.restore(lit))
		pos = end + len(lit)
	}
	return b.String()
}

// hash is a span's keyed mask; a kept text inside it (a planted secret)
// stays as it was, and the pieces around it are masked each.
func (k *Keyed) hash(span string) string {
	for i, p := range k.placeholders {
		if j := strings.Index(span, p); j >= 0 {
			var b strings.Builder
			if j > 0 {
				b.WriteString(k.hash(span[:j]))
			}
			b.WriteString(k.keep[i])
			if rest := span[j+len(p):]; rest != "" {
				b.WriteString(k.hash(rest))
			}
			return b.String()
		}
	}
	m := hmac.New(sha256.New, k.key)
	m.Write([]byte(span))
	return KeyedPrefix + hex.EncodeToString(m.Sum(nil))[:12]
}

// restore puts the kept texts back for their placeholders.
func (k *Keyed) restore(s string) string {
	for i, p := range k.placeholders {
		if strings.Contains(s, p) {
			s = strings.ReplaceAll(s, p, k.keep[i])
		}
	}
	return s
}
