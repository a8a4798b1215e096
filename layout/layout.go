// Package layout describes how a job system that faultline did not write
// lays out its jobs and its dead letter queue: where a job is put for the
// system to run (a Redis list or stream, an HTTP endpoint, a command), what
// the job looks like (a JSON template carrying faultline's job ID at a path
// the layout names), and where and how the system keeps its dead letters
// (a Redis list, sorted set or stream of JSON entries, an HTTP endpoint, a
// command printing JSON lines) and which fields of an entry say the job's
// ID, its severity, its error and its status.
//
// It is the one description of a foreign layout that a black-box drill
// (drill, with `system: external:`), the `faultline dlq` CLI and the web UI
// share. Two presets name the layouts faultline knows: "faultline" (the
// reference's own keys, reference/store/redisstore) and "seed" (the
// tutorial's layout: a work list "default"; a "dead_letter" list of
// {job, error, retries, failed_at, status}; "dlq:low|medium|high" lists of
// {job, error, type, severity, retries, timestamp}).
//
// This package is pure: configs, presets, templates and the reading of an
// entry's fields. The adapters that talk to Redis, HTTP and commands are
// in layout/adapter.
package layout

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The presets.
const (
	// PresetFaultline is the reference implementation's own layout (its
	// Redis store, in a namespace).
	PresetFaultline = "faultline"
	// PresetSeed is the tutorial's layout.
	PresetSeed = "seed"
)

// Presets are the preset names, in the order the docs list them: the
// layouts, then the job frameworks (Frameworks).
var Presets = []string{PresetFaultline, PresetSeed, PresetSidekiq, PresetCelery, PresetRQ, PresetBullMQ}

// The seed layout's keys, before Prefix.
const (
	SeedQueue      = "default"
	SeedDeadLetter = "dead_letter"
)

// SeedSeverityLists are the seed's severity lists, before Prefix.
var SeedSeverityLists = []string{"dlq:low", "dlq:medium", "dlq:high"}

// DefaultTemplate is the job document injected when a layout gives no
// template: the job's ID, task, payload (as JSON when it is JSON, else a
// string) and idempotency key.
const DefaultTemplate = `{"id": "{id}", "task": "{task}", "payload": "{payload}", "idempotency_key": "{key}"}`

