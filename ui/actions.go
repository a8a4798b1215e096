package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
)

// The tools an action is taken through, for the audit stream.
const (
	viaUI  = "ui"
	viaAPI = "api"
)

// The bulk actions.
const (
	actionRequeue = "requeue"
	actionDelete  = "delete"
)

// maxIDs bounds a selection of entries, and auditIDs the IDs an audit
// record names.
const (
	maxIDs   = 1000
	auditIDs = 100
)

// InputError is a request field that is missing or malformed.
type InputError struct {
	// Field is the form field or JSON key.
	Field string
	// Reason says what is wrong.
	Reason string
}

func (e *InputError) Error() string { return e.Field + ": " + e.Reason }

// UnavailableError says an action needs an optional store interface the
// store does not implement.
type UnavailableError struct {
	// Action is the action asked for; Interface the one it needs.
	Action, Interface string
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("%s is unavailable: this store does not implement %s", e.Action, e.Interface)
}

// httpStatus maps an action's error to its HTTP status and the field it
// names, if any.
func httpStatus(err error) (int, string) {
	var (
		fe *dlq.FieldError
		ie *InputError
		ue *UnavailableError
	)
	switch {
	case errors.As(err, &fe):
		return http.StatusBadRequest, fe.Field
	case errors.As(err, &ie):
		return http.StatusBadRequest, ie.Field
	case errors.As(err, &ue):
		return http.StatusNotImplemented, ""
	case errors.Is(err, dlq.ErrNotFound), errors.Is(err, errSeedGone):
		return http.StatusNotFound, ""
	case errors.Is(err, ErrReadOnly):
		return http.StatusForbidden, ""
	case errors.Is(err, dlq.ErrChanged), errors.Is(err, dlq.ErrWrongStatus):
		return http.StatusConflict, ""
	case errors.Is(err, job.ErrInvalid):
		return http.StatusBadRequest, "payload"
	case errors.Is(err, dlq.ErrInvalidOptions):
		return http.StatusBadRequest, "budget"
	case unreachable(err), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, ""
	}
	return http.StatusInternalServerError, ""
}

// actionLine is one action as the server's stdout gets it.
type actionLine struct {
	dlq.AuditRecord
	AuditError string `json:"audit_error,omitempty"`
	Error      string `json:"error,omitempty"`
}

// record writes rec to the audit stream (when the store keeps one) and as
// one JSON line to the log, and returns the audit ID. failed is the
// action's own error, if any (recorded in the log line).
func (s *server) record(ctx context.Context, rec dlq.AuditRecord, failed error) (string, error) {
	if rec.At.IsZero() {
		rec.At = s.cfg.Now()
	}
	if len(rec.IDs) > auditIDs {
		rec.IDs = rec.IDs[:auditIDs]
	}
	// An operator's note or filter may quote a secret (a reason pasting a
	// password, --error-text holding a key): neither the stream nor the
	// log keeps it.
	rec.Note, rec.Filter = maskText(rec.Note), maskText(rec.Filter)
	line := actionLine{AuditRecord: rec}
	var aerr error
	if a, ok := s.auditor(); ok {
		rec.ID, aerr = a.Audit(ctx, rec)
		line.ID = rec.ID
		if aerr != nil {
			aerr = fmt.Errorf("write the audit record: %w", aerr)
			line.AuditError = maskText(aerr.Error())
		}
	} else {
		line.AuditError = "the store keeps no audit stream (dlq.Auditor)"
	}
	if failed != nil {
		line.Error = maskText(failed.Error())
	}
	b, err := json.Marshal(line)
	if err == nil {
		s.logMu.Lock()
		_, _ = s.cfg.Log.Write(append(b, '\n'))
		s.logMu.Unlock()
	}
	return rec.ID, aerr
}

// auditor is the audit stream actions are written to: the store's, or, for
// the seed layout, SeedConfig.Audit.
func (s *server) auditor() (dlq.Auditor, bool) {
	if s.cfg.Seed != nil {
		return s.cfg.Seed.Audit, s.cfg.Seed.Audit != nil
	}
	a, ok := s.cfg.Store.(dlq.Auditor)
	return a, ok
}

