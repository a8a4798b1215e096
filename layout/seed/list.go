package seed

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/layout"
)

// Paging bounds.
const (
	// DefaultLimit is a page's size when List is given none.
	DefaultLimit = 50
	// MaxLimit is the largest page List returns.
	MaxLimit = 1000
	// ChunkSize is the most elements one LRANGE reads.
	ChunkSize = 500
	// MaxScan is the most elements one List call reads: a filter that
	// selects few entries of a long list gives a short page (even an empty
	// one) with a Next cursor, as Redis's SCAN does, so that no call runs
	// long or holds much.
	MaxScan = 10_000
)

// ErrCursor is matched by the error of a List given a cursor it did not
// write.
var ErrCursor = errors.New("invalid seed DLQ cursor")

// Entry is one entry of a seed DLQ list.
type Entry struct {
	// Key is the list it is in, prefix included.
	Key string `json:"key"`
	// Position counts from the tail of the list: 0 is the oldest entry.
	// It does not change when entries are pushed.
	Position int64 `json:"position"`
	// Bytes are the entry exactly as stored.
	Bytes []byte `json:"bytes"`
	// Parsed is the entry as layout.ParseEntry reads it with the seed's
	// fields (Source "KEY[INDEX]", INDEX from the head when read). Its
	// Severity, when the entry gives none, is the list's ("HIGH" for
	// dlq:high). An entry whose job has no job.id — most of those the
	// tutorial writes — is valid, with Parsed.NoID set and Parsed.Corrupt
	// empty: its Ref names it. Invalid says whether the tutorial's code
	// could reprocess it.
	Parsed layout.Entry `json:"parsed"`
	// Invalid says why the tutorial's code could not reprocess the entry
	// (not JSON, not an object, no "job" object); "" when it could. An
	// invalid entry is listed and migrated as corrupt, never dropped.
	Invalid string `json:"invalid,omitempty"`
}

// Ref names the entry a move is for: where it was listed and the bytes it
// had then.
func (e Entry) Ref() Ref { return Ref{Key: e.Key, Position: e.Position, Bytes: e.Bytes} }

// Status is the entry's status, "failed" when it has none (the dlq:*
// lists' records carry no status).
func (e Entry) Status() string {
	if e.Parsed.Status == "" {
		return "failed"
	}
	return e.Parsed.Status
}

// Filter selects entries. Every field set must hold; within a list, any
// element may match. An invalid entry has no fields to match: only a
// filter without conditions (Lists aside) selects it.
type Filter struct {
	// Lists are the lists read, before prefix ("dead_letter", "dlq:high");
	// none: all of the layout's.
	Lists []string
	// Severities match the entry's severity, case-insensitively.
	Severities []string
	// Statuses match Entry.Status, case-insensitively.
	Statuses []string
	// Text is a case-insensitive substring of the entry's error or error
	// type.
	Text string
}

func (f Filter) conditions() bool {
	return len(f.Severities) > 0 || len(f.Statuses) > 0 || f.Text != ""
}

// mayMatch is a cheap test on an element's bytes before it is parsed: false
// only when f cannot select it (its Text, plain ASCII that JSON writes as
// it is, is nowhere in the bytes).
func (f Filter) mayMatch(raw string) bool {
	if f.Text == "" {
		return true
	}
	for _, r := range f.Text {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' || r == '/' || r == '<' || r == '>' || r == '&' {
			return true
		}
	}
	return containsFold(raw, f.Text)
}

// containsFold reports whether s holds sub, ASCII case-insensitively.
func containsFold(s, sub string) bool {
	n := len(sub)
	for i := 0; i+n <= len(s); i++ {
		if strings.EqualFold(s[i:i+n], sub) {
			return true
		}
	}
	return false
}

