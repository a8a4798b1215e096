package redisstore

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
