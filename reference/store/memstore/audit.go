package memstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/faultline/faultline/reference/dlq"
)

var _ dlq.Auditor = (*Store)(nil)

// DefaultAuditCap is how many records the audit stream keeps unless
// SetAuditCap says otherwise: the Redis store's default.
const DefaultAuditCap = 100_000

// errAuditLimit is AuditLog's refusal of a limit below 1.
var errAuditLimit = errors.New("audit log: limit must be at least 1")

// auditID is a record's position in the stream, shaped like a Redis stream
// ID ("<millis>-<seq>") and compared the same way.
type auditID struct{ ms, seq uint64 }

func (a auditID) String() string {
	return strconv.FormatUint(a.ms, 10) + "-" + strconv.FormatUint(a.seq, 10)
}

func (a auditID) less(b auditID) bool { return a.ms < b.ms || a.ms == b.ms && a.seq < b.seq }

// parseAuditID reads "<millis>-<seq>".
func parseAuditID(s string) (auditID, error) {
	ms, seq, ok := strings.Cut(s, "-")
	a, err1 := strconv.ParseUint(ms, 10, 64)
	b, err2 := strconv.ParseUint(seq, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return auditID{}, fmt.Errorf("audit log: invalid cursor %q (expected MILLIS-SEQ, an ID the log gave)", s)
	}
	return auditID{a, b}, nil
}

// auditLog is one store's audit stream: records oldest first from head,
// their IDs strictly increasing.
type auditLog struct {
	mu   sync.Mutex
	cap  int
	recs []dlq.AuditRecord
	ids  []auditID
	head int
	last auditID
}

// auditLog returns s's audit stream, made on first use.
func (s *Store) auditLog() *auditLog {
	s.auditOnce.Do(func() { s.audit = &auditLog{cap: DefaultAuditCap} })
	return s.audit
}

// SetAuditCap sets how many records the audit stream keeps (n < 1: the
// default, DefaultAuditCap); a full stream drops its oldest records first.
// Unlike the Redis store's approximate trim, the cap is exact.
func (s *Store) SetAuditCap(n int) {
	if n < 1 {
		n = DefaultAuditCap
	}
	l := s.auditLog()
	l.mu.Lock()
	l.cap = n
	l.trim()
	l.mu.Unlock()
}

// Audit appends r to the namespace's audit stream (dlq.Auditor), keeping
// its first dlq.MaxAuditIDs IDs. Its ID is "<millis>-<seq>" like a Redis stream
// ID: the millisecond of r.At (the store reads no clock), or of the last
// record when r.At is earlier, so that IDs always increase.
func (s *Store) Audit(ctx context.Context, r dlq.AuditRecord) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	r.IDs = slices.Clone(r.IDs[:min(len(r.IDs), dlq.MaxAuditIDs)])
	l := s.auditLog()
	l.mu.Lock()
	defer l.mu.Unlock()
	id := auditID{}
	if ms := r.At.UnixMilli(); ms > 0 {
		id.ms = uint64(ms)
	}
	if !l.last.less(id) {
		id = auditID{l.last.ms, l.last.seq + 1}
	}
	l.last = id
	r.ID = id.String()
	l.recs = append(l.recs, r)
	l.ids = append(l.ids, id)
	l.trim()
	return r.ID, nil
}

// trim drops the oldest records over the cap, compacting now and then.
func (l *auditLog) trim() {
	if over := len(l.recs) - l.head - l.cap; over > 0 {
		clear(l.recs[l.head : l.head+over])
		l.head += over
	}
	if l.head > 1024 && l.head > len(l.recs)/2 {
		l.recs = slices.Delete(l.recs, 0, l.head)
		l.ids = slices.Delete(l.ids, 0, l.head)
		l.head = 0
	}
}

// AuditLog returns up to limit records, newest first, from before cursor
// ("" for the newest; else the ID to continue before, exclusive)
// (dlq.Auditor).
func (s *Store) AuditLog(ctx context.Context, cursor string, limit int) (dlq.AuditPage, error) {
	if err := ctx.Err(); err != nil {
		return dlq.AuditPage{}, err
	}
	if limit < 1 {
		return dlq.AuditPage{}, errAuditLimit
	}
	l := s.auditLog()
	l.mu.Lock()
	defer l.mu.Unlock()
	ids := l.ids[l.head:]
	end := len(ids)
	if cursor != "" {
		c, err := parseAuditID(cursor)
		if err != nil {
			return dlq.AuditPage{}, err
		}
		end, _ = slices.BinarySearchFunc(ids, c, func(a, b auditID) int {
			switch {
			case a.less(b):
				return -1
			case b.less(a):
				return 1
			}
			return 0
		})
	}
	var page dlq.AuditPage
	for i := end - 1; i >= 0 && len(page.Records) < limit; i-- {
		r := l.recs[l.head+i]
		r.IDs = slices.Clone(r.IDs)
		page.Records = append(page.Records, r)
	}
	if n := len(page.Records); n == limit && end-n > 0 {
		page.Next = page.Records[n-1].ID
	}
	return page, nil
}
