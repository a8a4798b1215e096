package redisstore

import (
	"strings"

	"github.com/redis/go-redis/v9"
)

// Every script below is one move (or one bounded batch of independent moves,
// or one consistent read). Conventions shared by all of them:
//
//   - KEYS[1] is the namespace prefix "{faultline:NS}". Every key a script
//     touches is derived from it (see the key layout in doc.go), so all of them
//     share its hash tag: one Redis Cluster slot, routed by KEYS[1].
//   - Time arrives only as ARGV, in integer milliseconds taken from the
//     caller's clock. No script calls TIME; no key has a TTL.
//   - Entry JSON is opaque: scripts store and return its bytes; the fields a
//     script needs (status, severity, class, task, attempts, last error type,
//     time) arrive as separate ARGV and live in the entry's meta hash; the
//     folded last error text arrives beside them and lives in P:dlq:etx, one
//     hash for the namespace, so that a scan reads a whole step's texts in
//     one HMGET. The error text is folded by Go (metaErrText): no script
//     folds case (Lua's string.lower is ASCII-only and follows the server's
//     C locale), it only finds bytes.
//   - A move checks its preconditions before its first write and returns a
//     distinct result when they do not hold; then it writes nothing. A batch
//     script checks each item before writing that item (items are independent
//     moves), and the DLQ status script checks every item before any write.
//   - Strings are compared bytewise by less() (Redis's Lua compares with
//     strcoll, which depends on the server's locale; sorted sets use memcmp).
//   - Every script takes two more ARGV after the ones its comment lists (Store.run
//     appends them): the time of the call's disposition events (ms) and the
//     event stream's MAXLEN ('0': the stream is off). NARG counts the ARGV
//     before them. A script that moves a job calls event() once per move, in
//     the order the caller reports the moves to Config.Observer; with the
//     stream on, that appends the event to P:events in the same script.

// preludeParts are the helpers a script may use, put before its body
// after its contract comment: key names derived from the prefix, and the
// helpers that keep the DLQ's indexes and counters in step with its entries.
// A script gets only the parts it names (link): every part run costs every
// call (a key name is a string concatenation, a helper a closure), and most
// scripts need a few of them. Each part defines the names in defs and may
// use the parts before it.
var preludeParts = []struct{ defs, code string }{
	{"P", `
local P = KEYS[1]
`},
	{"ENTRIES", `
local ENTRIES = P .. ':dlq:entries'
`},
	{"BYTIME", `
local BYTIME = P .. ':dlq:bytime'
`},
	{"STATS", `
local STATS = P .. ':dlq:stats'
`},
	{"ETX", `
local ETX = P .. ':dlq:etx'
`},
	{"PROCESSING", `
local PROCESSING = P .. ':processing'
`},
	{"RETRY", `
local RETRY = P .. ':retry'
`},
	{"FALLBACK", `
local FALLBACK = P .. ':fallback'
`},
	{"QUEUES", `
local QUEUES = P .. ':queues'
`},
	{"HELD", `
local HELD = P .. ':held'
`},
	{"jobKey", `
local function jobKey(id) return P .. ':job:' .. id end
`},
	{"queueKey", `
local function queueKey(q) return P .. ':q:' .. q end
`},
	{"metaKey", `
local function metaKey(id) return P .. ':dlq:m:' .. id end
`},
	{"statusKey", `
local function statusKey(st) return P .. ':dlq:st:' .. st end
`},
	{"NARG EVAT EVMAX EVENTS evprev", `
-- The event stream's arguments, after the script's own (NARG of them).
local NARG = #ARGV - 2
local EVAT, EVMAX = ARGV[NARG + 1], tonumber(ARGV[NARG + 2]) or 0
local EVENTS = P .. ':events'
local evprev
`},
	{"event", `
-- event appends one disposition event to P:events when the stream is on
-- (EVMAX > 0), trimmed to about EVMAX entries: job id, task, from and to
-- states and reason (their names in package disposition), time (EVAT) and
-- attempts after the move, and prev, the ID of the entry before it ('0-0'
-- for the first), by which a reader detects entries trimmed before it read
-- them.
local function event(id, task, from, to, why, att)
  if EVMAX <= 0 then return end
  if not evprev then
    local last = redis.call('XREVRANGE', EVENTS, '+', '-', 'COUNT', 1)
    evprev = last[1] and last[1][1] or '0-0'
  end
  evprev = redis.call('XADD', EVENTS, 'MAXLEN', '~', EVMAX, '*', 'job', id, 'task', task or '', 'from', from,
    'to', to, 'why', why, 'at', EVAT, 'att', tostring(tonumber(att) or 0), 'prev', evprev)
end
`},
	{"less", `
-- less compares two strings bytewise, as sorted sets order their members.
local function less(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end
`},
	{"chunked", `
-- chunked runs cmd on key with the elements of list as its arguments, at
-- most step of them per call (Lua's unpack has a bounded stack).
local function chunked(cmd, key, list, step)
  for a = 1, #list, step do redis.call(cmd, key, unpack(list, a, math.min(a + step - 1, #list))) end
end
`},
	{"write writeLater batching", `
-- write runs a write of the DLQ's shared keys (the entries' bytes, their
-- error texts, the time and status indexes) at once; with batching on (a
-- script of many items turns it on), it queues the write instead, merged
-- with the key's previous queued write when that is the same command, and
-- writeLater sends the queue: one command per key and kind instead of one
-- per item. The writes of one key keep their order, and those of different
-- keys commute; a script that reads a key it may have queued writes of
-- calls writeLater first.
local batching = false
local pend, porder = {}, {}
local function writeLater()
  for _, key in ipairs(porder) do
    for _, op in ipairs(pend[key]) do
      for a = 1, #op, 1000 do redis.call(op.cmd, key, unpack(op, a, math.min(a + 999, #op))) end
    end
  end
  pend, porder = {}, {}
end
local function write(cmd, key, a, b)
  if not batching then
    if b == nil then return redis.call(cmd, key, a) end
    return redis.call(cmd, key, a, b)
  end
  local q = pend[key]
  if not q then
    q = {}
    pend[key] = q
    porder[#porder + 1] = key
  end
  local op = q[#q]
  if not op or op.cmd ~= cmd then
    op = {cmd = cmd}
    q[#q + 1] = op
  end
  op[#op + 1] = a
  if b ~= nil then op[#op + 1] = b end
end
`},
	{"bump deltas dorder", `
-- bump adds by to a counter. The changes of a script's moves are summed and
-- written once, by flush, after the moves (a batch of a hundred entries of
-- one task writes a handful of counters, not hundreds).
local deltas, dorder = {}, {}
local function bump(field, by)
  if not deltas[field] then
    deltas[field] = 0
    dorder[#dorder + 1] = field
  end
  deltas[field] = deltas[field] + by
end
`},
	{"flush", `
-- flush writes the counters' changes in the order they were first bumped,
-- deleting a counter that reaches zero.
local function flush()
  writeLater()
  for _, f in ipairs(dorder) do
    local d = deltas[f]
    if d ~= 0 and redis.call('HINCRBY', STATS, f, d) == 0 then redis.call('HDEL', STATS, f) end
  end
end
`},
	{"count", `
-- count adds by (1 or -1) to the counters of an entry with meta m: its
-- status, and for a decodable entry its severity, class and task.
local function count(m, by)
  bump('st:' .. m.st, by)
  if m.st == 'corrupt' then return end
  if m.sev ~= '' then bump('sev:' .. m.sev, by) end
  if m.cls ~= '' then bump('cls:' .. m.cls, by) end
  if m.task ~= '' then bump('task:' .. m.task, by) end
end
`},
	{"readMeta", `
-- readMeta returns an entry's meta, or nil when it has none.
local function readMeta(id)
  local v = redis.call('HMGET', metaKey(id), 'rev', 'st', 'sev', 'cls', 'task', 'att', 'et')
  if not v[1] then return nil end
  return {rev = v[1], st = v[2], sev = v[3] or '', cls = v[4] or '', task = v[5] or '', att = v[6] or '0', et = v[7] or ''}
end
`},
	{"metaAt", `
-- metaAt reads the meta fields of an item from ARGV[i..i+5]: status,
-- severity, class, task, attempts, error type. ARGV[i+6], after them, is the
-- item's folded error text ('=' then the whole text, or '~' then its first
-- bytes when it was cut short), which index keeps in ETX.
local function metaAt(i)
  return {st = ARGV[i], sev = ARGV[i + 1], cls = ARGV[i + 2], task = ARGV[i + 3], att = ARGV[i + 4], et = ARGV[i + 5]}
end
`},
	{"index", `
-- index writes an entry's meta (revision rev) and indexes it at score,
-- replacing the indexes of its previous meta old, if any; etx is its folded
-- error text, kept in ETX (nil: unknown, any copy is dropped and a scan
-- leaves the entry to its caller, who decodes it).
local function index(id, old, m, rev, score, etx)
  if old then
    write('ZREM', statusKey(old.st), id)
    count(old, -1)
  end
  redis.call('HSET', metaKey(id), 'rev', rev, 'st', m.st, 'sev', m.sev, 'cls', m.cls, 'task', m.task, 'att', m.att, 'et', m.et)
  if etx then write('HSET', ETX, id, etx) else write('HDEL', ETX, id) end
  write('ZADD', BYTIME, score, id)
  write('ZADD', statusKey(m.st), score, id)
  count(m, 1)
end
`},
	{"drop", `
-- drop removes an entry, its meta, its indexes and its counts.
local function drop(id, m)
  writeLater()
  redis.call('HDEL', ENTRIES, id)
  redis.call('HDEL', ETX, id)
  redis.call('ZREM', BYTIME, id)
  if m then
    redis.call('DEL', metaKey(id))
    redis.call('ZREM', statusKey(m.st), id)
    count(m, -1)
  end
end
`},
	{"fence", `
-- fence returns a leased job's fields when tok is its current lease token;
-- otherwise nil and 'gone' (no such job) or 'lost' (not in flight under tok).
local function fence(id, tok)
  local v = redis.call('HMGET', jobKey(id), 'loc', 'tok', 'q', 'task', 'att')
  if not v[1] then return nil, 'gone' end
  if v[1] ~= 'inflight' or v[2] ~= tok then return nil, 'lost' end
  return {q = v[3], task = v[4], att = v[5]}
end
`},
}

