package ui

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/faultline/faultline/layout/seed"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/fleet"
)

// dashboardData is the dashboard's.
type dashboardData struct {
	Now         time.Time
	Stats       dlq.Stats
	Unavailable []string
	Trend       trendView
	// Leader describes the fleet's control (fleet.Status.Describe), ""
	// when the store cannot tell it.
	Leader string
}

// leader describes the fleet's control, read from the store when it can
// tell it.
func (s *server) leader(ctx context.Context, now time.Time) string {
	sr, ok := s.cfg.Store.(fleet.StatusReader)
	if !ok {
		return ""
	}
	st, err := sr.ControlStatus(ctx, fleet.DefaultRole)
	if err != nil {
		return "unknown: " + maskText(err.Error())
	}
	return maskText(st.Describe(now))
}

func (s *server) unavailable() []string {
	var out []string
	st := s.cfg.Store
	if _, ok := st.(dlq.BulkDeleter); !ok {
		out = append(out, "bulk delete (the store lacks dlq.BulkDeleter)")
	}
	if _, ok := st.(dlq.RevisionEditor); !ok {
		out = append(out, "payload edit (the store lacks dlq.RevisionEditor)")
	}
	if _, ok := st.(dlq.Auditor); !ok {
		out = append(out, "the audit stream (the store lacks dlq.Auditor): actions are logged to the server's stdout only")
	}
	return out
}

func (s *server) pgDashboard(w http.ResponseWriter, r *http.Request, v *view) {
	hours, err := hoursOf(r.URL.Query().Get("hours"))
	if err != nil {
		s.actionFail(w, r, v, "chart", err)
		return
	}
	st, err := s.cfg.Store.Stats(r.Context())
	if err != nil {
		s.storeFail(w, r, v, "read the DLQ's stats", err)
		return
	}
	v.Title = "Dashboard"
	now := s.cfg.Now()
	v.Data = dashboardData{Now: now, Stats: st, Unavailable: s.unavailable(), Trend: s.trend(r.Context(), now, hours), Leader: s.leader(r.Context(), now)}
	s.render(w, http.StatusOK, "dashboard", v)
}

// kv is a hidden form field.
type kv struct{ Name, Value string }

func hidden(vals url.Values) []kv {
	var out []kv
	for _, name := range []string{dlq.FieldSeverity, dlq.FieldTask, dlq.FieldClass, dlq.FieldErrorType, dlq.FieldStatus, dlq.FieldSince, dlq.FieldUntil, dlq.FieldErrorText} {
		for _, x := range vals[name] {
			out = append(out, kv{name, x})
		}
	}
	return out
}

// listData is the list page's.
type listData struct {
	Now         time.Time
	Spec        dlq.FilterSpec
	Form        map[string]string
	Filter      string
	Query       string
	Rows        []EntryView
	Next        string
	NextURL     template.URL
	First       bool
	Hidden      []kv
	Unavailable []string
	Error       *dlq.FieldError
}

func (s *server) pgList(w http.ResponseWriter, r *http.Request, v *view) {
	q := r.URL.Query()
	spec := dlq.FilterSpecFromValues(q)
	v.Title = "Entries"
	d := listData{Now: s.cfg.Now(), Spec: spec, Filter: spec.String(), Query: spec.Values().Encode(), Hidden: hidden(spec.Values()), First: q.Get("cursor") == ""}
	d.Form = map[string]string{}
	for name, xs := range spec.Values() {
		d.Form[name] = strings.Join(xs, ",")
	}
	f, err := spec.Parse(d.Now)
	if err != nil {
		var fe *dlq.FieldError
		if errors.As(err, &fe) {
			d.Error = fe
			v.Data = d
			s.render(w, http.StatusBadRequest, "list", v)
			return
		}
		s.fail(w, r, v, http.StatusBadRequest, "Bad filter", err.Error())
		return
	}
	page, err := s.cfg.Store.List(r.Context(), f, q.Get("cursor"), s.cfg.PageSize)
	if err != nil {
		status, _ := httpStatus(err)
		if status == http.StatusInternalServerError && q.Get("cursor") != "" {
			s.fail(w, r, v, http.StatusBadRequest, "Bad cursor", "cursor: not a cursor this list printed ("+maskText(err.Error())+")")
			return
		}
		s.storeFail(w, r, v, "list the DLQ", err)
		return
	}
	for i := range page.Entries {
		d.Rows = append(d.Rows, viewOf(&page.Entries[i], false))
	}
	if page.Next != "" {
		nv := spec.Values()
		nv.Set("cursor", page.Next)
		d.Next, d.NextURL = page.Next, template.URL("/entries?"+nv.Encode()) //nolint:gosec // url.Values.Encode's output
	}
	if _, ok := s.cfg.Store.(dlq.BulkDeleter); !ok {
		d.Unavailable = append(d.Unavailable, "bulk delete")
	}
	v.Data = d
	s.render(w, http.StatusOK, "list", v)
}

