package ui

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/layout"
	"github.com/faultline/faultline/layout/seed"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/dlq"
)

// SeedConfig serves a DLQ in the tutorial's layout (layout.PresetSeed)
// instead of faultline's: the lists read through package layout/seed (the
// reader `faultline dlq --layout seed` uses), read-only unless Requeue.
type SeedConfig struct {
	// Client is the Redis holding the lists (required).
	Client redis.Cmdable
	// Prefix is the keys' prefix ("" for none: dead_letter, dlq:*).
	Prefix string
	// Requeue allows the safe requeue (seed.Requeue, seed.RequeueAll with
	// its cut-off); without it the pages and the API only read.
	Requeue bool
	// To is the work list a requeue pushes onto, before Prefix (default
	// the tutorial's, "default").
	To string
	// Audit is the audit stream the moves are written to (faultline's
	// store of a namespace on the same Redis, as `faultline dlq requeue
	// --layout seed` writes them); nil: the log only.
	Audit dlq.Auditor
}

// SeedRefDigest is how many hex digits of an entry's SHA-256 a seed ref
// carries (LIST@POSITION#DIGEST), as `faultline dlq list --layout seed`
// prints it.
const SeedRefDigest = 12

// seedStatuses are the statuses a seed entry has.
var seedStatuses = []string{"failed", seed.Reprocessing, "deleted"}

// The seed layout's filter fields (query parameters, the CLI's flags).
const seedFieldList = "list"

// seedFilterOf reads a seed filter from query values: severity, status,
// error-text (the CLI's --layout seed filters), and list; any of
// faultline's other filters is refused, named.
func seedFilterOf(q url.Values) (seed.Filter, error) {
	var f seed.Filter
	for _, name := range []string{"task", "class", "error-type", "since", "until"} {
		if q.Get(name) != "" {
			return f, &InputError{Field: name, Reason: "not available with the seed layout (its filters: severity, status, error-text, list)"}
		}
	}
	split := func(name string) []string {
		var out []string
		for _, v := range q[name] {
			for _, x := range strings.Split(v, ",") {
				if x = strings.TrimSpace(x); x != "" {
					out = append(out, x)
				}
			}
		}
		return out
	}
	for _, s := range split("severity") {
		v, err := classify.ParseSeverity(s)
		if err != nil {
			return f, &InputError{Field: "severity", Reason: err.Error()}
		}
		f.Severities = append(f.Severities, v.String())
	}
	for _, s := range split("status") {
		s = strings.ToLower(s)
		if !slices.Contains(seedStatuses, s) {
			return f, &InputError{Field: "status", Reason: fmt.Sprintf("unknown status %q of the seed layout (allowed: %s)", cutText(s, 40), strings.Join(seedStatuses, ", "))}
		}
		f.Statuses = append(f.Statuses, s)
	}
	lists := seedLists()
	for _, l := range split(seedFieldList) {
		if !slices.Contains(lists, l) {
			return f, &InputError{Field: seedFieldList, Reason: fmt.Sprintf("no list %q in the seed layout (%s)", cutText(l, 40), strings.Join(lists, ", "))}
		}
		f.Lists = append(f.Lists, l)
	}
	f.Text = strings.TrimSpace(q.Get("error-text"))
	return f, nil
}

func seedLists() []string {
	return append([]string{layout.SeedDeadLetter}, layout.SeedSeverityLists...)
}

// seedValues are f as query values (the list's links, the bulk form).
func seedValues(f seed.Filter) url.Values {
	v := url.Values{}
	if len(f.Severities) > 0 {
		v.Set("severity", strings.Join(f.Severities, ","))
	}
	if len(f.Statuses) > 0 {
		v.Set("status", strings.Join(f.Statuses, ","))
	}
	if len(f.Lists) > 0 {
		v.Set(seedFieldList, strings.Join(f.Lists, ","))
	}
	if f.Text != "" {
		v.Set("error-text", f.Text)
	}
	return v
}

