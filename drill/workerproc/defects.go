package workerproc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/fleet"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/retry"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/reference/worker"
)

// EnvDefect names the defect a standalone reference worker is started
// with (Defects): the black-box mutation suite's switch.
const EnvDefect = "FAULTLINE_DEFECT"

// Defect is a deliberately broken variant of the reference worker: a
// mistake a team's own worker could make, which a black-box drill must
// catch by the rule Rule names.
type Defect struct {
	Name string
	// What the broken worker does.
	What string
	// Rule is the invariant that must catch it.
	Rule string
}

// Defects are the defects Config.Broken may name, in the order the docs
// list them.
var Defects = []Defect{
	{"ack-before-dlq", "acks a job whose dead letter was decided: the entry is never written", oracle.InvConservation},
	{"drop", "acks every fifth job it takes without running it", oracle.InvConservation},
	{"rerun", "enqueues a job that succeeded once more (a duplicating requeue)", oracle.InvNoMoveAfterDone},
	{"hot-loop", "retries a failed call three times at once, with no backoff, then dead-letters the job (the seed's loop)", oracle.InvAttempts},
	{"no-retry-after", "ignores a 429's Retry-After and retries at its own backoff", oracle.InvAttempts},
	{"no-retry", "dead-letters a transient failure at its first attempt", oracle.InvTransientRetried},
	{"retry-final", "retries declined cards and revoked keys as if they were transient", oracle.InvNoRetryOfFinal},
	{"bare-dlq", "writes dead letters without their error", oracle.InvDLQEntryComplete},
	{"trim-dlq", "purges dead letters more than 2s old (scenario time) after every new one", oracle.InvDLQNeverShrinks},
	{"no-page", "never alerts a critical failure", oracle.InvCriticalPaged},
	{"two-leaders", "runs its alerter in every copy, each paging what its own process saw (no leader)", oracle.InvOnePage},
}

// everyoneLeads is the two-leaders defect's store of leases: every claim
// wins.
type everyoneLeads struct{}

func (everyoneLeads) ClaimLeader(_ context.Context, _, holder string, now time.Time, ttl time.Duration) (fleet.Lease, error) {
	return fleet.Lease{Holder: holder, Term: 1, Until: now.Add(ttl)}, nil
}
func (everyoneLeads) ResignLeader(context.Context, string, string) error { return nil }
func (everyoneLeads) Leader(context.Context, string) (fleet.Lease, error) {
	return fleet.Lease{}, nil
}

// ownLog is the two-leaders defect's relay log: nothing is relayed (each
// copy's alerter hears its own core).
type ownLog struct{}

func (ownLog) AppendAlerts(context.Context, [][]byte) error                    { return nil }
func (ownLog) ReadAlerts(context.Context, string, int) ([]fleet.Entry, error)  { return nil, nil }
func (ownLog) AckAlerts(context.Context, string, string, uint64, string) error { return nil }

// defectNames lists the defects' names for a message.
func defectNames() string {
	names := make([]string, len(Defects))
	for i, d := range Defects {
		names[i] = d.Name
	}
	return strings.Join(names, ", ")
}

// checkDefect says whether name is a defect ("" is none).
func checkDefect(name string) error {
	if name == "" || slices.ContainsFunc(Defects, func(d Defect) bool { return d.Name == name }) {
		return nil
	}
	return fmt.Errorf("%w: %s=%q: takes one of %s", ErrStandalone, EnvDefect, name, defectNames())
}

// brokenClassifier makes every permanent or critical failure transient
// (retry-final), or drops a dependency's Retry-After (no-retry-after).
type brokenClassifier struct {
	worker.Classifier
	defect string
}

func (b brokenClassifier) Classify(err error, scope classify.Scope) classify.Classification {
	c := b.Classifier.Classify(err, scope)
	switch {
	case b.defect == "no-retry-after":
		c.RetryAfter = 0
	case c.Class == classify.Permanent || c.Class == classify.Critical:
		c.Class, c.Severity = classify.Transient, classify.Medium
	}
	return c
}

// brokenPolicy never retries (no-retry; hot-loop, whose handler did).
type brokenPolicy struct {
	worker.Policy
	defect string
}

func (b brokenPolicy) Decide(a retry.Attempt, c classify.Classification, now time.Time) retry.Decision {
	d := b.Policy.Decide(a, c, now)
	if d.Action != retry.Retry {
		return d
	}
	d.Action, d.Reason, d.At, d.Delay, d.Backoff = retry.DeadLetter, retry.ExhaustedAttempts, time.Time{}, 0, 0
	return d
}

// brokenDeadLetterer writes dead letters without their error (bare-dlq),
// or purges the older ones after each (trim-dlq).
type brokenDeadLetterer struct {
	worker.DeadLetterer
	st     *redisstore.Store
	defect string
}

func (b brokenDeadLetterer) DeadLetter(ctx context.Context, l queue.Lease, e dlq.Entry, now time.Time) (dlq.AddResult, error) {
	if b.defect == "bare-dlq" {
		e.Reason = ""
	}
	res, err := b.DeadLetterer.DeadLetter(ctx, l, e, now)
	if err == nil && b.defect == "trim-dlq" {
		_, _ = b.st.Purge(ctx, now.Add(-2*time.Second), now)
	}
	return res, err
}

// brokenAlerter never alerts a critical failure (no-page).
type brokenAlerter struct{ worker.Alerter }

func (b brokenAlerter) JobFailed(f alert.Failure) string {
	if f.Class == classify.Critical {
		return ""
	}
	return b.Alerter.JobFailed(f)
}

// brokenHandler drops every fifth job it takes (drop), calls again at
// once after a failure, three times (hot-loop), or, once a job succeeded
// and was acknowledged, enqueues it once more (rerun).
func brokenHandler(defect string, st *redisstore.Store, now func() time.Time, h func(context.Context, job.Job) error) func(context.Context, job.Job) error {
	var taken atomic.Int64
	var mu sync.Mutex
	rerun := map[string]bool{}
	return func(ctx context.Context, j job.Job) error {
		if defect == "drop" && j.Attempts == 0 && taken.Add(1)%5 == 0 {
			return nil // "done": never run, never dead-lettered
		}
		err := h(ctx, j)
		for i := 0; defect == "hot-loop" && err != nil && i < 3 && ctx.Err() == nil; i++ {
			err = h(ctx, j)
		}
		if defect == "rerun" && err == nil {
			mu.Lock()
			again := !rerun[j.ID]
			rerun[j.ID] = true
			mu.Unlock()
			if again {
				// Once the pipeline acknowledged it (until then the store
				// refuses a second job of its ID).
				cp := j
				cp.Attempts = 0
				go func() {
					for range 50 {
						time.Sleep(20 * time.Millisecond)
						if err := st.Enqueue(context.Background(), cp, now()); !errors.Is(err, queue.ErrDuplicate) {
							return
						}
					}
				}()
			}
		}
		return err
	}
}
