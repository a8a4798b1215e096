package adapter_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/layout"
	"github.com/faultline/faultline/layout/adapter"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/reference/store/redisstore/redistest"
)

// lanes are the Redis servers the Redis specs run against: a miniredis
// per spec, and the process's redis-server (a flushed database).
var lanes = []struct {
	name    string
	connect func() *redis.Client
}{
	{"on miniredis", func() *redis.Client {
		GinkgoHelper()
		c := redisstore.NewClient(redistest.Mini(GinkgoRandomSeed()).Addr())
		DeferCleanup(c.Close)
		return c
	}},
	{"on redis-server", func() *redis.Client {
		GinkgoHelper()
		c := redisstore.NewClient(redistest.Real())
		DeferCleanup(c.Close)
		return c
	}},
}

// expandNS replaces {namespace} with ns, as a drill's Expand does.
func expandNS(ns string) func(string) string {
	return func(s string) string { return strings.ReplaceAll(s, "{namespace}", ns) }
}

// seedJobs are three jobs, the last two with the same payload.
var seedJobs = []layout.Job{
	{ID: "charge-1", Task: "charge", Key: "idem-charge-1", Payload: `{"amount": 100}`, N: 1},
	{ID: "charge-2", Task: "charge", Payload: `{"amount": 200}`, N: 2},
	{ID: "charge-3", Task: "charge", Payload: `{"amount": 200}`, N: 3},
}

func ids(js []layout.Job) []string {
	out := make([]string, len(js))
	for i, j := range js {
		out[i] = j.ID
	}
	return out
}

func injectAll(ctx context.Context, in adapter.Injector, js []layout.Job) {
	GinkgoHelper()
	for _, j := range js {
		Expect(in.Inject(ctx, j)).To(Succeed())
	}
}

func mustJSON(v any) string {
	GinkgoHelper()
	b, err := json.Marshal(v)
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}

// read is the entries of a reader, with Raw left out.
func read(ctx context.Context, r adapter.Reader) []layout.Entry {
	GinkgoHelper()
	es, err := r.Read(ctx)
	Expect(err).NotTo(HaveOccurred())
	for i := range es {
		Expect(json.Valid(es[i].Raw)).To(BeTrue(), "the raw bytes of %s are JSON", es[i].Source)
		es[i].Raw = nil
	}
	return es
}