// script builds a script from its contract comment and body, with the
// prelude parts it uses.
func script(contract, body string) *redis.Script {
	return redis.NewScript(contract + link(body) + body)
}

// link returns the prelude parts code uses, and the parts those use, in
// the prelude's order. A part is used when one of the names it defines
// appears in the code as a word (a mention in a comment counts: it only
// costs a part that is not needed).
func link(code string) string {
	used := make([]bool, len(preludeParts))
	text := code
	for i := len(preludeParts) - 1; i >= 0; i-- {
		for _, name := range strings.Fields(preludeParts[i].defs) {
			if mentions(text, name) {
				used[i] = true
				text += preludeParts[i].code
				break
			}
		}
	}
	var b strings.Builder
	for i, p := range preludeParts {
		if used[i] {
			b.WriteString(p.code)
		}
	}
	return b.String()
}

// mentions reports whether name occurs in code as a word: not inside a
// longer identifier.
func mentions(code, name string) bool {
	word := func(c byte) bool {
		return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
	}
	for off := 0; ; {
		i := strings.Index(code[off:], name)
		if i < 0 {
			return false
		}
		i += off
		j := i + len(name)
		if (i == 0 || !word(code[i-1])) && (j == len(code) || !word(code[j])) {
			return true
		}
		off = j
	}
}

var enqueueScript = script(`
-- enqueue: KEYS[1] prefix. ARGV[1] job id, ARGV[2] queue, ARGV[3] job JSON,
-- ARGV[4] task, ARGV[5] attempts.
-- Puts a new job at the tail of its queue. Returns 1; or 0, writing nothing,
-- when the job's hash exists (the job is queued, in flight, scheduled or in
-- the fallback queue); or 2, writing nothing, when the job is dead-lettered
-- (its DLQ entry is failed, quarantined or deleted: requeue it from there).
`, `
local jk = jobKey(ARGV[1])
if redis.call('EXISTS', jk) == 1 then return 0 end
local st = redis.call('HGET', metaKey(ARGV[1]), 'st')
if st == 'failed' or st == 'quarantined' or st == 'deleted' then return 2 end
event(ARGV[1], ARGV[4], 'none', 'queued', 'enqueued', ARGV[5])
redis.call('HSET', jk, 'data', ARGV[3], 'task', ARGV[4], 'q', ARGV[2], 'loc', 'queued', 'att', ARGV[5])
redis.call('RPUSH', queueKey(ARGV[2]), ARGV[1])
redis.call('SADD', QUEUES, ARGV[2])
return 1
`)