// recordOne records an action already taken: an audit write that fails
// cannot undo it, so its error is returned as text for the answer (and
// the log line says so too).
func (s *server) recordOne(ctx context.Context, rec dlq.AuditRecord, failed error) (string, string) {
	id, err := s.record(ctx, rec, failed)
	if err != nil {
		return id, maskText(err.Error())
	}
	return id, ""
}

// budgetOf reads a budget choice: "one" (default) or "reset".
func budgetOf(v string) (dlq.Budget, error) {
	switch v {
	case "", "one":
		return dlq.OneMoreAttempt, nil
	case "reset":
		return dlq.ResetAttempts, nil
	}
	return 0, &InputError{Field: "budget", Reason: fmt.Sprintf("expected one (one more attempt) or reset (a full retry budget), got %q", cutText(v, 40))}
}

func cutText(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// OneResult is what a one-entry action did.
type OneResult struct {
	ID      string `json:"id"`
	Action  string `json:"action"`
	Outcome string `json:"outcome"`
	// Status is the entry's status after the action.
	Status  string `json:"status,omitempty"`
	AuditID string `json:"audit_id,omitempty"`
	// AuditError says the action was taken but its audit record could not
	// be written.
	AuditError string `json:"audit_error,omitempty"`
	// Revision is the entry's revision after an edit.
	Revision string `json:"revision,omitempty"`
	// Requeued says an edit was followed by a requeue, and its outcome.
	Requeued string `json:"requeued,omitempty"`
}

// requeueOne requeues one entry.
func (s *server) requeueOne(ctx context.Context, id string, opts dlq.RequeueOptions, via string) (_ OneResult, ferr error) {
	defer func() { s.countErr(actionRequeue, ferr) }()
	out, err := s.cfg.Store.Requeue(ctx, id, opts, s.cfg.Now())
	res := OneResult{ID: id, Action: actionRequeue}
	rec := dlq.AuditRecord{By: opts.By, Via: via, Action: actionRequeue, IDs: []string{id}, Stated: 1, Note: budgetNote(opts)}
	if err == nil {
		res.Outcome = out.String()
		if out == dlq.OutcomeRequeued {
			rec.Moved = 1
			s.metrics.Requeued(1)
		} else {
			rec.Skipped = 1
			rec.Note += "; skipped: " + out.String()
		}
	}
	res.AuditID, res.AuditError = s.recordOne(ctx, rec, err)
	if err != nil {
		return res, fmt.Errorf("requeue %s: %w", id, err)
	}
	if out == dlq.OutcomeNotFound {
		return res, fmt.Errorf("requeue %s: %w", id, dlq.ErrNotFound)
	}
	return res, nil
}

func budgetNote(opts dlq.RequeueOptions) string {
	b := "one more attempt"
	if opts.Budget == dlq.ResetAttempts {
		b = "attempts reset"
	}
	if opts.Queue != "" {
		return b + "; to queue " + opts.Queue
	}
	return b
}

// move deletes, restores or quarantines one entry.
func (s *server) move(ctx context.Context, action, id, reason, who, via string) (_ OneResult, ferr error) {
	defer func() { s.countErr(action, ferr) }()
	st, now := s.cfg.Store, s.cfg.Now()
	var err error
	rec := dlq.AuditRecord{By: who, Via: via, Action: action, IDs: []string{id}, Stated: 1}
	switch action {
	case "delete":
		err = st.Delete(ctx, id, who, now)
	case "restore":
		err = st.Restore(ctx, id, who, now)
	case "quarantine":
		if reason == "" {
			return OneResult{}, &InputError{Field: "reason", Reason: "required: why, for the entry's status history"}
		}
		rec.Note = reason
		// dlq.Store.Quarantine takes no "by": who acted goes into the
		// reason, as the CLI writes it.
		err = st.Quarantine(ctx, id, "by "+who+": "+reason, now)
	default:
		return OneResult{}, &InputError{Field: "action", Reason: "unknown action " + action}
	}
	res := OneResult{ID: id, Action: action, Outcome: "done"}
	if err != nil {
		res.Outcome = "refused"
		rec.Skipped = 1
	} else {
		rec.Moved = 1
		if action == actionDelete {
			s.metrics.Deleted(1)
		}
	}
	res.AuditID, res.AuditError = s.recordOne(ctx, rec, err)
	if err != nil {
		return res, fmt.Errorf("%s %s: %w", action, id, err)
	}
	if e, gerr := st.Get(ctx, id); gerr == nil {
		res.Status = e.Status.String()
	}
	return res, nil
}

// editReq is a payload edit: the payload, the revision it was read at, and
// whether to requeue after.
type editReq struct {
	Payload  []byte
	Revision string
	Requeue  bool
	Opts     dlq.RequeueOptions
}

// edit replaces an entry's payload, guarded by the revision the caller
// read, then requeues it when asked.
func (s *server) edit(ctx context.Context, id string, req editReq, via string) (_ OneResult, ferr error) {
	defer func() { s.countErr("edit", ferr) }()
	ed, ok := s.cfg.Store.(dlq.RevisionEditor)
	if !ok {
		return OneResult{}, &UnavailableError{Action: "edit", Interface: "dlq.RevisionEditor"}
	}
	if req.Revision == "" {
		return OneResult{}, &InputError{Field: "revision", Reason: "required: the revision of the entry the edit was made on"}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, bytes.TrimSpace(req.Payload)); err != nil {
		return OneResult{}, &InputError{Field: "payload", Reason: "not valid JSON: " + err.Error()}
	}
	res := OneResult{ID: id, Action: "edit", Outcome: "edited"}
	e, err := ed.EditPayloadAt(ctx, id, req.Revision, buf.Bytes(), req.Opts.By, s.cfg.Now())
	rec := dlq.AuditRecord{By: req.Opts.By, Via: via, Action: "edit", IDs: []string{id}, Stated: 1}
	if err != nil {
		res.Outcome, rec.Skipped = "refused", 1
	} else {
		rec.Moved = 1
		rec.Note = dlq.EditReason(nil, buf.Bytes())
		if n := len(e.Changes); n > 0 {
			rec.Note = e.Changes[n-1].Reason
		}
	}
	res.AuditID, res.AuditError = s.recordOne(ctx, rec, err)
	if err != nil {
		return res, fmt.Errorf("edit %s: %w", id, err)
	}
	res.Revision, res.Status = dlq.Revision(&e), e.Status.String()
	if req.Requeue {
		rq, err := s.requeueOne(ctx, id, req.Opts, via)
		res.Requeued = rq.Outcome
		if err != nil {
			return res, err
		}
		res.Status = "requeued"
		if rq.Outcome != dlq.OutcomeRequeued.String() {
			res.Status = ""
		}
	}
	return res, nil
}

// BulkPlan is a bulk action by filter or by IDs, with the cut-off and the
// count the operator was shown.
type BulkPlan struct {
	Action string
	Spec   dlq.FilterSpec
	IDs    []string
	CutOff time.Time
	Stated int
	Opts   dlq.RequeueOptions
}

// BulkOutcome is what a bulk action did or, on a dry run, would do.
type BulkOutcome struct {
	Action string    `json:"action"`
	DryRun bool      `json:"dry_run"`
	Filter string    `json:"filter,omitempty"`
	IDs    []string  `json:"ids,omitempty"`
	CutOff time.Time `json:"cut_off,omitzero"`
	// Stated is the count the operator was shown (on a dry run, the count
	// to show: what would move).
	Stated     int            `json:"stated"`
	Moved      int            `json:"moved"`
	Skipped    int            `json:"skipped"`
	Reasons    map[string]int `json:"skipped_by_reason,omitempty"`
	AuditID    string         `json:"audit_id,omitempty"`
	AuditError string         `json:"audit_error,omitempty"`
	// Plan is a dry run's signed plan: the run carries it back, and the
	// server refuses a run that differs from it.
	Plan string `json:"plan,omitempty"`
}

func (p *BulkPlan) check() error {
	if p.Action != actionRequeue && p.Action != actionDelete {
		return &InputError{Field: "action", Reason: fmt.Sprintf("expected requeue or delete, got %q", cutText(p.Action, 40))}
	}
	if len(p.IDs) > maxIDs {
		return &InputError{Field: "id", Reason: fmt.Sprintf("at most %d entries at once, got %d", maxIDs, len(p.IDs))}
	}
	if len(p.IDs) > 0 && !p.Spec.Empty() {
		return &InputError{Field: "id", Reason: "give entry IDs or a filter, not both"}
	}
	return nil
}

// filter parses the plan's filter as of its cut-off (durations ago count
// from when the count was shown) and bounds it by the cut-off.
func (p *BulkPlan) filter() (dlq.Filter, error) {
	f, err := p.Spec.Parse(p.CutOff)
	if err != nil {
		return f, err
	}
	if f.Until.IsZero() || p.CutOff.Before(f.Until) {
		f.Until = p.CutOff
	}
	return f, nil
}

// dryRun counts what p would move, taking its cut-off now.
func (s *server) dryRun(ctx context.Context, p *BulkPlan) (_ BulkOutcome, ferr error) {
	defer func() { s.countErr(opRead, ferr) }()
	if err := p.check(); err != nil {
		return BulkOutcome{}, err
	}
	p.CutOff = s.cfg.Now().Truncate(time.Millisecond)
	out := BulkOutcome{Action: p.Action, DryRun: true, Filter: p.Spec.String(), IDs: p.IDs, CutOff: p.CutOff, Reasons: map[string]int{}}
	if len(p.IDs) > 0 {
		for _, id := range p.IDs {
			e, err := s.cfg.Store.Get(ctx, id)
			switch {
			case errors.Is(err, dlq.ErrNotFound):
				out.Skipped++
				out.Reasons["not-found"]++
			case err != nil:
				return out, fmt.Errorf("read %s: %w", id, err)
			case e.Corrupt:
				out.Skipped++
				out.Reasons["corrupt"]++
			case p.Action == actionRequeue && e.Status == dlq.Requeued:
				out.Skipped++
				out.Reasons[dlq.OutcomeAlreadyRequeued.String()]++
			case p.Action == actionRequeue && e.Status == dlq.Deleted, p.Action == actionDelete && e.Status != dlq.Failed && e.Status != dlq.Quarantined:
				out.Skipped++
				out.Reasons[e.Status.String()]++
			default:
				out.Stated++
			}
		}
		out.Plan = s.signStated(p, out.Stated)
		return out, nil
	}
	f, err := p.filter()
	if err != nil {
		return out, err
	}
	var res dlq.BulkResult
	switch p.Action {
	case actionRequeue:
		res, err = s.cfg.Store.RequeueMatching(ctx, f, p.Opts, s.cfg.Now(), true)
	case actionDelete:
		bd, ok := s.cfg.Store.(dlq.BulkDeleter)
		if !ok {
			return out, &UnavailableError{Action: "bulk delete", Interface: "dlq.BulkDeleter"}
		}
		res, err = bd.DeleteMatching(ctx, f, p.Opts.By, s.cfg.Now(), true)
	}
	if err != nil {
		return out, fmt.Errorf("count the entries to %s: %w", p.Action, err)
	}
	out.Stated = res.Matched
	out.Plan = s.signStated(p, out.Stated)
	return out, nil
}

// signStated signs p with stated as its count.
func (s *server) signStated(p *BulkPlan, stated int) string {
	q := *p
	q.Stated = stated
	return s.signPlan(&q)
}

// runBulk does p: its filter, bounded by the cut-off taken when the count
// was shown (or its IDs), between a "started" and a "done" audit record.
func (s *server) runBulk(ctx context.Context, p *BulkPlan, via string) (_ BulkOutcome, ferr error) {
	defer func() { s.countErr(p.Action, ferr) }()
	if err := p.check(); err != nil {
		return BulkOutcome{}, err
	}
	out := BulkOutcome{Action: p.Action, Filter: p.Spec.String(), IDs: p.IDs, CutOff: p.CutOff, Stated: p.Stated, Reasons: map[string]int{}}
	var f dlq.Filter
	var bd dlq.BulkDeleter
	if len(p.IDs) == 0 {
		if p.CutOff.IsZero() {
			return out, &InputError{Field: "cut_off", Reason: "required: the cut-off time the confirmation took with its count"}
		}
		if now := s.cfg.Now(); p.CutOff.After(now) {
			return out, &InputError{Field: "cut_off", Reason: "later than now (" + cutOffText(now) + "): a cut-off is the time a count was taken"}
		}
		var err error
		if f, err = p.filter(); err != nil {
			return out, err
		}
		if p.Action == actionDelete {
			var ok bool
			if bd, ok = s.cfg.Store.(dlq.BulkDeleter); !ok {
				return out, &UnavailableError{Action: "bulk delete", Interface: "dlq.BulkDeleter"}
			}
		}
	}
	rec := dlq.AuditRecord{By: p.Opts.By, Via: via, Action: p.Action, Phase: "started", IDs: p.IDs, Filter: out.Filter, CutOff: p.CutOff, Stated: p.Stated}
	if p.Action == actionRequeue {
		rec.Note = budgetNote(p.Opts)
	}
	if _, err := s.record(ctx, rec, nil); err != nil {
		// An action the audit stream cannot record is not taken.
		return out, fmt.Errorf("%s: nothing moved: %w", p.Action, err)
	}
	var err error
	if len(p.IDs) > 0 {
		err = s.bulkIDs(ctx, p, &out)
	} else {
		var res dlq.BulkResult
		if p.Action == actionRequeue {
			res, err = s.cfg.Store.RequeueMatching(ctx, f, p.Opts, s.cfg.Now(), false)
		} else {
			res, err = bd.DeleteMatching(ctx, f, p.Opts.By, s.cfg.Now(), false)
		}
		out.Moved = res.Requeued
		for k, n := range map[string]int{"changed": res.Changed, "gone": res.Gone, "busy": res.Busy, "invalid": res.Invalid} {
			if n > 0 {
				out.Reasons[k] = n
			}
		}
		if other := res.Skipped - res.Changed - res.Gone - res.Busy - res.Invalid; other > 0 {
			out.Reasons["busy-or-changed"] = other
		}
		if gone := p.Stated - res.Matched; gone > 0 && err == nil {
			out.Reasons["no-longer-matching"] = gone
		}
		out.Skipped = max(p.Stated-out.Moved, 0)
	}
	if p.Action == actionRequeue {
		s.metrics.Requeued(out.Moved)
	} else {
		s.metrics.Deleted(out.Moved)
	}
	rec.Phase, rec.Moved, rec.Skipped, rec.At = "done", out.Moved, out.Skipped, time.Time{}
	out.AuditID, out.AuditError = s.recordOne(ctx, rec, err)
	if err != nil {
		return out, fmt.Errorf("%s (after %d moved): %w", p.Action, out.Moved, err)
	}
	return out, nil
}

// bulkIDs does p entry by entry.
func (s *server) bulkIDs(ctx context.Context, p *BulkPlan, out *BulkOutcome) error {
	for _, id := range p.IDs {
		if p.Action == actionRequeue {
			o, err := s.cfg.Store.Requeue(ctx, id, p.Opts, s.cfg.Now())
			if err != nil {
				return fmt.Errorf("requeue %s: %w", id, err)
			}
			if o == dlq.OutcomeRequeued {
				out.Moved++
			} else {
				out.Skipped++
				out.Reasons[o.String()]++
			}
			continue
		}
		err := s.cfg.Store.Delete(ctx, id, p.Opts.By, s.cfg.Now())
		switch {
		case err == nil:
			out.Moved++
		case errors.Is(err, dlq.ErrNotFound):
			out.Skipped++
			out.Reasons["not-found"]++
		case errors.Is(err, dlq.ErrWrongStatus):
			out.Skipped++
			out.Reasons["wrong-status"]++
		default:
			return fmt.Errorf("delete %s: %w", id, err)
		}
	}
	return nil
}
