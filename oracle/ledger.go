package oracle

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/worker"
	"github.com/faultline/faultline/reports"
)

// The invariants, by the name a violation carries.
const (
	// InvConservation: every job is somewhere, the store's counts and DLQ
	// agree with its moves, and no job is moved that was never created.
	InvConservation = "conservation"
	// InvLegalMove: every move is one a store may make (see legal).
	InvLegalMove = "legal-move"
	// InvNoMoveAfterDone: a job that succeeded never moves again.
	InvNoMoveAfterDone = "no-move-after-success"
	// InvOneDLQEntry: a dead-lettered job has one DLQ entry.
	InvOneDLQEntry = "one-dlq-entry-per-job"
	// InvNoRetryOfFinal: a failure whose injected class is permanent or
	// critical is never retried.
	InvNoRetryOfFinal = "no-retry-of-permanent-or-critical"
	// InvAttempts: no job is scheduled for another attempt past the retry
	// policy's maximum.
	InvAttempts = "attempts-within-policy"
	// InvNoDoubleCharge: no payment is charged twice (see Ledger.Charge).
	InvNoDoubleCharge = "no-double-charge"
	// InvCriticalPaged: a high-severity alert reaches a receiver within
	// the page deadline of every critical failure (the engine checks it).
	InvCriticalPaged = "critical-failure-paged"
	// InvOnePage: at most one page per fingerprint per repeat interval
	// (the engine checks it).
	InvOnePage = "one-page-per-repeat-interval"
	// InvBreakerLegal: every breaker transition is a legal one (the
	// engine checks it).
	InvBreakerLegal = "breaker-transitions-legal"
	// InvNoRerunAfterDead: once a job's dead letter is decided (written,
	// held, or kept by the worker), its handler never runs again, whatever
	// the path (a lease that expired included), until an operator or the
	// auto-retry requeues it from the DLQ.
	InvNoRerunAfterDead = "no-rerun-after-dead-letter"
)

// invariantNames are the invariants in declaration order: a Record keeps one
// bit per invariant its job has violated.
var invariantNames = []string{InvConservation, InvLegalMove, InvNoMoveAfterDone, InvOneDLQEntry, InvNoRetryOfFinal,
	InvAttempts, InvNoDoubleCharge, InvCriticalPaged, InvOnePage, InvBreakerLegal, InvNoRerunAfterDead,
	InvOutcomeIsMove, InvNoLeaseLeftExpired}

func invariantBit(name string) uint16 {
	for i, n := range invariantNames {
		if n == name {
			return 1 << i
		}
	}
	return 0
}

// maxUnknownJobs bounds how many jobs the ledger does not know (never
// created, or forgotten after they succeeded) it remembers having
// reported.
const maxUnknownJobs = 10_000

// Removed is the state the ledger counts a job in once it left the system
// (purged or evicted from the DLQ): the disposition states plus Removed
// are the ledger's buckets (see Count).
const Removed = disposition.Held + 1

// removed is Removed, as the ledger's own code names it.
const removed = Removed

// numStates is how many buckets the ledger counts jobs in.
const numStates = removed + 1

// trailCap is how many recent moves a job's trail keeps.
const trailCap = 12

type trailKind uint8

const (
	trailMove trailKind = iota
	trailAttempt
	trailNote
)

// trailItem is one line of a job's trail, kept small (a job's trail is
// written on every move) and formatted only when a violation needs it.
type trailItem struct {
	at time.Duration
	// text is the reason of a move, the rule of an attempt's verdict, or a
	// note.
	text      string
	fault     string
	attempts  int32
	kind      trailKind
	from, to  disposition.State
	trueClass classify.Class
	said      classify.Class
	action    worker.Action
	failed    bool
}

