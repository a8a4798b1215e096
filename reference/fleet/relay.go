package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/reference/degrade"
)

// Record is one thing a process relays to the leader's alerter: a failure
// its core reported, or a transition of one of its breakers.
type Record struct {
	// Process names the process that relayed it; Seq numbers its records
	// from 1, so that a batch appended twice (its answer lost) is heard
	// once; At is when it was relayed, by the process's clock.
	Process string              `json:"process"`
	Seq     uint64              `json:"seq"`
	At      time.Time           `json:"at"`
	Failure *alert.Failure      `json:"failure,omitempty"`
	Breaker *degrade.Transition `json:"breaker,omitempty"`
}

// Entry is a record in a Log, as stored: its ID in the log and its JSON.
type Entry struct {
	ID   string
	Data []byte
}

// Log is the store's log of relayed records, read by the leader: MemoryLog,
// and the Redis store (a stream).
type Log interface {
	// AppendAlerts appends records (JSON documents) at the log's end, in
	// order, at once.
	AppendAlerts(ctx context.Context, records [][]byte) error
	// ReadAlerts returns up to n of the oldest records after the one of
	// ID after ("": from the log's start).
	ReadAlerts(ctx context.Context, after string, n int) ([]Entry, error)
	// AckAlerts removes the records up to and including upTo, if holder
	// leads role under term; otherwise it removes nothing and returns an
	// error matching ErrNotLeader.
	AckAlerts(ctx context.Context, role, holder string, term uint64, upTo string) error
}

// MaxPending is the most records a process keeps for the log while the
// store cannot be reached; the excess is dropped, counted and logged.
const MaxPending = 10_000

// RelayConfig configures a Relay.
type RelayConfig struct {
	// Log and Process (this process's name) are required.
	Log     Log
	Process string
	// Fingerprint returns the fingerprint the leader's alerter gives a
	// failure (alert.Alerter.Fingerprint of an alerter configured alike),
	// for the DLQ entry; nil returns "".
	Fingerprint func(alert.Failure) string
	// Clock stamps each record (required).
	Clock clock.Clock
	// Logger gets what is dropped (default slog.Default()).
	Logger *slog.Logger
}

// RelayStats counts a Relay's records.
type RelayStats struct {
	// Relayed counts the records written to the log; Pending those waiting
	// for the next Flush; Dropped those lost past MaxPending; Errors the
	// flushes that failed.
	Relayed, Pending, Dropped, Errors int
}

// Relay is a process's alerter in a fleet with a leader: it keeps what the
// process's core and breakers report and writes it to the log at each
// Flush (Control ticks it), for the leader's Drain. It implements the
// worker's alerter (JobFailed) and a breaker's listener (BreakerChanged),
// and is safe for concurrent use.
type Relay struct {
	cfg RelayConfig

	mu      sync.Mutex
	seq     uint64
	pending [][]byte
	stats   RelayStats
}

// NewRelay returns a Relay for cfg.
func NewRelay(cfg RelayConfig) (*Relay, error) {
	if cfg.Log == nil || cfg.Process == "" || cfg.Clock == nil {
		return nil, errors.New("fleet: a relay needs a log, its process's name and a clock")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Relay{cfg: cfg}, nil
}

// JobFailed keeps f for the log and returns its fingerprint.
func (r *Relay) JobFailed(f alert.Failure) string {
	r.keep(Record{Process: r.cfg.Process, Failure: &f})
	if r.cfg.Fingerprint == nil {
		return ""
	}
	return r.cfg.Fingerprint(f)
}

// BreakerChanged keeps t for the log.
func (r *Relay) BreakerChanged(t degrade.Transition) {
	r.keep(Record{Process: r.cfg.Process, Breaker: &t})
}

func (r *Relay) keep(rec Record) {
	rec.At = r.cfg.Clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	rec.Seq = r.seq
	b, err := json.Marshal(rec)
	if err != nil || len(r.pending) >= MaxPending {
		r.stats.Dropped++
		r.cfg.Logger.Error("fleet relay: record dropped", "pending", len(r.pending), "err", err)
		return
	}
	r.pending = append(r.pending, b)
}

// Flush writes what is pending to the log; on an error it stays pending.
func (r *Relay) Flush(ctx context.Context) error {
	r.mu.Lock()
	batch := r.pending
	r.pending = nil
	r.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	err := r.cfg.Log.AppendAlerts(ctx, batch)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.stats.Errors++
		// Back in front of what came meanwhile, in order; the newest past
		// MaxPending go.
		r.pending = append(batch, r.pending...)
		if over := len(r.pending) - MaxPending; over > 0 {
			r.pending = r.pending[:MaxPending]
			r.stats.Dropped += over
			r.cfg.Logger.Error("fleet relay: records dropped", "n", over)
		}
		return fmt.Errorf("fleet: relay %d records: %w", len(batch), err)
	}
	r.stats.Relayed += len(batch)
	return nil
}

