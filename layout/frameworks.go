package layout

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// The job frameworks faultline knows as presets: a team's framework
// worker is drilled by naming its framework (inject: {preset: sidekiq},
// dlq: {preset: sidekiq}); the preset knows the framework's keys, puts
// jobs in through the framework's own client (a small program in the
// framework's language, layout/adapter/presets) and reads its dead or
// failed jobs.
const (
	// PresetSidekiq is Sidekiq (Ruby) 6.x: queue list "queue:<q>", the
	// "retry" and "schedule" sorted sets, the "dead" sorted set.
	PresetSidekiq = "sidekiq"
	// PresetCelery is Celery (Python) 5.x on the Redis broker: queue list
	// "<q>", no dead letter queue (the preset reads the Redis result
	// backend's FAILURE records).
	PresetCelery = "celery"
	// PresetRQ is RQ (Python) 1.x: queue list "rq:queue:<q>", the failed
	// job registry "rq:failed:<q>".
	PresetRQ = "rq"
	// PresetBullMQ is BullMQ (Node) 5.x: "<prefix>:<q>:wait" and its other
	// state keys, the failed set "<prefix>:<q>:failed".
	PresetBullMQ = "bullmq"
)

// Framework is what faultline knows of a job framework: how to run its
// adapter program, how to install what that needs, and the Redis keys the
// framework keeps one queue in.
type Framework struct {
	// Name is the preset's name.
	Name string
	// Title is the framework's name as its docs write it.
	Title string
	// Version is the version the adapter program was written against.
	Version string
	// Runtime is the program that runs the adapter (default of the
	// preset's runtime field).
	Runtime string
	// Program is the adapter program's file name in layout/adapter/presets.
	Program string
	// Install says how to install the runtime and the framework.
	Install string
	// DeadLetters says where the framework keeps its dead letters, for
	// the report; NoDLQ says it keeps none by default.
	DeadLetters string
	NoDLQ       bool
}

// Frameworks are the framework presets, in the order the docs list them.
var Frameworks = []Framework{
	{Name: PresetSidekiq, Title: "Sidekiq", Version: "6.4.1", Runtime: "ruby", Program: "sidekiq.rb",
		Install:     "apt-get install ruby-sidekiq (or gem install sidekiq -v 6.4.1)",
		DeadLetters: "the dead set (sorted set dead), this queue's members"},
	{Name: PresetCelery, Title: "Celery", Version: "5.2.6", Runtime: "/usr/bin/python3", Program: "celery.py",
		Install:     "apt-get install python3-celery python3-redis (or pip install 'celery[redis]==5.2.6')",
		DeadLetters: "none by default: the preset reads the Redis result backend's FAILURE records (celery-task-meta-*), which exist only with a Redis result backend and expire after result_expires (a day by default); a task that fails without one is lost",
		NoDLQ:       true},
	{Name: PresetRQ, Title: "RQ", Version: "1.13.0", Runtime: "/usr/bin/python3", Program: "rq.py",
		Install:     "apt-get install python3-rq (or pip install rq==1.13.0)",
		DeadLetters: "the queue's FailedJobRegistry (sorted set rq:failed:<queue>)"},
	{Name: PresetBullMQ, Title: "BullMQ", Version: "5.81.5", Runtime: "node", Program: "bullmq.cjs",
		Install:     "apt-get install nodejs npm, then npm install --save-exact bullmq@5.81.5 in the preset's dir",
		DeadLetters: "the queue's failed set (sorted set <prefix>:<queue>:failed)"},
}

// FrameworkOf returns the framework preset named name, if it is one.
func FrameworkOf(name string) (Framework, bool) {
	for _, f := range Frameworks {
		if f.Name == name {
			return f, true
		}
	}
	return Framework{}, false
}

// IsFramework says name is a framework preset.
func IsFramework(name string) bool {
	_, ok := FrameworkOf(name)
	return ok
}

// DefaultBullMQPrefix is BullMQ's own default key prefix.
const DefaultBullMQPrefix = "bull"