var dequeueScript = script(`
-- dequeue: KEYS[1] prefix. ARGV[1] queue, ARGV[2] lease expiry (ms),
-- ARGV[3] bound on stray ids skipped.
-- Leases the job at the head of the queue (event: leased): pops it, gives it a new lease token
-- (INCR of P:lease, so tokens only grow) and puts it in the processing set
-- scored by its lease expiry, in one step. Returns {id, job JSON, attempts,
-- token}, or nil when the queue is empty. The head is checked before it is
-- popped; an id whose job is not queued (a stray written by something else)
-- is popped and skipped, at most ARGV[3] of them per call.
`, `
local q = queueKey(ARGV[1])
for _ = 1, tonumber(ARGV[3]) do
  local id = redis.call('LINDEX', q, 0)
  if not id then return nil end
  local jk = jobKey(id)
  local v = redis.call('HMGET', jk, 'loc', 'data', 'att', 'task')
  redis.call('LPOP', q)
  if v[1] == 'queued' then
    if EVMAX > 0 then
      -- the event names the task of the job's JSON, as the caller reads it
      local ok, d = pcall(cjson.decode, v[2])
      local task = v[4]
      if ok and type(d) == 'table' and type(d.task) == 'string' then task = d.task end
      event(id, task, 'queued', 'in-flight', 'leased', v[3])
    end
    local tok = redis.call('INCR', P .. ':lease')
    redis.call('HSET', jk, 'loc', 'inflight', 'tok', tok, 'exp', ARGV[2])
    redis.call('ZADD', PROCESSING, ARGV[2], id)
    return {id, v[2], tonumber(v[3]) or 0, tok}
  end
end
return nil
`)

var heartbeatScript = script(`
-- heartbeat: KEYS[1] prefix. ARGV[1] job id, ARGV[2] lease token, ARGV[3] new
-- lease expiry (ms).
-- Extends the lease when ARGV[2] is the job's current token. Returns 'ok', or
-- 'gone' / 'lost' writing nothing.
`, `
local j, why = fence(ARGV[1], ARGV[2])
if not j then return why end
redis.call('HSET', jobKey(ARGV[1]), 'exp', ARGV[3])
redis.call('ZADD', PROCESSING, ARGV[3], ARGV[1])
return 'ok'
`)

var ackScript = script(`
-- ack: KEYS[1] prefix. ARGV[1] job id, ARGV[2] lease token, ARGV[3] task
-- and ARGV[4] attempts (the job as the worker ends it, for the event).
-- Removes a job whose attempt succeeded, fenced by its lease token. Returns
-- {'ok', task, attempts}, or {'gone'} / {'lost'} writing nothing.
`, `
local j, why = fence(ARGV[1], ARGV[2])
if not j then return {why} end
event(ARGV[1], ARGV[3], 'in-flight', 'succeeded', 'succeeded', ARGV[4])
redis.call('ZREM', PROCESSING, ARGV[1])
redis.call('DEL', jobKey(ARGV[1]))
return {'ok', j.task, tonumber(j.att) or 0}
`)

var retryScript = script(`
-- retry: KEYS[1] prefix. ARGV[1] job id, ARGV[2] lease token, ARGV[3] job
-- JSON, ARGV[4] attempts, ARGV[5] due time (ms), ARGV[6] task.
-- Moves a leased job from the processing set to the retry schedule (scored
-- by its due time), storing the new job copy, fenced by its lease token.
-- Returns 'ok', or 'gone' / 'lost' writing nothing.
`, `
local j, why = fence(ARGV[1], ARGV[2])
if not j then return why end
event(ARGV[1], ARGV[6], 'in-flight', 'scheduled', 'retry', ARGV[4])
redis.call('HSET', jobKey(ARGV[1]), 'data', ARGV[3], 'att', ARGV[4], 'loc', 'scheduled')
redis.call('ZREM', PROCESSING, ARGV[1])
redis.call('ZADD', RETRY, ARGV[5], ARGV[1])
return 'ok'
`)

var releaseScript = script(`
-- release: KEYS[1] prefix. ARGV[1] job id, ARGV[2] lease token, ARGV[3] job
-- JSON, ARGV[4] attempts, ARGV[5] task.
-- Puts a leased job back at the head of its queue, storing the new job copy,
-- fenced by its lease token. Returns 'ok', or 'gone' / 'lost' writing nothing.
`, `
local j, why = fence(ARGV[1], ARGV[2])
if not j then return why end
event(ARGV[1], ARGV[5], 'in-flight', 'queued', 'released', ARGV[4])
redis.call('HSET', jobKey(ARGV[1]), 'data', ARGV[3], 'att', ARGV[4], 'loc', 'queued')
redis.call('ZREM', PROCESSING, ARGV[1])
redis.call('LPUSH', queueKey(j.q), ARGV[1])
redis.call('SADD', QUEUES, j.q)
return 'ok'
`)

var divertScript = script(`
-- divert: KEYS[1] prefix. ARGV[1] job id, ARGV[2] lease token, ARGV[3] job
-- JSON, ARGV[4] attempts, ARGV[5] task.
-- Moves a leased job to the tail of the fallback (batch) queue, storing the
-- new job copy, fenced by its lease token. Returns 'ok', or 'gone' / 'lost'
-- writing nothing.
`, `
local j, why = fence(ARGV[1], ARGV[2])
if not j then return why end
event(ARGV[1], ARGV[5], 'in-flight', 'fallback', 'diverted', ARGV[4])
redis.call('HSET', jobKey(ARGV[1]), 'data', ARGV[3], 'att', ARGV[4], 'loc', 'fallback')
redis.call('ZREM', PROCESSING, ARGV[1])
redis.call('RPUSH', FALLBACK, ARGV[1])
return 'ok'
`)

var forwardDueScript = script(`
-- forwardDue: KEYS[1] prefix. ARGV[1] now (ms), ARGV[2] limit.
-- Moves up to limit scheduled jobs due at or before now (oldest due first;
-- equal due times by job id) from the retry schedule to the tails of their
-- queues. Each job is checked to be scheduled before it moves; a stray
-- member is removed without a move. Returns {id, task, attempts, ...} of the
-- jobs moved, and how many members it examined as the last element.
`, `
local ids = redis.call('ZRANGEBYSCORE', RETRY, '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
local out = {}
for _, id in ipairs(ids) do
  local jk = jobKey(id)
  local v = redis.call('HMGET', jk, 'loc', 'q', 'task', 'att')
  redis.call('ZREM', RETRY, id)
  if v[1] == 'scheduled' then
    event(id, v[3], 'scheduled', 'queued', 'due', tonumber(v[4]) or 0)
    redis.call('HSET', jk, 'loc', 'queued')
    redis.call('RPUSH', queueKey(v[2]), id)
    redis.call('SADD', QUEUES, v[2])
    out[#out + 1] = id
    out[#out + 1] = v[3]
    out[#out + 1] = tonumber(v[4]) or 0
  end
end
out[#out + 1] = #ids
return out
`)

