package adapter_test

import (
	"context"
	"errors"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/layout"
	"github.com/faultline/faultline/layout/adapter"
)

// The framework presets' Go side: the keys a drill checks and cleans,
// the refusal of another framework's layout, what is still queued, and
// the preflight of the adapter's runtime. (The adapter programs
// themselves are drilled by the examples: drill/examples_test.go.)
var _ = Describe("The framework presets", func() {
	ctx := context.Background()
	// The adapter programs start with the injector (they read what is
	// queued in Go): they are given the Redis a drill would give them.
	env := func(rdb *redis.Client) adapter.Env {
		e := adapter.Env{Expand: expandNS("drill-x-1")}
		if rdb != nil {
			e.Redis, e.Environ = rdb, []string{"FAULTLINE_REDIS_URL=redis://" + rdb.Options().Addr}
		}
		return e
	}

	It("lists each framework's keys of the queue, leaving out the sets every queue shares", func() {
		in := layout.Inject{Preset: layout.PresetSidekiq}
		Expect(adapter.Keys(in, layout.DLQ{Preset: layout.PresetSidekiq}, env(nil))).To(Equal([]string{"queue:drill-x-1"}))
		Expect(adapter.Keys(layout.Inject{Preset: layout.PresetRQ}, layout.DLQ{Preset: layout.PresetRQ}, env(nil))).To(ConsistOf(
			"rq:queue:drill-x-1", "rq:scheduled:drill-x-1", "rq:wip:drill-x-1", "rq:failed:drill-x-1", "rq:finished:drill-x-1", "rq:deferred:drill-x-1"))
		Expect(adapter.Keys(layout.Inject{Preset: layout.PresetBullMQ, Prefix: "p"}, layout.DLQ{Preset: layout.PresetBullMQ, Prefix: "p"}, env(nil))).To(ContainElements(
			"p:drill-x-1:wait", "p:drill-x-1:delayed", "p:drill-x-1:failed", "p:drill-x-1:meta"))
		Expect(adapter.Keys(layout.Inject{Preset: layout.PresetCelery, Queue: "payments"}, layout.DLQ{Preset: layout.PresetCelery, Queue: "payments"}, env(nil))).To(Equal([]string{"payments", "payments\x06\x163", "payments\x06\x166", "payments\x06\x169"}), "kombu's priority lists too")
	})

	for _, lane := range lanes {
		Context(lane.name, func() {
			It("refuses keys that hold another framework's or version's layout, saying what it found", func() {
				rdb := lane.connect()
				Expect(rdb.ZAdd(ctx, "queue:drill-x-1", redis.Z{Score: 1, Member: "x"}).Err()).To(Succeed())
				err := adapter.CheckFramework(ctx, layout.Inject{Preset: layout.PresetSidekiq}, layout.DLQ{Preset: layout.PresetSidekiq}, env(rdb))
				Expect(err).To(MatchError(adapter.ErrForeignLayout))
				Expect(err.Error()).To(And(ContainSubstring("key queue:drill-x-1 is a zset"), ContainSubstring("Sidekiq 6.4.1 keeps the queue"), ContainSubstring("(a list)")))

				Expect(rdb.HSet(ctx, "bull:drill-x-1:meta", "version", "bull:3.29.0").Err()).To(Succeed())
				err = adapter.CheckFramework(ctx, layout.Inject{Preset: layout.PresetBullMQ}, layout.DLQ{Preset: layout.PresetBullMQ}, env(rdb))
				Expect(err).To(MatchError(adapter.ErrForeignLayout))
				Expect(err.Error()).To(ContainSubstring(`says version "bull:3.29.0"`))
				Expect(rdb.Del(ctx, "bull:drill-x-1:meta").Err()).To(Succeed())
				Expect(rdb.LPush(ctx, "bull:drill-x-1:wait", "1").Err()).To(Succeed())
				Expect(rdb.ZAdd(ctx, "bull:drill-x-1:priority", redis.Z{Score: 1, Member: "1"}).Err()).To(Succeed())
				err = adapter.CheckFramework(ctx, layout.Inject{Preset: layout.PresetBullMQ}, layout.DLQ{Preset: layout.PresetBullMQ}, env(rdb))
				Expect(err).To(MatchError(ContainSubstring("a Bull (v3 or v4) queue of this name")))

				// Sidekiq's dead set is every queue's: another queue's dead
				// jobs are not the drill's business, this queue's are.
				Expect(rdb.ZAdd(ctx, "dead", redis.Z{Score: 1, Member: `{"jid":"a","queue":"default"}`}).Err()).To(Succeed())
				Expect(adapter.CheckFramework(ctx, layout.Inject{Preset: layout.PresetSidekiq, Queue: "q2"}, layout.DLQ{Preset: layout.PresetSidekiq, Queue: "q2"}, env(rdb))).To(Succeed())
				Expect(rdb.ZAdd(ctx, "dead", redis.Z{Score: 2, Member: `{"jid":"b","queue":"q2"}`}).Err()).To(Succeed())
				err = adapter.CheckFramework(ctx, layout.Inject{Preset: layout.PresetSidekiq, Queue: "q2"}, layout.DLQ{Preset: layout.PresetSidekiq, Queue: "q2"}, env(rdb))
				Expect(err).To(MatchError(ContainSubstring("dead already holds 1 job(s) of queue q2 (e.g. b)")))
			})

			It("reads what is still queued or waiting for a retry from the framework's own keys, in one transaction", func() {
				rdb := lane.connect()
				// Sidekiq: the queue list (LPUSH) and this queue's members of
				// the retry set; a member of another queue is not ours.
				Expect(rdb.LPush(ctx, "queue:drill-x-1", `{"jid":"j1","queue":"drill-x-1"}`, `{"jid":"j2","queue":"drill-x-1"}`).Err()).To(Succeed())
				Expect(rdb.ZAdd(ctx, "retry", redis.Z{Score: 1, Member: `{"jid":"j3","queue":"drill-x-1"}`}, redis.Z{Score: 2, Member: `{"jid":"o1","queue":"other"}`}).Err()).To(Succeed())
				got := queued(layout.Inject{Preset: layout.PresetSidekiq}, env(rdb))
				Expect(got).To(Equal([]string{"j1", "j2", "j3"}))

				// RQ: job IDs, RPUSHed, and the scheduled registry.
				Expect(rdb.RPush(ctx, "rq:queue:drill-x-1", "r1", "r2").Err()).To(Succeed())
				Expect(rdb.ZAdd(ctx, "rq:scheduled:drill-x-1", redis.Z{Score: 5, Member: "r3"}).Err()).To(Succeed())
				Expect(queued(layout.Inject{Preset: layout.PresetRQ}, env(rdb))).To(Equal([]string{"r1", "r2", "r3"}))

				// BullMQ: the wait list and the delayed set (a retry's backoff).
				Expect(rdb.LPush(ctx, "bull:drill-x-1:wait", "b1", "b2").Err()).To(Succeed())
				Expect(rdb.ZAdd(ctx, "bull:drill-x-1:delayed", redis.Z{Score: 5, Member: "b3"}).Err()).To(Succeed())
				Expect(queued(layout.Inject{Preset: layout.PresetBullMQ}, env(rdb))).To(Equal([]string{"b1", "b2", "b3"}))

				// Celery: kombu messages, the task ID at headers.id.
				Expect(rdb.LPush(ctx, "drill-x-1", `{"body":"W10=","headers":{"id":"c1","task":"tasks.charge"},"properties":{"correlation_id":"c1"}}`).Err()).To(Succeed())
				Expect(queued(layout.Inject{Preset: layout.PresetCelery}, env(rdb))).To(Equal([]string{"c1"}))
			})

			It("names a queue element that is not the framework's job, next to the IDs it could read", func() {
				rdb := lane.connect()
				Expect(rdb.LPush(ctx, "queue:drill-x-1", `{"jid":"j1","queue":"drill-x-1"}`, "not json").Err()).To(Succeed())
				inj, err := adapter.NewInjector(layout.Inject{Preset: layout.PresetSidekiq}, env(rdb))
				Expect(err).NotTo(HaveOccurred())
				DeferCleanup(func() { _ = inj.Close() }) // its program's exit is not what this spec is about
				ids, err := inj.(adapter.QueueReader).Queued(ctx)
				Expect(ids).To(Equal([]string{"j1"}))
				Expect(err).To(MatchError(adapter.ErrCorrupt))
				Expect(err.Error()).To(ContainSubstring("not a Sidekiq job"))
			})
		})
	}

	It("refuses to run an adapter whose runtime is missing, with the install line", func() {
		_, err := adapter.CheckRuntime(ctx, layout.PresetSidekiq, layout.Inject{Preset: layout.PresetSidekiq, Runtime: "no-such-ruby"}.FrameworkOptions(), adapter.Env{})
		Expect(err).To(MatchError(adapter.ErrRuntime))
		Expect(err.Error()).To(And(ContainSubstring("no-such-ruby, which is not on PATH"), ContainSubstring("install: apt-get install ruby-sidekiq")))
		_, err = adapter.CheckRuntime(ctx, layout.PresetBullMQ, layout.Inject{Preset: layout.PresetBullMQ, Runtime: "/no/such/node"}.FrameworkOptions(), adapter.Env{})
		Expect(err).To(MatchError(adapter.ErrRuntime))
		Expect(adapter.RuntimeWarning(layout.PresetRQ, "no-such-python")).To(ContainSubstring("a drill would be refused (install: apt-get install python3-rq"))
		Expect(adapter.RuntimeWarning(layout.PresetSeed, "")).To(BeEmpty())
	})

	It("ships an adapter program for every framework preset", func() {
		for _, fw := range layout.Frameworks {
			src, err := adapter.ProgramSource(fw.Name)
			Expect(err).NotTo(HaveOccurred(), fw.Name)
			Expect(string(src)).To(ContainSubstring(fw.Version), "%s names the version it was written against", fw.Program)
		}
		_, err := adapter.ProgramSource("seed")
		Expect(errors.Is(err, layout.ErrConfig)).To(BeTrue())
	})
})

// queued reads in's queue back through its injector.
func queued(in layout.Inject, env adapter.Env) []string {
	GinkgoHelper()
	inj, err := adapter.NewInjector(in, env)
	Expect(err).NotTo(HaveOccurred())
	defer inj.Close()
	ids, err := inj.(adapter.QueueReader).Queued(context.Background())
	Expect(err).NotTo(HaveOccurred())
	return ids
}
