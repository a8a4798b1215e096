package seed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/layout"
)

// Reprocessing is the status the tutorial's reprocess gives an entry whose
// job it sent back.
const Reprocessing = "reprocessing"

// DefaultBatch is how many entries a RequeueAll moves per round trip.
const DefaultBatch = 100

// ErrRef is matched by the error of a Requeue given a Ref that names no
// list of the layout.
var ErrRef = errors.New("invalid seed DLQ ref")

// Ref names one entry: its list (prefix included), its position from the
// tail, and its bytes when it was listed. A move applies only to the entry
// that is at that position with those bytes.
type Ref struct {
	Key      string `json:"key"`
	Position int64  `json:"position"`
	Bytes    []byte `json:"bytes"`
}

// Outcome is what a requeue of one entry did.
type Outcome uint8

// The outcomes. Only Requeued changed anything.
const (
	// Requeued: the job is on the work list and the entry says
	// "reprocessing".
	Requeued Outcome = iota + 1
	// AlreadyReprocessing: the entry was marked "reprocessing" already (by
	// an earlier requeue, ours or the tutorial's).
	AlreadyReprocessing
	// Changed: the entry at that position is not the one listed (marked
	// deleted, replaced, or the list was trimmed since).
	Changed
	// NotFound: the list has no entry at that position any more.
	NotFound
	// NotRequeueable: the entry holds no job the tutorial's code could send
	// (not JSON, no "job" object).
	NotRequeueable
	// DeletedInSeed: a RequeueAll left an entry the seed marks "deleted"
	// (an operator's decision not to run its job) because its filter did
	// not ask for deleted entries.
	DeletedInSeed
)

var outcomeNames = [...]string{"", "requeued", "already-reprocessing", "changed-since-listed", "not-found", "not-requeueable", "deleted"}

// String returns the outcome's name.
func (o Outcome) String() string {
	if o >= Requeued && int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("outcome(%d)", uint8(o))
}

// RequeueOptions say where a requeue sends jobs and how a bulk one runs.
type RequeueOptions struct {
	// To is the work list, before prefix (default "default", the
	// tutorial's).
	To string
	// Batch bounds the entries one round trip of RequeueAll moves
	// (default DefaultBatch).
	Batch int
	// DryRun makes RequeueAll count what it would move, moving nothing.
	DryRun bool
	// Cutoff, when set, is where RequeueAll stops: the one a dry run
	// returned, so that a run confirmed after a count moves only entries
	// that count saw. Nil: taken when the run begins.
	Cutoff *Cutoff
}

// Cutoff says which entries were in the lists when it was taken, so that a
// bulk requeue leaves those dead-lettered since. Positions do not move
// when entries are pushed, so the entries then were those below each
// list's length then; the newest of them is kept too, because a trim of a
// full list (the tutorial's LTRIM) moves every entry down, and the run
// finds where that entry is now.
type Cutoff struct {
	Lists []ListMark `json:"lists"`
}

// ListMark is one list's cut-off.
type ListMark struct {
	// Key is the list, prefix included.
	Key string `json:"key"`
	// Length is the list's length when the cut-off was taken.
	Length int64 `json:"length"`
	// Newest is the bytes of its newest entry then (position Length-1).
	Newest []byte `json:"newest,omitempty"`
}

// Count returns the number of entries the cut-off covers.
func (c *Cutoff) Count() int64 {
	var n int64
	for _, m := range c.Lists {
		n += m.Length
	}
	return n
}

func (c *Cutoff) mark(key string) (ListMark, bool) {
	for _, m := range c.Lists {
		if m.Key == key {
			return m, true
		}
	}
	return ListMark{}, false
}

// takeCutoff reads every list's length and newest entry, each list's two
// in one MULTI (one key each, so that it runs on a cluster too).
func takeCutoff(ctx context.Context, rdb redis.Cmdable, keys []string) (Cutoff, error) {
	c := Cutoff{Lists: make([]ListMark, len(keys))}
	for i, k := range keys {
		var n *redis.IntCmd
		var head *redis.StringCmd
		if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			n = p.LLen(ctx, k)
			head = p.LIndex(ctx, k, 0)
			return nil
		}); err != nil && !errors.Is(err, redis.Nil) {
			return Cutoff{}, fmt.Errorf("take the cut-off of %s: %w", k, err)
		}
		c.Lists[i] = ListMark{Key: k, Length: n.Val()}
		if c.Lists[i].Length > 0 {
			c.Lists[i].Newest = []byte(head.Val())
		}
	}
	return c, nil
}

