package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/reference/dlq"
)

var _ dlq.Auditor = (*Store)(nil)

// DefaultAuditCap is how many records the audit stream keeps unless
// SetAuditCap says otherwise.
const DefaultAuditCap = 100_000

// auditField is the stream field holding a record: its JSON, without ID
// (the stream entry's ID is the record's).
const auditField = "record"

// AuditStreamKey returns the key of a namespace's audit stream,
// {faultline:NS}:dlq:audit.
func AuditStreamKey(namespace string) string { return Prefix(namespace) + ":dlq:audit" }

// SetAuditCap sets how many records the audit stream keeps (n < 1: the
// default, DefaultAuditCap). The stream is trimmed with XADD MAXLEN ~ n:
// Redis drops whole stream nodes (100 entries by default), oldest first,
// so it holds between n and about n+100 records.
func (s *Store) SetAuditCap(n int) { s.ops.auditCap.Store(int64(n)) }

func (s *Store) auditCap() int64 {
	if n := s.ops.auditCap.Load(); n > 0 {
		return n
	}
	return DefaultAuditCap
}

// Audit appends r to the namespace's audit stream, {faultline:NS}:dlq:audit
// (dlq.Auditor): one XADD of the record's JSON (without its ID, keeping its
// first dlq.MaxAuditIDs IDs), under an ID from the Redis server's clock, trimmed
// to about the cap (SetAuditCap). Like every write, the first one of a
// Store checks the namespace's layout (ErrNewerLayout).
func (s *Store) Audit(ctx context.Context, r dlq.AuditRecord) (string, error) {
	if err := s.guardLayout(ctx); err != nil {
		return "", fmt.Errorf("audit %s: %w", r.Action, err)
	}
	r.ID = ""
	r.IDs = r.IDs[:min(len(r.IDs), dlq.MaxAuditIDs)]
	b, err := json.Marshal(r)
	if err != nil {
		return "", fmt.Errorf("audit %s: %w", r.Action, err)
	}
	id, err := s.rdb.XAdd(ctx, &redis.XAddArgs{
		Stream: AuditStreamKey(s.cfg.Namespace), MaxLen: s.auditCap(), Approx: true, Values: []any{auditField, b},
	}).Result()
	if err != nil {
		return "", fmt.Errorf("audit %s: %w", r.Action, err)
	}
	return id, nil
}

// AuditLog returns up to limit records, newest first (XREVRANGE), from
// before cursor ("" for the newest; else the stream ID to continue before,
// exclusive) (dlq.Auditor). A record whose JSON does not decode is
// returned with its ID and the decode error in Note, never skipped.
func (s *Store) AuditLog(ctx context.Context, cursor string, limit int) (dlq.AuditPage, error) {
	if limit < 1 {
		return dlq.AuditPage{}, errors.New("audit log: limit must be at least 1")
	}
	end := "+"
	if cursor != "" {
		ms, seq, err := parseStreamID(cursor)
		if err != nil {
			return dlq.AuditPage{}, fmt.Errorf("audit log: %w", err)
		}
		switch {
		case seq > 0:
			end = strconv.FormatUint(ms, 10) + "-" + strconv.FormatUint(seq-1, 10)
		case ms > 0:
			end = strconv.FormatUint(ms-1, 10) + "-" + strconv.FormatUint(math.MaxUint64, 10)
		default:
			return dlq.AuditPage{}, nil // nothing is before 0-0
		}
	}
	msgs, err := s.rdb.XRevRangeN(ctx, AuditStreamKey(s.cfg.Namespace), end, "-", int64(limit)+1).Result()
	if err != nil {
		return dlq.AuditPage{}, fmt.Errorf("audit log: %w", err)
	}
	var page dlq.AuditPage
	for _, m := range msgs[:min(len(msgs), limit)] {
		var r dlq.AuditRecord
		raw, _ := m.Values[auditField].(string)
		if err := json.Unmarshal([]byte(raw), &r); err != nil {
			r = dlq.AuditRecord{Note: fmt.Sprintf("undecodable audit record: %v", err)}
		}
		r.ID = m.ID
		page.Records = append(page.Records, r)
	}
	if len(msgs) > limit {
		page.Next = page.Records[limit-1].ID
	}
	return page, nil
}

// parseStreamID reads a full stream ID, "<millis>-<seq>".
func parseStreamID(s string) (ms, seq uint64, err error) {
	a, b, ok := strings.Cut(s, "-")
	ms, err1 := strconv.ParseUint(a, 10, 64)
	seq, err2 := strconv.ParseUint(b, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("invalid cursor %q (expected MILLIS-SEQ, an ID the log gave)", s)
	}
	return ms, seq, nil
}
