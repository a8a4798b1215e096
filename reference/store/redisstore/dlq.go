package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/store"
)

// stored is an entry as read back with the revision a move of it must
// expect ("0": the entry has no meta, it was written by something else) and
// the status its index gives it.
type stored struct {
	entry   dlq.Entry
	rev, st string
}

// misindexed reports whether an entry's bytes were replaced in place by
// another writer: they do not decode, but the index still has its former
// fields.
func (c *stored) misindexed() bool { return c.entry.Corrupt && c.rev != "0" && c.st != "corrupt" }

// load reads one entry and its revision at one instant.
func (s *Store) load(ctx context.Context, id string) (stored, bool, error) {
	r, err := s.run(ctx, dlqGetScript, id)
	if errors.Is(err, redis.Nil) {
		return stored{}, false, nil
	}
	if err != nil {
		return stored{}, false, err
	}
	v := asSlice(r)
	if len(v) != 3 {
		return stored{}, false, fmt.Errorf("unexpected reply %v", r)
	}
	return stored{entry: dlq.Decode(id, []byte(asString(v[0]))), rev: asString(v[1]), st: asString(v[2])}, true, nil
}

// metaArgs are the fields of an entry the scripts keep beside its opaque
// JSON, for counters, capacity and filters: status, severity, class, task,
// attempts, last error type, folded last error text (metaErrText).
func metaArgs(e *dlq.Entry) []any { return appendMeta(make([]any, 0, 7), e) }

// appendMeta appends metaArgs(e) to args.
func appendMeta(args []any, e *dlq.Entry) []any {
	if e.Corrupt {
		return append(args, "corrupt", "", "", "", 0, "", "")
	}
	return append(args, statusArg(e.Status), e.Verdict.Severity.String(), e.Verdict.Class.String(), e.Job.Task, e.Job.Attempts,
		e.ErrorType(), metaErrText(e))
}

// statusArg is st's name as a script argument: the common ones boxed once.
func statusArg(st dlq.Status) any {
	if st == dlq.Failed {
		return failedArg
	}
	return st.String()
}

// failedArg is dlq.Failed's name, boxed once.
var failedArg any = dlq.Failed.String()

// ErrTextCap bounds the copy of an entry's last error text the store keeps
// for the error-text filter, in bytes of folded text.
const ErrTextCap = 256

// metaErrText is the copy of e's last error text the store keeps beside
// its meta (in P:dlq:etx), so that the scan script matches
// dlq.Filter.ErrorText without decoding entries: the text folded by
// dlq.FoldText (the script folds nothing), behind '=' when it is whole, or its
// first bytes (at most ErrTextCap, cut at a rune) behind '~' when it is
// longer. A cut copy matches the script coarsely when the needle is not in
// its bytes, and Go decides on the decoded entry; so does an entry without
// a copy (written by an older faultline, or re-indexed by something that
// did not give one).
func metaErrText(e *dlq.Entry) string {
	t := ""
	if n := len(e.History); n > 0 {
		t = dlq.FoldText(e.History[n-1].Error)
	}
	if len(t) <= ErrTextCap {
		return "=" + t
	}
	cut := ErrTextCap
	for cut > 0 && !utf8.RuneStart(t[cut]) {
		cut--
	}
	return "~" + t[:cut]
}

// fenceArg is what a dlqPut is fenced on: a lease ("lease"; "hold" to park
// a refused dead letter in the held set, keeping held, its entry JSON), or a
// held job ("held": a flush).
type fenceArg struct {
	id, tok, kind string
	held          []byte
	// superseded, for a 'held' fence, holds the bytes of a held entry that
	// did not decode (heldEntry): the entry written keeps them.
	superseded []byte
}

// putArgs are dlqPut's leading ARGV: capacity, policy, the fence and what
// parking needs. extra is the room to leave for the items and the two ARGV
// runAt appends, so that one slice carries the whole call.
func (s *Store) putArgs(f *fenceArg, now time.Time, extra int) []any {
	args := make([]any, 0, 9+extra+2)
	args = append(args, s.cfg.DLQCapacity)
	// constants, boxed without allocating
	if s.cfg.CountInactive {
		args = append(args, "1")
	} else {
		args = append(args, "0")
	}
	if s.cfg.Overflow == store.EvictOldest {
		args = append(args, "evict")
	} else {
		args = append(args, "reject")
	}
	if f == nil {
		return append(args, "", "", "", s.cfg.HeldCapacity, millis(now), "")
	}
	return append(args, f.id, f.tok, f.kind, s.cfg.HeldCapacity, millis(now), f.held)
}

