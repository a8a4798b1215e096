package sink

import (
	"context"
	"log/slog"

	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/classify"
)

var _ alert.Sink = (*Log)(nil)

// LogMessage is the message of every record a Log sink writes.
const LogMessage = "alert notification"

// The attribute keys of a Log sink's records.
const (
	// AttrNotificationID is the notification's ID.
	AttrNotificationID = "notification_id"
	// AttrReceiver is the notification's receiver.
	AttrReceiver = "receiver"
	// AttrGroupKey is the notification's group key.
	AttrGroupKey = "group_key"
	// AttrStillFiring counts the group's other firing alerts.
	AttrStillFiring = "still_firing"
	// AttrAttempt is the delivery attempt, from 1.
	AttrAttempt = "attempt"
	// AttrFingerprint is the alert's fingerprint, its dedup key.
	AttrFingerprint = "fingerprint"
	// AttrAlertName is the alert's name.
	AttrAlertName = "alertname"
	// AttrStatus is "firing" or "resolved".
	AttrStatus = "status"
	// AttrSeverity is "low", "medium" or "high".
	AttrSeverity = "severity"
	// AttrSummary is the alert's one-line summary.
	AttrSummary = "summary"
	// AttrCount is how many times the alert's condition was seen.
	AttrCount = "count"
	// AttrFirstSeen is when the alert was first seen.
	AttrFirstSeen = "first_seen"
	// AttrLastSeen is when the alert was last seen.
	AttrLastSeen = "last_seen"
	// AttrLabels is a group holding the alert's labels, in key order.
	AttrLabels = "labels"
	// AttrJobs lists the IDs of the jobs the alert is about.
	AttrJobs = "jobs"
)

// Log writes notifications to a *slog.Logger, one record per alert, at a
// level set by the alert's severity. It never fails.
type Log struct {
	logger *slog.Logger
}

// NewLog returns a Log sink writing to logger; nil means slog.Default(), so
// that notifications still go somewhere visible.
func NewLog(logger *slog.Logger) *Log {
	if logger == nil {
		logger = slog.Default()
	}
	return &Log{logger: logger}
}

// Send writes one record per alert of n and returns nil. A firing alert is
// logged at Error (High), Warn (Medium) or Info (Low); a resolved one at Info,
// since its condition has cleared.
func (l *Log) Send(ctx context.Context, n alert.Notification) error {
	for i := range n.Alerts {
		a := &n.Alerts[i]
		labels := make([]any, 0, len(a.Labels))
		for _, k := range a.Labels.Keys() {
			labels = append(labels, slog.String(k, a.Labels[k]))
		}
		jobs := make([]string, 0, len(a.Jobs))
		for _, j := range a.Jobs {
			jobs = append(jobs, j.ID)
		}
		l.logger.LogAttrs(ctx, logLevel(a), LogMessage,
			slog.Uint64(AttrNotificationID, n.ID),
			slog.String(AttrReceiver, n.Receiver),
			slog.String(AttrGroupKey, n.GroupKey),
			slog.Int(AttrStillFiring, n.StillFiring),
			slog.Int(AttrAttempt, n.Attempt),
			slog.String(AttrFingerprint, a.Fingerprint),
			slog.String(AttrAlertName, a.Name),
			slog.String(AttrStatus, a.Status.String()),
			slog.String(AttrSeverity, a.Severity.String()),
			slog.String(AttrSummary, a.Summary),
			slog.Int(AttrCount, a.Count),
			slog.Time(AttrFirstSeen, a.FirstSeen),
			slog.Time(AttrLastSeen, a.LastSeen),
			slog.Group(AttrLabels, labels...),
			slog.Any(AttrJobs, jobs),
		)
	}
	return nil
}

// logLevel is an alert's record level. An unknown severity counts as
// Medium, the classifier's fallback.
func logLevel(a *alert.Alert) slog.Level {
	if a.Status == alert.Resolved {
		return slog.LevelInfo
	}
	switch a.Severity {
	case classify.High:
		return slog.LevelError
	case classify.Low:
		return slog.LevelInfo
	default:
		return slog.LevelWarn
	}
}
