package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/reference/fleet"
)

// LeaderKey is the key of role's lease (fleet.LeaderStore) in namespace
// ns: a hash of holder, term and until (Unix ms).
func LeaderKey(ns, role string) string { return Prefix(ns) + ":leader:" + role }

// AlertLogKey is the key of the fleet's relay log (fleet.Log) in namespace
// ns: a stream of records, each in field "r".
func AlertLogKey(ns string) string { return Prefix(ns) + ":fleet:alerts" }

// leaderClaimScript applies fleet.Claim to a lease.
//
// KEYS[1] the lease (LeaderKey). ARGV[1] the claimant, ARGV[2] its now
// (Unix ms), ARGV[3] the TTL (ms). Returns {holder, term, until} after
// the claim.
var leaderClaimScript = redis.NewScript(`
local K = KEYS[1]
local cur = redis.call('HMGET', K, 'holder', 'term', 'until')
local h, term, untl = cur[1] or '', tonumber(cur[2] or '0'), tonumber(cur[3] or '0')
local now = tonumber(ARGV[2])
if h ~= '' and h ~= ARGV[1] and now < untl then
  return {h, tostring(term), tostring(untl)}
end
if h ~= ARGV[1] then term = term + 1 end
untl = now + tonumber(ARGV[3])
redis.call('HSET', K, 'holder', ARGV[1], 'term', tostring(term), 'until', tostring(untl))
return {ARGV[1], tostring(term), tostring(untl)}
`)

// leaderResignScript ends a holder's lease, keeping its term.
//
// KEYS[1] the lease; ARGV[1] the holder. Returns 1 if it held it, else 0.
var leaderResignScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'holder') == ARGV[1] then
  redis.call('HSET', KEYS[1], 'holder', '', 'until', '0')
  return 1
end
return 0
`)

// alertAckScript removes a fleet's relayed records up to one, fenced by
// the leader's term.
//
// KEYS[1] the lease (LeaderKey), KEYS[2] the log (AlertLogKey). ARGV[1]
// the holder, ARGV[2] its term, ARGV[3] the last record's ID, ARGV[4]
// the most records to remove. Returns -1 (removing nothing) unless the
// holder holds the lease under the term, else the records removed.
var alertAckScript = redis.NewScript(`
local cur = redis.call('HMGET', KEYS[1], 'holder', 'term')
if cur[1] ~= ARGV[1] or cur[2] ~= ARGV[2] then
  return -1
end
local ids = redis.call('XRANGE', KEYS[2], '-', ARGV[3], 'COUNT', ARGV[4])
for _, e in ipairs(ids) do
  redis.call('XDEL', KEYS[2], e[1])
