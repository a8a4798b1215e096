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
// Every retry then books the time it will run in the retry budget of its
// dependency. The budget has a token bucket's rate and burst, Budget.Burst
// retries at once and one per Budget.Refill on average, but it counts the
// times retries reach the dependency, not the times they are decided: time
// is cut into aligned slots of width W = Burst·Refill, and at most Burst
// retries of one dependency run in any one slot, whatever order they were
// decided in (besides those over the budget, below). A retry due in a full
// slot runs in the first later slot with room, at an instant drawn
// uniformly within it (never past MaxWait), with reason BudgetDelay. So:
//
//   - a storm of failures against a recovering dependency comes back Burst
//     per slot, spread over the slot, instead of as one synchronized wave,
//     even when every failure carried the same Retry-After;
//   - failures decided at different times but due at the same moment (one
//     with a long hint, one with a short one) share the room of one slot;
//   - a retry booked far ahead takes room only in its own slot, so it holds
//     back nothing due sooner.
//
// The cap is per aligned slot, not per sliding window: a window of length W
// that straddles two slots can see 2·Burst retries, and any window of length
// w at most Burst·(1+⌈w/W⌉).
//
// An empty budget delays a retry, it never dead-letters one, and the delay
// is bounded: a retry that finds no slot with room within Budget.MaxWait
// after its own time runs MaxWait late anyway, over the budget, in a slot
// that is already full, and is counted in Stats.BudgetExceeded. Sustained
// overload (more retries than the budget's rate for longer than MaxWait) so
// shows as a growing counter, not as retries scheduled hours out; and as no
// booking lies more than MaxWait past its retry's own time, the budget is
// free again as soon as the overload stops and those slots have passed.
//
// The slots are aligned to the first decision time the budget sees. The
// slots before the one holding the latest decision time it has seen are
// forgotten, and booked slots next to each other are kept as one run, so a
// dependency's budget takes memory in proportion to the bookings still to
// come, and never more than one entry per slot up to the longest delay plus
// MaxWait ahead. A decision whose now is behind the latest one (goroutines of
// a live runner racing for the lock) may see its retry pushed to the start
// of the latest slot, where it is still counted. A retry due more than about
// 292 years (the range of a time.Duration) before or after the first
// decision time is not budgeted.
//
// # A fleet's budget
//
// A budget kept in a policy bounds one process: a fleet of N worker
// processes, each with its own policy, lets N times the retries through.
// With Budget.Scope = ScopeFleet and a Booker (WithBooker) every policy of
// the fleet books in one budget: the Redis store's (redisstore.Store.Book,
// one script per retry), or a MemoryBudget for a fleet in one process.
// The slots are then numbered from the Unix epoch, so processes started
// apart cut time alike, and a booking spans at most MaxScan slots. A
// booking the store cannot take (it is unreachable, or the call is cut
// short by its context: DecideContext) lets the retry run as due,
// unbudgeted, counted in Stats.BudgetUnavailable: the budget fails open,
// as a store outage must not hold back or dead-letter retries (the
// breakers still guard the dependency).

package retry