// putItemLen is how many ARGV a dlqPut item takes.
const putItemLen = 11

// appendPutItem appends the dlqPut item of entry e, encoded, expecting
// revision rev, to args.
func appendPutItem(args []any, e *dlq.Entry, rev string) ([]any, error) {
	raw, err := dlq.Encode(*e)
	if err != nil {
		return args, err
	}
	args = append(args, e.Job.ID, rev, raw)
	args = appendMeta(args, e)
	return append(args, millis(e.LastFailedAt)), nil
}

// Add records a dead job: a new entry, or the history of its existing entry
// extended (dlq.Store).
func (s *Store) Add(ctx context.Context, e dlq.Entry, now time.Time) (dlq.AddResult, error) {
	return s.put(ctx, "add", nil, e, now)
}

// DeadLetter moves a leased job into the DLQ in one step, fenced by its lease
// (dlq.Store): the job leaves the processing set and its entry is written by
// the same script, or neither happens. A full DLQ under the reject policy
// parks the job with its entry in the held set in the same script
// (AddResult.Held), room permitting. While jobs are held, the script lets
// it take no room ahead of them: it answers 'flushfirst', put flushes the
// held set into the room (FlushHeld, oldest first) and tries again, so it
// lands behind them, written or parked.
func (s *Store) DeadLetter(ctx context.Context, l queue.Lease, e dlq.Entry, now time.Time) (dlq.AddResult, error) {
	if e.Job.ID != l.JobID {
		return dlq.AddResult{}, fmt.Errorf("dead-letter %s: %w", l.JobID, notLeased(e.Job.ID))
	}
	if err := job.Validate(&e.Job, s.cfg.MaxPayload); err != nil {
		return dlq.AddResult{}, fmt.Errorf("dead-letter: %w", err)
	}
	raw, err := dlq.Encode(e)
	if err != nil {
		return dlq.AddResult{}, fmt.Errorf("dead-letter %s: %w", l.JobID, err)
	}
	return s.put(ctx, "dead-letter", &fenceArg{id: l.JobID, tok: token(l), kind: "hold", held: raw}, e, now)
}

// Hold parks a leased job with its decided dead letter in the held set, in
// one script fenced by its lease (dlq.Store).
func (s *Store) Hold(ctx context.Context, l queue.Lease, e dlq.Entry, now time.Time) error {
	if e.Job.ID != l.JobID {
		return fmt.Errorf("hold %s: %w", l.JobID, notLeased(e.Job.ID))
	}
	if err := job.Validate(&e.Job, s.cfg.MaxPayload); err != nil {
		return fmt.Errorf("hold: %w", err)
	}
	raw, err := dlq.Encode(e)
	if err != nil {
		return fmt.Errorf("hold %s: %w", l.JobID, err)
	}
	r, err := s.runAt(ctx, now, holdScript, l.JobID, token(l), s.cfg.HeldCapacity, millis(now), raw, e.Job.Task, e.Job.Attempts)
	if err != nil {
		return fmt.Errorf("hold %s: %w", l.JobID, err)
	}
	switch why := asString(r); why {
	case "ok":
		s.emit(disposition.Event{JobID: e.Job.ID, Task: e.Job.Task, From: disposition.InFlight, To: disposition.Held,
			Reason: disposition.HeldBack, At: now, Attempts: e.Job.Attempts})
		return nil
	case "full":
		return dlq.HeldFullError("hold", l.JobID, 0, s.cfg.HeldCapacity)
	default:
		return leaseErr("hold", l, why)
	}
}