// entryData is the entry page's.
type entryData struct {
	Now      time.Time
	E        EntryView
	Reveal   bool
	Editable string // "" when editable, else why not
	CanEdit  bool
	EditText string
	Notice   string
	Error    string
	Field    string
}

func (s *server) entryData(r *http.Request, e *dlq.Entry, reveal bool) entryData {
	d := entryData{Now: s.cfg.Now(), E: viewOf(e, reveal), Reveal: reveal}
	if err := dlq.Editable(e); err != nil {
		d.Editable = err.Error()
	} else if _, ok := s.cfg.Store.(dlq.RevisionEditor); !ok {
		d.Editable = "unavailable: the store lacks dlq.RevisionEditor"
	}
	d.CanEdit = d.Editable == "" && reveal
	if d.CanEdit {
		d.EditText, _ = payloadOf(e.Job.Payload, true)
	}
	d.Notice = noticeOf(r.URL.Query())
	return d
}

func (s *server) pgEntry(w http.ResponseWriter, r *http.Request, v *view) {
	id := r.PathValue("id")
	e, err := s.cfg.Store.Get(r.Context(), id)
	if errors.Is(err, dlq.ErrNotFound) {
		s.fail(w, r, v, http.StatusNotFound, "No such entry", fmt.Sprintf("There is no DLQ entry with ID %q in namespace %q.", id, s.cfg.Namespace))
		return
	}
	if err != nil {
		s.storeFail(w, r, v, "read entry "+id, err)
		return
	}
	v.Title = "Entry " + id
	v.Data = s.entryData(r, &e, r.URL.Query().Get("reveal") == "1")
	s.render(w, http.StatusOK, "entry", v)
}

// done redirects to the entry page saying what happened (POST, redirect,
// GET: a reload does not repeat the action). The redirect carries codes
// only; the page shows fixed texts for them (noticeOf), so a crafted link
// cannot make this UI say something of an attacker's choosing.
func done(w http.ResponseWriter, r *http.Request, id, what, outcome, auditErr string) {
	q := url.Values{"done": {what}}
	if outcome != "" {
		q.Set("outcome", outcome)
	}
	if auditErr != "" {
		q.Set("audit", "failed")
	}
	http.Redirect(w, r, "/entries/"+string(idPath(id))+"?"+q.Encode(), http.StatusSeeOther)
}

// noticeActions and noticeOutcomes are the codes a notice may carry.
var (
	noticeActions  = map[string]bool{"requeue": true, "edit": true, actionDelete: true, "restore": true, "quarantine": true}
	noticeOutcomes = func() map[string]bool {
		m := map[string]bool{"saved": true}
		for o := dlq.OutcomeRequeued; o <= dlq.OutcomeNotRequeueable; o++ {
			m[o.String()] = true
			m["saved, requeue "+o.String()] = true
		}
		for st := dlq.Failed; st <= dlq.Quarantined; st++ {
			m[st.String()] = true
		}
		for o := seed.Requeued; !strings.HasPrefix(o.String(), "outcome("); o++ {
			m[o.String()] = true // the seed layout's
		}
		return m
	}()
)

