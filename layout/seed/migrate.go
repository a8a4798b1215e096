package seed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/layout"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
)

// MarkerBase is the start of a migration marker's key, after the prefix:
// see MarkerKey.
const MarkerBase = "faultline:migrated:"

// MarkerKey is the hash recording a migration of the seed DLQ at prefix
// into faultline namespace ns: identity → the faultline ID of every entry
// migrated (followed by markInactive once the faultline entry was
// soft-deleted because the seed marked the entry). One per namespace, so
// that migrating the same lists into two namespaces migrates every entry
// into each.
func MarkerKey(prefix, ns string) string { return prefix + MarkerBase + ns }

// markInactive ends a marker value whose faultline entry was soft-deleted
// because the seed marked its entry reprocessing or deleted (a job ID has
// no control characters).
const markInactive = "\tinactive"

// MarkerID returns the faultline ID a marker value names.
func MarkerID(v string) string { return strings.TrimSuffix(v, markInactive) }

// By is who the migration says made the changes it makes.
const By = "seed-migration"

// Target is the faultline DLQ a migration writes (reference/dlq.Store has
// these).
type Target interface {
	Add(ctx context.Context, e dlq.Entry, now time.Time) (dlq.AddResult, error)
	Get(ctx context.Context, id string) (dlq.Entry, error)
	Delete(ctx context.Context, id, by string, now time.Time) error
}

// RawWriter is a Target that can keep bytes it cannot decode as a corrupt
// entry (redisstore.Store.WriteRaw). Without it, a migration leaves the
// seed's invalid entries where they are and says so.
type RawWriter interface {
	WriteRaw(ctx context.Context, id string, raw []byte) error
}

// ErrNotMigrated is matched by the error of a Migrate that left entries in
// the seed lists (MigrateResult.Left says which and why).
var ErrNotMigrated = errors.New("seed DLQ entries not migrated")

// ErrUnsettled is matched by the error of a Migrate that stopped because a
// list kept moving under it (trimmed or changed faster than it could find
// its place again, MaxShifts times in a row): it migrated what it says and
// a rerun takes the rest.
var ErrUnsettled = errors.New("seed DLQ list kept moving during the migration")

// MaxShifts bounds how many times in a row a Migrate looks for its place
// again in a list that moved before it stops (ErrUnsettled).
const MaxShifts = 100

// anchorLen is how many of the last entries processed a Migrate keeps to
// find its place again in a list that moved.
const anchorLen = 4

// Left is an entry a migration could not write.
type Left struct {
	Identity string `json:"identity"`
	Key      string `json:"key"`
	Position int64  `json:"position"`
	Reason   string `json:"reason"`
}

// MigrateResult is what a Migrate did.
type MigrateResult struct {
	// Seen counts the entries read.
	Seen int `json:"seen"`
	// Migrated counts those written now: Created as new faultline entries,
	// Merged into an entry of the same job ID, Corrupt kept as corrupt
	// entries with their bytes.
	Migrated, Created, Merged, Corrupt int
	// Already counts those the marker says were migrated by an earlier run.
	Already int `json:"already"`
	// Deleted counts entries the seed marks "deleted" or "reprocessing",
	// soft-deleted in faultline after their add (their job is not waiting
	// for a decision: restore one to requeue it).
	Deleted int `json:"deleted"`
	// Gone counts entries the seed marks reprocessing or deleted whose
	// faultline entry no longer exists (purged or evicted since it was
	// migrated): nothing to soft-delete, recorded as done.
	Gone int `json:"gone,omitempty"`
	// Superseded counts entries the seed marks reprocessing or deleted
	// whose faultline entry failed again since it was migrated (a new
	// failure of the same job, its last failure no longer the seed
	// entry's): left failed, recorded as done.
	Superseded int `json:"superseded,omitempty"`
	// Shifts counts the times a list moved under the walk (the tutorial's
	// LTRIM, or an entry removed) and the walk found its place again.
	Shifts int `json:"shifts,omitempty"`
	// Evicted are faultline entries the target's evict-oldest policy pushed
	// out to make room.
	Evicted []string `json:"evicted,omitempty"`
	Left    []Left   `json:"left,omitempty"`
}

