package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/reference/degrade"
)

// BreakerKey is the key of the state breaker name's fleet shares
// (degrade.WithFleet) in namespace ns.
func BreakerKey(ns, name string) string { return Prefix(ns) + ":breaker:" + name }

// breakerSwapScript swaps a fleet's shared breaker state
// (degrade.BreakerStore).
//
// KEYS[1] the breaker's hash (BreakerKey), KEYS[2] the fleet's run of
// failures. ARGV[1] the generation the caller saw (0: none), ARGV[2..6]
// the new state's gen, st (the state's number), until (Unix ms), lvl and
// holder. Sets the hash if its gen is ARGV[1] (a missing hash is gen 0),
// deletes the run (a new state, a new run) and returns {1}; else returns
// {0, gen, st, until, lvl, holder} of the current state, writing nothing.
var breakerSwapScript = redis.NewScript(`
local K = KEYS[1]
local cur = redis.call('HMGET', K, 'gen', 'st', 'until', 'lvl', 'holder')
if (cur[1] or '0') == ARGV[1] then
  redis.call('HSET', K, 'gen', ARGV[2], 'st', ARGV[3], 'until', ARGV[4], 'lvl', ARGV[5], 'holder', ARGV[6])
  redis.call('DEL', KEYS[2])
  return {1}
end
return {0, cur[1] or '0', cur[2] or '0', cur[3] or '0', cur[4] or '0', cur[5] or ''}
`)

// LoadBreaker returns the state breaker name's fleet shares
// (degrade.BreakerStore): one HMGET.
func (s *Store) LoadBreaker(ctx context.Context, name string) (degrade.SharedState, error) {
	if err := s.guardLayout(ctx); err != nil {
		return degrade.SharedState{}, fmt.Errorf("load breaker %s: %w", name, err)
	}
	v, err := s.rdb.HMGet(ctx, BreakerKey(s.cfg.Namespace, name), "gen", "st", "until", "lvl", "holder").Result()
	if err != nil {
		return degrade.SharedState{}, fmt.Errorf("load breaker %s: %w", name, err)
	}
	st, err := sharedState(v)
	if err != nil {
		return degrade.SharedState{}, fmt.Errorf("load breaker %s: %w", name, err)
	}
	return st, nil
}

// SwapBreaker swaps the state breaker name's fleet shares if its generation
// is still gen (degrade.BreakerStore): one script.
func (s *Store) SwapBreaker(ctx context.Context, name string, gen uint64, next degrade.SharedState) (degrade.SharedState, bool, error) {
	if err := s.guardLayout(ctx); err != nil {
		return degrade.SharedState{}, false, fmt.Errorf("swap breaker %s: %w", name, err)
	}
	key := BreakerKey(s.cfg.Namespace, name)
	r, err := breakerSwapScript.Run(ctx, s.rdb, []string{key, key + ":run"},
		strconv.FormatUint(gen, 10), strconv.FormatUint(next.Gen, 10), strconv.Itoa(int(next.State)),
		strconv.FormatInt(next.Until.UnixMilli(), 10), strconv.Itoa(next.Level), next.Holder).Slice()
	if err != nil {
		return degrade.SharedState{}, false, fmt.Errorf("swap breaker %s: %w", name, err)
	}
	if len(r) == 1 {
		return next, true, nil
	}
	if len(r) != 6 {
		return degrade.SharedState{}, false, fmt.Errorf("swap breaker %s: unexpected reply %v", name, r)
	}
	st, err := sharedState(r[1:])
	if err != nil {
		return degrade.SharedState{}, false, fmt.Errorf("swap breaker %s: %w", name, err)
	}
	return st, false, nil
}

// sharedState reads a breaker hash's fields gen, st, until, lvl, holder (a
// missing hash: generation 0).
func sharedState(v []any) (degrade.SharedState, error) {
	str := func(i int) string { s, _ := v[i].(string); return s }
	if str(0) == "" {
		return degrade.SharedState{}, nil
	}
	gen, err1 := strconv.ParseUint(str(0), 10, 64)
	st, err2 := strconv.Atoi(str(1))
	until, err3 := strconv.ParseInt(str(2), 10, 64)
	lvl, err4 := strconv.Atoi(str(3))
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || st < 0 || st > int(degrade.HalfOpen) {
		return degrade.SharedState{}, fmt.Errorf("malformed shared state %v", v)
	}
	return degrade.SharedState{Gen: gen, State: degrade.State(st), Until: time.UnixMilli(until), Level: lvl, Holder: str(4)}, nil
}

