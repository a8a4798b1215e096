package scenarios

import (
	"fmt"
	"strings"
	"time"

	"github.com/faultline/faultline/reference/classify"
)

// Every expectation has a name, the line a report gives it, fixed by the
// expectation alone: a judge that cannot evaluate one (a black-box drill
// that does not observe what it reads) still names it.

// Name is the expectation's name in a report, e.g. "job pay-1 ends
// succeeded (succeeded) with severity high".
func (f JobFate) Name() string { return "job " + f.JobID + " ends " + f.Want() }

// Want is what the expectation expects, e.g. "dead-lettered (dlq) with
// severity high, its DLQ entry's failure history [transient, permanent]".
func (f JobFate) Want() string {
	want := f.State.String()
	if f.Route != "" {
		want += " (" + string(f.Route) + ")"
	}
	if f.Severity != classify.SeverityNone {
		want += " with severity " + f.Severity.String()
	}
	if len(f.History) > 0 {
		want += ", its DLQ entry's failure history " + ClassList(f.History)
	}
	return want
}

// ClassList writes classes as "[transient, transient, permanent]".
func ClassList(cs []classify.Class) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = c.String()
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// Name is the expectation's name in a report.
func (p PageWithin) Name() string {
	return fmt.Sprintf("a page within %s of the first critical failure", p.Within)
}

// Name is the expectation's name in a report.
func (d DrainedBy) Name() string {
	if d.Queue == QueueFallback {
		return "the fallback queue is drained by " + FormatOffset(d.At)
	}
	return "the DLQ is drained by " + FormatOffset(d.At)
}

// Name is the expectation's name in a report.
func (b BreakerOpened) Name() string {
	return fmt.Sprintf("breaker %s opened at least %d times", b.Breaker, b.AtLeast)
}

// Name is the expectation's name in a report.
func (b BreakerClosedBy) Name() string {
	return fmt.Sprintf("breaker %s is closed by %s", b.Breaker, FormatOffset(b.At))
}

// Name is the expectation's name in a report.
func (b BreakerTransitions) Name() string {
	op, want := b.Comparison()
	words := map[Op]string{Exactly: "exactly", AtLeast: "at least", AtMost: "at most"}[op]
	return fmt.Sprintf("breaker %s changes state %s %d times", b.Breaker, words, want)
}

// Name is the expectation's name in a report, e.g. "critical failures
// routed to retry = 0".
func (c Confusion) Name() string {
	name := c.True.String() + " failures"
	if c.Said != 0 {
		name += " classified " + c.Said.String()
	}
	if c.Route != 0 {
		name += " routed to " + c.Route.String()
	}
	return name + fmt.Sprintf(" %s %d", c.Op, c.N)
}

// Name is the expectation's name in a report.
func (a JobAttempts) Name() string { return "job " + a.JobID + ": " + a.Want() }

// Want is what the expectation expects, e.g. "= 3 attempts, attempts at
// least 2s apart".
func (a JobAttempts) Want() string {
	var want []string
	if a.CheckCount {
		want = append(want, fmt.Sprintf("%s %d attempts", a.Op, a.N))
	}
	if a.MinGap > 0 {
		want = append(want, fmt.Sprintf("attempts at least %s apart", a.MinGap))
	}
	return strings.Join(want, ", ")
}

// Name is the expectation's name in a report, e.g. "retries of crm's jobs
// due per 1s from +2m0s ≤ 12".
func (r RetryRate) Name() string {
	what := fmt.Sprintf("retries of %s's jobs due", r.Dependency)
	if r.Calls {
		what = "calls to " + r.Dependency
	}
	return fmt.Sprintf("%s per %s %s %s %d", what, r.Window, r.Span(), r.Op, r.N)
}

// Span is the part of the run the expectation reads: "from +2m0s", or
// "from +2m0s until +2m30s".
func (r RetryRate) Span() string {
	span := "from " + FormatOffset(r.From)
	if r.Until > 0 {
		span += " until " + FormatOffset(r.Until)
	}
	return span
}

// FormatOffset prints an offset into a run as "+1m2.5s", rounded to the
// millisecond: how every report names an instant of a run.
func FormatOffset(d time.Duration) string {
	return "+" + d.Round(time.Millisecond).String()
}
