// Package alert turns failures into pages that arrive once, on time, and are
// never lost.
//
// The Alerter is a synchronous state machine on an injected clock, like every
// reference component: signals come in through method calls (a job failure,
// a breaker transition, a system condition), and everything that happens
// later (group flushes, repeats, resolution, delivery retries) happens on the
// clock's timers. Notifications go out through Sinks; a delivery counts only
// once its sink has accepted it, and a failed delivery is retried from an
// outbox that is bounded but never drops a fingerprint.
//
// # Fingerprints
//
// An alert's fingerprint identifies it: occurrences with equal fingerprints
// are one alert, deduplicated and counted, and the sinks send it as the
// alert's dedup key (the webhook's dedup_key, Slack's "Dedup key" field, the
// log's fingerprint attribute). It is label=value pairs joined by commas, with
// no spaces:
//
//   - A job failure's: the labels named by Config.FingerprintLabels, in that
//     order — by default alertname, task, class and dependency, as in
//     alertname=job-failed,task=charge,class=critical,dependency=payment-gateway.
//     A fingerprint label is alertname (always job-failed), task, class,
//     dependency, source, severity (the names: critical, payment-gateway,
//     auth, high), or a key of Failure.Labels; a value the failure lacks is
//     empty ("dependency=" for a task without a dependency).
//   - A condition's (Raise, Clear) and the alerter's own alerts': alertname
//     first, then every other label of the signal in key order:
//     alertname=breaker-open,dependency=payment-gateway,
//     alertname=receiver-misconfigured,receiver=pager, alertname=alert-limit.
//     The alerter's own names are the Name* constants.
//
// Label values are redacted before they go in, since a fingerprint leaves
// the process (customer=[REDACTED]); they are not escaped, so a fingerprint
// is compared whole, never parsed. Scenario expectations name alerts by their
// fingerprint (a pages count's fingerprint filter).
//
// # Pages
//
// A page is what IsPage says: a firing critical (High) alert in a
// notification a receiver accepted, one per alert per receiver. A receiver
// is paged at most once per fingerprint per repeat interval, however many
// routes lead to it and whatever copies reach it from a failing receiver; a
// receiver that refuses as misconfigured has its notifications copied at once
// to a receiver that works (its Secondary, else Fallback, else the default
// receiver), and its refusal is told there, never back to itself.
//
// # Files
//
//   - alerter.go: the Alerter and an alert's state (New), the alert names it
//     raises itself, and what it shows of itself (Stats, Alerts, Pending).
//   - raise.go: what comes in — a job failure (Failure, JobFailed), a
//     condition (Signal, Raise, Clear) — its fingerprint, an occurrence
//     counted, deduplicated or escalated, and an alert's resolution.
//   - routing.go: the routes an alert's labels and severity match, and the
//     group it joins at each receiver they lead to.
//   - grouping.go: groups and their members: when a group flushes
//     (GroupWait, GroupInterval, MaxGroupWait), what its notification
//     carries (new, repeated, resolved) and the alert as it goes out,
//     redacted.
//   - inhibition.go: breaker transitions (BreakerChanged): breaker-open and
//     breaker-flapping alerts, and the warnings an open breaker mutes.
//   - outbox.go: each receiver's outbox: queueing and coalescing, overflow,
//     delivery one at a time with backoff, the pages a receiver accepted and
//     the repeats it is spared.
//   - failover.go: a late or refusing receiver: the stand-in that takes its
//     copies, the receiver told of its trouble, and the deadline's failover.
//   - config.go: Config, Route, Receiver, Timing and their defaults and
//     validation.
//   - notification.go: what a Sink receives: Notification, Alert, Labels,
//     Status, and IsPage.
package alert
