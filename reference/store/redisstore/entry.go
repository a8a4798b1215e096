package redisstore

import (
	"slices"
	"time"

	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/store"
)

// normalize returns a new entry as Add and DeadLetter store it: Failed,
// failed last at now and first at its first failure (store.FirstFailure), its source queue defaulting to the job's,
// with one status change (none→failed at now) appended.
func normalize(e dlq.Entry, now time.Time) dlq.Entry {
	e.Corrupt, e.Raw, e.DecodeError = false, nil, ""
	if e.SourceQueue == "" {
		e.SourceQueue = e.Job.QueueName()
	}
	e.FirstFailedAt, e.LastFailedAt = store.FirstFailure(e, now), store.LastFailure(e, now)
	e.Changes = append(slices.Clip(e.Changes), dlq.StatusChange{At: now, To: dlq.Failed})
	e.Status = dlq.Failed
	return e
}

// merge extends the stored entry old with a new death of its job, e
// (normalized): the job is e's (its latest copy), the history grows, the last
// failure's fields and time are e's, the first failure time and the requeue
// counts are old's, and the entry is Failed again with one status change
// (old's status→failed) appended. A corrupt old entry cannot be extended: e
// replaces it, keeping its bytes in Superseded.
func merge(old, e dlq.Entry, now time.Time) dlq.Entry {
	if old.Corrupt {
		e.Superseded = slices.Clone(old.Raw)
		return e
	}
	m := old
	m.Job = e.Job
	m.History = dlq.MergeHistory(old.History, e.History)
	m.LastFailedAt = e.LastFailedAt
	m.Verdict, m.Reason, m.SourceQueue = e.Verdict, e.Reason, e.SourceQueue
	m.Changes = append(slices.Clip(old.Changes), dlq.StatusChange{At: now, From: old.Status, To: dlq.Failed})
	m.Status = dlq.Failed
	return m
}

// match reports whether f, its ErrorText folded (dlq.FoldText), selects e. A
// corrupt entry has no fields to match: only a filter without conditions
// selects it.
func match(f dlq.Filter, e *dlq.Entry) bool {
	if e.Corrupt {
		return len(f.Severities) == 0 && len(f.Tasks) == 0 && len(f.Classes) == 0 && len(f.ErrorTypes) == 0 &&
			len(f.Statuses) == 0 && f.Since.IsZero() && f.Until.IsZero() && f.ErrorText == ""
	}
	return (len(f.Severities) == 0 || slices.Contains(f.Severities, e.Severity())) &&
		(len(f.Tasks) == 0 || slices.Contains(f.Tasks, e.Job.Task)) &&
		(len(f.Classes) == 0 || slices.Contains(f.Classes, e.Verdict.Class)) &&
		(len(f.ErrorTypes) == 0 || slices.Contains(f.ErrorTypes, e.ErrorType())) &&
		(len(f.Statuses) == 0 || slices.Contains(f.Statuses, e.Status)) &&
		(f.Since.IsZero() || !e.LastFailedAt.Before(f.Since)) &&
		(f.Until.IsZero() || e.LastFailedAt.Before(f.Until)) &&
		(f.ErrorText == "" || dlq.ContainsFold(lastError(e), f.ErrorText))
}

// lastError is the error text of e's last failure, or "".
func lastError(e *dlq.Entry) string {
	if n := len(e.History); n > 0 {
		return e.History[n-1].Error
	}
	return ""
}