// sameEntry reports whether cur is b, or b as the tutorial's code marks it
// in place (reprocessing, deleted).
func sameEntry(cur, b []byte) bool {
	if bytes.Equal(cur, b) {
		return true
	}
	t, err := scanTop(b)
	if err != nil {
		return false
	}
	return bytes.Equal(cur, withStatus(b, t, Reprocessing)) || bytes.Equal(cur, withStatus(b, t, "deleted"))
}

// CutoffScan bounds how far below its position a bulk requeue looks for
// the newest entry of a list's cut-off (a trim of a full list moves it
// down by as many entries as it drops), in chunks of ChunkSize.
const CutoffScan = 100_000

// top returns the position, now, of the newest entry key held when c was
// taken: its position then when it is still there, else the nearest one
// below holding its bytes (a trim moved it), within CutoffScan. found is
// false when the list held some but that entry is not found (trimmed away,
// changed, or moved further): the run cannot tell which entries it
// counted there.
func (c *Cutoff) top(ctx context.Context, rdb redis.Cmdable, key string) (pos int64, found bool, err error) {
	m, ok := c.mark(key)
	if !ok || m.Length == 0 {
		return -1, true, nil
	}
	from, scanned := m.Length-1, 0
	for n := 1; from >= 0 && scanned < CutoffScan; n = min(ChunkSize, CutoffScan-scanned) {
		ch, err := readDown(ctx, rdb, key, from, n)
		if err != nil {
			return -1, false, err
		}
		if len(ch.raws) == 0 {
			if ch.length == 0 || from < ch.length {
				return -1, false, nil
			}
			from = ch.length - 1 // a trim shortened it below from
			continue
		}
		scanned += len(ch.raws)
		hi := ch.oldest + int64(len(ch.raws)) - 1
		for i, raw := range ch.raws {
			if sameEntry([]byte(raw), m.Newest) {
				return hi - int64(i), true, nil
			}
		}
		from = ch.oldest - 1
	}
	return -1, false, nil
}

func (o RequeueOptions) target(prefix string) string {
	if o.To != "" {
		return prefix + o.To
	}
	return layout.Inject{Preset: layout.PresetSeed, Prefix: prefix}.Resolved().RedisList.Key
}

// requeueScript moves one entry's job back, as the tutorial's
// reprocess_single does, in one step.
var requeueScript = redis.NewScript(`
-- seedRequeue: KEYS[1] the DLQ list, KEYS[2] the work list.
-- ARGV[1] the entry's position from the tail (0: the oldest), ARGV[2] its
-- bytes as listed, ARGV[3] those bytes with status "reprocessing", ARGV[4]
-- its job's JSON.
-- Guarantees: the job is LPUSHed onto the work list and the entry is LSET
-- to "reprocessing" together, or neither happens; only when the element at
-- that position still has the listed bytes (a compare-and-set on content
-- and position). Returns 'requeued', 'already' (the element is the marked
-- bytes), 'changed' (other bytes) or 'notfound' (no element there).
local idx = -(tonumber(ARGV[1]) + 1)
local cur = redis.call('LINDEX', KEYS[1], idx)
if not cur then return 'notfound' end
if cur == ARGV[3] then return 'already' end
if cur ~= ARGV[2] then return 'changed' end
redis.call('LPUSH', KEYS[2], ARGV[4])
redis.call('LSET', KEYS[1], idx, ARGV[3])
return 'requeued'
`)

// move is one entry's requeue arguments.
type move struct {
	marked, job []byte
}

