// Package retry decides what happens to a job after a failed attempt: retry it
// later, dead-letter it, or release it back to its queue.
//
// A Policy is a synchronous decision maker. Policy.Decide takes the attempt,
// the classifier's verdict on its error and the current time, and returns a
// Decision value; it starts no goroutines, never reads the wall clock, and
// draws its randomness from the *rand.Rand it was built with, so the
// simulator, driving it on virtual time from a seeded stream, gets the same
// decisions on every run.
//
// The rules, in order:
//
//  1. Canceled releases the job without using an attempt: a shutdown is not
//     a failure.
//  2. A classification of None (a nil error: a caller bug), or of a class the
//     policy does not know, dead-letters the job as Unclassified, so that it
//     is visible instead of lost.
//  3. Permanent and Critical failures are dead-lettered, never retried.
//  4. Indeterminate failures (the outcome is unknown: the request may have
//     taken effect) are retried only when the job carries an idempotency key
//     recorded before its first attempt; otherwise they are dead-lettered.
//  5. A job that has made Config.MaxAttempts attempts is dead-lettered.
//  6. Anything else is retried. The delay is full-jitter exponential backoff,
//     uniform in [0, min(MaxDelay, BaseDelay·2^n)] for the n-th retry, unless
//     the dependency sent a Retry-After hint, which wins (capped at
//     MaxRetryAfter).
//
// Every retry then takes a token from the retry budget of its dependency, at
// the time of the failure. The budget is a token bucket per dependency,
// implemented as the generic cell rate algorithm: Budget.Burst tokens at
// once and one more per Budget.Refill after that. When the bucket is empty
// the wait for the next token is added to the retry's delay. An empty budget
// delays a retry, it never dead-letters one, so a storm of failures against
// a recovering dependency comes back spread at the refill rate instead of as
// one synchronized wave, even when every failure carried the same
// Retry-After. Taking the token at failure time keeps reservations in time
// order: a retry booked far ahead does not hold back one due sooner. Whatever
// the order of the calls, at most Burst + w/Refill tokens of one dependency
// are granted in any window of length w.
package retry