// Inject says how faultline puts a job into the system's queue: a preset,
// or exactly one adapter.
type Inject struct {
	// Preset is one of Presets; with a preset, no adapter is given.
	Preset string `yaml:"preset,omitempty" json:"preset,omitempty"`
	// Prefix is put before the seed preset's keys (e.g. "{namespace}:");
	// for the bullmq preset it is BullMQ's key prefix (default "bull").
	Prefix string `yaml:"prefix,omitempty" json:"prefix,omitempty"`
	// Queue is a framework preset's queue (default "{namespace}").
	Queue string `yaml:"queue,omitempty" json:"queue,omitempty"`
	// Job is a framework preset's job: Sidekiq's job class, Celery's task
	// name, RQ's function (a dotted path), BullMQ's job name; "{task}" in
	// it is the scenario's task (default: the task).
	Job string `yaml:"job,omitempty" json:"job,omitempty"`
	// Options are a framework preset's job options, as the team's
	// producer passes them (Sidekiq's item fields such as retry; RQ's
	// enqueue keywords, retry: {max, interval}; Celery's send_task
	// options; BullMQ's job options such as attempts, backoff,
	// removeOnFail).
	Options map[string]any `yaml:"options,omitempty" json:"options,omitempty"`
	// Runtime is the program that runs a framework preset's adapter
	// (default ruby, /usr/bin/python3 or node).
	Runtime string `yaml:"runtime,omitempty" json:"runtime,omitempty"`
	// Dir is the folder a framework preset's adapter loads the framework
	// from (BullMQ: the project whose node_modules holds bullmq),
	// relative to the scenario file's folder (default that folder).
	Dir string `yaml:"dir,omitempty" json:"dir,omitempty"`
	// RedisList pushes the job's document onto a list.
	RedisList *RedisListInject `yaml:"redisList,omitempty" json:"redisList,omitempty"`
	// RedisStream adds it to a stream (XADD).
	RedisStream *RedisStreamInject `yaml:"redisStream,omitempty" json:"redisStream,omitempty"`
	// RedisHash sets it in a hash under the job's ID (HSET), for a system
	// that keeps its jobs as records and marks their state in place.
	RedisHash *RedisHashInject `yaml:"redisHash,omitempty" json:"redisHash,omitempty"`
	// RedisZSet adds it to a sorted set scored by the injection's Unix
	// time in milliseconds (ZADD), for a system that runs what is due.
	RedisZSet *RedisZSetInject `yaml:"redisZSet,omitempty" json:"redisZSet,omitempty"`
	// HTTP POSTs it to the system's enqueue endpoint.
	HTTP *HTTPInject `yaml:"http,omitempty" json:"http,omitempty"`
	// Command writes it as one JSON line on the stdin of a command the
	// drill starts once and keeps running (it must print one line per job
	// read: "ok" or an error).
	Command *Command `yaml:"command,omitempty" json:"command,omitempty"`
	// Template is the job's JSON document; its string values may hold
	// {id}, {task}, {key} and {n}, and a string that is exactly
	// "{payload}" becomes the payload (as JSON when it is JSON). Default
	// DefaultTemplate. Not used by the faultline preset.
	Template string `yaml:"template,omitempty" json:"template,omitempty"`
	// IDPath is where the template puts {id}, a dotted path ("id",
	// "job.id"); default "id". Validate checks the template writes it
	// there; the queue's entries are read back with it.
	IDPath string `yaml:"idPath,omitempty" json:"idPath,omitempty"`
}

// RedisListInject pushes onto a Redis list.
type RedisListInject struct {
	Key string `yaml:"key" json:"key"`
	// Push is "lpush" (default: the seed's) or "rpush".
	Push string `yaml:"push,omitempty" json:"push,omitempty"`
}

// RedisStreamInject adds to a Redis stream (and, as a DLQ, reads one).
type RedisStreamInject struct {
	Key string `yaml:"key" json:"key"`
	// Field is the entry's field holding the document (default "job").
	Field string `yaml:"field,omitempty" json:"field,omitempty"`
	// Group is the consumer group the system reads the queue with. A
	// stream keeps the entries its consumers acknowledged, so what is
	// still queued is the group's pending entries (delivered, not
	// acknowledged) and the entries after its last-delivered ID; without
	// a group the queue is not observable. Not used by a DLQ stream.
	Group string `yaml:"group,omitempty" json:"group,omitempty"`
}

// RedisHashInject sets a job's document in a hash, under the job's ID.
type RedisHashInject struct {
	Key string `yaml:"key" json:"key"`
	// State says which of the hash's members are still queued. Required:
	// a hash keyed by job ID is a record of every job, so without it the
	// queue cannot be told from the record.
	State *QueueState `yaml:"state" json:"state"`
}

// RedisZSetInject adds a job's document to a sorted set.
type RedisZSetInject struct {
	Key string `yaml:"key" json:"key"`
	// State says which members are still queued; without it every member
	// is (a worker removes what it takes, as ZPOPMIN does).
	State *QueueState `yaml:"state,omitempty" json:"state,omitempty"`
}

// QueueState names the field of a job's document that says its state and
// the values that mean the job is still queued.
type QueueState struct {
	// Field is a dotted path into the document ("status").
	Field string `yaml:"field" json:"field"`
	// Queued are the values meaning queued; the template must write one
	// of them at Field.
	Queued []string `yaml:"queued" json:"queued"`
}

// HTTPInject POSTs the document to URL (a 2xx answer is success).
type HTTPInject struct {
	URL string `yaml:"url" json:"url"`
	// Header are extra request headers.
	Header map[string]string `yaml:"header,omitempty" json:"header,omitempty"`
}

