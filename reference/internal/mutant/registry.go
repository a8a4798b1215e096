package mutant

import (
	"errors"
	"slices"
)

// ErrUnknown is returned by Set for a name the registry does not hold.
var ErrUnknown = errors.New("unknown mutant")

// Class is a bug class of issue 15: the kind of defect a mutant plants,
// and so the kind of check the built-in library needs to catch it.
type Class string

// The bug classes.
const (
	// InsideOperation: a store move that is not atomic or picks its entry
	// by position — caught only by faults inside one operation.
	InsideOperation Class = "inside-an-operation"
	// Concurrent: a bulk move that races new dead letters or requeued jobs
	// dying again (no cut-off, the wrong entry).
	Concurrent Class = "concurrent-operators"
	// RetryTiming: when retries run (Retry-After, jitter, the budget).
	RetryTiming Class = "retry-timing"
	// PageContent: what leaves the process (a secret in a page, an error
	// text, a report), and what a stored payload keeps.
	PageContent Class = "page-content"
	// EntryContent: a DLQ entry's failure history and severity.
	EntryContent Class = "entry-content"
	// PerJob: a job's attempt count, alerts raised, the fallback queue,
	// breaker transitions — what per-job and per-task targeting checks.
	PerJob Class = "per-job"
	// Scale: a store that trims past a fixed cap; an indeterminate failure
	// retried without an idempotency key.
	Scale Class = "scale"
	// Verdict: a dropped job, an ack instead of a hold, a lease never
	// recovered — what the ledger's invariants name.
	Verdict Class = "clear-verdicts"
	// Decision: the failure handling's decisions themselves (a class, a
	// route, a page).
	Decision Class = "decision"
)

// Classes lists every class, in the order.
var Classes = []Class{InsideOperation, Concurrent, RetryTiming, PageContent, EntryContent, PerJob, Scale, Verdict, Decision}

// Mutant is one deliberate defect.
type Mutant struct {
	// Name is "<package>/<defect>", the argument of On at its site.
	Name string
	// Package is the reference package it lives in ("retry", "store/memstore").
	Package string
	// Class is its bug class.
	Class Class
	// Description says in a sentence what the defect does.
	Description string
}