// DefaultFrameworkQueue is a framework preset's queue when none is
// given: the drill's namespace, so that each drill has a queue of its own.
const DefaultFrameworkQueue = "{namespace}"

// FrameworkFields are the fields of the entries a framework preset's
// adapter program prints (its dlq mode).
// An entry whose status is "expired" (past its framework's TTL, not yet
// swept) or "gone" (its job's record removed) no longer holds its job.
var FrameworkFields = Fields{ID: "id", Error: "error", Retries: "retries", Status: "status", FailedAt: "failed_at", Inactive: []string{"expired", "gone"}}

// KeyKind is the Redis type a key must have.
type KeyKind string

// The Redis types of a framework's keys (TYPE's answers).
const (
	KindList   KeyKind = "list"
	KindZSet   KeyKind = "zset"
	KindHash   KeyKind = "hash"
	KindSet    KeyKind = "set"
	KindString KeyKind = "string"
	KindStream KeyKind = "stream"
)

// FrameworkKey is one Redis key a framework keeps a queue's jobs in.
type FrameworkKey struct {
	// Key is the key's name (queue and prefix filled in, placeholders
	// not yet expanded).
	Key string
	// Kind is the type the framework keeps there.
	Kind KeyKind
	// What says what the framework keeps there.
	What string
	// Queued says the key holds jobs still queued or scheduled (to run,
	// or to be retried): Holds says how to read a member's job ID.
	Queued bool
	Holds  Holds
	// Shared says the key is the framework's for every queue, not this
	// queue's alone (Sidekiq's retry, schedule and dead sets): its members
	// of other queues are not the drill's.
	Shared bool
}

// Holds is what a member of a framework key is.
type Holds int

// What a framework key's members are.
const (
	// HoldsID: each member is a job ID.
	HoldsID Holds = iota
	// HoldsSidekiqJob: each member is a Sidekiq job's JSON (jid, queue).
	HoldsSidekiqJob
	// HoldsCeleryMessage: each member is a kombu message's JSON (the
	// task ID at headers.id).
	HoldsCeleryMessage
)

