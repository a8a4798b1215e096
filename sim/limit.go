package sim

import (
	"context"
	"errors"

	"github.com/faultline/faultline/scenarios"
)

// interruption reports whether err stopped the run from outside its
// scenario's logic: a canceled context or a limit.
func interruption(err error) bool {
	return errors.Is(err, scenarios.ErrLimit) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
