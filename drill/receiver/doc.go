// Package receiver is the drill's local alert receivers: a Slack-compatible
// incoming webhook and a PagerDuty-shaped JSON webhook, served over HTTP on
// loopback, that the reference alerter's real sinks (sink.NewSlack through
// slack-go, sink.NewWebhook) deliver to during a staging drill.
//
// A Receiver records every delivery it gets, in arrival order, with what it
// answered: accepted, or refused under an alert-sink fault. Faults come from
// the same faults models the simulator applies to its recording sink
// (faults.AlertSink targets: http-status, auth-failure, rate-limit, outage,
// sink-outage), asked once per delivery at the delivery's scenario offset.
// An Effect is answered on the wire as follows:
//
//   - an error carrying an HTTP status (a *failure.HTTPError, or any error
//     with a StatusCode() method): that status, with the error's headers
//     (Retry-After in whole seconds of scenario time, rounded up, as the
//     model wrote it) and its body;
//   - an error that is a timeout (Timeout() true): no answer at all; the
//     request hangs until the client gives up or the Receiver closes;
//   - any other error (a refused connection, as outage and sink-outage
//     with code 0 give): the connection is reset without an answer, the
//     nearest a listening server comes to refusing it;
//   - a Latency: the answer is held back that long, divided by the time
//     scale, before the rest of the Effect applies.
//
// The receiver is a drill's oracle for alerts, so it never guesses: what it
// cannot decode from a payload stays empty, and the payload itself is kept.
package receiver
