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
	{"ackJob", `
-- ackJob removes a job whose attempt succeeded (event: succeeded, with task
-- and att, the job as the worker ends it), fenced by its lease token tok.
-- Returns the job's fields as fence does, or nil and why (fence's answer)
-- writing nothing.
local function ackJob(id, tok, task, att)
  local j, why = fence(id, tok)
  if not j then return nil, why end
  event(id, task, 'in-flight', 'succeeded', 'succeeded', att)
  redis.call('ZREM', PROCESSING, id)
  redis.call('DEL', jobKey(id))
  return j
end
`},
	{"leaseHead", `
-- leaseHead leases the job at the head of queue q until exp (ms) (event:
-- leased): pops it, gives it a new lease token (INCR of P:lease, so tokens
-- only grow) and puts it in the processing set scored by exp. Returns {id,
-- job JSON, attempts, token}, or nil when the queue has no job. The head is
-- checked before it is popped; an id whose job is not queued (a stray
-- written by something else) is popped and skipped, at most bound of them.
local function leaseHead(q, exp, bound)
  local qk = queueKey(q)
  for _ = 1, bound do
    local id = redis.call('LINDEX', qk, 0)
    if not id then return nil end
    local jk = jobKey(id)
    local v = redis.call('HMGET', jk, 'loc', 'data', 'att', 'task')
    redis.call('LPOP', qk)
    if v[1] == 'queued' then
      if EVMAX > 0 then
        -- the event names the task of the job's JSON, as the caller reads it
        local ok, d = pcall(cjson.decode, v[2])
        local task = v[4]
        if ok and type(d) == 'table' and type(d.task) == 'string' then task = d.task end
        event(id, task, 'queued', 'in-flight', 'leased', v[3])
      end
      local tok = redis.call('INCR', P .. ':lease')
      redis.call('HSET', jk, 'loc', 'inflight', 'tok', tok, 'exp', exp)
      redis.call('ZADD', PROCESSING, exp, id)
      return {id, v[2], tonumber(v[3]) or 0, tok}
    end
  end
  return nil
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

// allScripts lists every script, for loading them ahead of a pipeline and
// for the spec that runs each on miniredis.
var allScripts = []*redis.Script{
	enqueueScript, dequeueScript, heartbeatScript, ackScript, ackDequeueScript, retryScript, releaseScript, divertScript,
	forwardDueScript, recoverScript, drainScript, countsScript,
	dlqPutScript, holdScript, heldPeekScript, dlqSetScript, dlqPurgeScript, dlqIndexScript, dlqGetScript, dlqScanScript, dlqStatsScript,
}
