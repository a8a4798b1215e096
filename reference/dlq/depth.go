package dlq

import (
	"context"
	"errors"
	"time"
)

// DefaultDepthCap is how many depth samples a store keeps unless told
// otherwise: about a week at the DLQ monitor's default of one a minute.
const DefaultDepthCap = 10_000

// DepthSample is the DLQ's depth at one moment, as the DLQ monitor saw it:
// the points of the web UI's trend chart, so that a UI opened in the middle
// of an incident shows the hours before it, not a single point.
type DepthSample struct {
	// At is when the sample was taken (the monitor's clock).
	At time.Time `json:"at"`
	// Waiting counts the entries waiting for a decision: failed and
	// quarantined (the monitor's Health.Depth).
	Waiting int `json:"waiting"`
	// BySeverity counts the entries by the severity of their last failure,
	// as dlq.Stats.BySeverity does.
	BySeverity map[string]int `json:"by_severity,omitempty"`
	// Oldest is the oldest failed entry's last failure; zero when none.
	Oldest time.Time `json:"oldest,omitzero"`
}

// DepthRecorder is a store that keeps depth samples beside the DLQ, in a
// stream capped by count (the oldest dropped first). It is optional: the
// DLQ monitor records a sample at each check when its store implements it,
// and the web UI draws them.
type DepthRecorder interface {
	// RecordDepth appends s. A sample whose At is before the last one's is
	// kept at the last one's time (the stream's order is its time order).
	RecordDepth(ctx context.Context, s DepthSample) error
	// DepthSamples returns the newest limit samples taken at or after
	// since, oldest first. A limit below 1 is ErrDepthLimit.
	DepthSamples(ctx context.Context, since time.Time, limit int) ([]DepthSample, error)
}

// ErrDepthLimit is the error of DepthSamples given a limit below 1.
var ErrDepthLimit = errors.New("depth samples: limit must be at least 1")