// FlushHeld moves up to limit held jobs into the DLQ, oldest parked first
// (dlq.Store): each is one dlqPut fenced on the job being held, merged with
// its existing entry like any dead letter; it stops at the first the DLQ
// refuses. A held entry whose bytes do not decode (written by a newer
// version, or by something else) does not block the ones behind it: it is
// written as the entry heldEntry makes of it, in its turn.
func (s *Store) FlushHeld(ctx context.Context, now time.Time, limit int) (dlq.FlushResult, error) {
	var res dlq.FlushResult
	r, err := s.run(ctx, heldPeekScript, max(limit, 0))
	if err != nil {
		return res, fmt.Errorf("flush held: %w", err)
	}
	v := asSlice(r)
	if len(v) == 0 || (len(v)-1)%4 != 0 {
		return res, fmt.Errorf("flush held: unexpected reply %v", r)
	}
	res.Left = int(asInt(v[len(v)-1]))
	for i := 0; i+4 < len(v); i += 4 {
		id := asString(v[i])
		e, superseded := heldEntry(id, []byte(asString(v[i+1])), []byte(asString(v[i+2])), asInt(v[i+3]))
		add, err := s.put(ctx, "flush held", &fenceArg{id: id, kind: "held", superseded: superseded}, e, now)
		switch {
		case err == nil:
			res.Written = append(res.Written, id)
			res.Evicted = append(res.Evicted, add.Evicted...)
			res.Left--
		case errors.Is(err, dlq.ErrFull):
			res.Full = true
			return res, nil
		case errors.Is(err, queue.ErrLeaseLost): // flushed by another caller meanwhile
			res.Left--
		default:
			return res, err
		}
	}
	res.Left = max(res.Left, 0)
	return res, nil
}

// ReasonHeldCorrupt starts the Reason of the entry written for a held dead
// letter whose entry bytes do not decode.
const ReasonHeldCorrupt = "held dead letter does not decode"

// heldEntry returns the entry to write for the held job id, from the bytes
// of its parked entry, its job's JSON and its parking time (ms). When the
// entry decodes, it is that entry. When it does not, the job is
// dead-lettered all the same, so that the held set drains and nothing is
// lost: the entry is made of the job as the queue holds it (ID alone when
// that does not decode either), failed at its parking time, with Reason
// ReasonHeldCorrupt and the decode error; superseded returns the parked
// bytes, which the written entry keeps in Superseded (merged with an earlier
// entry of the job that has none of its own) for an operator to inspect.
func heldEntry(id string, raw, data []byte, heldAt int64) (e dlq.Entry, superseded []byte) {
	e = dlq.Decode(id, raw)
	if !e.Corrupt {
		return e, nil
	}
	var j job.Job
	if json.Unmarshal(data, &j) != nil || j.ID != id || job.Validate(&j, 0) != nil {
		j = job.Job{ID: id, Task: "unknown"}
	}
	return dlq.Entry{
		Job:          j,
		LastFailedAt: time.UnixMilli(heldAt).UTC(),
		Reason:       ReasonHeldCorrupt + ": " + e.DecodeError,
		Superseded:   raw,
	}, raw
}

// put writes one entry, merging it with the entry already stored for its
// job: an optimistic read-merge-write whose write is the dlqPut script,
// guarded by the revision the merge started from.
func (s *Store) put(ctx context.Context, op string, f *fenceArg, e dlq.Entry, now time.Time) (dlq.AddResult, error) {
	if err := job.Validate(&e.Job, s.cfg.MaxPayload); err != nil {
		return dlq.AddResult{}, fmt.Errorf("%s: %w", op, err)
	}
	id := e.Job.ID
	if f != nil && f.kind == "absent" && e.Status != 0 {
		e = store.Imported(e, now) // as given: an import restores an export
	} else {
		e = normalize(e, now)
	}
	from := disposition.None
	if f != nil {
		switch f.kind {
		case "held":
			from = disposition.Held
		case "absent":
		default:
			from = disposition.InFlight
		}
	}
	var prev *stored // nil: expect no entry
	for attempt := 0; attempt < casAttempts; attempt++ {
		next, rev := e, "0"
		if prev != nil {
			next, rev = merge(prev.entry, e, now), prev.rev
			if f != nil && len(f.superseded) > 0 && len(next.Superseded) == 0 {
				next.Superseded = f.superseded // a corrupt held entry's bytes (heldEntry)
			}
		}
		args, err := appendPutItem(s.putArgs(f, now, putItemLen), &next, rev)
		if err != nil {
			return dlq.AddResult{}, fmt.Errorf("%s %s: %w", op, id, err)
		}
		r, err := s.runAt(ctx, now, dlqPutScript, args...)
		if err != nil {
			return dlq.AddResult{}, fmt.Errorf("%s %s: %w", op, id, err)
		}
		res := asSlice(asSlice(r)[0])
		switch code := asString(res[0]); code {
		case "gone", "lost":
			return dlq.AddResult{}, leaseErr(op, queue.Lease{JobID: f.id}, code)
		case "present":
			return dlq.AddResult{}, errPresent
		case "conflict":
			cur, ok, err := s.load(ctx, id)
			if err != nil {
				return dlq.AddResult{}, fmt.Errorf("%s %s: %w", op, id, err)
			}
			prev = nil
			if ok {
				prev = &cur
			}
		case "flushfirst":
			// Held dead letters wait for this room: they take it first,
			// oldest first, and this one retries behind them (the script
			// lets no new dead letter overtake them).
			fl, err := s.FlushHeld(ctx, now, max(s.cfg.BatchSize, 1))
			if err != nil {
				return dlq.AddResult{}, fmt.Errorf("%s %s: %w", op, id, err)
			}
			if len(fl.Written) > 0 {
				attempt-- // progress: a flush is not a lost race
			}
		case "held":
			s.emit(disposition.Event{JobID: id, Task: e.Job.Task, From: disposition.InFlight, To: disposition.Held,
				Reason: disposition.HeldBack, At: now, Attempts: e.Job.Attempts})
			s.overflow(id, nil, true, now)
			return dlq.AddResult{Held: true}, nil
		case "full":
			if f != nil && f.kind == "held" {
				return dlq.AddResult{}, fmt.Errorf("%s %s: %w", op, id, dlq.ErrFull)
			}
			s.overflow(id, nil, false, now)
			if f != nil && f.kind == "hold" {
				return dlq.AddResult{}, dlq.HeldFullError(op, id, s.cfg.DLQCapacity, s.cfg.HeldCapacity)
			}
			return dlq.AddResult{}, fmt.Errorf("%s %s: %w", op, id, dlq.ErrFull)
		default:
			return s.added(from, prev, &next, res, now), nil
		}
	}
	return dlq.AddResult{}, fmt.Errorf("%s %s: %w", op, id, ErrContended)
}

