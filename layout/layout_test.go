package layout_test

import (
	"encoding/json"
	"errors"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/layout"
)

var seedFields = layout.DLQ{Preset: layout.PresetSeed}.Resolved().Fields

var _ = Describe("Render", func() {
	job := layout.Job{ID: "charge-1", Task: "charge", Key: "idem-1", Payload: `{"amount": 12, "cur": "eur"}`, N: 7}

	It("fills the default template, the payload as JSON when it is JSON", func() {
		doc, err := layout.Render(layout.DefaultTemplate, job)
		Expect(err).NotTo(HaveOccurred())
		b, err := json.Marshal(doc)
		Expect(err).NotTo(HaveOccurred())
		Expect(b).To(MatchJSON(`{"id": "charge-1", "task": "charge", "idempotency_key": "idem-1",
			"payload": {"amount": 12, "cur": "eur"}}`))
	})

	It("keeps a payload that is not JSON as a string, and an empty key as \"\"", func() {
		doc, err := layout.Render(layout.DefaultTemplate, layout.Job{ID: "a", Task: "t", Payload: "not {json"})
		Expect(err).NotTo(HaveOccurred())
		Expect(doc).To(HaveKeyWithValue("payload", "not {json"))
		Expect(doc).To(HaveKeyWithValue("idempotency_key", ""))
	})

	It("replaces placeholders in nested strings and arrays, not in keys", func() {
		doc, err := layout.Render(`{"job": {"id": "{id}", "args": ["{task}-{n}", "{key}", 3, true, null], "{id}": "x"},
			"body": "{payload}", "note": "pay {payload}"}`, job)
		Expect(err).NotTo(HaveOccurred())
		v, ok := layout.Lookup(doc, "job.id")
		Expect(ok).To(BeTrue())
		Expect(v).To(Equal("charge-1"))
		b, _ := json.Marshal(doc)
		Expect(b).To(MatchJSON(`{"job": {"id": "charge-1", "args": ["charge-7", "idem-1", 3, true, null], "{id}": "x"},
			"body": {"amount": 12, "cur": "eur"}, "note": "pay {payload}"}`))
	})

	DescribeTable("refuses a template that is not one JSON object",
		func(tmpl, want string) {
			_, err := layout.Render(tmpl, job)
			Expect(err).To(MatchError(ContainSubstring(want)))
		},
		Entry("not JSON", `{"id": `, "not a JSON document"),
		Entry("two documents", `{"id": "{id}"} {}`, "text after it"),
		Entry("an array", `["{id}"]`, "not a JSON object"),
		Entry("a string", `"{id}"`, "not a JSON object"),
	)
})

var _ = Describe("Lookup", func() {
	var doc any
	BeforeEach(func() {
		Expect(json.Unmarshal([]byte(`{"job": {"id": "j1", "n": 3, "f": 1.5, "ok": true, "list": [1], "obj": {}}, "null": null}`), &doc)).To(Succeed())
	})

	DescribeTable("reads scalars at dotted paths",
		func(path, want string, found bool) {
			v, ok := layout.Lookup(doc, path)
			Expect(ok).To(Equal(found))
			Expect(v).To(Equal(want))
		},
		Entry("a nested string", "job.id", "j1", true),
		Entry("an integer", "job.n", "3", true),
		Entry("a float", "job.f", "1.5", true),
		Entry("a boolean", "job.ok", "true", true),
		Entry("an array is no scalar", "job.list", "", false),
		Entry("an object is no scalar", "job.obj", "", false),
		Entry("null is no scalar", "null", "", false),
		Entry("a missing key", "job.nope", "", false),
		Entry("a path through a scalar", "job.id.x", "", false),
		Entry("the empty path", "", "", false),
	)

	It("reads a json.Number as written", func() {
		v, ok := layout.Lookup(map[string]any{"n": json.Number("12345678901234567890")}, "n")
		Expect(ok).To(BeTrue())
		Expect(v).To(Equal("12345678901234567890"))
	})
})