var recoverScript = script(`
-- recoverExpired: KEYS[1] prefix. ARGV[1] now (ms), ARGV[2] '1' when a lost
-- lease uses an attempt, ARGV[3..] job ids, earliest lease expiry first.
-- Puts the jobs back at the heads of their queues, in the order given (the
-- first lands first), ahead of the jobs waiting there. Each is checked before
-- it moves: still in flight, its lease expired at or before now (a job whose
-- lease was extended or settled since the caller read it is skipped). The
-- lease token is kept, so the lost lease stays fenced off; the next lease
-- gets a new one. Returns {id, task, attempts, ...} of the jobs moved, and
-- their number as the last element.
`, `
local out, back = {}, {}
for i = 3, NARG do
  local id = ARGV[i]
  local jk = jobKey(id)
  local exp = redis.call('ZSCORE', PROCESSING, id)
  local v = redis.call('HMGET', jk, 'loc', 'q', 'task', 'att')
  if exp and tonumber(exp) <= tonumber(ARGV[1]) and v[1] == 'inflight' then
    local att = tonumber(v[4]) or 0
    redis.call('ZREM', PROCESSING, id)
    if ARGV[2] == '1' then att = redis.call('HINCRBY', jk, 'att', 1) end
    redis.call('HSET', jk, 'loc', 'queued')
    event(id, v[3], 'in-flight', 'queued', 'lease-expired', att)
    back[#back + 1] = {id, v[2]}
    out[#out + 1] = id
    out[#out + 1] = v[3]
    out[#out + 1] = att
  end
end
for i = #back, 1, -1 do
  redis.call('LPUSH', queueKey(back[i][2]), back[i][1])
  redis.call('SADD', QUEUES, back[i][2])
end
out[#out + 1] = #back
return out
`)

var drainScript = script(`
-- drainBatch: KEYS[1] prefix. ARGV[1] max.
-- Moves up to max jobs from the head of the fallback queue (oldest diverted
-- first) to the tails of their queues, each checked to be in the fallback
-- before it moves (a stray id is popped without a move). Returns {id, task,
-- attempts, ...} of the jobs moved, and the fallback queue's remaining length
-- as the last element.
`, `
local out = {}
for _ = 1, tonumber(ARGV[1]) do
  local id = redis.call('LINDEX', FALLBACK, 0)
  if not id then break end
  local jk = jobKey(id)
  local v = redis.call('HMGET', jk, 'loc', 'q', 'task', 'att')
  redis.call('LPOP', FALLBACK)
  if v[1] == 'fallback' then
    event(id, v[3], 'fallback', 'queued', 'drained', tonumber(v[4]) or 0)
    redis.call('HSET', jk, 'loc', 'queued')
    redis.call('RPUSH', queueKey(v[2]), id)
    redis.call('SADD', QUEUES, v[2])
    out[#out + 1] = id
    out[#out + 1] = v[3]
    out[#out + 1] = tonumber(v[4]) or 0
  end
end
out[#out + 1] = redis.call('LLEN', FALLBACK)
return out
`)

var countsScript = script(`
-- counts (read-only): KEYS[1] prefix.
-- Returns {queued, in flight, scheduled, fallback, held} read at one instant.
`, `
local queued = 0
for _, q in ipairs(redis.call('SMEMBERS', QUEUES)) do
  queued = queued + redis.call('LLEN', queueKey(q))
end
return {queued, redis.call('ZCARD', PROCESSING), redis.call('ZCARD', RETRY), redis.call('LLEN', FALLBACK), redis.call('ZCARD', HELD)}
`)

