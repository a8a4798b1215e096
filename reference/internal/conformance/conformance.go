// Package conformance holds what the exported conformance suites, queuetest
// and dlqtest, share: the virtual instant the specs start at, the lease they
// take, the recorder of a backend's store.Config callbacks, and the form in
// which specs compare events.
package conformance

import (
	"fmt"
	"slices"
	"sync"
	"time"

	. "github.com/onsi/gomega" //nolint:revive // Gomega's DSL reads best dot-imported.

	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/store"
)

// T0 is the virtual instant every spec starts at.
var T0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// TTL is the lease the specs take.
const TTL = 30 * time.Second

// At returns T0+d.
func At(d time.Duration) time.Time { return T0.Add(d) }

// Recorder collects what a backend reports through its store.Config
// callbacks. It is safe for concurrent use.
type Recorder struct {
	mu        sync.Mutex
	events    []disposition.Event
	overflows []store.Overflow
}

// Event records e: set it as store.Config.Observer.
func (r *Recorder) Event(e disposition.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// Overflow records o: set it as store.Config.OnOverflow.
func (r *Recorder) Overflow(o store.Overflow) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.overflows = append(r.overflows, o)
}

// Events returns the events recorded so far, in order.
func (r *Recorder) Events() []disposition.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// Overflows returns the overflows recorded so far, in order.
func (r *Recorder) Overflows() []store.Overflow {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.overflows)
}

// Show formats an event for comparison: "j1 charge queued→in-flight leased
// T0+1s a0".
func Show(e disposition.Event) string {
	return fmt.Sprintf("%s %s %s→%s %s T0+%v a%d", e.JobID, e.Task, e.From, e.To, e.Reason, e.At.Sub(T0), e.Attempts)
}

// Take returns, formatted with Show, the events of all past the first
// *seen, and moves *seen to the end: what a spec heard since it last asked.
func Take(all []disposition.Event, seen *int) []string {
	ExpectWithOffset(1, len(all)).To(BeNumerically(">=", *seen), "events disappeared")
	out := make([]string, 0, len(all)-*seen)
	for _, e := range all[*seen:] {
		out = append(out, Show(e))
	}
	*seen = len(all)
	return out
}
