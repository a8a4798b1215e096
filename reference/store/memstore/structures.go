package memstore

import (
	"cmp"
	"math/bits"
	"strings"
	"time"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
)

// rec is a job in the queue side of the store: queued, in flight,
// scheduled, in the fallback queue or held (its dead letter decided).
type rec struct {
	// The heap fields come first, together.
	//
	// at is the lease's expiry while in flight, the due time while
	// scheduled; set it with setAt. key is at's Unix millisecond (floored,
	// as time.Time.UnixMilli) when exact says it fits an int64, which is
	// how heaps compare most times without time.Time arithmetic. The heaps
	// order recs by (key, job ID): see queue.Queue.ForwardDue for why.
	at    time.Time
	key   int64
	exact bool
	// hidx is the rec's position in the heap it is in, -1 when in none.
	hidx int

	job job.Job
	// checked says job passed job.Validate as it is (see completion).
	checked bool
	state   disposition.State
	// token is the current (or last) lease's fencing token.
	token uint64
	// entry is the decided dead letter of a held job (state Held); at is
	// then when it was parked.
	entry *dlq.Entry
}

// setAt sets r.at, and its key.
func (r *rec) setAt(t time.Time) {
	r.at = t
	// A key orders like compareMs when the seconds fit (a monotonic
	// reading plays no part: the order is the wall clock's millisecond,
	// as in a Redis score).
	const maxSec = (1<<63-1)/1000 - 1
	sec := t.Unix()
	r.exact = sec > -maxSec && sec < maxSec
	r.key = 0
	if r.exact {
		r.key = sec*1000 + int64(t.Nanosecond()/1e6)
	}
}

// compareMs compares a and b by their Unix milliseconds (floored, as
// time.Time.UnixMilli, without its overflow): the resolution of every time
// a store orders or compares, so that the in-memory store and the Redis
// store, whose sorted-set scores are those milliseconds, agree on every
// order and on every "due at or before now".
func compareMs(a, b time.Time) int {
	if c := cmp.Compare(a.Unix(), b.Unix()); c != 0 {
		return c
	}
	return cmp.Compare(a.Nanosecond()/1e6, b.Nanosecond()/1e6)
}

// idPrefix is the first 8 bytes of id, big-endian and zero-padded: ids
// compare as their prefixes do, unless the prefixes are equal.
func idPrefix(id string) uint64 {
	var p uint64
	for i := range 8 {
		p <<= 8
		if i < len(id) {
			p |= uint64(id[i])
		}
	}
	return p
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

// recHeap is a min-heap of recs by (the Unix millisecond of at, job ID),
// each knowing its position, so that a lease can be extended or completed
// in O(log n).
//
// Each slot holds its rec's key and the first bytes of its job's ID, so
// that sifting compares integers in the slice without loading the recs;
// only two recs of the same millisecond whose IDs share their first 8
// bytes have their IDs compared. The keys decide while every rec in the
// heap has an exact one (inexact == 0, always but for times hundreds of
// millions of years away); otherwise the recs' times are compared by
// compareMs.
type recHeap struct {
	items   []hslot
	inexact int
}

// hslot is a heap slot.
type hslot struct {
	key int64
	pfx uint64 // idPrefix of the rec's job ID
	r   *rec
}

func (h *recHeap) len() int { return len(h.items) }

func (h *recHeap) less(a, b *hslot) bool { return h.lessBit(a, b) != 0 }

// lessBit is less as 1 or 0. On keys it is a 128-bit comparison of (key,
// ID prefix) without branches (sifting's comparisons are coin tosses a
// branch predictor cannot learn); key's sign bit is flipped to order it as
// unsigned. Equal keys and prefixes, which are rare, compare the IDs.
func (h *recHeap) lessBit(a, b *hslot) uint64 {
	if h.inexact != 0 {
		return lessAt(a, b)
	}
	if a.key == b.key && a.pfx == b.pfx {
		return bit(a.r.job.ID < b.r.job.ID)
	}
	_, borrow := bits.Sub64(a.pfx, b.pfx, 0)
	_, borrow = bits.Sub64(uint64(a.key)^1<<63, uint64(b.key)^1<<63, borrow)
	return borrow
}

// lessAt is lessBit by the recs' times, ordered by compareMs.
func lessAt(a, b *hslot) uint64 {
	c := compareMs(a.r.at, b.r.at)
	return bit(c < 0 || c == 0 && a.r.job.ID < b.r.job.ID)
}

// bit is b as 1 or 0.
func bit(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// up moves the slot at i towards the root: it is moved into the hole it
// leaves rather than swapped at every level.
func (h *recHeap) up(i int) {
	items := h.items
	e := items[i]
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(&e, &items[p]) {
			break
		}
		items[i] = items[p]
		items[i].r.hidx = i
		i = p
	}
	items[i] = e
	e.r.hidx = i
}

// down moves the slot at i towards the leaves and reports whether it moved.
func (h *recHeap) down(i int) bool {
	items := h.items
	n := len(items)
	start := i
	e := items[i]
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n {
			m += int(h.lessBit(&items[r], &items[l])) // the earlier child, without a branch
		}
		if !h.less(&items[m], &e) {
			break
		}
		items[i] = items[m]
		items[i].r.hidx = i
		i = m
	}
	items[i] = e
	e.r.hidx = i
	return i > start
}