// added reports a successful dlqPut item {'ok', created, evicted}: the
// evictions first (they happened first), then the entry's own move, then the
// overflow report. from is where a fenced job was (in flight, held), None
// for an add.
func (s *Store) added(from disposition.State, prev *stored, e *dlq.Entry, res []any, now time.Time) dlq.AddResult {
	out := dlq.AddResult{Created: asInt(res[1]) == 1}
	ev := asSlice(res[2])
	for i := 0; i+3 < len(ev); i += 4 {
		id := asString(ev[i])
		out.Evicted = append(out.Evicted, id)
		if deadStatus(asString(ev[i+3])) {
			s.emit(disposition.Event{JobID: id, Task: asString(ev[i+1]), From: disposition.DeadLettered, To: disposition.None,
				Reason: disposition.Evicted, At: now, Attempts: int(asInt(ev[i+2]))})
		}
	}
	switch {
	case from != disposition.None:
		s.emit(disposition.Event{JobID: e.Job.ID, Task: e.Job.Task, From: from, To: disposition.DeadLettered,
			Reason: disposition.DeadLetter, At: now, Attempts: e.Job.Attempts})
	case (out.Created || prev != nil && prev.entry.Status == dlq.Requeued) && deadStatus(e.Status.String()):
		s.emit(disposition.Event{JobID: e.Job.ID, Task: e.Job.Task, From: disposition.None, To: disposition.DeadLettered,
			Reason: disposition.DeadLetter, At: now, Attempts: e.Job.Attempts})
	}
	if len(out.Evicted) > 0 {
		s.overflow(e.Job.ID, out.Evicted, false, now)
	}
	return out
}

// overflow hands an overflow to cfg.OnOverflow (the counter is already
// written by the script); held says a refused dead letter was parked.
func (s *Store) overflow(id string, evicted []string, held bool, now time.Time) {
	if s.cfg.OnOverflow == nil {
		return
	}
	s.cfg.OnOverflow(store.Overflow{Namespace: s.cfg.Namespace, Policy: s.cfg.Overflow, At: now, JobID: id,
		Evicted: evicted, Capacity: s.cfg.DLQCapacity, Held: held})
}

