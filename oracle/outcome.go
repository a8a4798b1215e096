package oracle

import (
	"slices"
	"time"

	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/worker"
)

// The invariants of an attempt's end and of a lease's life.
const (
	// InvOutcomeIsMove: every attempt's outcome is the move the store
	// made. An attempt that succeeded ends in the store as succeeded
	// unless it was fenced off because its lease was stale (recovered
	// since it began); one told to retry is scheduled, one told to
	// dead-letter is dead-lettered or held (never acked); a completion
	// the store took makes a move (a job is never dropped); and the late
	// answer of a lease that was lost is fenced off, never applied.
	InvOutcomeIsMove = "attempt-outcome-is-the-move"
	// InvNoLeaseLeftExpired: a job whose lease expired is recovered (put
	// back on its queue) within a lease TTL of the expiry; no job stays in
	// flight under a dead lease.
	InvNoLeaseLeftExpired = "no-lease-left-expired"
)

// outcomeWatch follows the attempt whose outcome is being applied, and the
// recoveries of expired leases, for attempt-outcome-is-the-move and
// no-lease-left-expired.
type outcomeWatch struct {
	cur pendingOutcome
	// expired is when each job's lease was last recovered.
	expired map[string]time.Duration
	// gone is when a job in flight was first seen held by no worker: its
	// lease expires a TTL after at the latest.
	gone map[string]time.Duration
	// nextCheck is when the leases are looked at next.
	nextCheck time.Duration
	// leases are the watched jobs' attempt times; due, by task index, the
	// times retries came due, kept when an expectation reads them
	// (wantDue: see WatchDue).
	leases  map[string][]time.Duration
	due     [][]time.Duration
	wantDue bool
}

// pendingOutcome is the attempt being applied: set before the store is
// told, checked against the move the store makes and, when none, against
// the refusal.
type pendingOutcome struct {
	r      *Record
	id     string
	action worker.Action
	// at is when the outcome is applied; began and expires are the
	// attempt's start and its lease's end.
	at, began, expires time.Duration
	// recovered: the job's lease was recovered after the attempt began
	// (the lease is stale, the job may run elsewhere).
	recovered bool
	pending   bool
	// refused: the store refused the outcome; fenced (read from the
	// fenced count at the next look) says it was as a lost lease's.
	refused    bool
	fencedBase int64
}

// WantMove says whether an outcome's action is carried out by a move from
// in flight to to.
func WantMove(a worker.Action, to disposition.State) bool {
	switch a {
	case worker.Succeed:
		return to == disposition.Succeeded
	case worker.Retry:
		return to == disposition.Scheduled
	case worker.DeadLetter:
		return to == disposition.DeadLettered || to == disposition.Held
	case worker.Release:
		return to == disposition.Queued
	case worker.Divert:
		return to == disposition.Fallback
	}
	return true
}

// ActionWords says what an attempt was told, for a violation's message.
func ActionWords(a worker.Action) string {
	switch a {
	case worker.Succeed:
		return "succeeded (to be acked)"
	case worker.Retry:
		return "to be retried (scheduled)"
	case worker.DeadLetter:
		return "to be dead-lettered (written, or held while the DLQ cannot take it)"
	case worker.Release:
		return "to be released (queued again)"
	case worker.Divert:
		return "to be diverted (to the fallback queue)"
	}
	return a.String()
}

// outcomeMove checks move e of job r against the outcome being applied,
// and notes the recovery of an expired lease.
func (l *Ledger) outcomeMove(r *Record, e disposition.Event, at time.Duration) {
	l.ResolveRefusal()
	l.noteTiming(r, e, at)
	if e.Reason == disposition.LeaseExpired {
		if l.ow.expired == nil {
			l.ow.expired = make(map[string]time.Duration)
		}
		l.ow.expired[e.JobID] = at
	}
	if l.ow.gone != nil && e.From == disposition.InFlight {
		delete(l.ow.gone, e.JobID)
	}
	c := &l.ow.cur
	if !c.pending || c.r != r || c.id != e.JobID || e.From != disposition.InFlight || at != c.at {
		return
	}
	c.pending = false
	switch {
	case c.recovered:
		l.Fail(InvOutcomeIsMove, r, "job %s: the late answer of an attempt whose lease was lost (it began at %s, its lease was recovered at %s and the job leased again) was applied: the store moved it %s → %s (%s) instead of fencing it off",
			r.id, fmtOffset(c.began), fmtOffset(l.ow.expired[r.id]), e.From, e.To, e.Reason)
	case !WantMove(c.action, e.To):
		l.Fail(InvOutcomeIsMove, r, "job %s: its attempt was told %s, but the store moved it %s → %s (%s)",
			r.id, ActionWords(c.action), e.From, e.To, e.Reason)
	}
}

// outcomeSettled is told whether the store took the outcome being applied
// to job r.
func (l *Ledger) outcomeSettled(r *Record, applied bool) {
	c := &l.ow.cur
	if !c.pending || c.r != r || r == nil || c.id != r.id {
		return
	}
	if applied {
		c.pending = false
		l.Fail(InvOutcomeIsMove, r, "job %s: the store took its attempt's outcome (%s) without an error but made no move: the job is dropped",
			r.id, ActionWords(c.action))
		return
	}
	c.refused, c.fencedBase = true, l.totals.Fenced
}

