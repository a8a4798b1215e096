package redisstore

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
return leaseHead(ARGV[1], ARGV[2], tonumber(ARGV[3]))
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
local j, why = ackJob(ARGV[1], ARGV[2], ARGV[3], ARGV[4])
if not j then return {why} end
return {'ok', j.task, tonumber(j.att) or 0}
`)

var ackDequeueScript = script(`
-- ackDequeue: KEYS[1] prefix. ARGV[1] job id, ARGV[2] lease token, ARGV[3]
-- task and ARGV[4] attempts (the ack, as ack takes them); ARGV[5] lease
-- expiry (ms), ARGV[6] bound on stray ids skipped per queue, ARGV[7..NARG]
-- the queues to lease from, in the order tried.
-- Acks the job as ack does (fenced by its lease token: a refused ack writes
-- nothing), then leases the head of the first of the queues that has a job,
-- as dequeue does (event: succeeded, then leased): one step, so a worker's
-- steady state is one script a job, and a crash or a lost reply leaves each
-- job in exactly one place (a lease whose reply was lost expires and is
-- recovered, as dequeue's). The lease is made whatever the ack's answer.
-- Returns {ack, i, id, job JSON, attempts, token}: ack is 'ok', 'gone' or
-- 'lost', i the position (1-based) in ARGV[7..] of the queue leased from,
-- or {ack, 0} when every queue is empty.
`, `
local _, why = ackJob(ARGV[1], ARGV[2], ARGV[3], ARGV[4])
why = why or 'ok'
for i = 7, NARG do
  local r = leaseHead(ARGV[i], ARGV[5], tonumber(ARGV[6]))
  if r then return {why, i - 6, r[1], r[2], r[3], r[4]} end
end
return {why, 0}
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
