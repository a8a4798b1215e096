package oracle

import (
	"fmt"
	"slices"
	"strings"

	"github.com/faultline/faultline/layout"
)

// shrinks are the declared ways out of the DLQ: the scenario's (judged
// again with `report check --scenario`, its own), else the history's.
func (b *blackJudge) shrinks() []string {
	if x := b.sc.System.External; x != nil {
		return x.DLQShrinks
	}
	return b.x.DLQShrinks
}

func shrinkNote(declared []string) string {
	if len(declared) == 0 {
		return "no mechanism declared (system.external.dlqShrinks): every entry that leaves the DLQ is a violation"
	}
	return "declared: " + strings.Join(declared, ", ") + " — entries leaving the DLQ are counted, not failed"
}

// capNote names the cap an undeclared shrink looks like: entries that
// left one list from its tail (each at a position in its far half), the
// deepest at position N−1, are what a cap of N entries drops (the seed's
// LTRIM to 10,000). "" when the removals show none.
func (b *blackJudge) capNote() string {
	if len(b.shrinks()) > 0 {
		return ""
	}
	type list struct{ n, shallowest, deepest int }
	lists := map[string]*list{}
	var names []string
	for _, r := range b.x.Reads {
		for _, it := range r.Removed {
			open := strings.LastIndexByte(it.Source, '[')
			var idx int
			if open < 0 || !strings.HasSuffix(it.Source, "]") {
				return ""
			}
			if _, err := fmt.Sscanf(it.Source[open+1:len(it.Source)-1], "%d", &idx); err != nil {
				return ""
			}
			name := it.Source[:open]
			l := lists[name]
			if l == nil {
				l = &list{shallowest: idx}
				lists[name] = l
				names = append(names, name)
			}
			l.n++
			l.shallowest, l.deepest = min(l.shallowest, idx), max(l.deepest, idx)
		}
	}
	var caps []string
	for _, name := range names {
		l := lists[name]
		n := l.deepest + 1
		if l.n >= 2 && n >= 2 && l.shallowest >= n/2 { // every one from the far half: the tail
			caps = append(caps, fmt.Sprintf("%d entries left %s from its tail, the deepest at position %s: a cap of %s entries (such as LTRIM %s 0 %d) drops the oldest dead letters silently",
				l.n, name, thousands(n-1), thousands(n), name, n-1))
		}
	}
	if len(caps) == 0 {
		return ""
	}
	return "; " + strings.Join(caps, "; ")
}

// thousands writes n with a comma every three digits: 10,000.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// reads replays the DLQ's reads: an entry seen twice for one job, an
// entry leaving by no declared mechanism.
func (b *blackJudge) reads() {
	cur := map[string]int{}
	allowed := len(b.shrinks()) > 0
	reads := b.x.Reads
	addedAt := func(k int, id string) bool {
		if k >= len(reads) {
			return false
		}
		return slices.ContainsFunc(reads[k].Added, func(it DLQItem) bool { return it.JobID == id })
	}
	for k, r := range reads {
		for _, it := range r.Added {
			j := b.jobs[it.JobID]
			if j == nil {
				continue // not a job of the drill's
			}
			cur[it.JobID]++
			if !j.everDLQ {
				j.everDLQ, j.firstDLQ = true, r.AtMs
				if k > 0 {
					j.dlqAfter = reads[k-1].AtMs
				}
			}
		}
		for _, it := range r.Removed {
			j := b.jobs[it.JobID]
			if j == nil {
				continue
			}
			cur[it.JobID]--
			if addedAt(k+1, it.JobID) {
				continue // moved (from one list to another) between two reads
			}
			j.leftDLQ = true
			if !allowed {
				b.fail(InvDLQNeverShrinks, it.JobID, r.AtMs, "job %s's entry left the DLQ by %s (it was at %s): the DLQ shrank and the scenario declares no way it may (dlqShrinks) — a trim (LTRIM), a cap or an expiry drops dead letters silently", it.JobID, fmtMs(r.AtMs), it.Source)
			}
		}
		// Two entries for one job, seen by two reads in a row (not a
		// move caught half-way) or at the end.
		for _, it := range r.Added {
			j := b.jobs[it.JobID]
			if j == nil || j.dupSeen || cur[it.JobID] < 2 {
				continue
			}
			if k+1 < len(reads) && slices.ContainsFunc(reads[k+1].Removed, func(x DLQItem) bool { return x.JobID == it.JobID }) {
				continue
			}
			j.dupSeen = true
			b.fail(InvOneDLQEntry, it.JobID, r.AtMs, "job %s has two entries in the DLQ at %s (the second at %s): one failed job, one entry — a retry that dead-letters again must replace its entry, not add one", it.JobID, fmtMs(r.AtMs), it.Source)
		}
	}
}

// severities: a job dead-lettered after a critical answer has an entry
// of high (or critical) severity.
func (b *blackJudge) severities() {
	for _, id := range b.order {
		j := b.jobs[id]
		if j.inDLQ == 0 || len(j.calls) == 0 {
			continue
		}
		last := j.calls[len(j.calls)-1]
		if last.Class != "critical" {
			continue
		}
		if s := strings.ToLower(j.severity); s != "" && s != "high" && s != "critical" {
			b.fail(InvDLQSeverity, id, b.h.EndedMs, "job %s was dead-lettered after %s but its entry's severity is %s: a critical failure's entry says high, so the DLQ's triage shows it first", id, answer(last), s)
		}
	}
}

// entriesComplete: every dead letter of a drill's job carries the job,
// its error, its attempt count and when it failed (at the layout's paths,
// else the seed's names) — what an operator triages by.
func (b *blackJudge) entriesComplete() {
	var f layout.Fields
	if x := b.sc.System.External; x != nil {
		f = x.DLQ.Resolved().Fields
	}
	for _, e := range b.x.Entries {
		if e.Corrupt != "" || e.Inactive || b.jobs[e.JobID] == nil {
			continue
		}
		if miss := layout.MissingMetadata(e.Raw, f); len(miss) > 0 {
			b.fail(InvDLQEntryComplete, e.JobID, b.h.EndedMs, "job %s's DLQ entry (%s) lacks %s: an operator cannot triage a dead letter without its error, attempts and time — the seed's DeadLetterHandler stores all three",
				e.JobID, e.Source, strings.Join(miss, ", "))
		}
	}
}