end
return #ids
`)

var _ fleet.LeaderStore = (*Store)(nil)
var _ fleet.Log = (*Store)(nil)

// ClaimLeader implements fleet.LeaderStore: one script.
func (s *Store) ClaimLeader(ctx context.Context, role, holder string, now time.Time, ttl time.Duration) (fleet.Lease, error) {
	if err := s.guardLayout(ctx); err != nil {
		return fleet.Lease{}, fmt.Errorf("claim %s: %w", role, err)
	}
	r, err := leaderClaimScript.Run(ctx, s.rdb, []string{LeaderKey(s.cfg.Namespace, role)},
		holder, now.UnixMilli(), ttl.Milliseconds()).StringSlice()
	if err != nil {
		return fleet.Lease{}, fmt.Errorf("claim %s: %w", role, err)
	}
	l, err := leaseOf(r)
	if err != nil {
		return fleet.Lease{}, fmt.Errorf("claim %s: %w", role, err)
	}
	return l, nil
}

// ResignLeader implements fleet.LeaderStore: one script.
func (s *Store) ResignLeader(ctx context.Context, role, holder string) error {
	if err := leaderResignScript.Run(ctx, s.rdb, []string{LeaderKey(s.cfg.Namespace, role)}, holder).Err(); err != nil {
		return fmt.Errorf("resign %s: %w", role, err)
	}
	return nil
}

// Leader implements fleet.LeaderStore: one HMGET.
func (s *Store) Leader(ctx context.Context, role string) (fleet.Lease, error) {
	v, err := s.rdb.HMGet(ctx, LeaderKey(s.cfg.Namespace, role), "holder", "term", "until").Result()
	if err != nil {
		return fleet.Lease{}, fmt.Errorf("the leader of %s: %w", role, err)
	}
	l, err := storedLease(v)
	if err != nil {
		return fleet.Lease{}, fmt.Errorf("the leader of %s: %w", role, err)
	}
	return l, nil
}

// storedLease reads a lease hash's holder, term and until (a missing hash:
// the zero Lease).
func storedLease(v []any) (fleet.Lease, error) {
	r := make([]string, 3)
	for i, x := range v {
		r[i], _ = x.(string)
	}
	if r[1] == "" {
		return fleet.Lease{}, nil
	}
	return leaseOf(r)
}

// leaseOf reads {holder, term, until} (a resigned lease's until is 0: the
// zero time).
func leaseOf(r []string) (fleet.Lease, error) {
	if len(r) != 3 {
		return fleet.Lease{}, fmt.Errorf("unexpected reply %v", r)
	}
	term, err1 := strconv.ParseUint(r[1], 10, 64)
	until, err2 := strconv.ParseInt(r[2], 10, 64)
	if err1 != nil || err2 != nil {
		return fleet.Lease{}, fmt.Errorf("malformed lease %q", r)
	}
	l := fleet.Lease{Holder: r[0], Term: term}
	if until != 0 {
		l.Until = time.UnixMilli(until).UTC()
	}
	return l, nil
}

// AppendAlerts implements fleet.Log: one pipelined XADD a record, one
// round trip.
func (s *Store) AppendAlerts(ctx context.Context, records [][]byte) error {
	if len(records) == 0 {
		return nil
	}
	key := AlertLogKey(s.cfg.Namespace)
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, r := range records {
			p.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []any{"r", r}})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("relay %d records: %w", len(records), err)
	}
	return nil
}

// ReadAlerts implements fleet.Log: one XRANGE (from after, inclusive, one
// more asked for and after itself dropped: an exclusive range needs Redis
// 6.2). A record without its field is returned as it is (empty), for the
// drain to report as corrupt.
func (s *Store) ReadAlerts(ctx context.Context, after string, n int) ([]fleet.Entry, error) {
	start, count := "-", int64(n)
	if after != "" {
		start, count = after, count+1
	}
	msgs, err := s.rdb.XRangeN(ctx, AlertLogKey(s.cfg.Namespace), start, "+", count).Result()
	if err != nil {
		return nil, fmt.Errorf("read the relay log: %w", err)
	}
	out := make([]fleet.Entry, 0, len(msgs))
	for _, m := range msgs {
		if m.ID == after || len(out) == n {
			continue
		}
		v, _ := m.Values["r"].(string)
		out = append(out, fleet.Entry{ID: m.ID, Data: []byte(v)})
	}
	return out, nil
}

// AckAlerts implements fleet.Log: one script, fenced by the lease's term.
func (s *Store) AckAlerts(ctx context.Context, role, holder string, term uint64, upTo string) error {
	if _, _, ok := strings.Cut(upTo, "-"); !ok {
		return fmt.Errorf("acknowledge %q: not an ID of the relay log", upTo)
	}
	n, err := alertAckScript.Run(ctx, s.rdb, []string{LeaderKey(s.cfg.Namespace, role), AlertLogKey(s.cfg.Namespace)},
		holder, strconv.FormatUint(term, 10), upTo, fleet.DrainBatch*4).Int64()
	if err != nil {
		return fmt.Errorf("acknowledge the relay log: %w", err)
	}
	if n < 0 {
		return fmt.Errorf("acknowledge the relay log: %w: %s under term %d", fleet.ErrNotLeader, holder, term)
	}
	return nil
}

var _ fleet.StatusReader = (*Store)(nil)

// ControlStatus implements fleet.StatusReader: role's lease and the relay
// log's length, in one round trip.
func (s *Store) ControlStatus(ctx context.Context, role string) (fleet.Status, error) {
	var (
		hm *redis.SliceCmd
		n  *redis.IntCmd
	)
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		hm = p.HMGet(ctx, LeaderKey(s.cfg.Namespace, role), "holder", "term", "until")
		n = p.XLen(ctx, AlertLogKey(s.cfg.Namespace))
		return nil
	})
	if err != nil {
		return fleet.Status{}, fmt.Errorf("the fleet's control status: %w", err)
	}
	st := fleet.Status{Backlog: n.Val()}
	if st.Lease, err = storedLease(hm.Val()); err != nil {
		return fleet.Status{}, fmt.Errorf("the fleet's control status: %w", err)
	}
	return st, nil
}