// seedFilterText is f as the CLI's flags, for the audit line and pages.
func seedFilterText(f seed.Filter) string {
	var parts []string
	for _, x := range []struct {
		flag string
		v    []string
	}{{"--severity", f.Severities}, {"--status", f.Statuses}, {"--list", f.Lists}} {
		if len(x.v) > 0 {
			parts = append(parts, x.flag+" "+strings.Join(x.v, ","))
		}
	}
	if f.Text != "" {
		parts = append(parts, "--error-text "+strconv.Quote(f.Text))
	}
	return strings.Join(parts, " ")
}

// SeedRow is one seed entry as the list and the API show it.
type SeedRow struct {
	// Ref names the entry for show and requeue: LIST@POSITION#DIGEST.
	Ref       string `json:"ref"`
	List      string `json:"list"`
	Position  int64  `json:"position"`
	Task      string `json:"task,omitempty"`
	JobID     string `json:"job_id,omitempty"`
	NoID      bool   `json:"no_id,omitempty"`
	Error     string `json:"error,omitempty"`
	ErrorType string `json:"error_type,omitempty"`
	Severity  string `json:"severity,omitempty"`
	Status    string `json:"status"`
	Retries   int    `json:"retries"`
	FailedAt  string `json:"failed_at,omitempty"`
	Corrupt   bool   `json:"corrupt,omitempty"`
	Invalid   string `json:"invalid,omitempty"`
}

// SeedRefOf is the ref of a seed entry under prefix: LIST@POSITION#DIGEST,
// its list without the prefix and the first SeedRefDigest hex digits of its
// bytes' digest (`faultline dlq --layout seed` prints and takes the same).
func SeedRefOf(prefix string, e *seed.Entry) string {
	return strings.TrimPrefix(e.Key, prefix) + "@" + strconv.FormatInt(e.Position, 10) + "#" + seed.Digest(e.Bytes)[:SeedRefDigest]
}

// SeedRowOf is a seed entry as a row of a listing: its fields masked, a
// corrupt entry's reason kept (`faultline dlq list --layout seed` prints
// the same rows).
func SeedRowOf(prefix string, e *seed.Entry) SeedRow {
	r := SeedRow{Ref: SeedRefOf(prefix, e), List: strings.TrimPrefix(e.Key, prefix), Position: e.Position}
	if e.Invalid != "" {
		r.Status, r.Corrupt, r.Invalid = "corrupt", true, e.Invalid
		return r
	}
	r.Error, r.ErrorType, r.Severity = maskText(e.Parsed.Error), e.Parsed.Class, strings.ToLower(e.Parsed.Severity)
	r.Status, r.Retries, r.JobID, r.NoID = e.Status(), e.Parsed.Retries, maskText(e.Parsed.JobID), e.Parsed.NoID != ""
	var doc map[string]any
	if json.Unmarshal(e.Bytes, &doc) == nil {
		if j, ok := doc["job"].(map[string]any); ok {
			if t, ok := j["task"].(string); ok {
				r.Task = maskText(t)
			}
		}
		for _, k := range []string{"failed_at", "timestamp"} {
			if s, ok := doc[k].(string); ok && s != "" {
				r.FailedAt = s
				break
			}
		}
	}
	return r
}

// seedRef is a parsed ref.
type seedRef struct {
	list   string
	pos    int64
	digest string
}

func (r seedRef) String() string {
	return r.list + "@" + strconv.FormatInt(r.pos, 10) + "#" + r.digest
}

