package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// LayoutVersion is the version of the key layout (doc.go, "Key layout")
// this build reads and writes. It goes up when the layout changes in a way
// data written before needs Upgrade for; a build refuses to write into a
// namespace whose layout is newer than its own. Version 0 is data written
// before layouts had versions (no layout key).
const LayoutVersion = 1

// ErrNewerLayout is returned (as a *LayoutError) when a namespace's layout
// key names a version newer than LayoutVersion: a newer faultline wrote it,
// and this one could misread it or damage it.
var ErrNewerLayout = errors.New("redis layout is newer than this faultline's")

// LayoutError says a namespace's layout is newer than this build's. It
// wraps ErrNewerLayout.
type LayoutError struct {
	Namespace string
	// Found is the namespace's layout version; Supported is
	// LayoutVersion.
	Found, Supported int
	// Raw is the layout key's value when it is not a number.
	Raw string
}

func (e *LayoutError) Error() string {
	if e.Raw != "" {
		return fmt.Sprintf("namespace %q has Redis layout %q, which this faultline (layout version %d) does not know: use a newer faultline",
			e.Namespace, e.Raw, e.Supported)
	}
	return fmt.Sprintf("namespace %q has Redis layout version %d, newer than this faultline's layout version %d: use a newer faultline (this one could misread or damage it)",
		e.Namespace, e.Found, e.Supported)
}

// Unwrap returns ErrNewerLayout.
func (e *LayoutError) Unwrap() error { return ErrNewerLayout }

// LayoutKey returns the key holding a namespace's layout version,
// {faultline:NS}:layout.
func LayoutKey(namespace string) string { return Prefix(namespace) + ":layout" }

// dataKeys are the suffixes of the keys whose presence means a namespace
// holds data: every key a store writes, but for a job's hash (a job is in
// a queue, a set or a list below), a queue's list (its name is in
// :queues) and an entry's meta (the entry is in :dlq:entries).
var dataKeys = []string{":queues", ":processing", ":retry", ":fallback", ":held", ":heldseq", ":lease",
	":dlq:entries", ":dlq:etx", ":dlq:bytime", ":dlq:stats", ":events", ":dlq:audit", ":dlq:depth"}

// DataKeys returns the keys of namespace ns whose presence means it holds
// data (see dataKeys), and its layout key first: one EXISTS over them (one
// hash tag: one Cluster slot) says whether the namespace holds anything.
func DataKeys(ns string) []string {
	keys := make([]string, 0, len(dataKeys)+1)
	keys = append(keys, LayoutKey(ns))
	for _, k := range dataKeys {
		keys = append(keys, Prefix(ns)+k)
	}
	return keys
}

// opsState is what a Store keeps for its operator extensions: whether its
// layout guard has run (and what it found), and the audit stream's cap.
type opsState struct {
	mu      sync.Mutex
	checked atomic.Bool
	newer   atomic.Pointer[LayoutError]
	// auditCap is SetAuditCap's value; 0: DefaultAuditCap.
	auditCap atomic.Int64
}

// readOnlyScripts are the scripts that write nothing: they run without the
// layout guard. Every other script, a new one included, is a write.
var readOnlyScripts = map[*redis.Script]bool{countsScript: true, dlqGetScript: true, dlqScanScript: true, dlqStatsScript: true}

// guardWrite runs the layout guard before a script that writes.
func (s *Store) guardWrite(ctx context.Context, sc *redis.Script) error {
	if readOnlyScripts[sc] {
		return nil
	}
	return s.guardLayout(ctx)
}

// guardLayout checks the namespace's layout before the Store's first write,
// and stamps it with LayoutVersion when the namespace is empty (one round
// trip, once per Store). Later writes of a Store whose namespace was
// newer get the *LayoutError; a namespace upgraded by a newer faultline
// after the check is not noticed by this Store.
func (s *Store) guardLayout(ctx context.Context) error {
	if e := s.ops.newer.Load(); e != nil {
		return e
	}
	if s.ops.checked.Load() {
		return nil
	}
	s.ops.mu.Lock()
	defer s.ops.mu.Unlock()
	if !s.ops.checked.Load() {
		v, err := layoutStampScript.Run(ctx, s.rdb, DataKeys(s.cfg.Namespace), LayoutVersion).Text()
		if err != nil {
			return fmt.Errorf("check the redis layout: %w", err)
		}
		if n, err := strconv.Atoi(v); v != "" && (err != nil || n > LayoutVersion) {
			e := &LayoutError{Namespace: s.cfg.Namespace, Found: n, Supported: LayoutVersion}
			if err != nil {
				e.Raw = v
			}
			s.ops.newer.Store(e)
		}
		s.ops.checked.Store(true)
	}
	if e := s.ops.newer.Load(); e != nil {
		return e
	}
	return nil
}

