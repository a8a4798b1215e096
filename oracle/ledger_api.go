package oracle

import (
	"slices"
	"strings"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reports"
)

// This file is the ledger's API for its drivers beyond the events and the
// attempts (ledger.go): what the engine and the judges read of it, and the
// checks they feed with what only they can see (the store's counts, a
// payment's charges).

// ID is the job's ID.
func (r *Record) ID() string { return r.id }

// TaskIndex is the index of the job's task (see Ledger.Task).
func (r *Record) TaskIndex() int32 { return r.task }

// State is where the ledger has the job (Removed once it left the system).
func (r *Record) State() disposition.State { return r.state }

// Kept says the worker keeps the job's decided dead letter in memory (see
// Ledger.Keep).
func (r *Record) Kept() bool { return r.kept }

// Unkeep notes that the worker no longer keeps the job's dead letter: it
// was handed to the store, or lost with the worker.
func (r *Record) Unkeep() { r.kept = false }

// Last returns the record of the job of the latest event the ledger
// observed (nil when it forgot it): a job's moves often come one after
// another, and the engine starts an attempt right after its lease's event.
func (l *Ledger) Last() *Record { return l.last }

// Job returns the record of job id, nil if the ledger does not hold it.
func (l *Ledger) Job(id string) *Record { return l.jobs[id] }

// Tracked counts the jobs the ledger holds a record of: those not yet
// succeeded, and those kept after (watched, or all for a drill's judge).
func (l *Ledger) Tracked() int { return len(l.jobs) }

// Count counts the jobs in state s (a disposition state, or Removed).
func (l *Ledger) Count(s disposition.State) int64 { return l.counts[s] }

// Created counts the jobs the store reported enqueued.
func (l *Ledger) Created() int64 { return l.created }

// DLQBySeverity counts the jobs in the DLQ whose latest failure had
// severity sev.
func (l *Ledger) DLQBySeverity(sev classify.Severity) int64 { return l.dlqBySev[sev] }

// KeepAll keeps every job's record after it succeeds (a drill's judge: a
// late charge or completion of a succeeded job is still named).
func (l *Ledger) KeepAll() { l.keepAll = true }

// MaxAttempts is the retry policy's maximum of attempts the ledger checks
// (0 for none).
func (l *Ledger) MaxAttempts() int { return l.maxAttempts }

// SetMaxAttempts changes the maximum of attempts (an operator changed the
// retry policy).
func (l *Ledger) SetMaxAttempts(n int) { l.maxAttempts = n }

// Stranger returns a record for job id, which the ledger does not hold (a
// payment a drill saw charged for a job it never saw created), following
// it from now on; nil past the bound on unknown jobs.
func (l *Ledger) Stranger(id string) *Record {
	return l.stranger(disposition.Event{JobID: id}, disposition.None)
}

// FailJob records a violation of invariant about job id, which the ledger
// may no longer hold (then without a trail).
func (l *Ledger) FailJob(invariant, id string, format string, args ...any) {
	r := l.jobs[id]
	if r == nil {
		r = &Record{id: id}
	}
	l.Fail(invariant, r, format, args...)
}

// Violations are the violations listed, in the order they were found.
func (l *Ledger) Violations() []reports.Violation { return l.violations }

// ViolationCount counts the violations of invariant, listed or not.
func (l *Ledger) ViolationCount(invariant string) int64 { return l.violationN[invariant] }

// Invariants are the names of the invariants the ledger checks, in the
// order a report lists them.
func Invariants() []string { return slices.Clone(invariantNames) }

// AddFenced counts a completion the store fenced off (its lease was lost).
func (l *Ledger) AddFenced() { l.totals.Fenced++ }

// Charge counts one charge of job r's payment by dependency dep, which
// ignores idempotency keys if ignoresKeys; key is the job's idempotency
// key. shared, when not nil, is the count of charges of a key explicit
// jobs share (the payment is the key's, not the job's), updated in place.
// A second charge is a violation of InvNoDoubleCharge unless the gateway
// replayed the first for the same key.
func (l *Ledger) Charge(r *Record, key, dep string, ignoresKeys bool, shared *int32) {
	charged := &r.charged
	if shared != nil {
		charged = shared
	}
	if *charged > 0 && key != "" && !ignoresKeys {
		l.Note(r, "gateway %s replayed the charge for idempotency key %s", dep, key)
		return
	}
	*charged++
	r.charged = max(r.charged, *charged)
	l.totals.Charges++
	l.Note(r, "gateway %s charged the payment (charge %d)", dep, *charged)
	if *charged > 1 {
		why := "the job has no idempotency key"
		if key != "" {
			why = "the gateway ignored idempotency key " + key
		}
		l.Fail(InvNoDoubleCharge, r, "the payment of job %s was charged %d times: %s", r.id, *charged, why)
	}
}

