package sim

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/retry"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
)

// step carries out one operator step.
func (w *world) step(st scenarios.StepSpec) {
	now := w.clk.Now()
	rec := reports.Step{AtMs: w.now().Milliseconds(), Kind: st.Kind.String()}
	switch st.Kind {
	case scenarios.Requeue, scenarios.Delete, scenarios.Purge:
		rec = CarryOutStep(w.ctx, st, w.dlqW, now)
		rec.AtMs = w.now().Milliseconds()
	case scenarios.SetWorkers:
		active := 0
		for _, s := range w.slots {
			if !s.retired {
				active++
			}
		}
		for i := len(w.slots) - 1; i >= 0 && active > st.Workers; i-- {
			if s := w.slots[i]; !s.retired {
				s.retired = true
				active--
			}
		}
		for active < st.Workers {
			w.addSlot(len(w.slots) + 1)
			active++
		}
		rec.Detail = fmt.Sprintf("%d workers", st.Workers)
	case scenarios.SetRetry:
		if w.procs[0].policy.team {
			rec.Error = "set-retry changes the reference retry policy; this run uses a team's own"
			break
		}
		name := "retry/" + strconv.FormatInt(st.At.Milliseconds(), 10)
		for _, pr := range w.procs {
			p, err := retry.New(st.Retry, w.stream(name+pr.suffix), retry.WithBooker(w.env.Budget))
			if err != nil {
				rec.Error = err.Error()
				break
			}
			pr.policy.p = p
		}
		if rec.Error != "" {
			break
		}
		w.led.SetMaxAttempts(st.Retry.WithDefaults().MaxAttempts)
		rec.Detail = fmt.Sprintf("max attempts %d", w.led.MaxAttempts())
	}
	w.stepLog = append(w.stepLog, rec)
}

// StepStore is what an operator's DLQ step needs of the store.
type StepStore interface {
	RequeueMatching(ctx context.Context, f dlq.Filter, opts dlq.RequeueOptions, now time.Time, dry bool) (dlq.BulkResult, error)
	List(ctx context.Context, f dlq.Filter, cursor string, limit int) (dlq.Page, error)
	Delete(ctx context.Context, id, by string, now time.Time) error
	Purge(ctx context.Context, olderThan, now time.Time) (int, error)
}

// CarryOutStep carries out an operator's DLQ step (requeue, delete or
// purge) on s at now, as the simulator and a drill both do, and returns
// its record (AtMs left for the caller). Other kinds are not DLQ steps:
// their record says so.
func CarryOutStep(ctx context.Context, st scenarios.StepSpec, s StepStore, now time.Time) reports.Step {
	rec := reports.Step{Kind: st.Kind.String()}
	switch st.Kind {
	case scenarios.Requeue:
		budget := st.Budget
		if budget == 0 {
			budget = dlq.OneMoreAttempt
		}
		res, err := s.RequeueMatching(ctx, st.Filter, dlq.RequeueOptions{Budget: budget, By: "operator"}, now, false)
		rec.Detail = fmt.Sprintf("matched %d, requeued %d, skipped %d", res.Matched, res.Requeued, res.Skipped)
		rec.Error = errText(err)
	case scenarios.Delete:
		n, err := deleteMatching(ctx, s, st.Filter, now)
		rec.Detail = fmt.Sprintf("deleted %d", n)
		rec.Error = errText(err)
	case scenarios.Purge:
		n, err := s.Purge(ctx, now.Add(-st.OlderThan), now)
		rec.Detail = fmt.Sprintf("purged %d", n)
		rec.Error = errText(err)
	default:
		rec.Error = st.Kind.String() + " is not a DLQ step"
	}
	return rec
}

func deleteMatching(ctx context.Context, s StepStore, f dlq.Filter, now time.Time) (int, error) {
	var ids []string
	cursor := ""
	for {
		p, err := s.List(ctx, f, cursor, 1000)
		if err != nil {
			return 0, err
		}
		for _, e := range p.Entries {
			if e.Status == dlq.Failed || e.Status == dlq.Quarantined {
				ids = append(ids, e.Job.ID)
			}
		}
		if p.Next == "" {
			break
		}
		cursor = p.Next
	}
	n := 0
	for _, id := range ids {
		if err := s.Delete(ctx, id, "operator", now); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
