package sink

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/faultline/faultline/reference/alert"
)

var _ alert.Sink = (*Memory)(nil)

// Memory is a sink that keeps what it accepts, for tests and the simulator.
// Its Fail hook plays a receiver that is down, rate limited or
// misconfigured. The zero value is ready to use; it is safe for concurrent
// use.
type Memory struct {
	// Fail, when set, is asked on every Send whether to reject n, and with
	// what error (e.g. a *failure.HTTPError with code 429 and a Retry-After
	// header). A rejected notification is not recorded. Set it before the
	// first Send. Concurrent Sends call it concurrently; it is called without
	// the Memory's lock held, so it may call Sent and Attempts.
	Fail func(n alert.Notification) error

	mu       sync.Mutex
	sent     []alert.Notification
	attempts int
}

// Send counts the attempt, then rejects n if ctx is done or Fail returns an
// error (returned wrapped), else records a copy of n and returns nil.
func (m *Memory) Send(ctx context.Context, n alert.Notification) error {
	m.mu.Lock()
	m.attempts++
	m.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory sink: %w", err)
	}
	if m.Fail != nil {
		if err := m.Fail(n); err != nil {
			return fmt.Errorf("memory sink: notification %d: %w", n.ID, err)
		}
	}
	n = cloneNotification(n)
	m.mu.Lock()
	m.sent = append(m.sent, n)
	m.mu.Unlock()
	return nil
}

// Sent returns copies of the accepted notifications, in acceptance order.
func (m *Memory) Sent() []alert.Notification {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]alert.Notification, len(m.sent))
	for i, n := range m.sent {
		out[i] = cloneNotification(n)
	}
	return out
}

// Attempts returns how many times Send was called, accepted or not.
func (m *Memory) Attempts() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.attempts
}

// cloneNotification copies n down to its labels, jobs and job fields, so
// that neither the caller nor a reader of Sent can change a record. Field
// values themselves are shared.
func cloneNotification(n alert.Notification) alert.Notification {
	n.Alerts = slices.Clone(n.Alerts)
	for i := range n.Alerts {
		a := &n.Alerts[i]
		a.Labels = maps.Clone(a.Labels)
		a.Jobs = slices.Clone(a.Jobs)
		for j := range a.Jobs {
			a.Jobs[j].Fields = maps.Clone(a.Jobs[j].Fields)
		}
	}
	return n
}