// Match reports whether f selects e.
func (f Filter) Match(e *Entry) bool {
	if e.Invalid != "" {
		return !f.conditions()
	}
	fold := func(xs []string, v string) bool {
		return len(xs) == 0 || slices.ContainsFunc(xs, func(x string) bool { return strings.EqualFold(x, v) })
	}
	if f.Text != "" {
		t := strings.ToLower(f.Text)
		if !strings.Contains(strings.ToLower(e.Parsed.Error), t) && !strings.Contains(strings.ToLower(e.Parsed.Class), t) {
			return false
		}
	}
	return fold(f.Severities, e.Parsed.Severity) && fold(f.Statuses, e.Status())
}

// Page is one page of a listing: newest first within a list, the lists in
// the layout's order. Next is the cursor of the next page, "" after the
// last; a page may be short, or empty, with a Next (MaxScan).
type Page struct {
	Entries []Entry `json:"entries"`
	Next    string  `json:"next,omitempty"`
	// Scanned is how many list elements the call read.
	Scanned int `json:"scanned"`
}

// Keys returns the seed DLQ's lists, prefix included, in the layout's
// order.
func Keys(prefix string) []string {
	return layout.DLQ{Preset: layout.PresetSeed, Prefix: prefix}.Resolved().RedisList.Keys
}

// fields are the seed layout's entry fields.
func fields() layout.Fields {
	return layout.DLQ{Preset: layout.PresetSeed}.Resolved().Fields
}

// keys returns the lists f reads, prefix included.
func (f Filter) keys(prefix string) ([]string, error) {
	all := Keys(prefix)
	if len(f.Lists) == 0 {
		return all, nil
	}
	var out []string
	for _, l := range f.Lists {
		if !slices.Contains(all, prefix+l) {
			return nil, fmt.Errorf("list %q: not a seed DLQ list (%s)", l, strings.Join(names(), ", "))
		}
		if !slices.Contains(out, prefix+l) {
			out = append(out, prefix+l)
		}
	}
	// the layout's order, so that a cursor's list index means one thing
	slices.SortFunc(out, func(a, b string) int { return slices.Index(all, a) - slices.Index(all, b) })
	return out, nil
}

func names() []string { return append([]string{layout.SeedDeadLetter}, layout.SeedSeverityLists...) }

// parse reads one element.
func parse(key string, headIndex, pos int64, raw string, f layout.Fields) Entry {
	b := []byte(raw)
	e := Entry{Key: key, Position: pos, Bytes: b, Parsed: layout.ParseEntry(fmt.Sprintf("%s[%d]", key, headIndex), b, f)}
	if e.Parsed.Severity == "" {
		for _, l := range layout.SeedSeverityLists {
			if strings.HasSuffix(key, l) {
				e.Parsed.Severity = strings.ToUpper(strings.TrimPrefix(l, "dlq:"))
			}
		}
	}
	t, err := scanTop(b)
	switch {
	case err != nil && !strings.HasPrefix(e.Parsed.Corrupt, "not JSON"):
		e.Invalid = err.Error()
	case err != nil:
		e.Invalid = e.Parsed.Corrupt
	case t.job[0] < 0:
		e.Invalid = "no job"
	case b[t.job[0]] != '{':
		e.Invalid = "job is not an object"
	}
	return e
}

// chunk is a run of one list's elements, newest first, with the position
// of the oldest of them.
type chunk struct {
	raws   []string
	oldest int64
	length int64 // the list's length when read
}

// readDown reads up to n elements of key from position from (counted from
// the tail) toward the tail, newest first; from < 0 reads from the head.
// LLEN and LRANGE run in one MULTI, so the positions are exact.
func readDown(ctx context.Context, rdb redis.Cmdable, key string, from int64, n int) (chunk, error) {
	var start, stop int64
	if from < 0 {
		start, stop = 0, int64(n)-1
	} else {
		low := max(from-int64(n)+1, 0)
		start, stop = -(from + 1), -(low + 1)
	}
	var llen *redis.IntCmd
	var lr *redis.StringSliceCmd
	if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		llen = p.LLen(ctx, key)
		lr = p.LRange(ctx, key, start, stop)
		return nil
	}); err != nil {
		return chunk{}, fmt.Errorf("read %s: %w", key, err)
	}
	c := chunk{raws: lr.Val(), length: llen.Val()}
	switch {
	case len(c.raws) == 0:
		c.oldest = 0
	case from < 0:
		c.oldest = c.length - int64(len(c.raws))
	default:
		c.oldest = -stop - 1 // the LRANGE's stop is exact when anything came back
	}
	return c, nil
}