// Command is a program with its arguments, environment and directory.
type Command struct {
	// Path is the program; a relative path with a slash is relative to
	// the scenario file's folder, a bare name is looked up on PATH.
	Path string   `yaml:"path" json:"path"`
	Args []string `yaml:"args,omitempty" json:"args,omitempty"`
	// Env is added to the environment faultline gives (FAULTLINE_*).
	Env map[string]string `yaml:"env,omitempty" json:"env,omitempty"`
	// Dir is the working directory, relative to the scenario file's
	// folder (default that folder).
	Dir string `yaml:"dir,omitempty" json:"dir,omitempty"`
}

// DLQ says where and how the system keeps its dead letters: a preset, or
// exactly one adapter, and the fields of an entry.
type DLQ struct {
	Preset string `yaml:"preset,omitempty" json:"preset,omitempty"`
	Prefix string `yaml:"prefix,omitempty" json:"prefix,omitempty"`
	// Queue, Runtime and Dir are a framework preset's (Inject's).
	Queue   string `yaml:"queue,omitempty" json:"queue,omitempty"`
	Runtime string `yaml:"runtime,omitempty" json:"runtime,omitempty"`
	Dir     string `yaml:"dir,omitempty" json:"dir,omitempty"`
	// RedisList reads lists of JSON entries (LRANGE).
	RedisList *RedisKeys `yaml:"redisList,omitempty" json:"redisList,omitempty"`
	// RedisZSet reads sorted sets of JSON entries (ZRANGE).
	RedisZSet *RedisKeys `yaml:"redisZSet,omitempty" json:"redisZSet,omitempty"`
	// RedisStream reads streams whose Field holds a JSON entry.
	RedisStream *RedisStreamInject `yaml:"redisStream,omitempty" json:"redisStream,omitempty"`
	// HTTP GETs URL: a JSON array of entries, an object whose "entries"
	// is one, or JSON lines.
	HTTP *HTTPRead `yaml:"http,omitempty" json:"http,omitempty"`
	// Command runs a command that prints the entries as JSON lines and
	// exits 0 (the way to a system whose storage is not JSON).
	Command *Command `yaml:"command,omitempty" json:"command,omitempty"`
	// Fields says where an entry keeps what faultline reads.
	Fields Fields `yaml:"fields,omitempty" json:"fields,omitempty"`
}

// RedisKeys names Redis keys.
type RedisKeys struct {
	Keys []string `yaml:"keys" json:"keys"`
}

// HTTPRead GETs URL.
type HTTPRead struct {
	URL    string            `yaml:"url" json:"url"`
	Header map[string]string `yaml:"header,omitempty" json:"header,omitempty"`
}

// Fields are dotted paths into a DLQ entry. ID is required; the others
// are read when given.
type Fields struct {
	// ID is the path of the job's ID (the seed's "job.id").
	ID string `yaml:"id,omitempty" json:"id,omitempty"`
	// Severity, Error, Class, Retries and Status are the paths of what
	// the entry says of the failure ("severity", "error", "type",
	// "retries", "status" in the seed).
	Severity string `yaml:"severity,omitempty" json:"severity,omitempty"`
	Error    string `yaml:"error,omitempty" json:"error,omitempty"`
	Class    string `yaml:"class,omitempty" json:"class,omitempty"`
	Retries  string `yaml:"retries,omitempty" json:"retries,omitempty"`
	Status   string `yaml:"status,omitempty" json:"status,omitempty"`
	// FailedAt is the path of when the job failed ("failed_at" in the
	// seed).
	FailedAt string `yaml:"failedAt,omitempty" json:"failedAt,omitempty"`
	// Inactive are the statuses of an entry that no longer holds its job
	// (the seed marks "deleted" and "reprocessing" in place).
	Inactive []string `yaml:"inactive,omitempty" json:"inactive,omitempty"`
}

