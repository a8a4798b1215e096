package oracle

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
)

// The history format, version 2: one JSON document that can be written as
// a run goes and read a record at a time,
//
//	{"historyVersion":2,"records":[
//	{"job":{"id":"pay-1","task":"charge","atMs":0,"outcome":"ok"}},
//	{"event":{"i":0,"atMs":3,"from":"none","to":"queued","reason":"enqueued","attempts":0}},
//	{"attempt":{"i":0,"atMs":5,...}},
//	...],
//	"history":{...the run's other facts: scenario, seed, faults, DLQ at the end...}}
//
// Its records are the job table ("job": a job the producer made, or with
// "ref" one a record named that it did not) and the records that refer to
// a job by its index in that table ("i": events, attempts, calls), the
// others as they are (delivery, breaker, snapshot, process, overflow,
// miss). A writer keeps a job's index only while the job can be named
// again, so memory stays flat over a long run (a job named after it was
// let go gets a "ref" entry of its own: the reader maps both to its ID).
// Version 1 (one History object) still loads.

// jobRec is a job table entry; Ref marks a job a record named that the
// producer did not make.
type jobRec struct {
	Job
	Ref bool `json:"ref,omitempty"`
}

// The records that name a job by index. Each hides its embedded record's
// "job" field with an empty one of its own (encoding/json lets the
// shallower field win).
type (
	eventRec struct {
		Event
		I     int    `json:"i"`
		JobID string `json:"job,omitempty"`
		Task  string `json:"task,omitempty"`
	}
	attemptRec struct {
		Attempt
		I     int    `json:"i"`
		JobID string `json:"job,omitempty"`
	}
	callRec struct {
		Call
		I     int    `json:"i"`
		JobID string `json:"job,omitempty"`
	}
)

// record is one element of "records": exactly one field is set.
type record struct {
	Job      *jobRec            `json:"job,omitempty"`
	Event    *eventRec          `json:"event,omitempty"`
	Attempt  *attemptRec        `json:"attempt,omitempty"`
	Call     *callRec           `json:"call,omitempty"`
	Delivery *Delivery          `json:"delivery,omitempty"`
	Breaker  *BreakerTransition `json:"breaker,omitempty"`
	Snapshot *Snapshot          `json:"snapshot,omitempty"`
	Process  *ProcessEvent      `json:"process,omitempty"`
	Overflow *Overflow          `json:"overflow,omitempty"`
	Miss     *Miss              `json:"miss,omitempty"`
}

// HistoryWriter writes a version 2 history as a run goes: its records as
// they happen, the rest (Close) at the end.
type HistoryWriter struct {
	w     *bufio.Writer
	enc   *json.Encoder
	index map[string]int // a job's index, while it can be named again
	n     int            // entries in the job table
	first bool
	err   error
}

// NewHistoryWriter starts a version 2 history on w.
func NewHistoryWriter(w io.Writer) *HistoryWriter {
	bw := bufio.NewWriterSize(w, 64<<10)
	hw := &HistoryWriter{w: bw, enc: json.NewEncoder(bw), index: map[string]int{}, first: true}
	_, hw.err = bw.WriteString(`{"historyVersion":2,"records":[` + "\n")
	return hw
}

func (hw *HistoryWriter) put(r record) {
	if hw.err != nil {
		return
	}
	if !hw.first {
		if hw.err = hw.w.WriteByte(','); hw.err != nil {
			return
		}
	}
	hw.first = false
	hw.err = hw.enc.Encode(r) // one record a line
}

// Job records a job the producer made.
func (hw *HistoryWriter) Job(j Job) {
	hw.index[j.ID] = hw.n
	hw.n++
	hw.put(record{Job: &jobRec{Job: j}})
}

// ref is job id's index, adding a "ref" entry for a job the table does
// not hold (any more).
func (hw *HistoryWriter) ref(id, task string) int {
	if i, ok := hw.index[id]; ok {
		return i
	}
	i := hw.n
	hw.index[id] = i
	hw.n++
	hw.put(record{Job: &jobRec{Job: Job{ID: id, Task: task}, Ref: true}})
	return i
}

// Forget lets job id's index go: a later record naming it gets a new
// entry. A run calls it when the job can no longer move (it succeeded).
func (hw *HistoryWriter) Forget(id string) { delete(hw.index, id) }