var layoutStampScript = redis.NewScript(`
-- layoutStamp: KEYS[1] the layout key, KEYS[2..] the namespace's data keys
-- (dataKeys: none exists in an empty namespace). ARGV[1] this build's
-- layout version.
-- Returns the layout key's value when it has one. Else, when none of the
-- data keys exists, sets the layout key to ARGV[1] and returns it; else
-- returns '' (data written before layouts had versions, left for Upgrade).
-- Writes nothing but the layout key of an empty namespace.
local v = redis.call('GET', KEYS[1])
if v then return v end
for i = 2, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then return '' end
end
redis.call('SET', KEYS[1], ARGV[1])
return ARGV[1]
`)

var layoutSetScript = redis.NewScript(`
-- layoutSet: KEYS[1] the layout key. ARGV[1] the version to write.
-- Sets the key to ARGV[1] unless it holds a higher version (a newer
-- faultline's, written meanwhile). Returns the key's value after.
local v = redis.call('GET', KEYS[1])
if v and tonumber(v) and tonumber(v) > tonumber(ARGV[1]) then return v end
redis.call('SET', KEYS[1], ARGV[1])
return ARGV[1]
`)

// LayoutVersion returns the namespace's layout version: its layout key's,
// or 0 when it has none (an empty namespace, or data written by a
// faultline before layouts had versions). It writes nothing.
func (s *Store) LayoutVersion(ctx context.Context) (int, error) {
	v, err := s.rdb.Get(ctx, LayoutKey(s.cfg.Namespace)).Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read the redis layout version: %w", err)
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("read the redis layout version: %s holds %q, not a version", LayoutKey(s.cfg.Namespace), v)
	}
	return n, nil
}

// CheckLayout returns a *LayoutError (ErrNewerLayout) when the namespace's
// layout is newer than this build's, so that a tool refuses it before
// reading or writing anything else. It writes nothing.
func (s *Store) CheckLayout(ctx context.Context) error {
	v, err := s.LayoutVersion(ctx)
	if err != nil {
		return err
	}
	if v > LayoutVersion {
		return &LayoutError{Namespace: s.cfg.Namespace, Found: v, Supported: LayoutVersion}
	}
	return nil
}

// UpgradeReport is what Upgrade did, or would do in a dry run.
type UpgradeReport struct {
	Namespace string `json:"namespace"`
	// From is the namespace's layout version before; To is LayoutVersion.
	From int `json:"from"`
	To   int `json:"to"`
	// DryRun: nothing was written; the counts say what would be fixed.
	DryRun bool `json:"dry_run"`
	// Current: the namespace is at LayoutVersion already; nothing was done.
	Current bool `json:"current,omitempty"`
	// Empty: the namespace holds no data; nothing was done.
	Empty bool `json:"empty,omitempty"`
	// Checked counts the DLQ entries checked; Fixed those whose indexes
	// (meta hash, error text, time index, status index, counters) did not
	// match their bytes and were rebuilt; Corrupt those whose bytes do not
	// decode, indexed as corrupt and kept (never dropped).
	Checked int `json:"checked"`
	Fixed   int `json:"fixed"`
	Corrupt int `json:"corrupt"`
	// Strays counts index members with no entry, removed from the indexes.
	Strays int `json:"strays"`
	// Counters counts the status counters that disagreed with their status
	// index and were reset to its size.
	Counters int `json:"counters"`
	// Stamped: the layout key was set to To.
	Stamped bool `json:"stamped"`
}