var dlqPutScript = script(`
-- dlqPut: KEYS[1] prefix. ARGV[1] capacity, ARGV[2] '1' when requeued and
-- deleted entries count toward it, ARGV[3] 'reject' or 'evict', ARGV[4] the
-- job id to fence on ('' for none), ARGV[5] its lease token, ARGV[6] the
-- fence's kind: 'lease' (the job is in flight under the token), 'hold' (the
-- same, and a refused entry parks the job in the held set), 'held' (the job
-- is held: a flush of its entry), 'absent' (no job: an import, written
-- only when its job has no entry and no job hash), ARGV[7] the held set's capacity, ARGV[8]
-- now (ms), ARGV[9] the entry JSON a parked job keeps; then items of 11 ARGV
-- each: id, expected revision ('0': no entry yet), entry JSON, status,
-- severity, class, task, attempts, last error type, folded last error text,
-- last failure (ms).
-- Writes dead-lettered entries, each guarded like a compare-and-set:
--   * with a fence, the job must be in flight under the token ('lease',
--     'hold') or held ('held'), else {{'gone'}} or {{'lost'}} and nothing is
--     written; on success the job leaves the processing (or held) set and its
--     hash is deleted in the same step;
--   * with the 'absent' fence, the job must have no entry (bytes or meta)
--     and no job hash (queued, in flight, scheduled, in the fallback queue
--     or held), else {'present'} for that item, nothing written;
--   * the entry's revision must be the expected one, else {'conflict'} for
--     that item (the caller merges with the current entry and retries);
--   * when the item adds one to the entries counting toward capacity and the
--     store is full: 'reject' answers {'full'}, counting the rejection unless
--     the fence is 'held' (a held entry was refused once already); with a
--     'hold' fence and fewer held jobs than ARGV[7], the job leaves the
--     processing set for the held set (as hold parks it) keeping ARGV[9], and
--     the answer is {'held'}; 'evict' deletes the oldest counting entries (by
--     last failure, then id; never the item itself), payloads, meta and
--     indexes, in the same step;
--   * under 'reject', an item (not a 'held' flush) that needs room while the
--     held set is not empty never takes room ahead of the held jobs: with
--     room left, or none but an oldest held job whose own entry already
--     counts (its write takes no room), it answers {'flushfirst'}, writing
--     nothing (the caller flushes the held set, oldest first, and retries);
--     otherwise it is refused (or parked at the held set's tail) as above.
-- Each item is checked before it is written. Returns one result per item:
-- {'ok', created (1/0), {evicted id, task, attempts, status, ...}}.
`, `
local cap, policy, fenceID, fenceKind = tonumber(ARGV[1]), ARGV[3], ARGV[4], ARGV[6]
local counting = {failed = true, quarantined = true}
if ARGV[2] == '1' then counting.requeued = true; counting.deleted = true end
local order = {'failed', 'quarantined', 'requeued', 'deleted'}
-- dead: the statuses of an entry that holds a dead-lettered job
local dead = {failed = true, quarantined = true, deleted = true}

-- used is how many entries count toward capacity, read (one HMGET) when
-- an item first adds one to them, and kept up to date from then on: the
-- counters as stored plus the changes bumped since the script began.
local used
local function loadUsed()
  if used then return end
  local fields = {}
  for _, st in ipairs(order) do
    if counting[st] then fields[#fields + 1] = 'st:' .. st end
  end
  used = 0
  for k, v in ipairs(redis.call('HMGET', STATS, unpack(fields))) do
    used = used + (tonumber(v) or 0) + (deltas[fields[k]] or 0)
  end
end

-- oldest picks the n oldest counting entries other than exclude.
local function oldest(n, exclude)
  writeLater() -- it reads the status indexes
  local sts, pos, picked = {}, {}, {}
  for _, st in ipairs(order) do
    if counting[st] then sts[#sts + 1] = st; pos[#sts] = 0 end
  end
  while #picked < n do
    local best, bestScore, bestI
    for i, st in ipairs(sts) do
      local r = redis.call('ZRANGE', statusKey(st), pos[i], pos[i], 'WITHSCORES')
      if r[1] == exclude then
        pos[i] = pos[i] + 1
        r = redis.call('ZRANGE', statusKey(st), pos[i], pos[i], 'WITHSCORES')
      end
      if r[1] then
        local sc = tonumber(r[2])
        if not best or sc < bestScore or (sc == bestScore and less(r[1], best)) then
          best, bestScore, bestI = r[1], sc, i
        end
      end
    end
    if not best then break end
    picked[#picked + 1] = best
    pos[bestI] = pos[bestI] + 1
  end
  return picked
end

local function put(i)
  local id, expect = ARGV[i], ARGV[i + 1]
  local m = metaAt(i + 3)
  local old = readMeta(id)
  if fenceKind == 'absent' and not old then writeLater() end -- it reads the entries' bytes
  if fenceKind == 'absent' and (old or redis.call('HEXISTS', ENTRIES, id) == 1 or redis.call('EXISTS', jobKey(id)) == 1) then
    return {'present'}
  end
  if (expect == '0' and old) or (expect ~= '0' and (not old or old.rev ~= expect)) then
    return {'conflict'}
  end
  local victims = {}
  local delta = (counting[m.st] and 1 or 0) - ((old and counting[old.st]) and 1 or 0)
  if delta > 0 then
    loadUsed()
    local excess = used + delta - cap
    if policy == 'reject' and fenceKind ~= 'held' and redis.call('ZCARD', HELD) > 0 then
      if excess <= 0 then return {'flushfirst'} end
      -- No room, but the oldest held job may need none (its own entry
      -- already counts): it is written first, then this one is judged.
      local first = redis.call('ZRANGE', HELD, 0, 0)[1]
      local fm = first and readMeta(first)
      if fm and counting[fm.st] then return {'flushfirst'} end
    end
    if excess > 0 then
      if policy == 'evict' then victims = oldest(excess, id) end
      if #victims < excess then
        if fenceKind == 'held' then return {'full'} end
        bump('rejected', 1)
        if fenceKind == 'hold' and redis.call('ZCARD', HELD) < tonumber(ARGV[7]) then
          event(fenceID, m.task, 'in-flight', 'held', 'held', m.att)
          redis.call('ZREM', PROCESSING, fenceID)
          redis.call('HSET', jobKey(fenceID), 'loc', 'held', 'entry', ARGV[9], 'heldat', ARGV[8])
          redis.call('ZADD', HELD, redis.call('INCR', P .. ':heldseq'), fenceID)
          return {'held'}
        end
        return {'full'}
      end
    end
  end
  -- checks done: write
  local evicted = {}
  for _, v in ipairs(victims) do
    local vm = readMeta(v)
    drop(v, vm)
    vm = vm or {st = 'corrupt', task = '', att = '0'}
    if dead[vm.st] then event(v, vm.task, 'dead-lettered', 'none', 'evicted', vm.att) end
    evicted[#evicted + 1] = v
    evicted[#evicted + 1] = vm.task
    evicted[#evicted + 1] = tonumber(vm.att) or 0
    evicted[#evicted + 1] = vm.st
  end
  if #victims > 0 then bump('evicted', #victims) end
  if used then used = used + delta - #victims end
  if fenceID ~= '' then
    if fenceKind == 'held' then
      redis.call('ZREM', HELD, fenceID)
    else
      redis.call('ZREM', PROCESSING, fenceID)
    end
    redis.call('DEL', jobKey(fenceID))
  end
  if fenceID ~= '' then
    event(id, m.task, fenceKind == 'held' and 'held' or 'in-flight', 'dead-lettered', 'dead-lettered', m.att)
  elseif (not old or old.st == 'requeued') and dead[m.st] then
    event(id, m.task, 'none', 'dead-lettered', 'dead-lettered', m.att)
  end
  write('HSET', ENTRIES, id, ARGV[i + 2])
  index(id, old, m, old and (tonumber(old.rev) + 1) or 1, ARGV[i + 10], ARGV[i + 9])
  return {'ok', old and 0 or 1, evicted}
end

if fenceKind == 'held' then
  local loc = redis.call('HGET', jobKey(fenceID), 'loc')
  if not loc then return {{'gone'}} end
  if loc ~= 'held' then return {{'lost'}} end
elseif fenceID ~= '' then
  local _, why = fence(fenceID, ARGV[5])
  if why then return {{why}} end
end
local out = {}
-- Many items: their writes of the shared keys go in a few commands.
batching = NARG > 10 + 11
for i = 10, NARG, 11 do out[#out + 1] = put(i) end
flush()
return out
`)

