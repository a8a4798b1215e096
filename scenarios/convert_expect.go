package scenarios

import (
	"fmt"
	"slices"
	"strings"

	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/worker"
)

// expect builds one expectation.
func (c *converter) expect(path string, e Expect) Expectation {
	kinds := []string{}
	for _, k := range []struct {
		name string
		set  bool
	}{{"count", e.Count != ""}, {"job", e.Job != ""}, {"pageWithin", e.PageWithin != 0}, {"drainedBy", e.DrainedBy != nil},
		{"breakerOpened", e.BreakerOpened != ""}, {"breakerClosedBy", e.BreakerClosedBy != ""},
		{"breakerTransitions", e.BreakerTransitions != ""}, {"confusion", e.Confusion != ""}} {
		if k.set {
			kinds = append(kinds, k.name)
		}
	}
	if len(kinds) != 1 {
		got := "none"
		if len(kinds) > 0 {
			got = strings.Join(kinds, " and ")
		}
		c.bad(path, "expected exactly one of count, job, pageWithin, drainedBy, breakerOpened, breakerClosedBy, breakerTransitions, confusion; got %s", got)
		return nil
	}
	var op Op
	var n int64
	hasOp := e.Equals != nil || e.AtLeast != nil || e.AtMost != nil
	if kinds[0] != "job" { // a job's attempts take attempts, atLeast or atMost: jobAttempts checks them
		op, n, hasOp = c.comparison(path, e)
	}
	c.irrelevant(path, kinds[0], e)
	switch kinds[0] {
	case "count":
		metrics := make([]string, len(Metrics))
		for i, m := range Metrics {
			metrics[i] = string(m)
		}
		windowed := e.Dependency != "" || e.From != 0 || e.Until != 0 || e.Window != nil
		if e.Count == callsMetric && !windowed {
			c.bad(path+".count", "count calls reads the calls made to a dependency per window: add dependency, from and window (e.g. window: 1s)")
		} else if !slices.Contains(metrics, e.Count) && e.Count != callsMetric {
			c.bad(path+".count", "expected one of %s, got %q%s", strings.Join(metrics, ", "), e.Count, suggest(e.Count, append(metrics, callsMetric)))
		}
		if !hasOp {
			c.bad(path, "expected one of equals, atLeast, atMost")
		}
		allowed := Metric(e.Count).Filters()
		for _, fl := range []struct{ name, v string }{{"task", e.Task}, {"severity", e.Severity}, {"class", e.Class},
			{"receiver", e.Receiver}, {"fingerprint", e.Fingerprint}} {
			if fl.v != "" && !slices.Contains(allowed, fl.name) {
				takes := "no filters"
				if len(allowed) > 0 {
					takes = "only " + strings.Join(allowed, ", ")
				}
				c.bad(path+"."+fl.name, "count %s takes %s", e.Count, takes)
			}
		}
		if windowed {
			return c.retryRate(path, e, op, n)
		}
		x := Count{Metric: Metric(e.Count), Task: e.Task, Receiver: e.Receiver, Fingerprint: e.Fingerprint, Op: op, N: n}
		if e.Severity != "" {
			x.Severity = c.severity(path+".severity", e.Severity)
		}
		if e.Class != "" {
			x.Class = c.class(path+".class", e.Class)
		}
		return x
	case "job":
		if e.Attempts != nil || e.AttemptGapsAtLeast != nil || hasOp {
			return c.jobAttempts(path, e)
		}
		x := JobFate{JobID: e.Job, Route: disposition.Reason(e.Route)}
		if e.Route != "" && !slices.Contains(moveReasons, e.Route) {
			c.bad(path+".route", "expected one of %s, got %q%s", strings.Join(moveReasons, ", "), e.Route, suggest(e.Route, moveReasons))
		}
		states := []string{"queued", "in-flight", "scheduled", "fallback", "dead-lettered", "succeeded", "none"}
		switch st := e.State; st {
		case "queued":
			x.State = disposition.Queued
		case "in-flight":
			x.State = disposition.InFlight
		case "scheduled":
			x.State = disposition.Scheduled
		case "fallback":
			x.State = disposition.Fallback
		case "dead-lettered":
			x.State = disposition.DeadLettered
		case "succeeded":
			x.State = disposition.Succeeded
		case "none":
			x.State = disposition.None
		case "":
			c.bad(path+".state", "expected where the job ends (state: one of %s) or its attempts (attempts, atLeast, atMost or attemptGapsAtLeast) with job", strings.Join(states, ", "))
		default:
			c.bad(path+".state", "expected one of %s, got %q%s", strings.Join(states, ", "), st, suggest(st, states))
		}
		if e.Severity != "" {
			x.Severity = c.severity(path+".severity", e.Severity)
		}
		for i, cl := range e.History {
			x.History = append(x.History, c.class(fmt.Sprintf("%s.history[%d]", path, i), cl))
		}
		return x
	case "pageWithin":
		return PageWithin{Within: e.PageWithin.D()}
	case "drainedBy":
		switch e.Queue {
		case "", "dlq":
		case QueueFallback:
			if !c.breakers {
				c.bad(path+".queue", "no breaker guards a dependency, so no job is ever diverted to the fallback queue and it is always drained: add system.breakers, or expect the DLQ drained")
			}
		default:
			c.bad(path+".queue", "expected dlq or fallback, got %q%s", e.Queue, suggest(e.Queue, []string{"dlq", QueueFallback}))
		}
		q := e.Queue
		if q == "dlq" {
			q = ""
		}
		if *e.DrainedBy == 0 {
			c.bad(path+".drainedBy", "expected an offset after the start, like 1m, got 0s: no job has run at 0s, so the queue is empty then whatever the system does")
		}
		return DrainedBy{At: e.DrainedBy.orZero(), Queue: q}
	case "breakerOpened":
		if !hasOp || op != AtLeast {
			c.bad(path, "expected atLeast with breakerOpened")
		}
		return BreakerOpened{Breaker: e.BreakerOpened, AtLeast: int(n)}
	case "breakerClosedBy":
		if e.At == 0 {
			c.bad(path+".at", "expected the offset by which the breaker is closed")
		}
		return BreakerClosedBy{Breaker: e.BreakerClosedBy, At: e.At.D()}
	case "breakerTransitions":
		if !hasOp {
			c.bad(path, "expected one of equals, atLeast, atMost with breakerTransitions")
		}
		return BreakerTransitions{Breaker: e.BreakerTransitions, Op: op, N: int(n)}
	default: // confusion
		x := Confusion{True: c.class(path+".confusion", e.Confusion), Op: op, N: n}
		if e.Said != "" {
			x.Said = c.class(path+".said", e.Said)
		}
		switch e.Route {
		case "":
		case "retry":
			x.Route = worker.Retry
		case "dead-letter":
			x.Route = worker.DeadLetter
		case "release":
			x.Route = worker.Release
		case "divert":
			x.Route = worker.Divert
		default:
			routes := []string{"retry", "dead-letter", "release", "divert"}
			c.bad(path+".route", "expected one of %s, got %q%s", strings.Join(routes, ", "), e.Route, suggest(e.Route, routes))
		}
		if !hasOp {
			c.bad(path, "expected one of equals, atLeast, atMost")
		}
		return x
	}
}

