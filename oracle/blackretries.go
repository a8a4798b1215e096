package oracle

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/faultline/faultline/scenarios"
)

// Policy is a black-box system's retry policy as its history records the
// scenario's declaration (scenarios.ExternalPolicy).
type Policy struct {
	MaxAttempts       int   `json:"maxAttempts"`
	MinBackoffMs      int64 `json:"minBackoffMs,omitempty"`
	Jitter            bool  `json:"jitter,omitempty"`
	HonoursRetryAfter bool  `json:"honoursRetryAfter,omitempty"`
}

// PolicyOf is p as a history records it (nil for nil).
func PolicyOf(p *scenarios.ExternalPolicy) *Policy {
	if p == nil {
		return nil
	}
	return &Policy{MaxAttempts: p.MaxAttempts, MinBackoffMs: p.MinBackoff.Milliseconds(), Jitter: p.Jitter, HonoursRetryAfter: p.HonoursRetryAfter}
}

// policy is the declared retry policy the judge holds the system to: the
// scenario's (judged again with `report check --scenario`, its own), else
// the history's; nil when none is declared.
func (b *blackJudge) policy() *Policy {
	if x := b.sc.System.External; x != nil {
		return PolicyOf(x.Policy)
	}
	return b.x.Policy
}

// jitterInstant is how close failures, and their retries, are to count as
// one instant for the jitter rule; jitterJobs how many jobs must have
// failed at one instant for it to judge.
const (
	jitterInstant = 10
	jitterJobs    = 5
	// hotLoopRetries is how many retries a drill must see before a
	// declared full jitter is judged for a hot loop (nine in ten within
	// scenarios.HotLoop).
	hotLoopRetries = 5
)

// retryGap is one retry of a job: its failed call at failAt, the next call
// at next.
type retryGap struct {
	job          string
	failAt, next int64
}

// herds judges the declared jitter: jobs that failed at one instant
// (jitterJobs or more within jitterInstant) and were all called again at
// one instant, failed there together and were all called again at one
// instant once more, retry without jitter. One such round alone is not
// judged: a system that promotes due retries by polling (the reference's
// maintenance tick, Sidekiq's scheduled-set poller) runs the retries due
// within one poll together, and a jittered backoff lands five of them in
// one poll now and then — but not twice running, while a fixed backoff
// does every time.
func (b *blackJudge) herds(rs []retryGap) {
	slices.SortFunc(rs, func(a, b retryGap) int { return cmp.Compare(a.failAt, b.failAt) })
	// retryAt finds a job's retry whose failed call was at ms.
	retryAt := func(job string, ms int64) (retryGap, bool) {
		i, found := slices.BinarySearchFunc(rs, ms, func(r retryGap, t int64) int { return cmp.Compare(r.failAt, t) })
		for ; found && i < len(rs) && rs[i].failAt == ms; i++ {
			if rs[i].job == job {
				return rs[i], true
			}
		}
		return retryGap{}, false
	}
	// herd says group's retries all came within one instant, and returns
	// when.
	herd := func(group []retryGap) (int64, bool) {
		jobs := map[string]bool{}
		lo, hi := group[0].next, group[0].next
		for _, r := range group {
			jobs[r.job] = true
			lo, hi = min(lo, r.next), max(hi, r.next)
		}
		return lo, len(jobs) >= jitterJobs && hi-lo < jitterInstant
	}
	for i := 0; i < len(rs); {
		k := i
		for k < len(rs) && rs[k].failAt-rs[i].failAt < jitterInstant {
			k++
		}
		group := rs[i:k]
		i = k
		at, ok := herd(group)
		if !ok {
			continue
		}
		// The same jobs, again: each retry failed, and was retried.
		var again []retryGap
		for _, r := range group {
			if next, ok := retryAt(r.job, r.next); ok {
				again = append(again, next)
			}
		}
		if len(again) < len(group) {
			continue
		}
		if at2, ok := herd(again); ok {
			b.fail(InvAttempts, group[0].job, at2, "%d jobs failed within %dms at %s, were all called again within %dms at %s, failed together and were all called again within %dms at %s: the declared jitter spreads retries so that a recovering dependency is not struck by all of them at once",
				len(group), jitterInstant, fmtMs(group[0].failAt), jitterInstant, fmtMs(at), jitterInstant, fmtMs(at2))
		}
	}
}

// failed says a call's answer told the caller it failed.
func failed(c Call) bool { return !answeredOK(c) }

// transient says a failed call's failure was one a retry may cure.
func transient(c Call) bool {
	switch c.Outcome {
	case "timeout", "dropped", "refused":
		return true
	}
	return c.Class == "transient"
}