// Upgrade brings data of an older layout (version 0: no layout key, but
// data) to LayoutVersion and stamps the layout key. It walks the DLQ's
// entries (HSCAN) and indexes (ZSCAN), Config.BatchSize at a time, each
// batch checked and fixed by one script, so that no script stalls Redis
// and writers may go on meanwhile: every entry is re-indexed as its bytes
// say when its meta or index memberships do not (an entry written
// without an index is adopted, bytes that do not decode are indexed as
// corrupt and kept), index members with no entry are removed, and each
// status counter is set to the size of its status index. An entry that
// changed since its batch was read is left alone: a store wrote it, and
// indexed it. Running it again finds nothing to fix. With dryRun it counts
// and writes nothing. A namespace at LayoutVersion already, or empty, is
// left as it is; one of a newer layout is refused (ErrNewerLayout).
func (s *Store) Upgrade(ctx context.Context, dryRun bool) (UpgradeReport, error) {
	rep := UpgradeReport{Namespace: s.cfg.Namespace, To: LayoutVersion, DryRun: dryRun}
	v, err := s.LayoutVersion(ctx)
	if err != nil {
		return rep, fmt.Errorf("upgrade: %w", err)
	}
	rep.From = v
	switch {
	case v > LayoutVersion:
		return rep, fmt.Errorf("upgrade: %w", &LayoutError{Namespace: s.cfg.Namespace, Found: v, Supported: LayoutVersion})
	case v == LayoutVersion:
		rep.Current = true
		return rep, nil
	}
	n, err := s.rdb.Exists(ctx, DataKeys(s.cfg.Namespace)[1:]...).Result()
	if err != nil {
		return rep, fmt.Errorf("upgrade: %w", err)
	}
	if n == 0 {
		rep.Empty = true
		return rep, nil
	}
	mode := "fix"
	if dryRun {
		mode = "check"
	}
	if err := s.upgradeEntries(ctx, mode, &rep); err != nil {
		return rep, fmt.Errorf("upgrade: %w", err)
	}
	if err := s.upgradeStrays(ctx, mode, &rep); err != nil {
		return rep, fmt.Errorf("upgrade: %w", err)
	}
	r, err := s.run(ctx, layoutCountersScript, mode)
	if err != nil {
		return rep, fmt.Errorf("upgrade: status counters: %w", err)
	}
	rep.Counters = int(asInt(r))
	if dryRun {
		return rep, nil
	}
	got, err := layoutSetScript.Run(ctx, s.rdb, []string{LayoutKey(s.cfg.Namespace)}, LayoutVersion).Text()
	if err != nil {
		return rep, fmt.Errorf("upgrade: stamp the layout: %w", err)
	}
	if n, _ := strconv.Atoi(got); n > LayoutVersion {
		return rep, fmt.Errorf("upgrade: %w", &LayoutError{Namespace: s.cfg.Namespace, Found: n, Supported: LayoutVersion})
	}
	rep.Stamped = true
	return rep, nil
}