// cursor is where a listing goes on: list k, from position pos (from the
// head when head).
type cursor struct {
	k    int
	pos  int64
	head bool
}

func (c cursor) String() string {
	if c.head {
		return strconv.Itoa(c.k) + ":h"
	}
	return strconv.Itoa(c.k) + ":" + strconv.FormatInt(c.pos, 10)
}

func parseCursor(s string, lists int) (cursor, error) {
	if s == "" {
		return cursor{head: true}, nil
	}
	ks, ps, ok := strings.Cut(s, ":")
	k, err := strconv.Atoi(ks)
	if !ok || err != nil || k < 0 || k >= lists {
		return cursor{}, fmt.Errorf("%w: %q", ErrCursor, s)
	}
	if ps == "h" {
		return cursor{k: k, head: true}, nil
	}
	p, err := strconv.ParseInt(ps, 10, 64)
	if err != nil || p < 0 {
		return cursor{}, fmt.Errorf("%w: %q", ErrCursor, s)
	}
	return cursor{k: k, pos: p}, nil
}

// List returns up to limit entries f selects, from cursor ("" for the
// first page; DefaultLimit when limit <= 0, at most MaxLimit). It reads
// the lists with LRANGE in chunks of at most ChunkSize and at most MaxScan
// elements per call, never a whole list. Entries pushed while a listing
// goes on are not in its later pages (they are newer than its cursor);
// none already listed is repeated or skipped, unless the list is trimmed
// (see the package's documentation).
func List(ctx context.Context, rdb redis.Cmdable, prefix string, f Filter, cur string, limit int) (Page, error) {
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxLimit)
	keys, err := f.keys(prefix)
	if err != nil {
		return Page{}, fmt.Errorf("list: %w", err)
	}
	c, err := parseCursor(cur, len(keys))
	if err != nil {
		return Page{}, fmt.Errorf("list: %w", err)
	}
	fl := fields()
	var page Page
	for c.k < len(keys) {
		if len(page.Entries) == limit || page.Scanned >= MaxScan {
			page.Next = c.String()
			return page, nil
		}
		n := min(ChunkSize, MaxScan-page.Scanned)
		if !f.conditions() {
			n = min(n, limit-len(page.Entries))
		}
		from := c.pos
		if c.head {
			from = -1
		}
		ch, err := readDown(ctx, rdb, keys[c.k], from, n)
		if err != nil {
			return Page{}, fmt.Errorf("list: %w", err)
		}
		if len(ch.raws) == 0 {
			if !c.head && ch.length > 0 && c.pos >= ch.length {
				c.pos = ch.length - 1 // the list is shorter than the cursor (trimmed)
				continue
			}
			c = cursor{k: c.k + 1, head: true}
			continue
		}
		top := ch.oldest + int64(len(ch.raws)) - 1
		full := false
		for i, raw := range ch.raws {
			pos := top - int64(i)
			page.Scanned++
			if !f.mayMatch(raw) {
				continue
			}
			e := parse(keys[c.k], ch.length-1-pos, pos, raw, fl)
			if f.Match(&e) {
				page.Entries = append(page.Entries, e)
			}
			if len(page.Entries) == limit {
				c = cursor{k: c.k, pos: pos - 1}
				full = true
				break
			}
		}
		if !full {
			c = cursor{k: c.k, pos: ch.oldest - 1}
		}
		if c.pos < 0 && !c.head {
			c = cursor{k: c.k + 1, head: true}
		}
	}
	return page, nil
}