// FrameworkKeys returns the keys framework preset name keeps queue in
// (queue and prefix filled in: prefix is BullMQ's; "" for its default).
func FrameworkKeys(name, queue, prefix string) []FrameworkKey {
	switch name {
	case PresetSidekiq:
		return []FrameworkKey{
			{Key: "queue:" + queue, Kind: KindList, What: "the queue (jobs as JSON, LPUSH, fetched with BRPOP)", Queued: true, Holds: HoldsSidekiqJob},
			{Key: "retry", Kind: KindZSet, What: "the retry set (every queue's jobs waiting to be retried)", Queued: true, Holds: HoldsSidekiqJob, Shared: true},
			{Key: "schedule", Kind: KindZSet, What: "the schedule set (every queue's scheduled jobs)", Queued: true, Holds: HoldsSidekiqJob, Shared: true},
			{Key: "dead", Kind: KindZSet, What: "the dead set (every queue's dead jobs)", Holds: HoldsSidekiqJob, Shared: true},
		}
	case PresetCelery:
		return []FrameworkKey{
			{Key: queue, Kind: KindList, What: "the queue (kombu messages as JSON, LPUSH, fetched with BRPOP)", Queued: true, Holds: HoldsCeleryMessage},
			// kombu's lists of the priorities 3-5, 6-8 and 9 (the priority
			// option): the queue's name, "\x06\x16" and the step.
			{Key: queue + "\x06\x163", Kind: KindList, What: "the queue's messages of priority 3 to 5", Queued: true, Holds: HoldsCeleryMessage},
			{Key: queue + "\x06\x166", Kind: KindList, What: "the queue's messages of priority 6 to 8", Queued: true, Holds: HoldsCeleryMessage},
			{Key: queue + "\x06\x169", Kind: KindList, What: "the queue's messages of priority 9", Queued: true, Holds: HoldsCeleryMessage},
			{Key: "unacked", Kind: KindHash, What: "kombu's delivered, unacknowledged messages (every queue's)", Shared: true},
			{Key: "unacked_index", Kind: KindZSet, What: "kombu's index of the unacknowledged messages (every queue's)", Shared: true},
		}
	case PresetRQ:
		return []FrameworkKey{
			{Key: "rq:queue:" + queue, Kind: KindList, What: "the queue (job IDs)", Queued: true},
			{Key: "rq:scheduled:" + queue, Kind: KindZSet, What: "the scheduled job registry (jobs waiting to be retried after an interval)", Queued: true},
			{Key: "rq:wip:" + queue, Kind: KindZSet, What: "the started job registry (jobs a worker holds)"},
			{Key: "rq:failed:" + queue, Kind: KindZSet, What: "the failed job registry (the dead letters)"},
			{Key: "rq:finished:" + queue, Kind: KindZSet, What: "the finished job registry"},
			{Key: "rq:deferred:" + queue, Kind: KindZSet, What: "the deferred job registry"},
		}
	case PresetBullMQ:
		p := cmp.Or(prefix, DefaultBullMQPrefix) + ":" + queue + ":"
		return []FrameworkKey{
			{Key: p + "wait", Kind: KindList, What: "the waiting jobs (IDs)", Queued: true},
			{Key: p + "paused", Kind: KindList, What: "the paused queue's waiting jobs (IDs)", Queued: true},
			{Key: p + "delayed", Kind: KindZSet, What: "the delayed jobs (IDs, a retry's backoff among them)", Queued: true},
			{Key: p + "prioritized", Kind: KindZSet, What: "the prioritized waiting jobs (IDs)", Queued: true},
			{Key: p + "active", Kind: KindList, What: "the jobs a worker holds (IDs)"},
			{Key: p + "failed", Kind: KindZSet, What: "the failed set (the dead letters)"},
			{Key: p + "completed", Kind: KindZSet, What: "the completed set"},
			{Key: p + "meta", Kind: KindHash, What: "the queue's meta (its version field says bullmq:<version>)"},
		}
	}
	return nil
}

// FrameworkJobKeys are the keys framework preset name keeps one job in
// outside its queue's keys, named by the job's ID alone (queue and prefix
// as in FrameworkKeys): Celery's result record, RQ's job hash and result
// stream, BullMQ's job hash. A drill refuses to start while one of its
// jobs' keys exists (a job of that ID from an earlier drill: the
// framework would mix the two up) and deletes them after.
func FrameworkJobKeys(name, queue, prefix, id string) []string {
	switch name {
	case PresetCelery:
		return []string{"celery-task-meta-" + id}
	case PresetRQ:
		return []string{"rq:job:" + id, "rq:results:" + id}
	case PresetBullMQ:
		return []string{cmp.Or(prefix, DefaultBullMQPrefix) + ":" + queue + ":" + id}
	}
	return nil
}

// FrameworkOptions are a framework preset's fields, shared by its inject
// and DLQ adapters: what the adapter program is told.
type FrameworkOptions struct {
	// Queue is the framework's queue (default DefaultFrameworkQueue).
	Queue string
	// Prefix is BullMQ's key prefix (default DefaultBullMQPrefix).
	Prefix string
	// Job is the job class, task name, function or job name ("" or
	// "{task}": the scenario's task).
	Job string
	// Options are the producer's job options, as JSON ("{}": none).
	Options string
	// Runtime runs the adapter program (default Framework.Runtime).
	Runtime string
	// Dir is where the framework's library is loaded from.
	Dir string
}

// FrameworkOptions returns in's framework preset fields, defaults filled.
func (in Inject) FrameworkOptions() FrameworkOptions {
	f, _ := FrameworkOf(in.Preset)
	opts := "{}"
	if len(in.Options) > 0 {
		opts = marshalOptions(in.Options)
	}
	return FrameworkOptions{Queue: cmp.Or(in.Queue, DefaultFrameworkQueue), Prefix: in.Prefix, Job: in.Job, Options: opts,
		Runtime: cmp.Or(in.Runtime, f.Runtime), Dir: in.Dir}
}

