package dlqtest

import (
	"fmt"
	"slices"
	"time"

	"pgregory.net/rapid"

	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/store"
)

func (m *model) actions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"advance": func(t *rapid.T) {
			m.now = m.now.Add(time.Duration(rapid.IntRange(1, 40).Draw(t, "seconds")) * time.Second)
		},
		"enqueue": func(t *rapid.T) {
			id := fmt.Sprintf("j%03d", len(m.ids))
			j := &mjob{id: id, queue: rapid.SampledFrom(propQueues).Draw(t, "queue")}
			err := m.h.Queue.Enqueue(m.ctx, m.jobValue(j), m.now)
			expectErr(t, "Enqueue", err, nil)
			m.jobs[id] = j
			m.ids = append(m.ids, id)
			m.enqueued++
			m.toTail(j)
		},
		"enqueueDuplicate": func(t *rapid.T) {
			var ids []string
			for _, id := range m.ids {
				if live(m.jobs[id].where) {
					ids = append(ids, id)
				}
			}
			if len(ids) == 0 {
				return
			}
			j := *m.jobs[rapid.SampledFrom(ids).Draw(t, "dup")]
			j.queue = rapid.SampledFrom(propQueues).Draw(t, "queue")
			expectErr(t, "Enqueue of a live ID", m.h.Queue.Enqueue(m.ctx, m.jobValue(&j), m.now), queue.ErrDuplicate)
		},
		"dequeue": func(t *rapid.T) {
			q := rapid.SampledFrom(propQueues).Draw(t, "queue")
			off, ok := m.uniq(t)
			if !ok {
				return
			}
			ttl := time.Duration(rapid.IntRange(1, 60).Draw(t, "ttl"))*time.Second + off
			got, l, ok, err := m.h.Queue.Dequeue(m.ctx, q, m.now, ttl)
			expectErr(t, "Dequeue", err, nil)
			if len(m.queues[q]) == 0 {
				if ok {
					t.Fatalf("Dequeue(%s) returned %s from a queue the model has empty", q, got.ID)
				}
				return
			}
			id := m.queues[q][0]
			j := m.jobs[id]
			switch {
			case !ok:
				t.Fatalf("Dequeue(%s) reported empty; the model has %v", q, m.queues[q])
			case got.ID != id:
				t.Fatalf("Dequeue(%s) = %s; the model's head is %s (queue %v)", q, got.ID, id, m.queues[q])
			case got.Attempts != j.attempts || got.QueueName() != q || got.IdempotencyKey != "k-"+id:
				t.Fatalf("Dequeue(%s) = %+v; want attempts %d, queue %s, its key", q, got, j.attempts, q)
			case l.JobID != id || l.Queue != q || !l.Expires.Equal(m.now.Add(ttl)) || l.Token == 0 || l.Token == j.token:
				t.Fatalf("Dequeue(%s) lease %+v: want job %s, expiry %v, a new non-zero token (last %d)", q, l, id, m.now.Add(ttl), j.token)
			}
			m.queues[q] = m.queues[q][1:]
			j.where, j.token, j.expires = disposition.InFlight, l.Token, l.Expires
			m.leases = append(m.leases, l)
		},
		"heartbeat": func(t *rapid.T) {
			l, ok := m.pickLease(t)
			off, ok2 := m.uniq(t)
			if !ok || !ok2 {
				return
			}
			ttl := time.Duration(rapid.IntRange(1, 60).Draw(t, "ttl"))*time.Second + off
			cur := m.current(l)
			nl, err := m.h.Queue.Heartbeat(m.ctx, l, m.now, ttl)
			if !cur {
				expectErr(t, "Heartbeat of a stale lease", err, queue.ErrLeaseLost)
				return
			}
			expectErr(t, "Heartbeat", err, nil)
			if nl.Token != l.Token || nl.JobID != l.JobID || !nl.Expires.Equal(m.now.Add(ttl)) {
				t.Fatalf("Heartbeat(%+v) = %+v; want the token kept and expiry %v", l, nl, m.now.Add(ttl))
			}
			m.jobs[l.JobID].expires = nl.Expires
			m.leases = append(m.leases, nl)
		},
		"ack": func(t *rapid.T) {
			l, ok := m.pickLease(t)
			if !ok {
				return
			}
			cur := m.current(l)
			j := m.jobs[l.JobID]
			v := m.jobValue(j)
			v.Attempts++ // the attempt that succeeded counts
			err := m.h.Queue.Ack(m.ctx, l, v, m.now)
			if !cur {
				expectErr(t, "Ack of a stale lease", err, queue.ErrLeaseLost)
				return
			}
			expectErr(t, "Ack", err, nil)
			j.attempts++
			j.where = disposition.Succeeded
			m.acked++
		},
		"retry": func(t *rapid.T) {
			l, ok := m.pickLease(t)
			off, ok2 := m.uniq(t)
			if !ok || !ok2 {
				return
			}
			due := m.now.Add(time.Duration(rapid.IntRange(0, 60).Draw(t, "delay"))*time.Second + off)
			cur := m.current(l)
			j := m.jobs[l.JobID]
			v := m.jobValue(j)
			v.Attempts++
			err := m.h.Queue.Retry(m.ctx, l, v, due, m.now)
			if !cur {
				expectErr(t, "Retry of a stale lease", err, queue.ErrLeaseLost)
				return
			}
			expectErr(t, "Retry", err, nil)
			j.attempts++
			j.where, j.due = disposition.Scheduled, due
		},
		"release": func(t *rapid.T) {
			l, ok := m.pickLease(t)
			if !ok {
				return
			}
			cur := m.current(l)
			j := m.jobs[l.JobID]
			err := m.h.Queue.Release(m.ctx, l, m.jobValue(j), m.now)
			if !cur {
				expectErr(t, "Release of a stale lease", err, queue.ErrLeaseLost)
				return
			}
			expectErr(t, "Release", err, nil)
			j.where = disposition.Queued
			m.queues[j.queue] = append([]string{j.id}, m.queues[j.queue]...)
		},
		"divert": func(t *rapid.T) {
			l, ok := m.pickLease(t)
			if !ok {
				return
			}
			cur := m.current(l)
			j := m.jobs[l.JobID]
			err := m.h.Queue.Divert(m.ctx, l, m.jobValue(j), m.now)
			if !cur {
				expectErr(t, "Divert of a stale lease", err, queue.ErrLeaseLost)
				return
			}
			expectErr(t, "Divert", err, nil)
			j.where = disposition.Fallback
			m.fallback = append(m.fallback, j.id)
		},
		"deadLetter": func(t *rapid.T) {
			l, ok := m.pickLease(t)
			if !ok {
				return
			}
			cur := m.current(l)
			j := m.jobs[l.JobID]
			v := m.jobValue(j)
			v.Attempts++
			res, err := m.h.DLQ.DeadLetter(m.ctx, l, m.entryFor(v), m.now)
			if !cur {
				expectErr(t, "DeadLetter of a stale lease", err, queue.ErrLeaseLost)
				return
			}
			e := m.entries[j.id]
			var victims []string
			if e == nil || !m.counted(e.status) {
				if m.cfg.Overflow == store.Reject {
					// The held dead letters take the room first.
					m.flushHeld(len(m.held))
				}
				counted := m.sortedEntries(func(e *mentry) bool { return m.counted(e.status) })
				if over := len(counted) + 1 - m.cfg.DLQCapacity; over > 0 {
					if m.cfg.Overflow == store.Reject {
						m.rejected++
						if len(m.held) >= m.cfg.HeldCapacity {
							expectErr(t, "DeadLetter into a full DLQ with a full held set", err, dlq.ErrFull)
							expectErr(t, "DeadLetter into a full DLQ with a full held set", err, dlq.ErrHeldFull)
							return
						}
						expectErr(t, "DeadLetter into a full DLQ", err, nil)
						if !res.Held || res.Created || len(res.Evicted) > 0 {
							t.Fatalf("DeadLetter(%s) into a full DLQ = %+v; want it Held", j.id, res)
						}
						m.park(j)
						return
					}
					victims = counted[:over]
				}
			}
			expectErr(t, "DeadLetter", err, nil)
			if res.Created != (e == nil) || !slices.Equal(res.Evicted, victims) {
				t.Fatalf("DeadLetter(%s) = %+v; want Created %v, Evicted %v", j.id, res, e == nil, victims)
			}
			for _, id := range victims {
				m.remove(id)
				m.evicted++
			}
			m.entries[j.id] = &mentry{status: dlq.Failed, at: m.now, source: j.queue}
			j.attempts++
			j.where = disposition.DeadLettered
		},
		"hold": func(t *rapid.T) {
			l, ok := m.pickLease(t)
			if !ok {
				return
			}
			cur := m.current(l)
			j := m.jobs[l.JobID]
			v := m.jobValue(j)
			v.Attempts++
			err := m.h.DLQ.Hold(m.ctx, l, m.entryFor(v), m.now)
			switch {
			case !cur:
				expectErr(t, "Hold of a stale lease", err, queue.ErrLeaseLost)
			case len(m.held) >= m.cfg.HeldCapacity:
				expectErr(t, "Hold into a full held set", err, dlq.ErrHeldFull)
			default:
				expectErr(t, "Hold", err, nil)
				m.park(j)
			}
		},
		"flushHeld": func(t *rapid.T) {
			limit := rapid.IntRange(0, 3).Draw(t, "limit")
			if m.cfg.Overflow == store.EvictOldest {
				// One at a time: a later entry of the batch may evict an
				// earlier one, and check wants one move per job per step.
				limit = min(limit, 1)
			}
			res, err := m.h.DLQ.FlushHeld(m.ctx, m.now, limit)
			expectErr(t, "FlushHeld", err, nil)
			want := m.flushHeld(limit)
			if !slices.Equal(res.Written, want.Written) || !slices.Equal(res.Evicted, want.Evicted) || res.Left != want.Left || res.Full != want.Full {
				t.Fatalf("FlushHeld(%d) = %+v; want %+v", limit, res, want)
			}
		},
		"forwardDue": func(t *rapid.T) {
			limit := rapid.IntRange(0, 3).Draw(t, "limit")
			n, err := m.h.Queue.ForwardDue(m.ctx, m.now, limit)
			expectErr(t, "ForwardDue", err, nil)
			var due []*mjob
			for _, id := range m.ids {
				if j := m.jobs[id]; j.where == disposition.Scheduled && !j.due.After(m.now) {
					due = append(due, j)
				}
			}
			slices.SortFunc(due, func(a, b *mjob) int { return a.due.Compare(b.due) })
			due = due[:min(len(due), max(limit, 0))]
			if n != len(due) {
				t.Fatalf("ForwardDue(limit %d) = %d; want %d", limit, n, len(due))
			}
			for _, j := range due {
				m.toTail(j)
			}
		},
		"recoverExpired": func(t *rapid.T) {
			limit := rapid.IntRange(0, 3).Draw(t, "limit")
			n, err := m.h.Queue.RecoverExpired(m.ctx, m.now, limit)
			expectErr(t, "RecoverExpired", err, nil)
			var exp []*mjob
			for _, id := range m.ids {
				if j := m.jobs[id]; j.where == disposition.InFlight && !j.expires.After(m.now) {
					exp = append(exp, j)
				}
			}
			slices.SortFunc(exp, func(a, b *mjob) int { return a.expires.Compare(b.expires) })
			exp = exp[:min(len(exp), max(limit, 0))]
			if n != len(exp) {
				t.Fatalf("RecoverExpired(limit %d) = %d; want %d", limit, n, len(exp))
			}
			for i := len(exp) - 1; i >= 0; i-- {
				j := exp[i]
				j.where = disposition.Queued
				if m.cfg.LostLeaseUsesAttempt {
					j.attempts++
				}
				m.queues[j.queue] = append([]string{j.id}, m.queues[j.queue]...)
			}
		},
		"drainBatch": func(t *rapid.T) {
			limit := rapid.IntRange(0, 3).Draw(t, "max")
			moved, more, err := m.h.Queue.DrainBatch(m.ctx, m.now, limit)
			expectErr(t, "DrainBatch", err, nil)
			k := min(len(m.fallback), max(limit, 0))
			if moved != k || more != (len(m.fallback) > k) {
				t.Fatalf("DrainBatch(%d) = %d, %v; want %d, %v", limit, moved, more, k, len(m.fallback) > k)
			}
			for _, id := range m.fallback[:k] {
				m.toTail(m.jobs[id])
			}
			m.fallback = m.fallback[k:]
		},
		"requeue": func(t *rapid.T) {
			id := m.drawEntryID(t)
			opts := m.drawRequeueOptions(t)
			want := m.requeueOutcome(id, opts.Auto)
			got, err := m.h.DLQ.Requeue(m.ctx, id, opts, m.now)
			expectErr(t, "Requeue", err, nil)
			if got != want {
				t.Fatalf("Requeue(%s, %+v) = %v; want %v", id, opts, got, want)
			}
			if want == dlq.OutcomeRequeued {
				m.applyRequeue(id, opts)
			}
		},
		"requeueMatching": func(t *rapid.T) {
			filter := rapid.SampledFrom([]dlq.Filter{
				{},
				{Statuses: []dlq.Status{dlq.Quarantined}},
				{Statuses: []dlq.Status{dlq.Failed, dlq.Quarantined}},
				{Since: m.now.Add(-30 * time.Second)},
			}).Draw(t, "filter")
			opts := m.drawRequeueOptions(t)
			dry := rapid.Bool().Draw(t, "dryRun")
			pick := map[dlq.Status]bool{dlq.Failed: true}
			if len(filter.Statuses) > 0 {
				pick = map[dlq.Status]bool{}
				for _, s := range filter.Statuses {
					pick[s] = s == dlq.Failed || s == dlq.Quarantined && !opts.Auto
				}
			}
			ids := m.sortedEntries(func(e *mentry) bool {
				return pick[e.status] && e.at.Before(m.now) && !e.at.Before(filter.Since)
			})
			r, err := m.h.DLQ.RequeueMatching(m.ctx, filter, opts, m.now, dry)
			expectErr(t, "RequeueMatching", err, nil)
			want := dlq.BulkResult{DryRun: dry, Matched: len(ids), Requeued: len(ids)}
			if dry {
				want.Requeued = 0
			}
			r.Batches = 0
			if r != want {
				t.Fatalf("RequeueMatching(%+v, %+v, dry %v) = %+v; want %+v (entries %v)", filter, opts, dry, r, want, ids)
			}
			if !dry {
				for _, id := range ids {
					m.applyRequeue(id, opts)
				}
			}
		},
		"delete": func(t *rapid.T) {
			m.statusMove(t, "Delete", func(id string) error { return m.h.DLQ.Delete(m.ctx, id, "prop", m.now) },
				func(st dlq.Status) bool { return st == dlq.Failed || st == dlq.Quarantined },
				func(e *mentry) { e.before, e.status = e.status, dlq.Deleted })
		},
		"restore": func(t *rapid.T) {
			m.statusMove(t, "Restore", func(id string) error { return m.h.DLQ.Restore(m.ctx, id, "prop", m.now) },
				func(st dlq.Status) bool { return st == dlq.Deleted },
				func(e *mentry) { e.status = e.before })
		},
		"quarantine": func(t *rapid.T) {
			m.statusMove(t, "Quarantine", func(id string) error { return m.h.DLQ.Quarantine(m.ctx, id, "poison", m.now) },
				func(st dlq.Status) bool { return st == dlq.Failed },
				func(e *mentry) { e.status = dlq.Quarantined })
		},
		"purge": func(t *rapid.T) {
			olderThan := m.now.Add(-time.Duration(rapid.IntRange(0, 120).Draw(t, "age")) * time.Second)
			n, err := m.h.DLQ.Purge(m.ctx, olderThan, m.now)
			expectErr(t, "Purge", err, nil)
			ids := m.sortedEntries(func(e *mentry) bool { return e.at.Before(olderThan) })
			if n != len(ids) {
				t.Fatalf("Purge(%v) = %d; want %d (%v)", olderThan, n, len(ids), ids)
			}
			for _, id := range ids {
				m.remove(id)
			}
		},
	}
}