// parseSeedRef reads LIST@POSITION#DIGEST, the digest required (it is how
// a requeue knows the entry is still the one listed).
func parseSeedRef(s string) (seedRef, error) {
	bad := func(why string) (seedRef, error) {
		return seedRef{}, &InputError{Field: "ref", Reason: why + "; a ref is LIST@POSITION#DIGEST as the list shows it (e.g. dead_letter@12#" + strings.Repeat("0", SeedRefDigest) + ")"}
	}
	rest, digest, ok := strings.Cut(s, "#")
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return bad("no @POSITION")
	}
	r := seedRef{list: rest[:at], digest: strings.ToLower(digest)}
	if !slices.Contains(seedLists(), r.list) {
		return bad(fmt.Sprintf("no list %q in the seed layout", cutText(r.list, 40)))
	}
	p, err := strconv.ParseInt(rest[at+1:], 10, 64)
	if err != nil || p < 0 {
		return bad("the position is not a number from 0")
	}
	r.pos = p
	if _, err := hex.DecodeString(r.digest); !ok || err != nil || len(r.digest) != SeedRefDigest {
		return bad(fmt.Sprintf("the digest is not %d hex digits", SeedRefDigest))
	}
	return r, nil
}

// seedGet reads the entry r names (seed.Get: by position and digest,
// following a trim).
func (s *server) seedGet(ctx context.Context, r seedRef) (seed.Entry, seed.Where, error) {
	sc := s.cfg.Seed
	e, where, err := seed.Get(ctx, sc.Client, sc.Prefix, r.list, r.pos, r.digest)
	if err != nil {
		return seed.Entry{}, 0, fmt.Errorf("read %s: %w", r, err)
	}
	if where == seed.Gone {
		return e, where, fmt.Errorf("read %s: %w", r, errSeedGone)
	}
	return e, where, nil
}

// errSeedGone: a ref names no entry any more (its list has nothing at its
// position and its bytes are nowhere below).
var errSeedGone = errors.New("no such seed entry: the list has no entry at that position any more")

// ErrReadOnly is matched by the error of a seed requeue on a UI serving the
// seed layout read-only (SeedConfig.Requeue off).
var ErrReadOnly = errors.New("read-only: the seed layout is served without requeue (faultline ui --layout seed --allow-requeue enables it)")

// seedRequeueOne requeues the entry r names, only if it is still the one
// listed (the CLI's rule).
func (s *server) seedRequeueOne(ctx context.Context, r seedRef, who, via string) (_ OneResult, ferr error) {
	defer func() { s.countErr(actionRequeue, ferr) }()
	sc := s.cfg.Seed
	res := OneResult{ID: r.String(), Action: actionRequeue}
	if !sc.Requeue {
		return res, ErrReadOnly
	}
	e, where, err := s.seedGet(ctx, r)
	var o seed.Outcome
	switch {
	case errors.Is(err, errSeedGone):
		o, err = seed.NotFound, nil
	case err != nil:
	case where == seed.ChangedAt:
		o = seed.Changed
	case where == seed.Restatused && e.Status() == seed.Reprocessing:
		o = seed.AlreadyReprocessing
	case where == seed.Restatused:
		o = seed.Changed
	case e.Invalid != "":
		o = seed.NotRequeueable
	default:
		o, err = seed.Requeue(ctx, sc.Client, sc.Prefix, e.Ref(), seed.RequeueOptions{To: sc.To})
	}
	rec := seedAudit(who, via, 1)
	rec.IDs = []string{r.String()}
	if err == nil {
		res.Outcome = o.String()
		if o == seed.Requeued {
			rec.Moved = 1
			s.metrics.Requeued(1)
			res.Status = seed.Reprocessing
		} else {
			rec.Skipped = 1
			rec.Note += "; skipped: " + o.String()
		}
	}
	res.AuditID, res.AuditError = s.recordOne(ctx, rec, err)
	if err != nil {
		return res, fmt.Errorf("requeue %s: %w", r, err)
	}
	return res, nil
}

// SeedBulk is a seed bulk requeue's count (a dry run) or outcome.
type SeedBulk struct {
	DryRun bool   `json:"dry_run"`
	Filter string `json:"filter,omitempty"`
	// Stated is the count the operator was shown: the entries that would
	// move (on a dry run, the count to show).
	Stated int `json:"stated"`
	// Matched counts the entries the filter selected; Moved those
	// requeued; Skipped the others, by reason.
	Matched int            `json:"matched"`
	Moved   int            `json:"moved"`
	Skipped int            `json:"skipped"`
	Reasons map[string]int `json:"skipped_by_reason,omitempty"`
	// Cutoff is the lists' lengths when the count was taken: a run carries
	// it back, so that entries dead-lettered since are left alone.
	Cutoff     string `json:"cutoff"`
	AuditID    string `json:"audit_id,omitempty"`
	AuditError string `json:"audit_error,omitempty"`
}