// ErrConfig is matched by every error Validate returns.
var ErrConfig = errors.New("layout")

// ConfigError names the field of a layout that is wrong and why.
type ConfigError struct {
	// Field is the dotted path of the field, e.g. "inject.redisList.key".
	Field  string
	Reason string
}

// Error returns "FIELD: REASON".
func (e *ConfigError) Error() string { return e.Field + ": " + e.Reason }

// Is matches ErrConfig.
func (e *ConfigError) Is(target error) bool { return target == ErrConfig }

func bad(field, format string, args ...any) error {
	return &ConfigError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Resolved returns in with its preset (if any) made explicit: the seed's
// list adapter and template. The faultline preset stays a preset (its
// adapter is the reference store).
func (in Inject) Resolved() Inject {
	if in.Preset != PresetSeed {
		return in
	}
	out := in
	out.Preset = ""
	out.RedisList = &RedisListInject{Key: in.Prefix + SeedQueue, Push: "lpush"}
	if out.Template == "" {
		out.Template = DefaultTemplate
	}
	if out.IDPath == "" {
		out.IDPath = "id"
	}
	return out
}

// Resolved returns d with its preset (if any) made explicit: the seed's
// lists and fields; the faultline preset's fields. Fields given win over
// the preset's.
func (d DLQ) Resolved() DLQ {
	out := d
	var f Fields
	switch d.Preset {
	case PresetSeed:
		out.Preset = ""
		keys := []string{d.Prefix + SeedDeadLetter}
		for _, k := range SeedSeverityLists {
			keys = append(keys, d.Prefix+k)
		}
		out.RedisList = &RedisKeys{Keys: keys}
		f = Fields{ID: "job.id", Severity: "severity", Error: "error", Class: "type", Retries: "retries", Status: "status",
			FailedAt: SeedFailedAt, Inactive: []string{"deleted", "reprocessing"}}
	case PresetFaultline:
		f = Fields{ID: "job.id", Severity: "verdict.Severity", Error: "reason", Class: "verdict.Class", Retries: "job.attempts", Status: "status",
			FailedAt: "last_failed_at", Inactive: []string{"requeued", "deleted"}}
	case PresetSidekiq, PresetCelery, PresetRQ, PresetBullMQ:
		f = FrameworkFields
	default:
		return d
	}
	g := d.Fields
	pick := func(given, preset string) string {
		if given != "" {
			return given
		}
		return preset
	}
	out.Fields = Fields{ID: pick(g.ID, f.ID), Severity: pick(g.Severity, f.Severity), Error: pick(g.Error, f.Error),
		Class: pick(g.Class, f.Class), Retries: pick(g.Retries, f.Retries), Status: pick(g.Status, f.Status),
		FailedAt: pick(g.FailedAt, f.FailedAt), Inactive: f.Inactive}
	if g.Inactive != nil {
		out.Fields.Inactive = g.Inactive
	}
	return out
}

// Validate names the first thing wrong with in (its preset resolved).
func (in Inject) Validate() error {
	if in.Preset != "" && !slices.Contains(Presets, in.Preset) {
		return bad("inject.preset", "%q: takes %s", in.Preset, strings.Join(Presets, ", "))
	}
	n := countSet(in.RedisList != nil, in.RedisStream != nil, in.RedisHash != nil, in.RedisZSet != nil, in.HTTP != nil, in.Command != nil)
	switch {
	case in.Preset != "" && n > 0:
		return bad("inject", "a preset (%s) and an adapter: give one", in.Preset)
	case in.Preset == "" && n == 0:
		return bad("inject", "no adapter: give a preset (%s) or one of %s", strings.Join(Presets, ", "), injectAdapters)
	case n > 1:
		return bad("inject", "%d adapters: give exactly one of "+injectAdapters, n)
	case in.Preset == PresetFaultline:
		if in.Template != "" {
			return bad("inject.template", "the faultline preset enqueues the reference's own jobs: no template")
		}
		return nil
	case !IsFramework(in.Preset) && (in.Queue != "" || in.Job != "" || in.Options != nil || in.Runtime != "" || in.Dir != ""):
		return bad("inject", "queue, job, options, runtime and dir are a framework preset's (%s)", strings.Join(frameworkNames(), ", "))
	case IsFramework(in.Preset):
		if err := validateFramework("inject", in.Preset, in.Queue, in.Prefix, in.Job); err != nil {
			return err
		}
		if p := cmp.Or(in.IDPath, "id"); p != "id" {
			return bad("inject.idPath", "%q: the %s preset gives the framework the document's id as the job's ID: the template writes {id} at id", in.IDPath, in.Preset)
		}
	}
	r := in.Resolved()
	switch {
	case r.RedisList != nil:
		if r.RedisList.Key == "" {
			return bad("inject.redisList.key", "required")
		}
		if p := strings.ToLower(r.RedisList.Push); p != "" && p != "lpush" && p != "rpush" {
			return bad("inject.redisList.push", "%q: takes lpush or rpush", r.RedisList.Push)
		}
	case r.RedisStream != nil:
		if r.RedisStream.Key == "" {
			return bad("inject.redisStream.key", "required")
		}
	case r.RedisHash != nil:
		if r.RedisHash.Key == "" {
			return bad("inject.redisHash.key", "required")
		}
		if r.RedisHash.State == nil {
			return bad("inject.redisHash.state", "required: the field of a job's document that says its state and the values meaning queued (a hash keyed by job ID holds every job, so without it the queue cannot be read)")
		}
	case r.RedisZSet != nil:
		if r.RedisZSet.Key == "" {
			return bad("inject.redisZSet.key", "required")
		}
	case r.HTTP != nil:
		if err := checkURL(r.HTTP.URL); err != nil {
			return bad("inject.http.url", "%v", err)
		}
	case r.Command != nil:
		if r.Command.Path == "" {
			return bad("inject.command.path", "required")
		}
	}
	tmpl := r.Template
	if tmpl == "" {
		tmpl = DefaultTemplate
	}
	idPath := r.IDPath
	if idPath == "" {
		idPath = "id"
	}
	doc, err := Render(tmpl, Job{ID: "faultline-probe-id", Task: "t", Payload: "{}", N: 1})
	if err != nil {
		return bad("inject.template", "%v", err)
	}
	if v, ok := Lookup(doc, idPath); !ok || v != "faultline-probe-id" {
		return bad("inject.idPath", "%q: the template does not put {id} there (write \"{id}\" as the string at that path)", idPath)
	}
	if st, field := r.queueState(); st != nil {
		if err := checkPath(st.Field); err != nil || st.Field == "" {
			if err == nil {
				err = errors.New("required")
			}
			return bad(field+".field", "%v", err)
		}
		if len(st.Queued) == 0 {
			return bad(field+".queued", "at least one value meaning queued (e.g. [queued])")
		}
		if v, ok := Lookup(doc, st.Field); !ok || !slices.Contains(st.Queued, v) {
			return bad(field, "the template does not write one of %s at %s: a job just injected must read as queued", strings.Join(st.Queued, ", "), st.Field)
		}
	}
	return nil
}

// injectAdapters lists the inject adapters for messages.
const injectAdapters = "redisList, redisStream, redisHash, redisZSet, http, command"

// queueState returns the declared queue state of a hash or sorted-set
// queue and the path of its key for messages.
func (in Inject) queueState() (*QueueState, string) {
	switch {
	case in.RedisHash != nil:
		return in.RedisHash.State, "inject.redisHash.state"
	case in.RedisZSet != nil:
		return in.RedisZSet.State, "inject.redisZSet.state"
	}
	return nil, ""
}

// Validate names the first thing wrong with d (its preset resolved).
func (d DLQ) Validate() error {
	if d.Preset != "" && !slices.Contains(Presets, d.Preset) {
		return bad("dlq.preset", "%q: takes %s", d.Preset, strings.Join(Presets, ", "))
	}
	n := countSet(d.RedisList != nil, d.RedisZSet != nil, d.RedisStream != nil, d.HTTP != nil, d.Command != nil)
	switch {
	case d.Preset != "" && n > 0:
		return bad("dlq", "a preset (%s) and an adapter: give one", d.Preset)
	case d.Preset == "" && n == 0:
		return bad("dlq", "no adapter: give a preset (%s) or one of redisList, redisZSet, redisStream, http, command", strings.Join(Presets, ", "))
	case n > 1:
		return bad("dlq", "%d adapters: give exactly one of redisList, redisZSet, redisStream, http, command", n)
	}
	switch {
	case !IsFramework(d.Preset) && (d.Queue != "" || d.Runtime != "" || d.Dir != ""):
		return bad("dlq", "queue, runtime and dir are a framework preset's (%s)", strings.Join(frameworkNames(), ", "))
	case IsFramework(d.Preset):
		if err := validateFramework("dlq", d.Preset, d.Queue, d.Prefix, ""); err != nil {
			return err
		}
	}
	r := d.Resolved()
	keys := func(field string, k *RedisKeys) error {
		if len(k.Keys) == 0 {
			return bad(field, "at least one key")
		}
		for i, key := range k.Keys {
			if key == "" {
				return bad(fmt.Sprintf("%s[%d]", field, i), "empty key")
			}
		}
		return nil
	}
	switch {
	case r.RedisList != nil:
		if err := keys("dlq.redisList.keys", r.RedisList); err != nil {
			return err
		}
	case r.RedisZSet != nil:
		if err := keys("dlq.redisZSet.keys", r.RedisZSet); err != nil {
			return err
		}
	case r.RedisStream != nil:
		if r.RedisStream.Key == "" {
			return bad("dlq.redisStream.key", "required")
		}
		if r.RedisStream.Group != "" {
			return bad("dlq.redisStream.group", "a consumer group is the queue's (inject.redisStream.group): a DLQ stream is read whole")
		}
	case r.HTTP != nil:
		if err := checkURL(r.HTTP.URL); err != nil {
			return bad("dlq.http.url", "%v", err)
		}
	case r.Command != nil:
		if r.Command.Path == "" {
			return bad("dlq.command.path", "required")
		}
	}
	if r.Fields.ID == "" {
		return bad("dlq.fields.id", "required: the path of the job's ID in an entry (the seed's is job.id)")
	}
	for name, p := range map[string]string{"id": r.Fields.ID, "severity": r.Fields.Severity, "error": r.Fields.Error,
		"class": r.Fields.Class, "retries": r.Fields.Retries, "status": r.Fields.Status} {
		if err := checkPath(p); err != nil {
			return bad("dlq.fields."+name, "%v", err)
		}
	}
	return nil
}

func countSet(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

func checkURL(u string) error {
	switch {
	case u == "":
		return errors.New("required")
	case !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "{"):
		return fmt.Errorf("%q: takes an http:// or https:// URL", u)
	}
	return nil
}

func checkPath(p string) error {
	if p == "" {
		return nil
	}
	for _, part := range strings.Split(p, ".") {
		if part == "" {
			return fmt.Errorf("%q: an empty part (a path is names joined by dots, e.g. job.id)", p)
		}
	}
	return nil
}

// Job is a job as faultline injects it.
type Job struct {
	// ID is faultline's ID of the job, written at the layout's IDPath.
	ID   string
	Task string
	// Key is its idempotency key ("" = none).
	Key     string
	Payload string
	// N numbers the scenario's jobs from 1.
	N int
}

// Render returns the job's JSON document from template: every string
// value has {id}, {task}, {key} and {n} replaced, and a string that is
// exactly "{payload}" becomes the payload, as JSON when it is valid JSON,
// else as a string. The template must be a JSON document.
func Render(template string, j Job) (map[string]any, error) {
	var doc any
	dec := json.NewDecoder(strings.NewReader(template))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("not a JSON document: %w", err)
	}
	if dec.More() {
		return nil, errors.New("not one JSON document: text after it")
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, errors.New("not a JSON object: a job's document is an object")
	}
	rep := strings.NewReplacer("{id}", j.ID, "{task}", j.Task, "{key}", j.Key, "{n}", strconv.Itoa(j.N))
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			if x == "{payload}" {
				// UseNumber: a payload's large integers pass through exact.
				pd := json.NewDecoder(strings.NewReader(j.Payload))
				pd.UseNumber()
				var p any
				if json.Valid([]byte(j.Payload)) && pd.Decode(&p) == nil {
					return p
				}
				return j.Payload
			}
			return rep.Replace(x)
		case map[string]any:
			for k, e := range x {
				x[k] = walk(e)
			}
			return x
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
			return x
		}
		return v
	}
	return walk(m).(map[string]any), nil
}

