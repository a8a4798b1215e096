package dlqtest

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"pgregory.net/rapid"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/store"
)

// describeConservation declares the property: a random sequence of every
// operation of both interfaces, checked after every step against a model of
// the contract.
func describeConservation(newHarness func(store.Config) Harness) {
	Describe("under random operation sequences", func() {
		It("never loses, doubles or splits a job: after every step the store, its events and a model agree, and every enqueued job is in exactly one place", func() {
			rapid.Check(GinkgoT(), func(t *rapid.T) {
				cfg := store.Config{
					DLQCapacity:          rapid.IntRange(1, 6).Draw(t, "capacity"),
					HeldCapacity:         rapid.IntRange(1, 3).Draw(t, "heldCapacity"),
					Overflow:             rapid.SampledFrom([]store.OverflowPolicy{store.Reject, store.EvictOldest}).Draw(t, "overflow"),
					CountInactive:        rapid.Bool().Draw(t, "countInactive"),
					LostLeaseUsesAttempt: rapid.Bool().Draw(t, "lostLeaseUsesAttempt"),
					BatchSize:            rapid.IntRange(1, 4).Draw(t, "batchSize"),
				}
				m := newModel(t, newHarness, cfg)
				actions := m.actions()
				// The actions that bring jobs in and through come first:
				// rapid draws early elements more often, so the queues and
				// the DLQ fill.
				first := []string{"enqueue", "dequeue", "advance", "deadLetter", "ack", "retry", "flushHeld"}
				names := first
				for _, name := range slices.Sorted(maps.Keys(actions)) {
					if !slices.Contains(first, name) {
						names = append(names, name)
					}
				}
				m.check(t)
				for range rapid.IntRange(40, 200).Draw(t, "steps") {
					name := rapid.SampledFrom(names).Draw(t, "action")
					actions[name](t)
					m.check(t)
				}
			})
		})
	})
}

// The queues of the property.
var propQueues = []string{job.DefaultQueue, "emails"}

// mjob is where the model says a job is.
type mjob struct {
	id       string
	queue    string
	attempts int
	where    disposition.State
	token    uint64    // the current lease's, when in flight
	expires  time.Time // when in flight
	due      time.Time // when scheduled
	failedAt time.Time // when held: its dead letter's failure time
}

// mentry is the model of a DLQ entry.
type mentry struct {
	status dlq.Status
	// before is the status a Deleted entry had.
	before dlq.Status
	at     time.Time
	source string
}

// model is the contract's reference model, driven alongside a backend.
type model struct {
	ctx context.Context
	h   Harness
	rec *recorder
	cfg store.Config

	now time.Time
	// ms hands out distinct millisecond offsets, so that no two lease
	// expiries or due times tie and every order is defined.
	ms int

	jobs     map[string]*mjob
	ids      []string
	queues   map[string][]string
	fallback []string
	held     []string // oldest parked first
	entries  map[string]*mentry
	leases   []queue.Lease

	enqueued, acked, removed, evicted, rejected int

	ledger map[string]disposition.State
	seen   int
}

func newModel(t *rapid.T, newHarness func(store.Config) Harness, cfg store.Config) *model {
	m := &model{
		ctx:     context.Background(),
		rec:     &recorder{},
		now:     T0,
		jobs:    map[string]*mjob{},
		queues:  map[string][]string{},
		entries: map[string]*mentry{},
		ledger:  map[string]disposition.State{},
	}
	c := cfg
	c.Observer = m.rec.Event
	c.OnOverflow = m.rec.Overflow
	m.h = newHarness(c)
	m.cfg = cfg.WithDefaults()
	if m.h.Queue == nil || m.h.DLQ == nil {
		t.Fatalf("the harness needs a Queue and a DLQ")
	}
	return m
}

func (m *model) events() []disposition.Event {
	if m.h.Events != nil {
		return m.h.Events()
	}
	return m.rec.Events()
}

// uniq returns a millisecond offset no earlier call returned.
func (m *model) uniq(t *rapid.T) (time.Duration, bool) {
	if m.ms >= 999 {
		return 0, false
	}
	m.ms++
	return time.Duration(m.ms) * time.Millisecond, true
}