// statusMove is one of an operator's status changes (delete, restore,
// quarantine) on a drawn entry: an unknown ID answers dlq.ErrNotFound, an
// entry in an allowed status changes (apply updates the model), any other
// answers dlq.ErrWrongStatus.
func (m *model) statusMove(t *rapid.T, name string, call func(id string) error, allowed func(dlq.Status) bool, apply func(e *mentry)) {
	id := m.drawEntryID(t)
	err := call(id)
	e := m.entries[id]
	switch {
	case e == nil:
		expectErr(t, name+" of an unknown ID", err, dlq.ErrNotFound)
	case allowed(e.status):
		expectErr(t, name, err, nil)
		apply(e)
	default:
		expectErr(t, name+" of a "+e.status.String()+" entry", err, dlq.ErrWrongStatus)
	}
}

// flushHeld writes up to limit held dead letters into the DLQ, oldest parked
// first, as FlushHeld does, and returns what FlushHeld answers.
func (m *model) flushHeld(limit int) dlq.FlushResult {
	var want dlq.FlushResult
	for len(want.Written) < limit && len(m.held) > 0 {
		j := m.jobs[m.held[0]]
		e := m.entries[j.id]
		var victims []string
		if e == nil || !m.counted(e.status) {
			counted := m.sortedEntries(func(e *mentry) bool { return m.counted(e.status) })
			if over := len(counted) + 1 - m.cfg.DLQCapacity; over > 0 {
				if m.cfg.Overflow == store.Reject {
					want.Full = true
					break
				}
				victims = counted[:over]
			}
		}
		for _, id := range victims {
			m.remove(id)
			m.evicted++
		}
		want.Written = append(want.Written, j.id)
		want.Evicted = append(want.Evicted, victims...)
		m.entries[j.id] = &mentry{status: dlq.Failed, at: j.failedAt, source: j.queue}
		j.where = disposition.DeadLettered
		m.held = m.held[1:]
	}
	want.Left = len(m.held)
	return want
}

// park moves the in-flight j, its attempt counted, to the held set.
func (m *model) park(j *mjob) {
	j.attempts++
	j.where, j.failedAt = disposition.Held, m.now
	m.held = append(m.held, j.id)
}
