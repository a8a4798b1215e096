package oracle

import (
	"time"

	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/classify"
)

// DeliveryOf is the history form of a notification sent to receiver at
// offset at (formerly sim.DeliveryOf).
func DeliveryOf(at time.Duration, receiver string, n alert.Notification, sendErr error) Delivery {
	d := Delivery{AtMs: at.Milliseconds(), Receiver: receiver, Attempt: n.Attempt, Accepted: sendErr == nil}
	if sendErr != nil {
		d.Error = sendErr.Error()
	}
	for _, a := range n.Alerts {
		d.Alerts = append(d.Alerts, Alert{Fingerprint: a.Fingerprint, Name: a.Name, Severity: a.Severity.String(),
			Status: a.Status.String(), Count: a.Count, Summary: a.Summary})
	}
	return d
}

// Notification rebuilds the notification d recorded: DeliveryOf's inverse
// (a severity it cannot parse is the zero severity).
func (d Delivery) Notification() alert.Notification {
	n := alert.Notification{Receiver: d.Receiver, Attempt: d.Attempt}
	for _, a := range d.Alerts {
		sev, _ := classify.ParseSeverity(a.Severity)
		st := alert.Firing
		if a.Status == alert.Resolved.String() {
			st = alert.Resolved
		}
		n.Alerts = append(n.Alerts, alert.Alert{Fingerprint: a.Fingerprint, Name: a.Name, Severity: sev, Status: st, Count: a.Count, Summary: a.Summary})
	}
	return n
}
