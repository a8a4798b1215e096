package sim

import (
	"context"
	"fmt"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/reference/classify"
)

// errGracefulStop is what an attempt returns when its worker's graceful
// stop cancels it: a context canceled by the shutdown, as the live runner's
// handlers see it (worker.ErrShutdown is the runner's cause).
var errGracefulStop = fmt.Errorf("attempt canceled: the worker is shutting down: %w", context.Canceled)

// gracefulStop stops slot s as a SIGTERM does (the graceful-stop fault,
// eff): its attempt in flight, if any, ends now, canceled and marked
// ShuttingDown, so the reference classifies it as a shutdown and releases
// the job without using an attempt; the worker is back eff.RestartAfter
// later. Dead letters it keeps in memory are not lost: a graceful stop
// writes them before it exits, as retryHolds does on the simulator.
func (w *world) gracefulStop(s *slot, eff faults.Effect) {
	off := w.now()
	s.down = true // before the completion: the slot takes no new job
	s.downUntil = max(s.downUntil, off+eff.RestartAfter)
	if s.busy {
		s.timer.Stop()
		s.att.ShuttingDown = true
		s.eff = faults.Effect{Err: errGracefulStop, Class: classify.Canceled, Fault: eff.Fault}
		if s.rec != nil {
			w.led.Note(s.rec, "worker %s stopped gracefully mid-attempt: the attempt is canceled as a shutdown", s.name)
		}
		w.complete(s) // a stalled worker answers when its stall ends
	}
	w.at(s.downUntil, func() {
		if s.down && w.now() >= s.downUntil { // a later stop or crash keeps it down longer
			s.down = false
			w.setIdle(s)
		}
	})
}
