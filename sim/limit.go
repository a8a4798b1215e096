package sim

import (
	"context"
	"errors"
)

// ErrLimit is matched (errors.Is) by the error that stops a run at one of
// its limits (the jobs in flight, say): like a canceled context, it makes
// the run's verdict reports.Interrupted — its expectations are not
// evaluated, and it is not a pass.
var ErrLimit = errors.New("run limit reached")

// interruption reports whether err stopped the run from outside its
// scenario's logic: a canceled context or a limit.
func interruption(err error) bool {
	return errors.Is(err, ErrLimit) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