// Record is the ledger's record of one job that has not succeeded (or is
// watched by an expectation, or kept by a drill's judge). The engine holds
// on to it while the job's attempt runs (see Ledger.Last and Ledger.Job);
// its fields are the ledger's, read through its methods.
type Record struct {
	id       string
	task     int32
	n        int64 // generated job number, 0 for an explicit job
	state    disposition.State
	watched  bool
	severity classify.Severity // of its latest failure
	class    classify.Class
	// The verdict of an attempt whose outcome is being applied: it becomes
	// the job's when the store makes the move (settle), and is dropped when
	// the move was fenced off.
	pendSev   classify.Severity
	pendClass classify.Class
	hasPend   bool
	charged   int32
	lastMove  disposition.Reason
	trail     [trailCap]trailItem
	trailLen  int // items written, ever
	everDLQ   bool
	requeued  int32
	finalSeen bool
	// violated has a bit per invariant this job already violated (see
	// invariantBit): a job is listed once per invariant.
	violated uint16
	// decided says the job's dead letter is decided (written, held, or
	// kept by the worker) and it has not been requeued since: its handler
	// must not run again. decidedAt is when (for the held wait).
	decided   bool
	kept      bool
	refused   bool
	decidedAt time.Duration
}

func (r *Record) add(it trailItem) {
	r.trail[r.trailLen%trailCap] = it
	r.trailLen++
}

// lines formats the trail, oldest first.
func (r *Record) lines(start time.Time) []string {
	n := min(r.trailLen, trailCap)
	out := make([]string, 0, n+1)
	if r.trailLen > trailCap {
		out = append(out, fmt.Sprintf("(%d earlier moves not kept)", r.trailLen-trailCap))
	}
	for i := r.trailLen - n; i < r.trailLen; i++ {
		out = append(out, formatTrail(r.trail[i%trailCap]))
	}
	return out
}

func formatTrail(it trailItem) string {
	at := fmtOffset(it.at)
	switch it.kind {
	case trailAttempt:
		if !it.failed {
			return fmt.Sprintf("%s  attempt: succeeded", at)
		}
		truth := it.trueClass.String()
		if it.fault != "" {
			truth += " (fault " + it.fault + ")"
		}
		return fmt.Sprintf("%s  attempt failed: injected %s; classifier said %s by rule %q → %s", at, truth,
			it.said, it.text, it.action)
	case trailNote:
		return at + "  " + it.text
	}
	return fmt.Sprintf("%s  %s → %s (%s), attempts %d", at, it.from, it.to, it.text, it.attempts)
}

// fmtOffset prints a virtual offset as "+1m02.500s".
func fmtOffset(d time.Duration) string {
	return "+" + d.Round(time.Millisecond).String()
}

// legal[from][to] says whether a store may move a job from → to.
var legal = func() (t [numStates][numStates]bool) {
	d := disposition.DeadLettered
	for _, m := range [][2]disposition.State{
		{disposition.None, disposition.Queued},
		{disposition.None, d}, // an entry added directly (an import)
		{disposition.Queued, disposition.InFlight},
		{disposition.InFlight, disposition.Succeeded},
		{disposition.InFlight, disposition.Scheduled},
		{disposition.InFlight, d},
		{disposition.InFlight, disposition.Queued},
		{disposition.InFlight, disposition.Fallback},
		{disposition.Scheduled, disposition.Queued},
		{disposition.Fallback, disposition.Queued},
		{d, disposition.Queued},
		{d, disposition.None},                    // evicted or purged
		{disposition.InFlight, disposition.Held}, // a decided dead letter the DLQ refused or could not take
		{disposition.Held, d},                    // written once there is room
	} {
		t[m[0]][m[1]] = true
	}
	return t
}()

type dlKey struct {
	task     int32
	severity classify.Severity
	class    classify.Class
}