// breakerWindowScript adds a process's calls to a fleet breaker's counts
// (degrade.BreakerStore.AddWindow).
//
// KEYS[1] the window's hash (BreakerKey + ":w:" + the bucket width in ns):
// fields "<bucket>:c" and "<bucket>:f", the calls and counted failures of
// each bucket; KEYS[2] the fleet's run, a sorted set of failures scored by
// their time (ms); KEYS[3] the latest success's time (ms); KEYS[4] the
// counter that names the run's members. ARGV[1] the oldest bucket of the
// window, ARGV[2] the process's last success (ms; ” for none), ARGV[3]
// the number n of its failures, ARGV[4..3+n] their times (ms); then
// triples of a bucket, its calls and its failures to add. Adds each triple
// whose bucket is not older than ARGV[1], deletes the fields of older
// buckets, adds the failures after the latest success to the run and
// drops the run's failures at or before it (keeping the newest MaxRun),
// and returns {calls, failures, run}, calls and failures summed over the
// window. The hash holds one window's buckets (plus those a late process
// adds), so the scan is bounded by the window.
var breakerWindowScript = redis.NewScript(`
local K = KEYS[1]
local oldest = tonumber(ARGV[1])
local n = tonumber(ARGV[3])
for i = 4 + n, #ARGV, 3 do
  if tonumber(ARGV[i]) >= oldest then
    redis.call('HINCRBY', K, ARGV[i] .. ':c', ARGV[i+1])
    redis.call('HINCRBY', K, ARGV[i] .. ':f', ARGV[i+2])
  end
end
local calls, fails = 0, 0
local all = redis.call('HGETALL', K)
for j = 1, #all, 2 do
  local idx, kind = string.match(all[j], '^(-?%d+):([cf])$')
  if idx then
    if tonumber(idx) < oldest then
      redis.call('HDEL', K, all[j])
    elseif kind == 'c' then
      calls = calls + tonumber(all[j+1])
    else
      fails = fails + tonumber(all[j+1])
    end
  end
end
local succ = redis.call('GET', KEYS[3])
if ARGV[2] ~= '' and (not succ or tonumber(ARGV[2]) > tonumber(succ)) then
  succ = ARGV[2]
  redis.call('SET', KEYS[3], succ)
end
for i = 4, 3 + n do
  if not succ or tonumber(ARGV[i]) > tonumber(succ) then
    redis.call('ZADD', KEYS[2], ARGV[i], redis.call('INCR', KEYS[4]))
  end
end
if succ then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', succ)
end
redis.call('ZREMRANGEBYRANK', KEYS[2], 0, -` + strconv.Itoa(degrade.MaxRun+1) + `)
return {calls, fails, redis.call('ZCARD', KEYS[2])}
`)

// AddWindow adds a process's calls to the counts breaker name's fleet
// shares (degrade.BreakerStore): one script.
func (s *Store) AddWindow(ctx context.Context, name string, add degrade.WindowAdd) (degrade.WindowSums, error) {
	if err := s.guardLayout(ctx); err != nil {
		return degrade.WindowSums{}, fmt.Errorf("add to breaker %s's window: %w", name, err)
	}
	success := ""
	if !add.LastSuccess.IsZero() {
		success = strconv.FormatInt(add.LastSuccess.UnixMilli(), 10)
	}
	args := make([]any, 0, 3+len(add.Failures)+3*len(add.Buckets))
	args = append(args, add.Oldest, success, len(add.Failures))
	for _, t := range add.Failures {
		args = append(args, t.UnixMilli())
	}
	for _, a := range add.Buckets {
		args = append(args, a.Index, a.Calls, a.Failures)
	}
	key := BreakerKey(s.cfg.Namespace, name)
	r, err := breakerWindowScript.Run(ctx, s.rdb, []string{key + ":w:" + strconv.FormatInt(int64(add.Width), 10), key + ":run", key + ":ok", key + ":seq"}, args...).Int64Slice()
	if err != nil {
		return degrade.WindowSums{}, fmt.Errorf("add to breaker %s's window: %w", name, err)
	}
	if len(r) != 3 {
		return degrade.WindowSums{}, fmt.Errorf("add to breaker %s's window: unexpected reply %v", name, r)
	}
	return degrade.WindowSums{Calls: r[0], Failures: r[1], Run: r[2]}, nil
}
