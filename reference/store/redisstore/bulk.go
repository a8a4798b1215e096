package redisstore

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
)

// bulkMove returns the dlqSet item that moves entry e read at revision rev,
// and for a requeue the job it queues; a nil item skips e as Invalid.
type bulkMove func(e *dlq.Entry, rev string) (item []any, j *job.Job)

// bulkAhead is how many steps of a bulk move may be scanned and prepared
// ahead of the one being moved: the scans (read-only) and the Go work
// (decoding each entry once, encoding its new bytes) of the next steps
// overlap the current step's move, so that Redis, the round trips and Go's
// CPU run at the same time instead of one after another. Each step is still
// one bounded script; what is read ahead is guarded like any read (the move
// checks each entry's revision), so reading ahead changes no outcome, only
// widens the window in which an entry changed under the run is counted
// Changed.
const bulkAhead = 4

// bulkPlan is what a bulk walk covers: the index it walks, its score range
// and the filter each entry must match.
type bulkPlan struct {
	index  string
	lo, hi string
	pick   dlq.Filter
	now    time.Time
}

// plan returns the walk of f's picks with cut-off now, or false when f
// names no status a bulk move takes.
func bulkPlanOf(f dlq.Filter, auto bool, now time.Time) (bulkPlan, bool) {
	statuses := []dlq.Status{dlq.Failed}
	if len(f.Statuses) > 0 {
		statuses = nil
		for _, st := range []dlq.Status{dlq.Failed, dlq.Quarantined} {
			if slices.Contains(f.Statuses, st) && !(st == dlq.Quarantined && auto) {
				statuses = append(statuses, st)
			}
		}
	}
	p := bulkPlan{index: "bytime", lo: "-inf", hi: millis(now), now: now} // Failed and Quarantined: one walk, oldest first across both
	if !f.Since.IsZero() {
		p.lo = millis(f.Since)
	}
	if !f.Until.IsZero() && f.Until.Before(now) {
		p.hi = millis(f.Until)
	}
	switch len(statuses) {
	case 0:
		return p, false
	case 1:
		p.index = "st:" + statuses[0].String()
	}
	p.pick = f
	p.pick.Statuses = statuses
	p.pick.ErrorText = dlq.FoldText(f.ErrorText)
	return p, true
}

// takes reports whether the walk takes entry e: it decodes, matches the
// filter at full precision, and its last failure is before the cut-off.
func (p *bulkPlan) takes(e *dlq.Entry) bool {
	return !e.Corrupt && match(p.pick, e) && e.LastFailedAt.Before(p.now)
}

// bulkWalk is the walk of RequeueMatching and DeleteMatching: it picks the
// Failed entries matching f whose last failure is before now, and the
// Quarantined ones when f names that status (unless auto), oldest first, a
// step of at most BatchSize at a time, and moves each step's picks with
// one dlqSet script, counting what happened in the result (Requeued counts
// the moves). A dry run counts (bulkCount).
//
// The steps are pipelined (bulkAhead): one goroutine scans the index, step
// after step, anchored on the last member the previous step examined (a
// read-only script that ships the matches' bytes); workers decode each
// match once and build its move; and the calling goroutine runs the moves
// in the scan's order, one dlqSet script per step, and reports their events
// in that order. An error, or ctx canceled, stops the scan; the moves done
// are counted in the result returned with the error.
func (s *Store) bulkWalk(ctx context.Context, f dlq.Filter, auto bool, now time.Time, dryRun bool, move bulkMove) (dlq.BulkResult, error) {
	res := dlq.BulkResult{DryRun: dryRun}
	p, ok := bulkPlanOf(f, auto, now)
	if !ok {
		return res, nil
	}
	if dryRun {
		return s.bulkCount(ctx, &p)
	}
	// The scan runs on a context of its own, canceled when the moves stop;
	// the moves run on the caller's, which each checks before it writes.
	sctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	order := make(chan *bulkStep, bulkAhead)
	work := make(chan *bulkStep, bulkAhead)
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.bulkScan(sctx, &p, order, work)
	}()
	for range max(1, min(runtime.GOMAXPROCS(0), bulkAhead)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for st := range work {
				st.build(&p, move)
			}
		}()
	}
	seen := map[string]bool{}
	var items []any
	var jobs []*job.Job
	for st := range order {
		<-st.ready
		if st.err != nil {
			return res, st.err
		}
		res.Batches++
		items, jobs = items[:0], jobs[:0]
		for i := range st.picks {
			pk := &st.picks[i]
			if seen[pk.id] {
				continue
			}
			seen[pk.id] = true
			res.Matched++
			if pk.item == nil {
				res.Skipped++
				res.Invalid++
				continue
			}
			items = append(items, pk.item...)
			jobs = append(jobs, pk.job)
		}
		if len(items) == 0 {
			continue
		}
		r, err := s.runAt(ctx, now, dlqSetScript, items...)
		if err != nil {
			return res, err
		}
		for k, x := range asSlice(r) {
			switch asString(asSlice(x)[0]) {
			case "ok":
				res.Requeued++
				if jobs[k] != nil {
					s.emit(requeueEvent(jobs[k], now))
				}
				continue
			case "notfound":
				res.Gone++
			case "busy":
				res.Busy++
			default: // changed
				res.Changed++
			}
			res.Skipped++
		}
	}
	// The scan stops early only on an error (sent as a step) or when ctx,
	// the caller's, is canceled.
	return res, ctx.Err()
}