// AddBatch adds many entries with one script call per BatchSize of them: the
// batched form of Add, for imports and bulk loads (an entry whose job has an
// entry already is merged one by one, as Add does). results[i] is
// entries[i]'s result; the error joins the failures of single entries (each
// naming its job; a full store is dlq.ErrFull), whose results are zero.
func (s *Store) AddBatch(ctx context.Context, entries []dlq.Entry, now time.Time) ([]dlq.AddResult, error) {
	results := make([]dlq.AddResult, len(entries))
	var errs []error
	for start := 0; start < len(entries); start += s.cfg.BatchSize {
		args := s.putArgs(nil, now, putItemLen*min(s.cfg.BatchSize, len(entries)-start))
		var idx []int
		var batch []dlq.Entry
		for i := start; i < min(start+s.cfg.BatchSize, len(entries)); i++ {
			e := entries[i]
			if err := job.Validate(&e.Job, s.cfg.MaxPayload); err != nil {
				errs = append(errs, fmt.Errorf("add: %w", err))
				continue
			}
			e = normalize(e, now)
			var err error
			if args, err = appendPutItem(args, &e, "0"); err != nil {
				errs = append(errs, fmt.Errorf("add %s: %w", e.Job.ID, err))
				continue
			}
			idx = append(idx, i)
			batch = append(batch, e)
		}
		if len(idx) == 0 {
			continue
		}
		r, err := s.runAt(ctx, now, dlqPutScript, args...)
		if err != nil {
			return results, errors.Join(append(errs, fmt.Errorf("add batch: %w", err))...)
		}
		var merges []int
		for k, res := range asSlice(r) {
			i, v := idx[k], asSlice(res)
			switch asString(v[0]) {
			case "ok":
				results[i] = s.added(disposition.None, nil, &batch[k], v, now)
			case "full":
				s.overflow(batch[k].Job.ID, nil, false, now)
				errs = append(errs, fmt.Errorf("add %s: %w", batch[k].Job.ID, dlq.ErrFull))
			default: // the job has an entry: merge it as Add does
				merges = append(merges, i)
			}
		}
		// The merges run after the batch's script, so the observer hears
		// them after its moves: in the order the moves happened.
		for _, i := range merges {
			if results[i], err = s.put(ctx, "add", nil, entries[i], now); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return results, errors.Join(errs...)
}

// Get returns one entry, possibly Corrupt (dlq.Store). An entry whose bytes
// another writer replaced in place is re-indexed as corrupt on the way.
func (s *Store) Get(ctx context.Context, id string) (dlq.Entry, error) {
	cur, ok, err := s.load(ctx, id)
	if err != nil {
		return dlq.Entry{}, fmt.Errorf("get %s: %w", id, err)
	}
	if !ok {
		return dlq.Entry{}, fmt.Errorf("get %s: %w", id, dlq.ErrNotFound)
	}
	if cur.misindexed() {
		if err := s.mark(ctx, []stored{cur}); err != nil {
			return dlq.Entry{}, fmt.Errorf("get %s: %w", id, err)
		}
	}
	return cur.entry, nil
}

// position is a place in an index: (score, id) order.
type position struct {
	score int64
	id    string
}

// cursor encodes a position for Page.Next.
func (p position) cursor() string { return strconv.FormatInt(p.score, 10) + ":" + p.id }

func parseCursor(c string) (*position, error) {
	if c == "" {
		return nil, nil
	}
	sc, id, ok := strings.Cut(c, ":")
	n, err := strconv.ParseInt(sc, 10, 64)
	if !ok || err != nil {
		return nil, fmt.Errorf("invalid cursor %q", c)
	}
	return &position{score: n, id: id}, nil
}

// scanned is one entry a scan matched.
type scanned struct {
	stored
	at      position
	present bool // false: the index names an id whose bytes are gone
	// raw is the entry's bytes, kept when the scan did not decode them
	// (scanRaw): the caller decodes them, once.
	raw string
}

// walk is one step of a scan: the entries it matched, and where it stopped.
type walk struct {
	matched []scanned
	// sure is, in count mode, how many matches the script counted without
	// returning them (see dlqScanScript).
	sure int
	// last is the last index member examined (nil: none), and done
	// reports that the index holds nothing more in range after it.
	last *position
	done bool
}

// filterArgs are dlqScan's filter ARGV: whether the filter sets any
// condition, then its severities, classes, tasks, error types and statuses,
// each as a count and names, then its error text, folded.
func filterArgs(f *dlq.Filter) []any {
	cond := len(f.Severities)+len(f.Classes)+len(f.Tasks)+len(f.ErrorTypes)+len(f.Statuses) > 0 ||
		!f.Since.IsZero() || !f.Until.IsZero() || f.ErrorText != ""
	args := []any{"0"}
	if cond {
		args[0] = "1"
	}
	set := func(names []string) {
		args = append(args, len(names))
		for _, n := range names {
			args = append(args, n)
		}
	}
	set(names(f.Severities))
	set(names(f.Classes))
	set(f.Tasks)
	set(f.ErrorTypes)
	set(names(f.Statuses))
	return append(args, dlq.FoldText(f.ErrorText))
}

func names[T fmt.Stringer](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = x.String()
	}
	return out
}

// Scan directions (dlqScanScript's ARGV[2]).
const (
	scanAsc   = "asc"
	scanDesc  = "desc"
	scanCount = "count" // ascending, counting the sure matches without returning them
)

// scan walks an index after position after (nil: from the range's start),
// in direction dir within scores [lo, hi], examining at most examine
// members and returning at most want of those whose meta matches f. Go
// decodes only the matches; callers check them with match again (the
// precise time bounds, and bytes that no longer decode).
func (s *Store) scan(ctx context.Context, index, dir string, lo, hi string, after *position, examine, want int,
	f *dlq.Filter) (walk, error) {
	w, err := s.scanRaw(ctx, index, dir, lo, hi, after, examine, want, f)
	if err != nil {
		return w, err
	}
	for i := range w.matched {
		sn := &w.matched[i]
		if sn.present {
			sn.entry = dlq.Decode(sn.at.id, []byte(sn.raw))
		}
		sn.raw = ""
	}
	return w, nil
}

// scanRaw is scan without decoding: each match keeps its bytes in raw.
func (s *Store) scanRaw(ctx context.Context, index, dir string, lo, hi string, after *position, examine, want int,
	f *dlq.Filter) (walk, error) {
	aS, aID := "", ""
	if after != nil {
		aS, aID = strconv.FormatInt(after.score, 10), after.id
	}
	args := append([]any{index, dir, lo, hi, aS, aID, examine, want}, filterArgs(f)...)
	r, err := s.run(ctx, dlqScanScript, args...)
	if err != nil {
		return walk{}, err
	}
	v := asSlice(r)
	if len(v) < 4 {
		return walk{}, fmt.Errorf("scan: unexpected reply %v", r)
	}
	var w walk
	if examined := int(asInt(v[0])); examined > 0 {
		w.last = &position{score: scoreOf(v[1]), id: asString(v[2])}
	}
	w.sure = int(asInt(v[3]))
	w.matched = make([]scanned, 0, (len(v)-4)/6)
	for i := 4; i+5 < len(v); i += 6 {
		id := asString(v[i])
		sn := scanned{at: position{score: scoreOf(v[i+1]), id: id}, present: asInt(v[i+3]) == 1,
			stored: stored{rev: asString(v[i+4]), st: asString(v[i+5])}, raw: asString(v[i+2])}
		w.matched = append(w.matched, sn)
	}
	// The walk stopped early only when it examined all it could or found
	// all it wanted; otherwise the range is exhausted.
	w.done = int(asInt(v[0])) < examine && len(w.matched) < want
	return w, nil
}

func scoreOf(v any) int64 {
	f, _ := strconv.ParseFloat(asString(v), 64)
	return int64(f)
}

// listExamine times BatchSize is how many index members one List step may
// examine (each costs the script one HMGET of its meta).
const listExamine = 10

// List returns up to limit matching entries, newest LastFailedAt first (by
// job ID, descending, among equal times), from cursor (dlq.Store). It walks
// the time index in bounded steps (at most 10×BatchSize members per script),
// matching each entry's meta in the script, so that Go decodes only the
// entries it returns: a filter that matches little costs an O(n) walk in
// bounded steps. A filter on one status walks that status's index instead,
// and a time range narrows the walk to its scores. A limit below 1 lists
// everything. The cursor is the position of the page's last entry, so paging
// is stable under concurrent writes: no entry is listed twice or skipped
// because others moved.
func (s *Store) List(ctx context.Context, f dlq.Filter, cursor string, limit int) (dlq.Page, error) {
	after, err := parseCursor(cursor)
	if err != nil {
		return dlq.Page{}, fmt.Errorf("list: %w", err)
	}
	if after == nil {
		if err := s.heal(ctx); err != nil {
			return dlq.Page{}, fmt.Errorf("list: %w", err)
		}
	}
	f.ErrorText = dlq.FoldText(f.ErrorText)
	index := "bytime"
	if len(f.Statuses) == 1 {
		index = "st:" + f.Statuses[0].String()
	}
	lo, hi := "-inf", "+inf"
	if !f.Since.IsZero() {
		lo = millis(f.Since)
	}
	if !f.Until.IsZero() {
		hi = millis(f.Until)
	}
	var page dlq.Page
	var last position
	for {
		// Ask for one more match than the page holds, to know whether
		// anything follows it.
		want := limit - len(page.Entries) + 1
		if limit < 1 {
			want = listExamine * s.cfg.BatchSize
		}
		w, err := s.scan(ctx, index, scanDesc, lo, hi, after, listExamine*s.cfg.BatchSize, want, &f)
		if err != nil {
			return dlq.Page{}, fmt.Errorf("list: %w", err)
		}
		var misindexed []stored
		full := false
		for _, sn := range w.matched {
			if !sn.present {
				continue
			}
			if sn.misindexed() {
				misindexed = append(misindexed, sn.stored)
			}
			if !match(f, &sn.entry) {
				continue
			}
			if limit > 0 && len(page.Entries) == limit {
				page.Next = last.cursor()
				full = true
				break
			}
			page.Entries = append(page.Entries, sn.entry)
			last = sn.at
		}
		if err := s.mark(ctx, misindexed); err != nil {
			return dlq.Page{}, fmt.Errorf("list: %w", err)
		}
		if full || w.done || w.last == nil {
			return page, nil
		}
		after = w.last
	}
}

// Stats summarises the store from the counters the scripts keep (dlq.Store):
// O(counters), not O(entries). BySeverity, ByTask, ByClass and ByStatus
// count the decodable entries of every status; Total counts every entry.
func (s *Store) Stats(ctx context.Context) (dlq.Stats, error) {
	st, indexed, err := s.stats(ctx)
	if err == nil && st.Total > indexed { // bytes stored without an index: place them, read again
		if err = s.heal(ctx); err == nil {
			st, _, err = s.stats(ctx)
		}
	}
	if err != nil {
		return dlq.Stats{}, fmt.Errorf("stats: %w", err)
	}
	return st, nil
}

// stats reads the counters, and how many entries they index.
func (s *Store) stats(ctx context.Context) (dlq.Stats, int, error) {
	r, err := s.run(ctx, dlqStatsScript)
	if err != nil {
		return dlq.Stats{}, 0, err
	}
	st, indexed := parseStats(r)
	return st, indexed, nil
}

// parseStats reads dlqStatsScript's reply: the stats, and how many
// entries are indexed.
func parseStats(r any) (dlq.Stats, int) {
	v := asSlice(r)
	st := dlq.Stats{BySeverity: map[string]int{}, ByTask: map[string]int{}, ByClass: map[string]int{}, ByStatus: map[string]int{}}
	counters := asSlice(v[0])
	indexed := 0
	for i := 0; i+1 < len(counters); i += 2 {
		field, n := asString(counters[i]), int(asInt(counters[i+1]))
		kind, name, _ := strings.Cut(field, ":")
		switch kind {
		case "evicted":
			st.Evicted = n
		case "rejected":
			st.Rejected = n
		case "st":
			indexed += n
			if name == "corrupt" {
				st.Corrupt += n
			} else {
				st.ByStatus[name] = n
			}
		case "sev":
			st.BySeverity[name] = n
		case "cls":
			st.ByClass[name] = n
		case "task":
			st.ByTask[name] = n
		}
	}
	st.Total = int(asInt(v[1]))
	st.Held = int(asInt(v[2]))
	if ms := asString(v[3]); ms != "" {
		st.HeldOldest = time.UnixMilli(asInt(ms)).UTC()
	}
	// Bytes stored without an index (by another writer, after the heal)
	// count as corrupt until a heal places them.
	st.Corrupt += max(st.Total-indexed, 0)
	if len(v) >= 6 {
		st.OldestID = asString(v[4])
		if e := dlq.Decode(st.OldestID, []byte(asString(v[5]))); !e.Corrupt {
			st.Oldest = e.LastFailedAt
		}
	}
	if len(v) >= 8 {
		st.NewestID = asString(v[6])
		if e := dlq.Decode(st.NewestID, []byte(asString(v[7]))); !e.Corrupt {
			st.Newest = e.LastFailedAt
		}
	}
	return st, indexed
}