var _ = Describe("Redis adapters", func() {
	for _, ln := range lanes {
		Describe(ln.name, func() {
			var (
				ctx context.Context
				rdb *redis.Client
				env adapter.Env
			)
			BeforeEach(func() {
				ctx = context.Background()
				rdb = ln.connect()
				env = adapter.Env{Redis: rdb, Namespace: fmt.Sprintf("ns%d", GinkgoParallelProcess()),
					Expand: expandNS("drill7")}
			})

			Describe("the seed preset", func() {
				seedIn := layout.Inject{Preset: layout.PresetSeed, Prefix: "{namespace}:"}
				seedDLQ := layout.DLQ{Preset: layout.PresetSeed, Prefix: "{namespace}:"}

				It("LPUSHes each job's document onto PREFIXdefault and reads their IDs back, oldest first", func() {
					in, err := adapter.NewInjector(seedIn, env)
					Expect(err).NotTo(HaveOccurred())
					DeferCleanup(in.Close)
					injectAll(ctx, in, seedJobs)

					raws, err := rdb.LRange(ctx, "drill7:default", 0, -1).Result()
					Expect(err).NotTo(HaveOccurred())
					Expect(raws).To(HaveLen(3), "two jobs with the same payload stay two jobs")
					Expect(raws[2]).To(MatchJSON(`{"id": "charge-1", "task": "charge", "payload": {"amount": 100},
						"idempotency_key": "idem-charge-1"}`))
					Expect(raws[0]).To(MatchJSON(`{"id": "charge-3", "task": "charge", "payload": {"amount": 200},
						"idempotency_key": ""}`))
					Expect(raws[0]).NotTo(ContainSubstring(" "), "compact JSON")

					qr, ok := in.(adapter.QueueReader)
					Expect(ok).To(BeTrue(), "a list injector reads its queue back")
					Expect(qr.Queued(ctx)).To(Equal(ids(seedJobs)))
				})

				It("names the queue elements it cannot read and still returns the others' IDs", func() {
					in, err := adapter.NewInjector(seedIn, env)
					Expect(err).NotTo(HaveOccurred())
					injectAll(ctx, in, seedJobs[:2])
					Expect(rdb.LPush(ctx, "drill7:default", "garbage", `{"no": "id"}`).Err()).To(Succeed())

					got, err := in.(adapter.QueueReader).Queued(ctx)
					Expect(got).To(Equal(ids(seedJobs[:2])))
					Expect(err).To(MatchError(adapter.ErrCorrupt))
					var ce *adapter.CorruptError
					Expect(err).To(BeAssignableToTypeOf(ce))
					ce = err.(*adapter.CorruptError)
					Expect(ce.Queue).To(Equal("drill7:default"))
					Expect(ce.Positions).To(Equal([]string{"0", "1"}))
					Expect(ce.Reasons).To(Equal([]string{"no job ID at id", "not JSON"}))
					Expect(err.Error()).To(ContainSubstring("drill7:default"))
				})

				It("reads the seed's dead letters with their fields, inactive ones flagged, corrupt ones kept", func() {
					dead := []string{
						mustJSON(map[string]any{"job": map[string]any{"id": "charge-1", "task": "charge"}, "error": "card_declined",
							"retries": 0, "failed_at": "2024-05-01T10:00:00Z", "status": "failed"}),
						mustJSON(map[string]any{"job": map[string]any{"id": "charge-2"}, "error": "timeout", "retries": 3,
							"failed_at": "2024-05-01T10:01:00Z", "status": "deleted"}),
						mustJSON(map[string]any{"job": map[string]any{"id": "charge-4"}, "error": "x", "status": "reprocessing"}),
					}
					Expect(rdb.RPush(ctx, "drill7:dead_letter", dead).Err()).To(Succeed())
					Expect(rdb.RPush(ctx, "drill7:dlq:high", mustJSON(map[string]any{"job": map[string]any{"id": "charge-3"},
						"error": "401 unauthorized", "type": "critical", "severity": "high", "retries": 0, "timestamp": "2024-05-01T10:02:00Z"}),
						"{not json").Err()).To(Succeed())
					Expect(rdb.RPush(ctx, "drill7:dlq:low", `{"error": "no job"}`).Err()).To(Succeed())

					r, err := adapter.NewReader(seedDLQ, env)
					Expect(err).NotTo(HaveOccurred())
					DeferCleanup(r.Close)
					Expect(read(ctx, r)).To(Equal([]layout.Entry{
						{Source: "drill7:dead_letter[0]", JobID: "charge-1", Error: "card_declined", Status: "failed", HasRetries: true},
						{Source: "drill7:dead_letter[1]", JobID: "charge-2", Error: "timeout", Status: "deleted", Retries: 3, HasRetries: true, Inactive: true},
						{Source: "drill7:dead_letter[2]", JobID: "charge-4", Error: "x", Status: "reprocessing", Inactive: true},
						{Source: "drill7:dlq:low[0]", Error: "no job", Corrupt: "no job ID at job.id"},
						{Source: "drill7:dlq:high[0]", JobID: "charge-3", Error: "401 unauthorized", Class: "critical", Severity: "high", HasRetries: true},
						{Source: "drill7:dlq:high[1]", Corrupt: "not JSON"},
					}))
				})

				It("reads an empty DLQ as no entries", func() {
					r, err := adapter.NewReader(seedDLQ, env)
					Expect(err).NotTo(HaveOccurred())
					Expect(read(ctx, r)).To(BeEmpty())
				})
			})

			It("RPUSHes when told, and reads the queue oldest first", func() {
				in, err := adapter.NewInjector(layout.Inject{RedisList: &layout.RedisListInject{Key: "{namespace}:jobs", Push: "RPUSH"},
					Template: `{"job": {"jid": "{id}", "n": "{n}"}, "args": ["{payload}"]}`, IDPath: "job.jid"}, env)
				Expect(err).NotTo(HaveOccurred())
				injectAll(ctx, in, seedJobs)
				raws, err := rdb.LRange(ctx, "drill7:jobs", 0, -1).Result()
				Expect(err).NotTo(HaveOccurred())
				Expect(raws[0]).To(MatchJSON(`{"job": {"jid": "charge-1", "n": "1"}, "args": [{"amount": 100}]}`))
				Expect(in.(adapter.QueueReader).Queued(ctx)).To(Equal(ids(seedJobs)))
			})

			It("XADDs to a stream and reads the IDs back, naming an entry without the field", func() {
				in, err := adapter.NewInjector(layout.Inject{RedisStream: &layout.RedisStreamInject{Key: "{namespace}:stream", Group: "workers"}}, env)
				Expect(err).NotTo(HaveOccurred())
				injectAll(ctx, in, seedJobs)
				msgs, err := rdb.XRange(ctx, "drill7:stream", "-", "+").Result()
				Expect(err).NotTo(HaveOccurred())
				Expect(msgs).To(HaveLen(3))
				Expect(msgs[1].Values["job"]).To(MatchJSON(`{"id": "charge-2", "task": "charge", "payload": {"amount": 200}, "idempotency_key": ""}`))
				Expect(in.(adapter.QueueReader).Queued(ctx)).To(Equal(ids(seedJobs)))

				bad, err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: "drill7:stream", Values: []any{"other", "x"}}).Result()
				Expect(err).NotTo(HaveOccurred())
				got, err := in.(adapter.QueueReader).Queued(ctx)
				Expect(got).To(Equal(ids(seedJobs)))
				Expect(err).To(MatchError(adapter.ErrCorrupt))
				Expect(err.(*adapter.CorruptError).Positions).To(Equal([]string{bad}))
			})

			It("reads a stream queue through its consumer group: pending and undelivered entries are queued, acknowledged ones are not", func() {
				in, err := adapter.NewInjector(layout.Inject{RedisStream: &layout.RedisStreamInject{Key: "{namespace}:stream", Group: "{namespace}-workers"}}, env)
				Expect(err).NotTo(HaveOccurred())
				five := append(slices.Clone(seedJobs), layout.Job{ID: "charge-4", Task: "charge", N: 4}, layout.Job{ID: "charge-5", Task: "charge", N: 5})
				injectAll(ctx, in, five)
				q := in.(adapter.QueueReader)
				Expect(q.Queued(ctx)).To(Equal(ids(five)), "no group yet: nothing delivered")
				Expect(rdb.XGroupCreate(ctx, "drill7:stream", "drill7-workers", "0").Err()).To(Succeed())
				Expect(rdb.XGroupCreate(ctx, "drill7:stream", "other-group", "$").Err()).To(Succeed())
				got, err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "drill7-workers", Consumer: "w1", Streams: []string{"drill7:stream", ">"}, Count: 3}).Result()
				Expect(err).NotTo(HaveOccurred())
				Expect(got[0].Messages).To(HaveLen(3))
				// charge-1 acknowledged (done, or dropped), charge-2 acknowledged and
				// deleted, charge-3 delivered and pending, 4 and 5 never delivered.
				Expect(rdb.XAck(ctx, "drill7:stream", "drill7-workers", got[0].Messages[0].ID, got[0].Messages[1].ID).Err()).To(Succeed())
				Expect(rdb.XDel(ctx, "drill7:stream", got[0].Messages[1].ID).Err()).To(Succeed())
				Expect(q.Queued(ctx)).To(Equal([]string{"charge-3", "charge-4", "charge-5"}))

				blind, err := adapter.NewInjector(layout.Inject{RedisStream: &layout.RedisStreamInject{Key: "{namespace}:stream"}}, env)
				Expect(err).NotTo(HaveOccurred())
				_, err = blind.(adapter.QueueReader).Queued(ctx)
				Expect(err).To(MatchError(adapter.ErrNotObservable))
				Expect(err.Error()).To(ContainSubstring("declare inject.redisStream.group"))

				Expect(rdb.Del(ctx, "drill7:stream").Err()).To(Succeed())
				Expect(q.Queued(ctx)).To(BeEmpty(), "no stream: nothing queued")
			})

			It("reads a hash queue by its jobs' declared state, and a sorted-set queue by score", func() {
				tmpl := `{"id": "{id}", "status": "queued"}`
				state := &layout.QueueState{Field: "status", Queued: []string{"queued", "retry"}}
				in, err := adapter.NewInjector(layout.Inject{Template: tmpl, RedisHash: &layout.RedisHashInject{Key: "{namespace}:jobs", State: state}}, env)
				Expect(err).NotTo(HaveOccurred())
				injectAll(ctx, in, seedJobs)
				Expect(rdb.HGet(ctx, "drill7:jobs", "charge-2").Result()).To(MatchJSON(`{"id": "charge-2", "status": "queued"}`))
				q := in.(adapter.QueueReader)
				Expect(q.Queued(ctx)).To(Equal(ids(seedJobs)))
				Expect(rdb.HSet(ctx, "drill7:jobs", "charge-1", `{"id": "charge-1", "status": "done"}`, "charge-2", `{"id": "charge-2", "status": "retry"}`).Err()).To(Succeed())
				Expect(rdb.HSet(ctx, "drill7:jobs", "junk", `not json`).Err()).To(Succeed())
				got, err := q.Queued(ctx)
				Expect(got).To(Equal([]string{"charge-2", "charge-3"}))
				Expect(err).To(MatchError(adapter.ErrCorrupt))
				Expect(err.(*adapter.CorruptError).Positions).To(Equal([]string{"junk"}))

				env.Clock = clock.NewVirtual(time.UnixMilli(1_700_000_000_000))
				z, err := adapter.NewInjector(layout.Inject{RedisZSet: &layout.RedisZSetInject{Key: "{namespace}:due"}}, env)
				Expect(err).NotTo(HaveOccurred())
				injectAll(ctx, z, seedJobs[:2])
				Expect(rdb.ZRangeWithScores(ctx, "drill7:due", 0, -1).Result()).To(HaveEach(HaveField("Score", float64(1_700_000_000_000))))
				Expect(rdb.ZPopMin(ctx, "drill7:due").Err()).To(Succeed())
				Expect(z.(adapter.QueueReader).Queued(ctx)).To(HaveLen(1), "a member taken is no longer queued")

				_, err = adapter.NewInjector(layout.Inject{RedisHash: &layout.RedisHashInject{Key: "h", State: state}}, env)
				Expect(err).To(MatchError(ContainSubstring("inject.redisHash.state: the template does not write one of queued, retry at status")))
				_, err = adapter.NewInjector(layout.Inject{RedisHash: &layout.RedisHashInject{Key: "h"}}, env)
				Expect(err).To(MatchError(ContainSubstring("inject.redisHash.state: required")))
			})

			It("reads sorted sets by rank, key by key", func() {
				Expect(rdb.ZAdd(ctx, "drill7:z1", redis.Z{Score: 2, Member: `{"jid": "b"}`}, redis.Z{Score: 1, Member: `{"jid": "a"}`}).Err()).To(Succeed())
				Expect(rdb.ZAdd(ctx, "drill7:z2", redis.Z{Score: 1, Member: `{"jid": 7}`}).Err()).To(Succeed())
				r, err := adapter.NewReader(layout.DLQ{RedisZSet: &layout.RedisKeys{Keys: []string{"{namespace}:z2", "{namespace}:z1"}},
					Fields: layout.Fields{ID: "jid"}}, env)
				Expect(err).NotTo(HaveOccurred())
				Expect(read(ctx, r)).To(Equal([]layout.Entry{
					{Source: "drill7:z2 rank 0", JobID: "7"},
					{Source: "drill7:z1 rank 0", JobID: "a"},
					{Source: "drill7:z1 rank 1", JobID: "b"},
				}))
			})

			It("reads a stream's field, keeping an entry without it as corrupt", func() {
				first, err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: "drill7:dead", Values: []any{"entry", `{"job": {"id": "j1"}, "error": "e"}`}}).Result()
				Expect(err).NotTo(HaveOccurred())
				second, err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: "drill7:dead", Values: []any{"other", "x"}}).Result()
				Expect(err).NotTo(HaveOccurred())
				r, err := adapter.NewReader(layout.DLQ{RedisStream: &layout.RedisStreamInject{Key: "{namespace}:dead", Field: "entry"},
					Fields: layout.Fields{ID: "job.id", Error: "error"}}, env)
				Expect(err).NotTo(HaveOccurred())
				es, err := r.Read(ctx)
				Expect(err).NotTo(HaveOccurred())
				Expect(es).To(HaveLen(2))
				Expect(es[0]).To(HaveField("Source", "drill7:dead "+first))
				Expect(es[0]).To(HaveField("JobID", "j1"))
				Expect(es[1]).To(HaveField("Source", "drill7:dead "+second))
				Expect(es[1]).To(HaveField("Corrupt", "no field entry"))
				Expect([]byte(es[1].Raw)).To(MatchJSON(`{"other": "x"}`))
			})

			It("names the key a read failed on", func() {
				Expect(rdb.Set(ctx, "drill7:dead_letter", "a string", 0).Err()).To(Succeed())
				r, err := adapter.NewReader(layout.DLQ{Preset: layout.PresetSeed, Prefix: "{namespace}:"}, env)
				Expect(err).NotTo(HaveOccurred())
				_, err = r.Read(ctx)
				Expect(err).To(MatchError(ContainSubstring("drill7:dead_letter")))
			})

			Describe("the faultline preset", func() {
				var st *redisstore.Store
				BeforeEach(func() {
					var err error
					st, err = redisstore.New(rdb, store.Config{Namespace: env.Namespace})
					Expect(err).NotTo(HaveOccurred())
				})

				It("enqueues reference jobs on the queue named by their task, and reads the reference DLQ", func() {
					in, err := adapter.NewInjector(layout.Inject{Preset: layout.PresetFaultline}, env)
					Expect(err).NotTo(HaveOccurred())
					DeferCleanup(in.Close)
					_, isQR := in.(adapter.QueueReader)
					Expect(isQR).To(BeFalse(), "the reference store has no read-back of its queues")
					injectAll(ctx, in, seedJobs)
					Expect(in.Inject(ctx, seedJobs[0])).To(MatchError(queue.ErrDuplicate), "one ID, one job")

					r, err := adapter.NewReader(layout.DLQ{Preset: layout.PresetFaultline}, env)
					Expect(err).NotTo(HaveOccurred())
					Expect(read(ctx, r)).To(BeEmpty())

					now := time.Now()
					var got []job.Job
					for range seedJobs {
						j, l, ok, err := st.Dequeue(ctx, "charge", now, time.Minute)
						Expect(err).NotTo(HaveOccurred())
						Expect(ok).To(BeTrue())
						got = append(got, j)
						if j.ID == "charge-1" {
							Expect(j.IdempotencyKey).To(Equal("idem-charge-1"))
							Expect(string(j.Payload)).To(MatchJSON(`{"amount": 100}`))
							Expect(j.EnqueuedAt).NotTo(BeZero())
							j.Attempts = 3
							v := classify.Classification{Class: classify.Critical, Severity: classify.High}
							_, err := st.DeadLetter(ctx, l, dlq.Entry{Job: j, Verdict: v, Reason: "auth failure: not retried",
								History: []dlq.Failure{{At: now, Attempt: 3, Error: "401", Verdict: v}}}, now)
							Expect(err).NotTo(HaveOccurred())
						}
					}
					Expect(got).To(HaveLen(3))
					Expect([]string{got[0].ID, got[1].ID, got[2].ID}).To(Equal(ids(seedJobs)))

					Expect(read(ctx, r)).To(Equal([]layout.Entry{{Source: "dlq charge-1", JobID: "charge-1", Severity: "high",
						Class: "critical", Error: "auth failure: not retried", Status: "failed", Retries: 3, HasRetries: true}}))

					Expect(st.Delete(ctx, "charge-1", "operator", now)).To(Succeed())
					Expect(st.WriteRaw(ctx, "charge-9", []byte("\x01not an entry"))).To(Succeed())
					es := read(ctx, r)
					Expect(es).To(HaveLen(2))
					Expect(es).To(ContainElement(SatisfyAll(HaveField("JobID", "charge-1"), HaveField("Status", "deleted"), HaveField("Inactive", true))))
					Expect(es).To(ContainElement(SatisfyAll(HaveField("JobID", "charge-9"), HaveField("Source", "dlq charge-9"),
						HaveField("Corrupt", Not(BeEmpty())))))
				})
			})
		})
	}
})

