// Package gateway is the fault gateway of a staging drill: a real HTTP
// server per dependency that answers calls from the same faults models the
// simulator uses, on the wall clock, and the Client the worker processes
// call it with.
//
// # Wire protocol
//
// A call is POST /call carrying the job's ID in X-Faultline-Job and its
// idempotency key in Idempotency-Key (or the same two in a JSON body,
// {"job": "...", "idempotencyKey": "..."}; the headers win), and, for the
// faults whose schedule names tasks or attempts, the job's task in
// X-Faultline-Task and its attempt's number (1 for the first) in
// X-Faultline-Attempt (or "task" and "attempt" in the body): a call that
// does not say is never hit by those faults. The gateway
// asks its Injector what happens to the call at the scenario offset Now()
// and answers:
//
//   - no error: 200 with a small JSON body; for a payment dependency a
//     charge, {"id": "ch_...", "object": "charge", "status": "succeeded"}.
//     A key already charged is replayed (the first charge's id, header
//     Idempotent-Replayed: true) unless the dependency ignores keys;
//   - an error carrying a status (failure.HTTPError, an auth failure, a
//     5xx): that status, the error's body as text/plain, its headers, and a
//     Retry-After in whole seconds of scenario time, rounded up, with the
//     exact hint in X-Faultline-Retry-After (a Go duration) so that the
//     client rebuilds the same hint the simulator's error carries;
//   - a card decline: its status (402 by default) and a Stripe-like body
//     {"error": {"type": "card_error", "code": "card_declined",
//     "decline_code": "...", "message": "..."}};
//   - a timeout: a 103 Early Hints answer naming the fault, then nothing
//     until the effect's latency (scaled) has passed or the caller gave up;
//     then the connection is closed without an answer;
//   - a refused connection (outage with code 0): a 103 hint saying so, then
//     the connection is closed. An accepted connection cannot be refused
//     any more, so the Client turns this into the *net.OpError a refused
//     dial gives; a client that does not read hints sees a closed
//     connection.
//
// The 103 hints are sent only to a caller that asks for them with
// X-Faultline-Hints: 1 (the Client does): a team's worker in another
// language sees a timeout as a connection that never answers, and a
// refusal as a connection closed without an answer.
//
// Every answer carries X-Faultline-Fault and X-Faultline-Class (the fault's
// name and true class); answers that never come carry them in the 103 hint.
// The sentinels failure.ErrAuthentication, ErrInvalidInput and
// ErrMissingKey travel in X-Faultline-Error.
//
// An Effect with Charged set took effect although its answer is an error:
// the gateway records the charge first, then answers as the error says (the
// 5xx of indeterminate-5xx, the hang-and-drop of a charged timeout).
//
// # Time
//
// Now gives the scenario offset of the current instant (the drill's scaled
// clock, see ScaledNow); a latency of D scenario time is slept for D/Scale.
// Retry-After hints are in scenario time, as in the simulator: a worker on
// a scaled clock divides them by the scale itself.
//
// # Log
//
// Every call is logged (Gateway.Calls) with what it was asked, what it was
// answered and whether it took effect: the oracle for "no double charge"
// and "no retry of a permanent failure".
package gateway