// CheckCounts compares the store's own counts (of its held set, queues,
// jobs in flight, schedule and fallback) with the ledger's: a difference
// is a violation of InvConservation, reported once until it changes.
func (l *Ledger) CheckCounts(held, queued, inFlight, scheduled, fallback int64) {
	if l.mismatch(2, held-l.counts[disposition.Held]) {
		l.Fail(InvConservation, nil, "the store holds %d jobs in its held set; its moves account for %d: a job moved without an event",
			held, l.counts[disposition.Held])
	}
	if l.mismatch(0, queued-l.counts[disposition.Queued], inFlight-l.counts[disposition.InFlight],
		scheduled-l.counts[disposition.Scheduled], fallback-l.counts[disposition.Fallback]) {
		l.Fail(InvConservation, nil, "the store holds %d queued, %d in flight, %d scheduled, %d in fallback; its moves account for %d, %d, %d, %d: a job moved without an event",
			queued, inFlight, scheduled, fallback, l.counts[disposition.Queued], l.counts[disposition.InFlight], l.counts[disposition.Scheduled], l.counts[disposition.Fallback])
	}
}

// DLQDiffers says whether inDLQ, the entries the DLQ store holds, differs
// from the jobs the ledger has dead-lettered by an amount it has not
// reported yet: then the caller lists the DLQ for CheckDLQ.
func (l *Ledger) DLQDiffers(inDLQ int64) bool {
	return l.mismatch(1, inDLQ-l.counts[disposition.DeadLettered])
}

// CheckDLQ checks the DLQ's listing, seen (entries by job ID, inDLQ in
// all), against the jobs the ledger has dead-lettered: one entry each.
// fresh says the totals differ by a new amount (DLQDiffers): unless a job
// named explains it, the difference itself is a violation.
func (l *Ledger) CheckDLQ(seen map[string]int, inDLQ int64, fresh bool) {
	ids := make([]string, 0, len(l.jobs))
	for id, r := range l.jobs {
		if r.state == disposition.DeadLettered {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	blamed := false // a job named explains the difference
	for _, id := range ids {
		blamed = blamed || seen[id] != 1
		switch seen[id] {
		case 1:
		case 0:
			l.Fail(InvConservation, l.jobs[id], "job %s was dead-lettered, but the DLQ store has no entry for it: it was dropped without an event (%d entries held, %d dead-lettered)", id, inDLQ, l.counts[disposition.DeadLettered])
		default:
			l.Fail(InvOneDLQEntry, l.jobs[id], "job %s has %d DLQ entries", id, seen[id])
		}
	}
	if fresh && !blamed {
		l.Fail(InvConservation, nil, "the DLQ store holds %d entries that are failed, quarantined, deleted or corrupt, but %d jobs were dead-lettered", inDLQ, l.counts[disposition.DeadLettered])
	}
}

// Pending lists the jobs still queued, in flight, scheduled or in the
// fallback, each as "<id> (<state>)", sorted.
func (l *Ledger) Pending() []string {
	var ids []string
	for id, r := range l.jobs {
		if r.state == disposition.Queued || r.state == disposition.InFlight || r.state == disposition.Scheduled || r.state == disposition.Fallback {
			ids = append(ids, id+" ("+r.state.String()+")")
		}
	}
	slices.Sort(ids)
	return ids
}

// Fate is where one job ended.
type Fate struct {
	State disposition.State
	// LastMove is the reason of its last move (e.g. "dead-lettered",
	// "drained", "requeued").
	LastMove disposition.Reason
	// Severity and Class are its latest failure's verdict, if it failed.
	Severity classify.Severity
	Class    classify.Class
	// Requeued counts its requeues from the DLQ; Charged the charges of its
	// payment.
	Requeued, Charged int
	EverDeadLettered  bool
}

// Fate returns where job id ended, if the ledger kept it (a job purged or
// evicted from the DLQ is out of the system: disposition.None).
func (l *Ledger) Fate(id string) (Fate, bool) {
	r := l.jobs[id]
	if r == nil {
		return Fate{}, false
	}
	st := r.state
	if st == removed { // purged or evicted from the DLQ: out of the system
		st = disposition.None
	}
	return Fate{State: st, LastMove: r.lastMove, Severity: r.severity, Class: r.class,
		Requeued: int(r.requeued), Charged: int(r.charged), EverDeadLettered: r.everDLQ}, true
}

// Fates lists the fates of the watched jobs (every explicit job, every
// generated one an expectation names, every stranger), by job ID.
func (l *Ledger) Fates() []reports.JobFate {
	out := []reports.JobFate{}
	for id, r := range l.jobs {
		if !r.watched {
			continue
		}
		f := reports.JobFate{JobID: id, Task: l.taskNames[r.task], State: r.state.String(), LastMove: string(r.lastMove),
			Requeued: int(r.requeued), Charged: int(r.charged), EverDeadLettered: r.everDLQ}
		if r.state == removed {
			f.State = "removed"
		}
		if r.severity != classify.SeverityNone {
			f.Severity, f.Class = r.severity.String(), r.class.String()
		}
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b reports.JobFate) int { return strings.Compare(a.JobID, b.JobID) })
	return out
}