var _ = Describe("ParseEntry", func() {
	It("reads a seed dead_letter entry", func() {
		raw := []byte(`{"job": {"id": "charge-1", "task": "charge"}, "error": "card declined", "retries": 3,
			"failed_at": "2024-01-01T00:00:00Z", "status": "failed"}`)
		e := layout.ParseEntry("dead_letter[0]", raw, seedFields)
		Expect(e).To(MatchFields(layout.Entry{Source: "dead_letter[0]", JobID: "charge-1", Error: "card declined",
			Status: "failed", Retries: 3, HasRetries: true}))
		Expect([]byte(e.Raw)).To(MatchJSON(raw))
	})

	It("reads a seed severity entry", func() {
		raw := []byte(`{"job": {"id": "c2"}, "error": "401", "type": "critical", "severity": "high", "retries": 0, "timestamp": 1}`)
		e := layout.ParseEntry("dlq:high[0]", raw, seedFields)
		Expect(e).To(MatchFields(layout.Entry{Source: "dlq:high[0]", JobID: "c2", Error: "401", Class: "critical",
			Severity: "high", HasRetries: true}))
	})

	DescribeTable("flags inactive statuses",
		func(status string, inactive bool) {
			e := layout.ParseEntry("s", []byte(`{"job": {"id": "j"}, "status": "`+status+`"}`), seedFields)
			Expect(e.Inactive).To(Equal(inactive))
			Expect(e.Corrupt).To(BeEmpty())
		},
		Entry("failed", "failed", false),
		Entry("deleted", "deleted", true),
		Entry("reprocessing", "reprocessing", true),
	)

	It("keeps bytes that are not JSON, as a JSON string, marked corrupt", func() {
		e := layout.ParseEntry("dead_letter[2]", []byte("\x00garbage{"), seedFields)
		Expect(e.Corrupt).To(Equal("not JSON"))
		Expect(e.JobID).To(BeEmpty())
		var s string
		Expect(json.Unmarshal(e.Raw, &s)).To(Succeed())
		Expect(s).To(Equal("\x00garbage{"))
	})

	It("reads an entry without the job's ID as a valid entry with no ID, and the rest of it", func() {
		e := layout.ParseEntry("x", []byte(`{"job": {"id": ""}, "error": "boom", "retries": "many"}`), seedFields)
		Expect(e.Corrupt).To(BeEmpty())
		Expect(e.NoID).To(Equal("no job ID at job.id"))
		Expect(e.JobID).To(BeEmpty())
		Expect(e.Error).To(Equal("boom"))
		Expect(e.HasRetries).To(BeFalse(), "a retries value that is no integer is not read")
	})

	It("reads the tutorial's entries, whose jobs carry no ID, as valid entries", func() {
		raw := []byte(`{"job": {"task": "payment", "amount": 100}, "error": "Gateway timeout", "retries": 3, ` +
			`"failed_at": "2026-12-01T10:00:00.000001", "status": "failed"}`)
		e := layout.ParseEntry("dead_letter[0]", raw, seedFields)
		Expect(e).To(MatchFields(layout.Entry{Source: "dead_letter[0]", NoID: "no job ID at job.id", Error: "Gateway timeout",
			Status: "failed", Retries: 3, HasRetries: true}))
	})

	It("counts an entry without an ID as corrupt for a reader that names jobs by ID (RequireID), as the drill's oracle does", func() {
		e := layout.ParseEntry("dlq:low[0]", []byte(`{"error": "no job"}`), seedFields).RequireID()
		Expect(e).To(MatchFields(layout.Entry{Source: "dlq:low[0]", Error: "no job", Corrupt: "no job ID at job.id"}))
		named := layout.ParseEntry("s", []byte(`{"job": {"id": "j"}}`), seedFields)
		Expect(named.RequireID()).To(Equal(named))
		bad := layout.ParseEntry("s", []byte(`{`), seedFields)
		Expect(bad.RequireID()).To(Equal(bad))
	})

	DescribeTable("marks JSON that is not an object corrupt",
		func(raw string) {
			e := layout.ParseEntry("s", []byte(raw), seedFields)
			Expect(e.Corrupt).To(Equal("not a JSON object"))
			Expect(e.NoID).To(BeEmpty())
			Expect([]byte(e.Raw)).To(MatchJSON(raw))
		},
		Entry("an array", `[1, 2]`),
		Entry("a string", `"x"`),
		Entry("null", `null`),
		Entry("a number", `42`),
	)

	It("reads numeric IDs in their JSON form", func() {
		e := layout.ParseEntry("x", []byte(`{"job": {"id": 12345678901234567890}}`), seedFields)
		Expect(e.JobID).To(Equal("12345678901234567890"))
	})
})