// Stats returns the relay's counts.
func (r *Relay) Stats() RelayStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.stats
	s.Pending = len(r.pending)
	return s
}

// Hearer is what a Drain feeds: *alert.Alerter.
type Hearer interface {
	JobFailed(f alert.Failure) string
	BreakerChanged(t degrade.Transition)
}

// DrainStats counts what a Drain read.
type DrainStats struct {
	// Heard counts the records fed to the alerter; Repeats the records
	// heard before (a batch relayed twice) and not fed again; Corrupt the
	// records that were not a Record (logged with their ID and removed);
	// Fenced the acknowledgements the store refused (the lease had passed
	// on).
	Heard, Repeats, Corrupt, Fenced int
}

// DrainBatch is the most records a Drain reads at once.
const DrainBatch = 512

// DrainConfig configures a Drain.
type DrainConfig struct {
	// Log, Elector, To (the leader's alerter) and Clock are required.
	Log     Log
	Elector *Elector
	To      Hearer
	Clock   clock.Clock
	// Hold is how long a record stays in the log after it was relayed,
	// heard, before the leader acknowledges it: at least the longest the
	// alerter holds a failure before it pages (its group wait), so that a
	// leader that dies before paging leaves it to its successor.
	Hold time.Duration
	// Logger gets corrupt records (default slog.Default()).
	Logger *slog.Logger
}

// Drain is the leader's side of the relay: while its Elector leads, Tick
// feeds the records after the last it fed, oldest first, to the alerter,
// each once (a record relayed twice is heard once), and acknowledges,
// under the leader's term, those relayed more than Hold ago. A new leader
// starts from the log's start: what its predecessor heard but had not
// paged is heard again.
type Drain struct {
	cfg DrainConfig

	mu     sync.Mutex
	stats  DrainStats
	term   uint64
	cursor string
	// seen is the last Seq heard of each process; fed the records read
	// this term, oldest first, until acknowledged.
	seen map[string]uint64
	fed  []fedRecord
}

// fedRecord is a record fed and not yet acknowledged.
type fedRecord struct {
	id string
	at time.Time
}