// Lookup returns the value at dotted path in doc as a string (a number or
// a boolean in its JSON form), and whether it was there and a scalar.
func Lookup(doc any, path string) (string, bool) {
	v := doc
	for _, part := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return "", false
		}
		if v, ok = m[part]; !ok {
			return "", false
		}
	}
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}

// Entry is one DLQ entry as read from the system.
type Entry struct {
	// Source says where it was read: "dead_letter[3]", "stream s 1-0",
	// "line 4".
	Source string `json:"source"`
	// Raw is the entry's bytes as stored.
	Raw json.RawMessage `json:"raw,omitempty"`
	// JobID is the job's ID, read at Fields.ID ("" when it has none).
	JobID string `json:"job,omitempty"`
	// Severity, Error, Class, Status are read at their paths; Retries
	// too, when HasRetries.
	Severity   string `json:"severity,omitempty"`
	Error      string `json:"error,omitempty"`
	Class      string `json:"class,omitempty"`
	Status     string `json:"status,omitempty"`
	Retries    int    `json:"retries,omitempty"`
	HasRetries bool   `json:"hasRetries,omitempty"`
	// Inactive says its status is one of Fields.Inactive: it no longer
	// holds its job.
	Inactive bool `json:"inactive,omitempty"`
	// NoID says why an entry that was read has no job ID ("no job ID at
	// job.id"): it is a valid entry (the tutorial's jobs often carry no
	// ID), named by where it is and its bytes instead of by a job. ""
	// when JobID is set or the entry is Corrupt. A reader that names jobs
	// by their ID (a drill's) treats it as corrupt: see RequireID.
	NoID string `json:"noID,omitempty"`
	// Corrupt says why the entry could not be read (not JSON, not a JSON
	// object): a corrupt entry is kept and shown, never dropped.
	Corrupt string `json:"corrupt,omitempty"`
}

