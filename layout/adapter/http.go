package adapter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/faultline/faultline/layout"
)

var (
	_ Injector = (*httpInjector)(nil)
	_ Reader   = (*httpReader)(nil)
)

// MaxHTTPBody bounds the DLQ body an HTTP reader reads: 64 MiB.
const MaxHTTPBody = 64 << 20

// excerptLen bounds the excerpts of bodies and stderr in errors.
const excerptLen = 200

// ErrStatus is matched by the error of an HTTP adapter whose endpoint
// answered a status other than 2xx (*StatusError).
var ErrStatus = errors.New("unexpected HTTP status")

// StatusError is an HTTP answer other than 2xx.
type StatusError struct {
	Method, URL string
	Status      int
	// Body is an excerpt of the answer's body (at most 200 bytes).
	Body string
}

// Error returns "METHOD URL: STATUS: BODY".
func (e *StatusError) Error() string {
	return fmt.Sprintf("%s %s: %d %s: %q", e.Method, e.URL, e.Status, http.StatusText(e.Status), e.Body)
}

// Is matches ErrStatus.
func (e *StatusError) Is(target error) bool { return target == ErrStatus }

func ok2xx(code int) bool { return code >= 200 && code < 300 }

// statusError reads an excerpt of a non-2xx answer's body.
func statusError(method, url string, resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, excerptLen+1))
	return &StatusError{Method: method, URL: url, Status: resp.StatusCode, Body: excerpt(b, excerptLen)}
}

// httpInjector POSTs documents to an endpoint.
type httpInjector struct {
	client *http.Client
	url    string
	header map[string]string
	doc    docRenderer
}

func (h *httpInjector) Inject(ctx context.Context, j layout.Job) error {
	b, err := h.doc.render(j)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("inject job %s: POST %s: %w", j.ID, h.url, err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range h.header {
		req.Header.Set(k, v)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return fmt.Errorf("inject job %s: %w", j.ID, err)
	}
	defer resp.Body.Close()
	if !ok2xx(resp.StatusCode) {
		return fmt.Errorf("inject job %s: %w", j.ID, statusError(http.MethodPost, h.url, resp))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // let the connection be reused
	return nil
}

func (h *httpInjector) Close() error { return nil }

// httpReader GETs the entries from an endpoint.
type httpReader struct {
	client *http.Client
	url    string
	header map[string]string
	fields layout.Fields
}

func (h *httpReader) Read(ctx context.Context) ([]layout.Entry, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.url, nil)
	if err != nil {
		return nil, fmt.Errorf("read DLQ: GET %s: %w", h.url, err)
	}
	req.Header.Set("Accept", "application/json")
	for k, v := range h.header {
		req.Header.Set(k, v)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("read DLQ: %w", err)
	}
	defer resp.Body.Close()
	if !ok2xx(resp.StatusCode) {
		return nil, fmt.Errorf("read DLQ: %w", statusError(http.MethodGet, h.url, resp))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxHTTPBody+1))
	if err != nil {
		return nil, fmt.Errorf("read DLQ: GET %s: body: %w", h.url, err)
	}
	if len(body) > MaxHTTPBody {
		return nil, fmt.Errorf("read DLQ: GET %s: body is over %d bytes", h.url, MaxHTTPBody)
	}
	raws := splitEntries(body)
	out := make([]layout.Entry, len(raws))
	for i, raw := range raws {
		out[i] = layout.ParseEntry(fmt.Sprintf("GET[%d]", i), raw, h.fields).RequireID()
	}
	return out, nil
}

func (h *httpReader) Close() error { return nil }

// splitEntries cuts a body into entries: the elements of a JSON array, or
// of the "entries" array of an object; else the body's non-empty lines
// (JSON lines; a line that is not JSON is an entry too, read as corrupt).
// A body that is one JSON value of another shape is one entry.
func splitEntries(body []byte) [][]byte {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil
	}
	if json.Valid(trimmed) {
		var arr []json.RawMessage
		if trimmed[0] == '[' && json.Unmarshal(trimmed, &arr) == nil {
			return raws(arr)
		}
		var obj struct {
			Entries []json.RawMessage `json:"entries"`
		}
		if trimmed[0] == '{' && json.Unmarshal(trimmed, &obj) == nil && obj.Entries != nil {
			return raws(obj.Entries)
		}
		return [][]byte{trimmed}
	}
	var out [][]byte
	for _, line := range bytes.Split(body, []byte("\n")) {
		if line = bytes.TrimSpace(line); len(line) > 0 {
			out = append(out, line)
		}
	}
	return out
}

// raws returns the elements compacted (an entry's bytes without the
// array's indentation).
func raws(xs []json.RawMessage) [][]byte {
	out := make([][]byte, len(xs))
	for i, x := range xs {
		var buf bytes.Buffer
		if json.Compact(&buf, x) == nil {
			out[i] = buf.Bytes()
		} else {
			out[i] = x
		}
	}
	return out
}
