package oracle

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/faultline/faultline/reference/redact"
)

// AtRest returns a writer that writes to w the JSON written to it (a
// history: Write) with every string's secrets masked by k, each by its
// keyed hash, so that a history kept on disk holds no password or token
// while equal secrets stay equal (the judge reads the masked file to the
// same verdict). A "payload" (base64, as encoding/json writes []byte) is
// decoded, masked and encoded again. Close flushes and returns the first
// error; the JSON's structure, order and numbers are kept.
func AtRest(w io.Writer, k *redact.Keyed) io.WriteCloser {
	pr, pw := io.Pipe()
	a := &atRest{pw: pw, done: make(chan error, 1)}
	go func() {
		err := maskJSON(pr, w, k)
		_ = pr.CloseWithError(err) // unblocks a writer when the masking failed
		a.done <- err
	}()
	return a
}

type atRest struct {
	pw   *io.PipeWriter
	done chan error
	once sync.Once
	err  error
}

func (a *atRest) Write(p []byte) (int, error) { return a.pw.Write(p) }

func (a *atRest) Close() error {
	a.once.Do(func() {
		_ = a.pw.Close()
		a.err = <-a.done
	})
	return a.err
}

// jsonFrame is one open object or array of maskJSON's output.
type jsonFrame struct {
	object bool
	n      int    // values (an object's: keys and values) written
	key    string // an object's current key
}

// maskJSON copies the JSON values of r to w, token by token, masking each
// string.
func maskJSON(r io.Reader, w io.Writer, k *redact.Keyed) error {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	bw := bufio.NewWriterSize(w, 64<<10)
	var stack []jsonFrame
	top := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("mask the history: %w", err)
		}
		// The separator before this token.
		if len(stack) == 0 {
			if top > 0 {
				bw.WriteByte('\n')
			}
		} else if d, end := tok.(json.Delim); !end || (d != '}' && d != ']') {
			f := &stack[len(stack)-1]
			switch {
			case f.object && f.n%2 == 1:
				bw.WriteByte(':')
			case f.n > 0:
				bw.WriteByte(',')
			}
		}
		isKey := len(stack) > 0 && stack[len(stack)-1].object && stack[len(stack)-1].n%2 == 0
		switch t := tok.(type) {
		case json.Delim:
			bw.WriteByte(byte(t))
			switch t {
			case '{', '[':
				stack = append(stack, jsonFrame{object: t == '{'})
				continue // counted when it closes
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			v := t
			if isKey {
				stack[len(stack)-1].key = t
			} else {
				v = maskString(k, t, len(stack) > 0 && strings.EqualFold(stack[len(stack)-1].key, "payload"))
			}
			b, _ := json.Marshal(v)
			bw.Write(b)
		case json.Number:
			bw.WriteString(t.String())
		case bool:
			if t {
				bw.WriteString("true")
			} else {
				bw.WriteString("false")
			}
		case nil:
			bw.WriteString("null")
		}
		if len(stack) == 0 {
			top++
		} else {
			stack[len(stack)-1].n++
		}
	}
	if len(stack) > 0 {
		return errors.New("mask the history: the JSON ends inside a value")
	}
	return bw.Flush()
}

// maskString masks s; a payload's base64 is decoded, masked and encoded
// again (a payload that is not base64 is masked as text).
func maskString(k *redact.Keyed, s string, payload bool) string {
	if payload {
		if b, err := base64.StdEncoding.DecodeString(s); err == nil {
			m := k.String(string(b))
			if m == string(b) {
				return s
			}
			return base64.StdEncoding.EncodeToString([]byte(m))
		}
	}
	return k.String(s)
}
