package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/dlq"
)

// Faults inside an operation (the catalogue's interleave model): another
// client writes to the DLQ store between the steps of one bulk requeue, or
// the requeue fails or is canceled there. Step 0 (before the operation
// picks its entries) is played by the simulator just before it calls the
// store, on every backend; a later step (between two batches) needs a store
// that tells its steps (stepHooker: the in-memory store). After the
// operation, each write the other client made is checked: the operation
// must not have undone it (legal-move).

// stepHooker is a store that calls a hook between the steps of its
// multi-step operations (memstore.Store.SetStepHook).
type stepHooker interface {
	SetStepHook(h func(ctx context.Context, op string, step int, pending []string) error)
}

// errInterleaveFailed is the error an interleave fault with write "fail"
// makes the operation return: the store connection lost mid-operation.
var errInterleaveFailed = errors.New("connection to the DLQ store lost inside the operation")

// ilFault is one interleave fault of the scenario.
type ilFault struct {
	i    int // its index in the injector
	name string
	m    faults.Interleave
}

// ilWrite is a write the other client made inside an operation, to check
// when the operation returns.
type ilWrite struct {
	fault    string
	write    string
	step     int
	id       string
	payload  []byte // edit-payload: the payload written
	requeues int    // requeue: the entry's requeue count after the write
}

// interleaver plays the other client of the scenario's interleave faults.
type interleaver struct {
	w      *world
	faults []ilFault
	// The operation under way: active, with its filter, options and instant.
	active bool
	op     string
	filter dlq.Filter
	opts   dlq.RequeueOptions
	now    time.Time
	opCtx  context.Context
	writes []ilWrite
}

// newInterleaver returns the interleaver of the scenario's interleave
// faults, nil when it has none, and hooks it into the store when the store
// tells its steps.
func newInterleaver(w *world) *interleaver {
	var fs []ilFault
	for i, f := range w.inj.Faults() {
		if m, ok := f.Model.(faults.Interleave); ok {
			fs = append(fs, ilFault{i: i, name: f.Name, m: m.WithDefaults()})
		}
	}
	if len(fs) == 0 {
		return nil
	}
	il := &interleaver{w: w, faults: fs}
	if h, ok := w.backend.(stepHooker); ok {
		h.SetStepHook(il.hook)
	}
	return il
}

// requeueMatching is s.RequeueMatching with the interleave faults of the
// operation played inside it and their writes checked after it.
func (il *interleaver) requeueMatching(ctx context.Context, s dlq.Store, f dlq.Filter, opts dlq.RequeueOptions, now time.Time, dry bool) (dlq.BulkResult, error) {
	if il == nil || dry {
		return s.RequeueMatching(ctx, f, opts, now, dry)
	}
	il.active, il.op, il.filter, il.opts, il.now, il.writes = true, faults.OpRequeueMatching, f, opts, now, il.writes[:0]
	defer func() { il.active, il.opCtx = false, nil }()
	if err := il.strike(ctx, 0, nil); err != nil {
		return dlq.BulkResult{}, fmt.Errorf("requeue matching: %w", err)
	}
	// A context of the operation's own: a store that counts an operation's
	// steps by its context (redisstore) starts counting here, and the
	// hook knows its operation by it.
	opCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	il.opCtx = opCtx
	res, err := s.RequeueMatching(opCtx, f, opts, now, dry)
	il.active, il.opCtx = false, nil
	il.check(ctx)
	return res, err
}

// hook is the store's step hook: steps after the first batch.
func (il *interleaver) hook(ctx context.Context, op string, step int, pending []string) error {
	if !il.active || ctx != il.opCtx || op != il.op || step == 0 { // step 0 is played before the call
		return nil
	}
	return il.strike(ctx, step, pending)
}

// strike plays the faults of the operation's step that strike now.
func (il *interleaver) strike(ctx context.Context, step int, pending []string) error {
	for _, f := range il.faults {
		if f.m.Operation != il.op || f.m.AfterStep != step {
			continue
		}
		if !il.w.inj.Strike(f.i, faults.Target{Kind: faults.DLQStore}, faults.Call{At: il.w.now()}) {
			continue
		}
		switch f.m.Write {
		case faults.WriteFail:
			return fmt.Errorf("fault %s: %w", f.name, errInterleaveFailed)
		case faults.WriteCancel:
			return fmt.Errorf("fault %s: %w", f.name, context.Canceled)
		}
		id, ok := il.next(ctx, pending)
		if !ok {
			continue
		}
		if err := il.write(ctx, f, step, id); err != nil {
			return fmt.Errorf("fault %s (another client's %s of %s): %w", f.name, f.m.Write, id, err)
		}
	}
	return nil
}

