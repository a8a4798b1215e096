package dlq

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/faultline/faultline/reference/job"
)

// PayloadEditor is an optional extension of Store: a store that can change
// the payload of a dead job before it is requeued (an operator fixing a bad
// field) implements it. Find it with a type assertion.
type PayloadEditor interface {
	// EditPayload replaces the payload of the job of entry id, in one
	// guarded step (like a compare-and-set: an entry that changed under
	// the call is read again), and records the edit in the entry's status
	// history: a StatusChange from the entry's status to the same status,
	// By by, whose Reason is EditReason(old, payload). Only a Failed or
	// Quarantined entry may be edited: a Requeued one's job is back in a
	// queue, a Deleted one must be restored first, a corrupt one has no
	// job to edit (ErrWrongStatus, nothing changed). An unknown id is
	// ErrNotFound; a payload the store refuses (over its size limit) is
	// job.ErrInvalid. Nothing else of the entry changes: not its times, its
	// failures or its place in listings. It returns the entry as written.
	EditPayload(ctx context.Context, id string, payload []byte, by string, now time.Time) (Entry, error)
}

// EditReason is the Reason of the status change a payload edit records: the
// sizes and short SHA-256 digests of the payload before and after, so that
// the history says what changed without copying a payload (and its secrets)
// into it.
func EditReason(old, payload []byte) string {
	return fmt.Sprintf("payload edited: %d bytes (sha256 %s) -> %d bytes (sha256 %s)",
		len(old), digest(old), len(payload), digest(payload))
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}

// Editable reports whether an entry's payload may be edited (see
// PayloadEditor): it is decodable and Failed or Quarantined. When it may
// not, the error wraps ErrWrongStatus and says why.
func Editable(e *Entry) error {
	switch {
	case e.Corrupt:
		return fmt.Errorf("%w: the entry is corrupt (%s): it has no job to edit", ErrWrongStatus, e.DecodeError)
	case e.Status == Requeued:
		return fmt.Errorf("%w: requeued: its job is back in a queue", ErrWrongStatus)
	case e.Status == Deleted:
		return fmt.Errorf("%w: deleted: restore it first", ErrWrongStatus)
	case e.Status != Failed && e.Status != Quarantined:
		return fmt.Errorf("%w: %s, not failed or quarantined", ErrWrongStatus, e.Status)
	}
	return nil
}

// ApplyEdit is the edit both stores make once they hold the entry (see
// PayloadEditor): it refuses an entry that is not Editable and a payload
// job.Validate refuses (over maxPayload), then sets e's payload and
// appends the change recording it.
func ApplyEdit(e *Entry, payload []byte, by string, now time.Time, maxPayload int) error {
	if err := Editable(e); err != nil {
		return err
	}
	j := e.Job
	j.Payload = payload
	if err := job.Validate(&j, maxPayload); err != nil {
		return err
	}
	reason := EditReason(e.Job.Payload, payload)
	e.Job.Payload = append([]byte(nil), payload...)
	e.Changes = append(e.Changes[:len(e.Changes):len(e.Changes)], StatusChange{At: now, From: e.Status, To: e.Status, By: by, Reason: reason})
	return nil
}