// ResolveRefusal judges the refusal of the last outcome, once the caller
// counted it as fenced (a lost lease) or not (a store failure): a success
// fenced off while its lease was still its own was lost by the store.
func (l *Ledger) ResolveRefusal() {
	c := &l.ow.cur
	if !c.pending || !c.refused {
		return
	}
	c.pending = false
	if l.totals.Fenced == c.fencedBase || c.action != worker.Succeed || c.recovered || c.expires <= c.at {
		return
	}
	r := c.r
	if r == nil || r.id != c.id {
		r = l.jobs[c.id]
	}
	if r == nil {
		return
	}
	l.Fail(InvOutcomeIsMove, r, "job %s: its attempt succeeded under a lease that was still its own (begun at %s, good until %s, never recovered), but the store fenced the completion off as a lost lease's; the job is %s instead of succeeded",
		c.id, fmtOffset(c.began), fmtOffset(c.expires), r.state)
}

// BeginOutcome is called as an attempt of job r ends, before its outcome
// (action) is applied: the ledger then checks the store's move against it
// (attempt-outcome-is-the-move). at is now; began and expires are the
// attempt's start and its lease's end. A nil r (a job the ledger does not
// hold) clears the outcome being watched.
func (l *Ledger) BeginOutcome(r *Record, action worker.Action, at, began, expires time.Duration) {
	if r == nil {
		l.ow.cur = pendingOutcome{}
		return
	}
	exp, ok := l.ow.expired[r.id]
	l.ow.cur = pendingOutcome{r: r, id: r.id, action: action, at: at, began: began,
		expires: expires, recovered: ok && exp > began, pending: true}
}

// LeaseCheckDue says whether the leases are to be looked at (CheckLeases)
// at now, lease TTL ttl: at most every recovery tick.
func (l *Ledger) LeaseCheckDue(now, ttl time.Duration) bool {
	if ttl <= 0 || now < l.ow.nextCheck {
		return false
	}
	l.ow.nextCheck = now + max(ttl/2, time.Second)
	return true
}

// CheckLeases looks for jobs in flight under a lease that expired more
// than a TTL (ttl) ago and was never recovered (no-lease-left-expired):
// held are the leases' ends the busy workers hold, by job ID (the latest,
// when a stalled worker and its successor hold one job).
func (l *Ledger) CheckLeases(now, ttl time.Duration, held map[string]time.Duration) {
	tick := max(ttl/2, time.Second)
	grace := max(ttl, tick)
	stale := false
	for id, e := range held {
		if e+grace < now {
			if r := l.jobs[id]; r != nil && r.state == disposition.InFlight {
				stale = true
			}
		}
	}
	if !stale && l.counts[disposition.InFlight] <= int64(len(held)) && len(l.ow.gone) == 0 {
		return
	}
	for _, id := range sortedKeys(l.jobs) {
		r := l.jobs[id]
		if r.state != disposition.InFlight || r.kept {
			delete(l.ow.gone, id)
			continue
		}
		expires, ok := held[id]
		if !ok {
			// Held by no worker (it crashed, or the attempt could not
			// start): the lease ran out a TTL after it was last seen held.
			if l.ow.gone == nil {
				l.ow.gone = make(map[string]time.Duration)
			}
			g, seen := l.ow.gone[id]
			if !seen {
				l.ow.gone[id] = now
				continue
			}
			expires = g + ttl
		}
		if expires+grace < now {
			l.Fail(InvNoLeaseLeftExpired, r, "job %s is still in flight at %s under a lease that expired by %s and was never recovered: it is stuck, no worker will run it again",
				id, fmtOffset(now), fmtOffset(expires))
		}
	}
}

// sortedKeys returns the IDs of jobs in order, so that violations are
// listed the same way on every run.
func sortedKeys(jobs map[string]*Record) []string {
	out := make([]string, 0, len(jobs))
	for id := range jobs {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// WatchDue keeps the times retries come due (RetriesDue): an expectation
// reads them.
func (l *Ledger) WatchDue() { l.ow.wantDue = true }

// noteTiming keeps the attempt times of watched jobs and the due times
// of retries an expectation reads.
func (l *Ledger) noteTiming(r *Record, e disposition.Event, at time.Duration) {
	switch e.Reason {
	case disposition.Leased:
		if r.watched {
			if l.ow.leases == nil {
				l.ow.leases = make(map[string][]time.Duration)
			}
			l.ow.leases[r.id] = append(l.ow.leases[r.id], at)
		}
	case disposition.Due:
		if l.ow.wantDue {
			for int(r.task) >= len(l.ow.due) {
				l.ow.due = append(l.ow.due, nil)
			}
			l.ow.due[r.task] = append(l.ow.due[r.task], at)
		}
	}
}

// Attempts returns when each attempt of job id began (its leases), oldest
// first, if the ledger kept the job: every watched job.
func (l *Ledger) Attempts(id string) ([]time.Duration, bool) {
	if _, ok := l.jobs[id]; !ok {
		return nil, false
	}
	return l.ow.leases[id], true
}

// RetriesDue returns when the scheduled retries of task i's jobs came due,
// in order, if WatchDue was called before they did.
func (l *Ledger) RetriesDue(i int) []time.Duration {
	if i < len(l.ow.due) {
		return l.ow.due[i]
	}
	return nil
}
