package memstore

import (
	"context"
	"fmt"
)

// The names of the multi-step operations a StepHook is told about.
const (
	// OpRequeueMatching is RequeueMatching.
	OpRequeueMatching = "requeue-matching"
	// OpDeleteMatching is DeleteMatching.
	OpDeleteMatching = "delete-matching"
)

// StepHook is called by a multi-step operation (RequeueMatching,
// DeleteMatching) between its steps, without the store's lock held, so that
// a test harness may play another client writing to the store inside the
// operation: step 0 is before the operation picks its entries, step n after
// its n-th batch, when entries are left to move. pending are the IDs of the
// entries the operation picked and has not moved yet, in the order it will
// move them (nil at step 0). An error stops the operation after that step;
// it returns the error wrapped.
type StepHook func(ctx context.Context, op string, step int, pending []string) error

// SetStepHook installs h, a StepHook (nil removes it). It is a test hook:
// no production code path sets one, and without one an operation costs
// nothing more. Set it before the store is used. (h's type is written out
// so that a harness may ask any store for the method.)
func (s *Store) SetStepHook(h func(ctx context.Context, op string, step int, pending []string) error) {
	s.mu.Lock()
	s.stepHook = h
	s.mu.Unlock()
}

// hookOf returns the installed StepHook, or nil.
func (s *Store) hookOf() StepHook {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stepHook
}

// interleave calls the step hook, if any, for step of op, with the IDs of
// the dents of pending; an error from it is wrapped with the step.
func (s *Store) interleave(ctx context.Context, h StepHook, op string, step int, pending []*dent) error {
	if h == nil {
		return nil
	}
	var ids []string
	if len(pending) > 0 {
		ids = make([]string, len(pending))
		for i, d := range pending {
			ids[i] = d.id
		}
	}
	if err := h(ctx, op, step, ids); err != nil {
		return fmt.Errorf("after step %d: %w", step, err)
	}
	return nil
}
