package faults

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/faultline/faultline/internal/didyoumean"
	"github.com/faultline/faultline/reference/classify"
)

// The multi-step DLQ-store operations an Interleave strikes inside.
const (
	// OpRequeueMatching is a bulk requeue (an operator's requeue step, the
	// auto-retry's run).
	OpRequeueMatching = "requeue-matching"
	// OpDeleteMatching is a bulk delete (the store's DeleteMatching).
	OpDeleteMatching = "delete-matching"
)

// What the other client does inside the operation (Interleave.Write).
const (
	// WriteDelete soft-deletes the next entry the operation picked (before
	// the pick: the newest entry it would pick).
	WriteDelete = "delete"
	// WriteEditPayload replaces that entry's payload.
	WriteEditPayload = "edit-payload"
	// WriteRequeue requeues that entry on its own.
	WriteRequeue = "requeue"
	// WriteDeadLetter has that entry's job fail again at the operation's own
	// instant (its last failure becomes the operation's now).
	WriteDeadLetter = "dead-letter"
	// WriteFail makes the operation fail after the step, as a store
	// connection lost mid-operation.
	WriteFail = "fail"
	// WriteCancel cancels the operation after the step.
	WriteCancel = "cancel"
)

var (
	interleaveOps    = []string{OpRequeueMatching, OpDeleteMatching}
	interleaveWrites = []string{WriteDelete, WriteEditPayload, WriteRequeue, WriteDeadLetter, WriteFail, WriteCancel}
)

// Interleave is a fault inside one multi-step operation of the DLQ store:
// after the operation's AfterStep-th step (0: before it picks its entries;
// n: after its n-th batch), another client writes to the store, or the
// operation fails or is canceled. It needs a store that tells the harness
// its steps (the in-memory store's step hook); it strikes each time the
// operation reaches that step while the fault's schedule is on. Calls to the
// store from outside an operation never hit it.
type Interleave struct {
	// Operation is the operation struck: "requeue-matching" (default) or
	// "delete-matching".
	Operation string
	// AfterStep is the step after which the other client writes: 0 before
	// the pick, n after the n-th batch.
	AfterStep int
	// Write is what happens: fail (default: the operation's connection is
	// lost there), cancel, or another client's delete, edit-payload,
	// requeue or dead-letter (the job fails again at the operation's own
	// instant) of the next entry the operation picked.
	Write string
}

var (
	_ Model  = Interleave{}
	_ binder = Interleave{}
)

// Name returns "interleave".
func (Interleave) Name() string { return "interleave" }

// Class returns classify.Transient, the class of the error a failed
// operation returns (the default write, fail: a lost connection); the
// other writes inject no error.
func (Interleave) Class() classify.Class { return classify.Transient }

// Targets returns DLQStore.
func (Interleave) Targets() []TargetKind { return []TargetKind{DLQStore} }

// WithDefaults returns the model with its zero parameters set to their
// defaults.
func (m Interleave) WithDefaults() Interleave {
	if m.Operation == "" {
		m.Operation = OpRequeueMatching
	}
	if m.Write == "" {
		m.Write = WriteFail
	}
	return m
}

// Validate checks the operation, the step and the write.
func (m Interleave) Validate() error {
	m = m.WithDefaults()
	var op, step, write error
	if !slices.Contains(interleaveOps, m.Operation) {
		op = &FieldError{Field: "operation", Msg: fmt.Sprintf("expected one of %s, got %q", strings.Join(interleaveOps, ", "), m.Operation), Hint: suggestHint(m.Operation, interleaveOps)}
	}
	if m.AfterStep < 0 {
		step = &FieldError{Field: "afterStep", Msg: fmt.Sprintf("must be ≥ 0 (0 is before the pick, n after the n-th batch), got %d", m.AfterStep)}
	}
	if !slices.Contains(interleaveWrites, m.Write) {
		write = &FieldError{Field: "write", Msg: fmt.Sprintf("expected one of %s, got %q", strings.Join(interleaveWrites, ", "), m.Write), Hint: suggestHint(m.Write, interleaveWrites)}
	}
	return joinErrs(op, step, write)
}

// Apply returns no effect: what an Interleave does is carried out by the
// harness at the operation's step (see Injector.Strike).
func (m Interleave) Apply(Call, *rand.Rand) Effect { return Effect{} }

func (m Interleave) bind(binding) applier { return &fixed{} }

// inside reports that the model strikes inside an operation, not on a call.
func (Interleave) inside() bool { return true }

// insider is a model that strikes inside an operation: the Injector's Call
// never hits it; the harness asks Strike at the operation's steps.
type insider interface{ inside() bool }

// isInside reports whether m strikes inside an operation.
func isInside(m Model) bool {
	i, ok := m.(insider)
	return ok && i.inside()
}

// Strike reports whether fault i (an index into the faults NewInjector
// took), a model that strikes inside an operation (Interleave), strikes now:
// its target matches t and its schedule, job set, call budget and
// probability (drawn from its own stream only) say so. A strike counts as a
// hit. Other faults' streams are never drawn.
func (in *Injector) Strike(i int, t Target, c Call) bool {
	if i < 0 || i >= len(in.st) || !isInside(in.faults[i].Model) {
		return false
	}
	f := &in.st[i]
	if f.target.Kind != t.Kind || (f.target.Name != "" && f.target.Name != t.Name) {
		return false
	}
	_, ok := f.hit(c, millisFloor(c.At))
	return ok
}

// suggestHint is a "did you mean" hint for s among names, or "".
func suggestHint(s string, names []string) string {
	if best := didyoumean.Closest(normalize(s), names); best != "" {
		return fmt.Sprintf("did you mean %q?", best)
	}
	return ""
}