// Ledger follows every job from the store's disposition events and the
// engine's attempt outcomes, and checks the invariants as it goes: O(1)
// work per event, memory for the jobs not yet succeeded only. The
// simulator feeds it as its run goes, a drill's judge from the drill's
// history; both read the totals, the violations and the jobs' fates from
// it at the end. It is not safe for concurrent use.
type Ledger struct {
	seed  uint64
	start time.Time
	now   func() time.Duration

	jobs map[string]*Record
	// last is the record of the latest event: a job's moves often come
	// one after another.
	last      *Record
	free      []*Record
	succeeded []uint64 // bitset of generated job numbers that succeeded

	counts    [numStates]int64
	created   int64
	taskNames []string
	taskIndex map[string]int32
	lastTask  int32 // the index task returned last
	byTask    [][numStates]int64
	taskMade  []int64
	dlqBySev  [classify.High + 1]int64
	deadBy    map[dlKey]int64

	totals reports.Ledger

	maxAttempts int
	// watched are job IDs an expectation names: kept after they succeed.
	watched map[string]bool
	// keepAll keeps every job's record after it succeeds (a drill's judge:
	// a late charge or completion of a succeeded job is still named).
	keepAll bool

	// Confusion matrix: failures by [true class][said class][action]; its
	// margins (true × said, true × route) are summed when read.
	confusionN [8][8][8]int64

	// violations are the violations listed, in order; violationN counts
	// every violation per invariant, listed or not.
	violations []reports.Violation
	violationN map[string]int64
	// lastMismatch is the last difference reconcile found between the
	// store's counts and the ledger's, per check: reported once until it
	// changes.
	lastMismatch [3][4]int64
	// ow follows attempts' outcomes and leases (see outcome.go).
	ow outcomeWatch
}

// NewLedger returns an empty ledger for a run with seed seed started at
// start: now tells the run's offset (a violation's time, a trail's),
// maxAttempts is the retry policy's maximum (0 for none), and watched are
// the IDs of generated jobs an expectation names, kept after they succeed.
func NewLedger(seed uint64, start time.Time, now func() time.Duration, maxAttempts int, watched map[string]bool) *Ledger {
	return &Ledger{
		seed: seed, start: start, now: now,
		jobs:        make(map[string]*Record),
		taskIndex:   make(map[string]int32),
		deadBy:      make(map[dlKey]int64),
		maxAttempts: maxAttempts,
		watched:     watched,
		violationN:  make(map[string]int64),
	}
}

// Task returns the index of task name, adding it: the engine adds the
// workload's tasks first, in order, so that the ledger's index is its own.
func (l *Ledger) Task(name string) int32 {
	if len(l.taskNames) > 0 && l.taskNames[l.lastTask] == name {
		return l.lastTask // jobs mostly come in runs of one task
	}
	if i, ok := l.taskIndex[name]; ok {
		l.lastTask = i
		return i
	}
	i := int32(len(l.taskNames))
	l.taskIndex[name] = i
	l.taskNames = append(l.taskNames, name)
	l.byTask = append(l.byTask, [numStates]int64{})
	l.taskMade = append(l.taskMade, 0)
	return i
}

// Fail records a violation of invariant (about job r, nil for none); the run goes on. A job is named once per
// invariant (a job charged three times is one double charge); the first
// reports.MaxListedViolations of an invariant are listed with the job's
// trail, the rest only counted.
func (l *Ledger) Fail(invariant string, r *Record, format string, args ...any) {
	if r != nil {
		bit := invariantBit(invariant)
		if r.violated&bit != 0 {
			return
		}
		r.violated |= bit
	}
	l.violationN[invariant]++
	if l.violationN[invariant] > reports.MaxListedViolations {
		return
	}
	v := reports.Violation{Invariant: invariant, Message: fmt.Sprintf(format, args...), AtMs: l.now().Milliseconds(), Seed: l.seed}
	if r != nil {
		v.JobID = r.id
		v.Trail = r.lines(l.start)
	}
	l.violations = append(l.violations, v)
}