// MatchFields compares the entry's read fields with want's (not Raw).
func MatchFields(want layout.Entry) OmegaMatcher {
	return WithTransform(func(e layout.Entry) layout.Entry { e.Raw = nil; return e }, Equal(want))
}

var _ = Describe("presets", func() {
	It("resolves the seed's inject to an LPUSH of the default template onto PREFIXdefault", func() {
		r := layout.Inject{Preset: layout.PresetSeed, Prefix: "{namespace}:"}.Resolved()
		Expect(r.Preset).To(BeEmpty())
		Expect(r.RedisList).To(Equal(&layout.RedisListInject{Key: "{namespace}:default", Push: "lpush"}))
		Expect(r.Template).To(Equal(layout.DefaultTemplate))
		Expect(r.IDPath).To(Equal("id"))
		Expect(layout.Inject{Preset: layout.PresetSeed}.Validate()).To(Succeed())
	})

	It("resolves the seed's DLQ to its five lists and fields", func() {
		r := layout.DLQ{Preset: layout.PresetSeed, Prefix: "p:"}.Resolved()
		Expect(r.RedisList.Keys).To(Equal([]string{"p:dead_letter", "p:dlq:low", "p:dlq:medium", "p:dlq:high"}))
		Expect(r.Fields).To(Equal(layout.Fields{ID: "job.id", Severity: "severity", Error: "error", Class: "type",
			Retries: "retries", Status: "status", FailedAt: "failed_at", Inactive: []string{"deleted", "reprocessing"}}))
	})

	DescribeTable("names the metadata a dead letter lacks, at the layout's paths or the seed's", func(raw string, f layout.Fields, want []string) {
		Expect(layout.MissingMetadata([]byte(raw), f)).To(Equal(want))
	},
		Entry("the seed's entry, whole", `{"job":{"id":"j1"},"error":"503","retries":3,"failed_at":"2026-12-06T10:00:00Z"}`, layout.Fields{}, []string(nil)),
		Entry("a bare job", `{"job":{"id":"j1"}}`, layout.Fields{},
			[]string{"its error (at error)", "its attempt count (at retries)", "when it failed (at failed_at)"}),
		Entry("an empty error and a null time", `{"job":{"id":"j1"},"error":" ","retries":0,"failed_at":null}`, layout.Fields{},
			[]string{"its error (at error)", "when it failed (at failed_at)"}),
		Entry("declared paths", `{"id":"j1","err":{"msg":"declined"},"attempts":1,"at":1796456271800}`,
			layout.Fields{Error: "err.msg", Retries: "attempts", FailedAt: "at"}, []string(nil)),
		Entry("the faultline preset's entry", `{"job":{"id":"j1","attempts":2},"reason":"retries exhausted","last_failed_at":"2026-12-06T10:00:00Z"}`,
			layout.DLQ{Preset: layout.PresetFaultline}.Resolved().Fields, []string(nil)),
		Entry("not an object: corrupt, not incomplete", `[1,2]`, layout.Fields{}, []string(nil)),
	)

	It("keeps the faultline preset a preset, with its fields", func() {
		r := layout.DLQ{Preset: layout.PresetFaultline}.Resolved()
		Expect(r.Preset).To(Equal(layout.PresetFaultline))
		Expect(r.Fields.ID).To(Equal("job.id"))
		Expect(r.Fields.Severity).To(Equal("verdict.Severity"))
		Expect(layout.Inject{Preset: layout.PresetFaultline}.Resolved()).To(Equal(layout.Inject{Preset: layout.PresetFaultline}))
	})

	It("lets given fields win over the preset's", func() {
		r := layout.DLQ{Preset: layout.PresetSeed, Fields: layout.Fields{Error: "why", Inactive: []string{"gone"}}}.Resolved()
		Expect(r.Fields.Error).To(Equal("why"))
		Expect(r.Fields.ID).To(Equal("job.id"))
		Expect(r.Fields.Inactive).To(Equal([]string{"gone"}))
	})

	It("leaves a config without a preset as it is", func() {
		d := layout.DLQ{RedisZSet: &layout.RedisKeys{Keys: []string{"z"}}, Fields: layout.Fields{ID: "id"}}
		Expect(d.Resolved()).To(Equal(d))
	})
})

