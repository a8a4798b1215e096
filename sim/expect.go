package sim

import (
	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reports"
)

// Fate is where one job ended (package oracle's: see oracle.Fate).
type Fate = oracle.Fate

// observation is what the world found, for the oracle's expectations to
// judge (oracle.Evaluate): the result as far as it is filled in, the
// ledger, the snapshots expectations asked for, the pages and the calls.
func (w *world) observation(res *reports.Result) *oracle.Observation {
	deps := make([]string, len(w.tasks))
	for i, t := range w.tasks {
		deps[i] = t.Dependency
	}
	o := &oracle.Observation{Result: res, Ledger: w.led, Probes: w.probes, Calls: w.calls.at, TaskDependencies: deps, Entry: w.entry}
	w.pg.Observe(o)
	if w.judge != nil {
		o.Observed = w.judge.h.Observed()
	}
	return o
}

// entry returns job id's DLQ entry at the end of the run, if it has one:
// read from the store, or, for a drill, from the entries it read last.
func (w *world) entry(id string) (dlq.Entry, bool) {
	if w.judge != nil {
		for _, e := range w.judge.dlq {
			if e.Job.ID == id {
				return e, true
			}
		}
		return dlq.Entry{}, false
	}
	e, err := w.backend.Get(w.ctx, id)
	if err != nil {
		return dlq.Entry{}, false
	}
	return e, true
}

// snapshot is the ledger now, for an expectation that asked for this
// instant.
func (w *world) snapshot() *oracle.Probe { return oracle.TakeProbe(w.now(), w.led, w.breakerStates) }