var _ = Describe("NewInjector and NewReader", func() {
	It("want a Redis client for the Redis adapters and the faultline preset", func() {
		_, err := adapter.NewInjector(layout.Inject{Preset: layout.PresetSeed}, adapter.Env{})
		Expect(err).To(MatchError(adapter.ErrEnv))
		_, err = adapter.NewInjector(layout.Inject{Preset: layout.PresetFaultline}, adapter.Env{})
		Expect(err).To(MatchError(adapter.ErrEnv))
		_, err = adapter.NewReader(layout.DLQ{Preset: layout.PresetFaultline}, adapter.Env{})
		Expect(err).To(MatchError(adapter.ErrEnv))
		_, err = adapter.NewReader(layout.DLQ{RedisZSet: &layout.RedisKeys{Keys: []string{"k"}}, Fields: layout.Fields{ID: "id"}}, adapter.Env{})
		Expect(err).To(MatchError(adapter.ErrEnv))
	})

	It("refuse an invalid config, naming its field", func() {
		_, err := adapter.NewInjector(layout.Inject{RedisList: &layout.RedisListInject{}}, adapter.Env{})
		Expect(err).To(MatchError(layout.ErrConfig))
		Expect(err).To(MatchError(ContainSubstring("inject.redisList.key")))
		_, err = adapter.NewReader(layout.DLQ{RedisList: &layout.RedisKeys{Keys: []string{"k"}}}, adapter.Env{})
		Expect(err).To(MatchError(ContainSubstring("dlq.fields.id")))
	})
})