func (h *recHeap) push(r *rec) {
	if !r.exact {
		h.inexact++
	}
	h.items = append(h.items, hslot{key: r.key, pfx: idPrefix(r.job.ID), r: r})
	h.up(len(h.items) - 1)
}

// remove takes r out of the heap.
func (h *recHeap) remove(r *rec) {
	i, last := r.hidx, len(h.items)-1
	if i != last {
		h.items[i] = h.items[last]
		h.items[i].r.hidx = i
	}
	h.items[last] = hslot{}
	h.items = h.items[:last]
	r.hidx = -1
	if !r.exact {
		h.inexact--
	}
	if i != last && !h.down(i) {
		h.up(i)
	}
}

// setAt moves r, which is in the heap, to time t.
func (h *recHeap) setAt(r *rec, t time.Time) {
	if !r.exact {
		h.inexact--
	}
	r.setAt(t)
	if !r.exact {
		h.inexact++
	}
	h.items[r.hidx].key = r.key
	if !h.down(r.hidx) {
		h.up(r.hidx)
	}
}

// min returns the earliest rec, or nil.
func (h *recHeap) min() *rec {
	if len(h.items) == 0 {
		return nil
	}
	return h.items[0].r
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
	// errText is the last failure's error text, for the error-text filter.
	errText string
	// attempts is the job's, for the event of its eviction or purge.
	attempts int
	// hidx holds the dent's positions in the dent heaps, -1 when not in
	// one.
	hidx [dentHeaps]int
	// gone is set when the dent left the store (replaced or removed); the
	// sorted index may still hold it, and skips it.
	gone bool
}

// newDent builds the stored form of an entry decoded from raw.
func newDent(id string, raw []byte, e dlq.Entry) *dent {
	d := &dent{id: id, raw: raw, hidx: [dentHeaps]int{-1, -1, -1}}
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
	if n := len(e.History); n > 0 {
		d.errText = e.History[n-1].Error
	}
	d.attempts = e.Job.Attempts
	return d
}

// before orders dents by (the Unix millisecond of at, id): the order of
// the Redis store's time indexes, whose scores are those milliseconds and
// whose ties sort by member.
func (d *dent) before(o *dent) bool {
	if c := compareMs(d.at, o.at); c != 0 {
		return c < 0
	}
	return d.id < o.id
}

// compareDents is before as a three-way comparison, for sorting.
func compareDents(a, b *dent) int {
	if c := compareMs(a.at, b.at); c != 0 {
		return c
	}
	return strings.Compare(a.id, b.id)
}

// The dent heaps: the entries counted toward capacity (eviction takes the
// oldest), the Failed entries (Stats.Oldest) and the Failed entries again,
// newest on top (Stats.Newest).
const (
	countedHeap = iota
	failedHeap
	newestHeap
	dentHeaps
)

// dentHeap is a min-heap of dents by (at, id), or a max-heap when desc;
// slot says which of the dent's hidx it maintains.
type dentHeap struct {
	items []*dent
	slot  int
	desc  bool
}

func (h *dentHeap) less(i, j int) bool {
	if h.desc {
		return h.items[j].before(h.items[i])
	}
	return h.items[i].before(h.items[j])
}

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

// min returns the dent on top (the oldest; the newest when desc), or nil.
func (h *dentHeap) min() *dent {
	if len(h.items) == 0 {
		return nil
	}
	return h.items[0]
}

func (h *dentHeap) len() int { return len(h.items) }
