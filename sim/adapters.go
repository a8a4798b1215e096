package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/degrade"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/retry"
	"github.com/faultline/faultline/reference/worker"
)

// swapPolicy lets a SetRetry step replace the reference policy mid-run.
type swapPolicy struct {
	p    worker.Policy
	team bool
}

func (s *swapPolicy) Decide(a retry.Attempt, c classify.Classification, now time.Time) retry.Decision {
	return s.p.Decide(a, c, now)
}

// breakerRouter routes through a team's breaker.
type breakerRouter struct{ b Breaker }

func (r breakerRouter) Route() degrade.Route {
	p, err := r.b.Allow()
	return degrade.Route{Primary: err == nil, Permit: p, Reason: err}
}

// faultyDLQ puts the DLQ-store faults in front of the store's DLQ side.
type faultyDLQ struct {
	dlq.Store
	w *world
}

func (f *faultyDLQ) fault(id string) error {
	eff := f.w.inj.Call(faults.Target{Kind: faults.DLQStore}, faults.Call{At: f.w.now(), JobID: id})
	if eff.Err != nil {
		return fmt.Errorf("dlq store (fault %s): %w", eff.Fault, eff.Err)
	}
	return nil
}

// DeadLetter writes the entry unless the store is down.
func (f *faultyDLQ) DeadLetter(ctx context.Context, l queue.Lease, e dlq.Entry, now time.Time) (dlq.AddResult, error) {
	if err := f.faultDeadLetter(e.Job); err != nil {
		return dlq.AddResult{}, err
	}
	return f.Store.DeadLetter(ctx, l, e, now)
}

// FlushHeld writes held dead letters unless the store is down. (Hold is the
// queue store's side of the move: it is not faulted.)
func (f *faultyDLQ) FlushHeld(ctx context.Context, now time.Time, limit int) (dlq.FlushResult, error) {
	if err := f.fault(""); err != nil {
		return dlq.FlushResult{}, err
	}
	return f.Store.FlushHeld(ctx, now, limit)
}

// RequeueMatching requeues unless the store is down.
func (f *faultyDLQ) RequeueMatching(ctx context.Context, flt dlq.Filter, opts dlq.RequeueOptions, now time.Time, dry bool) (dlq.BulkResult, error) {
	if err := f.fault(""); err != nil {
		return dlq.BulkResult{}, err
	}
	return f.w.il.requeueMatching(ctx, f.Store, flt, opts, now, dry)
}

// Requeue requeues one entry unless the store is down.
func (f *faultyDLQ) Requeue(ctx context.Context, id string, opts dlq.RequeueOptions, now time.Time) (dlq.RequeueOutcome, error) {
	if err := f.fault(id); err != nil {
		return 0, err
	}
	return f.Store.Requeue(ctx, id, opts, now)
}

// List lists unless the store is down.
func (f *faultyDLQ) List(ctx context.Context, flt dlq.Filter, cursor string, limit int) (dlq.Page, error) {
	if err := f.fault(""); err != nil {
		return dlq.Page{}, err
	}
	return f.Store.List(ctx, flt, cursor, limit)
}

// Stats reads the counters unless the store is down.
func (f *faultyDLQ) Stats(ctx context.Context) (dlq.Stats, error) {
	if err := f.fault(""); err != nil {
		return dlq.Stats{}, err
	}
	return f.Store.Stats(ctx)
}

// Purge purges unless the store is down.
func (f *faultyDLQ) Purge(ctx context.Context, olderThan, now time.Time) (int, error) {
	if err := f.fault(""); err != nil {
		return 0, err
	}
	return f.Store.Purge(ctx, olderThan, now)
}

// Delete deletes unless the store is down.
func (f *faultyDLQ) Delete(ctx context.Context, id, by string, now time.Time) error {
	if err := f.fault(id); err != nil {
		return err
	}
	return f.Store.Delete(ctx, id, by, now)
}

// Quarantine quarantines unless the store is down.
func (f *faultyDLQ) Quarantine(ctx context.Context, id, reason string, now time.Time) error {
	if err := f.fault(id); err != nil {
		return err
	}
	return f.Store.Quarantine(ctx, id, reason, now)
}

// recordingSink is an alert receiver's sink: alert-sink faults refuse
// sends; accepted ones are recorded and checked.
type recordingSink struct {
	w    *world
	name string
}

// Send delivers n unless an alert-sink fault refuses it.
func (s *recordingSink) Send(_ context.Context, n alert.Notification) error {
	eff := s.w.inj.Call(faults.Target{Kind: faults.AlertSink, Name: s.name}, faults.Call{At: s.w.now()})
	if eff.Err != nil {
		s.w.chk.Pages.Refused()
		err := fmt.Errorf("alert sink %s (fault %s): %w", s.name, eff.Fault, eff.Err)
		if s.w.rec != nil {
			s.w.recordDelivery(s.name, n, err)
		}
		return err
	}
	if s.w.rec != nil {
		s.w.recordDelivery(s.name, n, nil)
	}
	s.w.deliver(s.name, n)
	return nil
}
