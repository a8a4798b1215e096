// Package demo plays the seed document's payment-service challenge through
// the reference implementation, on virtual time, and tells what happened to
// every job: a card declined, gateway timeouts with and without an
// idempotency key, an authentication failure that pages, an SMTP relay that
// keeps failing until the DLQ, a primary that fails and recovers (jobs
// diverted to the batch queue and drained back), and an operator reprocessing
// the medium-severity DLQ entries. Same seed, same output, byte for byte.
package demo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/alert/sink"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/reference/degrade"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/failure"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/redact"
	"github.com/faultline/faultline/reference/retry"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/worker"
)

// Backend is a namespace's queue and DLQ in one: memstore or redisstore.
type Backend interface {
	queue.Queue
	dlq.Store
}

// Options configure a run.
type Options struct {
	// Seed seeds every random stream (retry jitter, alert delivery jitter).
	Seed uint64
	// NewBackend opens the store to run on with cfg (whose Observer the
	// demo sets to count every job's moves).
	NewBackend func(cfg store.Config) (Backend, error)
	// Name describes the backend in the report, e.g. "miniredis".
	Name string
	// Now is the wall clock the DLQ's depth history ends at (see
	// HistorySpan): `faultline demo` gives time.Now, so that `faultline ui`
	// opened after it draws the history in its trend chart. Nil ends it at
	// the run's virtual end, Start plus its horizon.
	Now func() time.Time

	backend Backend
}

// Start is the virtual instant the demo begins at.
var Start = time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)

// HistorySpan is how far back the depth history the demo leaves reaches,
// and HistoryStep the time between two of its samples.
const (
	HistorySpan = 24 * time.Hour
	HistoryStep = 5 * time.Minute
)

const (
	gateway = classify.PaymentGateway
	smtp    = "smtp"
	step    = 250 * time.Millisecond
	horizon = 5 * time.Minute
	// The primary payment gateway is down in [outageFrom, outageUntil).
	outageFrom, outageUntil = 20 * time.Second, 50 * time.Second
	// The SMTP relay answers 504 until smtpFixed; the operator reprocesses
	// the medium-severity DLQ entries at reprocessAt.
	smtpFixed, reprocessAt = 2 * time.Minute, 3 * time.Minute
	authFailureAt          = 3*time.Minute + 30*time.Second
)

// script is what a job's dependency answers to its n-th attempt (from 1) at
// virtual offset t.
type script func(n int, t time.Duration) error

func declined(int, time.Duration) error {
	return &failure.CardError{Code: "card_declined", Decline: "insufficient_funds", Message: "Your card has insufficient funds."}
}

// slowGatewayEarly times out while the gateway is slow, early in the run.
func slowGatewayEarly(_ int, t time.Duration) error {
	if t < 5*time.Second {
		return &failure.TimeoutError{Op: "POST /v1/charges", After: 30 * time.Second}
	}
	return nil
}

func timeoutsThenOK(fails int) script {
	return func(n int, _ time.Duration) error {
		if n <= fails {
			return &failure.TimeoutError{Op: "POST /v1/charges", After: 30 * time.Second}
		}
		return nil
	}
}

func authFailure(int, time.Duration) error {
	return &failure.HTTPError{Code: http.StatusUnauthorized, Body: "invalid api key sk_live_51Hdemo0000000000"}
}

func smtpRelay(_ int, t time.Duration) error {
	if t < smtpFixed {
		return &failure.HTTPError{Code: http.StatusGatewayTimeout, Body: "relay timeout"}
	}
	return nil
}

func primary(_ int, t time.Duration) error {
	if t >= outageFrom && t < outageUntil {
		return &failure.HTTPError{Code: http.StatusServiceUnavailable, Body: "primary unavailable"}
	}
	return nil
}

type plannedJob struct {
	at     time.Duration
	j      job.Job
	script script
	note   string
}