// mismatch records the difference d between the store's counts and the
// ledger's for check kind, and reports whether it is one to report: not
// zero, and not the one last recorded.
func (l *Ledger) mismatch(kind int, d ...int64) bool {
	var k [4]int64
	copy(k[:], d)
	if k == l.lastMismatch[kind] {
		return false
	}
	l.lastMismatch[kind] = k
	return k != [4]int64{}
}

// violated reports whether any invariant was violated.
func (l *Ledger) violated() bool { return len(l.violations) > 0 }

// stranger returns a record for a job the ledger does not hold — never
// created, or forgotten once it succeeded — so that its moves are followed
// (and it is reported once) from now on: in state, with the event's task.
func (l *Ledger) stranger(e disposition.Event, state disposition.State) *Record {
	if len(l.jobs) >= maxUnknownJobs && state == disposition.None {
		// Bounded: past this many, an unknown job is counted, not followed.
		return nil
	}
	r := l.Register(e.JobID, e.Task, 0)
	r.watched = true
	if state == disposition.Succeeded {
		r.state = state
		l.counts[state]++
		l.byTask[r.task][state]++
	}
	return r
}

// shift moves r, in the counts, from where the ledger had it to state
// from, where the store says it was: after a violation, the ledger follows
// the store so that one lost event is one violation, not a cascade.
func (l *Ledger) shift(r *Record, from disposition.State) {
	if s := r.state; s != disposition.None {
		l.counts[s]--
		l.byTask[r.task][s]--
	}
	if from != disposition.None {
		l.counts[from]++
		l.byTask[r.task][from]++
	}
	r.state = from
}

// JobNumber returns the number of a generated job ID ("<task>-<n>").
func JobNumber(id string) (int64, bool) {
	i := strings.LastIndexByte(id, '-')
	if i < 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(id[i+1:], 10, 64)
	return n, err == nil && n > 0
}

func (l *Ledger) isSucceeded(n int64) bool {
	w := n >> 6
	return w < int64(len(l.succeeded)) && l.succeeded[w]&(1<<(n&63)) != 0
}

func (l *Ledger) markSucceeded(n int64) {
	w := int(n >> 6)
	if w >= len(l.succeeded) {
		l.succeeded = slices.Grow(l.succeeded, w+1-len(l.succeeded))[:w+1]
	}
	l.succeeded[w] |= 1 << (n & 63)
}

// Register tells the ledger a job is about to be enqueued: n is its
// generated number (0 for an explicit job).
func (l *Ledger) Register(id, task string, n int64) *Record {
	var r *Record
	if k := len(l.free); k > 0 {
		r, l.free = l.free[k-1], l.free[:k-1]
		*r = Record{}
	} else {
		r = new(Record)
	}
	r.id, r.task, r.n = id, l.Task(task), n
	r.watched = n == 0 || l.watched[id]
	l.jobs[id] = r
	l.last = r
	return r
}

// Unregister forgets a job whose enqueue failed before any move.
func (l *Ledger) Unregister(id string) {
	if r := l.jobs[id]; r != nil && r.state == disposition.None && r.trailLen == 0 {
		delete(l.jobs, id)
		l.free = append(l.free, r)
		l.last = nil
	}
}