// noticeOf is the entry page's notice for a redirect's codes: an action's
// name and outcome this UI gives, nothing else ("" for an unknown code).
func noticeOf(q url.Values) string {
	what := q.Get("done")
	if !noticeActions[what] {
		return ""
	}
	n := what
	if o := q.Get("outcome"); noticeOutcomes[o] {
		n += ": " + o
	}
	if q.Get("audit") == "failed" {
		n += " (but not audited: the audit record could not be written; the server log line has the error)"
	}
	return n
}

// actionFail renders an action's error on the error page.
func (s *server) actionFail(w http.ResponseWriter, r *http.Request, v *view, what string, err error) {
	status, field := httpStatus(err)
	heading := map[int]string{
		http.StatusBadRequest: "Bad request", http.StatusNotFound: "No such entry", http.StatusConflict: "Refused: the entry changed or does not allow it",
		http.StatusNotImplemented: "Unavailable", http.StatusServiceUnavailable: "The DLQ's Redis could not be reached",
	}[status]
	if heading == "" {
		heading = "Store error"
	}
	text := maskText(err.Error())
	if status == http.StatusServiceUnavailable {
		_, heading, text = classifyErr(what, err)
	}
	v.Title = heading
	v.Data = problem{Status: status, Heading: heading, Text: text, Field: field, Back: r.Referer()}
	s.render(w, status, "error", v)
}

func (s *server) pgRequeue(w http.ResponseWriter, r *http.Request, v *view) {
	id := r.PathValue("id")
	b, err := budgetOf(r.PostFormValue("budget"))
	if err != nil {
		s.actionFail(w, r, v, "requeue", err)
		return
	}
	res, err := s.requeueOne(r.Context(), id, dlq.RequeueOptions{Budget: b, Queue: strings.TrimSpace(r.PostFormValue("queue")), By: v.Who}, viaUI)
	if err != nil {
		s.actionFail(w, r, v, "requeue "+id, err)
		return
	}
	done(w, r, id, "requeue", res.Outcome, res.AuditError)
}

func (s *server) pgMove(action string) func(http.ResponseWriter, *http.Request, *view) {
	return func(w http.ResponseWriter, r *http.Request, v *view) {
		id := r.PathValue("id")
		res, err := s.move(r.Context(), action, id, strings.TrimSpace(r.PostFormValue("reason")), v.Who, viaUI)
		if err != nil {
			s.actionFail(w, r, v, action+" "+id, err)
			return
		}
		done(w, r, id, action, res.Status, res.AuditError)
	}
}

func (s *server) pgEdit(w http.ResponseWriter, r *http.Request, v *view) {
	id := r.PathValue("id")
	b, err := budgetOf(r.PostFormValue("budget"))
	if err != nil {
		s.actionFail(w, r, v, "edit", err)
		return
	}
	text := r.PostFormValue("payload")
	req := editReq{Payload: []byte(text), Revision: r.PostFormValue("revision"), Requeue: r.PostFormValue("requeue") == "1",
		Opts: dlq.RequeueOptions{Budget: b, By: v.Who}}
	res, err := s.edit(r.Context(), id, req, viaUI)
	if err == nil {
		outcome := "saved"
		if req.Requeue {
			outcome = "saved, requeue " + res.Requeued
		}
		done(w, r, id, "edit", outcome, res.AuditError)
		return
	}
	status, field := httpStatus(err)
	if status != http.StatusBadRequest && status != http.StatusConflict {
		s.actionFail(w, r, v, "edit "+id, err)
		return
	}
	// Show the entry as it is now, with the operator's text kept.
	e, gerr := s.cfg.Store.Get(r.Context(), id)
	if gerr != nil {
		s.actionFail(w, r, v, "read entry "+id, gerr)
		return
	}
	d := s.entryData(r, &e, true)
	d.EditText, d.Field = text, field
	d.Error = maskText(err.Error())
	if errors.Is(err, dlq.ErrChanged) {
		d.Error = "Not saved: the entry changed since you opened it (another operator, or its job failed again). It is shown as it is now; your text is kept below — check it against the current payload and save again."
	}
	v.Title = "Entry " + id
	v.Data = d
	s.render(w, status, "entry", v)
}

