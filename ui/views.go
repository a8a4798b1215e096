package ui

import (
	"bytes"
	"encoding/json"
	"errors"
	"html/template"
	"io"
	"net"
	"net/url"
	"sort"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/internal/age"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/redact"
)

// maskText is s with every secret masked by the default redactor, the pass
// the CLI's texts go through too.
func maskText(s string) string { return redact.Default().String(s) }

// maskedAudit returns recs with the texts an operator typed masked (who,
// the filter, the note: a quarantine's reason), as faultline dlq audit
// prints them: a record is stored as its tool wrote it.
func maskedAudit(recs []dlq.AuditRecord) []dlq.AuditRecord {
	out := make([]dlq.AuditRecord, len(recs))
	for i, r := range recs {
		r.By, r.Filter, r.Note = maskText(r.By), maskText(r.Filter), maskText(r.Note)
		out[i] = r
	}
	return out
}

// payloadOf returns a JSON payload indented (secrets masked unless
// reveal), or a payload that is not JSON as text; isJSON says which.
func payloadOf(p []byte, reveal bool) (text string, isJSON bool) {
	if len(p) == 0 {
		return "", false
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(p))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil || dec.More() {
		if reveal {
			return string(p), false
		}
		return maskText(string(p)), false
	}
	if !reveal {
		v = redact.Default().Value(v)
	}
	// The text as the operator wrote it: "<" stays "<" (the page escapes
	// it when it renders).
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return maskText(string(p)), false
	}
	return strings.TrimSuffix(out.String(), "\n"), true
}

// unreachable reports whether err means the store could not be reached (a
// network error anywhere in its chain).
func unreachable(err error) bool {
	var (
		op  *net.OpError
		dns *net.DNSError
	)
	return errors.As(err, &op) || errors.As(err, &dns) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH) ||
		errors.Is(err, redis.ErrPoolTimeout)
}

func sortStrings(xs []string) { sort.Strings(xs) }

