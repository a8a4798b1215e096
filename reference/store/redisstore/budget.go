package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/reference/retry"
)

// BudgetKey is the key of the fleet-scoped retry budget k in namespace ns.
func BudgetKey(ns string, k retry.BudgetKey) string {
	return Prefix(ns) + ":budget:" + strconv.FormatInt(int64(k.Width), 10) + ":" + k.Dependency
}

// bookScript books one retry in a fleet's shared budget (retry.Booker).
//
// KEYS[1] the budget's hash (BudgetKey). ARGV[1] floor, ARGV[2] first,
// ARGV[3] last (slot numbers, first ≤ last, last − first < retry.MaxScan,
// each below 2^53: the policy checks), ARGV[4] burst.
// Forgets the slots before floor, then books the first slot in
// [first, last] holding fewer than burst, skipping the run [fl, fh) of
// full slots it keeps as a hint, and returns it; returns false, booking
// nothing, when every slot is full. One script: two processes never book
// the last room of a slot twice. Bounded: at most MaxScan slots are
// examined for the booking and for each of the hint's extension and the
// pruning (past that, pruning reads the hash's fields: the bookings ahead).
var bookScript = redis.NewScript(`
local K = KEYS[1]
local floor, first, last, burst = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local maxscan = ` + strconv.Itoa(retry.MaxScan) + `
local function f(n) return string.format('%d', n) end
local h = redis.call('HMGET', K, 'lo', 'fl', 'fh')
local lo, fl, fh = tonumber(h[1] or ARGV[1]), tonumber(h[2] or '0'), tonumber(h[3] or '0')
if lo < floor then
  if floor - lo <= maxscan then
    for k = lo, floor - 1 do redis.call('HDEL', K, f(k)) end
  else
    for _, name in ipairs(redis.call('HKEYS', K)) do
      local n = tonumber(name)
      if n and n < floor then redis.call('HDEL', K, name) end
    end
  end
  lo = floor
end
local k = first
while k <= last do
  if k >= fl and k < fh then k = fh end
  if k > last then break end
  local n = tonumber(redis.call('HGET', K, f(k)) or '0')
  if n < burst then
    redis.call('HINCRBY', K, f(k), 1)
    if n + 1 >= burst then
      if k == fh then fh = k + 1
      elseif k + 1 == fl then fl = k
      elseif fh <= floor or fh <= fl then fl, fh = k, k + 1 end
      local steps = 0
      while steps < maxscan and tonumber(redis.call('HGET', K, f(fh)) or '0') >= burst do
        fh, steps = fh + 1, steps + 1
      end
    end
    redis.call('HSET', K, 'lo', f(math.min(lo, k)), 'fl', f(fl), 'fh', f(fh))
    return f(k)
  end
  k = k + 1
end
redis.call('HSET', K, 'lo', f(lo))
return false
`)

// Book books one retry in a fleet-scoped budget (retry.Booker): one
// script, one round trip. The budget's hash lives in the namespace
// (BudgetKey); its ended slots are forgotten as bookings come.
func (s *Store) Book(ctx context.Context, key retry.BudgetKey, floor, first, last int64, burst int) (int64, bool, error) {
	if err := s.guardLayout(ctx); err != nil {
		return 0, false, fmt.Errorf("book a retry: %w", err)
	}
	if first > last {
		return 0, false, nil
	}
	v, err := bookScript.Run(ctx, s.rdb, []string{BudgetKey(s.cfg.Namespace, key)},
		floor, first, last, burst).Text()
	if errors.Is(err, redis.Nil) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("book a retry: %w", err)
	}
	k, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("book a retry: slot %q: %w", v, err)
	}
	return k, true, nil
}

// Booked returns how many retries the fleet-scoped budget key holds in slot
// k: one HGET (for metrics; a slot the budget has forgotten holds none).
func (s *Store) Booked(ctx context.Context, key retry.BudgetKey, k int64) (int, error) {
	n, err := s.rdb.HGet(ctx, BudgetKey(s.cfg.Namespace, key), strconv.FormatInt(k, 10)).Int()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read a budget slot: %w", err)
	}
	return n, nil
}
