package ui

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/faultline/faultline/reference/dlq"
)

// fail writes an action's error as the API's JSON error.
func apiFail(w http.ResponseWriter, err error) {
	status, field := httpStatus(err)
	apiError(w, status, maskText(err.Error()), field)
}

// decode reads a JSON body into v; an empty body leaves v as it is.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return &InputError{Field: "body", Reason: "not the expected JSON: " + err.Error()}
	}
	return nil
}

func (s *server) apiStats(w http.ResponseWriter, r *http.Request, _ string) {
	st, err := s.cfg.Store.Stats(r.Context())
	if err != nil {
		s.countErr(opRead, err)
		apiFail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, statsOf(st))
}

// StatsView is dlq.Stats as the API answers it.
type StatsView struct {
	Total      int            `json:"total"`
	BySeverity map[string]int `json:"by_severity"`
	ByTask     map[string]int `json:"by_task"`
	ByClass    map[string]int `json:"by_class"`
	ByStatus   map[string]int `json:"by_status"`
	Corrupt    int            `json:"corrupt"`
	Oldest     time.Time      `json:"oldest,omitzero"`
	OldestID   string         `json:"oldest_id,omitempty"`
	Newest     time.Time      `json:"newest,omitzero"`
	NewestID   string         `json:"newest_id,omitempty"`
	Evicted    int            `json:"evicted"`
	Rejected   int            `json:"rejected"`
	Held       int            `json:"held"`
	HeldOldest time.Time      `json:"held_oldest,omitzero"`
}

func statsOf(st dlq.Stats) StatsView {
	return StatsView{Total: st.Total, BySeverity: st.BySeverity, ByTask: st.ByTask, ByClass: st.ByClass, ByStatus: st.ByStatus,
		Corrupt: st.Corrupt, Oldest: st.Oldest, OldestID: st.OldestID, Newest: st.Newest, NewestID: st.NewestID,
		Evicted: st.Evicted, Rejected: st.Rejected, Held: st.Held, HeldOldest: st.HeldOldest}
}

// listBody is the API's list answer.
type listBody struct {
	Entries []EntryView `json:"entries"`
	Next    string      `json:"next,omitempty"`
	Filter  string      `json:"filter,omitempty"`
}

func (s *server) apiList(w http.ResponseWriter, r *http.Request, _ string) {
	q := r.URL.Query()
	spec := dlq.FilterSpecFromValues(q)
	f, err := spec.Parse(s.cfg.Now())
	if err != nil {
		apiFail(w, err)
		return
	}
	limit := s.cfg.PageSize
	if l := q.Get("limit"); l != "" {
		if limit, err = strconv.Atoi(l); err != nil || limit < 1 || limit > MaxPageSize {
			apiFail(w, &InputError{Field: "limit", Reason: "expected 1.." + strconv.Itoa(MaxPageSize)})
			return
		}
	}
	page, err := s.cfg.Store.List(r.Context(), f, q.Get("cursor"), limit)
	if err != nil {
		s.countErr(opRead, err)
		if status, _ := httpStatus(err); status == http.StatusInternalServerError && q.Get("cursor") != "" {
			apiFail(w, &InputError{Field: "cursor", Reason: maskText(err.Error())})
			return
		}
		apiFail(w, err)
		return
	}
	body := listBody{Entries: []EntryView{}, Next: page.Next, Filter: spec.String()}
	reveal := q.Get("reveal") == "1"
	for i := range page.Entries {
		body.Entries = append(body.Entries, viewOf(&page.Entries[i], reveal))
	}
	writeJSON(w, http.StatusOK, body)
}

func (s *server) apiGet(w http.ResponseWriter, r *http.Request, _ string) {
	e, err := s.cfg.Store.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		s.countErr(opRead, err)
		apiFail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, viewOf(&e, r.URL.Query().Get("reveal") == "1"))
}

// requeueBody is a requeue's options.
type requeueBody struct {
	// Budget is "one" (default) or "reset".
	Budget string `json:"budget"`
	Queue  string `json:"queue"`
}