func (m *model) jobValue(j *mjob) job.Job {
	return job.Job{ID: j.id, Task: "charge", Queue: j.queue, Attempts: j.attempts, Payload: []byte(j.id), IdempotencyKey: "k-" + j.id}
}

func live(s disposition.State) bool {
	return s == disposition.Queued || s == disposition.InFlight || s == disposition.Scheduled || s == disposition.Fallback ||
		s == disposition.Held
}

// deadStatus reports whether an entry of that status holds a dead job.
func deadStatus(s dlq.Status) bool {
	return s == dlq.Failed || s == dlq.Quarantined || s == dlq.Deleted
}

func (m *model) counted(s dlq.Status) bool {
	return s == dlq.Failed || s == dlq.Quarantined || (m.cfg.CountInactive && (s == dlq.Requeued || s == dlq.Deleted))
}

// sortedEntries returns the IDs of the entries accepted by keep, oldest
// LastFailedAt first, lowest ID first among equal times.
func (m *model) sortedEntries(keep func(*mentry) bool) []string {
	var ids []string
	for id, e := range m.entries {
		if keep(e) {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b string) int {
		if c := m.entries[a].at.Compare(m.entries[b].at); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return ids
}

// pickLease draws one of every lease handed out so far (most of them stale).
func (m *model) pickLease(t *rapid.T) (queue.Lease, bool) {
	if len(m.leases) == 0 {
		return queue.Lease{}, false
	}
	// Favour the recent leases, which are more often current.
	i := len(m.leases) - 1 - rapid.IntRange(0, len(m.leases)-1).Draw(t, "leaseAge")%4
	if rapid.Bool().Draw(t, "anyLease") {
		i = rapid.IntRange(0, len(m.leases)-1).Draw(t, "lease")
	}
	return m.leases[i], true
}

// current reports whether l is its job's current lease.
func (m *model) current(l queue.Lease) bool {
	j := m.jobs[l.JobID]
	return j != nil && j.where == disposition.InFlight && j.token == l.Token
}

func expectErr(t *rapid.T, what string, err, want error) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("%s: unexpected error %v", what, err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Fatalf("%s: got error %v, want %v", what, err, want)
	}
}

func (m *model) entryFor(j job.Job) dlq.Entry {
	v := classify.Classification{Class: classify.Permanent, Severity: classify.Medium, Source: classify.Data}
	return dlq.Entry{
		Job:          j,
		History:      []dlq.Failure{{At: m.now, Attempt: j.Attempts, Error: "boom", ErrorType: "*errors.errorString", Verdict: v}},
		LastFailedAt: m.now,
		Verdict:      v,
		Reason:       "permanent",
	}
}

// toTail appends a job to the tail of its queue.
func (m *model) toTail(j *mjob) {
	j.where = disposition.Queued
	m.queues[j.queue] = append(m.queues[j.queue], j.id)
}

// remove drops an entry (eviction, purge); a dead job leaves the system.
func (m *model) remove(id string) {
	e := m.entries[id]
	delete(m.entries, id)
	if deadStatus(e.status) {
		m.jobs[id].where = disposition.None
		m.removed++
	}
}

// requeueOutcome is what the contract says a requeue of id does.
func (m *model) requeueOutcome(id string, auto bool) dlq.RequeueOutcome {
	e := m.entries[id]
	switch {
	case e == nil:
		return dlq.OutcomeNotFound
	case e.status == dlq.Deleted, e.status == dlq.Quarantined && auto:
		return dlq.OutcomeNotRequeueable
	case e.status == dlq.Requeued:
		return dlq.OutcomeAlreadyRequeued
	case live(m.jobs[id].where):
		return dlq.OutcomeBusy
	}
	return dlq.OutcomeRequeued
}

// applyRequeue performs a requeue the model decided on.
func (m *model) applyRequeue(id string, opts dlq.RequeueOptions) {
	e := m.entries[id]
	j := m.jobs[id]
	e.status = dlq.Requeued
	j.queue = cmp.Or(opts.Queue, e.source)
	if opts.Budget == dlq.ResetAttempts {
		j.attempts = 0
	}
	m.toTail(j)
}

func (m *model) drawRequeueOptions(t *rapid.T) dlq.RequeueOptions {
	return dlq.RequeueOptions{
		Queue:  rapid.SampledFrom([]string{"", "", "emails"}).Draw(t, "target"),
		Budget: rapid.SampledFrom([]dlq.Budget{dlq.OneMoreAttempt, dlq.ResetAttempts}).Draw(t, "budget"),
		By:     "prop",
		Auto:   rapid.IntRange(0, 3).Draw(t, "auto") == 0,
	}
}

// drawEntryID draws the ID of an entry, or of none.
func (m *model) drawEntryID(t *rapid.T) string {
	ids := slices.Sorted(maps.Keys(m.entries))
	if len(ids) == 0 || rapid.IntRange(0, 9).Draw(t, "unknownID") == 0 {
		return "nobody"
	}
	return rapid.SampledFrom(ids).Draw(t, "entry")
}

// check compares the backend with the model after a step: the counts, the
// DLQ's stats, every new event (each must start where the job was and end
// where the model says it is), and conservation.
func (m *model) check(t *rapid.T) {
	t.Helper()
	c, err := m.h.Queue.Counts(m.ctx)
	expectErr(t, "Counts", err, nil)
	var want queue.Counts
	dead := 0
	for _, id := range m.ids {
		switch m.jobs[id].where {
		case disposition.Queued:
			want.Queued++
		case disposition.InFlight:
			want.InFlight++
		case disposition.Scheduled:
			want.Scheduled++
		case disposition.Fallback:
			want.Fallback++
		case disposition.Held:
			want.Held++
		case disposition.DeadLettered:
			dead++
		}
	}
	if c != want {
		t.Fatalf("Counts = %+v; the model has %+v", c, want)
	}
	queued := 0
	for _, q := range m.queues {
		queued += len(q)
	}
	if queued != want.Queued || len(m.fallback) != want.Fallback || len(m.held) != want.Held {
		t.Fatalf("model inconsistent: %d in queues, %d in fallback; %+v", queued, len(m.fallback), want)
	}

	st, err := m.h.DLQ.Stats(m.ctx)
	expectErr(t, "Stats", err, nil)
	byStatus := map[string]int{}
	deadEntries := 0
	for _, e := range m.entries {
		byStatus[e.status.String()]++
		if deadStatus(e.status) {
			deadEntries++
		}
	}
	if st.Total != len(m.entries) || !maps.Equal(nonZero(st.ByStatus), nonZero(byStatus)) ||
		st.Evicted != m.evicted || st.Rejected != m.rejected || st.Corrupt != 0 || st.Held != len(m.held) {
		t.Fatalf("Stats = %+v; the model has %d entries %v, %d evicted, %d rejected", st, len(m.entries), byStatus, m.evicted, m.rejected)
	}
	if deadEntries != dead {
		t.Fatalf("model inconsistent: %d dead entries, %d dead jobs", deadEntries, dead)
	}

	all := m.events()
	if len(all) < m.seen {
		t.Fatalf("events disappeared: %d, had %d", len(all), m.seen)
	}
	moved := map[string]bool{}
	for _, e := range all[m.seen:] {
		if from := m.ledger[e.JobID]; e.From != from {
			t.Fatalf("event %v: the job was %v (no ID may be in two places)", e, from)
		}
		if moved[e.JobID] {
			t.Fatalf("event %v: the job moved twice in one step", e)
		}
		moved[e.JobID] = true
		j := m.jobs[e.JobID]
		if j == nil || e.To != j.where || !e.At.Equal(m.now) || e.Attempts != j.attempts || e.Task != "charge" {
			t.Fatalf("event %v (attempts %d, task %q): the model has the job %+v at %v", e, e.Attempts, e.Task, j, m.now)
		}
		m.ledger[e.JobID] = e.To
	}
	m.seen = len(all)
	for _, id := range m.ids {
		if m.ledger[id] != m.jobs[id].where {
			t.Fatalf("job %s: the events put it %v; it is %v", id, m.ledger[id], m.jobs[id].where)
		}
	}

	if got := c.Queued + c.InFlight + c.Scheduled + c.Fallback + c.Held + dead + m.acked + m.removed; got != m.enqueued {
		t.Fatalf("conservation: %d enqueued, but %+v + %d dead-lettered + %d succeeded + %d evicted or purged = %d",
			m.enqueued, c, dead, m.acked, m.removed, got)
	}
}