// bulkData is the confirmation and result pages'.
type bulkData struct {
	Plan    BulkPlan
	Out     BulkOutcome
	Hidden  []kv
	CutOff  string
	Verb    string
	Query   string
	Missing string
	// Token is the signed plan the confirmation's form carries.
	Token string
}

// planOf reads a bulk plan from a form or a query.
func planOf(vals url.Values, who string) (BulkPlan, error) {
	p := BulkPlan{Action: vals.Get("action"), Spec: dlq.FilterSpecFromValues(vals), IDs: vals["id"]}
	b, err := budgetOf(vals.Get("budget"))
	if err != nil {
		return p, err
	}
	p.Opts = dlq.RequeueOptions{Budget: b, Queue: strings.TrimSpace(vals.Get("queue")), By: who}
	if c := vals.Get("cut_off"); c != "" {
		if p.CutOff, err = time.Parse(time.RFC3339Nano, c); err != nil {
			return p, &InputError{Field: "cut_off", Reason: "expected an RFC 3339 time, got " + strconv.Quote(cutText(c, 40))}
		}
	}
	if st := vals.Get("stated"); st != "" {
		if p.Stated, err = strconv.Atoi(st); err != nil || p.Stated < 0 {
			return p, &InputError{Field: "stated", Reason: "expected the count shown, got " + strconv.Quote(cutText(st, 40))}
		}
	}
	return p, p.check()
}

func (p *BulkPlan) verb() string {
	if p.Action == actionDelete {
		return "Delete"
	}
	return "Requeue"
}

func (s *server) pgBulkConfirm(w http.ResponseWriter, r *http.Request, v *view) {
	p, err := planOf(r.URL.Query(), v.Who)
	if err != nil {
		s.actionFail(w, r, v, "count", err)
		return
	}
	out, err := s.dryRun(r.Context(), &p)
	if err != nil {
		s.actionFail(w, r, v, "count the entries", err)
		return
	}
	p.Stated = out.Stated
	v.Title = "Confirm: " + p.verb()
	v.Data = bulkData{Plan: p, Out: out, Hidden: hidden(p.Spec.Values()), CutOff: p.CutOff.UTC().Format(time.RFC3339Nano), Verb: p.verb(), Query: p.Spec.Values().Encode(), Token: out.Plan}
	s.render(w, http.StatusOK, "confirm", v)
}

func (s *server) pgBulk(w http.ResponseWriter, r *http.Request, v *view) {
	p, err := planOf(r.PostForm, v.Who)
	if err != nil {
		s.actionFail(w, r, v, "bulk", err)
		return
	}
	if r.PostFormValue("stated") == "" {
		s.actionFail(w, r, v, "bulk", &InputError{Field: "stated", Reason: "required: the count the confirmation showed"})
		return
	}
	if err := s.enforcePlan(&p, r.PostFormValue("plan")); err != nil {
		s.actionFail(w, r, v, "bulk", err)
		return
	}
	out, err := s.runBulk(r.Context(), &p, viaUI)
	if err != nil {
		s.actionFail(w, r, v, strings.ToLower(p.verb()), err)
		return
	}
	v.Title = p.verb() + ": done"
	v.Data = bulkData{Plan: p, Out: out, CutOff: p.CutOff.UTC().Format(time.RFC3339Nano), Verb: p.verb(), Query: p.Spec.Values().Encode()}
	s.render(w, http.StatusOK, "result", v)
}

// auditData is the audit page's.
type auditData struct {
	Records []dlq.AuditRecord
	Next    string
	Missing bool
}

func (s *server) pgAudit(w http.ResponseWriter, r *http.Request, v *view) {
	v.Title = "Audit"
	a, ok := s.cfg.Store.(dlq.Auditor)
	if !ok {
		v.Data = auditData{Missing: true}
		s.render(w, http.StatusOK, "audit", v)
		return
	}
	page, err := a.AuditLog(r.Context(), r.URL.Query().Get("cursor"), 100)
	if err != nil {
		s.storeFail(w, r, v, "read the audit stream", err)
		return
	}
	v.Data = auditData{Records: maskedAudit(page.Records), Next: page.Next}
	s.render(w, http.StatusOK, "audit", v)
}