func (s *server) apiRequeueOne(w http.ResponseWriter, r *http.Request, who string) {
	var b requeueBody
	if err := decode(r, &b); err != nil {
		apiFail(w, err)
		return
	}
	budget, err := budgetOf(b.Budget)
	if err != nil {
		apiFail(w, err)
		return
	}
	res, err := s.requeueOne(r.Context(), r.PathValue("id"), dlq.RequeueOptions{Budget: budget, Queue: b.Queue, By: who}, viaAPI)
	if err != nil {
		apiFail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// moveBody is a quarantine's reason.
type moveBody struct {
	Reason string `json:"reason"`
}

func (s *server) apiMove(action string) func(http.ResponseWriter, *http.Request, string) {
	return func(w http.ResponseWriter, r *http.Request, who string) {
		var b moveBody
		if err := decode(r, &b); err != nil {
			apiFail(w, err)
			return
		}
		res, err := s.move(r.Context(), action, r.PathValue("id"), strings.TrimSpace(b.Reason), who, viaAPI)
		if err != nil {
			apiFail(w, err)
			return
		}
		writeJSON(w, http.StatusOK, res)
	}
}

// editBody is an edit: the new payload (a JSON value), the revision it was
// made on, and whether to requeue after.
type editBody struct {
	Payload  json.RawMessage `json:"payload"`
	Revision string          `json:"revision"`
	Requeue  bool            `json:"requeue"`
	Budget   string          `json:"budget"`
}

func (s *server) apiEdit(w http.ResponseWriter, r *http.Request, who string) {
	var b editBody
	if err := decode(r, &b); err != nil {
		apiFail(w, err)
		return
	}
	if len(b.Payload) == 0 {
		apiFail(w, &InputError{Field: "payload", Reason: "required: the new payload, a JSON value"})
		return
	}
	budget, err := budgetOf(b.Budget)
	if err != nil {
		apiFail(w, err)
		return
	}
	res, err := s.edit(r.Context(), r.PathValue("id"), editReq{Payload: b.Payload, Revision: b.Revision, Requeue: b.Requeue,
		Opts: dlq.RequeueOptions{Budget: budget, By: who}}, viaAPI)
	if err != nil {
		apiFail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// bulkBody is a bulk action: a filter (the list's query parameters, as
// names to values) or IDs; a dry run answers the count and the cut-off,
// which the run carries back with the count as stated.
type bulkBody struct {
	Filter url.Values `json:"filter"`
	IDs    []string   `json:"ids"`
	DryRun bool       `json:"dry_run"`
	CutOff time.Time  `json:"cut_off"`
	Stated *int       `json:"stated"`
	Budget string     `json:"budget"`
	Queue  string     `json:"queue"`
	Plan   string     `json:"plan"`
}

func (s *server) apiBulk(action string) func(http.ResponseWriter, *http.Request, string) {
	return func(w http.ResponseWriter, r *http.Request, who string) {
		var b bulkBody
		if err := decode(r, &b); err != nil {
			apiFail(w, err)
			return
		}
		budget, err := budgetOf(b.Budget)
		if err != nil {
			apiFail(w, err)
			return
		}
		p := BulkPlan{Action: action, Spec: dlq.FilterSpecFromValues(b.Filter), IDs: b.IDs, CutOff: b.CutOff,
			Opts: dlq.RequeueOptions{Budget: budget, Queue: b.Queue, By: who}}
		var out BulkOutcome
		if b.DryRun {
			out, err = s.dryRun(r.Context(), &p)
		} else {
			if b.Stated == nil {
				apiFail(w, &InputError{Field: "stated", Reason: "required: the count a dry run answered (with its cut_off)"})
				return
			}
			p.Stated = *b.Stated
			if err = s.enforcePlan(&p, b.Plan); err == nil {
				out, err = s.runBulk(r.Context(), &p, viaAPI)
			}
		}
		if err != nil {
			apiFail(w, err)
			return
		}
		writeJSON(w, http.StatusOK, out)
	}
}

func (s *server) apiAudit(w http.ResponseWriter, r *http.Request, _ string) {
	a, ok := s.cfg.Store.(dlq.Auditor)
	if !ok {
		apiFail(w, &UnavailableError{Action: "the audit stream", Interface: "dlq.Auditor"})
		return
	}
	page, err := a.AuditLog(r.Context(), r.URL.Query().Get("cursor"), 100)
	if err != nil {
		apiFail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Records []dlq.AuditRecord `json:"records"`
		Next    string            `json:"next,omitempty"`
	}{maskedAudit(page.Records), page.Next})
}
