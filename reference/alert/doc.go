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
package alert