// Observe is the store's Observer: it follows move e, and checks it.
// It allocates nothing for a job it holds.
func (l *Ledger) Observe(e disposition.Event) {
	r := l.last
	if r == nil || r.id != e.JobID {
		r = l.jobs[e.JobID]
		l.last = r
	}
	if r == nil {
		if n, ok := JobNumber(e.JobID); ok && l.isSucceeded(n) {
			r = l.stranger(e, disposition.Succeeded)
		} else {
			r = l.stranger(e, disposition.None)
			if r == nil {
				l.Fail(InvConservation, nil, "the store moved job %s (%s → %s, %s), which the simulator never created", e.JobID, e.From, e.To, e.Reason)
				return
			}
			l.Fail(InvConservation, r, "the store moved job %s (%s → %s, %s), which the simulator never created", e.JobID, e.From, e.To, e.Reason)
		}
	}
	if e.From >= numStates || e.To >= numStates {
		l.Fail(InvLegalMove, r, "job %s made an illegal move %s → %s (%s)", e.JobID, e.From, e.To, e.Reason)
		return // no state the ledger can count it in
	}
	at := l.now() // the store's events carry the simulator's now
	r.add(trailItem{kind: trailMove, at: at, from: e.From, to: e.To, text: string(e.Reason), attempts: int32(e.Attempts)})
	l.outcomeMove(r, e, at)
	state := r.state
	if state == removed { // a purged or evicted job may come back (an import)
		state = disposition.None
	}
	if e.From != state {
		if r.state == disposition.Succeeded {
			l.Fail(InvNoMoveAfterDone, r, "job %s moved %s → %s (%s) after it had succeeded", e.JobID, e.From, e.To, e.Reason)
		} else {
			l.Fail(InvConservation, r, "job %s moved %s → %s (%s), but the ledger had it %s: the store lost track of it", e.JobID, e.From, e.To, e.Reason, r.state)
		}
		l.shift(r, e.From)
	}
	if !legal[e.From][e.To] {
		l.Fail(InvLegalMove, r, "job %s made an illegal move %s → %s (%s)", e.JobID, e.From, e.To, e.Reason)
	}
	from, to := e.From, e.To
	if to == disposition.None {
		to = removed
	}
	switch {
	case from == disposition.None && r.state == removed:
		l.counts[removed]--
		l.byTask[r.task][removed]--
	case from == disposition.None:
		l.created++
		l.taskMade[r.task]++
	default:
		l.counts[from]--
		l.byTask[r.task][from]--
	}
	l.counts[to]++
	l.byTask[r.task][to]++
	r.state = e.To
	r.lastMove = e.Reason
	if to == removed {
		r.state = removed
	}

	// A decided dead letter: the written or held move, or the write of a
	// held or kept one; a lease of a decided job is a re-run.
	switch {
	case e.From == disposition.InFlight && (e.To == disposition.Held || e.To == disposition.DeadLettered):
		if !r.decided {
			r.decided, r.decidedAt = true, at
		} else if e.To == disposition.DeadLettered { // kept by the worker, now written
			l.heldWritten(r, at)
		}
		r.kept = false
	case e.From == disposition.Held && e.To == disposition.DeadLettered:
		l.heldWritten(r, at)
	case e.Reason == disposition.Requeued:
		r.decided = false
	case e.Reason == disposition.Leased && r.decided:
		l.Fail(InvNoRerunAfterDead, r, "job %s was leased again at %s (its handler runs again) after its dead letter was decided at %s",
			e.JobID, fmtOffset(at), fmtOffset(r.decidedAt))
	}

	switch e.Reason {
	case disposition.Leased:
		l.totals.Attempts++
	case disposition.RetryLater:
		l.totals.Retries++
		if l.maxAttempts > 0 && e.Attempts >= l.maxAttempts {
			l.Fail(InvAttempts, r, "job %s was scheduled for another attempt after %d attempts; the policy allows %d", e.JobID, e.Attempts, l.maxAttempts)
		}
	case disposition.DeadLetter:
		l.totals.DeadLetters++
	case disposition.Requeued:
		l.totals.Requeues++
		r.requeued++
	case disposition.Diverted:
		l.totals.Diversions++
	case disposition.Drained:
		l.totals.Drained++
	case disposition.Released:
		l.totals.Released++
	case disposition.LeaseExpired:
		l.totals.LeaseExpiries++
	case disposition.Evicted:
		l.totals.Evicted++
	case disposition.Purged:
		l.totals.Purged++
	}
	if from == disposition.DeadLettered && r.severity <= classify.High {
		l.dlqBySev[r.severity]--
	}
	if r.hasPend && (to == disposition.DeadLettered || to == disposition.Scheduled || to == disposition.Held) {
		r.severity, r.class, r.hasPend = r.pendSev, r.pendClass, false
	}
	switch to {
	case disposition.DeadLettered:
		if r.severity <= classify.High {
			l.dlqBySev[r.severity]++
		}
		l.deadBy[dlKey{r.task, r.severity, r.class}]++
		r.everDLQ = true
	case disposition.Succeeded:
		if !r.watched && !l.keepAll {
			l.markSucceeded(r.n)
			delete(l.jobs, r.id)
			l.free = append(l.free, r)
			l.last = nil
		}
	}
}