var holdScript = script(`
-- hold: KEYS[1] prefix. ARGV[1] job id, ARGV[2] lease token, ARGV[3] the
-- held set's capacity, ARGV[4] now (ms), ARGV[5] the decided dead letter's
-- entry JSON, ARGV[6] its job's task and ARGV[7] attempts (for the event).
-- Parks a leased job whose dead letter is decided in the held set, fenced by
-- its lease token: it leaves the processing set, its hash keeps the entry
-- and the time (heldat) and says loc=held, and the held set scores it by
-- the next value of P:heldseq (parking order). Returns 'ok', or
-- 'gone' / 'lost' / 'full' (the held set has ARGV[3] jobs) writing nothing.
`, `
local j, why = fence(ARGV[1], ARGV[2])
if not j then return why end
if redis.call('ZCARD', HELD) >= tonumber(ARGV[3]) then return 'full' end
event(ARGV[1], ARGV[6], 'in-flight', 'held', 'held', ARGV[7])
redis.call('ZREM', PROCESSING, ARGV[1])
redis.call('HSET', jobKey(ARGV[1]), 'loc', 'held', 'entry', ARGV[5], 'heldat', ARGV[4])
redis.call('ZADD', HELD, redis.call('INCR', P .. ':heldseq'), ARGV[1])
return 'ok'
`)

var heldPeekScript = script(`
-- heldPeek: KEYS[1] prefix. ARGV[1] limit.
-- Returns {id, entry JSON, job JSON, parking time (ms), ...} of up to limit
-- held jobs, oldest parked first (parking order), and the held set's size as
-- the last element. A
-- stray member (its job is not held) is removed from the held set, without a
-- move, and not returned.
`, `
local out, n = {}, tonumber(ARGV[1])
local ids = {}
if n > 0 then ids = redis.call('ZRANGE', HELD, 0, n - 1) end
for _, id in ipairs(ids) do
  local v = redis.call('HMGET', jobKey(id), 'loc', 'entry', 'data', 'heldat')
  if v[1] == 'held' then
    out[#out + 1] = id
    out[#out + 1] = v[2] or ''
    out[#out + 1] = v[3] or ''
    out[#out + 1] = v[4] or '0'
  else
    redis.call('ZREM', HELD, id)
  end
end
out[#out + 1] = redis.call('ZCARD', HELD)
return out
`)

var dlqSetScript = script(`
-- dlqSet: KEYS[1] prefix. Items of 8 ARGV each: id, expected revision, new
-- entry JSON, new status, target queue ('' when the move is not a requeue),
-- job JSON, task, attempts.
-- Changes entries' status (requeue, delete, restore, quarantine), each
-- guarded like a compare-and-set. Every item is checked before anything is
-- written: the entry must exist ({'notfound'}) at the expected revision
-- ({'changed', current status}), and a requeue needs the job to be nowhere
-- in the queue's structures ({'busy'}). Then each item that passed is
-- written: the entry, its status in the meta, the status index and the
-- status counters, and for a requeue the job at the tail of the target queue,
-- in the same step. Returns one result per item: {'ok'} or the refusal.
`, `
local res, metas = {}, {}
for i = 1, NARG, 8 do
  local id = ARGV[i]
  local v = redis.call('HMGET', metaKey(id), 'rev', 'st')
  local m = v[1] and {rev = v[1], st = v[2]} or nil
  if not m then
    res[#res + 1] = {'notfound'}
  elseif m.rev ~= ARGV[i + 1] then
    res[#res + 1] = {'changed', m.st}
  elseif ARGV[i + 4] ~= '' and redis.call('EXISTS', jobKey(id)) == 1 then
    res[#res + 1] = {'busy'}
  else
    res[#res + 1] = {'ok'}
  end
  metas[#res] = m
end
-- checks done: write. The entries' bytes go in one HSET, their status
-- indexes in one ZREM per old status and one ZADD per new one (scored by
-- one ZMSCORE of the time index), and the requeued jobs in one RPUSH per
-- target queue (in the items' order) and one SADD of its name: a step's
-- writes cost a few commands, not a few per item.
local pushes, qorder = {}, {}
local bytes, moved = {}, {}
for n = 1, #res do
  if res[n][1] == 'ok' then
    local i = (n - 1) * 8 + 1
    local id, old = ARGV[i], metas[n]
    local st = ARGV[i + 3]
    bytes[#bytes + 1] = id
    bytes[#bytes + 1] = ARGV[i + 2]
    redis.call('HSET', metaKey(id), 'rev', tonumber(old.rev) + 1, 'st', st)
    if st ~= old.st then moved[#moved + 1] = n end
    local q = ARGV[i + 4]
    if q ~= '' then
      event(id, ARGV[i + 6], 'dead-lettered', 'queued', 'requeued', ARGV[i + 7])
      redis.call('HSET', jobKey(id), 'data', ARGV[i + 5], 'task', ARGV[i + 6], 'q', q, 'loc', 'queued', 'att', ARGV[i + 7])
      local l = pushes[q]
      if not l then
        l = {}
        pushes[q] = l
        qorder[#qorder + 1] = q
      end
      l[#l + 1] = id
    end
  end
end
if #bytes > 0 then chunked('HSET', ENTRIES, bytes, 2000) end
if #moved > 0 then
  local ids = {}
  for k, n in ipairs(moved) do ids[k] = ARGV[(n - 1) * 8 + 1] end
  local scores = {}
  for a = 1, #ids, 1000 do
    local sc = redis.call('ZMSCORE', BYTIME, unpack(ids, a, math.min(a + 999, #ids)))
    for k = 1, #sc do scores[#scores + 1] = sc[k] end
  end
  local rems, adds, sorder = {}, {}, {}
  for k, n in ipairs(moved) do
    local from, to = metas[n].st, ARGV[(n - 1) * 8 + 4]
    for _, st in ipairs({from, to}) do
      if not rems[st] then
        rems[st], adds[st] = {}, {}
        sorder[#sorder + 1] = st
      end
    end
    local r, a = rems[from], adds[to]
    r[#r + 1] = ids[k]
    a[#a + 1] = scores[k] or '0'
    a[#a + 1] = ids[k]
    bump('st:' .. from, -1)
    bump('st:' .. to, 1)
  end
  for _, st in ipairs(sorder) do
    if #rems[st] > 0 then chunked('ZREM', statusKey(st), rems[st], 1000) end
  end
  for _, st in ipairs(sorder) do
    if #adds[st] > 0 then chunked('ZADD', statusKey(st), adds[st], 2000) end
  end
end
for _, q in ipairs(qorder) do
  chunked('RPUSH', queueKey(q), pushes[q], 1000)
  redis.call('SADD', QUEUES, q)
end
flush()
return res
`)