// Event records a disposition event.
func (hw *HistoryWriter) Event(e Event) {
	i := hw.ref(e.JobID, e.Task)
	e.JobID, e.Task = "", ""
	hw.put(record{Event: &eventRec{Event: e, I: i}})
}

// Attempt records a worker's report of one attempt.
func (hw *HistoryWriter) Attempt(a Attempt) {
	i := hw.ref(a.JobID, "")
	a.JobID = ""
	hw.put(record{Attempt: &attemptRec{Attempt: a, I: i}})
}

// Call records a call a dependency answered.
func (hw *HistoryWriter) Call(c Call) {
	i := hw.ref(c.JobID, "")
	c.JobID = ""
	hw.put(record{Call: &callRec{Call: c, I: i}})
}

// Delivery records a notification sent.
func (hw *HistoryWriter) Delivery(d Delivery) { hw.put(record{Delivery: &d}) }

// Breaker records a breaker's transition.
func (hw *HistoryWriter) Breaker(b BreakerTransition) { hw.put(record{Breaker: &b}) }

// Snapshot records the store's counts.
func (hw *HistoryWriter) Snapshot(s Snapshot) { hw.put(record{Snapshot: &s}) }

// Process records a supervisor event of a worker process.
func (hw *HistoryWriter) Process(p ProcessEvent) { hw.put(record{Process: &p}) }

// Overflow records a store's report of a full DLQ.
func (hw *HistoryWriter) Overflow(o Overflow) { hw.put(record{Overflow: &o}) }

// Miss records a window in which a fault aimed at a state found none.
func (hw *HistoryWriter) Miss(m Miss) { hw.put(record{Miss: &m}) }

// Close ends the history with h: the records h still holds (a run that
// streamed its records gives none), each kind in its order, then its
// other facts; it flushes, and returns the first error the writer met.
func (hw *HistoryWriter) Close(h *History) error {
	for _, j := range h.Jobs {
		hw.Job(j)
	}
	for _, e := range h.Events {
		hw.Event(e)
	}
	for _, s := range h.Snapshots {
		hw.Snapshot(s)
	}
	for _, a := range h.Attempts {
		hw.Attempt(a)
	}
	for _, c := range h.Calls {
		hw.Call(c)
	}
	for _, d := range h.Deliveries {
		hw.Delivery(d)
	}
	for _, o := range h.Overflows {
		hw.Overflow(o)
	}
	for _, b := range h.Breakers {
		hw.Breaker(b)
	}
	for _, p := range h.Processes {
		hw.Process(p)
	}
	for _, m := range h.Misses {
		hw.Miss(m)
	}
	if hw.err != nil {
		return hw.err
	}
	rest := *h
	rest.Version = 2
	rest.Jobs, rest.Events, rest.Snapshots, rest.Attempts, rest.Calls = nil, nil, nil, nil, nil
	rest.Deliveries, rest.Overflows, rest.Breakers, rest.Processes, rest.Misses = nil, nil, nil, nil, nil
	b, err := json.Marshal(&rest)
	if err != nil {
		return err
	}
	if _, err := hw.w.WriteString(`],"history":`); err != nil {
		return err
	}
	if _, err := hw.w.Write(b); err != nil {
		return err
	}
	if _, err := hw.w.WriteString("}\n"); err != nil {
		return err
	}
	return hw.w.Flush()
}

// Write writes h as a version 2 history (formerly sim.WriteHistory):
// the job table, then each kind of record in its order, then the rest.
func Write(w io.Writer, h *History) error { return NewHistoryWriter(w).Close(h) }

var versionRE = regexp.MustCompile(`^\s*\{\s*"historyVersion"\s*:\s*(-?[0-9]+)`)

// decode reads a history of any version this package reads, unchecked.
func decode(r io.Reader) (*History, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(256)
	m := versionRE.FindSubmatch(head)
	if m == nil || string(m[1]) == "1" {
		var h History
		if err := json.NewDecoder(br).Decode(&h); err != nil {
			return nil, err
		}
		if m == nil && h.Version == 2 {
			return nil, errors.New("a version 2 history must begin with its historyVersion")
		}
		return &h, nil
	}
	if v, _ := strconv.Atoi(string(m[1])); v != 2 {
		return &History{Version: v}, nil // refused by the version check
	}
	return decode2(br)
}