// prepare reads what the script needs from the listed bytes: the entry
// marked "reprocessing" as the tutorial writes it, and its job as the
// tutorial sends it (json.dumps(entry['job']): the job's bytes as they are
// in the entry, which for an entry Python wrote are exactly those).
func prepare(b []byte) (move, bool) {
	t, err := scanTop(b)
	if err != nil || t.job[0] < 0 || b[t.job[0]] != '{' {
		return move{}, false
	}
	return move{marked: withStatus(b, t, Reprocessing), job: slices.Clone(b[t.job[0]:t.job[1]])}, true
}

func checkRef(prefix string, ref Ref) error {
	if !slices.Contains(Keys(prefix), ref.Key) {
		return fmt.Errorf("%w: %q is not a list of the seed DLQ", ErrRef, ref.Key)
	}
	if ref.Position < 0 {
		return fmt.Errorf("%w: position %d", ErrRef, ref.Position)
	}
	return nil
}

func outcomeOf(r any) (Outcome, error) {
	switch r {
	case "requeued":
		return Requeued, nil
	case "already":
		return AlreadyReprocessing, nil
	case "changed":
		return Changed, nil
	case "notfound":
		return NotFound, nil
	}
	return 0, fmt.Errorf("unexpected script reply %v", r)
}

// Requeue sends the job of the entry ref names back to the work list, the
// way the tutorial's code would read it, and marks the entry
// "reprocessing" as the tutorial does, in one script that first checks the
// entry is still at ref's position with ref's bytes.
func Requeue(ctx context.Context, rdb redis.Cmdable, prefix string, ref Ref, opts RequeueOptions) (Outcome, error) {
	if err := checkRef(prefix, ref); err != nil {
		return 0, fmt.Errorf("requeue: %w", err)
	}
	m, ok := prepare(ref.Bytes)
	if !ok {
		return NotRequeueable, nil
	}
	r, err := requeueScript.Run(ctx, rdb, []string{ref.Key, opts.target(prefix)}, ref.Position, ref.Bytes, m.marked, m.job).Result()
	if err != nil {
		return 0, fmt.Errorf("requeue %s[tail %d]: %w", ref.Key, ref.Position, err)
	}
	o, err := outcomeOf(r)
	if err != nil {
		return 0, fmt.Errorf("requeue %s[tail %d]: %w", ref.Key, ref.Position, err)
	}
	return o, nil
}

// BulkResult is what a RequeueAll did (or, on a dry run, would do).
type BulkResult struct {
	DryRun bool `json:"dryRun,omitempty"`
	// Matched entries were in the lists when the run began and f selected
	// them when it read them; Requeued of them were requeued; the others
	// are counted by outcome.
	Matched             int `json:"matched"`
	Requeued            int `json:"requeued"`
	AlreadyReprocessing int `json:"alreadyReprocessing"`
	Changed             int `json:"changed"`
	NotFound            int `json:"notFound"`
	NotRequeueable      int `json:"notRequeueable"`
	DeletedInSeed       int `json:"deletedInSeed"`
	// Batches is the number of round trips that moved entries.
	Batches int `json:"batches"`
	// MatchedByList is Matched by list (prefix included).
	MatchedByList map[string]int `json:"matchedByList,omitempty"`
	// CutoffLost names the lists (prefix included) the run skipped whole
	// because the newest entry of their cut-off was not found within
	// CutoffScan below its position (trimmed away, changed, or moved
	// further): nothing in them was moved or counted.
	CutoffLost []string `json:"cutoffLost,omitempty"`
	// Cutoff is the run's: pass a dry run's to the run it counted for.
	Cutoff Cutoff `json:"cutoff"`
}

func (b *BulkResult) count(o Outcome) {
	switch o {
	case Requeued:
		b.Requeued++
	case AlreadyReprocessing:
		b.AlreadyReprocessing++
	case Changed:
		b.Changed++
	case NotFound:
		b.NotFound++
	case NotRequeueable:
		b.NotRequeueable++
	case DeletedInSeed:
		b.DeletedInSeed++
	}
}

