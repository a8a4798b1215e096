package redisstore

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