var _ = Describe("Keys", func() {
	It("lists the seed's keys with their prefix, expanded", func() {
		env := adapter.Env{Expand: expandNS("d1")}
		Expect(adapter.Keys(layout.Inject{Preset: layout.PresetSeed, Prefix: "{namespace}:"},
			layout.DLQ{Preset: layout.PresetSeed, Prefix: "{namespace}:"}, env)).To(Equal(
			[]string{"d1:default", "d1:dead_letter", "d1:dlq:low", "d1:dlq:medium", "d1:dlq:high"}))
	})

	It("lists each key once, and none for HTTP, commands or the faultline preset", func() {
		Expect(adapter.Keys(layout.Inject{RedisStream: &layout.RedisStreamInject{Key: "s"}},
			layout.DLQ{RedisStream: &layout.RedisStreamInject{Key: "s"}}, adapter.Env{})).To(Equal([]string{"s"}))
		Expect(adapter.Keys(layout.Inject{HTTP: &layout.HTTPInject{URL: "http://x"}},
			layout.DLQ{RedisZSet: &layout.RedisKeys{Keys: []string{"z1", "z2"}}}, adapter.Env{})).To(Equal([]string{"z1", "z2"}))
		Expect(adapter.Keys(layout.Inject{Preset: layout.PresetFaultline}, layout.DLQ{Preset: layout.PresetFaultline}, adapter.Env{})).To(BeEmpty())
	})
})