// decode2 reads a version 2 history a record at a time.
func decode2(r io.Reader) (*History, error) {
	dec := json.NewDecoder(r)
	want := func(what string, ok func(json.Token) bool) error {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		if !ok(t) {
			return fmt.Errorf("expected %s, got %v", what, t)
		}
		return nil
	}
	delim := func(d json.Delim) func(json.Token) bool {
		return func(t json.Token) bool { x, ok := t.(json.Delim); return ok && x == d }
	}
	key := func(k string) func(json.Token) bool {
		return func(t json.Token) bool { x, ok := t.(string); return ok && x == k }
	}
	if err := want("{", delim('{')); err != nil {
		return nil, err
	}
	if err := want(`"historyVersion"`, key("historyVersion")); err != nil {
		return nil, err
	}
	var version int
	if err := dec.Decode(&version); err != nil {
		return nil, err
	}
	if err := want(`"records"`, key("records")); err != nil {
		return nil, err
	}
	if err := want("[", delim('[')); err != nil {
		return nil, err
	}
	var h History
	type entry struct{ id, task string }
	var table []entry
	job := func(i int, kind string) (entry, error) {
		if i < 0 || i >= len(table) {
			return entry{}, fmt.Errorf("record %d: %s names job %d, which the job table before it does not hold", len(table), kind, i)
		}
		return table[i], nil
	}
	for n := 0; dec.More(); n++ {
		var rec record
		if err := dec.Decode(&rec); err != nil {
			return nil, fmt.Errorf("record %d: %w", n, err)
		}
		switch {
		case rec.Job != nil:
			table = append(table, entry{rec.Job.ID, rec.Job.Task})
			if !rec.Job.Ref {
				h.Jobs = append(h.Jobs, rec.Job.Job)
			}
		case rec.Event != nil:
			j, err := job(rec.Event.I, "an event")
			if err != nil {
				return nil, err
			}
			e := rec.Event.Event
			e.JobID, e.Task = j.id, j.task
			h.Events = append(h.Events, e)
		case rec.Attempt != nil:
			j, err := job(rec.Attempt.I, "an attempt")
			if err != nil {
				return nil, err
			}
			a := rec.Attempt.Attempt
			a.JobID = j.id
			h.Attempts = append(h.Attempts, a)
		case rec.Call != nil:
			j, err := job(rec.Call.I, "a call")
			if err != nil {
				return nil, err
			}
			c := rec.Call.Call
			c.JobID = j.id
			h.Calls = append(h.Calls, c)
		case rec.Delivery != nil:
			h.Deliveries = append(h.Deliveries, *rec.Delivery)
		case rec.Breaker != nil:
			h.Breakers = append(h.Breakers, *rec.Breaker)
		case rec.Snapshot != nil:
			h.Snapshots = append(h.Snapshots, *rec.Snapshot)
		case rec.Process != nil:
			h.Processes = append(h.Processes, *rec.Process)
		case rec.Overflow != nil:
			h.Overflows = append(h.Overflows, *rec.Overflow)
		case rec.Miss != nil:
			h.Misses = append(h.Misses, *rec.Miss)
		default:
			return nil, fmt.Errorf("record %d: none of job, event, attempt, call, delivery, breaker, snapshot, process, overflow, miss", n)
		}
	}
	if err := want("]", delim(']')); err != nil {
		return nil, err
	}
	if err := want(`"history"`, key("history")); err != nil {
		return nil, err
	}
	var rest History
	if err := dec.Decode(&rest); err != nil {
		return nil, err
	}
	rest.Version = version
	rest.Jobs, rest.Events, rest.Snapshots, rest.Attempts, rest.Calls = h.Jobs, h.Events, h.Snapshots, h.Attempts, h.Calls
	rest.Deliveries, rest.Overflows, rest.Breakers, rest.Processes, rest.Misses = h.Deliveries, h.Overflows, h.Breakers, h.Processes, h.Misses
	if err := want("}", delim('}')); err != nil {
		return nil, err
	}
	return &rest, nil
}
