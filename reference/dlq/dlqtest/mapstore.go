package dlqtest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
)

// MapStore is a small dlq.DeadLetters kept in a map under a mutex: the
// conformance suite's own subject, and a starting point for a team's. It
// declares what Caps says (each optional method answers
// dlq.ErrNotDeclared when its capability is off), and Capacity bounds it
// when Caps.Capacity is set.
type MapStore struct {
	Caps     dlq.Caps
	Capacity int

	mu      sync.Mutex
	entries map[string]dlq.Entry
}

var (
	_ dlq.DeadLetters    = (*MapStore)(nil)
	_ dlq.Deleter        = (*MapStore)(nil)
	_ dlq.RequeueMatcher = (*MapStore)(nil)
	_ dlq.Quarantiner    = (*MapStore)(nil)
	_ dlq.Declarer       = (*MapStore)(nil)
)

// Capabilities returns s.Caps.
func (s *MapStore) Capabilities() dlq.Caps { return s.Caps }

// Add stores e under its job ID, replacing the job's entry if it has one.
func (s *MapStore) Add(ctx context.Context, e dlq.Entry) error {
	if err := job.Validate(&e.Job, 0); err != nil {
		return fmt.Errorf("add %q: %w", e.Job.ID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.entries == nil {
		s.entries = map[string]dlq.Entry{}
	}
	if _, ok := s.entries[e.Job.ID]; !ok && s.Caps.Capacity && s.Capacity > 0 && len(s.entries) >= s.Capacity {
		return fmt.Errorf("add %s: %w", e.Job.ID, dlq.ErrFull)
	}
	s.entries[e.Job.ID] = e
	return nil
}

// List returns every entry, by job ID.
func (s *MapStore) List(ctx context.Context) ([]dlq.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]dlq.Entry, 0, len(s.entries))
	for _, e := range s.entries {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b dlq.Entry) int { return cmp.Compare(a.Job.ID, b.Job.ID) })
	return out, nil
}

// Count returns how many entries there are.
func (s *MapStore) Count(ctx context.Context) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries), nil
}

// Requeue removes id's entry and returns its job.
func (s *MapStore) Requeue(ctx context.Context, id string) (job.Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[id]
	if !ok {
		return job.Job{}, fmt.Errorf("requeue %s: %w", id, dlq.ErrNotFound)
	}
	delete(s.entries, id)
	return e.Job, nil
}

// Delete removes id's entry.
func (s *MapStore) Delete(ctx context.Context, id string) error {
	if !s.Caps.Delete {
		return fmt.Errorf("delete %s: %w", id, dlq.ErrNotDeclared)
	}
	_, err := s.Requeue(ctx, id)
	if err != nil {
		return fmt.Errorf("delete %s: %w", id, dlq.ErrNotFound)
	}
	return nil
}

// RequeueMatching removes up to limit entries matching f, oldest first.
func (s *MapStore) RequeueMatching(ctx context.Context, f dlq.Filter, limit int) ([]job.Job, error) {
	if !s.Caps.RequeueMatching {
		return nil, fmt.Errorf("requeue matching: %w", dlq.ErrNotDeclared)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var picked []dlq.Entry
	for _, e := range s.entries {
		if match(&e, &f) {
			picked = append(picked, e)
		}
	}
	slices.SortFunc(picked, func(a, b dlq.Entry) int {
		return cmp.Or(cmp.Compare(a.LastFailedAt.UnixMilli(), b.LastFailedAt.UnixMilli()), cmp.Compare(a.Job.ID, b.Job.ID))
	})
	picked = picked[:min(len(picked), max(limit, 0))]
	out := make([]job.Job, len(picked))
	for i, e := range picked {
		delete(s.entries, e.Job.ID)
		out[i] = e.Job
	}
	return out, nil
}

// Quarantine marks id's entry Quarantined.
func (s *MapStore) Quarantine(ctx context.Context, id, reason string) error {
	if !s.Caps.Quarantine {
		return fmt.Errorf("quarantine %s: %w", id, dlq.ErrNotDeclared)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[id]
	if !ok {
		return fmt.Errorf("quarantine %s: %w", id, dlq.ErrNotFound)
	}
	e.Status = dlq.Quarantined
	e.Changes = append(slices.Clip(e.Changes), dlq.StatusChange{At: e.LastFailedAt, From: dlq.Failed, To: dlq.Quarantined, Reason: reason})
	s.entries[id] = e
	return nil
}

// match reports whether f selects e (statuses default to Failed).
func match(e *dlq.Entry, f *dlq.Filter) bool {
	st := f.Statuses
	if len(st) == 0 {
		st = []dlq.Status{dlq.Failed}
	}
	ms := e.LastFailedAt.UnixMilli()
	return slices.Contains(st, e.Status) &&
		(len(f.Tasks) == 0 || slices.Contains(f.Tasks, e.Job.Task)) &&
		(len(f.Severities) == 0 || slices.Contains(f.Severities, e.Verdict.Severity)) &&
		(len(f.Classes) == 0 || slices.Contains(f.Classes, e.Verdict.Class)) &&
		(len(f.ErrorTypes) == 0 || slices.Contains(f.ErrorTypes, e.ErrorType())) &&
		(f.Since.IsZero() || ms >= f.Since.UnixMilli()) && (f.Until.IsZero() || ms < f.Until.UnixMilli())
}