func plan() []plannedJob {
	charge := func(id string, key bool) job.Job {
		j := job.Job{ID: id, Task: "charge", Queue: "payments", Dependency: gateway,
			Payload: []byte(`{"amount":100,"card":"4242 4242 4242 4242"}`)}
		if key {
			j.IdempotencyKey = "idem-" + id
		}
		return j
	}
	p := []plannedJob{
		{0, charge("pay-1", true), declined, "card declined"},
		{0, charge("pay-2", true), timeoutsThenOK(2), "gateway timeouts, idempotency key"},
		{0, charge("pay-3", false), slowGatewayEarly, "gateway timeout, no idempotency key"},
		{0, job.Job{ID: "email-1", Task: "send-receipt", Queue: "emails", Dependency: smtp}, smtpRelay, "SMTP relay 504s"},
	}
	for i := range 8 {
		p = append(p, plannedJob{outageFrom + time.Duration(i)*2*time.Second, charge(fmt.Sprintf("pay-%d", 4+i), true), primary, "primary down, then back"})
	}
	// The API key is revoked late in the run: a critical failure that pages
	// and forces the gateway's breaker open.
	return append(p, plannedJob{authFailureAt, charge("pay-12", true), authFailure, "authentication failure"})
}

type jobLog struct {
	note  string
	lines []string
	final string
}

// Run plays the demo and writes its report to w, every secret masked by
// the default redactor (the payloads and errors it tells of are stored
// unmasked; what it prints is not).
func Run(ctx context.Context, w io.Writer, opts Options) error {
	var buf bytes.Buffer
	err := run(ctx, &buf, opts)
	if _, werr := io.WriteString(w, redact.Default().String(buf.String())); werr != nil && err == nil {
		err = werr
	}
	return err
}

