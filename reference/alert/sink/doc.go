// Package sink holds the alerter's notification sinks: the places an
// alert.Notification is delivered to.
//
//   - Slack posts to a Slack incoming webhook, as Block Kit blocks with a
//     plain-text fallback.
//   - Webhook posts a generic JSON document shaped like PagerDuty Events v2.
//   - Log writes one slog record per alert, and never fails.
//   - Memory records what it is given, and plays failures on demand for tests
//     and the simulator.
//
// Every sink keeps the alert.Sink contract: Send returns nil only when the
// receiver accepted the notification. An HTTP answer that is not a success
// comes back as (or wrapping) a *failure.HTTPError carrying the status code,
// the response headers (so a Retry-After survives, as delay-seconds or as an
// HTTP date) and a short excerpt of the body (Slack's "invalid_token",
// "channel_is_archived", ...), so the alerter can tell a receiver that is down
// from one that is misconfigured. Any other failure (a timeout, a refused
// connection) comes back wrapped, with its chain intact for errors.Is/As.
//
// A webhook URL is a credential: whoever holds it can post to the channel.
// Errors, String and fmt output of the HTTP sinks show it only redacted, as
// scheme://host/first-segment/****, and configuration errors never show it.
//
// HTTP sinks read the clock only through their http.Client's Timeout, start
// no goroutines and keep no global state, so they are safe for concurrent use
// and cheap to construct per test.
package sink
