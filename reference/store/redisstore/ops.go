package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/faultline/faultline/reference/dlq"
)

var (
	_ dlq.BulkDeleter = (*Store)(nil)
	_ dlq.Importer    = (*Store)(nil)
)

// errPresent is put's answer when an 'absent' write (AddIfAbsent) finds the
// job's entry or the job itself.
var errPresent = errors.New("job or entry present")

// AddIfAbsent writes e as a new entry, as Add would, when the store has no
// entry of its job and no job of that ID is queued, in flight, scheduled, in
// the fallback queue or held (dlq.Importer); else it writes nothing and
// returns false. The check and the write are one dlqPut script (its
// 'absent' fence), so two imports of one entry at once write it once. The
// write obeys the capacity like Add: dlq.ErrFull under the reject policy
// (counted and reported), evictions reported; under reject, held dead
// letters take the room first.
func (s *Store) AddIfAbsent(ctx context.Context, e dlq.Entry, now time.Time) (dlq.AddResult, bool, error) {
	res, err := s.put(ctx, "import", &fenceArg{kind: "absent"}, e, now)
	if errors.Is(err, errPresent) {
		return dlq.AddResult{}, false, nil
	}
	if err != nil {
		return dlq.AddResult{}, false, fmt.Errorf("dlq %w", err)
	}
	return res, true, nil
}