// RequireID returns e as a reader that knows entries only by their job's
// ID sees it: an entry without one (NoID) is corrupt, with NoID's reason,
// as the black-box drill's oracle counts it (an entry whose job it cannot
// name). Other entries are returned unchanged.
func (e Entry) RequireID() Entry {
	if e.NoID != "" && e.Corrupt == "" {
		e.Corrupt, e.NoID = e.NoID, ""
	}
	return e
}

// The seed's names of a dead letter's metadata, which MissingMetadata
// reads where a layout declares no path of its own.
const (
	SeedError    = "error"
	SeedRetries  = "retries"
	SeedFailedAt = "failed_at"
)

// MissingMetadata says what of a dead letter's metadata the entry raw
// lacks — its error, its attempt count, when it failed — each named with
// the path it was looked for at (f's, else the seed's name): an operator
// cannot triage an entry without them. Nil for an entry that has them all,
// or that is not a JSON object (corrupt: reported as such).
func MissingMetadata(raw []byte, f Fields) []string {
	var doc any
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if dec.Decode(&doc) != nil {
		return nil
	}
	if _, ok := doc.(map[string]any); !ok {
		return nil
	}
	var out []string
	for _, m := range [...]struct{ what, path, seed string }{
		{"its error", f.Error, SeedError},
		{"its attempt count", f.Retries, SeedRetries},
		{"when it failed", f.FailedAt, SeedFailedAt},
	} {
		p := cmp.Or(m.path, m.seed)
		if v, ok := Lookup(doc, p); !ok || strings.TrimSpace(v) == "" {
			out = append(out, m.what+" (at "+p+")")
		}
	}
	return out
}

