package memstore

import (
	"strings"
	"time"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
)

// rec is a job in the queue side of the store: queued, in flight,
// scheduled or in the fallback queue.
type rec struct {
	job   job.Job
	state disposition.State
	// token is the current (or last) lease's fencing token.
	token uint64
	// at is the lease's expiry while in flight, the due time while
	// scheduled.
	at time.Time
	// seq orders equal times in a heap: the order of insertion.
	seq uint64
	// hidx is the rec's position in the heap it is in, -1 when in none.
	hidx int
}

// fifo is a double-ended ring buffer of recs: the queue of one name, or the
// fallback queue. Its capacity is a power of two.
type fifo struct {
	buf  []*rec
	head int
	n    int
}

func (f *fifo) grow() {
	size := max(8, 2*len(f.buf))
	buf := make([]*rec, size)
	for i := range f.n {
		buf[i] = f.buf[(f.head+i)&(len(f.buf)-1)]
	}
	f.buf, f.head = buf, 0
}

func (f *fifo) pushBack(r *rec) {
	if f.n == len(f.buf) {
		f.grow()
	}
	f.buf[(f.head+f.n)&(len(f.buf)-1)] = r
	f.n++
}

func (f *fifo) pushFront(r *rec) {
	if f.n == len(f.buf) {
		f.grow()
	}
	f.head = (f.head - 1) & (len(f.buf) - 1)
	f.buf[f.head] = r
	f.n++
}

// popFront removes and returns the head; the fifo must not be empty.
func (f *fifo) popFront() *rec {
	r := f.buf[f.head]
	f.buf[f.head] = nil
	f.head = (f.head + 1) & (len(f.buf) - 1)
	f.n--
	return r
}

// recHeap is a min-heap of recs by (at, seq), each knowing its position,
// so that a lease can be extended or completed in O(log n).
type recHeap []*rec

func (h recHeap) less(i, j int) bool {
	if c := h[i].at.Compare(h[j].at); c != 0 {
		return c < 0
	}
	return h[i].seq < h[j].seq
}

func (h recHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].hidx = i
	h[j].hidx = j
}

func (h recHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h recHeap) down(i int) bool {
	start := i
	for {
		l := 2*i + 1
		if l >= len(h) {
			break
		}
		m := l
		if r := l + 1; r < len(h) && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			break
		}
		h.swap(i, m)
		i = m
	}
	return i > start
}

func (h *recHeap) push(r *rec) {
	r.hidx = len(*h)
	*h = append(*h, r)
	h.up(r.hidx)
}

// remove takes r out of the heap.
func (h *recHeap) remove(r *rec) {
	i, last := r.hidx, len(*h)-1
	if i != last {
		h.swap(i, last)
	}
	(*h)[last] = nil
	*h = (*h)[:last]
	r.hidx = -1
	if i != last && !h.down(i) {
		h.up(i)
	}
}

// fix restores the order after r.at changed.
func (h recHeap) fix(r *rec) {
	if !h.down(r.hidx) {
		h.up(r.hidx)
	}
}

// min returns the earliest rec, or nil.
func (h recHeap) min() *rec {
	if len(h) == 0 {
		return nil
	}
	return h[0]
}

// dent is a DLQ entry as stored: its encoded bytes, and beside them the
// fields the indexes need (what a Redis backend keeps in sorted sets and
// counters). A dent is immutable once indexed but for its heap positions:
// a write replaces it with a new one.
type dent struct {
	id  string
	raw []byte
	// at is the entry's LastFailedAt, the key of the time index; the zero
	// time for bytes that do not decode.
	at      time.Time
	corrupt bool
	status  dlq.Status
	sev     classify.Severity
	class   classify.Class
	task    string
	errType string
	// attempts is the job's, for the event of its eviction or purge.
	attempts int
	// hidx holds the dent's positions in the two dent heaps, -1 when not
	// in one.
	hidx [2]int
	// gone is set when the dent left the store (replaced or removed); the
	// sorted index may still hold it, and skips it.
	gone bool
}

// newDent builds the stored form of an entry decoded from raw.
func newDent(id string, raw []byte, e dlq.Entry) *dent {
	d := &dent{id: id, raw: raw, hidx: [2]int{-1, -1}}
	if e.Corrupt {
		d.corrupt = true
		return d
	}
	d.at = e.LastFailedAt
	d.status = e.Status
	d.sev = e.Verdict.Severity
	d.class = e.Verdict.Class
	d.task = e.Job.Task
	d.errType = e.ErrorType()
	d.attempts = e.Job.Attempts
	return d
}

// before orders dents by (at, id).
func (d *dent) before(o *dent) bool {
	if c := d.at.Compare(o.at); c != 0 {
		return c < 0
	}
	return d.id < o.id
}

// compareDents is before as a three-way comparison, for sorting.
func compareDents(a, b *dent) int {
	if c := a.at.Compare(b.at); c != 0 {
		return c
	}
	return strings.Compare(a.id, b.id)
}

// The dent heaps: the entries counted toward capacity (eviction takes the
// oldest) and the Failed entries (Stats.Oldest).
const (
	countedHeap = iota
	failedHeap
)

// dentHeap is a min-heap of dents by (at, id); slot says which of the
// dent's hidx it maintains.
type dentHeap struct {
	items []*dent
	slot  int
}

func (h *dentHeap) less(i, j int) bool { return h.items[i].before(h.items[j]) }

func (h *dentHeap) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].hidx[h.slot] = i
	h.items[j].hidx[h.slot] = j
}

func (h *dentHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *dentHeap) down(i int) bool {
	start := i
	for {
		l := 2*i + 1
		if l >= len(h.items) {
			break
		}
		m := l
		if r := l + 1; r < len(h.items) && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			break
		}
		h.swap(i, m)
		i = m
	}
	return i > start
}

func (h *dentHeap) push(d *dent) {
	d.hidx[h.slot] = len(h.items)
	h.items = append(h.items, d)
	h.up(d.hidx[h.slot])
}

// remove takes d out of the heap if it is in it.
func (h *dentHeap) remove(d *dent) {
	i := d.hidx[h.slot]
	if i < 0 {
		return
	}
	last := len(h.items) - 1
	if i != last {
		h.swap(i, last)
	}
	h.items[last] = nil
	h.items = h.items[:last]
	d.hidx[h.slot] = -1
	if i != last && !h.down(i) {
		h.up(i)
	}
}

// min returns the oldest dent, or nil.
func (h *dentHeap) min() *dent {
	if len(h.items) == 0 {
		return nil
	}
	return h.items[0]
}

func (h *dentHeap) len() int { return len(h.items) }