// Identity is what names a seed entry across runs: its list, the SHA-256
// of its bytes without their status (so that the tutorial's marking it
// "reprocessing" or "deleted" in place leaves it the same entry) and its
// occurrence among the list's elements with the same such bytes, counted
// from the tail (1 is the oldest), so that two byte-identical entries stay
// two. A trim of the oldest shifts the occurrences of the rest: see the
// package documentation for what that means for byte-identical entries.
func Identity(key string, b []byte, occurrence int) string {
	return key + "#" + digest(key, b) + "#" + strconv.Itoa(occurrence)
}

// digest is the hash of an entry's bytes without their status, in key.
func digest(key string, b []byte) string {
	h := sha256.New()
	h.Write([]byte(key))
	h.Write([]byte{0})
	h.Write(withoutStatus(b))
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// readUp reads up to n elements of key from position from toward the
// head, oldest first, and the position of the first.
func readUp(ctx context.Context, rdb redis.Cmdable, key string, from int64, n int) ([]string, error) {
	raws, err := rdb.LRange(ctx, key, -(from + int64(n)), -(from + 1)).Result()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	for i, j := 0, len(raws)-1; i < j; i, j = i+1, j-1 {
		raws[i], raws[j] = raws[j], raws[i]
	}
	return raws, nil
}

// anchored reports whether raws (read from the walk's position less
// len(anchor), oldest first) begin with the anchor's entries.
func anchored(key string, raws, anchor []string) bool {
	if len(raws) < len(anchor) {
		return false
	}
	for i, d := range anchor {
		if digest(key, []byte(raws[i])) != d {
			return false
		}
	}
	return true
}

// findAnchor returns where the newest of the anchor's entries is now: the
// highest position at or below from ending a run of the anchor's entries,
// else (the oldest of them trimmed away) the highest holding its newest
// alone; -1 when it is gone. It returns the run it found too, the walk's
// anchor from there. Trims and removals only move entries down, so
// a walk down from from in chunks of ChunkSize (as far as the tail when it
// must) cannot pass it.
func findAnchor(ctx context.Context, rdb redis.Cmdable, key string, from int64, anchor []string) (int64, []string, error) {
	for _, w := range [][]string{anchor, anchor[len(anchor)-1:]} {
		a := int64(len(w))
		for hi := from; hi >= a-1; {
			lo := max(hi-int64(ChunkSize)+1, 0)
			raws, err := readUp(ctx, rdb, key, lo, int(hi-lo+1))
			if err != nil {
				return -1, nil, fmt.Errorf("find the place of the walk in %s: %w", key, err)
			}
			for i := int64(len(raws)) - 1; i >= a-1; i-- {
				if anchored(key, raws[i-a+1:i+1], w) {
					return lo + i, w, nil
				}
			}
			if lo == 0 {
				break
			}
			hi = lo + a - 2 // the runs across the chunks' boundary too
		}
		if a == 1 {
			break
		}
	}
	return -1, nil, nil
}

// Migrate copies every entry of the seed DLQ lists into st, the DLQ of
// faultline namespace ns, oldest first, and records each in that
// namespace's marker hash (MarkerKey(prefix, ns)); the seed lists are left
// as they were. A rerun skips what the marker holds, but soft-deletes the
// faultline entry of one the seed has marked reprocessing or deleted since;
// an entry written whose marker was not (a run stopped between the two) is
// found by its ID and not written twice, so an interrupted migration is
// rerun safely. Entries pushed while it runs are migrated when pushed
// before the walk reaches the head of their list, else left for the next
// run; none is lost. A list that moves while it runs (the tutorial's LTRIM
// of a full list drops its oldest entries and moves every other one down)
// is followed: each page is read with the last entries processed below it,
// and when those are not where the walk left them it finds them again
// (res.Shifts) before going on, so that no entry in the list when the run
// began and still there at its end is skipped; a list that keeps moving
// MaxShifts times in a row stops the run (ErrUnsettled). An entry the seed
// marks reprocessing or deleted is soft-deleted in faultline only while
// its faultline entry is still the one migrated (failed, the latest
// failure of its history the seed entry's); one gone from faultline (purged, evicted) or failed
// again since is recorded as done and left. An entry whose job has an ID (job.id) becomes, or is
// merged into, the faultline entry of that ID; one without gets a stable
// ID made from its identity ("seed-HASH-N"). Invalid entries are kept as
// corrupt entries with their bytes when st is a RawWriter, else left and
// reported (the error matches ErrNotMigrated).
func Migrate(ctx context.Context, rdb redis.Cmdable, prefix, ns string, st Target, now time.Time) (MigrateResult, error) {
	var res MigrateResult
	marker := MarkerKey(prefix, ns)
	fl := fields()
	for _, key := range Keys(prefix) {
		seen := map[string]int{} // digest → occurrences so far
		var anchor []string      // digests of the last entries processed, oldest first
		retries := 0
		for pos := int64(0); ; {
			// the next page, read with the anchor below it in one LRANGE:
			// when the anchor is not where the walk left it, the list moved
			// (a trim of its oldest entries, or an entry removed) and the
			// walk finds it again before going on, so that nothing is skipped
			a := int64(len(anchor))
			raws, err := readUp(ctx, rdb, key, pos-a, ChunkSize+int(a))
			if err != nil {
				return res, fmt.Errorf("migrate: %w", err)
			}
			if a > 0 && !anchored(key, raws, anchor) {
				if retries++; retries > MaxShifts {
					return res, fmt.Errorf("migrate: %s moved under the walk %d times in a row (trimmed or changed while it was read): %w",
						key, retries-1, ErrUnsettled)
				}
				res.Shifts++
				q, w, err := findAnchor(ctx, rdb, key, pos-1, anchor)
				if err != nil {
					return res, fmt.Errorf("migrate: %w", err)
				}
				pos, anchor = q+1, w // 0 and none when every entry processed is gone: the rest are newer
				continue
			}
			retries = 0
			raws = raws[a:]
			if len(raws) == 0 {
				break
			}
			ids := make([]string, len(raws))
			for i, raw := range raws {
				d := digest(key, []byte(raw))
				seen[d]++
				ids[i] = Identity(key, []byte(raw), seen[d])
				anchor = append(anchor, d)
			}
			anchor = anchor[max(len(anchor)-anchorLen, 0):]
			done, err := rdb.HMGet(ctx, marker, ids...).Result()
			if err != nil {
				return res, fmt.Errorf("migrate: read marker: %w", err)
			}
			mark := map[string]any{}
			for i, raw := range raws {
				res.Seen++
				p := pos + int64(i)
				if v, ok := done[i].(string); ok {
					res.Already++
					if strings.HasSuffix(v, markInactive) {
						continue
					}
					e := parse(key, -1, p, raw, fl)
					if e.Invalid != "" {
						continue
					}
					del, err := softDelete(ctx, st, MarkerID(v), &e, now, &res)
					if err != nil {
						return res, fmt.Errorf("migrate %s (%s[tail %d]): %w", ids[i], key, p, err)
					}
					if del {
						mark[ids[i]] = v + markInactive
					}
					continue
				}
				e := parse(key, -1, p, raw, fl)
				id, inactive, err := migrateOne(ctx, st, &e, ids[i], now, &res)
				if err != nil {
					return res, fmt.Errorf("migrate %s (%s[tail %d]): %w", ids[i], key, p, err)
				}
				switch {
				case id != "" && inactive:
					mark[ids[i]] = id + markInactive
				case id != "":
					mark[ids[i]] = id
				}
			}
			if len(mark) > 0 {
				if err := rdb.HSet(ctx, marker, mark).Err(); err != nil {
					return res, fmt.Errorf("migrate: write marker: %w", err)
				}
			}
			pos += int64(len(raws))
		}
	}
	if len(res.Left) > 0 {
		return res, fmt.Errorf("migrate: %d left in the seed lists (first: %s: %s): %w",
			len(res.Left), res.Left[0].Identity, res.Left[0].Reason, ErrNotMigrated)
	}
	return res, nil
}

// migrateOne writes one entry and returns its faultline ID, or "" when it
// was left (recorded in res.Left), and whether the seed marks it inactive
// (its faultline entry soft-deleted).
func migrateOne(ctx context.Context, st Target, e *Entry, identity string, now time.Time, res *MigrateResult) (string, bool, error) {
	left := func(reason string) (string, bool, error) {
		res.Left = append(res.Left, Left{Identity: identity, Key: e.Key, Position: e.Position, Reason: reason})
		return "", false, nil
	}
	occ := identity[strings.LastIndexByte(identity, '#')+1:]
	gen := "seed-" + digest(e.Key, e.Bytes)[:20] + "-" + occ
	if e.Invalid != "" {
		id := "seed-corrupt-" + strings.TrimPrefix(gen, "seed-")
		if _, err := st.Get(ctx, id); err == nil {
			return id, false, nil // written by a run stopped before its marker
		} else if !errors.Is(err, dlq.ErrNotFound) {
			return "", false, err
		}
		w, ok := st.(RawWriter)
		if !ok {
			return left("invalid (" + e.Invalid + ") and the target cannot keep a corrupt entry")
		}
		if err := w.WriteRaw(ctx, id, e.Bytes); err != nil {
			return "", false, err
		}
		res.Migrated++
		res.Corrupt++
		return id, false, nil
	}
	fe, err := entryOf(e, gen)
	if err != nil {
		return left(err.Error())
	}
	id := fe.Job.ID
	old, err := st.Get(ctx, id)
	switch {
	case err == nil && !old.Corrupt && holds(old.History, fe.History[0]):
		// written by a run stopped before its marker: not again
	case err == nil || errors.Is(err, dlq.ErrNotFound):
		r, err := st.Add(ctx, fe, now)
		if err != nil {
			return "", false, err
		}
		res.Migrated++
		if r.Created {
			res.Created++
		} else {
			res.Merged++
		}
		res.Evicted = append(res.Evicted, r.Evicted...)
	default:
		return "", false, err
	}
	inactive, err := softDelete(ctx, st, id, e, now, res)
	if err != nil {
		return "", false, err
	}
	return id, inactive, nil
}

// softDelete soft-deletes the faultline entry id when the seed's status
// of e says its job is no longer waiting (reprocessing, deleted), and only
// when that entry is still the one migrated from e: still failed, its last
// failure e's. An entry gone from faultline (purged, evicted) has nothing
// to soft-delete; one that failed again since e was migrated (a new
// failure of the same job) is left failed (res.Superseded), never deleted
// for the old one. It reports whether the seed's status is such, so that
// the marker records e as done. "Still the one migrated" is judged by the
// latest failure in the entry's history: a job's new failure adds a later
// one.
func softDelete(ctx context.Context, st Target, id string, e *Entry, now time.Time, res *MigrateResult) (bool, error) {
	status := e.Status()
	if status != Reprocessing && status != "deleted" {
		return false, nil
	}
	fe, err := entryOf(e, id)
	if err != nil {
		return false, nil // not an entry migrateOne writes
	}
	f := fe.History[0]
	cur, err := st.Get(ctx, id)
	switch {
	case errors.Is(err, dlq.ErrNotFound):
		res.Gone++
		return true, nil
	case err != nil:
		return false, err
	}
	if cur.Status != dlq.Failed {
		return true, nil
	}
	if cur.Corrupt || !isLast(cur.History, f) {
		res.Superseded++
		return true, nil
	}
	// Get then Delete: a new failure of the job in the moment between the
	// two would be soft-deleted with it (the Target offers no guarded
	// delete); restore brings it back, and its status history says who.
	if err := st.Delete(ctx, id, By+" (seed status "+status+")", now); err != nil {
		switch {
		case errors.Is(err, dlq.ErrNotFound):
			res.Gone++
			return true, nil
		case errors.Is(err, dlq.ErrWrongStatus):
			return true, nil // no longer failed: someone decided since the Get
		}
		return false, err
	}
	res.Deleted++
	return true, nil
}

// isLast reports whether f is the latest failure of h (by its time; the
// entry's LastFailedAt is the write's time when the failure's is later
// than it or unknown, so the history is what says).
func isLast(h []dlq.Failure, f dlq.Failure) bool {
	if len(h) == 0 {
		return false
	}
	last := h[0]
	for _, o := range h[1:] {
		if !o.At.Before(last.At) {
			last = o
		}
	}
	return holds([]dlq.Failure{last}, f)
}

func holds(h []dlq.Failure, f dlq.Failure) bool {
	for _, o := range h {
		if o.At.Equal(f.At) && o.Attempt == f.Attempt && o.Error == f.Error {
			return true
		}
	}
	return false
}

// The tutorial's time formats: Python's datetime.utcnow().isoformat(), in
// UTC without a zone.
var timeLayouts = []string{"2006-01-02T15:04:05.999999", time.RFC3339Nano}

func parseTime(s string) time.Time {
	for _, l := range timeLayouts {
		if t, err := time.ParseInLocation(l, s, time.UTC); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}

// classes maps the Python exception types the tutorial classifies.
var classes = map[string]classify.Class{
	"TimeoutError": classify.Transient, "ConnectionError": classify.Transient,
	"ValueError": classify.Permanent, "KeyError": classify.Permanent, "TypeError": classify.Permanent,
	"PermissionError": classify.Critical, "AuthenticationError": classify.Critical,
}

// entryOf builds the faultline entry of a valid seed entry: the job (its
// whole JSON as the payload, its task, its ID or gen), one failure in the
// history (the error, retries as the attempt, failed_at or timestamp as
// the time), severity and class as the verdict where they map.
func entryOf(e *Entry, gen string) (dlq.Entry, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(e.Bytes, &doc); err != nil {
		return dlq.Entry{}, err
	}
	var jdoc any
	dec := json.NewDecoder(strings.NewReader(string(doc["job"])))
	dec.UseNumber()
	if err := dec.Decode(&jdoc); err != nil {
		return dlq.Entry{}, err
	}
	str := func(path string) string { v, _ := layout.Lookup(jdoc, path); return v }
	j := job.Job{ID: str("id"), Task: str("task"), Payload: append([]byte(nil), doc["job"]...),
		IdempotencyKey: str("idempotency_key"), Attempts: max(e.Parsed.Retries, 0)}
	if j.ID == "" {
		j.ID = gen
	}
	if j.Task == "" {
		j.Task = "unknown" // the tutorial's job.get('task', 'unknown')
	}
	if err := job.Validate(&j, 0); err != nil {
		return dlq.Entry{}, err
	}
	var at time.Time
	for _, f := range []string{"failed_at", "timestamp"} {
		var s string
		if json.Unmarshal(doc[f], &s) == nil && s != "" {
			at = parseTime(s)
			break
		}
	}
	var v classify.Classification
	v.Rule = "seed"
	if sv, err := classify.ParseSeverity(e.Parsed.Severity); err == nil {
		v.Severity = sv
	}
	v.Class = classes[e.Parsed.Class]
	return dlq.Entry{
		Job: j,
		History: []dlq.Failure{{At: at, Attempt: j.Attempts, Error: e.Parsed.Error, ErrorType: e.Parsed.Class,
			Verdict: v}},
		FirstFailedAt: at, LastFailedAt: at, Verdict: v,
		Reason:      fmt.Sprintf("dead-lettered by the seed system into %s after %d retries", e.Key, j.Attempts),
		SourceQueue: job.DefaultQueue,
	}, nil
}