// bulkStep is one step of a pipelined bulk walk: the scan's matches, and
// once ready is closed, the moves built from them (or the scan's error).
type bulkStep struct {
	w     walk
	picks []bulkPick
	err   error
	ready chan struct{}
}

// bulkPick is one entry a step takes: its move's dlqSet item (nil: it
// cannot be moved, Invalid) and, for a requeue, the job it queues.
type bulkPick struct {
	id   string
	item []any
	job  *job.Job
}

// build decodes the step's matches, keeps those the walk takes and builds
// their moves.
func (st *bulkStep) build(p *bulkPlan, move bulkMove) {
	defer close(st.ready)
	st.picks = make([]bulkPick, 0, len(st.w.matched))
	for i := range st.w.matched {
		sn := &st.w.matched[i]
		if !sn.present {
			continue
		}
		e := dlq.Decode(sn.at.id, []byte(sn.raw))
		sn.raw = ""
		if !p.takes(&e) {
			continue
		}
		item, j := move(&e, sn.rev)
		st.picks = append(st.picks, bulkPick{id: sn.at.id, item: item, job: j})
	}
	st.w.matched = nil
}

// bulkScan scans the plan's index step after step, handing each step to
// the movers (order, in sequence) and to the builders (work), until the
// range is exhausted, ctx is canceled or a scan fails (a step carrying the
// error, last). It closes both channels when it stops.
func (s *Store) bulkScan(ctx context.Context, p *bulkPlan, order, work chan<- *bulkStep) {
	defer close(order)
	defer close(work)
	var after *position
	for {
		w, err := s.scanRaw(ctx, p.index, scanAsc, p.lo, p.hi, after, s.cfg.BatchSize, s.cfg.BatchSize, &p.pick)
		if err != nil {
			st := &bulkStep{err: err, ready: make(chan struct{})}
			close(st.ready)
			select {
			case order <- st:
			case <-ctx.Done():
			}
			return
		}
		if w.last == nil {
			return
		}
		st := &bulkStep{w: w, ready: make(chan struct{})}
		select {
		case order <- st:
		case <-ctx.Done():
			return
		}
		select {
		case work <- st:
		case <-ctx.Done():
			close(st.ready)
			return
		}
		if w.done {
			return
		}
		after = w.last
	}
}

// countExamine times BatchSize is how many index members one step of a
// dry run's count may examine: the script reads each one's meta and ships
// none of the entries it is sure of.
const countExamine = 2

// bulkCount is a bulk walk's dry run: it counts the entries the walk would
// take, in steps of at most countExamine×BatchSize index members, each a
// read-only scan in count mode. The script counts the matches it is sure
// of; the few it cannot decide (at a bound of the time range, where the
// precise times count, or whose error-text copy is cut short or missing)
// come back to be decoded and checked here. Batches counts the steps.
// An entry whose bytes another writer replaced in place (its meta still
// says failed) is counted by the dry run, and skipped by the move.
func (s *Store) bulkCount(ctx context.Context, p *bulkPlan) (dlq.BulkResult, error) {
	res := dlq.BulkResult{DryRun: true}
	var after *position
	for {
		w, err := s.scan(ctx, p.index, scanCount, p.lo, p.hi, after, countExamine*s.cfg.BatchSize, s.cfg.BatchSize, &p.pick)
		if err != nil {
			return res, err
		}
		if w.last == nil {
			return res, nil
		}
		res.Batches++
		res.Matched += w.sure
		for i := range w.matched {
			sn := &w.matched[i]
			if sn.present && p.takes(&sn.entry) {
				res.Matched++
			}
		}
		if w.done {
			return res, nil
		}
		after = w.last
	}
}
