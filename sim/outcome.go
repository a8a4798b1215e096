package sim

import (
	"time"

	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/worker"
	"github.com/faultline/faultline/reports"
)

// Violation is a broken invariant. A run does not stop at one: it runs to
// its end and records every violation (at most
// reports.MaxListedViolations of each invariant listed, all counted).
type Violation = reports.Violation

// attemptEnded is called as attempt s of job r ends, before its outcome o
// is applied: the ledger then checks the store's move against it, and
// looks at the leases.
func (w *world) attemptEnded(s *slot, r *oracle.Record, o *worker.Outcome) {
	l := w.led
	l.ResolveRefusal()
	w.checkLeases(s)
	if r == nil {
		l.BeginOutcome(nil, o.Action, 0, 0, 0)
		return
	}
	l.BeginOutcome(r, o.Action, w.now(), s.att.StartedAt.Sub(w.start), s.lease.Expires.Sub(w.start))
}

// checkLeases looks, at most every recovery tick, for jobs in flight under
// a lease that expired more than a TTL ago and was never recovered: the
// ledger judges, from the leases the busy workers hold — ending's too, the
// slot whose attempt is ending (no longer busy, its lease still held until
// its outcome is applied). Without it, a job recovered from a stalled
// worker and finishing elsewhere was judged by the stalled worker's
// expired lease alone: "never recovered", though it was.
func (w *world) checkLeases(ending *slot) {
	now := w.now()
	ttl := w.sc.Workers.LeaseTTL
	if !w.led.LeaseCheckDue(now, ttl) {
		return
	}
	// The lease each job in flight is held under, by the busy workers
	// (the latest, when a stalled worker and its successor hold one job).
	held := make(map[string]time.Duration)
	for _, s := range w.slots {
		if (!s.busy && s != ending) || s.job.ID == "" {
			continue
		}
		e := s.lease.Expires.Sub(w.start)
		if h, ok := held[s.job.ID]; !ok || e > h {
			held[s.job.ID] = e
		}
	}
	w.led.CheckLeases(now, ttl, held)
}

// fmtOffset prints a virtual offset as "+1m02.500s".
func fmtOffset(d time.Duration) string {
	return "+" + d.Round(time.Millisecond).String()
}