// next returns the entry the other client writes: the next one the
// operation will move, or before the pick the newest it would pick.
func (il *interleaver) next(ctx context.Context, pending []string) (string, bool) {
	if len(pending) > 0 {
		return pending[0], true
	}
	cursor := ""
	for {
		p, err := il.w.backend.List(ctx, il.filter, cursor, 100)
		if err != nil {
			return "", false
		}
		for _, e := range p.Entries {
			if e.Status == dlq.Failed && e.LastFailedAt.Before(il.now) {
				return e.Job.ID, true
			}
		}
		if p.Next == "" {
			return "", false
		}
		cursor = p.Next
	}
}

// write makes the other client's write of fault f to entry id, straight to
// the store (no other fault sees it), and remembers it to check.
func (il *interleaver) write(ctx context.Context, f ilFault, step int, id string) error {
	s := il.w.backend
	e, err := s.Get(ctx, id)
	if err != nil {
		return err
	}
	w := ilWrite{fault: f.name, write: f.m.Write, step: step, id: id}
	switch f.m.Write {
	case faults.WriteDelete:
		err = s.Delete(ctx, id, "other-client", il.now)
	case faults.WriteEditPayload:
		ed, ok := s.(dlq.PayloadEditor)
		if !ok {
			return fmt.Errorf("the store %T cannot edit a payload", s)
		}
		w.payload = fmt.Appendf(nil, `{"editedBy":%q}`, f.name)
		_, err = ed.EditPayload(ctx, id, w.payload, "other-client", il.now)
	case faults.WriteRequeue:
		_, err = s.Requeue(ctx, id, dlq.RequeueOptions{Budget: dlq.OneMoreAttempt, By: "other-client"}, il.now)
		w.requeues = e.Requeues + 1
	case faults.WriteDeadLetter:
		again := dlq.Entry{Job: e.Job, Verdict: e.Verdict, Reason: e.Reason, SourceQueue: e.SourceQueue}
		if n := len(e.History); n > 0 {
			last := e.History[n-1]
			last.At = il.now
			again.History = []dlq.Failure{last}
		}
		_, err = s.Add(ctx, again, il.now)
	}
	if err != nil {
		return err
	}
	il.writes = append(il.writes, w)
	return nil
}

// check fails legal-move for each write of the other client the operation
// undid.
func (il *interleaver) check(ctx context.Context) {
	for _, w := range il.writes {
		e, err := il.w.backend.Get(ctx, w.id)
		if err != nil {
			il.fail(w, "its entry is gone (%v)", err)
			continue
		}
		switch w.write {
		case faults.WriteDelete:
			if e.Status != dlq.Deleted {
				il.fail(w, "another client deleted its entry and the operation brought it back as %s from the revision it picked: a bulk move must recheck that each entry is still the one it picked", e.Status)
			}
		case faults.WriteEditPayload:
			if !bytes.Equal(e.Job.Payload, w.payload) {
				il.fail(w, "another client edited its payload and the operation put the payload it picked back (%s entry): a bulk move must recheck that each entry is still the one it picked", e.Status)
			}
		case faults.WriteRequeue:
			if e.Requeues != w.requeues {
				il.fail(w, "another client requeued it and the operation requeued it again (%d requeues, not %d): a bulk move must recheck that each entry is still the one it picked", e.Requeues, w.requeues)
			}
		case faults.WriteDeadLetter:
			if e.Status == dlq.Requeued && e.LastFailedAt.Equal(il.now) {
				il.fail(w, "it failed again at the requeue's own instant and the operation requeued it: a requeue takes only the entries that failed before its instant (its cut-off)")
			} else if e.Status == dlq.Requeued {
				il.fail(w, "it failed again during the operation and the operation requeued the revision it picked, losing the new failure: a bulk move must recheck that each entry is still the one it picked")
			}
		}
	}
}

// fail records a legal-move violation for write w.
func (il *interleaver) fail(w ilWrite, format string, args ...any) {
	where := "before the pick"
	if w.step > 0 {
		where = fmt.Sprintf("after step %d", w.step)
	}
	msg := fmt.Sprintf(format, args...)
	il.w.led.Fail(oracle.InvLegalMove, il.w.led.Job(w.id), "job %s, %s (fault %s: %s %s): %s", w.id, il.op, w.fault, w.write, where, msg)
}