var dlqPurgeScript = script(`
-- dlqPurge: KEYS[1] prefix. ARGV[1] cut-off (ms, exclusive), ARGV[2] limit.
-- Removes up to limit entries of any status (corrupt ones too) whose last
-- failure is before the cut-off, oldest first: bytes, meta, indexes and
-- counts in one step. Returns {id, task, attempts, status, ...} of the
-- entries removed.
`, `
local out = {}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', BYTIME, '-inf', '(' .. ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))) do
  local m = readMeta(id)
  drop(id, m)
  if m and (m.st == 'failed' or m.st == 'quarantined' or m.st == 'deleted') then
    event(id, m.task, 'dead-lettered', 'none', 'purged', m.att)
  end
  out[#out + 1] = id
  out[#out + 1] = m and m.task or ''
  out[#out + 1] = m and (tonumber(m.att) or 0) or 0
  out[#out + 1] = m and m.st or 'corrupt'
end
flush()
return out
`)

var dlqIndexScript = script(`
-- dlqIndex: KEYS[1] prefix. ARGV[1] 'write', 'absent', 'adopt' or 'mark', then items of
-- 10 ARGV each: id, entry bytes, status, severity, class, task, attempts, last
-- error type, folded last error text, last failure (ms).
-- Indexes bytes that did not come through Add or DeadLetter, with the fields
-- the caller decoded from them ('corrupt' for bytes that do not decode, at
-- the zero time):
--   'write' stores the bytes as they are and indexes them (the test hook
--           standing for another writer);
--   'absent' does the same only when the id has no entry (bytes or meta) and
--           no job of that id is queued, in flight, scheduled or held (an
--           import of a corrupt entry);
--   'adopt' indexes an entry another writer stored without an index: only
--           when it has no meta and its bytes are still ARGV's;
--   'mark'  re-indexes an indexed entry whose bytes another writer replaced
--           in place: only when its bytes are still ARGV's and its meta does
--           not say so already; it keeps the entry's place in the time index,
--           so that a listing in progress neither repeats nor skips it.
-- An item whose check fails is skipped, nothing written. Returns how many it
-- indexed.
`, `
local mode, n = ARGV[1], 0
for i = 2, NARG, 10 do
  local id = ARGV[i]
  local m = metaAt(i + 2)
  local old = readMeta(id)
  local ok = mode == 'write'
  if mode == 'adopt' then ok = (not old) and redis.call('HGET', ENTRIES, id) == ARGV[i + 1] end
  if mode == 'absent' then
    ok = (not old) and redis.call('HEXISTS', ENTRIES, id) == 0 and redis.call('EXISTS', jobKey(id)) == 0
  end
  if mode == 'mark' then
    ok = old ~= nil and old.st ~= m.st and redis.call('HGET', ENTRIES, id) == ARGV[i + 1]
  end
  if ok then
    if mode == 'write' or mode == 'absent' then redis.call('HSET', ENTRIES, id, ARGV[i + 1]) end
    local score = ARGV[i + 9]
    if mode == 'mark' then score = redis.call('ZSCORE', BYTIME, id) or score end
    index(id, old, m, old and (tonumber(old.rev) + 1) or 1, score, ARGV[i + 8])
    n = n + 1
  end
end
flush()
return n
`)

var dlqGetScript = script(`
-- dlqGet (read-only): KEYS[1] prefix. ARGV[1] id.
-- Returns {entry bytes, revision, indexed status} read at one instant; nil
-- when there is no entry. A revision of '0' means the entry has no meta
-- (another writer stored it).
`, `
local b = redis.call('HGET', ENTRIES, ARGV[1])
if not b then return nil end
local m = redis.call('HMGET', metaKey(ARGV[1]), 'rev', 'st')
return {b, m[1] or '0', m[2] or ''}
`)

