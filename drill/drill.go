// Package drill is the live driver: a staging drill runs a scenario — the
// file the simulator runs — on the wall clock (scaled), against a real
// Redis, real worker processes (`faultline worker`, see drill/workerproc)
// and real HTTP dependencies, and judges what it observed with the
// simulator's own checkers and expectations (oracle.Judge).
//
// The parts: a producer that enqueues the simulator's jobs (sim.Plan) at
// their instants; a fault gateway per dependency (drill/gateway) answering
// from the faults models; a receiver per alert receiver (drill/receiver)
// that the drill's one alerter delivers to through the real sinks; an
// embedded Toxiproxy (drill/proxy) between the workers and Redis for
// store faults, a second one for the DLQ role; a supervisor
// (drill/supervisor) for the worker processes, which SIGKILLs and
// SIGSTOPs them for worker faults; the DLQ monitor and the auto-retry, run
// once, here. What it observes — the store's event stream, the workers'
// reports of their attempts, the gateways' call logs, the deliveries, the
// processes' events, the faults' real windows — is an oracle.History,
// saved beside the report; the verdict is oracle.Judge of it.
//
// The files, a concern each:
//
//   - drill.go: what can be drilled (Live, RefusedError), the Redis URL a
//     drill may touch (CheckRedisURL), the faults' timeline (Timeline).
//   - run.go: the entry point (Run, Options, Progress), a drill's state,
//     and the checks before it starts: the fleet (Fleet), the time scale
//     (CheckScale, CheckExternalScale), the namespace (NewNamespace),
//     --listen (ParseListen).
//   - start.go: starting a drill of the reference worker: the namespace's
//     claim, the work directory, the clock, the gateways and receivers, the
//     proxies, the worker processes, the canary job.
//   - loop.go: the run: the loop from the scenario's origin to its end, the
//     settle after it, the abortIf guard, the operator's steps.
//   - produce.go: the producer: the planned workload, enqueued at its
//     instants in chunks.
//   - faults.go: the store and worker faults at their windows (the
//     proxies, the signals), the faults active, undoing them.
//   - when.go: a worker fault aimed at a state (schedule.when), struck
//     when its worker has a call in flight.
//   - observe.go: what a drill observes and the history it makes of it:
//     the workers' reports, the deliveries, the store's snapshots and event
//     stream, the DLQ, the fleet's metrics, the progress line (finish).
//   - pace.go: the drill's pace: the scenario's intervals, --time-scale
//     auto (AutoScale), how far its parts slip behind its clock.
//   - external.go: the black-box system's contract: the environment and
//     drill file its commands get (Env*, DrillFile), the placeholders, its
//     copies' specs, the adapters as the report describes them.
//   - external_start.go: starting a black-box drill: its parts, the
//     framework presets' preflight, the adapters, the system's copies, the
//     readiness probe.
//   - external_run.go: running it: the plan injected through the adapter,
//     the DLQ read over and over, the drain, what it adds to the history.
//   - cleanup.go: stopping every part and removing what a drill wrote: its
//     namespace (DeleteNamespace), a black box's keys.
//   - claim.go: the namespace's claim (Claim) and its liveness, and the
//     cleanup of namespaces left behind (CleanNamespace, CleanStale).
package drill

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/scenarios"
)

// ErrRefused is matched by every *RefusedError.
var ErrRefused = errors.New("drill refused")

// RefusedError says why a scenario, or a part of it, cannot be drilled:
// Part names the part ("faults[2] (warm-up): model latency on the queue
// store"), Reason why.
type RefusedError struct {
	Scenario, Part, Reason string
}

// Error returns "scenario S: PART: has no live form: REASON".
func (e *RefusedError) Error() string {
	s := e.Part + ": " + e.Reason
	if e.Scenario != "" {
		s = "scenario " + e.Scenario + ": " + s
	}
	return s
}

