// Package seed operates on a dead letter queue written in the tutorial's
// layout (layout.PresetSeed) without the tutorial's races: it lists the
// entries in bounded pages, requeues one entry (or every entry a filter
// selects) the way the tutorial's code would, and migrates the whole DLQ
// into faultline's own layout (reference/store/redisstore), losing nothing.
//
// The layout: a "dead_letter" list of JSON entries {job, error, retries,
// failed_at, status} and "dlq:low|medium|high" lists of {job, error, type,
// severity, retries, timestamp}, every entry LPUSHed (the newest at the
// head); the work list "default" the tutorial's reprocess LPUSHes the job
// back onto. The keys, the fields and the reading of one entry are the
// layout package's (layout.DLQ{Preset: "seed"}.Resolved(), layout.ParseEntry);
// nothing here reads an entry differently.
//
// An entry is named by its Position counted from the tail of its list (0 is
// the oldest): LPUSH adds at the head, so a push never moves the entries
// already there, and a listing's cursor and a Ref stay valid while the
// system keeps dead-lettering. The tutorial's LTRIM of a full dlq:* list
// drops the oldest entries and so shifts every position: a Ref taken before
// it is refused (Changed), never applied to another entry, because a move
// checks the entry's bytes as well as its position, in the one script that
// makes it. Get reads one entry by its position and digest and follows it
// when a trim moved it; a bulk requeue takes its cut-off (each list's
// length and newest entry) with the count an operator confirms, so an
// entry dead-lettered after the count is left for another run; a list
// whose newest counted entry it cannot find again (trimmed away, or moved
// further than CutoffScan) is skipped whole and named
// (BulkResult.CutoffLost), never read as empty.
//
// An entry whose job carries no ID (most of the tutorial's) is valid: its
// ref names it (layout.Entry.NoID). A migration records what it moved in a
// marker per target namespace (MarkerKey), naming each entry by its bytes
// without their status, so that the tutorial's marking an entry in place
// leaves it the same entry, and its occurrence among the byte-identical
// entries of its list, counted from the tail (Identity).
//
// A limit of that naming, which no reading of the lists can remove: two
// byte-identical entries are told apart only by their order, and the
// tutorial's LTRIM drops the oldest. When a list holds byte-identical
// entries that were migrated, and a trim drops the oldest of them while
// as many identical ones are pushed (the same job failing the same way
// within the timestamp's microsecond, or an entry without a timestamp),
// the list reads exactly as before and a rerun counts the new ones as
// already migrated: they are not migrated. Entries that differ in any byte
// (the tutorial's timestamps make nearly all of them differ) are never
// affected; a migration walking a list the tutorial trims under it finds
// its place again by the last entries it processed, which two such runs
// of identical entries can mislead the same way.
package seed