// FrameworkOptions returns d's framework preset fields, defaults filled.
func (d DLQ) FrameworkOptions() FrameworkOptions {
	f, _ := FrameworkOf(d.Preset)
	return FrameworkOptions{Queue: cmp.Or(d.Queue, DefaultFrameworkQueue), Prefix: d.Prefix, Options: "{}",
		Runtime: cmp.Or(d.Runtime, f.Runtime), Dir: d.Dir}
}

// FrameworkPolicy is the retry policy a framework preset's job options
// declare, where they say it: Sidekiq's "retry" (a count: that many
// retries after the first attempt; false or 0: none), RQ's retry.max (its
// first interval the least backoff) and BullMQ's attempts (default 1: the
// first attempt only, as BullMQ runs a job without it) with its
// backoff.delay. ok is false when the options do not say (Sidekiq without
// "retry": a job pushed by its class's name carries "retry": true, so the
// server's max_retries decides — 25 unless the team set it; Celery: the
// task's decorator decides).
func (in Inject) FrameworkPolicy() (maxAttempts int, minBackoffMs int64, ok bool) {
	o := in.Options
	switch in.Preset {
	case PresetSidekiq:
		switch r := o["retry"].(type) {
		case bool:
			if !r {
				return 1, 0, true
			}
			return 26, 0, true // Sidekiq's default: 25 retries
		default:
			if n, isNum := number(r); isNum {
				return int(n) + 1, 0, true
			}
		}
	case PresetRQ:
		r, ok := o["retry"].(map[string]any)
		if !ok {
			return 1, 0, true // RQ retries nothing without Retry
		}
		n, isNum := number(r["max"])
		if !isNum {
			return 0, 0, false
		}
		var first int64
		switch iv := r["interval"].(type) {
		case []any:
			if len(iv) > 0 {
				if s, ok := number(iv[0]); ok {
					first = int64(s * 1000)
				}
			}
		default:
			if s, ok := number(iv); ok {
				first = int64(s * 1000)
			}
		}
		return int(n) + 1, first, true
	case PresetBullMQ:
		n, isNum := number(o["attempts"])
		if !isNum {
			return 1, 0, true // BullMQ's default: one attempt
		}
		var delay int64
		if b, ok := o["backoff"].(map[string]any); ok {
			if d, ok := number(b["delay"]); ok {
				delay = int64(d)
			}
		} else if d, ok := number(o["backoff"]); ok {
			delay = int64(d)
		}
		return max(int(n), 1), delay, true
	}
	return 0, 0, false
}

// number reads a YAML/JSON number (int, float or json.Number-like text).
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float64:
		return x, true
	case fmt.Stringer:
		f, err := strconv.ParseFloat(x.String(), 64)
		return f, err == nil
	}
	return 0, false
}

// validateFramework checks a framework preset's fields (field is "inject"
// or "dlq").
func validateFramework(field, preset, queue, prefix, job string) error {
	if strings.ContainsAny(queue, " \t\r\n") {
		return bad(field+".queue", "%q: a queue name has no spaces", queue)
	}
	if prefix != "" && preset != PresetBullMQ {
		return bad(field+".prefix", "the %s preset's keys have fixed names: prefix is BullMQ's key prefix only", preset)
	}
	if preset == PresetBullMQ && strings.Contains(queue, ":") {
		return bad(field+".queue", "%q: a BullMQ queue name has no colon", queue)
	}
	if job != "" && strings.ContainsAny(job, " \t\r\n") {
		return bad(field+".job", "%q: a job class, task or function name has no spaces", job)
	}
	return nil
}

func frameworkNames() []string {
	out := make([]string, len(Frameworks))
	for i, f := range Frameworks {
		out[i] = f.Name
	}
	return out
}

// marshalOptions is opts as a JSON object ("{}" when it cannot be one:
// Validate reports why).
func marshalOptions(opts map[string]any) string {
	b, err := json.Marshal(opts)
	if err != nil {
		return "{}"
	}
	return string(b)
}