var _ = Describe("Validate", func() {
	DescribeTable("names the inject field that is wrong",
		func(in layout.Inject, field string) {
			err := in.Validate()
			Expect(err).To(MatchError(layout.ErrConfig))
			var ce *layout.ConfigError
			Expect(errors.As(err, &ce)).To(BeTrue())
			Expect(ce.Field).To(Equal(field))
			Expect(err.Error()).To(HavePrefix(field + ": "))
		},
		Entry("an unknown preset", layout.Inject{Preset: "resque"}, "inject.preset"),
		Entry("a framework's fields on a layout preset", layout.Inject{Preset: "seed", Queue: "q"}, "inject"),
		Entry("a prefix on a framework preset whose keys are fixed", layout.Inject{Preset: "sidekiq", Prefix: "x:"}, "inject.prefix"),
		Entry("a queue with a space", layout.Inject{Preset: "rq", Queue: "a b"}, "inject.queue"),
		Entry("a BullMQ queue with a colon", layout.Inject{Preset: "bullmq", Queue: "a:b"}, "inject.queue"),
		Entry("a framework preset's id elsewhere", layout.Inject{Preset: "celery", Template: `{"job": {"id": "{id}"}}`, IDPath: "job.id"}, "inject.idPath"),
		Entry("a preset and an adapter", layout.Inject{Preset: "seed", HTTP: &layout.HTTPInject{URL: "http://x"}}, "inject"),
		Entry("nothing", layout.Inject{}, "inject"),
		Entry("two adapters", layout.Inject{RedisList: &layout.RedisListInject{Key: "k"}, HTTP: &layout.HTTPInject{URL: "http://x"}}, "inject"),
		Entry("a faultline template", layout.Inject{Preset: "faultline", Template: `{"id": "{id}"}`}, "inject.template"),
		Entry("a list without key", layout.Inject{RedisList: &layout.RedisListInject{}}, "inject.redisList.key"),
		Entry("a bad push", layout.Inject{RedisList: &layout.RedisListInject{Key: "k", Push: "sadd"}}, "inject.redisList.push"),
		Entry("a stream without key", layout.Inject{RedisStream: &layout.RedisStreamInject{}}, "inject.redisStream.key"),
		Entry("an HTTP URL that is not", layout.Inject{HTTP: &layout.HTTPInject{URL: "ftp://x"}}, "inject.http.url"),
		Entry("no HTTP URL", layout.Inject{HTTP: &layout.HTTPInject{}}, "inject.http.url"),
		Entry("a command without path", layout.Inject{Command: &layout.Command{}}, "inject.command.path"),
		Entry("a template that is not JSON", layout.Inject{RedisList: &layout.RedisListInject{Key: "k"}, Template: "{"}, "inject.template"),
		Entry("an ID path the template does not fill", layout.Inject{RedisList: &layout.RedisListInject{Key: "k"},
			Template: `{"job": {"id": "{id}"}}`}, "inject.idPath"),
	)

	It("accepts an ID path the template fills", func() {
		Expect(layout.Inject{RedisStream: &layout.RedisStreamInject{Key: "s"}, Template: `{"job": {"jid": "{id}"}}`,
			IDPath: "job.jid"}.Validate()).To(Succeed())
		Expect(layout.Inject{HTTP: &layout.HTTPInject{URL: "{dependency:queue}"}}.Validate()).To(Succeed())
	})

	DescribeTable("names the DLQ field that is wrong",
		func(d layout.DLQ, field string) {
			var ce *layout.ConfigError
			Expect(errors.As(d.Validate(), &ce)).To(BeTrue())
			Expect(ce.Field).To(Equal(field))
		},
		Entry("an unknown preset", layout.DLQ{Preset: "x"}, "dlq.preset"),
		Entry("a framework's fields on a layout preset", layout.DLQ{Preset: "faultline", Runtime: "ruby"}, "dlq"),
		Entry("a prefix on a framework preset whose keys are fixed", layout.DLQ{Preset: "rq", Prefix: "x"}, "dlq.prefix"),
		Entry("nothing", layout.DLQ{}, "dlq"),
		Entry("a preset and an adapter", layout.DLQ{Preset: "seed", RedisZSet: &layout.RedisKeys{Keys: []string{"z"}}}, "dlq"),
		Entry("two adapters", layout.DLQ{RedisZSet: &layout.RedisKeys{Keys: []string{"z"}}, HTTP: &layout.HTTPRead{URL: "http://x"}}, "dlq"),
		Entry("no list keys", layout.DLQ{RedisList: &layout.RedisKeys{}, Fields: layout.Fields{ID: "id"}}, "dlq.redisList.keys"),
		Entry("an empty zset key", layout.DLQ{RedisZSet: &layout.RedisKeys{Keys: []string{"a", ""}}, Fields: layout.Fields{ID: "id"}}, "dlq.redisZSet.keys[1]"),
		Entry("a stream without key", layout.DLQ{RedisStream: &layout.RedisStreamInject{}, Fields: layout.Fields{ID: "id"}}, "dlq.redisStream.key"),
		Entry("a bad URL", layout.DLQ{HTTP: &layout.HTTPRead{URL: "x"}, Fields: layout.Fields{ID: "id"}}, "dlq.http.url"),
		Entry("a command without path", layout.DLQ{Command: &layout.Command{}, Fields: layout.Fields{ID: "id"}}, "dlq.command.path"),
		Entry("no ID field", layout.DLQ{RedisList: &layout.RedisKeys{Keys: []string{"k"}}}, "dlq.fields.id"),
		Entry("a path with an empty part", layout.DLQ{RedisList: &layout.RedisKeys{Keys: []string{"k"}},
			Fields: layout.Fields{ID: "id", Severity: "a..b"}}, "dlq.fields.severity"),
	)

	It("accepts both presets", func() {
		Expect(layout.DLQ{Preset: layout.PresetSeed}.Validate()).To(Succeed())
		Expect(layout.DLQ{Preset: layout.PresetFaultline}.Validate()).To(Succeed())
	})
})