// upgradeEntries checks (and with mode "fix" re-indexes) every entry of
// the DLQ, a batch at a time.
func (s *Store) upgradeEntries(ctx context.Context, mode string, rep *UpgradeReport) error {
	batch := s.cfg.BatchSize
	var cursor uint64
	for {
		kv, next, err := s.rdb.HScan(ctx, s.prefix+":dlq:entries", cursor, "", int64(batch)).Result()
		if err != nil {
			return fmt.Errorf("read entries: %w", err)
		}
		// HSCAN's count is a hint (a small hash comes whole): the scripts
		// take at most batch entries each.
		for len(kv) > 0 {
			part := kv[:min(len(kv), 2*batch)]
			kv = kv[len(part):]
			args := []any{mode, 0}
			for i := 0; i+1 < len(part); i += 2 {
				ia := indexArgs(part[i], []byte(part[i+1]))
				args[1] = len(ia)
				if ia[2] == "corrupt" {
					rep.Corrupt++
				}
				rep.Checked++
				args = append(args, ia...)
			}
			r, err := s.run(ctx, layoutFixScript, args...)
			if err != nil {
				return fmt.Errorf("check entries: %w", err)
			}
			res := asSlice(r)
			if len(res) != 2 {
				return fmt.Errorf("check entries: unexpected reply %v", r)
			}
			if mode == "fix" {
				rep.Fixed += int(asInt(res[1]))
			} else {
				rep.Fixed += int(asInt(res[0]))
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}

// upgradeStrays finds (and with mode "fix" removes) the members of the
// time and status indexes that have no entry, a batch at a time.
func (s *Store) upgradeStrays(ctx context.Context, mode string, rep *UpgradeReport) error {
	seen := map[string]bool{}
	for _, idx := range []string{"bytime", "st:failed", "st:requeued", "st:deleted", "st:quarantined", "st:corrupt"} {
		var cursor uint64
		for {
			kv, next, err := s.rdb.ZScan(ctx, s.prefix+":dlq:"+idx, cursor, "", int64(s.cfg.BatchSize)).Result()
			if err != nil {
				return fmt.Errorf("read the %s index: %w", idx, err)
			}
			for len(kv) > 0 {
				part := kv[:min(len(kv), 2*s.cfg.BatchSize)]
				kv = kv[len(part):]
				args := []any{mode}
				for i := 0; i < len(part); i += 2 {
					if !seen[part[i]] {
						args = append(args, part[i])
					}
				}
				if len(args) == 1 {
					continue
				}
				r, err := s.run(ctx, layoutStraysScript, args...)
				if err != nil {
					return fmt.Errorf("check the %s index: %w", idx, err)
				}
				for _, id := range asSlice(r) {
					if id := asString(id); !seen[id] {
						seen[id] = true
						rep.Strays++
					}
				}
			}
			if next == 0 {
				break
			}
			cursor = next
		}
	}
	return nil
}

var layoutFixScript = script(`
-- layoutFix: KEYS[1] prefix. ARGV[1] 'check' or 'fix', ARGV[2] the width W
-- of an item, then items of W ARGV each (as dlqIndex's): id, entry bytes,
-- the meta fields metaAt reads (status first), the folded error text (last
-- but one) and the last failure (ms, last; the zero time for bytes that do
-- not decode, status 'corrupt').
-- Checks that each entry is indexed as its bytes say: its meta holds every
-- one of those fields, ETX its folded error text, it is in the time index and
-- its status's index at its last failure (a corrupt entry: at the score it
-- has, if any) and in no other status index. With 'fix' it re-indexes an entry that is not (its
-- counters moved from its old meta to the new one; an entry in the time
-- index without meta was counted as its bytes say). An entry whose bytes
-- are no more ARGV's is skipped: a store wrote it since, and indexed it.
-- Returns {entries found wrong, entries fixed}.
`, `
local fix, W, wrong, fixed = ARGV[1] == 'fix', tonumber(ARGV[2]), 0, 0
local statuses = {'failed', 'requeued', 'deleted', 'quarantined', 'corrupt'}
for i = 3, NARG, W do
  local id = ARGV[i]
  if redis.call('HGET', ENTRIES, id) == ARGV[i + 1] then
    local m, old = metaAt(i + 2), readMeta(id)
    local etx, score = ARGV[i + W - 2], tonumber(ARGV[i + W - 1])
    local cur = redis.call('ZSCORE', BYTIME, id)
    if m.st == 'corrupt' and cur then score = tonumber(cur) end
    local ok = old ~= nil and cur and tonumber(cur) == score and redis.call('HGET', ETX, id) == etx
    if ok then
      local have = {}
      local kv = redis.call('HGETALL', metaKey(id))
      for k = 1, #kv, 2 do have[kv[k]] = kv[k + 1] end
      for f, v in pairs(m) do
        if have[f] ~= tostring(v) then ok = false end
      end
    end
    if ok then
      local sc = redis.call('ZSCORE', statusKey(m.st), id)
      ok = sc and tonumber(sc) == score
    end
    local others = {}
    for _, st in ipairs(statuses) do
      if st ~= m.st and redis.call('ZSCORE', statusKey(st), id) then others[#others + 1] = st end
    end
    if not ok or #others > 0 then
      wrong = wrong + 1
      -- An entry in the time index without meta was indexed, so counted:
      -- its counters move from its bytes' fields, not once more.
      if not old and cur then old = {rev = '0', st = m.st, sev = m.sev, cls = m.cls, task = m.task, att = m.att, et = m.et} end
      if fix then
        for _, st in ipairs(others) do
          if not old or st ~= old.st then redis.call('ZREM', statusKey(st), id) end
        end
        index(id, old, m, old and ((tonumber(old.rev) or 0) + 1) or 1, score, etx)
        fixed = fixed + 1
      end
    end
  end
end
flush()
return {wrong, fixed}
`)

var layoutStraysScript = script(`
-- layoutStrays: KEYS[1] prefix. ARGV[1] 'check' or 'fix', then job IDs
-- found in the DLQ's time or status indexes.
-- Returns the IDs that have no entry in P:dlq:entries; with 'fix' it
-- removes each from every index and deletes its meta and its error text,
-- taking it out of the counters its meta was counted in.
`, `
local fix, out = ARGV[1] == 'fix', {}
local statuses = {'failed', 'requeued', 'deleted', 'quarantined', 'corrupt'}
for i = 2, NARG do
  local id = ARGV[i]
  if redis.call('HEXISTS', ENTRIES, id) == 0 then
    out[#out + 1] = id
    if fix then
      local old = readMeta(id)
      redis.call('ZREM', BYTIME, id)
      redis.call('HDEL', ETX, id)
      for _, st in ipairs(statuses) do redis.call('ZREM', statusKey(st), id) end
      if old then
        count(old, -1)
        redis.call('DEL', metaKey(id))
      end
    end
  end
end
flush()
return out
`)

var layoutCountersScript = script(`
-- layoutCounters: KEYS[1] prefix. ARGV[1] 'check' or 'fix'.
-- Compares each status counter (st:<status> of P:dlq:stats) with the size
-- of its status index, at one instant; with 'fix' it sets the counter to
-- that size (deleting it at zero). Returns how many counters differed.
`, `
local fix, n = ARGV[1] == 'fix', 0
for _, st in ipairs({'failed', 'requeued', 'deleted', 'quarantined', 'corrupt'}) do
  local want = redis.call('ZCARD', statusKey(st))
  local have = tonumber(redis.call('HGET', STATS, 'st:' .. st) or '0') or 0
  if want ~= have then
    n = n + 1
    if fix then
      if want == 0 then redis.call('HDEL', STATS, 'st:' .. st) else redis.call('HSET', STATS, 'st:' .. st, want) end
    end
  end
end
return n
`)