// All returns the registry, sorted by name. The slice is the caller's.
func All() []Mutant {
	out := slices.Clone(registry)
	slices.SortFunc(out, func(a, b Mutant) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

// Lookup returns the mutant named name.
func Lookup(name string) (Mutant, bool) {
	i := slices.IndexFunc(registry, func(m Mutant) bool { return m.Name == name })
	if i < 0 {
		return Mutant{}, false
	}
	return registry[i], true
}

// registry is every mutant; see All.
var registry = []Mutant{
	{Name: "alert/drop-failed-delivery", Package: "alert", Class: Decision, Description: "a notification a sink refused with a retryable error is dropped from the outbox instead of redelivered"},
	{Name: "alert/high-as-medium", Package: "alert", Class: Decision, Description: "a job failure of severity high is alerted as medium, so it never pages"},
	{Name: "alert/no-repeat-suppression", Package: "alert", Class: Decision, Description: "a receiver is paged again for a firing alert within its repeat interval"},
	{Name: "alert/unredacted-error", Package: "alert", Class: PageContent, Description: "a notification carries the job's raw error text (summary and jobs) instead of the redacted one"},
	{Name: "classify/critical-as-permanent", Package: "classify", Class: Decision, Description: "a critical verdict is reported as permanent (the severity kept)"},
	{Name: "classify/drop-retry-after", Package: "classify", Class: RetryTiming, Description: "the dependency's Retry-After hint is dropped from the verdict"},
	{Name: "classify/ignore-scope", Package: "classify", Class: Decision, Description: "a rule scoped to a dependency or task matches everywhere"},
	{Name: "classify/last-match-wins", Package: "classify", Class: Decision, Description: "the last matching rule wins instead of the first"},
	{Name: "degrade/count-every-failure", Package: "degrade", Class: Decision, Description: "every failure counts against the breaker, a declined card and the worker's own faults included"},
	{Name: "degrade/drain-one-batch", Package: "degrade", Class: PerJob, Description: "the fallback drains one batch after the breaker closes and stops, stranding the rest"},
	{Name: "degrade/fleet-unshared", Package: "degrade", Class: Decision, Description: "a breaker its fleet shares (scope: fleet) is each process's own: it sees a share of the failures and probes on its own"},
	{Name: "degrade/never-trips", Package: "degrade", Class: Decision, Description: "the breaker never opens on consecutive failures or on the failure rate"},
	{Name: "degrade/no-hysteresis", Package: "degrade", Class: PerJob, Description: "a re-trip soon after recovering does not lengthen the next open period (no hysteresis)"},
	{Name: "degrade/probe-failure-ignored", Package: "degrade", Class: PerJob, Description: "a failed half-open probe does not re-open the breaker"},
	{Name: "dlq/merge-drops-new-failures", Package: "dlq", Class: EntryContent, Description: "a dead job's existing entry keeps its old failures and drops the new ones"},
	{Name: "memstore/bulk-no-recheck", Package: "store/memstore", Class: Concurrent, Description: "a bulk requeue moves the entries it picked without checking they are still the entries it read"},
	{Name: "memstore/divert-drops-job", Package: "store/memstore", Class: Verdict, Description: "a job diverted to the fallback queue is dropped instead of queued there"},
	{Name: "memstore/evict-without-event", Package: "store/memstore", Class: Verdict, Description: "an overflow evicts the oldest entry without its eviction event"},
	{Name: "memstore/full-dlq-drops-job", Package: "store/memstore", Class: Verdict, Description: "a dead letter a full DLQ (reject) refuses is dropped instead of held"},
	{Name: "memstore/history-replaced", Package: "store/memstore", Class: EntryContent, Description: "a job dead-lettered again replaces its entry's failure history instead of extending it"},
	{Name: "memstore/leases-never-recovered", Package: "store/memstore", Class: Verdict, Description: "an expired lease is never recovered: the job stays in flight"},
	{Name: "memstore/no-fencing", Package: "store/memstore", Class: Verdict, Description: "a completion with a stale lease token is accepted (no fencing)"},
	{Name: "memstore/requeue-by-position", Package: "store/memstore", Class: InsideOperation, Description: "a bulk requeue picks each batch by its position among the current matches, not the entries it read"},
	{Name: "memstore/requeue-ignores-budget", Package: "store/memstore", Class: PerJob, Description: "a requeue with the reset-attempts budget keeps the job's attempt count"},
	{Name: "memstore/requeue-no-cutoff", Package: "store/memstore", Class: Concurrent, Description: "a bulk requeue also picks entries that failed at or after its cut-off"},
	{Name: "memstore/retry-due-at-once", Package: "store/memstore", Class: RetryTiming, Description: "ForwardDue forwards scheduled retries before they are due"},
	{Name: "memstore/silent-trim-at-10000", Package: "store/memstore", Class: Scale, Description: "the DLQ silently drops its oldest entry once it holds 10,000"},
	{Name: "redact/bearer-kept", Package: "redact", Class: PageContent, Description: "credentials after Bearer, Basic and Token are not masked"},
	{Name: "redact/cards-kept", Package: "redact", Class: PageContent, Description: "card numbers are not masked"},
	{Name: "retry/budget-per-process", Package: "retry", Class: RetryTiming, Description: "a fleet-scoped retry budget is kept in each process instead of the store: N processes let N times the retries through"},
	{Name: "retry/canceled-uses-attempt", Package: "retry", Class: PerJob, Description: "a canceled attempt (a shutdown) is retried as a failure, using an attempt"},
	{Name: "retry/ignore-retry-after", Package: "retry", Class: RetryTiming, Description: "the Retry-After hint is ignored: backoff as if none were sent"},
	{Name: "retry/indeterminate-without-key", Package: "retry", Class: Scale, Description: "an indeterminate failure is retried without an idempotency key"},
	{Name: "retry/max-attempts-off-by-one", Package: "retry", Class: PerJob, Description: "a job gets MaxAttempts+1 attempts"},
	{Name: "retry/no-budget", Package: "retry", Class: RetryTiming, Description: "the per-dependency retry budget is not applied"},
	{Name: "retry/no-jitter", Package: "retry", Class: RetryTiming, Description: "backoff without jitter: every retry waits the full ceiling"},
	{Name: "retry/permanent-retried", Package: "retry", Class: Decision, Description: "a permanent failure (a declined card) is retried"},
	{Name: "worker/ack-instead-of-hold", Package: "worker", Class: Verdict, Description: "a dead letter the DLQ store could not take is acked instead of held"},
	{Name: "worker/autoretry-ignores-window", Package: "worker", Class: Decision, Description: "the auto-retry requeues outside its off-peak window"},
	{Name: "worker/autoretry-never-quarantines", Package: "worker", Class: PerJob, Description: "the auto-retry never quarantines a job that keeps dying"},
	{Name: "worker/autoretry-no-cutoff", Package: "worker", Class: Concurrent, Description: "the auto-retry's sweep has no cut-off: a job that dies again in the window is picked again"},
	{Name: "worker/history-per-process", Package: "worker", Class: EntryContent, Description: "each worker process keeps its own failure history instead of the fleet's: a job's entry lacks the failures of its attempts in other processes"},
	{Name: "worker/keep-last-error-only", Package: "worker", Class: EntryContent, Description: "a dead job's entry keeps only its last failure"},
	{Name: "worker/lease-closed-lanes", Package: "worker", Class: PerJob, Description: "a process leases from a queue whose every dependency's breaker is open in it, and diverts what it leased"},
	{Name: "worker/no-alert-on-dead-letter", Package: "worker", Class: Decision, Description: "a dead-lettered job raises no alert"},
	{Name: "worker/retry-keeps-attempt-count", Package: "worker", Class: PerJob, Description: "a retried job's attempt count is not advanced"},
}
