package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/failure"
)

// Client calls a gateway. Its methods are safe for concurrent use.
type Client struct {
	url     string
	timeout time.Duration
	hc      *http.Client
}

// Answer is what a call was answered, whether or not it failed.
type Answer struct {
	// Fault names the fault that decided the answer, "" for none.
	Fault string
	// Class is the true class of the fault's error (classify.Class's
	// name), "" for none.
	Class string
	// Status is the HTTP status received; 0 when none came.
	Status int
	// Charge is a payment's charge id, on a success.
	Charge string
	// Replayed says the success replays an earlier charge of the key.
	Replayed bool
}

// NewClient returns a client of the gateway at baseURL (Gateway.URL) whose
// calls give up after timeout of wall time (0: no limit but the caller's
// context).
func NewClient(baseURL string, timeout time.Duration) *Client {
	tr := &http.Transport{
		Proxy:               nil, // loopback; never through an environment's proxy
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
	}
	return &Client{url: strings.TrimRight(baseURL, "/") + CallPath, timeout: timeout, hc: &http.Client{Transport: tr}}
}

// CloseIdleConnections closes the client's idle keep-alive connections.
func (c *Client) CloseIdleConnections() { c.hc.CloseIdleConnections() }

// Call calls the gateway for job jobID with idempotency key key. A success
// is a nil error. A failure is the error the fault's model returns in the
// simulator, rebuilt from the answer, so the classifier gives both the same
// verdict: a *failure.HTTPError (its status, body, headers and sentinel,
// and the exact Retry-After hint through failure.WithRetryAfter), a
// *failure.CardError, a *failure.TimeoutError for an answer that did not
// come in time or was dropped after a timeout hint, the *net.OpError of a
// refused dial. Other transport failures are returned as the http
// package gives them (a *url.Error), wrapped; a context canceled by the
// caller too. The Answer holds what arrived, the fault's name and class
// included (from a 103 hint when no answer came).
func (c *Client) Call(ctx context.Context, jobID, key string) (Answer, error) {
	return c.CallFor(ctx, Caller{Job: jobID, Key: key})
}

// Caller is who makes a call: the job, its idempotency key, and, for the
// faults whose schedule names tasks or attempts, the job's task and the
// attempt's number (1 for the first); Worker is the worker process making
// it (w1..wN), for the worker faults that wait for it to be mid-call.
type Caller struct {
	Job, Key, Task string
	Attempt        int
	Worker         string
}

// CallFor is Call made by caller, whose task, attempt and worker travel in
// X-Faultline-Task, X-Faultline-Attempt and X-Faultline-Worker when set.
func (c *Client) CallFor(ctx context.Context, caller Caller) (Answer, error) {
	jobID, key := caller.Job, caller.Key
	start := time.Now()
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	var (
		mu   sync.Mutex
		hint textproto.MIMEHeader
	)
	trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
		if code == http.StatusEarlyHints {
			mu.Lock()
			hint = h
			mu.Unlock()
		}
		return nil
	}}
	body, _ := json.Marshal(request{Job: jobID, IdempotencyKey: key, Task: caller.Task, Attempt: caller.Attempt, Worker: caller.Worker})
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return Answer{}, fmt.Errorf("call %s: %w", c.url, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderHints, "1")
	if jobID != "" {
		req.Header.Set(HeaderJob, jobID)
	}
	if key != "" {
		req.Header.Set(HeaderIdempotencyKey, key)
	}
	if caller.Task != "" {
		req.Header.Set(HeaderTask, caller.Task)
	}
	if caller.Attempt > 0 {
		req.Header.Set(HeaderAttempt, strconv.Itoa(caller.Attempt))
	}
	if caller.Worker != "" {
		req.Header.Set(HeaderWorker, caller.Worker)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		mu.Lock()
		h := http.Header(hint)
		mu.Unlock()
		return c.lost(ctx, h, err, time.Since(start))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return c.lost(ctx, resp.Header, err, time.Since(start))
	}
	a := Answer{Fault: resp.Header.Get(HeaderFault), Class: resp.Header.Get(HeaderClass), Status: resp.StatusCode}
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		var ok struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(b, &ok)
		a.Charge, a.Replayed = ok.ID, resp.Header.Get(HeaderReplayed) == "true"
		return a, nil
	}
	return a, errorFor(resp.StatusCode, resp.Header, b)
}

// lost is the error of a call that got no answer (err from the transport),
// h the hint received, if any.
func (c *Client) lost(ctx context.Context, h http.Header, err error, waited time.Duration) (Answer, error) {
	a := Answer{Fault: h.Get(HeaderFault), Class: h.Get(HeaderClass)}
	if errors.Is(ctx.Err(), context.Canceled) {
		return a, fmt.Errorf("call %s: %w", c.url, err) // the caller's own cancellation
	}
	op := h.Get(HeaderOp)
	if op == "" {
		op = "POST " + c.url
	}
	switch h.Get(HeaderOutcome) {
	case string(OutcomeTimeout):
		return a, &failure.TimeoutError{Op: op, After: waited}
	case string(OutcomeRefused):
		name := h.Get(HeaderDependency)
		if name == "" {
			name = c.url
		}
		return a, &net.OpError{Op: "dial", Net: "tcp", Addr: hostAddr(name), Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}
	if t, ok := errors.AsType[classify.Timeouter](err); (ok && t.Timeout()) || errors.Is(err, context.DeadlineExceeded) {
		return a, &failure.TimeoutError{Op: op, After: waited}
	}
	return a, fmt.Errorf("call %s: %w", c.url, err)
}