// NewDrain returns a Drain for cfg.
func NewDrain(cfg DrainConfig) (*Drain, error) {
	if cfg.Log == nil || cfg.Elector == nil || cfg.To == nil || cfg.Clock == nil {
		return nil, errors.New("fleet: a drain needs a log, an elector, an alerter and a clock")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Drain{cfg: cfg, seen: map[string]uint64{}}, nil
}

// Tick feeds the log to the alerter while this process leads, until the
// log has nothing new or maxBatches batches were read, then acknowledges
// what was relayed more than Hold ago; it returns the records fed. A
// store error ends it; an acknowledgement refused (ErrNotLeader) ends this
// process's leadership at once (Elector.Lost).
func (d *Drain) Tick(ctx context.Context, maxBatches int) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	term, ok := d.cfg.Elector.Leading()
	if !ok {
		return 0, nil
	}
	if term != d.term { // a new leadership reads the log from its start
		d.term, d.cursor, d.seen, d.fed = term, "", map[string]uint64{}, nil
	}
	heard := 0
	for range max(maxBatches, 1) {
		entries, err := d.cfg.Log.ReadAlerts(ctx, d.cursor, DrainBatch)
		if err != nil {
			return heard, fmt.Errorf("fleet: read the relay log: %w", err)
		}
		for _, e := range entries {
			d.cursor = e.ID
			var rec Record
			if err := json.Unmarshal(e.Data, &rec); err != nil || (rec.Failure == nil) == (rec.Breaker == nil) {
				d.stats.Corrupt++
				d.cfg.Logger.Error("fleet relay: corrupt record", "id", e.ID, "data", strconv.Quote(string(e.Data[:min(len(e.Data), 200)])), "err", err)
				d.fed = append(d.fed, fedRecord{id: e.ID})
				continue
			}
			d.fed = append(d.fed, fedRecord{id: e.ID, at: rec.At})
			if rec.Seq != 0 && rec.Seq <= d.seen[rec.Process] {
				d.stats.Repeats++
				continue
			}
			d.seen[rec.Process] = rec.Seq
			if rec.Failure != nil {
				d.cfg.To.JobFailed(*rec.Failure)
			} else {
				d.cfg.To.BreakerChanged(*rec.Breaker)
			}
			heard++
			d.stats.Heard++
		}
		if len(entries) < DrainBatch {
			break
		}
	}
	// Acknowledge the oldest run of records relayed more than Hold ago.
	cut := d.cfg.Clock.Now().Add(-d.cfg.Hold)
	n := 0
	for n < len(d.fed) && !d.fed[n].at.After(cut) {
		n++
	}
	if n == 0 {
		return heard, nil
	}
	if err := d.cfg.Log.AckAlerts(ctx, d.cfg.Elector.Role(), d.cfg.Elector.Holder(), term, d.fed[n-1].id); err != nil {
		if errors.Is(err, ErrNotLeader) {
			d.stats.Fenced++
			d.cfg.Elector.Lost(term)
		}
		return heard, fmt.Errorf("fleet: acknowledge the relay log: %w", err)
	}
	d.fed = d.fed[n:]
	return heard, nil
}

// Stats returns the drain's counts.
func (d *Drain) Stats() DrainStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats
}

// MemoryLog is a Log in memory, fenced by a MemoryLeader. It is safe for
// concurrent use.
type MemoryLog struct {
	leader *MemoryLeader

	mu      sync.Mutex
	next    uint64
	entries []memEntry
}

type memEntry struct {
	seq  uint64
	data []byte
}

// NewMemoryLog returns an empty log whose acknowledgements leader fences.
func NewMemoryLog(leader *MemoryLeader) *MemoryLog { return &MemoryLog{leader: leader} }

// AppendAlerts implements Log.
func (m *MemoryLog) AppendAlerts(_ context.Context, records [][]byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range records {
		m.next++
		m.entries = append(m.entries, memEntry{seq: m.next, data: append([]byte(nil), r...)})
	}
	return nil
}

// ReadAlerts implements Log.
func (m *MemoryLog) ReadAlerts(_ context.Context, after string, n int) ([]Entry, error) {
	var from uint64
	if after != "" {
		var err error
		if from, err = strconv.ParseUint(after, 10, 64); err != nil {
			return nil, fmt.Errorf("fleet: read after %q: not an ID of this log", after)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Entry, 0, min(n, len(m.entries)))
	for _, e := range m.entries {
		if len(out) == n {
			break
		}
		if e.seq > from {
			out = append(out, Entry{ID: strconv.FormatUint(e.seq, 10), Data: append([]byte(nil), e.data...)})
		}
	}
	return out, nil
}

// AckAlerts implements Log.
func (m *MemoryLog) AckAlerts(_ context.Context, role, holder string, term uint64, upTo string) error {
	seq, err := strconv.ParseUint(upTo, 10, 64)
	if err != nil {
		return fmt.Errorf("fleet: acknowledge %q: not an ID of this log", upTo)
	}
	if !m.leader.leads(role, holder, term) {
		return fmt.Errorf("%w: %s under term %d", ErrNotLeader, holder, term)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	i := 0
	for i < len(m.entries) && m.entries[i].seq <= seq {
		i++
	}
	m.entries = m.entries[i:]
	return nil
}

// Len returns the records in the log.
func (m *MemoryLog) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.entries)
}
