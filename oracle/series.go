package oracle

import (
	"iter"
	"time"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/degrade"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reports"
)

// Sampler keeps a run's time series from the ledger — queued, in flight,
// scheduled, in a fallback, held, the DLQ by severity — and the breakers'
// states, a point each sample, and the deepest queue seen. The engine
// samples on its interval, the ledger's judge at each of the history's
// snapshots.
type Sampler struct {
	Series   reports.Series
	MaxQueue int64
}

// Sample adds the point at offset at (false, and nothing added, when the
// series already has one at that millisecond).
func (s *Sampler) Sample(at time.Duration, led *Ledger, breakers iter.Seq2[string, degrade.State]) bool {
	sr := &s.Series
	if n := len(sr.AtMs); n > 0 && sr.AtMs[n-1] == at.Milliseconds() {
		return false
	}
	sr.AtMs = append(sr.AtMs, at.Milliseconds())
	sr.Queued = append(sr.Queued, led.Count(disposition.Queued))
	sr.InFlight = append(sr.InFlight, led.Count(disposition.InFlight))
	sr.Scheduled = append(sr.Scheduled, led.Count(disposition.Scheduled))
	sr.Fallback = append(sr.Fallback, led.Count(disposition.Fallback))
	if h := led.Count(disposition.Held); h > 0 || sr.Held != nil {
		// Only runs that ever held a dead letter carry the series.
		if sr.Held == nil {
			sr.Held = make([]int64, len(sr.AtMs)-1, cap(sr.AtMs))
		}
		sr.Held = append(sr.Held, h)
	}
	if sr.DLQBySeverity == nil {
		sr.DLQBySeverity = map[string][]int64{}
		sr.Breakers = map[string][]string{}
	}
	for _, sev := range classify.Severities {
		sr.DLQBySeverity[sev.String()] = append(sr.DLQBySeverity[sev.String()], led.DLQBySeverity(sev))
	}
	for name, st := range breakers {
		sr.Breakers[name] = append(sr.Breakers[name], st.String())
	}
	s.MaxQueue = max(s.MaxQueue, led.Count(disposition.Queued))
	return true
}

// TakeProbe is the ledger and the breakers' states at offset at, for an
// expectation that asked for that instant.
func TakeProbe(at time.Duration, led *Ledger, breakers iter.Seq2[string, degrade.State]) *Probe {
	p := &Probe{At: at, Queued: led.Count(disposition.Queued), InFlight: led.Count(disposition.InFlight),
		Scheduled: led.Count(disposition.Scheduled), Fallback: led.Count(disposition.Fallback),
		DeadLettered: led.Count(disposition.DeadLettered), Succeeded: led.Count(disposition.Succeeded),
		Removed: led.Count(Removed), Total: led.Created(), Breakers: map[string]string{}}
	for name, st := range breakers {
		p.Breakers[name] = st.String()
	}
	return p
}
