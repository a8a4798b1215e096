package sim

import (
	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/dlq"
)

// Fate is where one job ended (package oracle's: see oracle.Fate).
type Fate = oracle.Fate

// entry returns job id's DLQ entry at the end of the run, if it has one.
func (w *world) entry(id string) (dlq.Entry, bool) {
	e, err := w.backend.Get(w.ctx, id)
	if err != nil {
		return dlq.Entry{}, false
	}
	return e, true
}