var dlqScanScript = script(`
-- dlqScan (read-only): KEYS[1] prefix. ARGV[1] index ('bytime' or
-- 'st:<status>'), ARGV[2] 'asc', 'desc' or 'count' (ascending, counting: see
-- below), ARGV[3] lowest score, ARGV[4]
-- highest score (both inclusive; '-inf' / '+inf' for none), ARGV[5] anchor
-- score ('' to start at the range's end), ARGV[6] anchor id, ARGV[7] how many
-- index members to examine at most, ARGV[8] how many matches to return at
-- most, ARGV[9] '1' when the filter sets any condition, then five sets, each
-- as a count followed by its names: severities, classes, tasks, error types,
-- statuses (an empty set allows any); then the folded error text to find in
-- the meta's folded copy ('' for none).
-- Walks the index strictly after the anchor in (score, id) order (reversed
-- for 'desc') within the score range, matching each member's meta against the
-- sets (a corrupt entry matches only a filter without conditions) and the
-- text against the members' copies in ETX, read with one HMGET per thousand
-- members before any meta is (found bytewise, no case folding here: both
-- sides come folded; a copy cut short, or none, as for an entry written
-- before copies were kept, matches coarsely, and the caller decides on the
-- decoded entry), and stops
-- after ARGV[7] members or ARGV[8] matches. Finding the anchor costs O(log n)
-- whether or not it is still in the index, so a walk whose entries move away
-- under it neither skips nor repeats any. Returns {examined, last examined
-- score, last examined id, sure count, then per match: id, score, bytes (''
-- when none), 1 if it has bytes else 0, revision, status}.
-- In 'count' mode (the dry run of a bulk move) a match the caller would take
-- for certain is only counted (the sure count), its bytes never shipped: one
-- that has bytes, whose score is strictly inside the range (not at a bound,
-- where the caller compares the precise times) and whose text copy, when a
-- needle is given, is there and holds it. The others that match (at a bound,
-- a copy cut short or missing) are returned as matches for the caller to
-- decide, at most ARGV[8] of them.
`, `
local Z = P .. ':dlq:' .. ARGV[1]
local count = ARGV[2] == 'count'
local desc, lo, hi, aS, aID = ARGV[2] == 'desc', ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local examine, want, anyCond = tonumber(ARGV[7]), tonumber(ARGV[8]), ARGV[9] == '1'
local function readSet(i)
  local n, set = tonumber(ARGV[i]), nil
  if n > 0 then
    set = {}
    for k = 1, n do set[ARGV[i + k]] = true end
  end
  return set, i + n + 1
end
local sev, cls, task, et, st, i
sev, i = readSet(10)
cls, i = readSet(i)
task, i = readSet(i)
et, i = readSet(i)
st, i = readSet(i)
local needle = ARGV[i]
local find, byte = string.find, string.byte
-- text reports whether a folded copy x may hold the needle: it does, or x
-- was cut short ('~', byte 126), or there is none (false: the caller
-- decides).
local function text(x)
  if not x then return true end
  return (#x > 1 and find(x, needle, 2, true) ~= nil) or byte(x, 1) == 126
end
local function matches(m)
  if not m[1] then return false end
  if m[2] == 'corrupt' then return not anyCond end
  return (not st or st[m[2]]) and (not sev or sev[m[3]]) and (not cls or cls[m[4]]) and
    (not task or task[m[5]]) and (not et or et[m[6]]) or false
end
local function at(r)
  if desc then return redis.call('ZREVRANGE', Z, r, r)[1] end
  return redis.call('ZRANGE', Z, r, r)[1]
end
local start
if aS ~= '' then
  local first
  if desc then first = redis.call('ZCOUNT', Z, '(' .. aS, '+inf') else first = redis.call('ZCOUNT', Z, '-inf', '(' .. aS) end
  -- the first rank among the anchor's ties that comes after the anchor id
  local a, b = first, first + redis.call('ZCOUNT', Z, aS, aS)
  while a < b do
    local mid = math.floor((a + b) / 2)
    local m = at(mid)
    local after
    if desc then after = less(m, aID) else after = less(aID, m) end
    if after then b = mid else a = mid + 1 end
  end
  start = a
elseif desc then
  start = (hi == '+inf') and 0 or redis.call('ZCOUNT', Z, '(' .. hi, '+inf')
else
  start = (lo == '-inf') and 0 or redis.call('ZCOUNT', Z, '-inf', '(' .. lo)
end
local r
if desc then r = redis.call('ZREVRANGE', Z, start, start + examine - 1, 'WITHSCORES')
else r = redis.call('ZRANGE', Z, start, start + examine - 1, 'WITHSCORES') end
local out, examined, lastScore, lastID = {}, 0, '', ''
local found = {}
-- With a needle, the members' folded texts, a thousand per HMGET.
local texts = {}
if needle ~= '' then
  for a = 1, #r, 2000 do
    local ids = {}
    for k = a, math.min(a + 1998, #r - 1), 2 do ids[#ids + 1] = r[k] end
    local t = redis.call('HMGET', ETX, unpack(ids))
    for k = 1, #t do texts[#texts + 1] = t[k] end
  end
end
local loBound, hiBound = desc and lo ~= '-inf' and tonumber(lo), (not desc) and hi ~= '+inf' and tonumber(hi)
-- count mode: the scores at the range's bounds, where only the caller can
-- tell (it compares the precise times).
local loTie, hiTie = lo ~= '-inf' and tonumber(lo), hi ~= '+inf' and tonumber(hi)
-- sureText reports whether a folded copy x holds the needle for certain.
local function sureText(x) return x ~= nil and x ~= false and #x > 1 and find(x, needle, 2, true) ~= nil end
local none = {false}
local sure = 0
for k = 1, #r, 2 do
  local id = r[k]
  if loBound and tonumber(r[k + 1]) < loBound then break end
  if hiBound and tonumber(r[k + 1]) > hiBound then break end
  examined = examined + 1
  local m = none
  if needle == '' or text(texts[examined]) then
    m = redis.call('HMGET', metaKey(id), 'rev', 'st', 'sev', 'cls', 'task', 'et')
  end
  if matches(m) then
    local sc = tonumber(r[k + 1])
    if count and sc ~= loTie and sc ~= hiTie and (needle == '' or sureText(texts[examined])) then
      sure = sure + redis.call('HEXISTS', ENTRIES, id)
    else
      found[#found + 1] = {id, r[k + 1], '', 0, m[1], m[2]}
      if #found >= want then break end
    end
  end
end
-- the matches' bytes, a thousand per HMGET
for a = 1, #found, 1000 do
  local ids = {}
  for k = a, math.min(a + 999, #found) do ids[#ids + 1] = found[k][1] end
  local bs = redis.call('HMGET', ENTRIES, unpack(ids))
  for k = 1, #bs do
    local f = found[a + k - 1]
    if bs[k] then f[3], f[4] = bs[k], 1 end
  end
end
if examined > 0 then lastScore, lastID = r[2 * examined], r[2 * examined - 1] end
out[1], out[2], out[3], out[4] = examined, lastScore, lastID, sure
for _, f in ipairs(found) do
  for _, v in ipairs(f) do out[#out + 1] = v end
end
return out
`)

var dlqStatsScript = script(`
-- dlqStats (read-only): KEYS[1] prefix.
-- Returns {counters (HGETALL of P:dlq:stats: st:<status>, sev:<severity>,
-- cls:<class>, task:<task>, evicted, rejected), entries stored, held jobs,
-- the oldest held job's parking time (ms; '' when none is held), oldest failed
-- entry's id, its bytes, newest failed entry's id, its bytes} read at one
-- instant; the last four are absent when no entry is failed. O(counters), not
-- O(entries).
`, `
local out = {redis.call('HGETALL', STATS), redis.call('HLEN', ENTRIES), redis.call('ZCARD', HELD), ''}
local h = redis.call('ZRANGE', HELD, 0, 0)
if h[1] then out[4] = redis.call('HGET', jobKey(h[1]), 'heldat') or '' end
local o = redis.call('ZRANGE', statusKey('failed'), 0, 0)
if o[1] then
  out[5] = o[1]
  out[6] = redis.call('HGET', ENTRIES, o[1]) or ''
  local n = redis.call('ZREVRANGE', statusKey('failed'), 0, 0)
  out[7] = n[1]
  out[8] = redis.call('HGET', ENTRIES, n[1]) or ''
end
return out
`)

// allScripts lists every script, for loading them ahead of a pipeline and
// for the spec that runs each on miniredis.
var allScripts = []*redis.Script{
	enqueueScript, dequeueScript, heartbeatScript, ackScript, retryScript, releaseScript, divertScript,
	forwardDueScript, recoverScript, drainScript, countsScript,
	dlqPutScript, holdScript, heldPeekScript, dlqSetScript, dlqPurgeScript, dlqIndexScript, dlqGetScript, dlqScanScript, dlqStatsScript,
}