// irrelevant reports the keys set on an expectation of kind that it does
// not read: never silently ignored.
func (c *converter) irrelevant(path, kind string, e Expect) {
	uses := map[string][]string{
		"count":              {"task", "severity", "class", "receiver", "fingerprint", "dependency", "from", "until", "window", "equals", "atLeast", "atMost"},
		"job":                {"state", "route", "severity", "history", "attempts", "attemptGapsAtLeast", "atLeast", "atMost"},
		"pageWithin":         {},
		"drainedBy":          {"queue"},
		"breakerOpened":      {"atLeast"},
		"breakerClosedBy":    {"at"},
		"breakerTransitions": {"equals", "atLeast", "atMost"},
		"confusion":          {"said", "route", "equals", "atLeast", "atMost"},
	}[kind]
	for _, k := range []struct {
		name string
		set  bool
	}{{"state", e.State != ""}, {"route", e.Route != ""}, {"history", len(e.History) > 0}, {"at", e.At != 0}, {"said", e.Said != ""},
		{"task", e.Task != ""}, {"severity", e.Severity != ""}, {"class", e.Class != ""}, {"receiver", e.Receiver != ""},
		{"fingerprint", e.Fingerprint != ""}, {"equals", e.Equals != nil}, {"atLeast", e.AtLeast != nil}, {"atMost", e.AtMost != nil},
		{"attempts", e.Attempts != nil}, {"attemptGapsAtLeast", e.AttemptGapsAtLeast != nil}, {"queue", e.Queue != ""},
		{"dependency", e.Dependency != ""}, {"from", e.From != 0}, {"until", e.Until != 0}, {"window", e.Window != nil}} {
		if k.set && !slices.Contains(uses, k.name) {
			if kind == "job" && k.name == "equals" {
				c.bad(path+".equals", "a job expectation does not read equals: the exact number of a job's attempts is attempts (e.g. attempts: 2)")
			} else if len(uses) == 0 {
				c.bad(path+"."+k.name, "a %s expectation takes no other key", kind)
			} else {
				c.bad(path+"."+k.name, "a %s expectation does not read %s; it takes %s", kind, k.name, strings.Join(uses, ", "))
			}
		}
	}
}