var _ = Describe("A framework preset's retry policy, from the producer's job options", func() {
	DescribeTable("says the attempts the options give, or that they do not say",
		func(preset string, opts map[string]any, attempts int, backoffMs int64, ok bool) {
			n, b, said := layout.Inject{Preset: preset, Options: opts}.FrameworkPolicy()
			Expect(said).To(Equal(ok))
			Expect(n).To(Equal(attempts))
			Expect(b).To(Equal(backoffMs))
		},
		Entry("Sidekiq: retry 3 is four attempts", "sidekiq", map[string]any{"retry": uint64(3)}, 4, int64(0), true),
		Entry("Sidekiq: retry false is one", "sidekiq", map[string]any{"retry": false}, 1, int64(0), true),
		Entry("Sidekiq: retry true is its default 25 retries", "sidekiq", map[string]any{"retry": true}, 26, int64(0), true),
		Entry("Sidekiq: no retry: the worker class decides", "sidekiq", nil, 0, int64(0), false),
		Entry("RQ: no Retry is one attempt", "rq", nil, 1, int64(0), true),
		Entry("RQ: Retry(max=3, interval=[1, 2])", "rq", map[string]any{"retry": map[string]any{"max": uint64(3), "interval": []any{uint64(1), uint64(2)}}}, 4, int64(1000), true),
		Entry("BullMQ: no attempts is one", "bullmq", nil, 1, int64(0), true),
		Entry("BullMQ: attempts 5, backoff 500ms", "bullmq", map[string]any{"attempts": uint64(5), "backoff": map[string]any{"type": "exponential", "delay": uint64(500)}}, 5, int64(500), true),
		Entry("Celery: the task's decorator decides", "celery", map[string]any{"retry": true}, 0, int64(0), false),
	)
})
