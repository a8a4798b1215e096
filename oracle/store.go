package oracle

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reports"
)

// Store is what the oracle reads of a run's store: its counts, and its
// DLQ's stats and entries. The simulator gives its store; the ledger's
// judge of a drill, the snapshots and the DLQ the history recorded.
type Store interface {
	Counts(ctx context.Context) (queue.Counts, error)
	Stats(ctx context.Context) (dlq.Stats, error)
	List(ctx context.Context, f dlq.Filter, cursor string, n int) (dlq.Page, error)
}

// Reconcile checks the ledger against the store's own counts (conservation
// at every sample) and, when the DLQ's count differs from the ledger's or
// at the end (full), against its listing (one entry per dead-lettered
// job). It returns the counts it read, and false when the store did not
// answer (an outage: the next sample checks again).
func Reconcile(ctx context.Context, led *Ledger, s Store, full bool) (queue.Counts, dlq.Stats, bool) {
	c, err := s.Counts(ctx)
	if err != nil {
		return c, dlq.Stats{}, false
	}
	led.CheckCounts(int64(c.Held), int64(c.Queued), int64(c.InFlight), int64(c.Scheduled), int64(c.Fallback))
	st, err := s.Stats(ctx)
	if err != nil {
		return c, st, false
	}
	inDLQ := int64(st.ByStatus[dlq.Failed.String()] + st.ByStatus[dlq.Quarantined.String()] + st.ByStatus[dlq.Deleted.String()] + st.Corrupt)
	// A difference is reported once until it changes; the DLQ is listed
	// when it is new, and at the end.
	fresh := led.DLQDiffers(inDLQ)
	if !fresh && !full {
		return c, st, true
	}
	// List the DLQ: which dead-lettered job has no entry, or two?
	seen := map[string]int{}
	cursor := ""
	for {
		p, err := s.List(ctx, dlq.Filter{}, cursor, 1000)
		if err != nil {
			return c, st, true
		}
		for _, e := range p.Entries {
			seen[e.Job.ID]++
		}
		if p.Next == "" {
			break
		}
		cursor = p.Next
	}
	led.CheckDLQ(seen, inDLQ, fresh)
	return c, st, true
}

// MaxDLQEntries is how many DLQ entries a result lists (all are counted).
const MaxDLQEntries = 100

// DLQSummary is the result's account of the DLQ at the end: its stats and
// its first MaxDLQEntries entries by job ID, times as offsets from start.
func DLQSummary(ctx context.Context, s Store, start time.Time) reports.DLQ {
	out := reports.DLQ{ByStatus: map[string]int{}, BySeverity: map[string]int{}, Entries: []reports.DLQEntry{}}
	st, err := s.Stats(ctx)
	if err != nil {
		return out
	}
	out.Total, out.Corrupt = st.Total, st.Corrupt
	for k, v := range st.ByStatus {
		out.ByStatus[k] = v
	}
	for k, v := range st.BySeverity {
		out.BySeverity[k] = v
	}
	var all []dlq.Entry
	cursor := ""
	for {
		p, err := s.List(ctx, dlq.Filter{}, cursor, 1000)
		if err != nil {
			break
		}
		all = append(all, p.Entries...)
		if p.Next == "" {
			break
		}
		cursor = p.Next
	}
	slices.SortFunc(all, func(a, b dlq.Entry) int { return strings.Compare(a.Job.ID, b.Job.ID) })
	if len(all) > MaxDLQEntries {
		all, out.Truncated = all[:MaxDLQEntries], true
	}
	for _, e := range all {
		last := ""
		if n := len(e.History); n > 0 {
			last = e.History[n-1].Error
		}
		out.Entries = append(out.Entries, reports.DLQEntry{
			JobID: e.Job.ID, Task: e.Job.Task, Status: e.Status.String(), Class: e.Verdict.Class.String(),
			Severity: e.Verdict.Severity.String(), Rule: e.Verdict.Rule, Attempts: e.Job.Attempts, Reason: e.Reason,
			Error: last, FirstFailedAtMs: e.FirstFailedAt.Sub(start).Milliseconds(), LastFailedAtMs: e.LastFailedAt.Sub(start).Milliseconds(),
		})
	}
	return out
}

// Lost counts the jobs made (made) that the store does not hold and that
// did not succeed or leave the DLQ with an event.
func Lost(ctx context.Context, led *Ledger, s Store, made int64) int64 {
	c, err := s.Counts(ctx)
	if err != nil {
		return 0
	}
	st, err := s.Stats(ctx)
	if err != nil {
		return 0
	}
	held := int64(c.Queued+c.InFlight+c.Scheduled+c.Fallback+c.Held) +
		int64(st.ByStatus[dlq.Failed.String()]+st.ByStatus[dlq.Quarantined.String()]+st.ByStatus[dlq.Deleted.String()]+st.Corrupt)
	return max(made-held-led.Count(disposition.Succeeded)-led.Count(Removed), 0)
}
