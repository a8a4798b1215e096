// Package dlqplugin is an example of the simulator's DLQ-only mode: a
// team that keeps its dead letters in its own table (here a slice behind a
// mutex, standing in for a Postgres table) but uses faultline's work queue
// plugs in just that table, as a dlq.DeadLetters, runs faultline's
// conformance suite on it (dlqtest.ExerciseDeadLetters) and runs a built-in
// scenario against it (sim.WithDLQ). The table declares delete but not
// quarantine: the suite skips the quarantine spec and the run reports the
// quarantine as not checked, instead of failing either.
package dlqplugin

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
)

// Table is a team's DLQ table: one row per dead job.
type Table struct {
	mu   sync.Mutex
	rows []dlq.Entry
	// DropEvery, when above zero, makes every DropEvery-th insert vanish
	// without an error: the bug the conformance suite and the run catch.
	DropEvery int
	inserts   int
}

var (
	_ dlq.DeadLetters = (*Table)(nil)
	_ dlq.Deleter     = (*Table)(nil)
	_ dlq.Declarer    = (*Table)(nil)
)

// Capabilities: the table deletes; it has no quarantine and no bound.
func (t *Table) Capabilities() dlq.Caps { return dlq.Caps{Delete: true} }

// Add inserts a row, or replaces the job's row (an upsert on the job ID).
func (t *Table) Add(ctx context.Context, e dlq.Entry) error {
	if err := job.Validate(&e.Job, 0); err != nil {
		return fmt.Errorf("insert %q: %w", e.Job.ID, err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.inserts++
	if t.DropEvery > 0 && t.inserts%t.DropEvery == 0 {
		return nil // the bug: the row is lost, the caller told all is well
	}
	if i := t.find(e.Job.ID); i >= 0 {
		t.rows[i] = e
		return nil
	}
	t.rows = append(t.rows, e)
	return nil
}

func (t *Table) find(id string) int {
	return slices.IndexFunc(t.rows, func(e dlq.Entry) bool { return e.Job.ID == id })
}

// List returns every row.
func (t *Table) List(ctx context.Context) ([]dlq.Entry, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.rows), nil
}

// Count returns how many rows there are.
func (t *Table) Count(ctx context.Context) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.rows), nil
}

// Requeue deletes the job's row and returns the job.
func (t *Table) Requeue(ctx context.Context, id string) (job.Job, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := t.find(id)
	if i < 0 {
		return job.Job{}, fmt.Errorf("requeue %s: %w", id, dlq.ErrNotFound)
	}
	j := t.rows[i].Job
	t.rows = slices.Delete(t.rows, i, i+1)
	return j, nil
}

// Delete deletes the job's row.
func (t *Table) Delete(ctx context.Context, id string) error {
	if _, err := t.Requeue(ctx, id); err != nil {
		return fmt.Errorf("delete %s: %w", id, dlq.ErrNotFound)
	}
	return nil
}