// retries judges each job's calls against the declared retry policy
// (attempts-within-policy: no more attempts than maxAttempts, waits of at
// least minBackoff, spread retries when jitter, a Retry-After waited out
// when honoursRetryAfter; transient-retried: no
// transient failure dead-lettered before its attempts were used), or,
// with none declared, against the hot-loop rule: no call within
// scenarios.HotLoop of a failed one. A chain of attempts starts again
// after a redelivery (a copy killed or stalled, a store fault) and stops
// at the job's success; a job that left the DLQ by a declared mechanism
// is judged only for its waits.
func (b *blackJudge) retries() string {
	pol := b.policy()
	minGap := scenarios.HotLoop.Milliseconds()
	if pol != nil {
		minGap = pol.MinBackoffMs
	}
	wins := b.systemFaultWindows()
	var rs []retryGap
	for _, id := range b.order {
		j := b.jobs[id]
		attempts, short, over, redelivered, early := 0, 0, false, false, false
		var firstShort retryGap
		var last *Call
		for i := range j.calls {
			c := &j.calls[i]
			if last != nil && answeredOK(*last) {
				break // a call after a success is judged by no-move-after-success
			}
			redo := last != nil && b.redelivery(last.AtMs, c.AtMs, wins) != ""
			if redo {
				attempts, redelivered = 0, true
			}
			attempts++
			if pol != nil && pol.HonoursRetryAfter && last != nil && failed(*last) && !redo && !early &&
				last.RetryAfterMs > 0 && c.AtMs-last.AtMs < last.RetryAfterMs {
				early = true
				b.fail(InvAttempts, id, c.AtMs, "job %s was answered %s at %s with Retry-After %s and called again %s later: the declared policy honours Retry-After — a dependency that asks for a pause is given it",
					id, answer(*last), fmtMs(last.AtMs), time.Duration(last.RetryAfterMs)*time.Millisecond, time.Duration(c.AtMs-last.AtMs)*time.Millisecond)
			}
			if last != nil && failed(*last) && !redo { // a redelivery is the queue's, not a retry
				rs = append(rs, retryGap{id, last.AtMs, c.AtMs})
				if c.AtMs-last.AtMs < minGap {
					if short == 0 {
						firstShort = retryGap{id, last.AtMs, c.AtMs}
					}
					short++
				}
			}
			if pol != nil && attempts > pol.MaxAttempts && !j.leftDLQ && !over {
				over = true
				b.fail(InvAttempts, id, c.AtMs, "job %s was called %d times by %s (%s), past the declared maxAttempts %d: a job is given its attempts, never more",
					id, attempts, fmtMs(c.AtMs), answer(*c), pol.MaxAttempts)
			}
			last = c
		}
		if short > 0 {
			why := fmt.Sprintf("a retry without backoff (a hot loop): with no retry policy declared, no two calls of one job come within %s of a failed one — declare system.external.policy if this is the system's design", scenarios.HotLoop)
			if pol != nil {
				why = fmt.Sprintf("the declared policy waits at least %s", time.Duration(pol.MinBackoffMs)*time.Millisecond)
			}
			b.fail(InvAttempts, id, firstShort.next, "job %s was called again %s after its call at %s failed (%d such retr%s): %s",
				id, time.Duration(firstShort.next-firstShort.failAt)*time.Millisecond, fmtMs(firstShort.failAt), short, plural(int64(short), "y", "ies"), why)
		}
		// A redelivered job's attempts are the system's to count (one may
		// have ended in a crash before its call): not judged here.
		if pol != nil && last != nil && failed(*last) && transient(*last) && j.everDLQ && !j.leftDLQ && !redelivered && attempts < pol.MaxAttempts {
			b.fail(InvTransientRetried, id, j.firstDLQ, "job %s was dead-lettered after %d attempt(s), the last at %s answered %s, although the declared policy gives it %d: a transient failure is retried before it is given up",
				id, attempts, fmtMs(last.AtMs), answer(*last), pol.MaxAttempts)
		}
	}
	if pol != nil && pol.Jitter && pol.MinBackoffMs == 0 && len(rs) >= hotLoopRetries {
		// A declared jitter with no floor (full jitter) may wait next to
		// nothing once in a while, never nearly always: nine retries in
		// ten within the hot-loop gap are a loop with no backoff.
		var hot []retryGap
		for _, r := range rs {
			if r.next-r.failAt < scenarios.HotLoop.Milliseconds() {
				hot = append(hot, r)
			}
		}
		if 10*len(hot) >= 9*len(rs) {
			b.fail(InvAttempts, hot[0].job, hot[0].next, "%d of the drill's %d retries came within %s of the failure before them (the first: job %s, again %s after its call at %s failed): a jittered backoff spreads its waits, this is a retry without backoff (a hot loop) — declare minBackoff to judge a floor instead",
				len(hot), len(rs), scenarios.HotLoop, hot[0].job, time.Duration(hot[0].next-hot[0].failAt)*time.Millisecond, fmtMs(hot[0].failAt))
		}
	}
	if pol != nil && pol.Jitter {
		b.herds(rs)
	}
	if pol == nil {
		return fmt.Sprintf("no retry policy declared (system.external.policy): only the hot-loop rule was judged — no call of a job within %s of a failed one", scenarios.HotLoop)
	}
	parts := []string{fmt.Sprintf("maxAttempts %d", pol.MaxAttempts), fmt.Sprintf("minBackoff %s", time.Duration(pol.MinBackoffMs)*time.Millisecond)}
	if pol.Jitter {
		parts = append(parts, "jitter")
	}
	if pol.HonoursRetryAfter {
		parts = append(parts, "honours Retry-After")
	}
	return "declared: " + strings.Join(parts, ", ")
}