// Attempt records the outcome o of an attempt of job r, fault and truth
// the injected fault and its true class (zero when the error was not injected).
func (l *Ledger) Attempt(r *Record, fault string, truth classify.Class, o *worker.Outcome) {
	failed := o.Err != nil
	r.add(trailItem{kind: trailAttempt, at: l.now(), fault: fault, trueClass: truth, said: o.Verdict.Class, text: o.Verdict.Rule, action: o.Action, failed: failed})
	if !failed {
		return
	}
	r.pendSev, r.pendClass, r.hasPend = o.Verdict.Severity, o.Verdict.Class, true
	if int(truth) < 8 && int(o.Verdict.Class) < 8 && int(o.Action) < 8 {
		l.confusionN[truth][o.Verdict.Class][o.Action]++
	}
	if o.Action == worker.Retry && (truth == classify.Permanent || truth == classify.Critical) {
		l.Fail(InvNoRetryOfFinal, r, "job %s: a %s failure (fault %s) was scheduled for a retry: the classifier said %s by rule %q",
			r.id, truth, fault, o.Verdict.Class, o.Verdict.Rule)
	}
}

// Settle ends an attempt's pending verdict: the job's own when its outcome
// was applied, dropped when the move was fenced off or refused.
func (l *Ledger) Settle(r *Record, applied bool) {
	l.outcomeSettled(r, applied)
	if r == nil || !r.hasPend {
		return
	}
	if applied {
		r.severity, r.class = r.pendSev, r.pendClass
	}
	r.hasPend = false
}

// heldWritten counts a held (or kept) dead letter written to the DLQ at at.
func (l *Ledger) heldWritten(r *Record, at time.Duration) {
	l.totals.Held++
	l.totals.HeldMaxMs = max(l.totals.HeldMaxMs, (at - r.decidedAt).Milliseconds())
}

// Keep notes that the worker keeps r's decided dead letter in memory: it
// is in flight, its fate decided.
func (l *Ledger) Keep(r *Record) {
	if r == nil || r.kept {
		return
	}
	if !r.decided {
		r.decided, r.decidedAt = true, l.now()
	}
	r.kept = true
	l.totals.Kept++
}

// Refuse counts a full DLQ's refusal of job id's dead letter: the job once,
// the refusal every time.
func (l *Ledger) Refuse(id string) {
	l.totals.RefusedTimes++
	if r := l.jobs[id]; r != nil && !r.refused {
		r.refused = true
		l.totals.Refused++
	} else if r == nil {
		l.totals.Refused++
	}
}

// Note adds a line to job r's trail.
func (l *Ledger) Note(r *Record, format string, args ...any) {
	r.add(trailItem{kind: trailNote, at: l.now(), text: fmt.Sprintf(format, args...)})
}

// InDLQ counts the jobs in the DLQ whose task, latest severity and class
// match (empty filters match all): O(jobs not succeeded), for the end.
func (l *Ledger) InDLQ(task string, sev classify.Severity, class classify.Class) int64 {
	var n int64
	for _, r := range l.jobs {
		if r.state == disposition.DeadLettered && (task == "" || l.taskNames[r.task] == task) &&
			(sev == classify.SeverityNone || r.severity == sev) && (class == 0 || r.class == class) {
			n++
		}
	}
	return n
}