func seedReasons(r seed.BulkResult) map[string]int {
	out := map[string]int{}
	for _, x := range []struct {
		o seed.Outcome
		n int
	}{{seed.AlreadyReprocessing, r.AlreadyReprocessing}, {seed.Changed, r.Changed}, {seed.NotFound, r.NotFound}, {seed.NotRequeueable, r.NotRequeueable}, {seed.DeletedInSeed, r.DeletedInSeed}} {
		if x.n > 0 {
			out[x.o.String()] = x.n
		}
	}
	return out
}

// encodeCutoff and decodeCutoff carry a cut-off through a form or a JSON
// body as opaque text, signed under the server's secret: a run takes only a
// cut-off this server's count returned, never one a request made up.
func (s *server) encodeCutoff(c seed.Cutoff) string {
	b, _ := json.Marshal(c)
	return s.sealText("seed-cutoff", b)
}

func (s *server) decodeCutoff(text string) (seed.Cutoff, error) {
	var c seed.Cutoff
	b, ok := s.openText("seed-cutoff", text)
	var err error
	if !ok {
		err = errors.New("not signed by this server")
	} else {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || len(c.Lists) == 0 {
		return c, &InputError{Field: "cutoff", Reason: "not a cut-off a count returned"}
	}
	return c, nil
}

// seedCount counts what a bulk requeue of f would move, taking its
// cut-off.
func (s *server) seedCount(ctx context.Context, f seed.Filter) (_ SeedBulk, ferr error) {
	defer func() { s.countErr(opRead, ferr) }()
	sc := s.cfg.Seed
	res, err := seed.RequeueAll(ctx, sc.Client, sc.Prefix, f, seed.RequeueOptions{To: sc.To, DryRun: true})
	if err != nil {
		return SeedBulk{}, fmt.Errorf("count the entries to requeue: %w", err)
	}
	return SeedBulk{DryRun: true, Filter: seedFilterText(f), Stated: res.Requeued, Matched: res.Matched,
		Skipped: res.Matched - res.Requeued, Reasons: seedReasons(res), Cutoff: s.encodeCutoff(res.Cutoff)}, nil
}

// seedRunBulk requeues what f selects among the entries the cut-off saw,
// between a "started" and a "done" audit line.
func (s *server) seedRunBulk(ctx context.Context, f seed.Filter, cutoff seed.Cutoff, stated int, who, via string) (_ SeedBulk, ferr error) {
	defer func() { s.countErr(actionRequeue, ferr) }()
	sc := s.cfg.Seed
	out := SeedBulk{Filter: seedFilterText(f), Stated: stated, Cutoff: s.encodeCutoff(cutoff)}
	if !sc.Requeue {
		return out, ErrReadOnly
	}
	rec := seedAudit(who, via, stated)
	rec.Phase, rec.Filter = "started", out.Filter
	if _, err := s.record(ctx, rec, nil); err != nil {
		return out, fmt.Errorf("requeue: nothing moved: %w", err)
	}
	res, err := seed.RequeueAll(ctx, sc.Client, sc.Prefix, f, seed.RequeueOptions{To: sc.To, Cutoff: &cutoff})
	out.Matched, out.Moved, out.Reasons = res.Matched, res.Requeued, seedReasons(res)
	out.Skipped = max(stated-out.Moved, 0)
	s.metrics.Requeued(out.Moved)
	rec.Phase, rec.Moved, rec.Skipped = "done", out.Moved, out.Skipped
	out.AuditID, out.AuditError = s.recordOne(ctx, rec, err)
	if err != nil {
		return out, fmt.Errorf("requeue (after %d moved): %w", out.Moved, err)
	}
	return out, nil
}

// seedAudit is a seed action's audit record (SeedConfig.Audit's stream,
// and the log).
func seedAudit(who, via string, stated int) dlq.AuditRecord {
	return dlq.AuditRecord{By: who, Via: via, Action: actionRequeue, Stated: stated, Note: "seed layout"}
}

// seedListData is the seed list page's.
type seedListData struct {
	Form     map[string]string
	Filter   string
	Query    string
	Rows     []SeedRow
	NextURL  template.URL
	First    bool
	Requeue  bool
	WorkList string
	Error    *InputError
}

func (s *server) workList() string {
	sc := s.cfg.Seed
	if sc.To != "" {
		return sc.Prefix + sc.To
	}
	return layout.Inject{Preset: layout.PresetSeed, Prefix: sc.Prefix}.Resolved().RedisList.Key
}

func (s *server) pgSeedList(w http.ResponseWriter, r *http.Request, v *view) {
	q := r.URL.Query()
	v.Title = "Seed DLQ"
	d := seedListData{Form: map[string]string{}, First: q.Get("cursor") == "", Requeue: s.cfg.Seed.Requeue, WorkList: s.workList()}
	for _, name := range []string{"severity", "status", seedFieldList, "error-text"} {
		d.Form[name] = strings.Join(q[name], ",")
	}
	f, err := seedFilterOf(q)
	if err != nil {
		var ie *InputError
		errors.As(err, &ie)
		d.Error = ie
		v.Data = d
		s.render(w, http.StatusBadRequest, "seed_list", v)
		return
	}
	d.Filter, d.Query = seedFilterText(f), seedValues(f).Encode()
	sc := s.cfg.Seed
	page, err := seed.List(r.Context(), sc.Client, sc.Prefix, f, q.Get("cursor"), s.cfg.PageSize)
	if errors.Is(err, seed.ErrCursor) {
		s.fail(w, r, v, http.StatusBadRequest, "Bad cursor", "cursor: not a cursor this list printed")
		return
	}
	if err != nil {
		s.storeFail(w, r, v, "list the seed DLQ", err)
		return
	}
	for i := range page.Entries {
		d.Rows = append(d.Rows, SeedRowOf(sc.Prefix, &page.Entries[i]))
	}
	if page.Next != "" {
		nv := seedValues(f)
		nv.Set("cursor", page.Next)
		d.NextURL = template.URL("/?" + nv.Encode()) //nolint:gosec // url.Values.Encode's output
	}
	v.Data = d
	s.render(w, http.StatusOK, "seed_list", v)
}

// seedEntryData is the seed entry page's.
type seedEntryData struct {
	Row        SeedRow
	Ref        string
	Text       string
	Reveal     bool
	Changed    bool
	Restatused bool
	MovedFrom  string
	Requeue    bool
	WorkList   string
	Notice     string
}

func (s *server) pgSeedEntry(w http.ResponseWriter, r *http.Request, v *view) {
	ref, err := parseSeedRef(r.URL.Query().Get("ref"))
	if err != nil {
		s.actionFail(w, r, v, "show", err)
		return
	}
	e, where, err := s.seedGet(r.Context(), ref)
	if errors.Is(err, errSeedGone) {
		s.fail(w, r, v, http.StatusNotFound, "No such entry", fmt.Sprintf("There is no seed DLQ entry %s any more.", ref))
		return
	}
	if err != nil {
		s.storeFail(w, r, v, "read "+ref.String(), err)
		return
	}
	reveal := r.URL.Query().Get("reveal") == "1"
	d := seedEntryData{Row: SeedRowOf(s.cfg.Seed.Prefix, &e), Ref: ref.String(), Reveal: reveal, Requeue: s.cfg.Seed.Requeue, WorkList: s.workList(),
		Changed: where == seed.ChangedAt, Restatused: where == seed.Restatused, Notice: noticeOf(r.URL.Query())}
	if where == seed.Moved || where == seed.Restatused && e.Position != ref.pos {
		d.MovedFrom = ref.String()
	}
	d.Text, _ = payloadOf(e.Bytes, reveal)
	v.Title = "Seed entry " + d.Row.Ref
	v.Data = d
	s.render(w, http.StatusOK, "seed_entry", v)
}

func (s *server) pgSeedRequeue(w http.ResponseWriter, r *http.Request, v *view) {
	ref, err := parseSeedRef(r.PostFormValue("ref"))
	if err != nil {
		s.actionFail(w, r, v, "requeue", err)
		return
	}
	res, err := s.seedRequeueOne(r.Context(), ref, v.Who, viaUI)
	if err != nil {
		s.actionFail(w, r, v, "requeue "+ref.String(), err)
		return
	}
	q := url.Values{"ref": {ref.String()}, "done": {"requeue"}, "outcome": {res.Outcome}}
	if res.AuditError != "" {
		q.Set("audit", "failed")
	}
	http.Redirect(w, r, "/seed/entry?"+q.Encode(), http.StatusSeeOther)
}

// seedBulkData is the seed confirmation and result pages'.
type seedBulkData struct {
	Out      SeedBulk
	Hidden   []kv
	Query    string
	WorkList string
	Done     bool
}

func (s *server) pgSeedBulkConfirm(w http.ResponseWriter, r *http.Request, v *view) {
	if !s.cfg.Seed.Requeue {
		s.actionFail(w, r, v, "requeue", ErrReadOnly)
		return
	}
	f, err := seedFilterOf(r.URL.Query())
	if err != nil {
		s.actionFail(w, r, v, "count", err)
		return
	}
	out, err := s.seedCount(r.Context(), f)
	if err != nil {
		s.actionFail(w, r, v, "count the entries", err)
		return
	}
	var hid []kv
	for name, xs := range seedValues(f) {
		hid = append(hid, kv{name, xs[0]})
	}
	slices.SortFunc(hid, func(a, b kv) int { return strings.Compare(a.Name, b.Name) })
	v.Title = "Confirm: Requeue"
	v.Data = seedBulkData{Out: out, Hidden: hid, Query: seedValues(f).Encode(), WorkList: s.workList()}
	s.render(w, http.StatusOK, "seed_bulk", v)
}

func (s *server) pgSeedBulk(w http.ResponseWriter, r *http.Request, v *view) {
	f, cutoff, stated, err := s.seedBulkForm(r.PostForm)
	if err != nil {
		s.actionFail(w, r, v, "requeue", err)
		return
	}
	out, err := s.seedRunBulk(r.Context(), f, cutoff, stated, v.Who, viaUI)
	if err != nil {
		s.actionFail(w, r, v, "requeue", err)
		return
	}
	v.Title = "Requeue: done"
	v.Data = seedBulkData{Out: out, Query: seedValues(f).Encode(), WorkList: s.workList(), Done: true}
	s.render(w, http.StatusOK, "seed_bulk", v)
}

// seedBulkForm reads a bulk run's filter, cut-off and stated count.
func (s *server) seedBulkForm(vals url.Values) (seed.Filter, seed.Cutoff, int, error) {
	f, err := seedFilterOf(vals)
	if err != nil {
		return f, seed.Cutoff{}, 0, err
	}
	c, err := s.decodeCutoff(vals.Get("cutoff"))
	if err != nil {
		return f, c, 0, err
	}
	st, err := strconv.Atoi(vals.Get("stated"))
	if err != nil || st < 0 {
		return f, c, 0, &InputError{Field: "stated", Reason: "required: the count the confirmation showed"}
	}
	return f, c, st, nil
}

// The seed API.

func (s *server) apiSeedList(w http.ResponseWriter, r *http.Request, _ string) {
	q := r.URL.Query()
	f, err := seedFilterOf(q)
	if err != nil {
		apiFail(w, err)
		return
	}
	limit := s.cfg.PageSize
	if l := q.Get("limit"); l != "" {
		if limit, err = strconv.Atoi(l); err != nil || limit < 1 || limit > seed.MaxLimit {
			apiFail(w, &InputError{Field: "limit", Reason: "expected 1.." + strconv.Itoa(seed.MaxLimit)})
			return
		}
	}
	sc := s.cfg.Seed
	page, err := seed.List(r.Context(), sc.Client, sc.Prefix, f, q.Get("cursor"), limit)
	if errors.Is(err, seed.ErrCursor) {
		apiFail(w, &InputError{Field: "cursor", Reason: "not a cursor this list printed"})
		return
	}
	if err != nil {
		s.countErr(opRead, err)
		apiFail(w, err)
		return
	}
	body := struct {
		Entries []SeedRow `json:"entries"`
		Next    string    `json:"next,omitempty"`
		Filter  string    `json:"filter,omitempty"`
	}{Entries: []SeedRow{}, Next: page.Next, Filter: seedFilterText(f)}
	for i := range page.Entries {
		body.Entries = append(body.Entries, SeedRowOf(sc.Prefix, &page.Entries[i]))
	}
	writeJSON(w, http.StatusOK, body)
}

func (s *server) apiSeedGet(w http.ResponseWriter, r *http.Request, _ string) {
	ref, err := parseSeedRef(r.URL.Query().Get("ref"))
	if err != nil {
		apiFail(w, err)
		return
	}
	e, where, err := s.seedGet(r.Context(), ref)
	if errors.Is(err, errSeedGone) {
		apiError(w, http.StatusNotFound, maskText(err.Error()), "ref")
		return
	}
	if err != nil {
		s.countErr(opRead, err)
		apiFail(w, err)
		return
	}
	text, _ := payloadOf(e.Bytes, r.URL.Query().Get("reveal") == "1")
	writeJSON(w, http.StatusOK, struct {
		SeedRow
		Entry      string `json:"entry"`
		Changed    bool   `json:"changed_since_listed,omitempty"`
		Restatused bool   `json:"status_changed_since_listed,omitempty"`
	}{SeedRowOf(s.cfg.Seed.Prefix, &e), text, where == seed.ChangedAt, where == seed.Restatused})
}

// seedRequeueBody is a seed requeue: one ref, or a filter (a dry run
// answers the count and the cut-off, which the run carries back with the
// count as stated).
type seedRequeueBody struct {
	Ref    string     `json:"ref"`
	Filter url.Values `json:"filter"`
	DryRun bool       `json:"dry_run"`
	Cutoff string     `json:"cutoff"`
	Stated *int       `json:"stated"`
}

func (s *server) apiSeedRequeue(w http.ResponseWriter, r *http.Request, who string) {
	var b seedRequeueBody
	if err := decode(r, &b); err != nil {
		apiFail(w, err)
		return
	}
	if b.Ref != "" {
		ref, err := parseSeedRef(b.Ref)
		if err != nil {
			apiFail(w, err)
			return
		}
		res, err := s.seedRequeueOne(r.Context(), ref, who, viaAPI)
		if err != nil {
			apiFail(w, err)
			return
		}
		writeJSON(w, http.StatusOK, res)
		return
	}
	f, err := seedFilterOf(b.Filter)
	if err != nil {
		apiFail(w, err)
		return
	}
	var out SeedBulk
	switch {
	case !s.cfg.Seed.Requeue:
		err = ErrReadOnly
	case b.DryRun:
		out, err = s.seedCount(r.Context(), f)
	case b.Stated == nil:
		err = &InputError{Field: "stated", Reason: "required: the count a dry run answered (with its cutoff)"}
	default:
		var c seed.Cutoff
		if c, err = s.decodeCutoff(b.Cutoff); err == nil {
			out, err = s.seedRunBulk(r.Context(), f, c, *b.Stated, who, viaAPI)
		}
	}
	if err != nil {
		apiFail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}
