package memstore

import (
	"slices"
	"sort"

	"github.com/faultline/faultline/reference/dlq"
)

// counts reports whether an entry counts toward the capacity.
func (s *Store) counts(d *dent) bool {
	if d.corrupt {
		return false
	}
	switch d.status {
	case dlq.Failed, dlq.Quarantined:
		return true
	case dlq.Requeued, dlq.Deleted:
		return s.cfg.CountInactive
	}
	return false
}

// indexMeta adds a dent to the entries and to the counters and heaps;
// the caller holds the lock, and the ID has no dent.
func (s *Store) indexMeta(d *dent) {
	s.entries[d.id] = d
	if d.corrupt {
		s.corrupt++
		return
	}
	s.bySeverity[d.sev]++
	s.byTask[d.task]++
	s.byClass[d.class]++
	s.byStatus[d.status]++
	if s.counts(d) {
		s.heaps[countedHeap].push(d)
	}
	if d.status == dlq.Failed {
		s.heaps[failedHeap].push(d)
		s.heaps[newestHeap].push(d)
	}
}

// unindexMeta undoes indexMeta and marks the dent gone; the caller holds
// the lock.
func (s *Store) unindexMeta(d *dent) {
	delete(s.entries, d.id)
	d.gone = true
	if d.corrupt {
		s.corrupt--
		return
	}
	if s.bySeverity[d.sev]--; s.bySeverity[d.sev] == 0 {
		delete(s.bySeverity, d.sev)
	}
	if s.byTask[d.task]--; s.byTask[d.task] == 0 {
		delete(s.byTask, d.task)
	}
	if s.byClass[d.class]--; s.byClass[d.class] == 0 {
		delete(s.byClass, d.class)
	}
	s.byStatus[d.status]--
	s.heaps[countedHeap].remove(d)
	s.heaps[failedHeap].remove(d)
	s.heaps[newestHeap].remove(d)
}

// The time index (order) is kept sorted by (LastFailedAt, ID) as long as
// entries arrive in that order, which they do when time moves forward; an
// entry written out of order marks it dirty, and the next reader rebuilds
// it from the entries (O(n log n)). A status change keeps the entry's key,
// so its new dent takes the old one's place. Removed dents stay in place,
// marked gone, until they make up half of it.

// remember adds a new dent to the time index.
func (s *Store) remember(d *dent) {
	if s.orderDirty {
		return
	}
	if len(s.order) == 0 || !d.before(s.order[len(s.order)-1]) {
		s.order = append(s.order, d)
		return
	}
	s.orderDirty, s.order, s.orderGone = true, nil, 0
}

// forget accounts for a gone dent left in the time index, compacting it
// when gone dents make up half of it.
func (s *Store) forget() {
	if s.orderDirty {
		return
	}
	s.orderGone++
	if s.orderGone > 1024 && 2*s.orderGone > len(s.order) {
		n := 0
		for _, d := range s.order {
			if !d.gone {
				s.order[n] = d
				n++
			}
		}
		clear(s.order[n:])
		s.order, s.orderGone = s.order[:n], 0
	}
}

// replaceInOrder puts d in old's place in the time index when both have
// the same key, and reports whether it did.
func (s *Store) replaceInOrder(old, d *dent) bool {
	if s.orderDirty || compareDents(old, d) != 0 {
		return false
	}
	for i := sort.Search(len(s.order), func(k int) bool { return !s.order[k].before(old) }); i < len(s.order) && compareDents(s.order[i], old) == 0; i++ {
		if s.order[i] == old {
			s.order[i] = d
			return true
		}
	}
	return false
}

// encodeDent encodes e as the dent of its job.
func encodeDent(e dlq.Entry) (*dent, error) {
	raw, err := dlq.Encode(e)
	if err != nil {
		return nil, err
	}
	e.Version = dlq.EncodingVersion
	return newDent(e.Job.ID, raw, e), nil
}

// write stores d, replacing old (nil for a new entry); the caller holds
// the lock.
func (s *Store) write(old, d *dent) {
	if old != nil {
		s.unindexMeta(old)
		if s.replaceInOrder(old, d) {
			s.indexMeta(d)
			return
		}
		s.forget()
	}
	s.indexMeta(d)
	s.remember(d)
}

// remove deletes d from the store; the caller holds the lock.
func (s *Store) remove(d *dent) {
	s.unindexMeta(d)
	s.forget()
}

// sorted returns the time index, sorted by (LastFailedAt, ID), rebuilding
// it first when it is dirty; it may hold gone dents, which readers skip.
// The caller holds the lock.
func (s *Store) sorted() []*dent {
	if s.orderDirty {
		order := make([]*dent, 0, len(s.entries))
		for _, d := range s.entries {
			order = append(order, d)
		}
		slices.SortFunc(order, compareDents)
		s.order, s.orderGone, s.orderDirty = order, 0, false
	}
	for len(s.order) > 0 && s.order[0].gone { // purged from the front
		s.order[0] = nil
		s.order = s.order[1:]
		s.orderGone--
	}
	return s.order
}

// matches reports whether d passes every field of f, whose ErrorText is
// folded (dlq.FoldText). A corrupt entry passes only a filter that asks about
// nothing but time.
func matches(d *dent, f *dlq.Filter) bool {
	if d.corrupt {
		if len(f.Severities)+len(f.Tasks)+len(f.Classes)+len(f.ErrorTypes)+len(f.Statuses) > 0 || f.ErrorText != "" {
			return false
		}
	} else if len(f.Severities) > 0 && !slices.Contains(f.Severities, d.sev) ||
		len(f.Tasks) > 0 && !slices.Contains(f.Tasks, d.task) ||
		len(f.Classes) > 0 && !slices.Contains(f.Classes, d.class) ||
		len(f.ErrorTypes) > 0 && !slices.Contains(f.ErrorTypes, d.errType) ||
		len(f.Statuses) > 0 && !slices.Contains(f.Statuses, d.status) ||
		f.ErrorText != "" && !dlq.ContainsFold(d.errText, f.ErrorText) {
		return false
	}
	return (f.Since.IsZero() || !d.at.Before(f.Since)) && (f.Until.IsZero() || d.at.Before(f.Until))
}

// folded returns f with its ErrorText folded, as matches takes it.
func folded(f dlq.Filter) dlq.Filter {
	f.ErrorText = dlq.FoldText(f.ErrorText)
	return f
}
