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
// two.
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

// Migrate copies every entry of the seed DLQ lists into st, the DLQ of
// faultline namespace ns, oldest first, and records each in that
// namespace's marker hash (MarkerKey(prefix, ns)); the seed lists are left
// as they were. A rerun skips what the marker holds, but soft-deletes the
// faultline entry of one the seed has marked reprocessing or deleted since;
// an entry written whose marker was not (a run stopped between the two) is
// found by its ID and not written twice, so an interrupted migration is
// rerun safely. Entries pushed while it runs are migrated when pushed
// before the walk reaches the head of their list, else left for the next
// run; none is lost. An entry whose job has an ID (job.id) becomes, or is
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
		for pos := int64(0); ; {
			raws, err := readUp(ctx, rdb, key, pos, ChunkSize)
			if err != nil {
				return res, fmt.Errorf("migrate: %w", err)
			}
			if len(raws) == 0 {
				break
			}
			ids := make([]string, len(raws))
			for i, raw := range raws {
				d := digest(key, []byte(raw))
				seen[d]++
				ids[i] = Identity(key, []byte(raw), seen[d])
			}
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
					del, err := softDelete(ctx, st, MarkerID(v), e.Status(), now, &res)
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
	inactive, err := softDelete(ctx, st, id, e.Status(), now, res)
	if err != nil {
		return "", false, err
	}
	return id, inactive, nil
}

// softDelete soft-deletes the faultline entry id when the seed's status
// of its entry says its job is no longer waiting (reprocessing, deleted)
// and the entry is still failed there; it reports whether the seed's
// status is such.
func softDelete(ctx context.Context, st Target, id, status string, now time.Time, res *MigrateResult) (bool, error) {
	if status != Reprocessing && status != "deleted" {
		return false, nil
	}
	cur, err := st.Get(ctx, id)
	if err != nil {
		return false, err
	}
	if cur.Status == dlq.Failed {
		if err := st.Delete(ctx, id, By+" (seed status "+status+")", now); err != nil {
			return false, err
		}
		res.Deleted++
	}
	return true, nil
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
