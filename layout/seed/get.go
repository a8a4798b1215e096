package seed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// MoveScan is how far below its position Get looks for an entry that is no
// longer where it was listed: the tutorial's LTRIM of a full dlq:* list
// drops the oldest entries and moves every other one down by as many.
const MoveScan = 1000

// Digest returns the hex SHA-256 of an entry's bytes; a ref carries a
// prefix of it to say which entry it names.
func Digest(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// Where says how Get found the entry.
type Where uint8

// The answers of Get.
const (
	// At: the entry at the position has the digest (or none was given).
	At Where = iota + 1
	// Moved: the entry with the digest is below the position now (the
	// list was trimmed); Entry is it, at its new position.
	Moved
	// Restatused: the entry named is there (at the position, or below it
	// when a trim moved it) with another status: the tutorial's code (or a
	// requeue) marked it in place since the digest was taken. Entry is it,
	// as it is now.
	Restatused
	// ChangedAt: the entry at the position has other bytes and none with
	// the digest is within MoveScan below it; Entry is the one there.
	ChangedAt
	// Gone: the list has no entry at the position and none with the digest
	// within MoveScan below it.
	Gone
)

var whereNames = [...]string{"", "at", "moved", "restatused", "changed", "gone"}

// String returns the answer's name.
func (w Where) String() string {
	if w >= At && int(w) < len(whereNames) {
		return whereNames[w]
	}
	return fmt.Sprintf("where(%d)", uint8(w))
}

// ErrDigest is matched by the error of a Get given a digest that is not
// hex.
var ErrDigest = errors.New("invalid seed DLQ entry digest")

// Get reads the entry of list (before prefix) at position pos (from the
// tail) whose bytes' Digest starts with digest ("" takes whatever is
// there), in one round trip (LLEN and LINDEX in one MULTI); an entry there
// that is the one named with its status changed in place is Restatused.
// When the entry there is another, or there is none, it looks for the one
// named in the MoveScan elements below pos (one bounded LRANGE), where a
// trim moves it; the nearest is taken. It never reads a whole list.
func Get(ctx context.Context, rdb redis.Cmdable, prefix, list string, pos int64, digest string) (Entry, Where, error) {
	key := prefix + list
	if err := checkRef(prefix, Ref{Key: key, Position: pos}); err != nil {
		return Entry{}, 0, fmt.Errorf("get: %w", err)
	}
	digest = strings.ToLower(digest)
	if _, err := hex.DecodeString(digest + strings.Repeat("0", len(digest)%2)); err != nil || len(digest) > sha256.Size*2 {
		return Entry{}, 0, fmt.Errorf("get %s@%d: %w: %q", list, pos, ErrDigest, digest)
	}
	var llen *redis.IntCmd
	var at *redis.StringCmd
	if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		llen = p.LLen(ctx, key)
		at = p.LIndex(ctx, key, -(pos + 1))
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return Entry{}, 0, fmt.Errorf("get %s@%d: %w", list, pos, err)
	}
	fl := fields()
	n := llen.Val()
	raw, err := at.Result()
	found := err == nil
	if err != nil && !errors.Is(err, redis.Nil) {
		return Entry{}, 0, fmt.Errorf("get %s@%d: %w", list, pos, err)
	}
	if found {
		switch exact, restatused := namedBy([]byte(raw), digest); {
		case exact:
			return parse(key, n-1-pos, pos, raw, fl), At, nil
		case restatused:
			return parse(key, n-1-pos, pos, raw, fl), Restatused, nil
		}
	}
	// Moved down by a trim? Look below, nearest first.
	top := min(pos, n) - 1
	if digest != "" && top >= 0 {
		ch, err := readDown(ctx, rdb, key, top, MoveScan)
		if err != nil {
			return Entry{}, 0, fmt.Errorf("get %s@%d: %w", list, pos, err)
		}
		hi := ch.oldest + int64(len(ch.raws)) - 1
		for i, r := range ch.raws {
			// the nearest first: a trim keeps the order, so a
			// byte-identical entry below is never taken for it
			exact, restatused := namedBy([]byte(r), digest)
			if exact || restatused {
				p := hi - int64(i)
				w := Moved
				if restatused {
					w = Restatused
				}
				return parse(key, ch.length-1-p, p, r, fl), w, nil
			}
		}
	}
	if found {
		return parse(key, n-1-pos, pos, raw, fl), ChangedAt, nil
	}
	return Entry{}, Gone, nil
}

// namedBy says whether raw is the entry whose Digest starts with digest:
// exactly, or restatused (raw is that entry with its status set in place,
// or added, as the tutorial's code marks an entry).
func namedBy(raw []byte, digest string) (exact, restatused bool) {
	if strings.HasPrefix(Digest(raw), digest) {
		return true, false
	}
	t, err := scanTop(raw)
	if digest == "" || err != nil || t.status[0] < 0 {
		return false, false
	}
	for _, st := range []string{"failed", Reprocessing, "deleted"} {
		if strings.HasPrefix(Digest(withStatus(raw, t, st)), digest) {
			return false, true
		}
	}
	return false, strings.HasPrefix(Digest(withoutStatus(raw)), digest)
}