func run(ctx context.Context, w io.Writer, opts Options) error {
	var events []disposition.Event
	backend, err := opts.NewBackend(store.Config{Namespace: "demo", Observer: func(e disposition.Event) { events = append(events, e) }})
	if err != nil {
		return fmt.Errorf("open the %s store: %w", opts.Name, err)
	}
	opts.backend = backend
	clk := clock.NewVirtual(Start)
	rng := rand.New(rand.NewPCG(opts.Seed, 0xfa017))
	off := func() time.Duration { return clk.Now().Sub(Start) }

	policy, err := retry.New(retry.Config{BaseDelay: time.Second, MaxDelay: 20 * time.Second}, rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64())))
	if err != nil {
		return err
	}
	breaker, err := degrade.NewBreaker(degrade.BreakerConfig{Name: gateway, ConsecutiveFailures: 3, OpenDuration: 10 * time.Second,
		SuccessesToClose: 2, RampUp: degrade.NoRampUp}, clk)
	if err != nil {
		return err
	}
	fallback, err := degrade.NewFallback(breaker, opts.backend, degrade.FallbackConfig{BatchSize: 10, DrainInterval: time.Second}, clk)
	if err != nil {
		return err
	}
	pager, teamLog := &sink.Memory{}, &sink.Memory{}
	alerter, err := alert.New(alert.Config{
		Receivers:       []alert.Receiver{{Name: "on-call", Sink: pager}, {Name: "team-channel", Sink: teamLog}},
		Routes:          []alert.Route{{Receiver: "on-call", Severities: []classify.Severity{classify.High}}},
		DefaultReceiver: "team-channel",
		Timing:          alert.Timing{GroupWait: 5 * time.Second, GroupInterval: time.Minute, RepeatInterval: time.Hour},
		DedupWindow:     2 * time.Minute,
		Redactor:        redact.Default(),
	}, clk, rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64())))
	if err != nil {
		return err
	}
	var transitions []string
	breaker.OnStateChange(func(t degrade.Transition) {
		alerter.BreakerChanged(t)
		transitions = append(transitions, fmt.Sprintf("%7s  breaker %s: %s → %s (%s)", fmtOffset(t.At.Sub(Start)), t.Breaker, t.From, t.To, t.Reason))
	})
	core, err := worker.NewCore(worker.Config{
		Classifier: classify.Default(), Policy: policy, Alerter: alerter,
		Guards: map[string]worker.Guard{gateway: {Router: fallback, Breaker: breaker}},
		Summary: func(j job.Job) map[string]any {
			return map[string]any{"payload": string(j.Payload)}
		},
	})
	if err != nil {
		return err
	}
	pipeline, err := worker.NewPipeline(worker.PipelineConfig{Core: core, Queue: opts.backend, DLQ: opts.backend})
	if err != nil {
		return err
	}

	planned := plan()
	scripts := map[string]script{}
	logs := map[string]*jobLog{}
	var order []string
	for _, pj := range planned {
		scripts[pj.j.ID] = pj.script
		logs[pj.j.ID] = &jobLog{note: pj.note}
		order = append(order, pj.j.ID)
	}
	say := func(id, format string, args ...any) {
		logs[id].lines = append(logs[id].lines, fmt.Sprintf("%7s  ", fmtOffset(off()))+fmt.Sprintf(format, args...))
	}

	next := 0
	reprocessed := false
	var operator []string
	for off() <= horizon {
		now := clk.Now()
		for next < len(planned) && planned[next].at <= off() {
			pj := planned[next]
			j := pj.j
			j.EnqueuedAt = now
			if j.IdempotencyKey != "" {
				j.KeyRecordedAt = now
			}
			if err := opts.backend.Enqueue(ctx, j, now); err != nil {
				return fmt.Errorf("enqueue %s: %w", j.ID, err)
			}
			say(j.ID, "enqueued on %s", j.QueueName())
			next++
		}
		if !reprocessed && off() >= reprocessAt {
			reprocessed = true
			// The operator requeues only what is safe to run again: the
			// transient failures. A timed-out charge without an idempotency
			// key may have gone through at the gateway (its answer was
			// lost); running it again could charge the card twice, so it
			// stays in the DLQ until someone has checked the gateway's
			// records — the seed's naive "requeue everything medium" would
			// double-charge it.
			res, err := opts.backend.RequeueMatching(ctx, dlq.Filter{
				Severities: []classify.Severity{classify.Medium},
				Classes:    []classify.Class{classify.Transient, classify.RateLimited},
			}, dlq.RequeueOptions{Budget: dlq.OneMoreAttempt, By: "operator"}, now, false)
			if err != nil {
				return fmt.Errorf("reprocess: %w", err)
			}
			operator = append(operator, fmt.Sprintf("%7s  operator: reprocessed %d transient medium-severity jobs from the DLQ (one more attempt each)", fmtOffset(off()), res.Requeued))
			unsafe, err := opts.backend.List(ctx, dlq.Filter{
				Classes:  []classify.Class{classify.Indeterminate},
				Statuses: []dlq.Status{dlq.Failed},
			}, "", 100)
			if err != nil {
				return fmt.Errorf("reprocess: %w", err)
			}
			for _, e := range unsafe.Entries {
				if e.Job.IdempotencyKey != "" {
					continue
				}
				operator = append(operator, fmt.Sprintf("%7s  operator: left %s in the DLQ: its charge timed out with no idempotency key, so the gateway may have taken the money; requeueing it could charge the card twice — reconcile with the gateway's records first", fmtOffset(off()), e.ID()))
				if logs[e.ID()] != nil {
					say(e.ID(), "left in the DLQ by the operator: the charge may have gone through (no idempotency key); reconcile with the gateway before any requeue")
				}
			}
			for _, id := range order {
				if logs[id].final == "dead-lettered" {
					if e, err := opts.backend.Get(ctx, id); err == nil && e.Status == dlq.Requeued {
						say(id, "requeued from the DLQ by the operator")
					}
				}
			}
		}
		if _, err := opts.backend.ForwardDue(ctx, now, 100); err != nil {
			return err
		}
		if _, err := opts.backend.RecoverExpired(ctx, now, 100); err != nil {
			return err
		}
		for _, qname := range []string{"payments", "emails"} {
			for {
				j, l, ok, err := opts.backend.Dequeue(ctx, qname, now, 30*time.Second)
				if err != nil {
					return err
				}
				if !ok {
					break
				}
				a, run, err := pipeline.Start(ctx, j, l, now)
				if err != nil {
					return err
				}
				if !run {
					say(j.ID, "breaker %s: diverted to the batch queue (%v)", breaker.State(), a.DivertReason)
					logs[j.ID].final = "in fallback"
					continue
				}
				n := j.Attempts + 1
				herr := scripts[j.ID](n, off())
				o, err := pipeline.Finish(ctx, a, l, herr, now)
				if err != nil && !errors.Is(err, dlq.ErrFull) {
					return err
				}
				if herr == nil {
					say(j.ID, "attempt %d: succeeded", n)
					logs[j.ID].final = "succeeded"
					continue
				}
				verdict := fmt.Sprintf("%s (%s)", o.Verdict, o.Verdict.Rule)
				switch o.Action {
				case worker.Retry:
					say(j.ID, "attempt %d: %s → retry at %s (%s)", n, verdict, fmtOffset(o.At.Sub(Start)), o.Decision.Reason)
					logs[j.ID].final = "scheduled"
				case worker.DeadLetter:
					say(j.ID, "attempt %d: %s → dead-lettered (%s)", n, verdict, o.Decision.Reason)
					logs[j.ID].final = "dead-lettered"
				default:
					say(j.ID, "attempt %d: %s → %s", n, verdict, o.Action)
				}
			}
		}
		clk.Advance(step)
	}

	end := Start.Add(horizon)
	if opts.Now != nil {
		end = opts.Now()
	}
	if err := recordHistory(ctx, opts.backend, end, opts.Seed); err != nil {
		return err
	}

	fmt.Fprintf(w, "faultline demo — the payment service challenge, on %s, seed %d\n\n", opts.Name, opts.Seed)
	for _, id := range order {
		l := logs[id]
		fmt.Fprintf(w, "%s — %s\n", id, l.note)
		for _, line := range l.lines {
			fmt.Fprintln(w, line)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "operator")
	for _, line := range operator {
		fmt.Fprintln(w, line)
	}
	fmt.Fprintln(w, "\ncircuit breaker")
	for _, t := range transitions {
		fmt.Fprintln(w, t)
	}
	fmt.Fprintln(w, "\npages (on-call: high severity) and messages (team channel)")
	printNotifications(w, "on-call", pager.Sent())
	printNotifications(w, "team-channel", teamLog.Sent())

	page, err := opts.backend.List(ctx, dlq.Filter{}, "", 100)
	if err != nil {
		return err
	}
	stats, err := opts.backend.Stats(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nDLQ at the end: %d entries, by status %s, by severity %s\n", stats.Total, fmtCounts(stats.ByStatus), fmtCounts(stats.BySeverity))
	entries := page.Entries
	sort.Slice(entries, func(i, k int) bool { return entries[i].Job.ID < entries[k].Job.ID })
	for _, e := range entries {
		fmt.Fprintf(w, "  %-8s %-12s %-9s %-32s attempts %d  %s\n", e.Job.ID, e.Job.Task, e.Status, e.Verdict.String(), e.Job.Attempts, e.Reason)
	}
	counts, err := opts.backend.Counts(ctx)
	if err != nil {
		return err
	}
	// Account for every job by its own last move, then check the sums
	// against what the store says: a lost job and a doubled one cannot
	// cancel out.
	where := map[string]disposition.State{}
	for _, ev := range events {
		where[ev.JobID] = ev.To
	}
	byState := map[disposition.State]int{}
	var lost []string
	for _, pj := range planned {
		st, ok := where[pj.j.ID]
		if !ok || st == disposition.None {
			lost = append(lost, pj.j.ID)
			continue
		}
		byState[st]++
	}
	failed := stats.ByStatus[dlq.Failed.String()] + stats.ByStatus[dlq.Quarantined.String()] + stats.ByStatus[dlq.Deleted.String()]
	storeAgrees := byState[disposition.Queued] == counts.Queued && byState[disposition.InFlight] == counts.InFlight &&
		byState[disposition.Scheduled] == counts.Scheduled && byState[disposition.Fallback] == counts.Fallback &&
		byState[disposition.DeadLettered] == failed && len(where) == len(planned)
	fmt.Fprintf(w, "\nevery job accounted for: %d created = %d succeeded + %d in the DLQ + %d queued + %d in flight + %d scheduled + %d in fallback",
		len(planned), byState[disposition.Succeeded], byState[disposition.DeadLettered], byState[disposition.Queued],
		byState[disposition.InFlight], byState[disposition.Scheduled], byState[disposition.Fallback])
	if len(lost) > 0 || !storeAgrees {
		fmt.Fprintf(w, "  ← LOST %v, or the store disagrees (%+v, %d failed entries)\n", lost, counts, failed)
		return fmt.Errorf("demo: jobs unaccounted for: %v", lost)
	}
	fmt.Fprintln(w, "  ✓")
	return nil
}

// recordHistory writes the DLQ's depth over the HistorySpan before end,
// a sample every HistoryStep, through the store's dlq.DepthRecorder as the
// DLQ monitor writes one at each check: the samples the web UI's trend
// chart draws. The run itself lasts minutes of virtual time, so the
// history is a plausible day made from what it leaves: each entry waiting
// for a decision (failed or quarantined) arrives at a time of the day
// drawn from seed, more of them late in it, so the trend climbs from an
// empty DLQ to the depth the run leaves, reached at end. A store that
// keeps no samples is left alone.
func recordHistory(ctx context.Context, backend Backend, end time.Time, seed uint64) error {
	rec, ok := backend.(dlq.DepthRecorder)
	if !ok {
		return nil
	}
	page, err := backend.List(ctx, dlq.Filter{Statuses: []dlq.Status{dlq.Failed, dlq.Quarantined}}, "", 1000)
	if err != nil {
		return fmt.Errorf("depth history: list the DLQ: %w", err)
	}
	waiting := page.Entries
	sort.Slice(waiting, func(i, k int) bool { return waiting[i].ID() < waiting[k].ID() })
	rng := rand.New(rand.NewPCG(seed, 0xdeb7))
	arrived := make([]time.Time, len(waiting))
	for i := range waiting {
		u := rng.Float64()
		arrived[i] = end.Add(-time.Duration(u * u * float64(HistorySpan)))
	}
	for at := end.Add(-HistorySpan); !at.After(end); at = at.Add(HistoryStep) {
		s := dlq.DepthSample{At: at, BySeverity: map[string]int{}}
		for i, e := range waiting {
			if arrived[i].After(at) {
				continue
			}
			s.Waiting++
			s.BySeverity[e.Verdict.Severity.String()]++
			if e.Status == dlq.Failed && (s.Oldest.IsZero() || arrived[i].Before(s.Oldest)) {
				s.Oldest = arrived[i]
			}
		}
		if err := rec.RecordDepth(ctx, s); err != nil {
			return fmt.Errorf("depth history: record the sample of %s: %w", at.UTC().Format(time.RFC3339), err)
		}
	}
	return nil
}

func printNotifications(w io.Writer, receiver string, ns []alert.Notification) {
	if len(ns) == 0 {
		fmt.Fprintf(w, "  %s: none\n", receiver)
	}
	for _, n := range ns {
		for _, a := range n.Alerts {
			fmt.Fprintf(w, "%7s  %s ← [%s %s] %s (×%d)\n", fmtOffset(n.CreatedAt.Sub(Start)), receiver, strings.ToUpper(a.Status.String()), a.Severity, a.Summary, a.Count)
		}
	}
}

func fmtCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// fmtOffset prints a virtual offset as "+1m02.5s".
func fmtOffset(d time.Duration) string {
	d = d.Round(time.Millisecond)
	m := d / time.Minute
	s := float64(d%time.Minute) / float64(time.Second)
	if m > 0 {
		return fmt.Sprintf("+%dm%04.1fs", m, s)
	}
	return fmt.Sprintf("+%.1fs", s)
}