// ParseEntry reads raw, found at source, with fields f. Bytes that are not
// one JSON object are Corrupt; an object without a job ID at f.ID is a
// valid entry with NoID set (call RequireID to count it as corrupt).
func ParseEntry(source string, raw []byte, f Fields) Entry {
	e := Entry{Source: source}
	if json.Valid(raw) {
		e.Raw = append(json.RawMessage(nil), raw...)
	} else {
		b, _ := json.Marshal(string(raw))
		e.Raw = b
		e.Corrupt = "not JSON"
		return e
	}
	var doc any
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		e.Corrupt = "not JSON: " + err.Error()
		return e
	}
	if _, ok := doc.(map[string]any); !ok {
		e.Corrupt = "not a JSON object"
		return e
	}
	get := func(p string) (string, bool) {
		if p == "" {
			return "", false
		}
		return Lookup(doc, p)
	}
	id, ok := get(f.ID)
	if !ok || id == "" {
		e.NoID = "no job ID at " + f.ID
	}
	e.JobID = id
	e.Severity, _ = get(f.Severity)
	e.Error, _ = get(f.Error)
	e.Class, _ = get(f.Class)
	e.Status, _ = get(f.Status)
	if r, ok := get(f.Retries); ok {
		if n, err := strconv.Atoi(r); err == nil {
			e.Retries, e.HasRetries = n, true
		}
	}
	e.Inactive = e.Status != "" && slices.Contains(f.Inactive, e.Status)
	return e
}

