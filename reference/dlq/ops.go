package dlq

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"
)

// The optional interfaces of this file are what an operator's tools (the
// `faultline dlq` CLI and the web UI) need beyond Store. Both reference
// stores implement every one of them, and the conformance suite (dlqtest)
// holds them to the same semantics; a tool checks for each with a type
// assertion and says plainly when a store lacks one.

// BulkDeleter soft-deletes by filter, with the cut-off rule of
// Store.RequeueMatching.
type BulkDeleter interface {
	// DeleteMatching soft-deletes (Store.Delete's move, recoverable with
	// Restore until purged) every Failed entry matching f whose last failure
	// is before now — and Quarantined ones when f names that status — in
	// bounded batches, each entry guarded by the revision the batch read: an
	// entry that fails again during the run is skipped (its last failure
	// passes the cut-off), two runs at once delete each entry once. by goes
	// into the status history. A dry run counts.
	DeleteMatching(ctx context.Context, f Filter, by string, now time.Time, dryRun bool) (BulkResult, error)
}

// Importer writes entries brought from elsewhere (an export) without ever
// touching one the store already has.
type Importer interface {
	// AddIfAbsent writes e in one step, exactly as given — its status,
	// status history, failures and times: an import restores an exported
	// entry as it was, with no status change of its own — when the store
	// has no entry for its job ID and no job of that ID is queued, in
	// flight or held; else it writes nothing and returns false. The write obeys the
	// store's capacity like Add (ErrFull under the reject policy; evictions
	// reported in the AddResult). Two imports of the same entry at once
	// write it once.
	AddIfAbsent(ctx context.Context, e Entry, now time.Time) (AddResult, bool, error)
}

// AuditRecord is one operator action on a DLQ: who, what, when, how many,
// and which entries (their IDs, or the filter and cut-off of a bulk move).
type AuditRecord struct {
	// ID is the record's position in the audit stream, set by the store.
	ID string `json:"id,omitempty"`
	// At is when the action was taken.
	At time.Time `json:"at"`
	// By names who acted: the --by flag, a UI token's name, or the OS user.
	By string `json:"by"`
	// Via is the tool: "cli", "ui" or "api".
	Via string `json:"via"`
	// Action is the move: requeue, delete, restore, quarantine, purge,
	// edit, import, migrate, upgrade.
	Action string `json:"action"`
	// Phase is "started" for the record a bulk move writes before its
	// first batch and "done" for its result, or "failed" when it stopped
	// on an error (Moved is then what it did before the error), so an
	// interrupted run shows as started and never done; "" for a one-step
	// action.
	Phase string `json:"phase,omitempty"`
	// IDs names the entries of an action by ID (capped by the tool).
	IDs []string `json:"ids,omitempty"`
	// Filter is the bulk move's filter, in the tool's own flag syntax.
	Filter string `json:"filter,omitempty"`
	// CutOff is the bulk move's cut-off time.
	CutOff time.Time `json:"cutOff,omitzero"`
	// Stated is the count the operator was shown and confirmed; Moved and
	// Skipped what the action did.
	Stated  int `json:"stated"`
	Moved   int `json:"moved"`
	Skipped int `json:"skipped"`
	// Note is free text: the reason of a quarantine, the target queue.
	Note string `json:"note,omitempty"`
}

// MaxAuditIDs is how many IDs an audit record keeps: a store keeps the
// first MaxAuditIDs of a record's IDs and drops the rest; the record's
// counts carry the totals.
const MaxAuditIDs = 100

// AuditPage is one page of the audit stream, newest first; Next is the
// cursor of the next page, "" after the last.
type AuditPage struct {
	Records []AuditRecord
	Next    string
}

// Auditor keeps the audit stream beside the DLQ: one stream per namespace,
// written by every tool that changes the DLQ, capped (the store documents
// its cap; the oldest records go first) and never holding a payload.
type Auditor interface {
	// Audit appends r (its ID is set by the store) and returns its ID.
	Audit(ctx context.Context, r AuditRecord) (string, error)
	// AuditLog returns up to limit records, newest first, from cursor ("" for
	// the newest).
	AuditLog(ctx context.Context, cursor string, limit int) (AuditPage, error)
}

// ErrChanged: the entry is not the revision the caller read (another
// operator or a worker changed it since); nothing was written.
var ErrChanged = errors.New("dlq entry changed since it was read")

// Revision returns a short token that changes whenever anything of the
// entry changes (its job, failures, status or history): a form or a script
// that read an entry carries it, and a guarded write refuses a different
// one (ErrChanged) instead of overwriting a concurrent change.
func Revision(e *Entry) string {
	b, err := Encode(*e)
	if err != nil {
		b = append([]byte(e.Job.ID+"\x00"), e.Raw...)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// RevisionEditor is PayloadEditor with the caller's revision as a guard.
type RevisionEditor interface {
	// EditPayloadAt is PayloadEditor.EditPayload, done only when the entry's
	// Revision is rev; else ErrChanged and nothing changes.
	EditPayloadAt(ctx context.Context, id, rev string, payload []byte, by string, now time.Time) (Entry, error)
}
