package sim

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/redact"
)

// ErrInvalidScenario is matched by every error Validate returns.
var ErrInvalidScenario = errors.New("invalid scenario")

// ScenarioError names the invalid field of a scenario.
type ScenarioError struct {
	Scenario, Field, Reason string
}

// Error returns `scenario "name": Field: reason`.
func (e *ScenarioError) Error() string {
	return fmt.Sprintf("scenario %q: %s: %s", e.Scenario, e.Field, e.Reason)
}

// Is matches ErrInvalidScenario.
func (e *ScenarioError) Is(target error) bool { return target == ErrInvalidScenario }

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// WithDefaults returns sc with the zero fields a run needs filled in: the
// start, the workers, the sample interval, the page deadline, the retry
// policy's defaults, task weights, the default receivers and redactor.
func (sc Scenario) WithDefaults() Scenario {
	if sc.Start.IsZero() {
		sc.Start = DefaultStart
	}
	sc.Start = sc.Start.UTC()
	if sc.Workers.Count == 0 {
		sc.Workers.Count = 4
	}
	if sc.Workers.LeaseTTL == 0 {
		sc.Workers.LeaseTTL = 30 * time.Second
	}
	if sc.Sample == 0 {
		sc.Sample = max((sc.Duration / 500).Truncate(time.Second), time.Second)
	}
	if sc.Invariants.PageWithin == 0 {
		sc.Invariants.PageWithin = 5 * time.Minute
	}
	sc.System.Retry = sc.System.Retry.WithDefaults()
	tasks := make([]Task, len(sc.Workload.Tasks))
	for i, t := range sc.Workload.Tasks {
		if t.Weight == 0 {
			t.Weight = 1
		}
		tasks[i] = t
	}
	sc.Workload.Tasks = tasks
	if len(sc.System.Alerts.Receivers) == 0 {
		sc.System.Alerts.Receivers = []alert.Receiver{{Name: "on-call"}, {Name: "team"}}
		sc.System.Alerts.Routes = []alert.Route{{Receiver: "on-call", Severities: []classify.Severity{classify.High}}}
		sc.System.Alerts.DefaultReceiver = "team"
	}
	if sc.System.Alerts.Redactor == nil {
		sc.System.Alerts.Redactor = redact.Default()
	}
	return sc
}

// Validate reports the first invalid field of sc (defaults applied).
func (sc Scenario) Validate() error {
	bad := func(field, format string, args ...any) error {
		return &ScenarioError{Scenario: sc.Name, Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	ms := func(field string, d time.Duration) error {
		if d < 0 || d%time.Millisecond != 0 {
			return bad(field, "must be a whole, non-negative number of milliseconds, got %s", d)
		}
		return nil
	}
	switch {
	case sc.Name == "":
		return bad("Name", "is required")
	case sc.Duration <= 0:
		return bad("Duration", "must be positive")
	case len(sc.Workload.Tasks) == 0:
		return bad("Workload.Tasks", "needs at least one task")
	case sc.Workers.Count < 0:
		return bad("Workers.Count", "must not be negative")
	case sc.Workers.LeaseTTL < time.Millisecond:
		return bad("Workers.LeaseTTL", "must be at least 1ms")
	}
	for _, c := range []struct {
		f string
		d time.Duration
	}{{"Duration", sc.Duration}, {"Sample", sc.Sample}, {"Workers.LeaseTTL", sc.Workers.LeaseTTL},
		{"Workload.Arrivals.From", sc.Workload.Arrivals.From}, {"Workload.Arrivals.Until", sc.Workload.Arrivals.Until}} {
		if err := ms(c.f, c.d); err != nil {
			return err
		}
	}
	names := map[string]bool{}
	for i, t := range sc.Workload.Tasks {
		f := fmt.Sprintf("Workload.Tasks[%d]", i)
		switch {
		case t.Name == "":
			return bad(f+".Name", "is required")
		case names[t.Name]:
			return bad(f+".Name", "duplicate task %q", t.Name)
		case t.Weight < 0:
			return bad(f+".Weight", "must not be negative")
		}
		names[t.Name] = true
		if err := ms(f+".Service", t.Service); err != nil {
			return err
		}
		if err := ms(f+".ServiceJitter", t.ServiceJitter); err != nil {
			return err
		}
	}
	a := sc.Workload.Arrivals
	if a.Kind > Poisson {
		return bad("Workload.Arrivals.Kind", "must be none, constant or poisson")
	}
	if a.Kind != NoArrivals && !(a.Rate > 0 && a.Rate <= 1e7) {
		return bad("Workload.Arrivals.Rate", "must be in (0, 10,000,000] jobs a second, got %v", a.Rate)
	}
	for i, b := range a.Bursts {
		f := fmt.Sprintf("Workload.Arrivals.Bursts[%d]", i)
		if err := ms(f+".At", b.At); err != nil {
			return err
		}
		if b.Count < 0 || b.Count > 10_000_000 {
			return bad(f+".Count", "must be in [0, 10,000,000]")
		}
		if b.Task != "" && !names[b.Task] {
			return bad(f+".Task", "unknown task %q", b.Task)
		}
	}
	ids := map[string]bool{}
	for i, j := range sc.Workload.Jobs {
		f := fmt.Sprintf("Workload.Jobs[%d]", i)
		if err := ms(f+".At", j.At); err != nil {
			return err
		}
		if !names[j.Task] {
			return bad(f+".Task", "unknown task %q", j.Task)
		}
		if j.ID != "" {
			if ids[j.ID] {
				return bad(f+".ID", "duplicate job ID %q", j.ID)
			}
			if i := strings.LastIndexByte(j.ID, '-'); i > 0 && names[j.ID[:i]] && isDigits(j.ID[i+1:]) {
				return bad(f+".ID", "%q has the form TASK-N, which generated jobs use; choose another", j.ID)
			}
			ids[j.ID] = true
		}
	}
	for i, st := range sc.Steps {
		f := fmt.Sprintf("Steps[%d]", i)
		if err := ms(f+".At", st.At); err != nil {
			return err
		}
		if st.Kind < Requeue || st.Kind > SetRetry {
			return bad(f+".Kind", "must be requeue, delete, purge, set-workers or set-retry")
		}
		if st.Kind == SetWorkers && (st.Workers < 0 || st.Workers > 10_000) {
			return bad(f+".Workers", "must be in [0, 10,000]")
		}
	}
	for i, e := range sc.Expect {
		if e == nil {
			return bad(fmt.Sprintf("Expect[%d]", i), "is nil")
		}
	}
	return nil
}