// RequeueAll requeues every entry f selects, as Requeue does one (but not
// one the seed marks "deleted" unless f.Statuses asks for those), among
// those in the lists at its cut-off: opts.Cutoff (a dry run's, so that a
// run confirmed after a count moves only what was counted), or the lists
// as they are when it begins. Entries pushed since are newer and left
// alone. It reads in chunks of at most ChunkSize and moves at most
// opts.Batch entries per round trip, each entry with its own script, so
// Redis is never blocked for long and a run stopped half way leaves every
// entry either requeued and marked or untouched.
//
// A trim of a full list (the tutorial's LTRIM) between the cut-off and the
// run is followed: the run finds its newest entry where the trim moved it
// (a byte-identical entry pushed since could be taken for it) within
// CutoffScan; a list whose newest counted entry is not found there is
// skipped whole and named in res.CutoffLost, never taken as empty. A trim
// during the run shifts the entries not yet moved: those are refused as
// Changed, never moved in another's place.
func RequeueAll(ctx context.Context, rdb redis.Cmdable, prefix string, f Filter, opts RequeueOptions) (BulkResult, error) {
	res := BulkResult{DryRun: opts.DryRun, MatchedByList: map[string]int{}}
	keys, err := f.keys(prefix)
	if err != nil {
		return res, fmt.Errorf("requeue all: %w", err)
	}
	batch := opts.Batch
	if batch <= 0 {
		batch = DefaultBatch
	}
	if opts.Cutoff != nil {
		res.Cutoff = *opts.Cutoff
	} else if res.Cutoff, err = takeCutoff(ctx, rdb, keys); err != nil {
		return res, fmt.Errorf("requeue all: %w", err)
	}
	if !opts.DryRun {
		if err := requeueScript.Load(ctx, rdb).Err(); err != nil {
			return res, fmt.Errorf("requeue all: load script: %w", err)
		}
	}
	target := opts.target(prefix)
	fl := fields()
	withDeleted := slices.ContainsFunc(f.Statuses, func(s string) bool { return strings.EqualFold(s, "deleted") })
	for _, key := range keys {
		pos, found, err := res.Cutoff.top(ctx, rdb, key)
		if err != nil {
			return res, fmt.Errorf("requeue all: %w", err)
		}
		if !found {
			res.CutoffLost = append(res.CutoffLost, key)
			continue
		}
		for pos >= 0 {
			ch, err := readDown(ctx, rdb, key, pos, min(ChunkSize, batch))
			if err != nil {
				return res, fmt.Errorf("requeue all: %w", err)
			}
			if len(ch.raws) == 0 {
				if ch.length > 0 && pos >= ch.length {
					pos = ch.length - 1
					continue
				}
				break
			}
			top := ch.oldest + int64(len(ch.raws)) - 1
			var refs []Ref
			var moves []move
			for j, raw := range ch.raws {
				e := parse(key, ch.length-1-(top-int64(j)), top-int64(j), raw, fl)
				if !f.Match(&e) {
					continue
				}
				res.Matched++
				res.MatchedByList[key]++
				m, ok := prepare(e.Bytes)
				switch {
				case !ok:
					res.NotRequeueable++
					continue
				case e.Status() == "deleted" && !withDeleted:
					res.DeletedInSeed++
					continue
				case bytes.Equal(m.marked, e.Bytes):
					res.AlreadyReprocessing++
					continue
				}
				refs, moves = append(refs, e.Ref()), append(moves, m)
			}
			pos = ch.oldest - 1
			if opts.DryRun || len(refs) == 0 {
				if opts.DryRun {
					res.Requeued += len(refs)
				}
				continue
			}
			cmds := make([]*redis.Cmd, len(refs))
			if _, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				for j, r := range refs {
					cmds[j] = requeueScript.EvalSha(ctx, p, []string{r.Key, target}, r.Position, r.Bytes, moves[j].marked, moves[j].job)
				}
				return nil
			}); err != nil && !errors.Is(err, redis.Nil) {
				// some scripts may have run: count those that answered
				for _, c := range cmds {
					if o, err := outcomeOf(c.Val()); err == nil {
						res.count(o)
					}
				}
				return res, fmt.Errorf("requeue all: %s: %w", key, err)
			}
			res.Batches++
			for _, c := range cmds {
				o, err := outcomeOf(c.Val())
				if err != nil {
					return res, fmt.Errorf("requeue all: %s: %w", key, err)
				}
				res.count(o)
			}
		}
	}
	return res, nil
}
