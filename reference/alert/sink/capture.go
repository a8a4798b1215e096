package sink

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"unicode/utf8"
)

// capture records the last HTTP answer of one request: its status, headers
// and the first MaxBodyExcerpt bytes of its body. slack-go reduces an error
// answer to a status line (and a 429 with an HTTP-date Retry-After to a bare
// *strconv.NumError) and throws the body away; the capture keeps what the
// alerter needs to build a *failure.HTTPError.
type capture struct {
	mu     sync.Mutex
	code   int
	header http.Header
	body   []byte
}

// captureKey is the context key of a request's *capture.
type captureKey struct{}

// withCapture returns ctx carrying c, for captureTransport to fill.
func withCapture(ctx context.Context, c *capture) context.Context {
	return context.WithValue(ctx, captureKey{}, c)
}

// record starts recording resp, replacing the previous answer (a redirect).
func (c *capture) record(resp *http.Response) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.code = resp.StatusCode
	c.header = resp.Header.Clone()
	c.body = c.body[:0]
}

// write keeps the start of the body as it is read.
func (c *capture) write(p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := MaxBodyExcerpt - len(c.body); room > 0 {
		c.body = append(c.body, p[:min(room, len(p))]...)
	}
}

// answer returns the recorded answer; ok is false when none arrived.
func (c *capture) answer() (code int, header http.Header, body []byte, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.code, c.header, bytes.Clone(c.body), c.code != 0
}

// captureTransport is an http.RoundTripper that records every answer into
// the *capture found in its request's context, teeing the body so the caller
// still reads all of it. Requests without a capture pass through untouched.
type captureTransport struct {
	base http.RoundTripper
}

// RoundTrip sends req through the base transport and records the answer.
func (t *captureTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	c, ok := req.Context().Value(captureKey{}).(*capture)
	if !ok {
		return resp, nil
	}
	c.record(resp)
	resp.Body = &teeBody{ReadCloser: resp.Body, c: c}
	return resp, nil
}

// teeBody copies what is read from a response body into a capture. It ends
// the body after maxDrain bytes: slack-go drains an error answer's body to
// its end, and a huge one should cost a connection, not the time to read it.
type teeBody struct {
	io.ReadCloser
	c    *capture
	read int
}

// Read reads from the body and records what was read.
func (b *teeBody) Read(p []byte) (int, error) {
	if b.read >= maxDrain {
		return 0, io.EOF
	}
	n, err := b.ReadCloser.Read(p[:min(len(p), maxDrain-b.read)])
	b.read += n
	if n > 0 {
		b.c.write(p[:n])
	}
	return n, err
}

// excerpt turns the start of a body into a short, valid UTF-8 text: a cut
// rune at the end is dropped, surrounding space trimmed.
func excerpt(b []byte) string {
	b = b[:min(len(b), MaxBodyExcerpt)]
	// Drop a last rune cut in two by the limit.
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				b = b[:len(b)-i]
			}
			break
		}
	}
	return strings.TrimSpace(strings.ToValidUTF8(string(b), "\uFFFD"))
}