// Ready says how a drill knows the system is ready for its first job:
// exactly one of a command that exits 0, an HTTP endpoint that answers a
// GET with 2xx, or a Redis key that exists. A probe that holds {worker}
// is asked once per copy of the system (each copy's name in its place).
type Ready struct {
	Command  *Command  `yaml:"command,omitempty" json:"command,omitempty"`
	HTTP     *HTTPRead `yaml:"http,omitempty" json:"http,omitempty"`
	RedisKey string    `yaml:"redisKey,omitempty" json:"redisKey,omitempty"`
}

// Validate names the first thing wrong with r.
func (r Ready) Validate() error {
	switch n := countSet(r.Command != nil, r.HTTP != nil, r.RedisKey != ""); {
	case n == 0:
		return bad("ready", "no probe: give one of command, http, redisKey")
	case n > 1:
		return bad("ready", "%d probes: give exactly one of command, http, redisKey", n)
	case r.Command != nil && r.Command.Path == "":
		return bad("ready.command.path", "required")
	case r.HTTP != nil:
		if err := checkURL(r.HTTP.URL); err != nil {
			return bad("ready.http.url", "%v", err)
		}
	}
	return nil
}

// PerCopy says the probe names {worker}: it is asked of every copy of the
// system the drill started.
func (r Ready) PerCopy() bool {
	parts := []string{r.RedisKey}
	if r.HTTP != nil {
		parts = append(parts, r.HTTP.URL)
		for _, v := range r.HTTP.Header {
			parts = append(parts, v)
		}
	}
	if c := r.Command; c != nil {
		parts = append(append(parts, c.Path, c.Dir), c.Args...)
		for _, v := range c.Env {
			parts = append(parts, v)
		}
	}
	return slices.ContainsFunc(parts, func(s string) bool { return strings.Contains(s, "{worker}") })
}