// CheckCreated verifies that every job the simulator enqueued reached the
// ledger through an enqueue event (the buckets add up by construction:
// every event moves one job from one to another; the store's own counts
// are checked against them by reconcile).
func (l *Ledger) CheckCreated(made int64) {
	l.ResolveRefusal()
	if l.created != made {
		l.Fail(InvConservation, nil, "%d jobs were enqueued, but the store reported %d enqueue events", made, l.created)
	}
}

// Report returns the ledger's totals, as the report lists them.
func (l *Ledger) Report() reports.Ledger {
	t := l.totals
	t.Created = l.created
	t.Queued = l.counts[disposition.Queued]
	t.InFlight = l.counts[disposition.InFlight]
	t.Scheduled = l.counts[disposition.Scheduled]
	t.Fallback = l.counts[disposition.Fallback]
	t.HeldAtEnd = l.counts[disposition.Held]
	t.DeadLettered = l.counts[disposition.DeadLettered]
	t.Succeeded = l.counts[disposition.Succeeded]
	t.Removed = l.counts[removed]
	t.ByTask = make([]reports.TaskTotals, 0, len(l.taskNames))
	for _, i := range sortedIdx(l.taskNames) {
		c := l.byTask[i]
		t.ByTask = append(t.ByTask, reports.TaskTotals{
			Task: l.taskNames[i], Created: l.taskMade[i],
			Succeeded: c[disposition.Succeeded], DeadLettered: c[disposition.DeadLettered],
			Pending:  c[disposition.Queued] + c[disposition.InFlight] + c[disposition.Scheduled] + c[disposition.Held],
			Fallback: c[disposition.Fallback],
			Removed:  c[removed],
		})
	}
	t.DeadLetteredBy = make([]reports.DeadLetterCount, 0, len(l.deadBy))
	for k, n := range l.deadBy {
		t.DeadLetteredBy = append(t.DeadLetteredBy, reports.DeadLetterCount{
			Task: l.taskNames[k.task], Severity: k.severity.String(), Class: k.class.String(), Count: n,
		})
	}
	slices.SortFunc(t.DeadLetteredBy, func(a, b reports.DeadLetterCount) int {
		return strings.Compare(a.Task+"\x00"+a.Severity+"\x00"+a.Class, b.Task+"\x00"+b.Severity+"\x00"+b.Class)
	})
	return t
}

// ConfusionCount counts the failures of true class truth the classifier
// called said (0 = any) whose job took route (0 = any).
func (l *Ledger) ConfusionCount(truth, said classify.Class, route worker.Action) int64 {
	if int(truth) >= 8 || int(said) >= 8 || int(route) >= 8 {
		return 0
	}
	var n int64
	for s := range l.confusionN[truth] {
		for a, k := range l.confusionN[truth][s] {
			if (said == 0 || classify.Class(s) == said) && (route == 0 || worker.Action(a) == route) {
				n += k
			}
		}
	}
	return n
}

// Confusion returns the confusion matrix's rows: failures by true class,
// with what the classifier said and where the jobs went.
func (l *Ledger) Confusion() []reports.Confusion {
	var out []reports.Confusion
	for truth := range l.confusionN {
		row := reports.Confusion{True: classify.Class(truth).String(), Said: map[string]int64{}, Routes: map[string]int64{}}
		for said := range l.confusionN[truth] {
			for action, n := range l.confusionN[truth][said] {
				if n > 0 {
					row.Said[classify.Class(said).String()] += n
					row.Routes[worker.Action(action).String()] += n
					row.Total += n
				}
			}
		}
		if row.Total > 0 {
			out = append(out, row)
		}
	}
	return out
}

func sortedIdx(names []string) []int {
	idx := make([]int, len(names))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return strings.Compare(names[a], names[b]) })
	return idx
}