// Is matches ErrRefused.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// Live reports whether sc (defaults applied) can be drilled, and if not,
// the first part that has no live form. What runs live: every dependency
// fault (the gateway answers from the model); alert-sink faults (the
// receiver); worker crashes, graceful stops and stalls (SIGKILL, SIGTERM,
// SIGSTOP); store faults as
// windows (store-outage, outage: the proxy cut; latency, slow-store: the
// proxy's latency), on the queue store or on the DLQ store's own proxy;
// operator steps that requeue, delete or purge; the monitor and the
// auto-retry. What does not: store faults thrown per call (probability,
// firstCalls, jobs, tasks, attempts: the proxy acts on connections over
// time, not calls), and
// the steps that reconfigure workers mid-run (set-workers, set-retry).
func Live(sc *scenarios.Scenario) error {
	refuse := func(part, reason string) error {
		return &RefusedError{Scenario: sc.Name, Part: part, Reason: reason}
	}
	for i, f := range sc.Faults {
		part := fmt.Sprintf("faults[%d] (%s)", i, f.Name)
		switch f.Target.Kind {
		case faults.Store, faults.DLQStore:
			if f.Model.Name() == "interleave" {
				return refuse(part, "model interleave strikes inside one store operation (before a bulk requeue's pick, between its batches), which a drill's proxy cannot time: the simulator runs it, on every store")
			}
			if f.Schedule.Probability > 0 && f.Schedule.Probability < 1 || f.Schedule.FirstCalls > 0 || len(f.Schedule.Jobs) > 0 || len(f.Schedule.Tasks) > 0 || len(f.Schedule.Attempts) > 0 {
				return refuse(part, "a store fault in a drill is a window of the Redis proxy (cut or slowed), so it cannot be thrown per call: remove probability/firstCalls/jobs/tasks/attempts, or give it from/until")
			}
			switch f.Model.Name() {
			case "store-outage", "outage", "latency", "slow-store":
			default:
				return refuse(part, fmt.Sprintf("model %s on the store has no proxy form (store-outage, outage, latency and slow-store do; the queue store, as in the simulator, is only slowed)", f.Model.Name()))
			}
		case faults.Worker:
			switch f.Model.Name() {
			case "worker-crash", "worker-stall", "graceful-stop":
			default:
				return refuse(part, fmt.Sprintf("model %s on a worker has no process form (worker-crash, graceful-stop and worker-stall do)", f.Model.Name()))
			}
			if f.Schedule.When != nil && sc.System.External != nil {
				return refuse(part, fmt.Sprintf("schedule.when waits for a worker to be %s, which the drill learns from the gateway only when the worker names itself (X-Faultline-Worker): a black box need not, so its freeze or crash could never be aimed; give the fault from/until instead", f.Schedule.When))
			}
		}
	}
	for i, st := range sc.Steps {
		switch st.Kind {
		case scenarios.Requeue, scenarios.Delete, scenarios.Purge:
		default:
			return refuse(fmt.Sprintf("steps[%d] (%s at %s)", i, st.Kind, st.At), "reconfiguring the worker processes mid-drill is not supported: only requeue, delete and purge steps run live")
		}
	}
	return nil
}

// CheckRedisURL refuses a Redis URL whose host is not on loopback, unless
// allowRemote (with an explicit namespace) says the drill may touch it.
// It parses the URL only: nothing is dialled.
func CheckRedisURL(raw string, allowRemote bool, namespace string) error {
	host := raw
	if strings.Contains(raw, "://") {
		u, err := url.Parse(raw)
		if err != nil {
			// Not the parser's error: it quotes the URL, password and all.
			return errors.New("--redis-url: not a URL (expected redis://[:password@]host:port[/db])")
		}
		if u.Scheme != "redis" && u.Scheme != "rediss" && u.Scheme != "unix" {
			return fmt.Errorf("--redis-url: scheme %q: takes redis://, rediss:// or unix://", u.Scheme)
		}
		if u.Scheme == "unix" {
			return nil
		}
		host = u.Hostname()
	} else if h, _, err := net.SplitHostPort(raw); err == nil {
		host = h
	}
	if isLoopback(host) {
		return nil
	}
	if !allowRemote {
		return fmt.Errorf("--redis-url: %s is not on loopback: a drill writes to and deletes keys of the Redis it is given; pass --allow-remote with an explicit --namespace to drill a Redis elsewhere", host)
	}
	if namespace == "" {
		return errors.New("--allow-remote needs an explicit --namespace: a drill on a shared Redis only touches the namespace it is told")
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// Action is one timed action of a drill's fault timeline.
type Action struct {
	At    time.Duration
	Fault string
	// What is e.g. "cut the queue store's proxy", "SIGKILL w2 (back after 15s)".
	What string
}

// Timeline returns the faults' timed actions, in order, for sc with seed
// (`--dry-run` prints it): the windows of store and worker faults, and
// the windows during which dependency and alert-sink faults answer.
func Timeline(sc *scenarios.Scenario, seed uint64, maxWindows int) []Action {
	var out []Action
	for _, f := range sc.Faults {
		wins, _ := f.Schedule.Windows(seed, f.Name, sc.Duration, maxWindows)
		for _, w := range wins {
			start, end := describe(f)
			out = append(out, Action{At: w.From, Fault: f.Name, What: start})
			if end != "" && w.Until < sc.Duration {
				out = append(out, Action{At: w.Until, Fault: f.Name, What: end})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Action) int { return int(a.At - b.At) })
	return out
}

func describe(f faults.Fault) (start, end string) {
	target := f.Target.String()
	switch f.Target.Kind {
	case faults.Store, faults.DLQStore:
		role := "queue store"
		if f.Target.Kind == faults.DLQStore {
			role = "DLQ store"
		}
		switch f.Model.Name() {
		case "latency", "slow-store":
			return "slow the " + role + "'s proxy (" + f.Model.Name() + ")", "clear the " + role + "'s proxy"
		}
		return "cut the " + role + "'s proxy", "restore the " + role + "'s proxy"
	case faults.Worker:
		switch f.Model.Name() {
		case "worker-crash":
			return "SIGKILL " + workerName(f) + " (" + f.Model.Name() + ")", ""
		case "graceful-stop":
			return "SIGTERM " + workerName(f) + " (" + f.Model.Name() + ")", ""
		}
		return "SIGSTOP " + workerName(f) + ", SIGCONT after the stall", ""
	case faults.AlertSink:
		return "receiver " + f.Target.Name + " answers " + f.Model.Name(), "receiver " + f.Target.Name + " healthy"
	}
	return "gateway " + target + " answers " + f.Model.Name(), "gateway " + target + " healthy"
}

func workerName(f faults.Fault) string {
	if f.Target.Name == "" {
		return "every worker"
	}
	return f.Target.Name
}