// EntryView is one entry as the API returns it and the entry page shows
// it: every field, texts masked unless revealed.
type EntryView struct {
	ID             string          `json:"id"`
	Revision       string          `json:"revision"`
	Status         string          `json:"status"`
	Corrupt        bool            `json:"corrupt,omitempty"`
	DecodeError    string          `json:"decode_error,omitempty"`
	Raw            string          `json:"raw,omitempty"`
	Task           string          `json:"task,omitempty"`
	Queue          string          `json:"queue,omitempty"`
	SourceQueue    string          `json:"source_queue,omitempty"`
	Dependency     string          `json:"dependency,omitempty"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
	Attempts       int             `json:"attempts"`
	EnqueuedAt     time.Time       `json:"enqueued_at,omitzero"`
	FirstFailedAt  time.Time       `json:"first_failed_at,omitzero"`
	LastFailedAt   time.Time       `json:"last_failed_at,omitzero"`
	Severity       string          `json:"severity,omitempty"`
	Class          string          `json:"class,omitempty"`
	Verdict        string          `json:"verdict,omitempty"`
	Reason         string          `json:"reason,omitempty"`
	Error          string          `json:"error,omitempty"`
	ErrorType      string          `json:"error_type,omitempty"`
	Requeues       int             `json:"requeues,omitempty"`
	AutoRetries    int             `json:"auto_retries,omitempty"`
	Payload        json.RawMessage `json:"payload,omitempty"`
	PayloadText    string          `json:"payload_text,omitempty"`
	Masked         bool            `json:"masked"`
	History        []FailureView   `json:"history,omitempty"`
	Changes        []ChangeView    `json:"changes,omitempty"`

	// pretty is the payload as the page shows it.
	pretty string
}

// FailureView is one failed attempt.
type FailureView struct {
	Attempt   int       `json:"attempt"`
	At        time.Time `json:"at"`
	Error     string    `json:"error"`
	ErrorType string    `json:"error_type,omitempty"`
	Verdict   string    `json:"verdict"`
}

// ChangeView is one status change.
type ChangeView struct {
	At     time.Time `json:"at"`
	From   string    `json:"from,omitempty"`
	To     string    `json:"to"`
	By     string    `json:"by,omitempty"`
	Reason string    `json:"reason,omitempty"`
}

// Pretty is the payload as text, indented when it is JSON.
func (v EntryView) Pretty() string { return v.pretty }

// viewOf is e as the UI shows it; reveal leaves texts unmasked.
func viewOf(e *dlq.Entry, reveal bool) EntryView {
	mask := maskText
	if reveal {
		mask = func(s string) string { return s }
	}
	v := EntryView{ID: e.ID(), Revision: dlq.Revision(e), Masked: !reveal}
	if e.Corrupt {
		v.Status, v.Corrupt, v.DecodeError = "corrupt", true, mask(e.DecodeError)
		if utf8.Valid(e.Raw) {
			v.Raw = mask(string(e.Raw))
		}
		return v
	}
	j := e.Job
	v.Status, v.Task, v.Queue, v.SourceQueue, v.Dependency = e.Status.String(), j.Task, j.QueueName(), e.SourceQueue, j.Dependency
	v.IdempotencyKey, v.Attempts, v.EnqueuedAt = mask(j.IdempotencyKey), j.Attempts, j.EnqueuedAt
	v.FirstFailedAt, v.LastFailedAt, v.Verdict = e.FirstFailedAt, e.LastFailedAt, e.Verdict.String()
	v.Severity, v.Class = e.Verdict.Severity.String(), e.Verdict.Class.String()
	v.Reason, v.Requeues, v.AutoRetries = mask(e.Reason), e.Requeues, e.AutoRetries
	var isJSON bool
	v.pretty, isJSON = payloadOf(j.Payload, reveal)
	if isJSON {
		v.Payload = json.RawMessage(v.pretty)
	} else {
		v.PayloadText = v.pretty
	}
	for _, f := range e.History {
		v.History = append(v.History, FailureView{Attempt: f.Attempt, At: f.At, Error: mask(f.Error), ErrorType: f.ErrorType, Verdict: f.Verdict.String()})
	}
	if n := len(e.History); n > 0 {
		v.Error, v.ErrorType = mask(e.History[n-1].Error), e.History[n-1].ErrorType
	}
	for _, ch := range e.Changes {
		cv := ChangeView{At: ch.At, To: ch.To.String(), By: mask(ch.By), Reason: mask(ch.Reason)}
		if ch.From != 0 {
			cv.From = ch.From.String()
		}
		v.Changes = append(v.Changes, cv)
	}
	return v
}

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	"ts": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	// ago is how long before now t was, printed as the CLI prints it.
	"ago": func(now, t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return age.Format(now.Sub(t))
	},
	"cut": func(n int, s string) string {
		if utf8.RuneCountInString(s) <= n {
			return s
		}
		return string([]rune(s)[:n-1]) + "…"
	},
	"sortedKeys": func(m map[string]int) []string {
		out := make([]string, 0, len(m))
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	},
	"join": strings.Join,
	// idPath is an entry ID as one path segment: every href and form
	// action carrying an ID goes through it, so an ID holding "/", "?",
	// "#" or ".." names that entry and no other.
	"idPath": idPath,
	// listURL and bulkURL link to the list and a bulk confirmation with an
	// encoded filter (url.Values.Encode: safe as a URL as it is).
	"listURL": func(query string) template.URL {
		if query == "" {
			return "/entries"
		}
		return template.URL("/entries?" + query) //nolint:gosec // query is url.Values.Encode's output
	},
	"bulkURL": func(action, query string) template.URL {
		u := "/bulk?action=" + url.QueryEscape(action)
		if query != "" {
			u += "&" + query
		}
		return template.URL(u) //nolint:gosec // query is url.Values.Encode's output
	},
	// seedURL links to a seed page with an encoded filter.
	"seedURL": func(path, query string) template.URL {
		if query == "" {
			return template.URL(path) //nolint:gosec // a fixed path
		}
		return template.URL(path + "?" + query) //nolint:gosec // query is url.Values.Encode's output
	},
	"counts": func(title, field string, m map[string]int) countsView {
		return countsView{Title: title, Field: field, M: m}
	},
}

// countsView is one card of the dashboard: counts by one field, each
// linking to the list filtered by it.
type countsView struct {
	Title, Field string
	M            map[string]int
}

// idPath escapes id as one path segment (url.PathEscape, and the dots of
// "." and ".." too, which a path would otherwise resolve). The routes read
// it back with r.PathValue.
func idPath(id string) template.URL {
	e := url.PathEscape(id)
	if e == "." || e == ".." || e == "" {
		e = strings.ReplaceAll(e, ".", "%2E")
	}
	return template.URL(e) //nolint:gosec // url.PathEscape's output: one segment, nothing to resolve
}