// retryRate converts count retried with dependency, from and window: the
// busiest window's retries of the dependency's jobs.
func (c *converter) retryRate(path string, e Expect, op Op, n int64) Expectation {
	if e.Count != string(Retried) && e.Count != callsMetric {
		if slices.Contains(Metrics, Metric(e.Count)) {
			c.bad(path+".count", "dependency, from and window read the retries due or the calls made per window: expected count retried or calls, got %q", e.Count)
		}
		return nil // not a rate: its window is not the problem
	}
	if e.Dependency == "" {
		c.bad(path+".dependency", "expected the dependency whose jobs' retries are read (with from and window)")
	} else if !slices.Contains(c.deps, e.Dependency) {
		c.bad(path+".dependency", "expected one of the scenario's dependencies (%s), got %q%s", strings.Join(c.deps, ", "), e.Dependency, suggest(e.Dependency, c.deps))
	}
	if e.Window == nil {
		c.bad(path+".window", "expected the length of the window the retries are counted in, like 1s")
	} else if *e.Window == 0 {
		c.bad(path+".window", "expected the length of the window the retries are counted in, like 1s, got 0s: a window of no length holds nothing to count")
	}
	if e.Until != 0 && e.Until <= e.From {
		c.bad(path+".until", "expected an offset after from (%s), got %s", e.From.D(), e.Until.D())
	}
	return RetryRate{Dependency: e.Dependency, From: e.From.D(), Until: e.Until.D(), Window: e.Window.orZero(), Op: op, N: n, Calls: e.Count == callsMetric}
}

// callsMetric is the count that, with dependency, from and window, reads
// the calls made to the dependency per window (RetryRate's Calls).
const callsMetric = "calls"

// jobAttempts converts a job expectation that reads the job's attempts:
// their number (attempts, or atLeast / atMost) and their spacing
// (attemptGapsAtLeast).
func (c *converter) jobAttempts(path string, e Expect) Expectation {
	for _, k := range []struct {
		name string
		set  bool
	}{{"state", e.State != ""}, {"route", e.Route != ""}, {"severity", e.Severity != ""}, {"history", len(e.History) > 0}} {
		if k.set {
			c.bad(path+"."+k.name, "a job expectation reads where the job ended (state, route, severity, history) or its attempts (attempts, atLeast, atMost, attemptGapsAtLeast), not both: write two expectations")
		}
	}
	x := JobAttempts{JobID: e.Job, MinGap: e.AttemptGapsAtLeast.orZero()}
	if e.AttemptGapsAtLeast != nil && *e.AttemptGapsAtLeast == 0 {
		c.bad(path+".attemptGapsAtLeast", "expected a gap longer than 0s, like 10s, got 0s: every gap between attempts is at least 0s, so it would check nothing")
	}
	var ops []string
	if e.Attempts != nil {
		ops, x.CheckCount, x.Op, x.N = append(ops, "attempts"), true, Exactly, *e.Attempts
		if *e.Attempts < 0 {
			c.bad(path+".attempts", "expected a count of at least 0, got %d", *e.Attempts)
		}
	}
	if e.AtLeast != nil {
		ops, x.CheckCount, x.Op, x.N = append(ops, "atLeast"), true, AtLeast, *e.AtLeast
		if *e.AtLeast < 0 {
			c.bad(path+".atLeast", "expected a count of at least 0, got %d", *e.AtLeast)
		}
	}
	if e.AtMost != nil {
		ops, x.CheckCount, x.Op, x.N = append(ops, "atMost"), true, AtMost, *e.AtMost
		if *e.AtMost < 0 {
			c.bad(path+".atMost", "expected a count of at least 0, got %d", *e.AtMost)
		}
	}
	if len(ops) > 1 {
		c.bad(path, "expected one of attempts, atLeast, atMost; got %s", strings.Join(ops, " and "))
	}
	return x
}

func (c *converter) comparison(path string, e Expect) (Op, int64, bool) {
	var ops []string
	var op Op
	var n int64
	for _, k := range []struct {
		name string
		v    *int64
		op   Op
	}{{"equals", e.Equals, Exactly}, {"atLeast", e.AtLeast, AtLeast}, {"atMost", e.AtMost, AtMost}} {
		if k.v == nil {
			continue
		}
		ops, op, n = append(ops, k.name), k.op, *k.v
		if *k.v < 0 {
			c.bad(path+"."+k.name, "expected a count of at least 0, got %d", *k.v)
		}
	}
	if len(ops) > 1 {
		c.bad(path, "expected one of equals, atLeast, atMost; got %s", strings.Join(ops, " and "))
	}
	return op, n, len(ops) > 0
}
